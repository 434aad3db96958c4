"""Planning reads and writes: which rows go together, and how rows are split across parts.

One grouping rule and two splitting rules serve the dataset reader, the writer and the loader:

* :func:`group_runs`: cut a sequence of items (parquet row groups, loader units, file pieces)
  into consecutive runs of one key (file, schema) whose sizes (bytes, rows) fit a budget; an
  item larger than the budget is a run by itself, so row groups are never split or read twice.
  :func:`plan_pieces` (a :class:`Dataset`'s partitions, by estimated bytes in memory) is built
  on it, and so is the loader's piece planning (by rows).
* :func:`split_rows`: ``total`` rows (or units of ``align`` rows) in ``parts`` consecutive
  ranges whose sizes differ by at most one (the writer's files and worker folders).
* :func:`shard_rows`: one rank's rows of ``total`` when every rank must get exactly the same
  count (data-parallel training): the remainder is dropped (``drop_last``) or padded by wrapping
  around to the start of the dataset.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable, List, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.parquet as pq


# -- grouping ----------------------------------------------------------------------------------
def group_runs(sizes: Sequence[int], budget: int, keys: Optional[Sequence[Hashable]] = None) -> List[Tuple[int, int]]:
    """``[start, stop)`` index ranges of consecutive items grouped under a size budget.

    A run holds consecutive items of equal ``keys`` (all items when ``keys`` is None) whose
    ``sizes`` sum to at most ``budget``; a run is closed before the item that would exceed it,
    so an item larger than the budget forms a run by itself. Every item is in exactly one run,
    in order; no items give no runs. ``budget`` below 1 counts as 1.
    """
    budget = max(int(budget), 1)
    runs: List[Tuple[int, int]] = []
    start, total = 0, 0
    for i, size in enumerate(sizes):
        if i > start and (total + size > budget or (keys is not None and keys[i] != keys[i - 1])):
            runs.append((start, i))
            start, total = i, 0
        total += size
    if len(sizes) > start:
        runs.append((start, len(sizes)))
    return runs


# -- splitting ---------------------------------------------------------------------------------
def split_rows(total: int, parts: int, align: int = 1) -> List[Tuple[int, int]]:
    """``parts`` consecutive ``[lo, hi)`` ranges covering rows ``[0, total)``, in order.

    Sizes differ by at most one unit of ``align`` rows (whole batches of prebatched records are
    dealt out); only the last range can end with a partial unit. ``parts`` larger than the number
    of units gives empty ranges, at the end of each stretch; ``total=0`` gives all empty ranges.
    """
    if parts < 1:
        raise ValueError(f"parts must be >= 1, got {parts}")
    unit = max(1, int(align))
    units = -(-int(total) // unit)  # ceil: the last unit may be short
    return [(min(total, units * k // parts * unit), min(total, units * (k + 1) // parts * unit))
            for k in range(parts)]


def shard_rows(num_rows: int, global_size: int, global_rank: int, drop_last: bool) -> List[Tuple[int, int]]:
    """Global row ranges of one rank, the same count on every rank.

    ``drop_last``: each rank gets ``num_rows // global_size`` consecutive rows (the remainder is
    never read). Otherwise each rank gets ``ceil(num_rows / global_size)`` rows: the last ranks
    wrap around to the start of the dataset for their missing rows, so this returns one range, or
    two when the rank wraps. ``num_rows <= 0`` gives no ranges.
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


# -- parquet pieces ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Piece:
    """Some row groups of one parquet file (then, on the GPU, possibly of the next files too,
    in ``more``: ``(path, row_groups)`` pairs): the unit a partition is read from."""

    path: str
    row_groups: Tuple[int, ...]
    num_rows: int
    more: Tuple[Tuple[str, Tuple[int, ...]], ...] = ()


def plan_pieces(files: List[str], part_size: int, span_files: bool = False) -> List[Piece]:
    """Group consecutive row groups of each file into pieces of about ``part_size`` bytes in memory.

    The in-memory size of a row group is estimated from its row count and the schema (8 bytes
    per int64 value plus a null mask, ...) rather than from parquet's byte counts, which for
    dictionary-encoded columns can be 10x smaller than the decoded data.

    ``span_files`` (the GPU's choice): a piece continues into the next files (of the same
    schema) until it is full, so many small files still make few, big partitions; cuDF reads
    them in one call. On the CPU a partition stays within one file. An empty file (no row
    groups) is a piece of its own with no row groups.
    """
    pieces = _plan_file_pieces(files, part_size)
    return _merge_across_files(pieces, part_size) if span_files else [p for p, _, _ in pieces]


def _merge_across_files(pieces: List[Tuple[Piece, int, Any]], part_size: int) -> List[Piece]:
    # runs of consecutive pieces of one schema; an empty file gets a key of its own (it is
    # read alone). Two pieces of one file never share a run: the first was closed because its
    # next row group, which starts the second, did not fit
    keys: List[int] = []
    for i, (piece, _, schema) in enumerate(pieces):
        same = i > 0 and piece.row_groups and pieces[i - 1][0].row_groups and schema.equals(pieces[i - 1][2])
        keys.append(keys[-1] if same else i)
    out: List[Piece] = []
    for a, b in group_runs([size for _, size, _ in pieces], part_size, keys):
        first = pieces[a][0]
        more = tuple((p.path, p.row_groups) for p, _, _ in pieces[a + 1:b])
        out.append(Piece(first.path, first.row_groups, sum(p.num_rows for p, _, _ in pieces[a:b]), more))
    return out


def _plan_file_pieces(files: List[str], part_size: int) -> List[Tuple[Piece, int, Any]]:
    """Per-file pieces, each with its estimated size and the file's Arrow schema."""
    pieces: List[Tuple[Piece, int, Any]] = []
    for f in files:
        try:
            md = pq.ParquetFile(f).metadata
        except (OSError, pa.ArrowInvalid) as exc:
            raise ValueError(f"cannot read parquet file {f}: {exc}. Remove or re-write it.") from exc
        arrow_schema = md.schema.to_arrow_schema()
        if md.num_row_groups == 0:
            pieces.append((Piece(f, (), 0), 0, arrow_schema))
            continue
        groups = [md.row_group(i) for i in range(md.num_row_groups)]
        sizes = [row_group_memory(arrow_schema, rg) for rg in groups]
        for a, b in group_runs(sizes, part_size):
            pieces.append((Piece(f, tuple(range(a, b)), sum(rg.num_rows for rg in groups[a:b])),
                           sum(sizes[a:b]), arrow_schema))
    return pieces


def row_group_memory(arrow_schema: pa.Schema, rg: Any) -> int:
    """Estimated bytes of one decoded row group: fixed-width columns by type, others by parquet size."""
    total = 0
    for j in range(rg.num_columns):
        col = rg.column(j)
        name = col.path_in_schema.split(".")[0]
        typ = arrow_schema.field(name).type if name in arrow_schema.names else None
        width = None
        if typ is not None and not pa.types.is_nested(typ):
            try:
                width = typ.bit_width
            except ValueError:  # variable-width (strings, binary): no bit_width
                width = None
        if width and width >= 8 and not pa.types.is_dictionary(typ):
            total += rg.num_rows * (width // 8 + 1)
        else:
            total += max(col.total_uncompressed_size, rg.num_rows * 8)
    return total


#: the old private name (tests and callers of ``tabprep.io.dataset`` used it)
_row_group_memory = row_group_memory

__all__ = ["Piece", "group_runs", "plan_pieces", "row_group_memory", "shard_rows", "split_rows"]
