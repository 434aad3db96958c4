"""Every difference between the CPU (pandas) and GPU (cuDF) backends lives here.

Ops never import pandas or cuDF to compute: they ask this module for arrays
(:func:`float_values`, :func:`int_values`), masks (:func:`isnull`), lookups
(:func:`index_of`), hashes (:func:`murmur3`) and new columns (:func:`new_series`).
Each function dispatches on the type of its argument, so one op implementation
runs on both backends and gives the same ids and float32-rounded values.

Conventions:
* Nulls: a missing value is a null; on float columns NaN counts as null too
  (pandas cannot tell them apart, so cuDF is made to agree).
* Integers of any width are widened to int64 before hashing or lookups, so an
  int32 and an int64 column with the same values get the same ids.
"""
from __future__ import annotations

import functools
import logging
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd
import pyarrow as pa

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------
# availability
# ---------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def has_cudf() -> bool:
    """True when cuDF and dask-cuDF import and a CUDA device is visible."""
    try:
        import cudf  # noqa: F401
        import dask_cudf  # noqa: F401
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception as exc:  # noqa: BLE001 - any import/driver failure means "no GPU backend"
        log.debug("cuDF backend unavailable: %s", exc)
        return False


def resolve_cpu(cpu: Optional[bool]) -> bool:
    """``cpu=None`` picks the GPU when cuDF is usable, else the CPU; True/False force."""
    if cpu is None:
        return not has_cudf()
    if cpu is False and not has_cudf():
        raise RuntimeError(
            "cpu=False asks for the GPU backend, but cuDF/dask-cuDF or a CUDA device is not available; "
            "install the 'gpu' extra (pip install tabprep[gpu]) on a machine with an NVIDIA GPU, or use cpu=True."
        )
    return bool(cpu)


def is_gpu(obj: Any) -> bool:
    """True for cuDF / dask-cuDF objects and cupy arrays."""
    mod = type(obj).__module__
    return mod.startswith("cudf") or mod.startswith("dask_cudf") or mod.startswith("cupy")


def frame_lib(obj: Any):
    """The dataframe module of ``obj``: ``cudf`` or ``pandas``."""
    if is_gpu(obj):
        import cudf

        return cudf
    return pd


def array_module(obj: Any):
    """``cupy`` for GPU objects, else ``numpy``."""
    if is_gpu(obj):
        import cupy

        return cupy
    return np


def to_numpy(arr: Any) -> np.ndarray:
    """Host numpy copy of a numpy/cupy array or a pandas/cuDF series."""
    if hasattr(arr, "to_numpy") and not isinstance(arr, np.ndarray):
        if is_gpu(arr):
            return arr.to_numpy()
        return arr.to_numpy()
    if is_gpu(arr):
        return arr.get()
    return np.asarray(arr)


# ---------------------------------------------------------------------------
# reading / conversion
# ---------------------------------------------------------------------------
def arrow_to_frame(table: pa.Table, cpu: bool = True):
    """Convert an Arrow table to a pandas (``cpu=True``) or cuDF frame.

    pandas conversion keeps integer columns integer: a column without nulls becomes a
    numpy int column, one with nulls a nullable ``Int64``-style column (not float64,
    which would change hashes and vocabularies). List columns become ``pd.ArrowDtype``
    lists, strings pandas' string dtype.
    """
    if not cpu:
        import cudf

        return cudf.DataFrame.from_arrow(table)
    data = {}
    for name, col in zip(table.column_names, table.columns):
        typ = col.type
        if pa.types.is_dictionary(typ):
            col = col.cast(typ.value_type)
            typ = typ.value_type
        if pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ):
            data[name] = pd.Series(pd.arrays.ArrowExtensionArray(col), name=name)
        elif pa.types.is_integer(typ) and col.null_count > 0:
            # build the masked array directly on Arrow's buffers: ~15x cheaper than
            # to_pandas(types_mapper=...); null slots hold whatever the reader left there
            values, mask = _arrow_int_buffers(col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col)
            data[name] = pd.arrays.IntegerArray(values, mask)  # arrays, not Series: 3x cheaper frame
        elif pa.types.is_boolean(typ) and col.null_count > 0:
            data[name] = col.to_pandas(types_mapper={pa.bool_(): pd.BooleanDtype()}.get)
        else:
            data[name] = col.to_pandas()
    return pd.DataFrame(data, columns=table.column_names, index=pd.RangeIndex(table.num_rows), copy=False)


