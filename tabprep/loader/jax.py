"""JAX adapter of the online loader (``JaxLoader``; ``Loader`` as in ``merlin.dataloader.jax``).

>>> from tabprep.loader.jax import JaxLoader
>>> train = JaxLoader("train/*.parquet", batch_size=4096, cats=CATS, conts=CONTS, labels=["label"],
...                   shuffle=True, seed=0, sparse_as_dense=True).map(tp.Workflow.load("wf/"))
>>> for x, y in train:
...     params, opt_state = step(params, opt_state, x, y)

Same chunking, shuffling, ``global_size`` / ``global_rank`` sharding (e.g. one loader per
host: ``jax.process_count()`` / ``jax.process_index()``) and online ``map(workflow)`` as
:class:`tabprep.loader.DataLoader`; batches are ``(features, labels)`` of ``jax.Array`` in the
layout of :mod:`tabprep.loader._adapter`. Arrays come through DLPack: on the GPU the cupy batch
arrays become device arrays without a host round trip; on the CPU they are copied into XLA's
buffers (``jax.device_put``; XLA's CPU client keeps its own memory).

``jit`` compiles once per input shape: ragged multi-hot columns (``(values, offsets)``) change
shape every batch and recompile; use ``sparse_as_dense=True`` (padded ``(batch, max_len)``)
and ``drop_last=True`` under ``jit`` so every batch has one shape.

GPU memory: JAX normally claims 75% of the GPU when it starts; importing this module sets
``XLA_PYTHON_CLIENT_PREALLOCATE=false`` first (unless you set it or
``XLA_PYTHON_CLIENT_MEM_FRACTION``), so cuDF keeps room to read and transform chunks.

``devices``: ``None`` (default device), ``"local"`` (all of ``jax.local_devices()``) or a list
of devices: every array is split along its batch axis across them
(``NamedSharding(Mesh(devices, ("batch",)), P("batch"))``), for data-parallel ``jit``. Needs
``batch_size`` divisible by the device count, ``drop_last=True`` and dense list columns.
"""
from __future__ import annotations

import functools
import logging
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import numpy as np

from .. import backend
from ._adapter import FrameworkLoader, share_gpu_with_jax

share_gpu_with_jax()   # before JAX starts its GPU backend: cuDF needs GPU memory too

import jax  # noqa: E402

from .jax_stacked import window_of, window_span  # noqa: E402

log = logging.getLogger(__name__)

@functools.lru_cache(maxsize=None)
def _splitter(keep_dims: bool) -> Callable[[jax.Array], Any]:
    """A jitted split of a 2-D array into its rows (``(rows, 1)`` each with ``keep_dims``): one
    dispatch for all of a block's columns (compiled once per block shape)."""
    return jax.jit(lambda a: _rows(a, keep_dims))


def _rows(a: jax.Array, keep_dims: bool) -> Any:
    """The rows of 2-D ``a`` (traced), each ``(n, 1)`` with ``keep_dims``."""
    return tuple(a[j][:, None] if keep_dims else a[j] for j in range(a.shape[0]))


@functools.lru_cache(maxsize=None)
def _slicer_many(keep_dims: bool, size: int) -> Callable[[Any, Any], Any]:
    """A jitted ``window[:, start:start + size]`` of each of ``windows`` (``starts``: traced scalars;
    both tuples, one per block) split into its rows: the rows of every block's batch slice, in
    order, from ONE dispatch per batch, where one per block cost a dispatch each (compiled once per
    window shapes and batch size)."""
    return jax.jit(lambda windows, starts: tuple(
        col for w, start in zip(windows, starts)
        for col in _rows(jax.lax.dynamic_slice_in_dim(w, start, size, axis=1), keep_dims)))


def chunk_handoff() -> bool:
    """Whether GPU batches are taken from chunk blocks imported into JAX once per chunk
    (``TABPREP_JAX_CHUNK_HANDOFF=0``: a contiguous copy and an import per batch, as before)."""
    return os.environ.get("TABPREP_JAX_CHUNK_HANDOFF", "1") != "0"


