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
   grouped into chunks of up to ``parts_per_chunk`` pieces' worth of rows (``parts_per_chunk *
   buffer_size`` rows: several small files' pieces where files are smaller than a piece). A chunk
   is read (on the GPU its pieces in one parquet read), concatenated, transformed by the
   attached workflow (``Workflow.transform_frame``: pandas on the CPU, cuDF on the GPU) and
   converted once to numpy / cupy arrays, shuffled with a seeded permutation (drawn on the host
   while the chunk is read) into one 2-D block per role and dtype (:mod:`~tabprep.loader.blocks`).
5. **Batches**: slices (views) of the chunk's blocks, which on the CPU are laid out so that
   batch slices start on 64-byte boundaries (TensorFlow then takes them without a copy); the
   tail of one chunk is joined to the head of the next, so every batch but the last has exactly
   ``batch_size`` rows and an epoch has ``ceil(rows / batch_size)`` batches (``floor`` with
   ``drop_last``).

Background threads (``threads``, default up to 2 on the CPU, 2 on the GPU) prepare the next
chunks while the consumer batches the current one (``prefetch`` chunks ahead, default 1); an
exception raised there is re-raised in the consumer. Memory held at once is about
``max(prefetch, threads) + 1`` chunks. On the CPU an epoch reuses the memory of chunks whose
batches are all gone for its next chunks (:class:`tabprep.backend.batch_arrays.BufferPool`: fresh
memory costs a page fault per page on first write); batches the caller keeps keep their memory.

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