def _arrow_int_buffers(arr: pa.Array) -> Tuple[np.ndarray, np.ndarray]:
    """(values, null mask) of an Arrow integer array with nulls: the values are a read-only
    view of Arrow's data buffer (no copy), the mask unpacked from the validity bitmap."""
    validity, data = arr.buffers()[:2]
    dtype = np.dtype(arr.type.to_pandas_dtype())
    values = np.frombuffer(data, dtype=dtype, count=len(arr), offset=arr.offset * dtype.itemsize)
    valid = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), count=arr.offset + len(arr),
                          bitorder="little")[arr.offset:]
    return values, valid.view(bool) == 0


def _nullable_int_mapper(typ: pa.DataType):
    if pa.types.is_integer(typ):
        return pd.api.types.pandas_dtype(str(typ).replace("int", "Int").replace("uInt", "UInt"))
    return None


def make_frame(columns: dict, like: Any):
    """A frame of ``columns`` (name -> series/array) on ``like``'s backend and index.

    pandas: built without copying or consolidating the columns into 2-D blocks, which
    otherwise costs a full copy of every op's output.
    """
    if is_gpu(like):
        return _gpu_frame(columns, like.index)
    return pd.DataFrame(columns, index=like.index, copy=False)


def _gpu_frame(columns: dict, index: Any):
    """cuDF frame of same-length columns, without aligning each column's index.

    ``cudf.DataFrame(dict, index=...)`` compares every column's index with ``index`` (which
    materializes RangeIndexes on the device): per column and per partition that costs more than
    the ops themselves.
    """
    import cudf

    data = {}
    for name, col in columns.items():
        if isinstance(col, cudf.Series):
            data[name] = col if _is_default_index(col.index, len(col)) else col.reset_index(drop=True)
        else:
            data[name] = cudf.Series(col)
    out = cudf.DataFrame(data)
    if not _is_default_index(index, len(out)):
        out.index = index
    return out


def _is_default_index(index: Any, n: int) -> bool:
    """True for ``RangeIndex(0, n)`` (pandas or cuDF), the index every reader gives."""
    return (type(index).__name__ == "RangeIndex" and index.start == 0 and index.step == 1
            and index.stop == n and index.name is None)


def release_memory(collect: bool = True) -> None:
    """Give freed heap memory back to the OS (glibc ``malloc_trim``, Arrow's pool).

    pandas/numpy/Arrow free their buffers, but the C allocators keep the pages for reuse;
    after a pass over the data that is ~1 GB of RSS per 10M Criteo rows that nothing uses.
    Cheap (milliseconds); a no-op where the calls are unavailable.
    """
    if collect:
        import gc

        gc.collect()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    pa.default_memory_pool().release_unused()


#: dask worker threads for GPU partitions under the local threaded scheduler: two overlap one
#: partition's Python and I/O with the other's kernels; more only contend for the one device
#: (16 threads on an H100 host ran the Criteo job 1.6x slower than one)
GPU_THREADS = 2


def compute_options(gpu: bool) -> dict:
    """Extra ``dask.compute`` arguments: on the GPU with dask's default threaded scheduler,
    :data:`GPU_THREADS` workers; nothing otherwise (a distributed client or a scheduler the
    user chose is left alone)."""
    if not gpu:
        return {}
    import dask

    if dask.config.get("scheduler", None) not in (None, "threads", "threading"):
        return {}
    try:
        from distributed import default_client

        default_client()
        return {}
    except (ImportError, ValueError):
        pass
    return {"num_workers": GPU_THREADS}


def use_rmm_pool(initial_size: Optional[int] = None) -> bool:
    """Give cuDF/cupy a pooled RMM allocator (as NVTabular and dask-cuda do); True if enabled.

    Without a pool every device allocation is a ``cudaMalloc``; tabprep's GPU ops allocate many
    temporaries per partition, and a pool makes the GPU path ~2x faster. Call it once, before
    any data is on the device. ``initial_size`` in bytes (default: RMM's, half the free memory).
    """
    if not has_cudf():
        return False
    import rmm

    rmm.reinitialize(pool_allocator=True, initial_pool_size=initial_size)
    return True