class ChunkBlocks:
    """The JAX arrays of the chunk blocks a loader's batches are slices of (:attr:`Batch.spans`):
    the rows of up to 16 batches of a chunk block (:func:`~tabprep.loader.jax_stacked.window_batches`) are imported at once (one device
    copy of the window, then DLPack) and every batch is one jitted slice of that window, where each
    batch was a contiguous copy of its strided slice, an import and a split (three dispatches and
    a copy per block). Windows have one shape whatever the chunk's length (near the chunk's end the
    window starts earlier): the slice compiles once per block width and batch size, where importing
    whole chunks compiled it again for every chunk length, each epoch (~0.2 s a compile on an H200).
    Holds the current window of each block only."""

    def __init__(self) -> None:
        # block position -> (chunk block, window start, window rows, jax window, the window's device
        # or None on the CPU: resolved once per window, where ``Array.devices()`` per batch and block
        # cost the consumer's thread a set each time)
        self._held: Dict[int, Any] = {}

    @staticmethod
    def of(owner: Any) -> "ChunkBlocks":
        """The chunk blocks held for ``owner`` (a loader adapter; made at its first batch)."""
        held = owner.__dict__.get("_chunk_blocks")
        if held is None:
            held = owner._chunk_blocks = ChunkBlocks()
        return held

    def _window(self, i: int, span: Any) -> "tuple[Any, Any]":
        """(the jax window of block ``i`` holding ``span``'s rows, the span's first row in it as the
        slice's start argument: :func:`_start`)."""
        base, a, b = span
        a, b = int(a), int(b)
        held = self._held.get(i)
        if held is None or held[0] is not base or not (held[1] <= a and b <= held[1] + held[2]):
            start, length = window_span(int(base.shape[1]), a, b - a)
            # (the chunk block is held for its identity: a new chunk is a new object)
            window = window_of(base, start, length)
            held = self._held[i] = (base, start, length, window, _window_device(window))
        return held[3], _start(held[4], a - held[1])

    def columns_many(self, spans: Sequence[Any], keep_dims: bool) -> List[List[jax.Array]]:
        """The ``jax.Array`` columns of one batch's blocks (``spans``: ``(position, span)``, one per
        block, all of one batch size), each block's list in order, from one jitted call."""
        held = [self._window(i, span) for i, span in spans]
        size = int(spans[0][1][2]) - int(spans[0][1][1])
        flat = _slicer_many(keep_dims, size)(tuple(w for w, _ in held), tuple(at for _, at in held))
        out, k = [], 0
        for _, span in spans:
            n = int(span[0].shape[0])
            out.append(list(flat[k:k + n]))
            k += n
        return out


#: ``TABPREP_JAX_DEVICE_STARTS=0``: host scalars, as before (for the A/B of ``benchmarks/framework_loaders.py``)
_DEVICE_STARTS = os.environ.get("TABPREP_JAX_DEVICE_STARTS", "1") != "0"


@functools.lru_cache(maxsize=1024)
def _device_start(at: int, device: Any) -> jax.Array:
    return jax.device_put(np.int32(at), device)


def _window_device(window: jax.Array) -> Any:
    """The accelerator ``window`` lies on, or None (on the CPU, across several devices, or with
    device starts off): where :func:`_start` makes its scalars."""
    devices = window.devices()
    if len(devices) != 1 or not _DEVICE_STARTS:
        return None
    device = next(iter(devices))
    return None if device.platform == "cpu" else device


def _start(device: Any, at: int) -> Any:
    """The slice start ``at`` as an int32 scalar on ``device`` (:func:`_window_device`), made once
    per value and device: a host scalar argument is copied to the device at every call (on one H200,
    40 columns in 3 blocks: 0.26 ms a batch against 0.39 ms, ``benchmarks/jax_handoff.py``). With
    no device (the CPU) a host scalar."""
    return np.int32(at) if device is None else _device_start(int(at), device)