Modules, by stage: :mod:`~tabprep.loader.sources` (units, reading),
:mod:`~tabprep.loader.planning` (pieces, shards, the seeded orders of pieces and rows),
:mod:`~tabprep.loader.chunks` (a chunk's read, transform, arrays and shuffle),
:mod:`~tabprep.loader.blocks` (2-D blocks, batch slices), :mod:`~tabprep.loader.prefetch` (background
threads, batches), :mod:`~tabprep.loader.ragged` (batch containers, list columns); this module
holds :class:`DataLoader` and re-exports their names. Backend differences (pandas / cuDF, numpy /
cupy, host / device) are :mod:`tabprep.backend` calls.
"""
from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Union

import numpy as np

from .. import backend
from .._util import did_you_mean
from .._warn import warn_once
from ..io.planning import check_shard
from ..schema import Schema, Tags
from .arguments import buffer_fraction_or_rows, device_choice, require_gpu, whole, whole_rows
from .blocks import Batch, build_blocks  # noqa: F401 - re-exported
from .chunks import _ChunkPreparation
from .merlin_calls import MerlinLoaderCalls
from .planning import (PERMUTATIONS, _EpochPlan, chunk_permutation, merge_plans, plan_epoch, plan_pieces,  # noqa: F401
                       rank_pieces, shard_rows, slice_rows, _trim_piece)
from .prefetch import _ChunkStream, _iter_batches, _Prefetcher, _weak_producer  # noqa: F401 - re-exported
from .ragged import (ALIGN, PAD_ID, RaggedBatch, _Chunk, _concat_batches, _RaggedColumn, _row_ids,  # noqa: F401
                     _slice, _take_aligned, _xp, pad_ragged, take_ragged)
from .nested import (check_fixed, dense_size, is_nested_series, leaves_are_integers, nested_column,  # noqa: F401
                     pad_chunk_column)
from .sources import (FRAME_UNIT_ROWS, reader_cpu, _DaskSource, _FrameSource, _is_frame, _make_source,  # noqa: F401
                      _ParquetSource, _Piece, _Source, _Unit, reader_options)

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------
# the loader
# ---------------------------------------------------------------------------------------
class DataLoader(MerlinLoaderCalls, _ChunkPreparation):
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
            dataset's schema). Continuous float columns are emitted as float32; integer columns
            (scalar or list, categorical or continuous) and labels keep their dtype, as in
            merlin-dataloader 23.08.
        engine: ``"parquet"`` or ``"csv"`` when it cannot be told from the file names.
        shuffle: shuffle pieces and rows (default True, as in NVTabular).
        seed: seed of the shuffles (default: a random one drawn once, so epochs differ but a
            loader cannot be replayed); the same seed gives the same batches on CPU and GPU.
        seed_fn: called at the start of each epoch for that epoch's seed (overrides ``seed``);
            NVTabular's hook for seeds agreed across Horovod ranks.
        buffer_size: size of one piece: a float < 1 is a fraction of the device's memory (GPU)
            or of the RAM (CPU), estimated from the uncompressed parquet size of the columns
            read; a number >= 1 is a row count. Default 0.1. A chunk holds up to ``parts_per_chunk``
            pieces' worth of rows (more pieces where files are smaller than a piece, which never
            spans files); pieces are whole parquet row groups (a bigger row group is a piece alone).
            Memory in use is about ``max(prefetch, threads) + 1`` chunks (3 by default: two
            threads; on a GPU short of memory, pass ``threads=1`` or a smaller ``buffer_size``),
            each a few times its input size (raw + transformed frame + arrays).
        device: ``None`` (GPU when cuDF is usable), ``"cpu"``, or a GPU index.
        parts_per_chunk: pieces' worth of rows (``buffer_size``) read, concatenated and shuffled
            together per chunk.
        reader_kwargs: passed to :class:`tabprep.Dataset` (e.g. csv options).
        storage_options: options of the file system of URL inputs (``s3://``, ``gs://``...), as in
            pandas and dask (``key``/``secret``, ``endpoint_url``...; default: the environment's
            credentials). Stored verbatim and passed to the :class:`tabprep.Dataset` the loader
            builds; ``reader_kwargs={"storage_options": ...}`` works too, and giving different
            values both ways is a ``ValueError``. A :class:`tabprep.Dataset` input reads with its own.
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
            shuffle), handed over in order. Default: 2 (1 on a one-core CPU): numpy, arrow
            and the hashing release the GIL, pandas' bookkeeping does not.
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
                 prefetch: int = 1, threads: Optional[int] = None,
                 storage_options: Optional[Dict[str, Any]] = None) -> None:
        self.batch_size = whole_rows(batch_size)
        self.shuffle = bool(shuffle)
        self.seed_fn = seed_fn
        self.seed = int(np.random.SeedSequence().entropy % (2 ** 63)) if seed is None else whole("seed", seed, 0)
        self.buffer_size = buffer_fraction_or_rows(buffer_size)
        self.parts_per_chunk = whole("parts_per_chunk", parts_per_chunk, 1)
        self.global_size = 1 if global_size is None else whole("global_size", global_size, 1)
        self.global_rank = 0 if global_rank is None else whole("global_rank", global_rank, 0)
        check_shard(self.global_size, self.global_rank)   # at once, not at the first batch
        self.drop_last = bool(drop_last)
        if self.global_size > 1:   # once per process: every rank's loader would repeat it
            warn_once("loader sharding",
                      f"DataLoader(global_size={self.global_size}): each rank reads an equal contiguous range of the "
                      f"rows in file order (every rank gets the same number of batches), where NVTabular 23.08 gives "
                      f"each rank whole partitions, so ranks read other rows there (docs/migration.md, 'Sharding'; "
                      f"drop_last=True also drops the N % global_size leftover rows)", stacklevel=2)
        self.sparse_as_dense = bool(sparse_as_dense)
        self.prefetch = whole("prefetch", prefetch, 0)
        self._sparse_names_arg = list(sparse_names) if sparse_names is not None else None
        self._sparse_max_arg = dict(sparse_max or {})
        self._names_arg = (None if label_names is None else list(label_names),
                           None if cat_names is None else list(cat_names),
                           None if cont_names is None else list(cont_names))
        cpu, self.device = device_choice(device)
        reader_kwargs, cpu = reader_cpu(reader_kwargs, cpu, device)
        if cpu is False:
            require_gpu(device)
        self.storage_options = storage_options
        #: reader_kwargs with storage_options merged in (the framework loaders read their raw schema with them)
        self._reader_kwargs = reader_options(paths_or_dataset, reader_kwargs, storage_options)
        self._source = _make_source(paths_or_dataset, cpu, engine, self._reader_kwargs, schema)
        self.cpu = self._source.cpu
        self._device = backend.compute_device(self.cpu, self.device)
        # on a GPU, RMM's default cudaMalloc per temporary doubled the online transform's time
        self._device.prepare_allocator()
        if threads is None:
            threads = self._device.default_threads()
        self.threads = whole("threads", threads, 1)
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
        self._gen_views = True
        self._warned_nulls: set = set()
        self._warned_narrowing: set = set()
        self._warned_truncation: set = set()
        self._ready = False
        #: epochs streamed per iteration (``epochs(n)``), and the data epoch the first one is
        self._epochs = 1
        self._epoch_base = 0

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
                if workflow._output_schema is None and self._source.schema is not None:
                    # stateless ops only (HashBucket...): fitted, but never bound to a schema
                    workflow.bind_schema(self._source.schema, self._source.describe())
                self._transform = workflow.transform_frame
                self._exact = not any(op.changes_rows for op in workflow.ops)
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

    def set_batch_size(self, batch_size: int) -> None:
        """Change the rows per batch (NVTabular's settable ``batch_size``); the current epoch's
        iteration stops and the next one uses the new size."""
        batch_size = whole_rows(batch_size)
        with self._lock:
            self._reset_iteration()
            self.batch_size = batch_size
            self._plans = {}

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
            unknown = [n for n in self._sparse_names_arg if n not in names]
            if unknown:   # (the list column was then left unpadded, and numpy failed on it)
                raise KeyError(f"sparse_names {unknown} are not among the loader's columns {names}")
            self._sparse_names = [n for n in self._sparse_names_arg if n in names]
        elif schema is not None:
            self._sparse_names = [n for n in names if n in schema and schema[n].is_list]
        else:
            self._sparse_names = []
        self._sparse_max: Dict[str, Any] = {}
        if self.sparse_as_dense:
            for n in self._sparse_names:
                # an int per flat list column; per level for a nested one (None: its fixed shape, from the data)
                self._sparse_max[n] = dense_size(n, self._sparse_max_arg.get(n), schema)

    # -- planning --------------------------------------------------------------------------
    def _target_piece_rows(self) -> int:
        if self.buffer_size >= 1:
            return int(self.buffer_size)
        mem = self._device.total_memory() * self.buffer_size
        return max(int(mem / self._source.row_bytes(self._read_columns)), 1)

    def _plan_rank(self) -> None:
        self._piece_rows = self._target_piece_rows()
        self.dataset_rows, self._pieces = rank_pieces(self._source.units, self._piece_rows, self.global_size,
                                                      self.global_rank, self.drop_last)
        self._num_rows = sum(p.num_rows for p in self._pieces)
        self._plans = {}
        log.debug("loader plan: %d rows, target %d rows/piece, rank %d/%d gets %d rows in %d pieces",
                  self.dataset_rows, self._piece_rows, self.global_rank, self.global_size, self._num_rows,
                  len(self._pieces))

    def _data_plan(self, epoch: int) -> _EpochPlan:
        """The chunks of data epoch ``epoch`` (one pass over this rank's rows)."""
        # buffer_size in rows plans alike on every device (CPU == GPU batches); a share of memory
        # is device-dependent anyway, and the host does not gather small files (see HostDevice)
        gather = self.buffer_size >= 1 or self._device.gathers_small_files
        return plan_epoch(self._pieces, epoch, self._epoch_seed(epoch), self.shuffle, self.parts_per_chunk,
                          self._piece_rows if gather else None)

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
        if self._epochs == 1 and self._epoch_base == 0:
            plan = self._data_plan(epoch)
        else:   # epochs(n): iteration `epoch` streams data epochs first .. first + n - 1
            first = self._epoch_base + epoch * self._epochs
            plan = merge_plans([self._data_plan(first + j) for j in range(self._epochs)], epoch)
        self._plans = {k: v for k, v in self._plans.items() if k >= epoch - 1}
        self._plans[epoch] = plan
        return plan

    def __len__(self) -> int:
        """Batches per epoch on this rank (an upper bound when the workflow drops rows); per
        iteration of ``epochs(n)`` passes, ``ceil(n * rows / batch_size)``."""
        self._ensure_ready()
        rows = self._num_rows * self._epochs
        if self.drop_last:
            return rows // self.batch_size
        return -(-rows // self.batch_size)

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

    def batch_at(self, index: int, views: bool = True) -> Dict[str, Any]:
        """Batch ``index`` of the current epoch (random access, as Keras' ``__getitem__`` needs).
        ``views=False``: without its block columns' views (framework adapters; see
        :func:`~tabprep.loader.blocks.cut`).

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
            if self._gen is None or self._gen_next != index or self._gen_views != views:
                if self._gen is not None:
                    self._gen.close()
                self._gen = _iter_batches(self._stream, index, self.batch_size, self.drop_last, self._exact, views)
                self._gen_views = views
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
        return self.iterate()

    def iterate(self, views: bool = True) -> Iterator[Dict[str, Any]]:
        """:meth:`__iter__`; ``views=False``: batches without their block columns' views (what a
        framework adapter, which hands the blocks over, reads: :func:`~tabprep.loader.blocks.cut`)."""
        self._ensure_ready()
        with self._lock:
            if self._started:
                self._advance_epoch()
            self._started = True
            epoch = self.epoch
        stream = _ChunkStream(self, self.plan(epoch))
        try:
            yield from _iter_batches(stream, 0, self.batch_size, self.drop_last, self._exact, views)
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
    hint = did_you_mean(name, available, sep=", ", capitalize=True)
    hint = f" {hint}" if hint else ""
    return f"column {name!r} is not in {where}.{hint} Available: {sorted(available)[:50]}"


__all__ = ["DataLoader", "RaggedBatch", "plan_pieces", "shard_rows", "slice_rows", "take_ragged", "pad_ragged"]