def frame_to_arrow(df: Any, preserve_index: bool = False) -> pa.Table:
    """Arrow table of a pandas or cuDF frame (index dropped)."""
    if is_gpu(df):
        return df.to_arrow(preserve_index=preserve_index)
    if not preserve_index and all(isinstance(c, str) for c in df.columns) \
            and all(isinstance(t, np.dtype) and t.kind in "iufb" for t in df.dtypes):
        # plain numpy columns (what the Criteo-style ops output): zero-copy per column, ~10x
        # cheaper than Table.from_pandas' generic path; NaN -> null as from_pandas does
        return pa.table([_numpy_to_arrow(df[c].to_numpy()) for c in df.columns], names=list(df.columns))
    return pa.Table.from_pandas(df, preserve_index=preserve_index)


def _numpy_to_arrow(values: np.ndarray) -> pa.Array:
    if values.dtype.kind == "f":
        nan = np.isnan(values)
        if nan.any():  # a mask is ~30x faster than from_pandas=True's NaN scan
            return pa.array(values, mask=nan)
    return pa.array(values)


def to_host(df: Any):
    """pandas copy of a cuDF frame (identity for pandas)."""
    if is_gpu(df):
        return df.to_pandas()
    return df


def from_host(df: pd.DataFrame, cpu: bool):
    """Frame on the requested backend."""
    if cpu:
        return df
    import cudf

    return cudf.from_pandas(df)


def read_parquet_piece(path: str, row_groups: Optional[Sequence[int]], columns: Optional[List[str]],
                       cpu: bool, filesystem: Any = None):
    """Read some row groups of one parquet file on either backend."""
    if not cpu:
        import cudf

        return cudf.read_parquet(path, columns=columns, row_groups=[list(row_groups)] if row_groups is not None else None)
    import pyarrow.parquet as pq

    return arrow_to_frame(read_parquet_table(path, row_groups, columns, filesystem), cpu=True)


def read_parquet_pieces(paths: Sequence[str], row_groups: Sequence[Sequence[int]], columns: Optional[List[str]],
                        cpu: bool):
    """Row groups of several parquet files (same schema), stacked in order, as one frame."""
    if not cpu:
        import cudf

        return cudf.read_parquet(list(paths), columns=columns, row_groups=[list(g) for g in row_groups])
    return tables_to_frame([read_parquet_table(p, g, columns) for p, g in zip(paths, row_groups)])


def read_parquet_table(path: str, row_groups: Optional[Sequence[int]], columns: Optional[List[str]],
                       filesystem: Any = None) -> pa.Table:
    """Some row groups of one parquet file as an Arrow table (host memory)."""
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path, filesystem=filesystem)
    if row_groups is None:
        return pf.read(columns=columns, use_threads=False)
    return pf.read_row_groups(list(row_groups), columns=columns, use_threads=False)


def tables_to_frame(tables: Sequence[pa.Table]):
    """One pandas frame of Arrow tables stacked in order: concatenated in Arrow (zero-copy
    until the single conversion) rather than as pandas frames (``pd.concat`` copies every
    column once more, holding the GIL). Tables whose schemas differ go through pandas."""
    if len(tables) == 1:
        return arrow_to_frame(tables[0], cpu=True)
    try:
        table = pa.concat_tables(tables)
    except pa.ArrowInvalid:
        return concat_rows([arrow_to_frame(t, cpu=True) for t in tables])
    return arrow_to_frame(table, cpu=True)


def empty_frame_like(df: Any):
    """A zero-row frame with the columns and dtypes of ``df``."""
    return df.iloc[:0]


def concat_columns(frames: Sequence[Any]):
    """Concatenate frames side by side (same rows, same order)."""
    frames = [f for f in frames if f is not None]
    if len(frames) == 1:
        return frames[0]
    lib = frame_lib(frames[0])
    if lib is pd:
        out = {}
        for f in frames:
            for name in f.columns:
                out[name] = f[name]
        index = frames[0].index
        return pd.DataFrame(out, index=index, copy=False)
    return _gpu_frame({name: f[name] for f in frames for name in f.columns}, frames[0].index)


def concat_rows(frames: Sequence[Any]):
    """Concatenate frames of the same columns one under the other, index reset."""
    frames = list(frames)
    lib = frame_lib(frames[0])
    return lib.concat(frames, axis=0, ignore_index=True)


