"""Framework-neutral online data loader: parquet chunks -> (workflow) -> shuffled batches.

The pieces, in the order data flows:

1. **Units** (:class:`_Unit`): the smallest readable slices of the input. Parquet row groups
   for parquet files, partitions for dask-backed datasets, fixed row ranges for in-memory
   frames.
2. **Pieces** (:class:`_Piece`): consecutive units of one file grouped to about the target
   piece size (``buffer_size``), possibly trimmed to a row range. Every rank plans the same
   pieces, so sharding is a pure function of the metadata.
3. **Sharding**: the dataset's rows, in file order, are cut into ``global_size`` contiguous
   ranges of *equal* length, so every rank yields the same number of batches:

   * ``drop_last=False``: each range has ``ceil(N / global_size)`` rows; the last ranks,
     which would be short, wrap around to the first rows of the dataset (at most
     ``global_size - 1`` rows are seen twice per epoch across ranks, none is missed).
   * ``drop_last=True``: each range has ``floor(N / global_size)`` rows; the last
     ``N % global_size`` rows of the dataset are skipped (ranks stay disjoint).

   When ``N`` is a multiple of ``global_size`` the ranks are disjoint and complete either way.
   The assignment of rows to ranks is fixed across epochs (shuffling happens inside a rank).
4. **Chunks**: each epoch, a rank's pieces are put in a seeded random order (``shuffle``) and
   grouped ``parts_per_chunk`` at a time. A chunk is read, concatenated, transformed by the
   attached workflow (``Workflow.transform_frame``: pandas on the CPU, cuDF on the GPU) and
   converted once to contiguous numpy / cupy arrays, shuffled with a seeded permutation.
5. **Batches**: slices (views) of the chunk arrays, which on the CPU are laid out so that
   batch slices start on 64-byte boundaries (TensorFlow then takes them without a copy); the
   tail of one chunk is joined to the head of the next, so every batch but the last has exactly
   ``batch_size`` rows and an epoch has ``ceil(rows / batch_size)`` batches (``floor`` with
   ``drop_last``).

Background threads (``threads``, default up to 2 on the CPU, 1 on the GPU) prepare the next
chunks while the consumer batches the current one (``prefetch`` chunks ahead, default 1); an
exception raised there is re-raised in the consumer. Memory held at once is about
``max(prefetch, threads) + 1`` chunks.

Determinism: given ``seed`` (or ``seed_fn``), the rows of every batch depend only on the
epoch number, on the data and on the loader's parameters, on the CPU and on the GPU alike
(permutations are drawn with numpy on the host).

Frameworks plug in on top of :class:`DataLoader`: a batch is a ``dict`` of column name to
array (numpy on the CPU, cupy on the GPU):

* scalar columns: 1-D arrays of ``batch`` rows;
* list (multi-hot) columns: a :class:`RaggedBatch` ``(values, lengths)`` (flat values and
  per-row counts), or a 2-D ``(batch, max_len)`` array padded with 0 when
  ``sparse_as_dense=True``.

See :mod:`tabprep.loader.tensorflow` for the Keras adapter.
"""
from __future__ import annotations

import bisect
import difflib
import logging
import os
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from .. import backend
from ..schema import Schema, Tags

log = logging.getLogger(__name__)

#: rows of one unit when the source is an in-memory frame (units are grouped into pieces)
FRAME_UNIT_ROWS = 8192
#: padding id of multi-hot columns made dense (Categorify's padding id)
PAD_ID = 0


# ---------------------------------------------------------------------------------------
# batch containers
# ---------------------------------------------------------------------------------------
class RaggedBatch(NamedTuple):
    """A list column of one batch: ``values`` (flat, all rows' elements one after the other)
    and ``lengths`` (int64, one count per row; ``lengths.sum() == len(values)``)."""

    values: Any
    lengths: Any


@dataclass
class _RaggedColumn:
    """A list column of one chunk: flat values and ``offsets`` (int64, rows + 1)."""

    values: Any
    offsets: Any
    host_offsets: Optional[np.ndarray] = None  # numpy copy of offsets (GPU), so slicing needs no sync
    row_lengths: Any = None                    # offsets' differences, computed once per chunk

    @property
    def lengths(self) -> Any:
        if self.row_lengths is not None:
            return self.row_lengths
        return self.offsets[1:] - self.offsets[:-1]


@dataclass
class _Chunk:
    """Prepared (transformed, shuffled) columns of one chunk."""

    columns: Dict[str, Any]
    num_rows: int


# ---------------------------------------------------------------------------------------
# sources: units of data and how to read them
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Unit:
    group: int       # pieces never span groups (files)
    key: Any         # row-group index / partition index / (start, stop)
    num_rows: int


@dataclass(frozen=True)
class _Piece:
    """Consecutive units of one group, rows ``[start, stop)`` of their concatenation."""

    units: Tuple[int, ...]
    start: int
    stop: int

    @property
    def num_rows(self) -> int:
        return self.stop - self.start


class _Source:
    """Where the rows come from. Subclasses fill ``units``, ``cpu``, ``schema``."""

    units: List[_Unit]
    cpu: bool
    schema: Optional[Schema]

    def read(self, units: Sequence[_Unit], columns: Optional[List[str]]) -> Any:
        raise NotImplementedError

    def read_part(self, units: Sequence[_Unit], columns: Optional[List[str]]) -> Any:
        """Rows of ``units`` as a *part*: a frame, or whatever :meth:`stack` stacks best; parts
        are sliced with :func:`tabprep.backend.slice_rows`."""
        return self.read(units, columns)

    def stack(self, parts: Sequence[Any]) -> Any:
        """One frame (index 0..n-1) of parts stacked in order."""
        return parts[0].reset_index(drop=True) if len(parts) == 1 else backend.concat_rows(parts)

    def row_bytes(self, columns: Optional[List[str]]) -> float:
        """Estimated bytes of one row of ``columns`` in memory."""
        raise NotImplementedError

    def describe(self) -> str:
        return type(self).__name__


