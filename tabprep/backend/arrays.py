"""Column values as arrays: masks, int/float views, hashes, counts, and array kernels.

pandas / numpy implementations; the cuDF / cupy ones are in :mod:`tabprep.backend.gpu`,
registered lazily on the same :class:`~tabprep.backend.dispatch.Dispatch` objects.

Conventions:
* Nulls: a missing value is a null; on float columns NaN counts as null too
  (pandas cannot tell them apart, so cuDF is made to agree).
* Integers of any width are widened to int64 before hashing or lookups, so an
  int32 and an int64 column with the same values get the same ids.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Optional, Sequence, Tuple

import numpy as np
import pandas as pd
import pyarrow as pa

from .dispatch import Dispatch, register_gpu_lazy

# ---------------------------------------------------------------------------
# modules and host copies
# ---------------------------------------------------------------------------
array_module = Dispatch("array_module", "``cupy`` for GPU objects, else ``numpy``.")
array_module.register(object, lambda obj: np)

frame_lib = Dispatch("frame_lib", "The dataframe module of ``obj``: ``cudf`` or ``pandas``.")
frame_lib.register(object, lambda obj: pd)

to_numpy = Dispatch("to_numpy", "Host numpy copy of a numpy/cupy array or a pandas/cuDF series.")


@to_numpy.register(object)
def _to_numpy(arr: Any) -> np.ndarray:
    if hasattr(arr, "to_numpy") and not isinstance(arr, np.ndarray):
        return arr.to_numpy()
    return np.asarray(arr)


to_host = Dispatch("to_host", "pandas / numpy copy of a cuDF object or cupy array (identity on the CPU).")
to_host.register(object, lambda obj: obj)


# ---------------------------------------------------------------------------
# column kinds
# ---------------------------------------------------------------------------
is_list_series = Dispatch("is_list_series", "True for list (multi-hot) columns on either backend.")


@is_list_series.register(object)
def _is_list_series(series: Any) -> bool:
    dtype = series.dtype
    return isinstance(dtype, pd.ArrowDtype) and (
        pa.types.is_list(dtype.pyarrow_dtype) or pa.types.is_large_list(dtype.pyarrow_dtype)
        or pa.types.is_fixed_size_list(dtype.pyarrow_dtype))


@is_list_series.register((pa.Array, pa.ChunkedArray))
def _is_list_arrow(arr: Any) -> bool:
    return pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type) or pa.types.is_fixed_size_list(arr.type)


is_string_series = Dispatch("is_string_series", "True for string columns on either backend.")


@is_string_series.register(object)
def _is_string_series(series: Any) -> bool:
    dtype = series.dtype
    return pd.api.types.is_string_dtype(dtype) or (
        isinstance(dtype, pd.ArrowDtype) and pa.types.is_string(dtype.pyarrow_dtype))


@is_string_series.register((pa.Array, pa.ChunkedArray))
def _is_string_arrow(arr: Any) -> bool:
    return pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)


def is_float_series(series: Any) -> bool:
    return not is_list_series(series) and np.dtype(_numpy_kind_dtype(series.dtype)).kind == "f"


def _numpy_kind_dtype(dtype: Any):
    try:
        return np.dtype(getattr(dtype, "numpy_dtype", dtype))
    except (TypeError, ValueError):
        return np.dtype("O")


def is_time_dtype(dtype: Any) -> bool:
    """True for datetime64 (tz-aware too) and timedelta64 dtypes (numpy, pandas or Arrow-backed)."""
    return getattr(dtype, "kind", "O") in ("M", "m")


def time_ints(series: Any) -> Tuple[np.ndarray, Optional[np.ndarray]]:
    """A datetime / timedelta series as ``(int64 counts in its unit, null mask or None)``.

    NaT is the null (issue #30): it is never read as its int64 sentinel (the smallest int64),
    so statistics, hashes and comparisons see only real instants. tz-aware datetimes count
    from the UTC epoch. The values in null slots are 0."""
    arr = series.array
    if hasattr(arr, "asi8"):  # DatetimeArray / TimedeltaArray (tz-aware included)
        values = np.asarray(arr.asi8)
    else:  # Arrow-backed: its int64 buffer through Arrow
        values = pa.array(arr).cast(pa.int64()).to_numpy(zero_copy_only=False)
    mask = np.asarray(series.isna(), dtype=bool)
    if mask.any():
        values = np.where(mask, 0, values).astype(np.int64, copy=False)
        return values, mask
    return values.astype(np.int64, copy=False), None


def time_unit(dtype: Any) -> str:
    """The unit (``"s"``, ``"ms"``, ``"us"``, ``"ns"``) of a datetime / timedelta dtype."""
    if isinstance(dtype, np.dtype):
        return np.datetime_data(dtype)[0]
    if hasattr(dtype, "pyarrow_dtype"):
        return dtype.pyarrow_dtype.unit
    return getattr(dtype, "unit", "ns")


def time_scalar(dtype: Any, value: Any, what: str = "value") -> Any:
    """``value`` as a scalar of the datetime / timedelta ``dtype``: a number is a count in the
    dtype's unit (0: the epoch / zero duration), anything else goes through ``pd.Timestamp`` /
    ``pd.Timedelta`` (tz-naive values on a tz-aware column are read in its time zone). Raises
    TypeError naming ``what`` when ``value`` is no time."""
    unit = time_unit(dtype)
    tz = getattr(dtype, "tz", None) or getattr(getattr(dtype, "pyarrow_dtype", None), "tz", None)
    try:
        if isinstance(value, (bool, np.bool_)):
            raise TypeError("a bool")
        if isinstance(value, (float, np.floating)):
            if not float(value).is_integer():
                raise TypeError("a count must be a whole number")
            value = int(value)
        if getattr(dtype, "kind", "") == "m":
            out = pd.Timedelta(int(value), unit=unit) if isinstance(value, (int, np.integer)) else pd.Timedelta(value)
            return out.as_unit(unit)
        if isinstance(value, (int, np.integer)):
            out = pd.Timestamp(int(value), unit=unit, tz="UTC")
            out = out.tz_convert(tz) if tz else out.tz_localize(None)
        else:
            out = pd.Timestamp(value)
            if tz and out.tzinfo is None:
                out = out.tz_localize(tz)
        return out.as_unit(unit)
    except (TypeError, ValueError, OverflowError) as exc:
        raise TypeError(f"{what} {value!r} is not a time for a {dtype} column ({exc}); give an integer count "
                        f"in the column's unit ({unit}), a pandas Timestamp / Timedelta or an ISO string") from None


def is_int_like(series: Any) -> bool:
    """True for int, bool and nullable-int columns (not lists or strings)."""
    if is_list_series(series) or is_string_series(series):
        return False
    return _numpy_kind_dtype(series.dtype).kind in "iub"


# ---------------------------------------------------------------------------
# values
# ---------------------------------------------------------------------------
isnull = Dispatch("isnull", "Boolean array (numpy or cupy): True where the value is null or NaN.")
isnull.register(object, lambda series: series.isna().to_numpy())

float_values = Dispatch("float_values", """Values as a float array, NaN where null. On the CPU a fresh
array (callers may write into it); cuDF may return a view of the column's device memory.""")


@float_values.register(object)
def _float_values(series: Any, dtype: str = "float64"):
    if isinstance(series.dtype, np.dtype) and series.dtype.kind in "iubf":
        # numpy-backed: nothing to fill (NaN is the float null), so skip pandas' na_value pass
        return np.array(series.to_numpy(), dtype=dtype, copy=True)
    if is_time_dtype(series.dtype):  # NaT is null: NaN, never the int64 sentinel
        values, mask = time_ints(series)
        out = values.astype(dtype)
        if mask is not None:
            out[mask] = np.nan
        return out
    return series.to_numpy(dtype=dtype, na_value=np.nan)


int_values = Dispatch("int_values", "Values as an int64 array, ``fill`` where null. Bools become 0/1.")


@int_values.register(object)
def _int_values(series: Any, fill: int = 0):
    if isinstance(series.dtype, np.dtype) and series.dtype.kind in "iub":  # numpy: no nulls to fill
        return series.to_numpy(dtype="int64")
    if is_time_dtype(series.dtype):
        values, mask = time_ints(series)
        if mask is not None:
            values[mask] = fill
        return values
    return series.to_numpy(dtype="int64", na_value=fill)


int_data = Dispatch("int_data", """int/bool column as ``(int64 values, null mask or None)``, without
copies where possible.

Null slots of the values hold arbitrary numbers: read them only where the mask is False.
numpy arrays for pandas, cupy arrays for cuDF. A hot path of the int ops (Categorify,
LogOp, HashBucket), where ``to_numpy(na_value=...)`` would copy and scan every column once
more (and on cuDF, each extra call costs ~0.5 ms of Python before any kernel runs).""")


@int_data.register(object)
def _int_data(series: Any) -> Tuple[Any, Optional[Any]]:
    dtype = series.dtype
    if is_time_dtype(dtype):  # NaT is null (datetime / timedelta ids and hashes: int64 counts)
        return time_ints(series)
    if isinstance(dtype, np.dtype):
        values = series.to_numpy()
        return (values if dtype == np.int64 else values.astype(np.int64)), None
    arr = series.array
    if isinstance(arr, pd.arrays.IntegerArray) or isinstance(arr, pd.arrays.BooleanArray):
        values, mask = arr._data, arr._mask  # the masked array's own buffers (pandas >= 1.0 layout)
        values = values if values.dtype == np.int64 else values.astype(np.int64)
        return values, (mask if mask.any() else None)
    mask = series.isna().to_numpy()
    return series.to_numpy(dtype="int64", na_value=0), (mask if mask.any() else None)


value_counts = Dispatch("value_counts", """(counts indexed by value, excluding nulls; number of nulls)
of one column or list leaves.""")


@value_counts.register(object)
def _value_counts(series: Any) -> Tuple[Any, int]:
    nulls = int(isnull(series).sum())
    if _numpy_kind_dtype(series.dtype).kind in "iub" and not is_string_series(series):
        # nullable ints: count on the int64 view of the non-null values (faster, stable dtype)
        values = series.to_numpy(dtype="int64", na_value=0)
        if nulls:
            values = values[~series.isna().to_numpy()]
        counts = pd.Series(values).value_counts(sort=False)
        return counts, nulls
    counts = series.value_counts(sort=False, dropna=True)
    return counts, nulls


murmur3 = Dispatch("murmur3", """MurmurHash3_x86_32 of each value (uint32 array on the series' backend);
nulls hash to 0.

cuDF's ``hash_values(method="murmur3")`` is the reference; it is the plain
MurmurHash3_x86_32 of the value's bytes (checked on an H100 with cuDF 26.10: equal to
``mmh3.hash(bytes, 0, signed=False)``, no ``hash_combine`` with the seed), and the CPU path,
:func:`tabprep.hashing.murmur3_32`, reproduces it bit for bit. Integer columns are widened
to int64 and floats to float64 first on both backends.""")


@murmur3.register(object)
def _murmur3(series: Any, seed: int = 0):
    from ..hashing import murmur3_32

    if isinstance(series.dtype, pd.CategoricalDtype):
        # a categorical hashes as its category values (what parquet stores and Dataset reads back):
        # each category hashed once, then taken by code; a null (code -1) hashes to 0 (issue #30)
        codes = np.asarray(series.cat.codes.to_numpy(), dtype=np.int64)
        cats = pd.Series(series.cat.categories)
        hashed = _murmur3(cats, seed) if len(cats) else np.zeros(0, dtype=np.uint32)
        out = np.zeros(len(codes), dtype=np.uint32)
        known = codes >= 0
        out[known] = hashed[codes[known]]
        return out
    if is_string_series(series):
        values = series.to_numpy(dtype=object, na_value="")
    elif series.dtype.kind == "f" if hasattr(series.dtype, "kind") else False:
        values = series.to_numpy(dtype="float64", na_value=0.0)
    elif _numpy_kind_dtype(series.dtype).kind == "f":
        values = series.to_numpy(dtype="float64", na_value=0.0)
    else:
        values, mask = int_data(series)
        out = murmur3_32(values, seed=seed).astype(np.uint32, copy=False)
        if mask is not None:
            out = out.copy() if not out.flags.writeable else out
            out[mask] = 0
        return out
    mask = isnull(series)
    out = murmur3_32(values, seed=seed).astype(np.uint32, copy=False)
    if mask.any():
        out = out.copy()
        out[mask] = 0
    return out


# ---------------------------------------------------------------------------
# per-op kernels (the backend-specific fast paths of FillMissing, Clip, LogOp, HashBucket)
# ---------------------------------------------------------------------------
fill_nulls = Dispatch("fill_nulls", """``series`` (scalar) with nulls (and NaN) replaced by ``value``;
nullable ints become plain int64 (FillMissing).""")


@fill_nulls.register(object)
def _fill_nulls(s: Any, value: Any) -> Any:
    from .frames import new_series

    if isinstance(s.array, pd.arrays.IntegerArray) and _fits(value, s.array._data.dtype):
        # numpy where() on the masked array's buffers: pandas' fillna + astype hold the GIL
        data, mask = s.array._data, s.array._mask
        filled = np.where(mask, np.asarray(value, dtype=data.dtype), data) if mask.any() else data
        return new_series(filled, like=s)
    if is_time_dtype(s.dtype):  # the fill keeps the datetime / timedelta dtype (a number: a count in its unit)
        return s.fillna(time_scalar(s.dtype, value, "fill value"))
    if isinstance(s.dtype, pd.BooleanDtype):  # pandas refuses 0 for 'boolean'; 0/1 are False/True (issue #30)
        return s.fillna(bool_fill(value, s.name)).astype(bool)
    out = s.fillna(value)
    return _unmask_dtype(out)


def bool_fill(value: Any, name: Any) -> bool:
    """``value`` as the fill of a nullable boolean column: a bool, or 0 / 1; else ``TypeError``
    naming the column."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, float, np.integer, np.floating)) and value in (0, 1):
        return bool(value)
    raise TypeError(f"column {name!r} is boolean: its fill value must be True / False (or 0 / 1), got {value!r}")


def _unmask_dtype(out: Any) -> Any:
    dtype = str(out.dtype)
    if dtype in ("Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64", "boolean"):
        out = out.astype(dtype.lower().replace("boolean", "bool"))
    return out


def _fits(value: Any, dtype: np.dtype) -> bool:
    """True when ``value`` is an integer that ``dtype`` holds (else pandas decides/raises)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer, float, np.floating)):
        return False
    if isinstance(value, (float, np.floating)) and not float(value).is_integer():
        return False
    info = np.iinfo(dtype)
    return info.min <= value <= info.max


