"""Epoch planning of a loader: pieces of about the target size, shards of equal length per rank.

Part of :mod:`tabprep.loader.core` (see its docstring for the loader's data flow).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Sequence, Tuple

from .sources import _Piece, _Unit


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
