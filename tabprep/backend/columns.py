"""Host columns: one scalar column as numpy arrays, and the element-wise kernels that run on them.

A :class:`HostColumn` is what fused element-wise chains (:meth:`tabprep.ops.Operator.column_kernel`)
and the Arrow-native transform compute on: the values as a numpy array, a null mask, and whether
the arrays are the kernel's own to overwrite. A chain such as ``FillMissing >> Clip >> LogOp >>
Normalize`` then runs as a few in-place ufunc passes over one column, without a pandas Series (and
its fresh temporaries, whose first-touch page faults cost more than the arithmetic) per op.

Conventions (the same as the ops' ``transform`` on pandas):

* ints and bools: ``values`` of the column's dtype; ``mask`` True where null (None: no null here);
  ``nullable`` says the column is a pandas masked array (``Int64``, ``boolean``) even when this
  partition holds no null, so that converting back gives the dtype ``transform`` gives;
* floats: NaN is the null, ``mask`` is always None;
* ``owned``: the kernel may write into ``values`` / ``mask`` (fresh arrays). Arrays taken from a
  pandas column or an Arrow buffer are not owned (read-only views of the input).

The kernels here are the host (numpy) halves of FillMissing, Clip, LogOp and Normalize; each
computes exactly what the op's ``transform`` computes on pandas (same dtype, same bits), or
returns None where it would not (the workflow then runs ``transform``). There is no GPU
implementation: :func:`host_column` answers None for cuDF columns, so the GPU keeps its own path.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pandas as pd
import pyarrow as pa

from .arrays import LOG_SMALL, _fits, array_clip_bounds, fast_log1p, float_values, int_data, int_log1p32
from .dispatch import Dispatch


class HostColumn:
    """``values`` (numpy), ``mask`` (bool numpy, True = null, or None), ``owned``, ``nullable``."""

    __slots__ = ("values", "mask", "owned", "nullable")

    def __init__(self, values: np.ndarray, mask: Optional[np.ndarray] = None, owned: bool = False,
                 nullable: bool = False) -> None:
        self.values = values
        self.mask = mask
        self.owned = owned
        self.nullable = nullable or mask is not None

    def __len__(self) -> int:
        return len(self.values)

    @property
    def dtype(self) -> np.dtype:
        """The values' numpy dtype (so that ``is_int_like`` and friends read a HostColumn as a column)."""
        return self.values.dtype

    def __repr__(self) -> str:
        nulls = 0 if self.mask is None else int(self.mask.sum())
        return f"HostColumn({self.values.dtype}, {len(self)} rows, {nulls} nulls, owned={self.owned})"


# ---------------------------------------------------------------------------
# frames <-> host columns
# ---------------------------------------------------------------------------
host_columns_supported = Dispatch("host_columns_supported", """True when the columns of this frame can be
turned into :class:`HostColumn` (pandas); False for cuDF, whose ops keep their device path.""")
host_columns_supported.register(object, lambda frame: False)
host_columns_supported.register(pd.DataFrame, lambda frame: True)

host_column = Dispatch("host_column", """The :class:`HostColumn` of a scalar numeric series (views, not
copies), or None for anything the kernels do not take (strings, lists, categoricals, Arrow- or
float-masked dtypes, cuDF).""")
host_column.register(object, lambda series: None)


@host_column.register(pd.Series)
def _host_column_pandas(series: pd.Series) -> Optional[HostColumn]:
    dtype = series.dtype
    if isinstance(dtype, np.dtype):
        return HostColumn(series.to_numpy(), None) if dtype.kind in "iufb" else None
    arr = series.array
    if isinstance(arr, (pd.arrays.IntegerArray, pd.arrays.BooleanArray)):
        mask = arr._mask  # the masked array's own buffers (pandas >= 1.0 layout), as int_data reads them
        return HostColumn(arr._data, mask if mask.any() else None, nullable=True)
    return None