clip_series = Dispatch("clip_series", """``series`` (scalar) clipped to ``[lower, upper]`` (either may be
None), dtype kept, nulls kept (Clip).""")


@clip_series.register(object)
def _clip_series(s: Any, lower: Any, upper: Any) -> Any:
    from .frames import new_series

    bounds = array_clip_bounds(s.dtype, lower, upper)
    if bounds is not None:
        # numpy releases the GIL where pandas' clip holds it (dask runs partitions on threads)
        lo, hi = bounds
        values = s.to_numpy()
        return new_series(np.clip(values, lo, hi), like=s)
    if is_time_dtype(s.dtype):  # bounds as times of the column's dtype; NaT stays NaT
        lower = None if lower is None else time_scalar(s.dtype, lower, "Clip bound")
        upper = None if upper is None else time_scalar(s.dtype, upper, "Clip bound")
    return s.clip(lower=lower, upper=upper)


def array_clip_bounds(dtype: Any, lower: Any, upper: Any) -> Optional[tuple]:
    """Bounds for ``np.clip``/``cupy.clip`` when they give what pandas' clip gives (numpy
    int/float dtypes; for ints, integral bounds only), else None."""
    if not isinstance(dtype, np.dtype) or dtype.kind not in "iuf":
        return None
    bounds = (lower, upper)
    if dtype.kind == "f":
        return bounds
    info = np.iinfo(dtype)
    for b in bounds:
        if b is not None and not (float(b).is_integer() and info.min <= b <= info.max):
            return None
    return tuple(None if b is None else int(b) for b in bounds)


