"""The cuDF / cupy implementations of the backend functions.

Imported lazily, by :class:`~tabprep.backend.dispatch.Dispatch` the first time a cuDF, dask-cuDF
or cupy object is seen, or by a reader asked for ``cpu=False``: importing tabprep never imports
cuDF. Each function here is registered on its dispatcher for every type of those libraries (as
``is_gpu`` tested the type's module).

Nothing here runs in CI (no GPU): the GPU tests (``pytest -m gpu``) cover it.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, List, Optional, Sequence

import cudf
import cupy
import pylibcudf as plc
import numpy as np
import pyarrow as pa

from . import arrays as A
from . import frames as F
from . import lists as L
from . import lookup as K
from . import parquet as P
from . import gpu_warmup
from . import reductions as R
from .dispatch import GPU_MODULES

log = logging.getLogger("tabprep.backend")
gpu_warmup.start()  # pre-builds the hot paths' CuPy kernels while the first partitions are read


def _register(dispatcher: Any) -> Callable:
    def wrapper(func: Callable) -> Callable:
        return dispatcher.register_module(GPU_MODULES, func)

    return wrapper


# ---------------------------------------------------------------------------
# modules and host copies
# ---------------------------------------------------------------------------
A.array_module.register_module(GPU_MODULES, lambda obj: cupy)
A.frame_lib.register_module(GPU_MODULES, lambda obj: cudf)


@_register(A.to_numpy)
def _to_numpy(arr: Any) -> np.ndarray:
    if hasattr(arr, "to_numpy") and not isinstance(arr, np.ndarray):
        return arr.to_numpy()
    return arr.get()


@_register(A.to_host)
def _to_host(obj: Any) -> Any:
    if isinstance(obj, cupy.ndarray):
        return obj.get()
    return obj.to_pandas()


# ---------------------------------------------------------------------------
# column kinds and values
# ---------------------------------------------------------------------------
@_register(A.is_list_series)
def _is_list_series(series: Any) -> bool:
    return str(series.dtype).startswith("list")


@_register(A.is_string_series)
def _is_string_series(series: Any) -> bool:
    dtype = series.dtype
    return str(dtype) in ("object", "str", "string")


@_register(A.isnull)
def _isnull(series: Any):
    if A.is_float_series(series):
        # cuDF keeps NaN apart from null; tabprep treats both as missing (as pandas does)
        if not series.has_nulls:
            return cupy.isnan(series.values)
        return series.isna().values | cupy.isnan(series.fillna(0).values)
    if not series.has_nulls and not A.is_list_series(series):
        return cupy.zeros(len(series), dtype=bool)
    return series.isna().values


@_register(A.float_values)
def _float_values(series: Any, dtype: str = "float64"):
    if series.dtype.kind in "mM":  # int64 counts in the column's unit; NaT is a null there already
        series = series.astype("int64")
    if not series.has_nulls and series.dtype.kind in "iubf":
        return series.values.astype(dtype)  # cupy astype: a fresh array, no cuDF calls
    return series.astype(dtype).to_cupy(na_value=np.nan)


@_register(A.int_values)
def _int_values(series: Any, fill: int = 0):
    return series.astype("int64").fillna(fill).values


@_register(A.int_data)
def _int_data(series: Any):
    if series.dtype.kind in "mM":  # NaT is null: int64 counts with the null mask, as on the CPU
        series = series.astype("int64")
    if series.has_nulls:
        mask = series.isna().values
        values = series.fillna(0).values
    else:
        mask, values = None, series.values
    return (values if values.dtype == np.int64 else values.astype(np.int64)), mask


@_register(F.non_string_objects)
def _non_string_objects(frame: Any, columns: Any):
    return {}  # cuDF's object dtype is strings: no Python objects to find


@_register(A.value_counts)
def _value_counts(series: Any):
    nulls = int(A.isnull(series).sum())
    counts = series.value_counts(sort=False, dropna=True)
    if A.is_float_series(series) and len(counts):
        counts = counts[~cupy.isnan(counts.index.to_series().fillna(0).values)]
    return counts, nulls


@_register(A.murmur3)
def _murmur3(series: Any, seed: int = 0):
    if isinstance(series.dtype, cudf.CategoricalDtype):
        # as on the CPU: the category values' hashes taken by code; a null hashes to 0
        cats = cudf.Series(series.cat.categories)
        hashed = _murmur3(cats, seed) if len(cats) else cupy.zeros(0, dtype="uint32")
        codes = series.cat.codes.astype("int64").fillna(-1).values
        out = cupy.zeros(len(codes), dtype="uint32")
        known = codes >= 0
        out[known] = hashed[codes[known]]
        return out
    mask = A.isnull(series)
    s = series
    if s.dtype.kind in "iubmM":  # datetimes / timedeltas: their int64 counts, as the CPU hashes them
        s = s.astype("int64")
    elif s.dtype.kind == "f":
        s = s.astype("float64")
    out = s.hash_values(method="murmur3", seed=seed).values.astype("uint32")
    cupy.copyto(out, 0, where=mask)  # element-wise: a boolean-mask assignment is a size-specific scan
    return out


# ---------------------------------------------------------------------------
# per-partition reductions: libcudf only (no CuPy kernel to compile on a fresh worker)
# ---------------------------------------------------------------------------
_F64 = plc.DataType(plc.TypeId.FLOAT64)
_BOOL8 = plc.DataType(plc.TypeId.BOOL8)
_INF: Optional[Any] = None  # the float64 +inf scalar on the device, made at the first use
# libcudf's boolean-mask compaction (rows where the mask is true; null counts as false): renamed
# apply_retention_mask in cuDF 26.x, where the old name warns
_retain = getattr(plc.stream_compaction, "apply_retention_mask", None) or plc.stream_compaction.apply_boolean_mask


def _finite_column(series: Any) -> Any:
    """The finite values of ``series`` as a float64 pylibcudf column (nulls, NaN and +-inf dropped,
    as :func:`tabprep.backend.reductions.finite_values` on the host): ``abs(x) < inf``, which is
    false for NaN and null for nulls, then libcudf's boolean-mask compaction.

    pylibcudf straight on the column: cuDF's Series layer (nans_to_nulls, where, a scalar pulled
    back after every reduction) cost about 10 ms per 10M-row column on an H100, almost all of it
    Python and synchronisations (13 columns of 10M rows: 187 ms, against 33 ms here), so
    Normalize's fit paid ~0.1 s per partition whatever the partition's size."""
    global _INF
    if getattr(series.dtype, "kind", None) in ("M", "m"):
        # datetimes / timedeltas: their counts (NaT is null), as on the host; libcudf casts no
        # timestamp to float
        series = series.astype("int64")
    col = _plc_column(series)
    if col.type().id() != plc.TypeId.FLOAT64:
        col = plc.unary.cast(col, _F64)
    if _INF is None:
        _INF = plc.Scalar.from_py(float("inf"), _F64)
    absval = plc.unary.unary_operation(col, plc.unary.UnaryOperator.ABS)
    finite = plc.binaryop.binary_operation(absval, _INF, plc.binaryop.BinaryOperator.LESS, _BOOL8)
    return _retain(plc.Table([col]), finite).columns()[0]


def _moments_of(col: Any):
    """``(count, mean, m2)`` of a float64 pylibcudf column without nulls (libcudf reductions; the
    mean stays on the device for the deviations)."""
    n = col.size()
    if n == 0:
        return 0, 0.0, 0.0
    mean = plc.reduce.reduce(col, plc.aggregation.mean(), _F64)
    d = plc.binaryop.binary_operation(col, mean, plc.binaryop.BinaryOperator.SUB, _F64)
    sq = plc.binaryop.binary_operation(d, d, plc.binaryop.BinaryOperator.MUL, _F64)
    m2 = plc.reduce.reduce(sq, plc.aggregation.sum(), _F64)
    return n, float(mean.to_py()), float(m2.to_py())


def _minmax_of(col: Any):
    if col.size() == 0:
        return None, None
    lo, hi = plc.reduce.minmax(col)
    return float(lo.to_py()), float(hi.to_py())


@_register(R.finite_moments)
def _finite_moments(series: Any):
    return _moments_of(_finite_column(series))


@_register(R.finite_minmax)
def _finite_minmax(series: Any):
    return _minmax_of(_finite_column(series))


@_register(R.finite_moments_minmax)
def _finite_moments_minmax(series: Any):
    col = _finite_column(series)
    return _moments_of(col), _minmax_of(col)


@_register(R.any_true)
def _any_true(values: Any) -> bool:
    if len(values) == 0:
        return False
    # libcudf's reduction on a zero-copy column of the cupy array: no NVRTC compile on a fresh
    # worker, and none of cuDF's Series layer (Categorify's transform asks this once per column)
    return bool(plc.reduce.reduce(_plc_column(values), plc.aggregation.any(), _BOOL8).to_py())


# pylibcudf (libcudf's precompiled sorts and group-bys) straight on columns: cuDF's Python layer
# (value_counts, groupby, sort_values) launches a few CuPy kernels of its own, which a fresh
# worker compiles with NVRTC
def _plc_column(x: Any) -> Any:
    """The pylibcudf column of a cuDF series or a cupy array (zero-copy)."""
    if isinstance(x, cupy.ndarray):
        from_cai = getattr(plc.Column, "from_cuda_array_interface", None)
        if from_cai is not None:
            return from_cai(x)
        x = cudf.Series(x)
    col = x._column
    return col.plc_column if hasattr(col, "plc_column") else col.to_pylibcudf(mode="read")


def _cupy_int64(col: Any) -> Any:
    """An int64 cupy array of a pylibcudf column without nulls."""
    if col.type().id() != plc.TypeId.INT64:
        col = plc.unary.cast(col, plc.DataType(plc.TypeId.INT64))
    return cudf.Series.from_pylibcudf(col).values


def _sorted_group_counts(table: Any, agg: Any) -> tuple:
    """``(keys, aggregate)`` of a table sorted by its first column (nulls last, excluded): libcudf's
    sort-based group-by, which on sorted keys is one pass."""
    key = table.columns()[0]
    gb = plc.groupby.GroupBy(plc.Table([key]), null_handling=plc.types.NullPolicy.EXCLUDE,
                             keys_are_sorted=plc.types.Sorted.YES)
    value = table.columns()[-1]
    keys, results = gb.aggregate([plc.groupby.GroupByRequest(value, [agg])])
    return _cupy_int64(keys.columns()[0]), _cupy_int64(results[0].columns()[0])


@_register(R.int_counts)
def _int_counts(series: Any):
    # libcudf: drop nulls, sort, then a sorted group-by count. 3.7-6.3 ms on 20M int64 on an H100
    # (30 to 1.9M distinct values), against 3.5-3.9 ms for CuPy's unique, which a fresh worker must
    # compile (multi-block scans: seconds of NVRTC on the job's thread), and 11-24 ms for cuDF's
    # value_counts + sort_index (which also launches CuPy kernels). Nulls are dropped first: with
    # 2% nulls among 12.5M values the sorted group-by took 19.5 ms, against 4.4 ms without them
    # (and 5.1 ms for CuPy): the 50M-row Criteo fit took 2.4-3.5 s instead of 1.2 s
    nulls = int(series.null_count)
    col = _plc_column(series)
    if nulls:
        col = plc.stream_compaction.drop_nulls(plc.Table([col]), [0], 1).columns()[0]
    if col.type().id() != plc.TypeId.INT64:
        col = plc.unary.cast(col, plc.DataType(plc.TypeId.INT64))
    srt = plc.sorting.sort(plc.Table([col]), [plc.types.Order.ASCENDING], [plc.types.NullOrder.AFTER])
    keys, counts = _sorted_group_counts(srt, plc.aggregation.count(plc.types.NullPolicy.EXCLUDE))
    return keys, counts, nulls


@_register(R._merge_counts)
def _merge_counts(keys_list: Sequence[Any], counts_list: Sequence[Any]):
    # libcudf: concatenate the runs, sort by key, sorted group-by sum (no CuPy kernel)
    runs = plc.concatenate.concatenate([plc.Table([_plc_column(k), _plc_column(c)])
                                        for k, c in zip(keys_list, counts_list)])
    srt = plc.sorting.sort_by_key(runs, plc.Table([runs.columns()[0]]), [plc.types.Order.ASCENDING],
                                  [plc.types.NullOrder.AFTER])
    return _sorted_group_counts(srt, plc.aggregation.sum())


@_register(R.count_order)
def _count_order(keys: Any, counts: Any, freq_threshold: int = 0, max_size: int = 0):
    # libcudf's stable sort by descending count: keys ascend already, so ties keep ascending value
    tbl = plc.Table([_plc_column(keys), _plc_column(counts)])
    srt = plc.sorting.stable_sort_by_key(tbl, plc.Table([tbl.columns()[1]]), [plc.types.Order.DESCENDING],
                                         [plc.types.NullOrder.AFTER])
    values, freqs = (_cupy_int64(c).get() for c in srt.columns())
    if freq_threshold and freq_threshold > 1:
        keep = freqs >= freq_threshold  # on the host: counts descend, so this is a prefix
        values, freqs = values[keep], freqs[keep]
    if max_size and max_size > 0:
        values, freqs = values[:max_size], freqs[:max_size]
    return values, freqs


# ---------------------------------------------------------------------------
# per-op kernels
# ---------------------------------------------------------------------------
@_register(A.fill_nulls)
def _fill_nulls(s: Any, value: Any) -> Any:
    if not s.has_nulls and not A.is_float_series(s):
        return s  # nothing to fill (floats may still hold NaN, which cuDF keeps apart from nulls)
    if str(s.dtype) == "bool":  # 0 / 1 are False / True, anything else refused naming the column
        return s.fillna(A.bool_fill(value, s.name)).astype("bool")
    if s.dtype.kind in "mM":  # the fill keeps the dtype (a number: a count in the column's unit)
        return s.fillna(A.time_scalar(s.dtype, value, "fill value").to_numpy())
    out = s.fillna(value)
    if A.is_float_series(s):
        out = out.nans_to_nulls().fillna(value)
    return A._unmask_dtype(out)


@_register(A.clip_series)
def _clip_series(s: Any, lower: Any, upper: Any) -> Any:
    if str(s.dtype) == "bool":
        # cuDF refuses numeric bounds on a bool column; clip its 0/1 values like pandas
        # does, then back to bool (nulls stay null)
        return s.astype("float64").clip(lower=lower, upper=upper) != 0
    if s.dtype.kind in "mM":  # bounds as times of the column's dtype (a number: a count in its unit)
        lower = None if lower is None else A.time_scalar(s.dtype, lower, "Clip bound").to_numpy()
        upper = None if upper is None else A.time_scalar(s.dtype, upper, "Clip bound").to_numpy()
    # libcudf's clamp (nulls and NaN kept): precompiled, where cupy.clip compiles a kernel per
    # dtype and bound combination on a fresh worker
    return s.clip(lower=lower, upper=upper)


@_register(A.log1p_float)
@_register(A.log1p_int)
def _log1p_int(values: Any) -> Any:
    # the device's log1p is fast: no table needed. One kernel computes in float64 and stores float32
    # (same rounding as log1p in float64, then a cast): one NVRTC compile on a fresh worker, not three
    out = cupy.empty(len(values), dtype=np.float32)
    with A.quiet():
        return cupy.log1p(values, out=out, dtype=np.float64)


@_register(A.mod_buckets)
def _mod_buckets(h: Any, nb: int) -> Any:
    return h.astype("int64") % nb


@_register(A.take_rows)
def _take_rows(arr: Any, perm: Any, first_row: int) -> Any:
    return arr if perm is None else arr[perm]


@_register(A.take_block)
def _take_block(like: Any, arrays: Sequence[Any], perm: Any, first_row: int) -> Any:
    n = len(perm) if perm is not None else len(arrays[0])
    out = cupy.empty((len(arrays), n), dtype=arrays[0].dtype)
    for j, arr in enumerate(arrays):   # one gather kernel per column, into its row of the block
        if perm is None:
            out[j] = arr
        else:
            cupy.take(arr, perm, out=out[j])
    return out


@_register(A.column_array)
def _column_array(s: Any, cont: bool, on_nulls: Callable[[], None]) -> Any:
    if s.null_count:
        on_nulls()
        s = s.fillna(float("nan") if s.dtype.kind == "f" else 0)
    arr = s.values
    # continuous floats become float32; integers / bools keep their dtype (as arrays.column_array)
    arr = arr.astype(cupy.float32, copy=False) if cont and arr.dtype.kind not in "iub" else arr
    return cupy.ascontiguousarray(arr)


# ---------------------------------------------------------------------------
# frames
# ---------------------------------------------------------------------------
def _gpu_frame(columns: dict, index: Any):
    """cuDF frame of same-length columns, without aligning each column's index.

    ``cudf.DataFrame(dict, index=...)`` compares every column's index with ``index`` (which
    materializes RangeIndexes on the device): per column and per partition that costs more than
    the ops themselves.
    """
    data = {}
    for name, col in columns.items():
        if isinstance(col, cudf.Series):
            data[name] = col if F._is_default_index(col.index, len(col)) else col.reset_index(drop=True)
        else:
            data[name] = cudf.Series(col)
    out = cudf.DataFrame(data)
    if not F._is_default_index(index, len(out)):
        out.index = index
    return out


@_register(F._make_frame)
def _make_frame(like: Any, columns: dict):
    return _gpu_frame(columns, like.index)


@_register(F._new_series)
def _new_series(like: Any, values: Any, name: Any):
    if F._is_default_index(like.index, len(like)) and not hasattr(values, "index"):
        # cuDF: passing the index costs ~0.7 ms per column (it is validated and materialized)
        return cudf.Series(values, name=name)
    return cudf.Series(values, index=like.index, name=name)


@_register(F._concat_columns)
def _concat_columns(first: Any, frames: Sequence[Any]):
    return _gpu_frame({name: f[name] for f in frames for name in f.columns}, frames[0].index)


@_register(F.take_frame_rows)
def _take_frame_rows(df: Any, perm: Any):
    return df.iloc[perm].reset_index(drop=True)


def from_host(df: Any):
    return cudf.from_pandas(df)


@_register(F.to_backend)
def _to_backend(frame: Any, cpu: Optional[bool]):
    if cpu is True:
        return frame.to_pandas()
    return frame


@_register(F.move_like)
def _move_like(like: Any, frame: Any):
    return from_host(frame)


F.nullable_columns.register_module(GPU_MODULES, lambda df, columns=None: df)
F.nullable_int_dtypes.register_module(GPU_MODULES, lambda meta: {})


@_register(F.set_nulls)
def _set_nulls(series: Any, mask: Any):
    if not bool(mask.any()):
        return series
    return series.mask(F.new_series(mask, like=series, dtype="bool"))


@_register(F.cast_safely)
def _cast_safely(series: Any, dtype: str, name: str):
    # an opt-in slow path (transform(cast=True)): checked on the host with the pandas rules, so
    # CPU and GPU accept and refuse exactly the same values; nulls come back as cuDF nulls
    out = F._cast_safely_pandas(series.to_pandas(), dtype, name)
    # NaN is null (tabprep's policy for floats); ints/bools/strings carry pandas NA/None as nulls
    res = cudf.from_pandas(out, nan_as_null=True)  # (cudf.Series.from_pandas is gone in cuDF 26)
    res.index = series.index
    return res


@_register(F.cast_keep_nulls)
def _cast_keep_nulls(series: Any, dtype: str):
    return series.astype(dtype)


@_register(F.frame_to_arrow)
def _frame_to_arrow(df: Any, preserve_index: bool = False) -> pa.Table:
    return df.to_arrow(preserve_index=preserve_index)


@_register(F.to_dask)
def _to_dask(frame: Any, npartitions: int) -> Any:
    import dask_cudf

    return dask_cudf.from_cudf(frame, npartitions=npartitions)


def read_csv(files: Sequence[str], blocksize: int, **kwargs: Any) -> Any:
    import dask_cudf

    return dask_cudf.read_csv(files, blocksize=blocksize, **kwargs)


# ---------------------------------------------------------------------------
# parquet / Arrow
# ---------------------------------------------------------------------------
def arrow_to_frame(table: pa.Table):
    return cudf.DataFrame.from_arrow(table)


def _fs_kwargs(filesystem: Any) -> dict:
    # a remote file's (fsspec) file system; none for local paths (cuDF's own local reader)
    return {} if filesystem is None else {"filesystem": filesystem}


def read_parquet_piece(path: str, row_groups: Optional[Sequence[int]], columns: Optional[List[str]],
                       filesystem: Any = None):
    return cudf.read_parquet(path, columns=columns, row_groups=[list(row_groups)] if row_groups is not None else None,
                             **_fs_kwargs(filesystem))


def read_parquet_pieces(paths: Sequence[str], row_groups: Sequence[Sequence[int]], columns: Optional[List[str]],
                        filesystem: Any = None):
    return cudf.read_parquet(list(paths), columns=columns, row_groups=[list(g) for g in row_groups],
                             **_fs_kwargs(filesystem))


@_register(P.write_parquet_part)
def _write_parquet_part(df: Any, path: str, row_group_size: Optional[int], compression: str,
                        default_row_group: Optional[int] = None, int_encoding: str = "delta") -> int:
    # cuDF's parquet writer encodes on the device: no copy of the partition to the host; it keeps
    # its own encodings (int_encoding is the CPU writer's choice; values are the same either way)
    # cuDF's default row groups (1M rows): small ones make its writer ~2x slower
    df.reset_index(drop=True).to_parquet(path, index=False, compression=P.cudf_compression(compression),
                                         row_group_size_rows=row_group_size or None,
                                         force_nullable_schema=True)
    return len(df)


class CudfParquetReader:
    """Parts are cuDF frames (read on the device), stacked with ``concat``."""

    def read(self, path: str, row_groups: Optional[Sequence[int]], columns: Optional[List[str]],
             filesystem: Any = None) -> Any:
        return read_parquet_piece(path, row_groups, columns, filesystem=filesystem)

    def stack(self, parts: Sequence[Any]) -> Any:
        return parts[0].reset_index(drop=True) if len(parts) == 1 else F.concat_rows(parts)


# ---------------------------------------------------------------------------
# lists
# ---------------------------------------------------------------------------
def _is_list_dtype(dtype: Any) -> bool:
    """A list dtype, as cuDF spells it (``cudf.ListDtype``) or as pandas' ``ArrowDtype(list)``, which
    cuDF 26 also reports for list columns made by some operations."""
    if isinstance(dtype, cudf.ListDtype):
        return True
    typ = getattr(dtype, "pyarrow_dtype", None)
    return typ is not None and (pa.types.is_list(typ) or pa.types.is_large_list(typ))


def _elements_are_lists(dtype: Any) -> bool:
    """True for ``list<list<...>>`` in either spelling of :func:`_is_list_dtype`."""
    if isinstance(dtype, cudf.ListDtype):
        return _is_list_dtype(dtype.element_type)
    typ = getattr(dtype, "pyarrow_dtype", None)
    return typ is not None and _is_list_dtype(typ) and (pa.types.is_list(typ.value_type)
                                                        or pa.types.is_large_list(typ.value_type))


@_register(L.list_leaves)
def _list_leaves(series: Any):
    col = series.list
    if _elements_are_lists(series.dtype):
        # nested lists: one level, as on the CPU (cuDF's .list.leaves flattens every level)
        return _one_level(series)
    leaves = col.leaves
    lengths = col.len().fillna(0).astype("int64").values
    offsets = cupy.concatenate([cupy.zeros(1, dtype="int64"), cupy.cumsum(lengths)])
    return leaves.reset_index(drop=True), offsets


def _one_level(series: Any):
    """(elements, offsets) of the outer level of a nested list series (null rows as empty lists)."""
    lengths = series.list.len().fillna(0).astype("int64").values
    offsets = cupy.concatenate([cupy.zeros(1, dtype="int64"), cupy.cumsum(lengths)])
    exploded = series.reset_index(drop=True).explode()
    # explode gives an empty or null row one null element: keep the elements of non-empty rows only
    width = cupy.maximum(lengths, 1)
    starts = cupy.cumsum(width) - width
    keep = cupy.ones(int(width.sum()), dtype=bool)
    keep[starts[lengths == 0]] = False
    return exploded[keep].reset_index(drop=True), offsets


@_register(L._list_from_leaves)
def _list_from_leaves(like: Any, values: Any, offsets: Any, name: Any, keep: bool):
    return _gpu_list_from_leaves(values, offsets, like, name, keep_nulls=keep)


def _gpu_list_from_leaves(values: Any, offsets: Any, like: Any, name: Any, keep_nulls: bool = False):
    vals = values if isinstance(values, cudf.Series) else cudf.Series(values)
    offs = cudf.Series(cupy.asarray(offsets).astype("int32"))
    try:
        import pylibcudf as plc

        mask, null_count = None, 0
        if keep_nulls and like.null_count:
            # same rows as ``like``: reuse its validity bitmask for the null rows
            src = like._column.to_pylibcudf(mode="read")
            if src.offset():  # a sliced view: materialize so the bitmask starts at row 0
                src = like.copy(deep=True)._column.to_pylibcudf(mode="read")
            mask, null_count = src.null_mask(), src.null_count()
        col = plc.Column(plc.DataType(plc.TypeId.LIST), len(offs) - 1, None, mask, null_count, 0,
                         [offs._column.to_pylibcudf(mode="read"), vals._column.to_pylibcudf(mode="read")])
        out = cudf.Series.from_pylibcudf(col)
    except (ImportError, AttributeError, TypeError) as exc:
        # older cuDF: rebuild through Arrow on the host (slower, same result)
        log.debug("pylibcudf list construction unavailable (%s); using Arrow", exc)
        nulls = pa.array(like.isna().to_numpy()) if keep_nulls and like.null_count else None
        arr = pa.ListArray.from_arrays(offs.to_arrow(), vals.to_arrow(), mask=nulls)
        out = cudf.Series.from_arrow(arr)
    out.index = like.index
    return out.rename(name)


@_register(L.list_levels)
def _list_levels(series: Any):
    offsets = []
    cur = series
    while _is_list_dtype(cur.dtype):
        cur, offs = _list_leaves(cur)
        offsets.append(offs)
    return cur, offsets


@_register(L.nested_flatten)
def _nested_flatten(series: Any):
    """cuDF: every level's offsets (null lists empty) and validity, on the device."""
    levels = []
    cur = series.reset_index(drop=True)
    while _is_list_dtype(cur.dtype):
        lengths = cur.list.len().fillna(0).astype("int64").values
        valid = cur.notna().values if cur.null_count else None
        levels.append((cupy.concatenate([cupy.zeros(1, dtype="int64"), cupy.cumsum(lengths)]), valid))
        cur = _one_level(cur)[0] if _elements_are_lists(cur.dtype) \
            else cur.list.leaves.reset_index(drop=True)
    row_off = levels[0][0]
    for offs, _ in levels[1:]:
        row_off = offs[row_off]
    flat = _gpu_list_from_leaves(cur, row_off, series, series.name, keep_nulls=True)
    return flat, (levels, series)