# the value readers of the statistics (``int_counts``, ``finite_values``) on host columns, as they read
# the pandas columns the host columns stand for: the Arrow-native fit (``fusion.fit_table``)
@int_data.register(HostColumn)
def _int_data_host(col: HostColumn):
    v = col.values
    mask = col.mask
    return (v if v.dtype == np.int64 else v.astype(np.int64)), (mask if mask is not None and mask.any() else None)


@float_values.register(HostColumn)
def _float_values_host(col: HostColumn, dtype: str = "float64") -> np.ndarray:
    x = np.array(col.values, dtype=dtype, copy=True)
    if col.mask is not None:
        x[col.mask] = np.nan
    return x


def host_series(col: HostColumn, like: pd.Series, name: Any) -> pd.Series:
    """A pandas series of ``col`` with ``like``'s index: masked ints/bools (``nullable``) become
    ``Int64``/``boolean`` style arrays, the rest plain numpy columns (no copy)."""
    values = col.values
    if col.nullable and values.dtype.kind in "iub":
        mask = col.mask if col.mask is not None else np.zeros(len(values), dtype=bool)
        cls = pd.arrays.BooleanArray if values.dtype.kind == "b" else pd.arrays.IntegerArray
        return pd.Series(cls(values, mask), index=like.index, name=name, copy=False)
    return pd.Series(values, index=like.index, name=name, copy=False)


def host_column_from_arrow(arr: Any) -> Optional[HostColumn]:
    """The :class:`HostColumn` of an Arrow numeric or bool array (chunked or not), or None for other
    types. Ints and floats are read-only views of Arrow's data buffer (no copy); a float with nulls
    is copied with NaN in the null slots (what pandas shows); bools are unpacked from their bits."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    typ = arr.type
    if not (pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_boolean(typ)):
        return None
    mask = null_mask(arr) if arr.null_count else None
    if pa.types.is_boolean(typ):
        values = (arr.fill_null(False) if mask is not None else arr).to_numpy(zero_copy_only=False)
        return HostColumn(values, mask, owned=True)
    dtype = np.dtype(typ.to_pandas_dtype())
    values = np.frombuffer(arr.buffers()[1], dtype=dtype, count=len(arr), offset=arr.offset * dtype.itemsize)
    if mask is not None and dtype.kind == "f":
        values = values.copy()
        values[mask] = np.nan
        return HostColumn(values, None, owned=True)
    return HostColumn(values, mask)


def null_mask(arr: pa.Array) -> np.ndarray:
    """True where the Arrow array ``arr`` (with a validity bitmap) is null: the inverted bitmap
    unpacked, one pass and one allocation."""
    bits = np.invert(np.frombuffer(arr.buffers()[0], dtype=np.uint8))
    return np.unpackbits(bits, count=arr.offset + len(arr), bitorder="little")[arr.offset:].view(bool)


def host_column_to_arrow(col: HostColumn) -> pa.Array:
    """An Arrow array of ``col`` (its values buffer shared, not copied): nulls from the mask, and
    NaN as null in float columns, as :func:`tabprep.backend.frame_to_arrow` writes pandas columns."""
    from .frames import _numpy_to_arrow

    if col.mask is not None:
        return pa.array(col.values, mask=col.mask)
    return _numpy_to_arrow(col.values)


# ---------------------------------------------------------------------------
# element-wise kernels (FillMissing, Clip, LogOp, Normalize): host halves of the ops' transforms
# ---------------------------------------------------------------------------
def fill_host(col: HostColumn, value: Any) -> Optional[HostColumn]:
    """FillMissing: nulls (and NaN) replaced by ``value``; masked ints become plain ints.
    None where pandas' ``fillna`` would decide the dtype (a value the column cannot hold)."""
    v = col.values
    kind = v.dtype.kind
    if kind in "iu":
        if not col.nullable:
            return HostColumn(v, None, col.owned)  # a numpy int column holds no null
        if not _fits(value, v.dtype):
            return None
        if col.mask is None:
            return HostColumn(v, None, col.owned)
        if col.owned:
            v[col.mask] = value
            return HostColumn(v, None, True)
        return HostColumn(np.where(col.mask, np.asarray(value, dtype=v.dtype), v), None, True)
    if kind == "f":
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            return None
        with np.errstate(over="ignore"):
            fill = v.dtype.type(value)
        if np.isfinite(fill) != np.isfinite(value):
            return None  # overflows the dtype: pandas warns and decides
        nan = np.isnan(v)
        if not nan.any():
            return HostColumn(v, None, col.owned)
        if col.owned:
            v[nan] = fill
            return HostColumn(v, None, True)
        return HostColumn(np.where(nan, fill, v), None, True)
    if kind == "b" and not col.nullable:
        return HostColumn(v, None, col.owned)
    return None