def block_columns(block: Any, keep_dims: bool = False, span: Any = None,
                  chunks: Optional[ChunkBlocks] = None, index: int = 0) -> List[jax.Array]:
    """The rows of a batch's block (numpy / cupy ``(columns, rows)``) as ``jax.Array`` columns.

    XLA takes only dense row-major buffers through DLPack, and a batch's slice of a block is
    strided: with ``span`` (the batch's place in its chunk block, :attr:`Batch.spans`) and
    ``chunks``, the chunk block (contiguous) is imported once and the batch is one jitted slice of it
    (:class:`ChunkBlocks`); otherwise the slice is made contiguous (one device copy of the batch),
    handed over once and split in one jitted call, instead of one DLPack import per column (~0.1 ms
    each on an H200). A numpy block's rows go to XLA's CPU client in one ``jax.device_put`` of the
    list of rows. ``index``: the block's position in the batch."""
    if isinstance(block, np.ndarray):
        # on the CPU the block's rows are contiguous already: one device_put of all of them (XLA's
        # CPU client copies each once) costs less than a contiguous copy, a transfer and a split
        return list(jax.device_put([row[:, None] if keep_dims else row for row in block]))
    if _from_chunk(block, span, chunks):
        return chunks.columns_many([(index, span)], keep_dims)[0]   # the chunk block imported once
    xp = backend.array_module(block)
    return list(_splitter(keep_dims)(_to_jax(xp.ascontiguousarray(block))))


def blocks_columns(items: Sequence[Any], keep_dims: bool = False,
                   chunks: Optional[ChunkBlocks] = None) -> List[List[jax.Array]]:
    """:func:`block_columns` of each of a batch's blocks (``items``: ``(position, names, block,
    span)``, :func:`tabprep.loader.blocks.spanned_blocks`), in order. GPU blocks that all lie in
    their chunk blocks: every block's columns from ONE jitted call (:meth:`ChunkBlocks.columns_many`),
    where one call per block cost a dispatch each (Criteo: ids, floats, label)."""
    if items and all(_from_chunk(block, span, chunks) for _, _, block, span in items):
        return chunks.columns_many([(i, span) for i, _, _, span in items], keep_dims)
    return [block_columns(block, keep_dims, span, chunks, i) for i, _, block, span in items]


def _from_chunk(block: Any, span: Any, chunks: Optional[ChunkBlocks]) -> bool:
    """Whether a batch's device block is sliced from its chunk block held in ``chunks``
    (:class:`ChunkBlocks`): the batch has its place in a C-ordered chunk block and the chunk
    hand-off is on (:func:`chunk_handoff`)."""
    return (chunks is not None and span is not None and not isinstance(block, np.ndarray)
            and span[0].flags.c_contiguous and chunk_handoff())


def _to_jax(arr: Any) -> jax.Array:
    """A jax array of a cupy array (DLPack: stays on the GPU, no copy) or of a numpy array
    (``jax.device_put``: XLA's CPU client keeps its own buffers, so this is a copy)."""
    if isinstance(arr, np.ndarray):
        return jax.device_put(arr)
    if arr.data.ptr % _XLA_ALIGN:
        # a view starting inside its buffer (a list column's values of one batch): XLA's GPU
        # kernels refuse buffers not aligned to 16 bytes ("Address of buffer 0 must be a multiple
        # of 10 [hex]", at the first op on the array), so such a view is copied (a fresh buffer is aligned)
        arr = arr.copy()
    return jax.dlpack.from_dlpack(arr)


#: the alignment (bytes) XLA's GPU executables require of an input buffer
_XLA_ALIGN = 16


_INT32 = (-2**31, 2**31 - 1)


def _int32_domain(schema: Any, name: str) -> bool:
    """True when the schema bounds ``name`` within int32 (a domain with both ends)."""
    try:
        domain = (schema[name].properties or {}).get("domain") or {}
    except (KeyError, TypeError, AttributeError):
        return False
    lo, hi = domain.get("min"), domain.get("max")
    return lo is not None and hi is not None and _INT32[0] <= lo and hi <= _INT32[1]


def _check_int32_range(name: str, value: Any) -> None:
    """Refuse 64-bit integers JAX would narrow to int32 (x64 off): one min/max per batch, only
    for 64-bit / uint32 integer columns without a schema bound."""
    values = getattr(value, "values", value)   # a ragged batch: its leaves
    if not _narrowed(values) or not len(values):
        return
    _refuse_beyond_int32(name, int(values.min()), int(values.max()))


