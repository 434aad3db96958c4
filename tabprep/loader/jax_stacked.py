"""Stacked JAX batches made per chunk (``JaxLoader(stacked=True)``, Keras on JAX).

Each ``jax.Array`` a loader hands out costs Python time, and so does each jitted call (a slice
per batch was most of the JAX loaders' hand-off on an H200, issue 33). Here the work is per
chunk: when a batch of a new chunk arrives (its chunk blocks, :attr:`Batch.spans`, are new
objects), the chunk's blocks are imported into JAX once (DLPack from cupy, no copy; on the CPU
one ``jax.device_put`` copy of the chunk), and ONE jitted call per group (cats, conts, labels)
makes that group (:mod:`tabprep.loader.stacked`: transpose, column order, dtype cast) for the
next ``count`` full batches of the chunk, ``count`` at most :data:`GROUP_BATCHES` on a GPU (the
chunk's batches spread over calls of equal size; :data:`CPU_GROUP_BATCHES`, 1, on XLA's CPU
client, whose transposes are then fused). The following batches of the chunk are handed out as
they are. A batch joined from two chunks (no spans) and a chunk's short last batch take one call
per group each.

Compiles: one per (group layout, chunk length, batch size) for the chunk calls, shared by all
chunks of that length whatever the first batch's offset in the chunk (the starts are traced).

Memory: the current chunk's imported blocks (on the GPU the chunk's own memory, kept alive a
chunk longer; on the CPU an XLA copy of the chunk's blocks) and at most ``count - 1`` batches'
stacked arrays not yet handed out (``GROUP_BATCHES * batch_size * row bytes``: 16 x 65,536 rows x
160 bytes = 168 MB on Criteo's 26 + 13 + 1 four-byte columns); both are dropped when the next chunk
arrives.
"""
from __future__ import annotations

import functools
import os
from typing import Any, Dict, List, Sequence, Tuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import backend
from .stacked import Group, batch_blocks, layout_of

#: most full batches stacked by one call per chunk and group on a GPU
GROUP_BATCHES = 16
#: the same on XLA's CPU client, whose layout assignment makes a jitted function with several
#: transposed outputs write each twice (a transpose, then a copy into the output's layout): one
#: batch per call there (a fused transpose each; measured 2.6 ms against 5.9-10 ms a batch of
#: Criteo's 26 + 13 columns with several outputs)
CPU_GROUP_BATCHES = 1


def _group_fn(group: Group, size: int, used: Sequence[int]) -> Any:
    """``(blocks, start) -> array``: ``group`` of the batch of ``size`` rows at ``start`` (traced),
    ``blocks`` being the blocks ``used`` lists, in that order."""
    dtype = jax.dtypes.canonicalize_dtype(np.dtype(group.dtype))   # int64 -> int32 with x64 off
    runs = [(list(used).index(b), r0, r1) for b, r0, r1 in group.runs]

    def one(blocks: Sequence[jax.Array], start: Any) -> jax.Array:
        parts = [jax.lax.dynamic_slice(blocks[b], (np.int32(r0), start), (r1 - r0, size)).astype(dtype)
                 for b, r0, r1 in runs]
        a = parts[0] if len(parts) == 1 else jnp.concatenate(parts, axis=0)
        return a[0] if group.squeeze else a.T

    return one


@functools.lru_cache(maxsize=256)
def _stacker(group: Group, size: int, count: int) -> Any:
    """A jitted ``(blocks, starts) -> arrays``: ``group`` of ``count`` batches of ``size`` rows
    starting at ``starts[k]`` in the blocks (those of ``group.runs``, in :func:`_used` order)."""
    one = _group_fn(group, size, _used(group))

    def stack(blocks: Sequence[jax.Array], starts: jax.Array) -> Tuple[jax.Array, ...]:
        return tuple(one(blocks, starts[k]) for k in range(count))

    return jax.jit(stack)


@functools.lru_cache(maxsize=256)
def _stacker_all(groups: Tuple[Group, ...], nblocks: int, size: int, count: int) -> Any:
    """All ``groups`` of ``count`` batches in one jitted call (``TABPREP_JAX_STACKED_ONE_CALL=1``):
    ``(blocks, starts) -> arrays``, batch-major (the groups of batch 0, then of batch 1...)."""
    fns = [_group_fn(g, size, range(nblocks)) for g in groups]

    def stack(blocks: Sequence[jax.Array], starts: jax.Array) -> Tuple[jax.Array, ...]:
        return tuple(fn(blocks, starts[k]) for k in range(count) for fn in fns)

    return jax.jit(stack)


def one_call() -> bool:
    """Whether a chunk's groups are stacked by one jitted call instead of one per group
    (``TABPREP_JAX_STACKED_ONE_CALL=1``; default 0): a third of the calls, but XLA may write each
    transposed output twice when a function has several (its CPU client did). For measuring on a GPU."""
    return os.environ.get("TABPREP_JAX_STACKED_ONE_CALL", "0") == "1"