# ---------------------------------------------------------------------------
# column values
# ---------------------------------------------------------------------------
def is_list_series(series: Any) -> bool:
    """True for list (multi-hot) columns on either backend."""
    if is_gpu(series):
        return str(series.dtype).startswith("list")
    dtype = series.dtype
    return isinstance(dtype, pd.ArrowDtype) and (
        pa.types.is_list(dtype.pyarrow_dtype) or pa.types.is_large_list(dtype.pyarrow_dtype)
        or pa.types.is_fixed_size_list(dtype.pyarrow_dtype))


def is_string_series(series: Any) -> bool:
    dtype = series.dtype
    if is_gpu(series):
        return str(dtype) in ("object", "str", "string")
    return pd.api.types.is_string_dtype(dtype) or (
        isinstance(dtype, pd.ArrowDtype) and pa.types.is_string(dtype.pyarrow_dtype))


def is_float_series(series: Any) -> bool:
    return not is_list_series(series) and np.dtype(_numpy_kind_dtype(series.dtype)).kind == "f"


def _numpy_kind_dtype(dtype: Any):
    try:
        return np.dtype(getattr(dtype, "numpy_dtype", dtype))
    except TypeError:
        return np.dtype("O")


def isnull(series: Any):
    """Boolean array (numpy or cupy): True where the value is null or NaN."""
    if is_gpu(series):
        import cupy

        if is_float_series(series):
            # cuDF keeps NaN apart from null; tabprep treats both as missing (as pandas does)
            if not series.has_nulls:
                return cupy.isnan(series.values)
            return series.isna().values | cupy.isnan(series.fillna(0).values)
        if not series.has_nulls and not is_list_series(series):
            return cupy.zeros(len(series), dtype=bool)
        return series.isna().values
    return series.isna().to_numpy()


def float_values(series: Any, dtype: str = "float64"):
    """Values as a float array, NaN where null. On the CPU a fresh array (callers may write
    into it); cuDF may return a view of the column's device memory."""
    if is_gpu(series):
        if not series.has_nulls and series.dtype.kind in "iubf":
            return series.values.astype(dtype)  # cupy astype: a fresh array, no cuDF calls
        return series.astype(dtype).to_cupy(na_value=np.nan)
    if isinstance(series.dtype, np.dtype) and series.dtype.kind in "iubf":
        # numpy-backed: nothing to fill (NaN is the float null), so skip pandas' na_value pass
        return np.array(series.to_numpy(), dtype=dtype, copy=True)
    return series.to_numpy(dtype=dtype, na_value=np.nan)


def int_values(series: Any, fill: int = 0):
    """Values as an int64 array, ``fill`` where null. Bools become 0/1."""
    if is_gpu(series):
        return series.astype("int64").fillna(fill).values
    if isinstance(series.dtype, np.dtype) and series.dtype.kind in "iub":  # numpy: no nulls to fill
        return series.to_numpy(dtype="int64")
    return series.to_numpy(dtype="int64", na_value=fill)


def int_data(series: Any) -> Tuple[Any, Optional[Any]]:
    """int/bool column as ``(int64 values, null mask or None)``, without copies where possible.

    Null slots of the values hold arbitrary numbers: read them only where the mask is False.
    numpy arrays for pandas, cupy arrays for cuDF. A hot path of the int ops (Categorify,
    LogOp, HashBucket), where ``to_numpy(na_value=...)`` would copy and scan every column once
    more (and on cuDF, each extra call costs ~0.5 ms of Python before any kernel runs).
    """
    if is_gpu(series):
        if series.has_nulls:
            mask = series.isna().values
            values = series.fillna(0).values
        else:
            mask, values = None, series.values
        return (values if values.dtype == np.int64 else values.astype(np.int64)), mask
    dtype = series.dtype
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


def nullable_columns(df: Any, columns: Optional[Sequence[str]] = None):
    """``df`` with its int and bool ``columns`` (default: all) as nullable dtypes on pandas
    (``Int64``, ``boolean``...), so that joins can add nulls without turning them into floats;
    cuDF columns are nullable already and are returned unchanged."""
    if is_gpu(df):
        return df
    casts = {}
    for c in (df.columns if columns is None else columns):
        dt = df[c].dtype
        if isinstance(dt, np.dtype) and dt.kind in "iub":
            casts[c] = "boolean" if dt.kind == "b" else dt.name.replace("uint", "UInt").replace("int", "Int")
    return df.astype(casts) if casts else df