def quiet():
    """numpy/cupy error state for logs of 0 and negatives (-inf / NaN expected)."""
    return np.errstate(invalid="ignore", divide="ignore")


# LogOp is NVTabular's ``np.log(col.astype(np.float32) + 1)``: the value made float32, 1 added in
# float32, and the logarithm of that sum. tabprep takes the logarithm in float64 and rounds it once
# to float32 (the correctly rounded float32 logarithm), where NVTabular takes numpy's or CUDA's
# float32 logarithm, which misses it on some values: CUDA's logf by one unit in the last place on
# 3.8% of integer counts and 6-8% of floats (H200), numpy 2.4's AVX-512 log by up to three units on
# 3.7% and 24-31%; the two disagree with each other on 0.8% and 23-29% (devrun/logop_nvt.py,
# docs/migration.md). That keeps the CPU and the GPU bit for bit equal, and within the error of
# NVTabular's float32 logarithm on either. Before 2026-11-29 tabprep computed ``float32(log1p(float64(x)))``: a float
# input was not rounded to float32 before the sum, so 60% of float64 values in [0, 1) differed
# from NVTabular's by a unit, and values below ~6e-8 gave x where NVTabular gives 0.
log1p_int = Dispatch("log1p_int", """LogOp of an int64 array (numpy or cupy): ``float32(log(float64(
float32(x) + float32(1))))`` (NVTabular's ``log(float32(x) + 1)``, the logarithm correctly rounded);
-1 gives -inf, smaller values NaN.""")

