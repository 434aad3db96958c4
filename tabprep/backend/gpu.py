"""The cuDF / cupy implementations of the backend functions.

Imported lazily, by :class:`~tabprep.backend.dispatch.Dispatch` the first time a cuDF, dask-cuDF
or cupy object is seen, or by a reader asked for ``cpu=False``: importing tabprep never imports
cuDF. Each function here is registered on its dispatcher for every type of those libraries (as
``is_gpu`` tested the type's module). The reductions (:mod:`~tabprep.backend.gpu_reductions`) and
the list functions (:mod:`~tabprep.backend.gpu_lists`) are in modules of their own, imported here.

Nothing here runs in CI (no GPU): the GPU tests (``pytest -m gpu``) cover it.
"""
from __future__ import annotations

import logging
import os
from typing import Any, Callable, List, Optional, Sequence

import cudf
import cupy
import numpy as np
import pyarrow as pa

from . import arrays as A
from . import gpu_parquet
from . import frames as F
from . import lists as L
from . import lookup as K
from . import parquet as P
from . import gpu_warmup
from . import reductions as R
from .dispatch import GPU_MODULES, register_gpu as _register
# the reductions and the list functions live in their own modules: importing them registers them
# (their helpers stay importable from here)
from . import gpu_columns, gpu_lists, gpu_reductions  # noqa: F401
from .gpu_lists import (  # noqa: F401
    _elements_are_lists, _gpu_list_from_leaves, _is_list_dtype, _list_from_leaves, _list_leaves, _list_levels,
    _nested_flatten, _nested_rebuild, _one_level,
)
from .gpu_reductions import (  # noqa: F401
    _BOOL8, _F64, _any_true, _count_order, _cupy_int64, _finite_column, _finite_minmax, _finite_moments,
    _finite_moments_minmax, _int_counts, _merge_counts, _minmax_of, _moments_of, _plc_column, _retain,
    _sorted_group_counts,
)

log = logging.getLogger("tabprep.backend")


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


#: LogOp's formula (arrays.log1p_int) in one kernel: the value made float32 and 1 added in float32 (as
#: NVTabular), the logarithm of that sum in float64, rounded once to float32 -- the CPU's bits. C's
#: casts round to nearest, as numpy's astype. One NVRTC compile per input dtype on a fresh worker,
#: where the same in CuPy array operations took four kernels (gpu_warmup builds it)
_LOG_PLUS_ONE = cupy.ElementwiseKernel("T x", "float32 y", "y = (float)log((double)((float)x + 1.0f))",
                                       "tabprep_log_float32_plus_one")


@_register(A.log1p_int)
def _log1p_int(values: Any) -> Any:
    return _LOG_PLUS_ONE(values)


@_register(A.log1p_float)
def _log1p_float(values: Any, overwrite: bool = False) -> Any:
    return _LOG_PLUS_ONE(values)   # never in place (the output is a new float32 array)


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
    out = _frame_of_columns(data) if _FAST_FRAMES else None
    if out is None:
        out = cudf.DataFrame(data)
    if not F._is_default_index(index, len(out)):
        out.index = index
    return out


#: frames of same-length series built from their columns (``DataFrame._from_data``, no copy) where
#: ``cudf.DataFrame(dict)`` checked and aligned every series (about 7 ms per frame of the online
#: Criteo transform's 26-39 columns on an H200 under cProfile; the loader's epoch with the workflow
#: online 0.607 s against 0.621 s, on transformed data 0.138 s against 0.163 s:
#: benchmarks/loader_anatomy.py --variants); ``TABPREP_GPU_FAST_FRAMES=0`` (read when the GPU backend is first loaded)
#: builds them with the constructor
_FAST_FRAMES = os.environ.get("TABPREP_GPU_FAST_FRAMES", "1") != "0"


