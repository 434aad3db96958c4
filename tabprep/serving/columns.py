"""Request columns for serving, and the fitted input schema as a contract.

A column flows through the serving kernels in one of two forms:

* batch: :class:`Col`, numpy arrays. Integer and bool columns hold int64 (bool: bool) values
  plus a null mask (None when no value is null); float columns hold values of the fitted float
  dtype with NaN as null; string columns an object array with None as null. A list
  (multi-hot) column holds its flat elements in the same layout plus int64 row ``offsets``
  (``n + 1``) and ``row_nulls`` (null rows; they read as empty lists, as offline).
* one row: plain Python scalars (``None`` is null; floats are already rounded to the
  column's float dtype), and Python lists for list columns.

The **input contract** (issue #11): the workflow's saved input schema says what each column
is. A value whose kind differs (an int column given strings, or floats, or bools) is refused
with :class:`ServingInputError` naming the column, the fitted and the given dtype and the fix
(``cast=True``, which converts and fails on lossy values instead). Integers of any width are
accepted for int columns and give the same ids (they are compared and hashed as int64, as
offline). JSON numbers are fine for int columns when they are integral (``3.0``), and ints are
fine for float columns (JSON has one number type).
"""
from __future__ import annotations

import math
from typing import Any, List, Optional, Tuple

import numpy as np

from ..schema import ColumnSchema, dtype_kind, kind_mismatch_message

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


class ServingInputError(ValueError):
    """A request the serving transform refuses (missing column, wrong kind, lossy cast...).

    ``column`` names the offending column (None when the request as a whole is malformed).
    """

    def __init__(self, message: str, column: Optional[str] = None) -> None:
        super().__init__(message)
        self.column = column


class Col:
    """One column of a batch (see the module docstring)."""

    __slots__ = ("values", "mask", "offsets", "row_nulls")

    def __init__(self, values: np.ndarray, mask: Optional[np.ndarray] = None, offsets: Optional[np.ndarray] = None,
                 row_nulls: Optional[np.ndarray] = None) -> None:
        self.values = values
        self.mask = mask
        self.offsets = offsets
        self.row_nulls = row_nulls

    @property
    def is_list(self) -> bool:
        return self.offsets is not None

    def with_values(self, values: np.ndarray, mask: Optional[np.ndarray] = None) -> "Col":
        """Same rows (and list layout), new element values."""
        return Col(values, mask, self.offsets, self.row_nulls)

    def nulls(self) -> np.ndarray:
        """Element null mask (NaN counts as null for floats, as offline)."""
        v = self.values
        if v.dtype.kind == "f":
            m = np.isnan(v)
        elif v.dtype.kind == "O":
            m = np.fromiter((x is None for x in v.tolist()), dtype=bool, count=len(v))
        else:
            m = np.zeros(len(v), dtype=bool)
        if self.mask is not None:
            m |= self.mask
        return m


def kind_of(dtype: str) -> str:
    """``"i"`` (ints), ``"b"`` (bool), ``"f"`` (floats), ``"s"`` (strings), else another letter
    or ``"?"``: :func:`tabprep.schema.dtype_kind`, the one rule shared with ``Workflow.transform``."""
    return dtype_kind(dtype)


def _refuse(col: ColumnSchema, given: str, detail: str = "") -> ServingInputError:
    return ServingInputError(kind_mismatch_message(col.name, col.dtype, f"{given}{detail}", col.is_list), col.name)