def new_series(values: Any, like: Any, name: Optional[str] = None, dtype: Optional[str] = None):
    """A series of ``values`` on the backend of ``like``, with ``like``'s index."""
    lib = frame_lib(like)
    name = name if name is not None else like.name
    if lib is pd and isinstance(values, np.ndarray):
        # pandas 3 copies an ndarray by default; the ops hand over fresh arrays
        out = pd.Series(values, index=like.index, name=name, copy=False)
    elif lib is not pd and _is_default_index(like.index, len(like)) and not hasattr(values, "index"):
        # cuDF: passing the index costs ~0.7 ms per column (it is validated and materialized)
        out = lib.Series(values, name=name)
    else:
        out = lib.Series(values, index=like.index, name=name)
    if dtype is not None and str(out.dtype) != dtype:
        out = out.astype(dtype)
    return out


def set_nulls(series: Any, mask: Any):
    """``series`` with the rows where ``mask`` (bool numpy/cupy array) is True set to null.

    pandas: int and bool columns become their nullable variant (``Int64``, ``boolean``) only
    when a null is actually set, as when reading parquet, and float columns get NaN; cuDF
    columns keep their dtype and get a null mask.
    """
    if is_gpu(series):
        if not bool(mask.any()):
            return series
        return series.mask(new_series(mask, like=series, dtype="bool"))
    if not mask.any():
        return series
    if series.dtype.kind in "iub" and not isinstance(series.dtype, pd.ArrowDtype):
        series = series.astype(_nullable_name(series.dtype))
    out = series.copy()
    out[mask] = None if series.dtype.kind != "f" else np.nan
    return out


def cast_keep_nulls(series: Any, dtype: str):
    """``series.astype(dtype)`` for a numeric dtype, keeping nulls.

    pandas: a nullable integer/bool column cast to an integer dtype gets the nullable variant
    (``int8`` -> ``Int8``); cuDF columns hold nulls in any dtype.
    """
    if is_gpu(series):
        return series.astype(dtype)
    kind = np.dtype(dtype).kind
    if kind in "iub" and _numpy_kind_dtype(series.dtype).kind in "iub" and not isinstance(series.dtype, np.dtype):
        return series.astype(_nullable_name(np.dtype(dtype)))
    return series.astype(dtype)


def _nullable_name(dtype: Any) -> str:
    name = np.dtype(getattr(dtype, "numpy_dtype", dtype)).name
    if name == "bool":
        return "boolean"
    return name.replace("uint", "UInt").replace("int", "Int")


def murmur3(series: Any, seed: int = 0):
    """MurmurHash3_x86_32 of each value (uint32 array on the series' backend); nulls hash to 0.

    cuDF's ``hash_values(method="murmur3")`` is the reference; it is the plain
    MurmurHash3_x86_32 of the value's bytes (checked on an H100 with cuDF 26.10: equal to
    ``mmh3.hash(bytes, 0, signed=False)``, no ``hash_combine`` with the seed), and the CPU path,
    :func:`tabprep.hashing.murmur3_32`, reproduces it bit for bit. Integer columns are widened
    to int64 and floats to float64 first on both backends.
    """
    if is_gpu(series):
        mask = isnull(series)
        s = series
        if s.dtype.kind in "iub":
            s = s.astype("int64")
        elif s.dtype.kind == "f":
            s = s.astype("float64")
        out = s.hash_values(method="murmur3", seed=seed).values.astype("uint32")
        out[mask] = 0
        return out
    from .hashing import murmur3_32

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


def vocab_lookup(values: Any, gpu: bool) -> Any:
    """Build once per vocabulary the structure :func:`index_of` searches.

    CPU: a ``pandas.Index`` (hash table built lazily, then reused for every partition).
    GPU: the vocabulary sorted on the device plus the sort order (binary search).
    """
    if not gpu:
        return pd.Index(values)
    import cudf

    voc = cudf.Series(values)
    order = voc.argsort()
    return (voc.take(order).reset_index(drop=True), order.values)


