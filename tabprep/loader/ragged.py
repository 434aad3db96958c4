"""Batch containers and the array code of ragged (list) columns: numpy on the CPU, cupy on the GPU.

Part of :mod:`tabprep.loader.core` (see its docstring for the loader's data flow).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, NamedTuple, Optional

import numpy as np

from .. import backend

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


class _RaggedCut(RaggedBatch):
    """A :class:`RaggedBatch` cut at a batch boundary of its chunk, with ``starts``: each row's
    first position in ``values`` (int64, one per row, no end entry), a view of the chunk's
    :attr:`_RaggedColumn.batch_starts`. The framework adapters hand ``starts`` over as the
    batch's offsets, where they made them per batch (a zeroed array and a cumsum of the lengths:
    0.1-0.2 ms a batch on an H200, docs/benchmarks.md, twenty-third session)."""

    # a namedtuple subclass without __slots__: instances carry ``starts`` in their __dict__
    starts: Any


@dataclass
class _RaggedColumn:
    """A list column of one chunk: flat values and ``offsets`` (int64, rows + 1)."""

    values: Any
    offsets: Any
    host_offsets: Optional[np.ndarray] = None  # numpy copy of offsets (GPU), so slicing needs no sync
    row_lengths: Any = None                    # offsets' differences, computed once per chunk
    batch_starts: Any = None                   # rows' starts within their batch (add_batch_starts)
    batch_first: int = 0                       # first row of the chunk's first full batch
    batch_size: int = 0
    batch_pad: int = 0                         # leading entries of batch_starts (view alignment)

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


def _shifted_positions(shifts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Each value's position in the flat values (0 .. nnz - 1) plus its row's shift (numpy): one
    ``repeat`` of the rows' shifts (cupy's repeat takes its counts from the host: not on the GPU)."""
    out = np.repeat(shifts, lengths)
    out += np.arange(len(out), dtype=np.int64)
    return out


def take_ragged(col: _RaggedColumn, perm: Any) -> _RaggedColumn:
    """Rows ``perm`` (an int array on the column's device) of a ragged column (flat or nested)."""
    if getattr(col, "levels", None) is not None:
        from .nested import take_nested

        return take_nested(col, perm, take_ragged)
    xp = _xp(col.offsets)
    lengths = col.lengths[perm]
    offsets = xp.zeros(len(lengths) + 1, dtype=xp.int64)
    xp.cumsum(lengths, out=offsets[1:])
    nnz = int(offsets[-1])
    if nnz == 0:
        return _RaggedColumn(col.values[:0], offsets)
    if xp is np:
        # each value's source: its place in its new row plus its row's shift (500k rows of ~1.8
        # values: 12.8 against 16.6 ms on the 2-core CPU, where row ids took two more gathers)
        return _RaggedColumn(col.values[_shifted_positions(col.offsets[:-1][perm] - offsets[:-1], lengths)], offsets)
    rows = _row_ids(offsets, nnz, xp)
    src = col.offsets[:-1][perm][rows] + (xp.arange(nnz, dtype=xp.int64) - offsets[rows])
    return _RaggedColumn(col.values[src], offsets)


def pad_ragged(col: _RaggedColumn, max_len: int, pad: int = PAD_ID) -> Any:
    """Dense ``(rows, max_len)`` array of a ragged column, right-padded with ``pad``;
    longer rows are truncated to their first ``max_len`` values."""
    xp = _xp(col.offsets)
    n = len(col.offsets) - 1
    nnz = len(col.values)
    if nnz == 0 or max_len == 0:
        return xp.full((n, max_len), pad, dtype=col.values.dtype)
    if xp is np:
        lengths = col.lengths
        if int(lengths.max()) <= max_len:
            # no row to cut: each value's flat place in the output, from its row's shift
            # (500k rows of ~1.8 values: 8.6 against 15 ms on the 2-core CPU)
            out = np.full(n * max_len, pad, dtype=col.values.dtype)
            out[_shifted_positions(np.arange(0, n * max_len, max_len, dtype=np.int64) - col.offsets[:-1], lengths)] = \
                col.values
            return out.reshape(n, max_len)
    rows = _row_ids(col.offsets, nnz, xp)
    pos = xp.arange(nnz, dtype=xp.int64) - col.offsets[rows]
    # values past max_len all land in one spare column, dropped after: no boolean mask, whose
    # selection cupy sizes by reading a count back from the device (a wait for the GPU on the
    # preparing thread, which on the default stream also waited for the other thread's queued work)
    out = xp.full((n, max_len + 1), pad, dtype=col.values.dtype)
    out[rows, xp.minimum(pos, max_len)] = col.values
    return xp.ascontiguousarray(out[:, :max_len])