# -- one row: Python scalars ------------------------------------------------------------------
def scalar(col: ColumnSchema, v: Any, cast: bool, kind: str) -> Any:
    """One value of a scalar column, checked against the contract (None for null)."""
    if v is None:
        return None
    t = type(v)
    if kind == "i":
        if t is int:
            if not _INT64_MIN <= v <= _INT64_MAX:
                raise ServingInputError(f"column {col.name!r}: {v} does not fit in int64", col.name)
            return v
        if t is float:
            if v != v:  # NaN: the null of a float source
                return None
            if v.is_integer() and abs(v) < 2.0 ** 63:
                return int(v)  # a JSON number that happens to be written 3.0
            if v.is_integer():   # an integer literal past int64, which the JSON parser made a float
                raise ServingInputError(f"column {col.name!r}: {v!r} does not fit in int64", col.name)
            if cast:
                raise ServingInputError(f"column {col.name!r} (int): {v!r} is not an integer; cast=True refuses "
                                        f"lossy conversions", col.name)
            raise _refuse(col, f"the non-integral float {v!r}")
        if isinstance(v, np.integer):
            return scalar(col, int(v), cast, kind)
        if isinstance(v, np.floating):
            if cast:
                return scalar(col, float(v), cast, kind)
            raise _refuse(col, f"{np.asarray(v).dtype} ({v!r})")
        if cast:
            return _cast_to_int(col, v)
        raise _refuse(col, f"{_pytype(v)} ({v!r})")
    if kind == "f":
        if t is float:
            return _round_float(v, col.dtype)
        if t is int:
            try:
                return _round_float(float(v), col.dtype)
            except OverflowError:  # JSON allows any integer: 2**1100 has no float64
                raise ServingInputError(f"column {col.name!r} (float): the integer {str(v)[:20]}... "
                                        f"({len(str(abs(v)))} digits) is beyond the range of float64", col.name) from None
        if isinstance(v, (np.floating, np.integer)) and not isinstance(v, np.bool_):
            return _round_float(float(v), col.dtype)
        if cast:
            try:
                return _round_float(float(v), col.dtype)
            except (TypeError, ValueError):
                raise ServingInputError(f"column {col.name!r} (float): cannot convert {v!r} to a number", col.name) from None
        raise _refuse(col, f"{_pytype(v)} ({v!r})")
    if kind == "s":
        if t is str:
            return v
        if cast and isinstance(v, (int, float, bool, np.generic)):
            return str(v)
        raise _refuse(col, f"{_pytype(v)} ({v!r})")
    if kind == "b":
        if t is bool or isinstance(v, np.bool_):
            return bool(v)
        if cast and isinstance(v, (int, float, np.integer, np.floating)) and float(v) in (0.0, 1.0):
            return bool(v)
        if cast:
            raise ServingInputError(f"column {col.name!r} (bool): {v!r} is not 0/1/true/false", col.name)
        raise _refuse(col, f"{_pytype(v)} ({v!r})")
    raise ServingInputError(f"column {col.name!r}: serving does not support the fitted dtype {col.dtype}", col.name)


def _pytype(v: Any) -> str:
    return {bool: "bool", int: "int", float: "float", str: "string", list: "a list", dict: "an object"}.get(
        type(v), type(v).__name__)


def _cast_to_int(col: ColumnSchema, v: Any) -> Optional[int]:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, str):
        try:
            return int(v.strip())
        except ValueError:
            try:
                f = float(v)
            except ValueError:
                raise ServingInputError(f"column {col.name!r} (int): cannot convert {v!r} to an integer", col.name) from None
            return scalar(col, f, True, "i")
    raise ServingInputError(f"column {col.name!r} (int): cannot convert {_pytype(v)} {v!r} to an integer", col.name)


def _round_float(x: float, dtype: str) -> float:
    if dtype == "float32":
        return float(np.float32(x))
    return x


def row_value(col: ColumnSchema, v: Any, cast: bool, kind: str) -> Any:
    """One row's value of ``col`` (a list for list columns), checked against the contract."""
    if col.is_list:
        if v is None:
            return None
        if not isinstance(v, (list, tuple, np.ndarray)):
            raise ServingInputError(f"column {col.name!r} is a list (multi-hot) column: send a list per row, "
                                    f"got {_pytype(v)} {v!r}", col.name)
        return [scalar(col, x, cast, kind) for x in (v.tolist() if isinstance(v, np.ndarray) else v)]
    if isinstance(v, (list, tuple, dict)):
        raise ServingInputError(f"column {col.name!r} is a scalar column, got {_pytype(v)} {v!r}", col.name)
    return scalar(col, v, cast, kind)