@_register(L.nested_rebuild)
def _nested_rebuild(flat: Any, structure: Any, name: Any):
    levels, original = structure
    cur = flat.list.leaves.reset_index(drop=True)
    for k in range(len(levels) - 1, -1, -1):
        offs, valid = levels[k]
        if k == 0:
            like = original
        else:   # a stand-in series carrying this level's null mask (only its mask and index are read)
            like = cudf.Series(cupy.zeros(len(offs) - 1, dtype="int8"))
            if valid is not None:
                like = like.where(cudf.Series(valid))
        cur = _gpu_list_from_leaves(cur, offs, like, None, keep_nulls=valid is not None)
    cur.index = flat.index
    return cur.rename(name)


# ---------------------------------------------------------------------------
# vocabulary lookups
# ---------------------------------------------------------------------------
@_register(K._vocab_lookup)
def _vocab_lookup(like: Any, values: np.ndarray) -> Any:
    """The vocabulary sorted on the device plus the sort order (binary search)."""
    voc = cudf.Series(values)
    order = voc.argsort()
    return (voc.take(order).reset_index(drop=True), order.values)


@_register(K._vocab_structure)
def _vocab_structure(like: Any, values: np.ndarray) -> Any:
    if values.dtype.kind in "iu":
        # GPU: sort + binary search is what the device does best
        return K.SortedVocab(values.astype("int64", copy=False), like)
    return _vocab_lookup(like, values)


@_register(K._index_of)
def _index_of(series: Any, vocab: Any, data: Any = None):
    sorted_voc, order = vocab
    n = len(sorted_voc)
    nulls = A.isnull(series)
    if n == 0:
        return cupy.full(len(series), -1, dtype="int64")
    s = series.reset_index(drop=True)
    if s.dtype != sorted_voc.dtype:
        if s.dtype.kind in "iub" and sorted_voc.dtype.kind in "iu":
            s = s.astype(sorted_voc.dtype)
        elif s.dtype.kind in "iuf" and sorted_voc.dtype.kind in "iuf":
            s = s.astype("float64")
            sorted_voc = sorted_voc.astype("float64")
    s = s.fillna(sorted_voc.iloc[0])
    pos = cupy.asarray(sorted_voc.searchsorted(s))
    safe = cupy.minimum(pos, n - 1)
    cand = sorted_voc.take(safe).reset_index(drop=True)
    found = (cand == s).fillna(False).values & (pos < n) & ~nulls
    return cupy.where(found, order[safe], -1).astype("int64")
