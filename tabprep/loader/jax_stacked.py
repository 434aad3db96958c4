"""Stacked JAX batches made per chunk (``JaxLoader(stacked=True)``, Keras on JAX).

Each ``jax.Array`` a loader hands out costs Python time, and so does each jitted call (a slice
per batch was most of the JAX loaders' hand-off on an H200, issue 33). Here the work is per
group of batches: for the next ``count`` full batches of a chunk (:data:`GROUP_BATCHES` on a GPU,
:data:`CPU_GROUP_BATCHES` on XLA's CPU client, whose transposes are then fused), the rows they
span in each chunk block (:attr:`Batch.spans`) lie in a window of the block imported into JAX
(:func:`window_batches`: up to :data:`WINDOW_BATCHES` batches' rows, one device copy, then
DLPack; on the CPU one ``jax.device_put`` copy, serving 16 one-batch calls), and ONE jitted call
per group (cats, conts, labels) makes that group
(:mod:`tabprep.loader.stacked`: transpose, column order, dtype cast) for those batches, which are
then handed out as they are. A batch joined from two chunks (no spans) and a chunk's short last
batch take one call per group each.

Compiles: one per (group layout, window length, batches per call, batch size), whatever the
chunk's length: windows and calls are 1, 2, 4, 8 or 16 batches long (near a chunk's end the
window starts earlier, inside the chunk). Before,
the whole chunk block went into the jitted call, and chunks differ in length (pieces of files of
any size, shuffled into different chunks each epoch): every epoch compiled again, about 0.2 s per
compile on an H200, most of the JAX loaders' time with the Criteo workflow online (15 compiles
an epoch of 20M rows, ``benchmarks/framework_loaders.py --gpu --loaders jax --stacked``).

Memory: one window per block (up to 16 batches' rows) and at most ``count - 1`` batches'
stacked arrays not yet handed out (``GROUP_BATCHES * batch_size * row bytes``: 16 x 65,536 rows x
160 bytes = 168 MB on Criteo's 26 + 13 + 1 four-byte columns, twice: the window and the batches);
both are dropped when the next chunk arrives.
"""
from __future__ import annotations

import functools
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


def window_start(first: int, length: int, rows: int) -> int:
    """Where the window of ``length`` rows that holds rows ``first`` on starts in a chunk block of
    ``rows`` rows: at ``first``, or earlier near the block's end so that every window of a block
    longer than ``length`` has ``length`` rows (one shape: one compile)."""
    return max(0, min(int(first), int(rows) - int(length)))


def window_span(rows: int, first: int, batch_size: int, count: int = 1) -> Tuple[int, int]:
    """``(start, length)`` of the window of a chunk block of ``rows`` rows for ``count`` batches of
    ``batch_size`` rows from row ``first`` on: :func:`window_batches` batches' rows, from
    :func:`window_start`."""
    length = window_batches(rows, batch_size, count) * batch_size
    return window_start(first, length, rows), length


def window_of(base: Any, start: int, length: int) -> jax.Array:
    """Rows ``start:start + length`` of a 2-D numpy / cupy chunk block (``(columns, rows)``) as a
    jax array: a contiguous copy of the window (also 16-byte aligned, as XLA's GPU kernels need),
    imported through DLPack (numpy: ``jax.device_put``). The whole block is imported without a copy."""
    rows = int(base.shape[1])
    if start == 0 and length >= rows:
        return _import(base)
    part = base[:, start:start + length]
    if isinstance(part, np.ndarray):
        # the strided view as it is: XLA's CPU client copies it into its own buffer (a window of 26 x
        # 262,144 int64: 6 ms, against 25 ms made contiguous first)
        return jax.device_put(part)
    return jax.dlpack.from_dlpack(part.copy())   # (cupy: C order, a fresh aligned buffer)


def _run(groups: Tuple[Group, ...], arrays: Sequence[jax.Array], size: int, starts: Sequence[int]) -> List[tuple]:
    """The groups of the batches of ``size`` rows at ``starts`` of ``arrays``: one call per group."""
    first = np.asarray(starts, dtype=np.int32)
    per_group = [_stacker(g, size, len(starts))(tuple(arrays[b] for b in _used(g)), first) for g in groups]
    return list(zip(*per_group))