# -- batches: arrays -----------------------------------------------------------------------------
def batch_column(col: ColumnSchema, data: Any, cast: bool, kind: str, n: Optional[int]) -> Col:
    """A batch column (numpy array, Python list, pandas Series) as a :class:`Col`, per the contract."""
    if col.is_list:
        return _list_column(col, data, cast, kind)
    if hasattr(data, "to_numpy") and hasattr(data, "dtype") and not isinstance(data, np.ndarray):
        return _series_column(col, data, cast, kind)
    if isinstance(data, np.ndarray) and data.dtype.kind != "O":
        return _array_column(col, data, cast, kind)
    values = data.tolist() if isinstance(data, np.ndarray) else data
    if not isinstance(values, (list, tuple)):
        raise ServingInputError(f"column {col.name!r}: a batch needs a list or an array per column, "
                                f"got {_pytype(values)}", col.name)
    return from_python(col, [scalar(col, v, cast, kind) for v in values], kind)


def from_python(col: ColumnSchema, vals: List[Any], kind: str) -> Col:
    """Checked Python scalars (None = null) of one column as a :class:`Col`."""
    if kind == "s":
        return Col(np.array(vals, dtype=object) if vals else np.zeros(0, dtype=object))
    if kind == "f":
        return Col(np.array([np.nan if v is None else v for v in vals], dtype=col.dtype))
    has_null = None in vals
    if has_null:
        mask = np.array([v is None for v in vals], dtype=bool)
        vals = [0 if v is None else v for v in vals]
    else:
        mask = None
    return Col(np.array(vals, dtype=np.bool_ if kind == "b" else np.int64), mask)


def _array_column(col: ColumnSchema, arr: np.ndarray, cast: bool, kind: str, mask: Optional[np.ndarray] = None) -> Col:
    k = arr.dtype.kind
    if arr.ndim != 1:
        raise ServingInputError(f"column {col.name!r}: expected a 1-d array, got shape {arr.shape}", col.name)
    if kind == "i":
        if k in "iu":
            if k == "u" and arr.dtype.itemsize == 8 and len(arr) and int(arr.max()) > _INT64_MAX:
                raise ServingInputError(f"column {col.name!r}: uint64 values above 2**63-1 do not fit the fitted "
                                        f"{col.dtype}", col.name)
            return Col(arr.astype(np.int64), mask)  # widening (int32 -> int64): same ids
        if k == "f" and cast:
            nan = np.isnan(arr)
            ok = np.where(nan, 0.0, arr)
            if not (np.equal(np.floor(ok), ok).all() and (np.abs(ok) < 2.0 ** 63).all()):
                bad = arr[~nan][np.floor(arr[~nan]) != arr[~nan]][:3]
                raise ServingInputError(f"column {col.name!r} (int): cast=True refuses lossy values, e.g. "
                                        f"{bad.tolist()}", col.name)
            m = nan if mask is None else (nan | mask)
            return Col(ok.astype(np.int64), m if m.any() else None)
        if k == "b" and cast:
            return Col(arr.astype(np.int64), mask)
        if k in "US" and cast:
            return batch_column(col, arr.astype(object), cast, kind, None)
        raise _refuse(col, f"{arr.dtype} values")
    if kind == "f":
        if k in "iuf":
            out = arr.astype(col.dtype)
            if mask is not None and mask.any():
                out = out.copy() if out is arr else out
                out[mask] = np.nan
            return Col(out)
        if k in "US" and cast:
            return batch_column(col, arr.astype(object), cast, kind, None)
        raise _refuse(col, f"{arr.dtype} values")
    if kind == "b":
        if k == "b":
            return Col(arr.astype(np.bool_), mask)
        if cast and k in "iuf":
            return batch_column(col, arr.astype(object), cast, kind, None)
        raise _refuse(col, f"{arr.dtype} values")
    if kind == "s":
        if k in "US":
            return Col(arr.astype(object))
        if cast:
            return Col(np.array([None if (mask is not None and mask[i]) else str(v)
                                 for i, v in enumerate(arr.tolist())], dtype=object))
        raise _refuse(col, f"{arr.dtype} values")
    raise ServingInputError(f"column {col.name!r}: serving does not support the fitted dtype {col.dtype}", col.name)