class _ParquetSource(_Source):
    def __init__(self, files: List[str], cpu: bool, schema: Optional[Schema]) -> None:
        import pyarrow.parquet as pq

        self.files = files
        self.cpu = cpu
        self.schema = schema
        # parquet on the CPU: parts are Arrow tables, stacked and converted to pandas once
        self._reader = backend.parquet_reader(cpu)
        self.units = []
        self._row_bytes: Dict[str, float] = {}
        total_rows = 0
        for gi, f in enumerate(files):
            try:
                md = pq.ParquetFile(f).metadata
            except Exception as exc:  # noqa: BLE001 - any unreadable file gets the same advice
                raise ValueError(f"cannot read parquet file {f}: {exc}. Remove or re-write it.") from exc
            for i in range(md.num_row_groups):
                rg = md.row_group(i)
                if rg.num_rows:
                    self.units.append(_Unit(gi, i, rg.num_rows))
                    total_rows += rg.num_rows
                for j in range(rg.num_columns):
                    col = rg.column(j)
                    name = col.path_in_schema.split(".")[0]
                    self._row_bytes[name] = self._row_bytes.get(name, 0.0) + col.total_uncompressed_size
        self._total_rows = max(total_rows, 1)

    def read(self, units: Sequence[_Unit], columns: Optional[List[str]]) -> Any:
        path = self.files[units[0].group]
        return backend.read_parquet_piece(path, [u.key for u in units], columns, self.cpu)

    def read_arrow(self, units: Sequence[_Unit], columns: Optional[List[str]]) -> Any:
        path = self.files[units[0].group]
        return backend.read_parquet_table(path, [u.key for u in units], columns)

    def read_part(self, units: Sequence[_Unit], columns: Optional[List[str]]) -> Any:
        return self._reader.read(self.files[units[0].group], [u.key for u in units], columns)

    def stack(self, parts: Sequence[Any]) -> Any:
        return self._reader.stack(parts)

    def row_bytes(self, columns: Optional[List[str]]) -> float:
        names = columns if columns is not None else list(self._row_bytes)
        return max(sum(self._row_bytes.get(c, 8.0 * self._total_rows) for c in names) / self._total_rows, 1.0)

    def describe(self) -> str:
        return f"{len(self.files)} parquet file(s) like {self.files[0]}" if self.files else "no files"


class _FrameSource(_Source):
    def __init__(self, frame: Any, schema: Optional[Schema]) -> None:
        self.frame = frame.reset_index(drop=True)
        self.cpu = backend.is_cpu(frame)
        self.schema = schema
        n = len(self.frame)
        self.units = [_Unit(0, (a, min(a + FRAME_UNIT_ROWS, n)), min(a + FRAME_UNIT_ROWS, n) - a)
                      for a in range(0, n, FRAME_UNIT_ROWS)]

    def read(self, units: Sequence[_Unit], columns: Optional[List[str]]) -> Any:
        df = self.frame if columns is None else self.frame[list(columns)]
        return df.iloc[units[0].key[0]: units[-1].key[1]]

    def row_bytes(self, columns: Optional[List[str]]) -> float:
        df = self.frame if columns is None else self.frame[list(columns)]
        return max(float(df.memory_usage(index=False).sum()) / max(len(df), 1), 1.0)


class _DaskSource(_Source):
    """Partitions of a dask (or dask-cuDF) frame; their lengths are computed once (one pass)."""

    def __init__(self, ddf: Any, cpu: bool, schema: Optional[Schema]) -> None:
        self.ddf = ddf
        self.cpu = cpu
        self.schema = schema
        lengths = ddf.map_partitions(len).compute()
        self.units = [_Unit(i, i, int(n)) for i, n in enumerate(lengths) if int(n) > 0]

    def read(self, units: Sequence[_Unit], columns: Optional[List[str]]) -> Any:
        ddf = self.ddf if columns is None else self.ddf[list(columns)]
        frames = [ddf.get_partition(u.key).compute() for u in units]
        return frames[0] if len(frames) == 1 else backend.concat_rows(frames)

    def row_bytes(self, columns: Optional[List[str]]) -> float:
        meta = self.ddf._meta if columns is None else self.ddf._meta[list(columns)]
        return 8.0 * max(len(meta.columns), 1)


def _make_source(data: Any, cpu: Optional[bool], engine: Optional[str], reader_kwargs: Optional[Dict[str, Any]],
                 schema: Optional[Schema]) -> _Source:
    from ..io.dataset import Dataset

    if isinstance(data, Dataset):
        ds = data
    elif _is_frame(data):
        frame = backend.to_backend(data, cpu)
        from ..workflow.workflow import schema_of_frame

        return _FrameSource(frame, schema or schema_of_frame(frame))
    else:
        ds = Dataset(data, engine=engine, cpu=cpu, **(reader_kwargs or {}))
    if ds.engine == "parquet" and ds.files and getattr(ds, "_ddf", None) is None:
        use_cpu = ds.cpu if cpu is None else backend.resolve_cpu(cpu)
        return _ParquetSource(ds.files, use_cpu, schema or ds.schema)
    if ds.engine == "memory" and not ds.files:
        # an in-memory Dataset: slice the frame itself rather than computing dask partitions
        frame = ds.to_ddf().compute()
        return _make_source(frame, cpu if cpu is not None else ds.cpu, None, None, schema or ds.schema)
    return _DaskSource(ds.to_ddf(), ds.cpu, schema or ds.schema)


_is_frame = backend.is_frame


# ---------------------------------------------------------------------------------------
# planning: pieces, shards, chunks
# ---------------------------------------------------------------------------------------
def plan_pieces(units: Sequence[_Unit], target_rows: int) -> List[_Piece]:
    """Group consecutive units of the same group into pieces of at most ``target_rows`` rows.

    A unit larger than ``target_rows`` (a big parquet row group) is a piece by itself: pieces
    have row-group granularity and row groups are never read twice.
    """
    target_rows = max(int(target_rows), 1)
    pieces: List[_Piece] = []
    cur: List[int] = []
    rows = 0
    for i, u in enumerate(units):
        if cur and (units[cur[-1]].group != u.group or rows + u.num_rows > target_rows):
            pieces.append(_Piece(tuple(cur), 0, rows))
            cur, rows = [], 0
        cur.append(i)
        rows += u.num_rows
    if cur:
        pieces.append(_Piece(tuple(cur), 0, rows))
    return pieces