#: integers below this are looked up in a table (256 KiB of float32: stays in cache)
_TABLE_SIZE = 1 << 16


@lru_cache(maxsize=1)
def _log1p_table() -> np.ndarray:
    # below 2**24 float32(i) + 1 is exact: the table holds log(i + 1), computed in float64
    table = np.log(np.arange(1, _TABLE_SIZE + 1, dtype=np.float64)).astype(np.float32)
    table.flags.writeable = False
    return table


def log_plus_one32(x: Any) -> Any:
    """``float32(log(float64(float32(x) + float32(1))))`` of a numeric array (numpy or cupy; ints,
    floats, uint64): LogOp's formula in array operations (a new float32 array). NaN stays NaN, +inf
    +inf, -1 gives -inf and values below -1 NaN; floats beyond float32's range are +-inf first."""
    xp = array_module(x)
    with quiet(), np.errstate(over="ignore"):
        s = x.astype(np.float32)                 # a copy, also of a float32 input
        xp.add(s, np.float32(1), out=s)          # the float32 sum, as NVTabular
        return xp.log(s.astype(np.float64)).astype(np.float32)


@log1p_int.register(object)
def int_log1p32(values: np.ndarray) -> np.ndarray:
    """LogOp of an int64 numpy array (see :data:`log1p_int`).

    Counts (the Criteo ``I`` columns, clicks, views) are mostly small non-negative integers:
    a gather from a table of correctly rounded values is ~6x faster than evaluating the
    logarithm (no SIMD float64 log on most CPUs). Values outside ``[0, 65536)`` are computed.
    """
    out = _log1p_table().take(values, mode="clip")  # out-of-table slots are fixed below
    # negative values wrap to huge unsigned ones: one comparison finds both ends
    big = values.view(np.uint64) >= _TABLE_SIZE
    if big.any():
        out[big] = log_plus_one32(values[big])
    return out