def _series_column(col: ColumnSchema, s: Any, cast: bool, kind: str) -> Col:
    """A pandas series (a frame given to the serving transform): its numpy data and null mask."""
    dtype = s.dtype
    if isinstance(dtype, np.dtype) and dtype.kind != "O":
        return _array_column(col, s.to_numpy(), cast, kind)
    np_dtype = getattr(dtype, "numpy_dtype", None)
    if np_dtype is not None and np.dtype(np_dtype).kind in "iufb":  # masked (Int64, Float64, boolean) or Arrow
        values = s.array  # the extension array itself: ~25 us less per column than the Series' methods
        mask = np.asarray(values.isna(), dtype=bool)
        fill = False if np.dtype(np_dtype).kind == "b" else 0
        arr = values.to_numpy(dtype=np_dtype, na_value=fill)
        return _array_column(col, arr, cast, kind, mask if mask.any() else None)
    # strings / objects: element by element, as JSON values are
    mask = np.asarray(s.isna().to_numpy(), dtype=bool)
    vals = [None if m else v for v, m in zip(s.to_numpy(dtype=object).tolist(), mask.tolist())]
    return from_python(col, [scalar(col, v, cast, kind) for v in vals], kind)


def _list_column(col: ColumnSchema, data: Any, cast: bool, kind: str) -> Col:
    if hasattr(getattr(data, "array", None), "_pa_array"):  # a pandas list column backed by Arrow
        rows = data.array._pa_array.to_pylist()
    elif hasattr(data, "to_numpy") and not isinstance(data, np.ndarray):  # a pandas column of lists
        rows = [None if _is_null_row(r) else list(r) for r in data.to_numpy(dtype=object).tolist()]
    elif isinstance(data, np.ndarray):
        rows = [None if _is_null_row(r) else list(r) for r in data.tolist()]
    elif isinstance(data, (list, tuple)):
        rows = list(data)
    else:
        raise ServingInputError(f"column {col.name!r}: a batch of a list column is a list of lists", col.name)
    leaves: List[Any] = []
    lengths = np.zeros(len(rows), dtype=np.int64)
    row_nulls = None
    for i, r in enumerate(rows):
        if r is None:
            if row_nulls is None:
                row_nulls = np.zeros(len(rows), dtype=bool)
            row_nulls[i] = True
            continue
        if not isinstance(r, (list, tuple, np.ndarray)):
            raise ServingInputError(f"column {col.name!r} is a list (multi-hot) column: row {i} is "
                                    f"{_pytype(r)} {r!r}, not a list", col.name)
        r = r.tolist() if isinstance(r, np.ndarray) else r
        leaves.extend(scalar(col, x, cast, kind) for x in r)
        lengths[i] = len(r)
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = from_python(col, leaves, kind)
    return Col(flat.values, flat.mask, offsets, row_nulls)


def _is_null_row(r: Any) -> bool:
    return r is None or (isinstance(r, float) and math.isnan(r)) or type(r).__name__ == "NAType"


def rows_of(col: Col) -> Tuple[List[Any], ...]:
    """(row lists) of a list column: Python lists of its elements (None for null elements/rows)."""
    vals = col.values.tolist()
    if col.mask is not None:
        vals = [None if m else v for v, m in zip(vals, col.mask.tolist())]
    offs = col.offsets.tolist()
    out = [vals[offs[i]:offs[i + 1]] for i in range(len(offs) - 1)]
    if col.row_nulls is not None:
        out = [None if m else r for r, m in zip(out, col.row_nulls.tolist())]
    return tuple(out)