def _used(group: Group) -> Tuple[int, ...]:
    """The blocks ``group`` takes rows of, in order of first use."""
    return tuple(dict.fromkeys(b for b, _, _ in group.runs))


def _import(arr: Any) -> jax.Array:
    """A 2-D numpy / cupy block as a jax array (numpy: a copy into XLA's buffers; cupy: DLPack,
    no copy, after a contiguous copy only where the block is strided)."""
    if isinstance(arr, np.ndarray):
        return jax.device_put(np.ascontiguousarray(arr))
    if not arr.flags.c_contiguous:
        return jax.dlpack.from_dlpack(backend.array_module(arr).ascontiguousarray(arr))
    return jax.dlpack.from_dlpack(arr)


def _run(groups: Tuple[Group, ...], arrays: Sequence[jax.Array], size: int, starts: Sequence[int],
         together: bool = False) -> List[tuple]:
    """The groups of the batches of ``size`` rows at ``starts`` of ``arrays``: one call per group
    (one call for all with ``together``)."""
    first = np.asarray(starts, dtype=np.int32)
    if together:
        flat = _stacker_all(groups, len(arrays), size, len(starts))(tuple(arrays), first)
        n = len(groups)
        return [tuple(flat[k * n:(k + 1) * n]) for k in range(len(starts))]
    per_group = [_stacker(g, size, len(starts))(tuple(arrays[b] for b in _used(g)), first) for g in groups]
    return list(zip(*per_group))


def _group_size(rows: int, batch_size: int, cpu: bool = False) -> int:
    """Batches per chunk call: the chunk's full batches spread evenly over calls of at most
    :data:`GROUP_BATCHES` (:data:`CPU_GROUP_BATCHES` on XLA's CPU client); it depends on the
    chunk's length only, so one compile per length."""
    most = max(rows // batch_size, 1)
    calls = -(-most // max(CPU_GROUP_BATCHES if cpu else GROUP_BATCHES, 1))
    return -(-most // calls)


class StackedBatches:
    """Per loader: the current chunk's blocks in JAX and its stacked batches not yet handed out."""

    def __init__(self, squeeze_label: bool) -> None:
        self.squeeze_label = squeeze_label
        self._bases: Tuple[Any, ...] = ()          # the chunk blocks (numpy / cupy), compared by identity
        self._arrays: Tuple[jax.Array, ...] = ()   # their jax arrays
        self._pending: Dict[int, tuple] = {}       # first row in the chunk -> the groups of that batch

    def convert(self, batch: Any, cats: Sequence[str], conts: Sequence[str], labels: Sequence[str],
                batch_size: int) -> Tuple[Tuple[Group, ...], tuple]:
        """The stacked groups of ``batch`` (a loader :class:`Batch`) and their jax arrays."""
        blocks = batch_blocks(batch, list(cats) + list(conts) + list(labels))
        groups = layout_of(blocks, cats, conts, labels, self.squeeze_label)
        if not groups:
            return groups, ()
        spans = list(getattr(batch, "spans", None) or ())
        if spans and len(spans) == len(blocks) and not getattr(batch, "joined", False):
            a, b = int(spans[0][1]), int(spans[0][2])
            self._hold(tuple(s[0] for s in spans))
            if b - a != batch_size:   # a chunk's short last batch
                return groups, _run(groups, self._arrays, b - a, [a])[0]
            out = self._pending.pop(a, None)
            if out is None:
                out = self._chunk_batches(groups, a, batch_size)
            return groups, out
        arrays = [_import(arr) for _, arr in blocks]   # a joined batch: its own blocks, one call
        return groups, _run(groups, arrays, int(blocks[0][1].shape[1]), [0])[0]

    def _hold(self, bases: Tuple[Any, ...]) -> None:
        """Import a new chunk's blocks (dropping the previous chunk's and its pending batches)."""
        if len(bases) == len(self._bases) and all(x is y for x, y in zip(bases, self._bases)):
            return
        self._pending = {}
        self._bases, self._arrays = (), ()
        self._arrays = tuple(_import(base) for base in bases)
        self._bases = bases

    def _chunk_batches(self, groups: Tuple[Group, ...], first: int, batch_size: int) -> tuple:
        """The groups of the full batches from row ``first`` of the chunk on (up to the call's
        count; the starts past the chunk's last full batch repeat it), keeping all but the first."""
        rows = int(self._bases[0].shape[1])
        cpu = all(d.platform == "cpu" for d in self._arrays[0].devices())
        count = _group_size(rows, batch_size, cpu)
        starts = list(range(first, rows - batch_size + 1, batch_size))[:count]
        starts += [starts[-1]] * (count - len(starts))
        outs = _run(groups, self._arrays, batch_size, starts, together=one_call())
        self._pending = {s: o for s, o in zip(starts[1:], outs[1:])}
        return outs[0]

    def clear(self) -> None:
        """Drop the chunk and its pending batches (e.g. at the end of an epoch)."""
        self._bases, self._arrays, self._pending = (), (), {}


__all__ = ["StackedBatches", "GROUP_BATCHES", "CPU_GROUP_BATCHES"]