def _pow2_at_most(n: int) -> int:
    """The largest power of 2 at most ``n`` (1 for ``n`` below 2)."""
    return 1 << (max(1, int(n)).bit_length() - 1)


def _group_size(rows: int, batch_size: int, cpu: bool = False) -> int:
    """Batches per call: the largest power of 2 up to :data:`GROUP_BATCHES` (:data:`CPU_GROUP_BATCHES`
    on XLA's CPU client) and the chunk's full batches. A chunk's last call repeats its last batch's
    start where fewer batches are left, so the calls of all chunks share a few shapes (1, 2, 4, 8, 16
    batches), whatever their lengths."""
    return _pow2_at_most(min(max(rows // batch_size, 1), CPU_GROUP_BATCHES if cpu else GROUP_BATCHES))


def window_batches(rows: int, batch_size: int, count: int = 1) -> int:
    """Batches of rows per window of a chunk block of ``rows`` rows: the largest power of 2 up to
    :data:`WINDOW_BATCHES` and the chunk's full batches, at least ``count`` (the batches of one call).
    A few shapes whatever the chunks' lengths: one compile each."""
    return max(int(count), _pow2_at_most(min(max(rows // batch_size, 1), WINDOW_BATCHES)))


#: batches of rows a chunk block is imported into JAX by at a time (:func:`window_of`): on the CPU,
#: where each call makes one batch, a window serves 16 calls (its copy costs what importing the whole
#: chunk did, row for row)
WINDOW_BATCHES = 16


class StackedBatches:
    """Per loader: the current chunk's blocks in JAX and its stacked batches not yet handed out."""

    def __init__(self, squeeze_label: bool) -> None:
        self.squeeze_label = squeeze_label
        self._bases: Tuple[Any, ...] = ()          # the chunk blocks (numpy / cupy), compared by identity
        self._window: Any = None                   # (first row, rows, jax arrays) of the current window of the blocks
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
            if b - a != batch_size:   # a chunk's short last batch: its own rows (one shape an epoch)
                return groups, _run(groups, [window_of(base, a, b - a) for base in self._bases], b - a, [0])[0]
            out = self._pending.pop(a, None)
            if out is None:
                out = self._chunk_batches(groups, a, batch_size)
            return groups, out
        arrays = [_import(arr) for _, arr in blocks]   # a joined batch: its own blocks, one call
        return groups, _run(groups, arrays, int(blocks[0][1].shape[1]), [0])[0]

    def _hold(self, bases: Tuple[Any, ...]) -> None:
        """Take a new chunk's blocks (dropping the previous chunk's pending batches)."""
        if len(bases) == len(self._bases) and all(x is y for x, y in zip(bases, self._bases)):
            return
        self._pending, self._window = {}, None
        self._bases = bases

    def _chunk_batches(self, groups: Tuple[Group, ...], first: int, batch_size: int) -> tuple:
        """The groups of the full batches from row ``first`` of the chunk on (up to the call's
        count; the starts past the chunk's last full batch repeat it), keeping all but the first."""
        rows = int(self._bases[0].shape[1])
        count = _group_size(rows, batch_size, isinstance(self._bases[0], np.ndarray))
        starts = list(range(first, rows - batch_size + 1, batch_size))[:count]
        starts += [starts[-1]] * (count - len(starts))
        w = self._window
        if w is None or not (w[0] <= starts[0] and starts[-1] + batch_size <= w[0] + w[1]):
            ws, length = window_span(rows, first, batch_size, count)
            w = self._window = (ws, length, [window_of(base, ws, length) for base in self._bases])
        outs = _run(groups, w[2], batch_size, [s - w[0] for s in starts])
        self._pending = {s: o for s, o in zip(starts[1:], outs[1:])}
        return outs[0]

    def clear(self) -> None:
        """Drop the chunk and its pending batches (e.g. at the end of an epoch)."""
        self._bases, self._pending, self._window = (), {}, None


__all__ = ["StackedBatches", "GROUP_BATCHES", "CPU_GROUP_BATCHES", "WINDOW_BATCHES", "window_of", "window_start",
           "window_batches", "window_span"]