def _narrowed(values: Any) -> bool:
    """Integers JAX (x64 off) narrows to int32: 64-bit ones and uint32."""
    dtype = getattr(values, "dtype", None)
    return dtype is not None and dtype.kind in "iu" and (dtype.itemsize >= 8 or dtype == np.uint32)


def _refuse_beyond_int32(name: str, lo: int, hi: int) -> None:
    if lo < _INT32[0] or hi > _INT32[1]:
        bad = hi if hi > _INT32[1] else lo
        raise OverflowError(
            f"column {name!r} holds {bad}, beyond int32, and JAX runs with 64-bit types off "
            f"(jax_enable_x64=False, its default), which would drop the high bits silently. Fix: "
            f"jax.config.update('jax_enable_x64', True) before creating arrays, or map the column "
            f"to small ids (ops.Categorify / ops.HashBucket) in the workflow")


def check_int_ranges(adapter: Any, batch: Any) -> None:
    """Refuse a batch holding integers JAX would narrow: with ``jax_enable_x64`` off (JAX's
    default) int64 becomes int32 by dropping the high bits. Columns whose schema bounds them
    within int32 (a fitted vocabulary's domain: Categorify, HashBucket ids) are not checked; the
    list of the others is kept on ``adapter`` (a framework loader). Nothing with 64-bit types on.

    The columns of the batch's chunk blocks (:attr:`Batch.spans`) are checked once per chunk, all
    rows at once when its first batch arrives (one reduction and one device-to-host copy per block
    instead of two per column and batch: on a GPU each is a wait for the device), so a value beyond
    int32 is refused at the first batch of its chunk; the other columns (list columns, all of a
    joined batch) batch by batch. Checked per column and batch, each unbounded column cost two
    reductions and a copy to the host, a wait for the GPU, per batch."""
    if jax.config.jax_enable_x64:
        return
    names = getattr(adapter, "_jax_unbounded", None)
    if names is None:
        loader = adapter.loader
        names = adapter._jax_unbounded = [
            n for n in loader.cat_names + loader.cont_names + loader.label_names
            if not _int32_domain(adapter.output_schema, n)]
    if names:
        names = _check_chunk(adapter, batch, names)
    for name in names:
        _check_int32_range(name, batch[name])


def _check_chunk(adapter: Any, batch: Any, names: List[str]) -> List[str]:
    """Check ``names`` that lie in the batch's chunk blocks over the whole chunk (once per chunk);
    returns the names left to check in the batch (list columns, or all of a joined batch)."""
    spans = getattr(batch, "spans", None) or ()
    blocks = getattr(batch, "blocks", None) or ()
    if not spans or len(spans) != len(blocks) or getattr(batch, "joined", False):
        return names
    bases = tuple(span[0] for span in spans)
    done, left = getattr(adapter, "_jax_checked_chunk", ((), None))
    if left is not None and len(done) == len(bases) and all(x is y for x, y in zip(done, bases)):
        return left   # the chunk checked at its first batch: the names left, as then
    wanted = set(names)
    for (block_names, _), base in zip(blocks, bases):
        rows = [j for j, n in enumerate(block_names) if n in wanted]
        if not rows or not _narrowed(base) or not base.shape[1]:
            continue
        part = base if len(rows) == len(block_names) else base[rows]
        xp = backend.array_module(part)
        lo, hi = backend.to_numpy(xp.stack([part.min(axis=1), part.max(axis=1)]))   # one copy to the host
        for j, a, b in zip(rows, lo, hi):
            _refuse_beyond_int32(block_names[j], int(a), int(b))
    in_blocks = {n for block_names, _ in blocks for n in block_names}
    left = [n for n in names if n not in in_blocks]
    # the chunk's blocks (as StackedBatches holds them) and the names left to check batch by batch,
    # the same for every batch of the chunk (the same blocks): kept, not made again at every batch
    # (about 10 us of the consumer's CPU a batch on an H200: benchmarks/loader_consumer.py --time-calls)
    adapter._jax_checked_chunk = (bases, left)
    return left