def _frame_of_columns(data: dict) -> Any:
    """A frame of ``data`` (series with default indexes) from their columns, or None where a series
    length differs (the constructor then raises or aligns as it always did)."""
    lengths = {len(s) for s in data.values()}
    if len(lengths) > 1:
        return None
    try:
        return cudf.DataFrame._from_data({name: s._column for name, s in data.items()})
    except Exception as exc:  # noqa: BLE001 - an internal API: fall back to the constructor
        log.debug("DataFrame._from_data failed (%s); building the frame with the constructor", exc)
        return None


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
    if gpu_columns._FAST_COLUMNS and len({len(f) for f in frames}) == 1:
        # the frames' own columns side by side (positional, as _gpu_frame aligns them), without a
        # Series per column (``f[name]``: ~0.3 ms each, most of the online transform's concatenations)
        out = cudf.DataFrame._from_data({name: col for f in frames for name, col in f._data.items()})
        if not F._is_default_index(frames[0].index, len(out)):
            out.index = frames[0].index
        return out
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


@_register(F.held_bytes)
def _held_bytes(obj: Any) -> int:
    if isinstance(obj, cupy.ndarray):
        return int(obj.nbytes)
    used = obj.memory_usage()  # cuDF series / index: an int of device bytes (strings' chars included)
    return int(used.sum()) if hasattr(used, "sum") else int(used)  # a frame: bytes per column


@_register(F.reads_on_own_stream)
def _reads_on_own_stream(frame: Any) -> bool:
    return gpu_parquet.own_stream_enabled()


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


def csv_block_counts(files: Sequence[str], blocksize: int, compression: Any = "infer",
                     storage_options: Any = None) -> List[int]:
    """dask-cuDF's split of csv files (its ``read_csv`` with a ``blocksize``): one partition per
    started ``blocksize`` bytes of each file (none for an empty one); every file whole where the
    first file is compressed (dask-cuDF infers compression from it)."""
    import fsspec
    from fsspec.utils import infer_compression

    if compression == "infer" and files:
        compression = infer_compression(files[0])
    if compression:
        return [1] * len(files)
    fs = fsspec.core.url_to_fs(files[0], **(storage_options or {}))[0] if files else None
    return [-(-int(fs.size(f)) // blocksize) for f in files]


# ---------------------------------------------------------------------------
# parquet / Arrow
# ---------------------------------------------------------------------------
def arrow_to_frame(table: pa.Table):
    df = cudf.DataFrame.from_arrow(table)
    if table.num_rows == 0:   # list columns typed at every level (dask's meta; see gpu_lists.empty_series)
        for name in df.columns:
            if gpu_lists._is_list_dtype(df[name].dtype):
                df[name] = gpu_lists.empty_series(df[name].dtype, df.index, name)
    return df


def _fs_kwargs(filesystem: Any) -> dict:
    # a remote file's (fsspec) file system; none for local paths (cuDF's own local reader)
    return {} if filesystem is None else {"filesystem": filesystem}


def read_parquet_piece(path: str, row_groups: Optional[Sequence[int]], columns: Optional[List[str]],
                       filesystem: Any = None, direct: bool = False):
    groups = [list(row_groups)] if row_groups is not None else None
    # direct (the loader's reads): local files with a column list through pylibcudf (gpu_parquet.py)
    df = gpu_parquet.read([path], groups, columns, filesystem) if direct else None
    return df if df is not None else cudf.read_parquet(path, columns=columns, row_groups=groups, **_fs_kwargs(filesystem))


def read_parquet_pieces(paths: Sequence[str], row_groups: Sequence[Sequence[int]], columns: Optional[List[str]],
                        filesystem: Any = None, direct: bool = False):
    groups = [list(g) for g in row_groups]
    df = gpu_parquet.read(paths, groups, columns, filesystem) if direct else None
    return df if df is not None else cudf.read_parquet(list(paths), columns=columns, row_groups=groups,
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
        # (the loader's parts: pylibcudf's direct read where it applies, gpu_parquet.py)
        return read_parquet_piece(path, row_groups, columns, filesystem=filesystem, direct=True)

    def stack(self, parts: Sequence[Any]) -> Any:
        return parts[0].reset_index(drop=True) if len(parts) == 1 else F.concat_rows(parts)


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


# last, once every implementation above is registered: the warm-up thread dispatches on cuDF and
# CuPy objects at once, and started first (as it was) it could meet a dispatcher whose lazy loader
# was this very import, find no registration yet and cache the CPU fallback for that type
gpu_warmup.start()  # pre-builds the hot paths' CuPy kernels while the first partitions are read
