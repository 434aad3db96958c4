"""Epoch planning of a loader: pieces of about the target size, shards of equal length per rank.

Part of :mod:`tabprep.loader.core` (see its docstring for the loader's data flow).
"""
from __future__ import annotations

import concurrent.futures
import threading
from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from ..io.planning import group_runs, shard_rows  # noqa: F401 - shard_rows is part of the loader's planning API
from .sources import _Piece, _Unit


# ---------------------------------------------------------------------------------------
# planning: pieces, shards, chunks
# ---------------------------------------------------------------------------------------
def plan_pieces(units: Sequence[_Unit], target_rows: int) -> List[_Piece]:
    """Group consecutive units of the same group into pieces of at most ``target_rows`` rows.

    A unit larger than ``target_rows`` (a big parquet row group) is a piece by itself: pieces
    have row-group granularity and row groups are never read twice. The grouping rule is the
    dataset's (:func:`tabprep.io.planning.group_runs`), counted in rows instead of bytes.
    """
    rows = [u.num_rows for u in units]
    return [_Piece(tuple(range(a, b)), 0, sum(rows[a:b]))
            for a, b in group_runs(rows, target_rows, keys=[u.group for u in units])]


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


@dataclass
class _EpochPlan:
    epoch: int
    seed: Any
    chunks: List[List[_Piece]]
    offsets: List[int]          # first (input) row of each chunk; len(chunks) + 1 entries
    #: chunk -> its permutation being drawn (:func:`permutation_job`)
    _permutation_jobs: dict = field(default_factory=dict, repr=False, compare=False)
    #: the seed of each chunk's row order where the chunks come from several epochs
    #: (:func:`merge_plans`); None: ``seed + [k + 1]`` for chunk ``k``
    chunk_seeds: Optional[List[Any]] = None

    @property
    def num_rows(self) -> int:
        return self.offsets[-1]

    def chunk_seed(self, k: int) -> Any:
        """The seed of chunk ``k``'s row order."""
        return self.chunk_seeds[k] if self.chunk_seeds is not None else self.seed + [k + 1]


def merge_plans(plans: Sequence[_EpochPlan], epoch: int) -> _EpochPlan:
    """The epochs ``plans`` one after the other, as one plan (``loader.epochs(n)``): their chunks in
    order, each keeping its own epoch's row order, so the rows are exactly those of the plans in turn
    and batches run on across the epochs' boundaries (merlin-dataloader streams its epochs alike)."""
    chunks: List[List[_Piece]] = []
    seeds: List[Any] = []
    offsets = [0]
    for p in plans:
        chunks += p.chunks
        seeds += [p.chunk_seed(k) for k in range(len(p.chunks))]
        offsets += [offsets[-1] + o for o in p.offsets[1:]]
    return _EpochPlan(epoch, plans[0].seed if plans else [epoch], chunks, offsets, chunk_seeds=seeds)


def rank_pieces(units: Sequence[_Unit], piece_rows: int, global_size: int, global_rank: int,
                drop_last: bool) -> Tuple[int, List[_Piece]]:
    """``(dataset rows, this rank's pieces)``: the dataset's pieces of about ``piece_rows`` rows, and
    the ones covering rank ``global_rank``'s shard of rows (:func:`shard_rows`: equal lengths per rank,
    wrapped around or trimmed as :mod:`tabprep.loader.core` describes). The same on every rank and epoch."""
    pieces = plan_pieces(units, piece_rows)
    total = sum(p.num_rows for p in pieces)
    mine: List[_Piece] = []
    for lo, hi in shard_rows(total, global_size, global_rank, drop_last):
        mine += slice_rows(pieces, units, lo, hi)
    return total, mine


def plan_epoch(pieces: Sequence[_Piece], epoch: int, seed: Any, shuffle: bool, parts_per_chunk: int,
               piece_rows: Optional[int] = None) -> "_EpochPlan":
    """The chunks of one epoch: a rank's ``pieces`` in a seeded random order (``shuffle``; drawn from
    ``seed + [0]`` with numpy), grouped into chunks, and the first row of each.

    Without ``piece_rows``, ``parts_per_chunk`` pieces at a time. With it (the loader's target rows of
    one piece), a chunk takes pieces, in that order, while it holds at most ``parts_per_chunk *
    piece_rows`` rows (always at least one piece): where pieces are as big as the target, that is
    ``parts_per_chunk`` of them; where the files are smaller than the target (a piece never spans
    files), a chunk gathers several files' pieces instead of staying a fraction of the size asked for,
    so the fixed cost of a chunk (a read call, the workflow's per-op overhead: ~80 ms on a GPU whatever
    the rows) is paid on the rows ``buffer_size`` promised.
    """
    pieces = list(pieces)
    if shuffle and len(pieces) > 1:
        order = np.random.default_rng(seed + [0]).permutation(len(pieces))
        pieces = [pieces[i] for i in order]
    if piece_rows is None:
        chunks = [pieces[i:i + parts_per_chunk] for i in range(0, len(pieces), parts_per_chunk)]
    else:
        target = max(1, int(parts_per_chunk) * int(piece_rows))
        chunks = []
        rows = 0
        for p in pieces:
            if chunks and rows + p.num_rows <= target:
                chunks[-1].append(p)
                rows += p.num_rows
            else:
                chunks.append([p])
                rows = p.num_rows
    offsets = [0]
    for c in chunks:
        offsets.append(offsets[-1] + sum(p.num_rows for p in c))
    return _EpochPlan(epoch, seed, chunks, offsets)


#: draws chunks' row permutations beside the threads that read and transform the chunks (numpy
#: releases the GIL while it shuffles: ~60 ms per 4M rows no longer adds to a chunk's time)
PERMUTATIONS = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="tabprep-loader-perm")


_JOBS_LOCK = threading.Lock()


def chunk_permutation(plan: _EpochPlan, k: int, n: int) -> Optional[np.ndarray]:
    """The seeded row order of chunk ``k`` of ``n`` rows, on the host: the one every device gives
    (:mod:`tabprep.backend.permute`: numpy's shuffle below ``KEYED_MIN_ROWS`` rows, else the keyed
    order); None for fewer than 2 rows."""
    from ..backend.permute import row_order

    return row_order(n, plan.chunk_seed(k))


def permutation_job(plan: _EpochPlan, k: int) -> Optional["concurrent.futures.Future"]:
    """The permutation of chunk ``k`` (its planned rows), drawn in :data:`PERMUTATIONS`, and that of
    chunk ``k + 1`` started too, for a loader whose device draws orders on the host (the CPU: the GPU
    computes them itself, see ``CudaDevice.row_order``): a chunk's order is drawn while the chunk
    before it is prepared.
    None for a chunk of fewer than 2 rows."""
    with _JOBS_LOCK:
        jobs = plan._permutation_jobs
        for j in (k, k + 1):
            if j < len(plan.chunks) and j not in jobs:
                n = plan.offsets[j + 1] - plan.offsets[j]
                jobs[j] = PERMUTATIONS.submit(chunk_permutation, plan, j, n) if n > 1 else None
        return jobs.pop(k)