class JaxLoader(FrameworkLoader):
    """Batches of a (transformed) dataset as ``jax.Array``.

    Arguments are those of :class:`tabprep.loader.torch.TorchAsyncItr` (``cats``, ``conts``,
    ``labels``, ``batch_size``, ``shuffle``, ``seed``, ``parts_per_chunk``, ``global_size``,
    ``global_rank``, ``drop_last``, ``sparse_names``, ``sparse_max``, ``sparse_as_dense``,
    ``sparse_format``, ``buffer_size``, ``device``, ``storage_options``...), plus ``devices`` (see
    the module doc) and ``stacked``: batches as ``({"cats": (B, n_cats), "conts": (B, n_conts),
    <list columns>...}, labels)`` with labels ``(B,)`` for one, ``(B, n)`` for several
    (:mod:`tabprep.loader.stacked`), made per chunk by one jitted call per group and up to 16
    batches on a GPU (one batch on the CPU; :mod:`tabprep.loader.jax_stacked`): the fast layout for
    JAX (default False: one array per column).
    """

    def __init__(self, dataset: Any, batch_size: int = 1, cats: Optional[Sequence[str]] = None,
                 conts: Optional[Sequence[str]] = None, labels: Union[None, str, Sequence[str]] = None,
                 shuffle: bool = False, devices: Union[None, str, Sequence[Any]] = None, drop_last: bool = False,
                 sparse_as_dense: bool = False, seed_fn: Optional[Callable[[], int]] = None, **kwargs: Any) -> None:
        super().__init__(dataset, batch_size, cats=cats, conts=conts, labels=labels, shuffle=shuffle,
                         drop_last=drop_last, sparse_as_dense=sparse_as_dense, seed_fn=seed_fn, **kwargs)
        self.sharding = None
        if devices is not None:
            devs = jax.local_devices() if devices == "local" else list(devices)
            if not devs:
                raise ValueError("devices is empty")
            if batch_size % len(devs):
                raise ValueError(f"batch_size={batch_size} must be a multiple of the {len(devs)} devices it is "
                                 f"split across")
            if not drop_last:
                raise ValueError("sharding batches across devices needs drop_last=True (the last batch of an "
                                 "epoch is shorter and would not split evenly)")
            mesh = jax.sharding.Mesh(np.array(devs), ("batch",))
            self.sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("batch"))
            self.devices = devs

    def _convert_on_device(self, batch: Any) -> Any:
        check_int_ranges(self, batch)
        return super()._convert_on_device(batch)

    def _stacked_groups(self, batch: Any) -> Any:
        # per chunk: one jitted call stacks the chunk's next full batches (tabprep.loader.jax_stacked)
        from .jax_stacked import StackedBatches

        if getattr(self, "_stacked", None) is None:
            self._stacked = StackedBatches(squeeze_label=True)
        loader = self.loader
        groups, arrays = self._stacked.convert(batch, loader.cat_names, loader.cont_names, loader.label_names,
                                               loader.batch_size)
        if self.sharding is not None:
            arrays = tuple(jax.device_put(a, self.sharding) for a in arrays)
        return groups, arrays

    def _blocks_columns(self, items: List[Any]) -> List[List[jax.Array]]:
        if self.sharding is None:   # (sharded: each column put on the mesh, _block_columns)
            return blocks_columns(items, chunks=ChunkBlocks.of(self))
        return super()._blocks_columns(items)

    def _block_columns(self, block: Any, span: Any = None, index: int = 0) -> List[jax.Array]:
        cols = block_columns(block, span=span, chunks=ChunkBlocks.of(self), index=index)
        if self.sharding is not None:
            cols = [jax.device_put(c, self.sharding) for c in cols]
        return cols

    def _array(self, arr: Any) -> jax.Array:
        out = _to_jax(arr)
        if self.sharding is not None:
            out = jax.device_put(out, self.sharding)
        return out

    def _list_column(self, name: str, value: Any) -> Any:
        # (a list column padded with sparse_as_dense comes from the core 2-D: one reaching here is ragged)
        if self.sharding is not None:
            raise ValueError(f"list column {name!r} is ragged and cannot be split across devices: pass "
                             f"sparse_as_dense=True, with {name!r} in sparse_names if you give sparse_names (and "
                             f"sparse_max as needed)")
        return super()._list_column(name, value)


#: ``merlin.dataloader.jax.Loader``'s name
Loader = JaxLoader

__all__ = ["JaxLoader", "Loader"]