def index_of(series: Any, vocab: Any, data: Optional[Tuple[Any, Any]] = None):
    """Position of each value of ``series`` in the vocabulary, -1 when absent or null.

    ``vocab`` is what :func:`vocab_lookup` returns (or, on the CPU, any array of unique values).
    ``data``: :func:`int_data` of an int ``series`` when the caller has it already (CPU).
    """
    if is_gpu(series):
        import cupy

        sorted_voc, order = vocab
        n = len(sorted_voc)
        nulls = isnull(series)
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
    if not isinstance(vocab, pd.Index):
        vocab = pd.Index(vocab)
    if not is_string_series(series) and _numpy_kind_dtype(series.dtype).kind in "iub":
        # int64 values (an int32 column must find int64 vocabulary entries) and the null mask,
        # straight from the column's buffers
        values, mask = data if data is not None else int_data(series)
        pos = vocab.get_indexer(values)
        if mask is not None:
            pos[mask] = -1
        return pos
    pos = vocab.get_indexer(series)
    mask = isnull(series)
    if mask.any():
        pos[mask] = -1
    return pos


def value_counts(series: Any) -> Tuple[Any, int]:
    """(counts indexed by value, excluding nulls; number of nulls) of one column or list leaves."""
    nulls = int(isnull(series).sum())
    if not is_gpu(series) and _numpy_kind_dtype(series.dtype).kind in "iub" and not is_string_series(series):
        # nullable ints: count on the int64 view of the non-null values (faster, stable dtype)
        values = series.to_numpy(dtype="int64", na_value=0)
        if nulls:
            values = values[~series.isna().to_numpy()]
        counts = pd.Series(values).value_counts(sort=False)
        return counts, nulls
    counts = series.value_counts(sort=False, dropna=True)
    if is_gpu(series) and is_float_series(series) and len(counts):
        import cupy

        counts = counts[~cupy.isnan(counts.index.to_series().fillna(0).values)]
    return counts, nulls


# ---------------------------------------------------------------------------
# list (multi-hot) columns
# ---------------------------------------------------------------------------
def list_leaves(series: Any):
    """(flat element series, row offsets as int64 array of len(series)+1) of a list column.

    Null rows are treated as empty lists; null elements stay null in the leaves.
    """
    if is_gpu(series):
        import cupy

        col = series.list
        leaves = col.leaves
        lengths = col.len().fillna(0).astype("int64").values
        offsets = cupy.concatenate([cupy.zeros(1, dtype="int64"), cupy.cumsum(lengths)])
        return leaves.reset_index(drop=True), offsets
    arr = pa.chunked_array(series.array._pa_array) if hasattr(series.array, "_pa_array") else pa.chunked_array([pa.array(series)])
    arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    if pa.types.is_fixed_size_list(arr.type):  # a null row cannot be filled with [] in a fixed-size list
        arr = arr.cast(pa.list_(arr.type.value_type))
    arr = arr.fill_null(pa.scalar([], type=arr.type)) if arr.null_count else arr
    lengths = pa.compute.list_value_length(arr).to_numpy(zero_copy_only=False).astype("int64")
    offsets = np.zeros(len(lengths) + 1, dtype="int64")
    np.cumsum(lengths, out=offsets[1:])
    flat = pa.compute.list_flatten(arr)
    leaves = arrow_to_frame(pa.table({"v": flat}), cpu=True)["v"]
    return leaves, offsets


def list_from_leaves(values: Any, offsets: Any, like: Any, name: Optional[str] = None,
                     keep_null_rows: bool = True):
    """Rebuild a list column from flat values (array or series) and row offsets.

    When ``like`` is a list column with as many rows as ``offsets`` describes, its null rows
    stay null in the result (``list_leaves`` read them as empty lists); pass
    ``keep_null_rows=False`` when the result should have no null row (e.g. padded lists).
    """
    name = name if name is not None else like.name
    size = len(offsets) - 1
    keep = keep_null_rows and len(like) == size and is_list_series(like)
    if is_gpu(like):
        return _gpu_list_from_leaves(values, offsets, like, name, keep_nulls=keep)
    flat = values if isinstance(values, pa.Array) else pa.array(to_numpy(values) if not isinstance(values, pd.Series) else values)
    if isinstance(flat, pa.ChunkedArray):  # pyarrow-backed pandas strings
        flat = flat.combine_chunks()
    nulls = like.isna().to_numpy() if keep else None
    mask = pa.array(nulls) if nulls is not None and nulls.any() else None
    arr = pa.ListArray.from_arrays(pa.array(np.asarray(offsets, dtype="int32")), flat, mask=mask)
    return pd.Series(pd.arrays.ArrowExtensionArray(arr), index=like.index, name=name)


def _gpu_list_from_leaves(values: Any, offsets: Any, like: Any, name: Any, keep_nulls: bool = False):
    import cudf
    import cupy

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
