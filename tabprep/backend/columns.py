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

The kernels here are the halves of FillMissing, Clip, LogOp and Normalize that run on a column's
arrays; each computes exactly what the op's ``transform`` computes (same dtype, same bits), or
returns None where it would not (the workflow then runs ``transform``). They are written once
for any array namespace ``xp`` (:func:`~tabprep.backend.arrays.array_module` of the values:
numpy, or CuPy on the GPU), and build their output with ``col.like(...)``, so the same code runs
on a :class:`HostColumn` and on a :class:`DeviceColumn` (CuPy values + mask, made from a cuDF
column by the GPU backend's :func:`host_column`). Where the backends compute a function
differently (LogOp: a table on the CPU, one kernel on the GPU)
the kernels call the same dispatchers as the ops' ``transform``, so each backend's fused result
equals its own unfused one.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from .arrays import (_fits, array_clip_bounds, array_module, float_values, int_data, log1p_float,
                     log1p_int, log_plus_one32)
from .dispatch import Dispatch, register_gpu_lazy


class ArrayColumn:
    """One scalar column as arrays: ``values``, ``mask`` (bool array, True = null, or None),
    ``owned``, ``nullable`` (see the module docstring). The kernels take and return these; the
    subclasses say where the arrays live (:class:`HostColumn`: numpy; :class:`DeviceColumn`: CuPy)."""

    __slots__ = ("values", "mask", "owned", "nullable")

    def __init__(self, values: Any, mask: Optional[Any] = None, owned: bool = False,
                 nullable: bool = False) -> None:
        self.values = values
        self.mask = mask
        self.owned = owned
        self.nullable = nullable or mask is not None

    def like(self, values: Any, mask: Optional[Any] = None, owned: bool = True,
             nullable: bool = False) -> "ArrayColumn":
        """A column of this one's type (host or device) holding ``values`` / ``mask``."""
        return type(self)(values, mask, owned, nullable)

    def __len__(self) -> int:
        return len(self.values)

    @property
    def dtype(self) -> np.dtype:
        """The values' numpy dtype (so that ``is_int_like`` and friends read a column of arrays as a column)."""
        return self.values.dtype

    def __repr__(self) -> str:
        nulls = 0 if self.mask is None else int(self.mask.sum())
        return f"{type(self).__name__}({self.values.dtype}, {len(self)} rows, {nulls} nulls, owned={self.owned})"


class HostColumn(ArrayColumn):
    """``values`` (numpy), ``mask`` (bool numpy, True = null, or None), ``owned``, ``nullable``."""

    __slots__ = ()


class DeviceColumn(ArrayColumn):
    """``values`` (a CuPy array), ``mask`` (bool CuPy array, True = null, or None), ``owned``,
    ``nullable``: a cuDF column's arrays (:func:`host_column` of a cuDF series, in
    :mod:`tabprep.backend.gpu`). Conventions as :class:`HostColumn`, with two differences that keep
    what cuDF's own ops give: ``nullable`` is True only where this partition has nulls (cuDF has
    no masked dtypes), and a float column's nulls are NaN in ``values`` *and* True in ``mask`` (a
    cuDF float column keeps nulls apart from NaN; a chain ending in Clip keeps them null)."""

    __slots__ = ()


# ---------------------------------------------------------------------------
# frames <-> host columns
# ---------------------------------------------------------------------------
host_columns_supported = Dispatch("host_columns_supported", """True when the columns of this frame can be
turned into kernel columns by :func:`host_column` (pandas: :class:`HostColumn`; cuDF:
:class:`DeviceColumn`, once the GPU kernel warm-up is done), so that the workflow fuses chains of
column kernels; False for other frames.""")
host_columns_supported.register(object, lambda frame: False)
host_columns_supported.register(pd.DataFrame, lambda frame: True)

host_column = Dispatch("host_column", """The kernel column of a scalar numeric series: a :class:`HostColumn`
of a pandas series (views, not copies), a :class:`DeviceColumn` of a cuDF one; None for anything
the kernels do not take (strings, lists, categoricals, datetimes, Arrow- or float-masked dtypes).""")
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


host_series = Dispatch("host_series", """``host_series(col, like, name)``: the series of the kernel column
``col`` on ``like``'s backend, with ``like``'s index, as the ops' ``transform`` would build it (a
:class:`HostColumn` gives a pandas series, a :class:`DeviceColumn` a cuDF one).""")


@host_series.register(HostColumn)
def _host_series(col: HostColumn, like: pd.Series, name: Any) -> pd.Series:
    """A pandas series of ``col`` with ``like``'s index: masked ints/bools (``nullable``) become
    ``Int64``/``boolean`` style arrays, the rest plain numpy columns (no copy)."""
    values = col.values
    if col.nullable and values.dtype.kind in "iub":
        mask = col.mask if col.mask is not None else np.zeros(len(values), dtype=bool)
        cls = pd.arrays.BooleanArray if values.dtype.kind == "b" else pd.arrays.IntegerArray
        return pd.Series(cls(values, mask), index=like.index, name=name, copy=False)
    return pd.Series(values, index=like.index, name=name, copy=False)


host_series_many = Dispatch("host_series_many", """``host_series_many(first, cols, likes, names)``: the
:func:`host_series` of each of a fused chain's kernel columns ``cols`` (``likes``, ``names``: each
one's), in order. Dispatched on ``first`` (``cols[0]``), so that a backend can batch their device
work: cuDF checks every float column for NaN with one copy to the host.""")


@host_series_many.register(object)
def _host_series_many(first: Any, cols: Sequence[Any], likes: Sequence[Any], names: Sequence[Any]) -> List[Any]:
    return [host_series(col, like, name) for col, like, name in zip(cols, likes, names)]


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
def fill_host(col: ArrayColumn, value: Any) -> Optional[ArrayColumn]:
    """FillMissing: nulls (and NaN) replaced by ``value``; masked ints become plain ints.
    None where pandas' ``fillna`` would decide the dtype (a value the column cannot hold)."""
    v = col.values
    xp = array_module(v)
    kind = v.dtype.kind
    if kind in "iu":
        if not col.nullable:
            return col.like(v, None, col.owned)  # a numpy int column holds no null
        if not _fits(value, v.dtype):
            return None
        if col.mask is None:
            return col.like(v, None, col.owned)
        # a Python int (an integral float such as 2.0 made one): a weak scalar, so where() keeps the
        # column's dtype, and no 0-d array to copy to the device
        fill = int(value)
        if col.owned:
            xp.copyto(v, fill, where=col.mask)
            return col.like(v, None, True)
        return col.like(xp.where(col.mask, fill, v), None, True)
    if kind == "f":
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            return None
        with np.errstate(over="ignore"):
            fill = v.dtype.type(value)
        if np.isfinite(fill) != np.isfinite(value):
            return None  # overflows the dtype: pandas warns and decides
        nan = xp.isnan(v)  # a device column's nulls are NaN in its values too
        if not bool(nan.any()):
            return col.like(v, None, col.owned)
        if col.owned:
            xp.copyto(v, fill, where=nan)
            return col.like(v, None, True)
        return col.like(xp.where(nan, fill, v), None, True)
    if kind == "b" and not col.nullable:
        return col.like(v, None, col.owned)
    return None


#: the largest finite value of each float dtype (a Clip bound past it would become inf)
_FLOAT_MAX = {np.dtype(t): float(np.finfo(t).max) for t in (np.float16, np.float32, np.float64)}


def clip_host(col: ArrayColumn, lower: Any, upper: Any) -> Optional[ArrayColumn]:
    """Clip: values bounded to ``[lower, upper]`` (dtype and nulls kept), where ``np.clip`` gives what
    pandas' clip gives (numpy int/float dtypes, integral bounds for ints; see ``array_clip_bounds``).
    The bounds are scalars of the column's dtype (what numpy does with a Python bound; said
    explicitly so that every namespace compares in the column's dtype and keeps it); None for a
    finite bound the dtype cannot hold (1e300 on float32: the ops' transform decides)."""
    v = col.values
    bounds = array_clip_bounds(v.dtype, lower, upper)
    if bounds is None:
        return None
    top = _FLOAT_MAX.get(v.dtype)  # ints: array_clip_bounds gave ints the dtype holds
    if top is not None and any(b is not None and top < abs(b) < np.inf for b in bounds):
        return None
    lo, hi = (None if b is None else v.dtype.type(b) for b in bounds)
    out = array_module(v).clip(v, lo, hi, out=v if col.owned else None)
    return col.like(out, col.mask, True, col.nullable)


def log1p_host(col: ArrayColumn) -> Optional[ArrayColumn]:
    """LogOp: ``float32(log(float64(float32(x) + 1)))`` (:data:`~tabprep.backend.arrays.log1p_int`);
    ints by ``log1p_int`` (a table on the CPU), nulls become NaN; floats by ``log1p_float`` --
    the dispatchers LogOp's ``transform`` calls."""
    v = col.values
    kind = v.dtype.kind
    if v.dtype == np.uint64:   # beyond int64 the int64 view is negative: the formula on the values
        out = log_plus_one32(v)
        if col.mask is not None:
            array_module(out).copyto(out, np.nan, where=col.mask)
        return col.like(out, None, True)
    if kind in "iub":
        out = log1p_int(v if v.dtype == np.int64 else v.astype(np.int64))
        if col.mask is not None:
            array_module(out).copyto(out, np.nan, where=col.mask)
        return col.like(out, None, True)
    if kind != "f":
        return None
    return col.like(log1p_float(v, overwrite=col.owned), None, True)


def normalize_host(col: ArrayColumn, mean: float, std: float, dtype: str = "float32") -> Optional[ArrayColumn]:
    """Normalize: ``((x - mean) / std)`` computed in float64 and rounded once to ``dtype``
    (``"float32"`` or ``"float64"``; 0 where ``std`` is 0 or not finite); nulls and NaN stay NaN.
    The float64 intermediate is one array (the column's own float64 buffer when it owns one),
    rounded into the column's own float32 buffer when the output is float32 and it owns one."""
    v = col.values
    xp = array_module(v)
    if v.dtype.kind not in "iufb":
        return None
    if not std or not np.isfinite(std):
        out = xp.zeros(len(v), dtype=dtype)
        if v.dtype.kind == "f":
            xp.copyto(out, np.nan, where=xp.isnan(v))
    else:
        own64 = v.dtype == np.float64 and col.owned
        src = v.astype(np.float64) if v.dtype.kind == "b" else v  # exact; not every namespace subtracts bools
        x = xp.subtract(src, mean, out=v if own64 else None, dtype=np.float64)  # exact float64 of v, minus mean
        xp.divide(x, std, out=x)
        if dtype == "float64":
            out = x
        elif v.dtype == np.float32 and col.owned:
            xp.copyto(v, x, casting="same_kind")  # the float32 rounding of astype, into v's buffer
            out = v
        else:
            out = x.astype(dtype)
    if col.mask is not None:
        xp.copyto(out, np.nan, where=col.mask)
    return col.like(out, None, True)


register_gpu_lazy(host_column, host_columns_supported)

__all__ = ["ArrayColumn", "DeviceColumn", "HostColumn", "clip_host", "fill_host", "host_column", "host_column_from_arrow",
           "host_column_to_arrow", "host_columns_supported", "host_series", "host_series_many", "log1p_host", "normalize_host"]