#: alignment of the batch arrays made on the CPU (see :func:`tabprep.backend.take_aligned`)
ALIGN = backend.ALIGN
_take_aligned = backend.take_aligned


def add_batch_starts(col: _RaggedColumn, first: int, batch_size: int) -> None:
    """Each row's start relative to the first value of its batch, for the whole chunk at once
    (``col.batch_starts``; on the preparing thread), where batches start at row 0 and at rows
    ``first + k * batch_size`` of the chunk. A batch cut at those rows (:func:`_slice`) then
    carries its offsets as a view (:class:`_RaggedCut`). A leading entry is added when that makes
    the batches' views start 16-byte aligned (XLA's GPU buffers must be; an unaligned view is
    copied by the JAX adapter)."""
    xp = _xp(col.offsets)
    n = len(col.offsets) - 1
    if n <= 0 or batch_size <= 0:
        return
    first = min(first, n)
    pad = first % 2 if batch_size % 2 == 0 else 0
    out = xp.empty(n + pad, dtype=xp.int64)
    if xp is np:
        # each batch's first offset repeated over its rows: two passes (250k rows, 0.8 against 3.6 ms
        # for the arithmetic below on the 2-core machine: cupy's repeat takes its counts from the host)
        starts = np.unique(np.concatenate([[0], np.arange(first, n, batch_size)]))
        counts = np.diff(np.append(starts, n))
        np.subtract(col.offsets[:-1], np.repeat(col.offsets[starts], counts), out=out[pad:])
    else:
        rows = xp.arange(n, dtype=xp.int64)
        # the first row of each row's batch: 0 before ``first`` ((r - first) // B is -1 there)
        base = xp.maximum(first + (rows - first) // batch_size * batch_size, 0)
        xp.subtract(col.offsets[:-1], col.offsets[base], out=out[pad:])
    col.batch_starts, col.batch_first, col.batch_size, col.batch_pad = out, first, batch_size, pad


def _batch_row(col: _RaggedColumn, r: int) -> int:
    """The first row of row ``r``'s batch, as :func:`add_batch_starts` laid them out."""
    return 0 if r < col.batch_first else col.batch_first + (r - col.batch_first) // col.batch_size * col.batch_size


def _slice(col: Any, a: int, b: int) -> Any:
    """Rows ``[a, b)`` of a chunk column (views)."""
    if isinstance(col, _RaggedColumn):
        if getattr(col, "levels", None) is not None:
            from .nested import slice_nested

            return slice_nested(col, a, b)
        host = col.host_offsets if col.host_offsets is not None else col.offsets
        lo, hi = int(host[a]), int(host[b])
        values, lengths = col.values[lo:hi], col.lengths[a:b]
        if col.batch_starts is not None and b > a and _batch_row(col, a) == a == _batch_row(col, b - 1):
            out = _RaggedCut(values, lengths)   # rows of one batch of add_batch_starts: its starts are a view
            out.starts = col.batch_starts[col.batch_pad + a:col.batch_pad + b]
            return out
        return RaggedBatch(values, lengths)
    return col[a:b]


def _concat_batches(parts: List[Dict[str, Any]]) -> Dict[str, Any]:
    if len(parts) == 1:
        return parts[0]
    out = {}
    for name, first in parts[0].items():
        if getattr(first, "levels", None) is not None:
            from .nested import concat_nested

            out[name] = concat_nested([p[name] for p in parts])
        elif isinstance(first, RaggedBatch):
            xp = _xp(first.values)
            out[name] = RaggedBatch(xp.concatenate([p[name].values for p in parts]),
                                    xp.concatenate([p[name].lengths for p in parts]))
        else:
            out[name] = _xp(first).concatenate([p[name] for p in parts])
    return out