def _trim_piece(piece: _Piece, units: Sequence[_Unit], start: int, stop: int) -> _Piece:
    """Rows ``[start, stop)`` (relative to the piece's units) of ``piece``, dropping whole units
    that fall outside so they are not read."""
    keep: List[int] = []
    pos = 0
    first_pos = None
    for ui in piece.units:
        n = units[ui].num_rows
        if pos + n > start and pos < stop:
            if first_pos is None:
                first_pos = pos
            keep.append(ui)
        pos += n
    assert first_pos is not None
    return _Piece(tuple(keep), start - first_pos, stop - first_pos)


def slice_rows(pieces: Sequence[_Piece], units: Sequence[_Unit], lo: int, hi: int) -> List[_Piece]:
    """Pieces covering global rows ``[lo, hi)`` of the concatenation of ``pieces``."""
    out: List[_Piece] = []
    pos = 0
    for p in pieces:
        a, b = pos, pos + p.num_rows
        pos = b
        if b <= lo or a >= hi:
            continue
        s = max(lo, a) - a + p.start
        e = min(hi, b) - a + p.start
        out.append(_trim_piece(p, units, s, e))
    return out


def shard_rows(num_rows: int, global_size: int, global_rank: int, drop_last: bool) -> List[Tuple[int, int]]:
    """Global row ranges of one rank (see the module docstring): equal counts on every rank.

    Returns one range, or two when the rank wraps around to the start of the dataset.
    """
    if global_size < 1 or not 0 <= global_rank < global_size:
        raise ValueError(f"need 0 <= global_rank < global_size, got global_rank={global_rank}, "
                         f"global_size={global_size}")
    if num_rows <= 0:
        return []
    if drop_last:
        per = num_rows // global_size
        lo = global_rank * per
        return [(lo, lo + per)] if per else []
    per = -(-num_rows // global_size)
    lo = min(global_rank * per, num_rows)
    hi = min(lo + per, num_rows)
    ranges = [(lo, hi)] if hi > lo else []
    short = per - (hi - lo)
    if short:
        ranges.append((0, short))
    return ranges


@dataclass
class _EpochPlan:
    epoch: int
    seed: Any
    chunks: List[List[_Piece]]
    offsets: List[int]          # first (input) row of each chunk; len(chunks) + 1 entries

    @property
    def num_rows(self) -> int:
        return self.offsets[-1]


# ---------------------------------------------------------------------------------------
# array helpers (numpy or cupy)
# ---------------------------------------------------------------------------------------
def _xp(arr: Any):
    return backend.array_module(arr)


def _row_ids(offsets: Any, nnz: int, xp: Any) -> Any:
    """Row index of each of the ``nnz`` flat values of a ragged column."""
    lengths = offsets[1:] - offsets[:-1]
    if xp is np:
        return np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    return xp.searchsorted(offsets[1:], xp.arange(nnz, dtype=xp.int64), side="right")


def take_ragged(col: _RaggedColumn, perm: Any) -> _RaggedColumn:
    """Rows ``perm`` (an int array on the column's device) of a ragged column."""
    xp = _xp(col.offsets)
    lengths = col.lengths[perm]
    offsets = xp.zeros(len(lengths) + 1, dtype=xp.int64)
    xp.cumsum(lengths, out=offsets[1:])
    nnz = int(offsets[-1])
    if nnz == 0:
        return _RaggedColumn(col.values[:0], offsets)
    rows = _row_ids(offsets, nnz, xp)
    src = col.offsets[:-1][perm][rows] + (xp.arange(nnz, dtype=xp.int64) - offsets[rows])
    return _RaggedColumn(col.values[src], offsets)


def pad_ragged(col: _RaggedColumn, max_len: int, pad: int = PAD_ID) -> Any:
    """Dense ``(rows, max_len)`` array of a ragged column, right-padded with ``pad``;
    longer rows are truncated to their first ``max_len`` values."""
    xp = _xp(col.offsets)
    n = len(col.offsets) - 1
    out = xp.full((n, max_len), pad, dtype=col.values.dtype)
    nnz = len(col.values)
    if nnz == 0 or max_len == 0:
        return out
    rows = _row_ids(col.offsets, nnz, xp)
    pos = xp.arange(nnz, dtype=xp.int64) - col.offsets[rows]
    keep = pos < max_len
    if bool(keep.all()):
        out[rows, pos] = col.values
    else:
        out[rows[keep], pos[keep]] = col.values[keep]
    return out


#: alignment of the batch arrays made on the CPU (see :func:`tabprep.backend.take_aligned`)
ALIGN = backend.ALIGN
_take_aligned = backend.take_aligned


def _slice(col: Any, a: int, b: int) -> Any:
    """Rows ``[a, b)`` of a chunk column (views)."""
    if isinstance(col, _RaggedColumn):
        host = col.host_offsets if col.host_offsets is not None else col.offsets
        lo, hi = int(host[a]), int(host[b])
        return RaggedBatch(col.values[lo:hi], col.lengths[a:b])
    return col[a:b]


def _concat_batches(parts: List[Dict[str, Any]]) -> Dict[str, Any]:
    if len(parts) == 1:
        return parts[0]
    out = {}
    for name, first in parts[0].items():
        if isinstance(first, RaggedBatch):
            xp = _xp(first.values)
            out[name] = RaggedBatch(xp.concatenate([p[name].values for p in parts]),
                                    xp.concatenate([p[name].lengths for p in parts]))
        else:
            out[name] = _xp(first).concatenate([p[name] for p in parts])
    return out


# ---------------------------------------------------------------------------------------
# background preparation of chunks
# ---------------------------------------------------------------------------------------
class _Prefetcher:
    """Produces ``produce(k)`` for ``k`` in ``indices`` in ``workers`` daemon threads, in order.

    A slot is taken before a chunk is produced and given back when the consumer takes it, so at
    most ``max(depth, workers)`` chunks are being built or waiting while the consumer uses one.
    Chunks are handed over in the order of ``indices`` whatever thread finished first. A thread's
    exception is re-raised by :meth:`get` when the consumer reaches that chunk; :meth:`close`
    stops the threads.
    """

    def __init__(self, produce: Callable[[int], Any], indices: Sequence[int], depth: int,
                 init: Optional[Callable[[], None]] = None, owner: Any = None, workers: int = 1) -> None:
        # the threads hold no strong reference to their owner: when the owner (a chunk stream) is
        # garbage-collected, they notice and end
        self._owner = weakref.ref(owner) if owner is not None else (lambda: True)
        self._produce = produce
        self._indices = list(indices)
        self._init = init
        workers = max(1, min(int(workers), len(self._indices) or 1))
        self._slots = threading.Semaphore(max(int(depth), workers, 1))
        self._stop = threading.Event()
        self._cond = threading.Condition()
        self._ready: Dict[int, Tuple[str, Any]] = {}
        self._claimed = 0      # indices handed to workers
        self._pos = 0          # indices handed to the consumer
        self._threads = [threading.Thread(target=self._run, name="tabprep-loader-prefetch", daemon=True)
                         for _ in range(workers)]
        for t in self._threads:
            t.start()

    def _gone(self) -> bool:
        return self._stop.is_set() or self._owner() is None

    def _run(self) -> None:
        try:
            if self._init is not None:
                self._init()
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, which re-raises
            with self._cond:
                self._ready.setdefault(self._indices[0] if self._indices else -1, ("err", exc))
                self._cond.notify_all()
            return
        while True:
            while not self._slots.acquire(timeout=0.05):
                if self._gone():
                    return
            if self._gone():
                return
            with self._cond:
                if self._claimed >= len(self._indices):
                    self._slots.release()
                    return
                k = self._indices[self._claimed]
                self._claimed += 1
            try:
                result: Tuple[str, Any] = ("ok", self._produce(k))
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer, which re-raises
                result = ("err", exc)
            with self._cond:
                self._ready[k] = result
                self._cond.notify_all()
            if result[0] == "err":
                return

    def get(self) -> Tuple[int, Any]:
        """The next ``(k, chunk)`` in order; raises what a thread raised for that chunk."""
        if self._pos >= len(self._indices):
            raise RuntimeError("the loader asked its prefetch threads for a chunk past the end of the epoch")
        k = self._indices[self._pos]
        with self._cond:
            while k not in self._ready:
                if not any(t.is_alive() for t in self._threads):
                    errors = [v for v in self._ready.values() if v[0] == "err"]
                    if errors:
                        kind, item = errors[0]
                        break
                    raise RuntimeError("the loader's prefetch threads stopped without a result")
                self._cond.wait(0.5)
            else:
                kind, item = self._ready.pop(k)
        if kind == "err":
            try:
                item.add_note("(raised while preparing a chunk in tabprep's loader prefetch thread)")
            except AttributeError:  # pragma: no cover - Python < 3.11
                pass
            raise item
        self._pos += 1
        self._slots.release()
        return k, item

    def close(self) -> None:
        self._stop.set()
        with self._cond:
            self._ready.clear()
        me = threading.current_thread()
        for t in self._threads:
            if t is me:
                continue  # the loader was freed by this thread itself: it ends after this chunk
            t.join(timeout=10)
            if t.is_alive():  # pragma: no cover - a read stuck in I/O
                log.warning("a loader prefetch thread did not stop within 10 s; leaving it (daemon)")


class _ChunkStream:
    """The chunks of one epoch, in order, prepared ahead by a :class:`_Prefetcher`.

    ``get(k)`` is cheap for the chunk it returned last and for the next one; any other ``k``
    restarts preparation at ``k`` (the cost of random access). Holds its loader weakly, so a
    loader that is dropped mid-epoch is freed at once and its thread stops.
    """

    def __init__(self, loader: "DataLoader", plan: _EpochPlan) -> None:
        self._loader = weakref.ref(loader)
        self.plan = plan
        self.prefetch = loader.prefetch
        self.threads = loader.threads
        self._init = loader._device.thread_init()
        self._pf: Optional[_Prefetcher] = None
        self._next = -1
        self._last: Tuple[int, Optional[_Chunk]] = (-1, None)

    def get(self, k: int) -> _Chunk:
        if self._last[0] == k and self._last[1] is not None:
            return self._last[1]
        if self.prefetch <= 0:
            loader = self._loader()
            if loader is None:
                raise RuntimeError("the loader was garbage-collected")
            chunk = loader._prepare_chunk(self.plan, k)
        else:
            if self._pf is None or self._next != k:
                self.close()
                loader = self._loader()
                if loader is None:
                    raise RuntimeError("the loader was garbage-collected")
                self._pf = _Prefetcher(_weak_producer(loader, self.plan), range(k, len(self.plan.chunks)),
                                       self.prefetch, init=self._init, owner=self, workers=self.threads)
            got, chunk = self._pf.get()
            assert got == k, (got, k)
            self._next = k + 1
        self._last = (k, chunk)
        return chunk

    def close(self) -> None:
        if self._pf is not None:
            self._pf.close()
            self._pf = None
            self._next = -1

    def __del__(self) -> None:
        if self._pf is not None:
            self._pf._stop.set()


def _weak_producer(loader: "DataLoader", plan: _EpochPlan) -> Callable[[int], _Chunk]:
    ref = weakref.ref(loader)

    def produce(k: int) -> _Chunk:
        obj = ref()
        if obj is None:
            raise RuntimeError("the loader was garbage-collected")
        return obj._prepare_chunk(plan, k)

    return produce


def _iter_batches(stream: _ChunkStream, start_batch: int, batch_size: int, drop_last: bool,
                  exact: bool) -> Iterator[Dict[str, Any]]:
    """Batches of ``stream``'s epoch from batch ``start_batch`` on (a plain function, so a
    suspended generator does not keep its loader alive)."""
    plan = stream.plan
    bs = batch_size
    nchunks = len(plan.chunks)
    if exact:
        start_row = start_batch * bs
        k = max(bisect.bisect_right(plan.offsets, start_row) - 1, 0)
        pos = start_row - plan.offsets[k]
        skip = 0
    else:
        k, pos, skip = 0, 0, start_batch
    pending: List[Dict[str, Any]] = []
    pending_rows = 0
    while k < nchunks:
        chunk = stream.get(k)
        cols = chunk.columns
        n = chunk.num_rows
        while pos < n:
            if not pending_rows and pos + bs <= n:
                batch = {name: _slice(c, pos, pos + bs) for name, c in cols.items()} if not skip else {}
                pos += bs
            else:
                take = min(bs - pending_rows, n - pos)
                pending.append({name: _slice(c, pos, pos + take) for name, c in cols.items()})
                pending_rows += take
                pos += take
                if pending_rows < bs:
                    continue
                batch = _concat_batches(pending)
                pending, pending_rows = [], 0
            if skip:
                skip -= 1
                continue
            yield batch
        pos = 0
        k += 1
    if pending_rows and not drop_last and not skip:
        yield _concat_batches(pending)


# ---------------------------------------------------------------------------------------
# the loader
# ---------------------------------------------------------------------------------------
class DataLoader:
    """Batches of a parquet dataset, transformed online by an attached workflow.

    Args:
        paths_or_dataset: parquet file(s), a glob, a folder, a :class:`tabprep.Dataset`
            (also a transformed one, e.g. ``wf.transform(ds)``), or a pandas / cuDF frame.
            Parquet is read by row groups; a dask-backed dataset (csv, a transformed dataset)
            is read partition by partition, and its partition lengths are computed once when
            the loader is planned (one pass over its graph).
        batch_size: rows per batch (the last batch of an epoch may be shorter unless
            ``drop_last``).
        label_names: target columns (default: the columns tagged ``target`` in the schema).
        cat_names / cont_names: categorical / continuous feature columns (default: the columns
            tagged ``categorical`` / ``continuous`` in the workflow's output schema or the
            dataset's schema). Continuous columns are emitted as float32, categorical ones
            keep their integer dtype; labels keep theirs.
        engine: ``"parquet"`` or ``"csv"`` when it cannot be told from the file names.
        shuffle: shuffle pieces and rows (default True, as in NVTabular).
        seed: seed of the shuffles (default: a random one drawn once, so epochs differ but a
            loader cannot be replayed); the same seed gives the same batches on CPU and GPU.
        seed_fn: called at the start of each epoch for that epoch's seed (overrides ``seed``);
            NVTabular's hook for seeds agreed across Horovod ranks.
        buffer_size: size of one piece: a float < 1 is a fraction of the device's memory (GPU)
            or of the RAM (CPU), estimated from the uncompressed parquet size of the columns
            read; a number >= 1 is a row count. Default 0.1. A chunk is ``parts_per_chunk``
            pieces; pieces are whole parquet row groups (a bigger row group is a piece alone).
            Memory in use is about ``(prefetch + 1)`` chunks, each a few times its input size
            (raw + transformed frame + arrays).
        device: ``None`` (GPU when cuDF is usable), ``"cpu"``, or a GPU index.
        parts_per_chunk: pieces read, concatenated and shuffled together per chunk.
        reader_kwargs: passed to :class:`tabprep.Dataset` (e.g. csv options).
        global_size / global_rank: number of ranks (e.g. Horovod's ``hvd.size()``) and this
            rank; every rank gets the same number of batches (see the module docstring for the
            trimming / wrapping rules). Default: 1 / 0.
        drop_last: drop the last partial batch (and, when sharding, the ``N % global_size``
            leftover rows).
        sparse_names: list columns to emit (default: detected from the schema / data).
        sparse_max: ``{column: max_len}`` for ``sparse_as_dense`` (default: the schema's
            ``value_count["max"]``); longer rows are truncated.
        sparse_as_dense: emit list columns as ``(batch, max_len)`` arrays padded with 0.
        schema: schema of the input, when not stored with the data.
        prefetch: chunks prepared ahead in the background (0: no thread, chunks are prepared
            when needed).
        threads: threads preparing chunks in parallel (each a whole chunk: read, transform,
            shuffle), handed over in order. Default: 1 on the GPU; on the CPU half the cores,
            at most 2 (numpy, arrow and the hashing release the GIL, pandas' bookkeeping does not).
            Memory: ``max(prefetch, threads)`` chunks in preparation plus the one in use.

    Example:
        >>> loader = DataLoader("raw/*.parquet", batch_size=65536, label_names=["label"], seed=0)
        >>> loader.map(tp.Workflow.load("wf/"))
        >>> for batch in loader:            # one epoch; dict name -> numpy/cupy array
        ...     ...
    """

    def __init__(self, paths_or_dataset: Any, batch_size: int, label_names: Optional[Sequence[str]] = None,
                 cat_names: Optional[Sequence[str]] = None, cont_names: Optional[Sequence[str]] = None,
                 engine: Optional[str] = None, shuffle: bool = True, seed_fn: Optional[Callable[[], int]] = None,
                 buffer_size: float = 0.1, device: Union[None, str, int] = None, parts_per_chunk: int = 1,
                 reader_kwargs: Optional[Dict[str, Any]] = None, global_size: Optional[int] = None,
                 global_rank: Optional[int] = None, drop_last: bool = False,
                 sparse_names: Optional[Sequence[str]] = None, sparse_max: Optional[Dict[str, int]] = None,
                 sparse_as_dense: bool = False, schema: Optional[Schema] = None, seed: Optional[int] = None,
                 prefetch: int = 1, threads: Optional[int] = None) -> None:
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if int(parts_per_chunk) < 1:
            raise ValueError(f"parts_per_chunk must be >= 1, got {parts_per_chunk}")
        if buffer_size is None or float(buffer_size) <= 0:
            raise ValueError(f"buffer_size must be a fraction in (0, 1) or a row count >= 1, got {buffer_size}")
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.seed_fn = seed_fn
        self.seed = int(np.random.SeedSequence().entropy % (2 ** 63)) if seed is None else int(seed)
        self.buffer_size = float(buffer_size)
        self.parts_per_chunk = int(parts_per_chunk)
        self.global_size = 1 if global_size is None else int(global_size)
        self.global_rank = 0 if global_rank is None else int(global_rank)
        self.drop_last = bool(drop_last)
        self.sparse_as_dense = bool(sparse_as_dense)
        self.prefetch = int(prefetch)
        self._sparse_names_arg = list(sparse_names) if sparse_names is not None else None
        self._sparse_max_arg = dict(sparse_max or {})
        self._names_arg = (None if label_names is None else list(label_names),
                           None if cat_names is None else list(cat_names),
                           None if cont_names is None else list(cont_names))
        if device == "cpu":
            cpu: Optional[bool] = True
            self.device = 0
        elif device is None:
            cpu = None
            self.device = 0
        else:
            cpu = False
            self.device = int(device)
        self._source = _make_source(paths_or_dataset, cpu, engine, reader_kwargs, schema)
        self.cpu = self._source.cpu
        self._device = backend.compute_device(self.cpu, self.device)
        if threads is None:
            threads = self._device.default_threads()
        if int(threads) < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        self.threads = int(threads)
        self._transform: Optional[Callable[[Any], Any]] = None
        self.workflow: Any = None
        self._exact = True
        self._lock = threading.RLock()
        self._epoch_seeds: Dict[int, Any] = {}
        self._plans: Dict[int, _EpochPlan] = {}
        self.epoch = 0
        self._started = False
        self._done = False
        self._stream: Optional[_ChunkStream] = None
        self._gen: Optional[Iterator[Dict[str, Any]]] = None
        self._gen_next = -1
        self._warned_nulls: set = set()
        self._ready = False

    def _ensure_ready(self) -> None:
        """Resolve column names and plan this rank's pieces (lazily: ``map()`` may come later)."""
        if not self._ready:
            with self._lock:
                if not self._ready:
                    self._resolve_names()
                    self._plan_rank()
                    self._ready = True

    # -- configuration ------------------------------------------------------------------
    def map(self, workflow: Any) -> "DataLoader":
        """Transform every chunk with ``workflow`` (a fitted :class:`tabprep.Workflow`, or a
        callable ``frame -> frame`` that keeps rows) before batching. Returns ``self``.

        Feature and label names then default to the workflow's output schema; labels that the
        workflow does not output are passed through untransformed from the raw data.
        """
        from ..workflow.workflow import Workflow

        with self._lock:
            self._reset_iteration()
            self.workflow = workflow
            if isinstance(workflow, Workflow):
                workflow._require_fitted()
                self._transform = workflow.transform_frame
                self._exact = not any(getattr(op, "changes_rows", False) for op in workflow.ops)
                if not self._exact:
                    log.warning("the attached workflow drops rows (Filter): len(loader) is an upper bound, "
                                "random access re-reads the epoch from its start, and Keras needs steps_per_epoch")
            elif callable(workflow):
                self._transform = workflow
                self._exact = True
            else:
                raise TypeError(f"map() takes a fitted tabprep.Workflow or a callable frame -> frame, "
                                f"got {type(workflow).__name__}")
            self._ready = False
        return self

    # -- resolved configuration (known once the loader is planned) ----------------------------
    @property
    def label_names(self) -> List[str]:
        self._ensure_ready()
        return list(self._label_names)

    @property
    def cat_names(self) -> List[str]:
        self._ensure_ready()
        return list(self._cat_names)

    @property
    def cont_names(self) -> List[str]:
        self._ensure_ready()
        return list(self._cont_names)

    @property
    def sparse_names(self) -> List[str]:
        """List (multi-hot) columns among the emitted ones."""
        self._ensure_ready()
        return list(self._sparse_names)

    @property
    def sparse_max(self) -> Dict[str, int]:
        """Padded length of each list column when ``sparse_as_dense``."""
        self._ensure_ready()
        return dict(self._sparse_max)

    @property
    def num_rows(self) -> int:
        """Input rows per epoch on this rank (after sharding)."""
        self._ensure_ready()
        return self._num_rows

    @property
    def piece_rows(self) -> int:
        """Target rows of one piece (from ``buffer_size``)."""
        self._ensure_ready()
        return self._piece_rows

    @property
    def output_schema(self) -> Optional[Schema]:
        """Schema of the emitted columns (None when a plain callable is mapped)."""
        self._ensure_ready()
        return self._output_schema()

    def _output_schema(self) -> Optional[Schema]:
        from ..workflow.workflow import Workflow

        if isinstance(self.workflow, Workflow):
            return self.workflow.output_schema
        if self.workflow is not None:
            return None
        return self._source.schema

    def _resolve_names(self) -> None:
        labels, cats, conts = self._names_arg
        schema = self._output_schema()
        available = schema.column_names if schema is not None else None
        if labels is None:
            labels = [c.name for c in schema if Tags.TARGET in c.tags] if schema is not None else []
        if cats is None:
            cats = [c.name for c in schema if c.is_categorical and c.name not in labels] if schema is not None else []
        if conts is None:
            conts = [c.name for c in schema if c.is_continuous and c.name not in labels and c.name not in cats] \
                if schema is not None else []
        if not cats and not conts:
            raise ValueError("no feature columns: pass cat_names= / cont_names= (or feature_columns=), or attach "
                             "a fitted workflow whose output columns are tagged categorical / continuous"
                             + (f"; columns available: {available}" if available else ""))
        dup = set(labels) & (set(cats) | set(conts)) | (set(cats) & set(conts))
        if dup:
            raise ValueError(f"columns {sorted(dup)} are listed more than once among labels / cats / conts")
        self._label_names, self._cat_names, self._cont_names = list(labels), list(cats), list(conts)
        names = self._cat_names + self._cont_names + self._label_names
        # where each column comes from: the transformed frame, or passed through from the raw one
        raw_schema = self._source.schema
        from ..workflow.workflow import Workflow

        passthrough: List[str] = []
        if isinstance(self.workflow, Workflow):
            out_cols = set(self.workflow.output_columns)
            for n in names:
                if n in out_cols:
                    continue
                if raw_schema is not None and n in raw_schema:
                    passthrough.append(n)
                else:
                    raise KeyError(_missing(n, list(out_cols), "the workflow's output"))
            self._read_columns: Optional[List[str]] = list(dict.fromkeys(self.workflow.input_columns + passthrough))
        elif self.workflow is not None:
            self._read_columns = None
        else:
            if raw_schema is not None:
                for n in names:
                    if n not in raw_schema:
                        raise KeyError(_missing(n, raw_schema.column_names, "the dataset"))
            self._read_columns = names
        self._passthrough = passthrough
        # list (multi-hot) columns
        if self._sparse_names_arg is not None:
            self._sparse_names = [n for n in self._sparse_names_arg if n in names]
        elif schema is not None:
            self._sparse_names = [n for n in names if n in schema and schema[n].is_list]
        else:
            self._sparse_names = []
        self._sparse_max: Dict[str, int] = {}
        if self.sparse_as_dense:
            for n in self._sparse_names:
                m = self._sparse_max_arg.get(n)
                if m is None and schema is not None and n in schema and schema[n].value_count:
                    m = schema[n].value_count.get("max")
                if m is None:
                    raise ValueError(f"sparse_as_dense needs the maximum length of list column {n!r}: it is not in "
                                     f"the schema (value_count), pass sparse_max={{{n!r}: N}}")
                self._sparse_max[n] = int(m)

    # -- planning --------------------------------------------------------------------------
    def _target_piece_rows(self) -> int:
        if self.buffer_size >= 1:
            return int(self.buffer_size)
        mem = self._device.total_memory() * self.buffer_size
        return max(int(mem / self._source.row_bytes(self._read_columns)), 1)

    def _plan_rank(self) -> None:
        units = self._source.units
        self._piece_rows = self._target_piece_rows()
        pieces = plan_pieces(units, self._piece_rows)
        total = sum(p.num_rows for p in pieces)
        self.dataset_rows = total
        mine: List[_Piece] = []
        for lo, hi in shard_rows(total, self.global_size, self.global_rank, self.drop_last):
            mine += slice_rows(pieces, units, lo, hi)
        self._pieces = mine
        self._num_rows = sum(p.num_rows for p in mine)
        self._plans = {}
        log.debug("loader plan: %d rows in %d pieces (target %d rows/piece), rank %d/%d gets %d rows in %d pieces",
                  total, len(pieces), self._piece_rows, self.global_rank, self.global_size, self._num_rows, len(mine))

    def _epoch_seed(self, epoch: int) -> Any:
        if epoch not in self._epoch_seeds:
            self._epoch_seeds[epoch] = [int(self.seed_fn()) % (2 ** 63)] if self.seed_fn is not None \
                else [self.seed, epoch]
        return self._epoch_seeds[epoch]

    def plan(self, epoch: int) -> _EpochPlan:
        """Chunks (lists of pieces) of ``epoch`` on this rank, and their first rows."""
        self._ensure_ready()
        if epoch in self._plans:
            return self._plans[epoch]
        seed = self._epoch_seed(epoch)
        pieces = list(self._pieces)
        if self.shuffle and len(pieces) > 1:
            order = np.random.default_rng(seed + [0]).permutation(len(pieces))
            pieces = [pieces[i] for i in order]
        chunks = [pieces[i:i + self.parts_per_chunk] for i in range(0, len(pieces), self.parts_per_chunk)]
        offsets = [0]
        for c in chunks:
            offsets.append(offsets[-1] + sum(p.num_rows for p in c))
        plan = _EpochPlan(epoch, seed, chunks, offsets)
        self._plans = {k: v for k, v in self._plans.items() if k >= epoch - 1}
        self._plans[epoch] = plan
        return plan

    def __len__(self) -> int:
        """Batches per epoch on this rank (an upper bound when the workflow drops rows)."""
        self._ensure_ready()
        if self.drop_last:
            return self._num_rows // self.batch_size
        return -(-self._num_rows // self.batch_size)

    # -- chunk preparation (runs in the prefetch thread) ----------------------------------------
    def _read_piece(self, piece: _Piece) -> Any:
        units = [self._source.units[i] for i in piece.units]
        df = self._source.read_part(units, self._read_columns)
        full = sum(u.num_rows for u in units)
        if piece.start or piece.stop != full:
            df = backend.slice_rows(df, piece.start, piece.stop)
        return df

    def _prepare_chunk(self, plan: _EpochPlan, k: int) -> _Chunk:
        pieces = plan.chunks[k]
        raw = self._source.stack([self._read_piece(p) for p in pieces])
        expected = plan.offsets[k + 1] - plan.offsets[k]
        if len(raw) != expected:
            raise RuntimeError(f"read {len(raw)} rows for chunk {k}, expected {expected}: did the data change "
                               f"since the loader was created?")
        df = raw
        if self._transform is not None:
            df = self._transform(raw)
            if self._exact and len(df) != len(raw):
                raise ValueError(f"the mapped transform returned {len(df)} rows for {len(raw)} input rows; the "
                                 f"loader needs row-preserving transforms (use a tabprep Workflow with Filter to "
                                 f"drop rows)")
        columns = self._to_columns(df, raw)
        n = len(df)
        perm = None
        first = 0
        if self.shuffle and n > 1:
            perm = np.random.default_rng(plan.seed + [k + 1]).permutation(n)
        if perm is not None:
            perm = self._device.asarray(perm)
        # the first row of this chunk that starts a full batch: on the CPU, batch slices from there
        # on are 64-byte aligned (backend.take_rows), so the TF adapter hands them over without a copy
        first = (-plan.offsets[k]) % self.batch_size if self._exact else 0
        columns = {name: (c if perm is None else take_ragged(c, perm)) if isinstance(c, _RaggedColumn)
                   else backend.take_rows(c, perm, first) for name, c in columns.items()}
        if self.sparse_as_dense:
            for name, m in self._sparse_max.items():
                dense = pad_ragged(columns[name], m)
                columns[name] = backend.take_rows(dense, None, first)
        for c in columns.values():
            if isinstance(c, _RaggedColumn):
                c.row_lengths = c.offsets[1:] - c.offsets[:-1]
                c.host_offsets = backend.to_numpy(c.offsets)
        self._device.synchronize()
        return _Chunk(columns, n)

    def _to_columns(self, df: Any, raw: Any) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        cont = set(self._cont_names)
        for name in self._cat_names + self._cont_names + self._label_names:
            if name in self._passthrough:
                if len(raw) != len(df):
                    raise ValueError(f"label {name!r} is passed through from the raw data, but the workflow "
                                     f"dropped rows: add it to the workflow's output")
                s = raw[name]
            else:
                s = df[name]
            if backend.is_list_series(s):
                leaves, offsets = backend.list_leaves(s)
                values = self._values(leaves, name, name in cont)
                xp = _xp(values)
                out[name] = _RaggedColumn(values, xp.ascontiguousarray(xp.asarray(offsets, dtype=xp.int64)))
                if name not in self._sparse_names:
                    self._sparse_names.append(name)
                    if self.sparse_as_dense and name not in self._sparse_max:
                        raise ValueError(f"list column {name!r} needs sparse_max={{{name!r}: N}} for sparse_as_dense")
            else:
                out[name] = self._values(s, name, name in cont)
        return out

    def _values(self, s: Any, name: str, cont: bool) -> Any:
        """Contiguous numpy / cupy values of a scalar series (float32 for continuous columns).

        Nulls become NaN in float columns and 0 in integer / bool ones (with a warning)."""
        if backend.is_string_series(s):
            raise TypeError(f"column {name!r} holds strings; the loader emits numeric tensors only: encode it with "
                            f"Categorify or HashBucket in the workflow")
        return backend.column_array(s, cont, lambda: self._warn_nulls(name, s))

    def _warn_nulls(self, name: str, s: Any) -> None:
        if name not in self._warned_nulls:
            self._warned_nulls.add(name)
            log.warning("column %r has nulls: emitted as NaN (floats) or 0 (integers); fill them in the workflow "
                        "(FillMissing / Categorify)", name)

    # -- batches -----------------------------------------------------------------------------
    def _reset_iteration(self) -> None:
        if self._gen is not None:
            self._gen.close()
        self._gen = None
        self._gen_next = -1
        if self._stream is not None:
            self._stream.close()
        self._stream = None

    def _advance_epoch(self) -> None:
        self._reset_iteration()
        self.epoch += 1
        self._started = False
        self._done = False

    def batch_at(self, index: int) -> Dict[str, Any]:
        """Batch ``index`` of the current epoch (random access, as Keras' ``__getitem__`` needs).

        Sequential access (``0, 1, 2, ...``) costs one slice per batch. Asking for batch 0
        after the last batch of the epoch was served starts the next epoch (new shuffle).
        Any other jump re-reads and re-transforms the chunk that holds ``index`` (the whole
        epoch up to it when the workflow drops rows); re-asking for the batches of the chunk
        in use is cheap.
        """
        with self._lock:
            self._ensure_ready()
            n = len(self)
            if index < 0:
                index += n
            if not 0 <= index < n:
                raise IndexError(f"batch index {index} out of range: the loader has {n} batches per epoch")
            if index == 0 and self._started and self._done:
                self._advance_epoch()
            if self._stream is None:
                self._stream = _ChunkStream(self, self.plan(self.epoch))
            if self._gen is None or self._gen_next != index:
                if self._gen is not None:
                    self._gen.close()
                self._gen = _iter_batches(self._stream, index, self.batch_size, self.drop_last, self._exact)
            try:
                batch = next(self._gen)
            except StopIteration:
                self._gen = None
                raise IndexError(f"batch {index} does not exist: the workflow dropped rows, so this epoch has only "
                                 f"{index} batches (len() is an upper bound); pass steps_per_epoch to Keras") from None
            self._gen_next = index + 1
            self._started = True
            if index == n - 1:
                self._done = True
            return batch

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        """One epoch of batches (each ``for`` loop over the loader is a new epoch)."""
        self._ensure_ready()
        with self._lock:
            if self._started:
                self._advance_epoch()
            self._started = True
            epoch = self.epoch
        stream = _ChunkStream(self, self.plan(epoch))
        try:
            yield from _iter_batches(stream, 0, self.batch_size, self.drop_last, self._exact)
            self._done = True
        finally:
            stream.close()

    def peek(self) -> Dict[str, Any]:
        """The first batch of the current epoch, without moving to the next epoch."""
        with self._lock:
            started, done = self._started, self._done
            self._done = False
            batch = self.batch_at(0)
            self._started, self._done = started, done
            return batch

    def close(self) -> None:
        """Stop the background thread (it also stops when the loader is garbage-collected)."""
        with self._lock:
            self._reset_iteration()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def __repr__(self) -> str:
        self._ensure_ready()
        return (f"{type(self).__name__}({self._source.describe()}, batch_size={self.batch_size}, rows={self.num_rows}, "
                f"batches={len(self)}, shuffle={self.shuffle}, rank={self.global_rank}/{self.global_size}, "
                f"{self._device.name})")


def _missing(name: str, available: List[str], where: str) -> str:
    close = difflib.get_close_matches(name, available, n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return f"column {name!r} is not in {where}.{hint} Available: {sorted(available)[:50]}"


__all__ = ["DataLoader", "RaggedBatch", "plan_pieces", "shard_rows", "slice_rows", "take_ragged", "pad_ragged"]