log1p_float = Dispatch("log1p_float", """LogOp of a float array (numpy or cupy, float64 or float32):
``float32(log(float64(float32(x) + float32(1))))`` as :data:`log1p_int`. NaN stays NaN, -1 gives
-inf, values below -1 NaN, +inf stays +inf, values below about 6e-8 in magnitude give 0 (their
float32 sum with 1 is 1), as NVTabular's. ``overwrite=True``: ``x`` is the caller's own and may be
used as scratch (the result is the same either way).""")


@log1p_float.register(object)
def _log1p_float(x: np.ndarray, overwrite: bool = False) -> np.ndarray:
    return log_plus_one32(x)


mod_buckets = Dispatch("mod_buckets", """``hashes % num_buckets`` of a uint32 hash array (numpy or cupy)
as int64 (HashBucket).""")


@mod_buckets.register(object)
def _mod_buckets(h: Any, nb: int) -> Any:
    from ..hashing import mod_uint32

    return mod_uint32(h, nb)


bucket_ids = Dispatch("bucket_ids", """HashBucket's ids of a scalar series: ``murmur3(value) % num_buckets``
(:func:`murmur3`'s bytes: ints, bools and datetimes as int64, floats as float64) in the integer
``dtype``, 0 for nulls and NaN; a series like ``series`` (its name, index and backend). The GPU
runs libcudf's hash and modulo on the column (a few calls, no CuPy kernel); the result is the same.""")


@bucket_ids.register(object)
def _bucket_ids(series: Any, nb: int, dtype: str) -> Any:
    from .frames import new_series

    return new_series(mod_buckets(murmur3(series), nb), like=series, dtype=dtype)


# the loader's batch arrays live in batch_arrays.py; their names stay importable from here
from .batch_arrays import (ALIGN, BlockGather, _aligned_empty, _arrow_chunks, _arrow_values,  # noqa: E402,F401
                           _column_array_numpy, _cont_dtype, block_dtype, column_array, take_aligned, take_block, take_rows)


register_gpu_lazy(array_module, frame_lib, to_numpy, to_host, is_list_series, is_string_series, isnull,
                  float_values, int_values, int_data, value_counts, murmur3, fill_nulls, clip_series,
                  log1p_int, log1p_float, mod_buckets, bucket_ids)
