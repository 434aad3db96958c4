"""Epoch planning of a loader: pieces of about the target size, shards of equal length per rank.

Part of :mod:`tabprep.loader.core` (see its docstring for the loader's data flow).
"""
from __future__ import annotations

import concurrent.futures
from dataclasses import dataclass
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

    @property
    def num_rows(self) -> int:
        return self.offsets[-1]


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


def plan_epoch(pieces: Sequence[_Piece], epoch: int, seed: Any, shuffle: bool, parts_per_chunk: int) -> "_EpochPlan":
    """The chunks of one epoch: a rank's ``pieces`` in a seeded random order (``shuffle``; drawn from
    ``seed + [0]`` with numpy), grouped ``parts_per_chunk`` at a time, and the first row of each."""
    pieces = list(pieces)
    if shuffle and len(pieces) > 1:
        order = np.random.default_rng(seed + [0]).permutation(len(pieces))
        pieces = [pieces[i] for i in order]
    chunks = [pieces[i:i + parts_per_chunk] for i in range(0, len(pieces), parts_per_chunk)]
    offsets = [0]
    for c in chunks:
        offsets.append(offsets[-1] + sum(p.num_rows for p in c))
    return _EpochPlan(epoch, seed, chunks, offsets)


#: draws chunks' row permutations beside the threads that read and transform the chunks (numpy
#: releases the GIL while it shuffles: ~60 ms per 4M rows no longer adds to a chunk's time)
PERMUTATIONS = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="tabprep-loader-perm")


def chunk_permutation(plan: _EpochPlan, k: int, n: int) -> Optional[np.ndarray]:
    """The seeded row order of chunk ``k`` of ``n`` rows (numpy, on the host, so the same on the
    CPU and the GPU); None for fewer than 2 rows."""
    if n <= 1:
        return None
    return np.random.default_rng(plan.seed + [k + 1]).permutation(n)