def clip_host(col: HostColumn, lower: Any, upper: Any) -> Optional[HostColumn]:
    """Clip: values bounded to ``[lower, upper]`` (dtype and nulls kept), where ``np.clip`` gives what
    pandas' clip gives (numpy int/float dtypes, integral bounds for ints; see ``array_clip_bounds``)."""
    v = col.values
    bounds = array_clip_bounds(v.dtype, lower, upper)
    if bounds is None:
        return None
    out = np.clip(v, bounds[0], bounds[1], out=v if col.owned else None)
    return HostColumn(out, col.mask, True, col.nullable)


def log1p_host(col: HostColumn) -> Optional[HostColumn]:
    """LogOp: ``float32(log1p(x))``; ints by table (:func:`int_log1p32`), nulls become NaN; floats as
    ``log(x + 1)`` in float64 with ``log1p`` for ``|x| < 1e-4``, in place in one float64 array."""
    v = col.values
    kind = v.dtype.kind
    if kind in "iub":
        out = int_log1p32(v if v.dtype == np.int64 else v.astype(np.int64))
        if col.mask is not None:
            out[col.mask] = np.nan
        return HostColumn(out, None, True)
    if kind != "f":
        return None
    x = v if (v.dtype == np.float64 and col.owned) else v.astype(np.float64)
    return HostColumn(fast_log1p(x, out=x).astype(np.float32), None, True)


def normalize_host(col: HostColumn, mean: float, std: float, dtype: str = "float32") -> Optional[HostColumn]:
    """Normalize: ``((x - mean) / std)`` computed in float64 and rounded once to ``dtype``
    (``"float32"`` or ``"float64"``; 0 where ``std`` is 0 or not finite); nulls and NaN stay NaN.
    The float64 intermediate is one array (the column's own float64 buffer when it owns one),
    rounded into the column's own float32 buffer when the output is float32 and it owns one."""
    v = col.values
    if v.dtype.kind not in "iufb":
        return None
    if not std or not np.isfinite(std):
        out = np.zeros(len(v), dtype=dtype)
        if v.dtype.kind == "f":
            out[np.isnan(v)] = np.nan
    else:
        own64 = v.dtype == np.float64 and col.owned
        x = np.subtract(v, mean, out=v if own64 else None, dtype=np.float64)  # exact float64 of v, minus mean
        np.divide(x, std, out=x)
        if dtype == "float64":
            out = x
        elif v.dtype == np.float32 and col.owned:
            np.copyto(v, x, casting="same_kind")  # the float32 rounding of astype, into v's buffer
            out = v
        else:
            out = x.astype(dtype)
    if col.mask is not None:
        out[col.mask] = np.nan
    return HostColumn(out, None, True)


__all__ = ["HostColumn", "LOG_SMALL", "clip_host", "fill_host", "host_column", "host_column_from_arrow",
           "host_column_to_arrow", "host_columns_supported", "host_series", "log1p_host", "normalize_host"]
