"""Local parquet row groups read straight through pylibcudf (the GPU loader's chunk reads).

``cudf.read_parquet`` spends host time on every call before libcudf reads anything: a pyarrow
dataset over the paths (to look for hive partitions), its file-system layer, and, with a row-group
selection and pandas metadata, each file's footer read once more with pyarrow to rebuild a
RangeIndex the loader drops anyway. A GPU loader reads a chunk per call, in threads that share the
GIL with the workflow's Python. Here the footers are parsed once per file (kept while the file's
size, modification time and inode stay the same) and handed to libcudf, the column list is the loader's,
pandas metadata is not read (the frame gets a default index), and the frame is built from the
table (``cudf.DataFrame.from_pylibcudf``). On an H200, 20M transformed Criteo rows, 6 chunks: the
reads alone 0.211 s against 0.220 s (``benchmarks/gpu_read.py``); the shuffled epoch, where reads
overlap the other thread's Python, 0.138 s against 0.210 s with ``cudf.read_parquet``
(``benchmarks/loader_anatomy.py --variants``, best of 3 each).

Used for local files with an explicit column list; anything else (remote files, all columns) goes
through ``cudf.read_parquet``, as does any call this path fails on (logged at debug level).
``TABPREP_GPU_DIRECT_READ=0`` turns it off.
"""
from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from typing import Any, List, Optional, Sequence

import cudf
import pylibcudf as plc

log = logging.getLogger("tabprep.backend")

#: footers kept (parsed), least recently used dropped first
FOOTERS_KEPT = 4096
_footers: "OrderedDict[tuple, Any]" = OrderedDict()
_lock = threading.Lock()


def enabled() -> bool:
    return os.environ.get("TABPREP_GPU_DIRECT_READ", "1") != "0"


def footer(path: str) -> Any:
    """The parsed footer (``pylibcudf.io.parquet_metadata.FileMetaData``) of the local parquet file
    ``path``, from the cache while its size, modification time and inode are those it was parsed with."""
    st = os.stat(path)
    # (the inode too: a file replaced by a rename within the clock's resolution, same size)
    key = (path, st.st_size, st.st_mtime_ns, st.st_ino)
    with _lock:
        meta = _footers.get(key)
        if meta is not None:
            _footers.move_to_end(key)
            return meta
    with open(path, "rb") as f:
        f.seek(-8, os.SEEK_END)
        tail = f.read(8)
        if tail[4:] != b"PAR1":
            raise ValueError(f"{path} is not a parquet file (no PAR1 at its end)")
        size = int.from_bytes(tail[:4], "little")
        f.seek(-8 - size, os.SEEK_END)
        meta = plc.io.parquet_metadata.FileMetaData.from_bytes(f.read(size))
    with _lock:
        _footers[key] = meta
        while len(_footers) > FOOTERS_KEPT:
            _footers.popitem(last=False)
    return meta


_streams = threading.local()


def own_stream_enabled() -> bool:
    """Whether local reads decode on a non-blocking stream per thread (``TABPREP_GPU_READ_STREAM``)."""
    return os.environ.get("TABPREP_GPU_READ_STREAM", "0") == "1"


def _own_stream() -> Optional[tuple]:
    """``(cupy stream, rmm stream)``: a non-blocking stream of this thread on the current device,
    with ``TABPREP_GPU_READ_STREAM=1``; None otherwise (the legacy default stream, where a device
    synchronisation in another thread's transform waits for this read's kernels too)."""
    if not own_stream_enabled():
        return None
    import cupy
    from rmm.pylibrmm.stream import Stream

    dev = cupy.cuda.runtime.getDevice()
    held = getattr(_streams, "by_device", None)
    if held is None:
        held = _streams.by_device = {}
    if dev not in held:
        cs = cupy.cuda.Stream(non_blocking=True)
        held[dev] = (cs, Stream(cs))
    return held[dev]


def read_local(paths: Sequence[str], row_groups: Optional[Sequence[Sequence[int]]],
               columns: List[str]) -> Any:
    """Row groups ``row_groups`` (one list per path; None: whole files) of local ``paths``, columns
    ``columns`` in that order, as one cuDF frame with a default index."""
    paths = [os.fspath(p) for p in paths]
    opts = plc.io.parquet.ParquetReaderOptions.builder(plc.io.SourceInfo(paths)).use_pandas_metadata(False).build()
    if row_groups is not None:
        opts.set_row_groups([list(g) for g in row_groups])
    opts.set_column_names(list(columns))
    metas = [footer(p) for p in paths]
    own = _own_stream()
    if own is None:
        table = plc.io.parquet.read_parquet(opts, parquet_metadatas=metas)
    else:   # decoded on this thread's stream, waited for here: the frame is ready for any stream
        table = plc.io.parquet.read_parquet(opts, stream=own[1], parquet_metadatas=metas)
        own[0].synchronize()
    df = cudf.DataFrame.from_pylibcudf(table)
    if list(df.columns) != list(columns):
        missing = [c for c in columns if c not in df.columns]
        if missing:  # cuDF's reader leaves them out too; the caller's checks name them
            columns = [c for c in columns if c in df.columns]
        df = df[list(columns)]
    return df


def read(paths: Sequence[str], row_groups: Optional[Sequence[Sequence[int]]], columns: Optional[List[str]],
         filesystem: Any) -> Optional[Any]:
    """:func:`read_local` where it applies and works, else None (the caller reads with cuDF)."""
    if filesystem is not None or columns is None or not enabled():
        return None
    try:
        return read_local(paths, row_groups, columns)
    except Exception as exc:  # noqa: BLE001 - cuDF's reader then reads (and raises) as before
        log.debug("direct parquet read of %d file(s) failed (%s); reading with cudf.read_parquet", len(paths), exc)
        return None


__all__ = ["FOOTERS_KEPT", "enabled", "footer", "own_stream_enabled", "read", "read_local"]
