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

Planning reads every parquet footer once (:func:`read_footer`), so the checks that files agree
with each other (:func:`check_file_schemas`: duplicate names, missing columns, a column of
another kind in one file) cost nothing extra and fail naming the file and the column.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Dict, Hashable, List, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.parquet as pq

from .fs import arrow_path


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


def check_shard(global_size: int, global_rank: int) -> None:
    """``ValueError`` unless ``0 <= global_rank < global_size``."""
    if global_size < 1 or not 0 <= global_rank < global_size:
        raise ValueError(f"need 0 <= global_rank < global_size, got global_rank={global_rank}, "
                         f"global_size={global_size}")


def shard_rows(num_rows: int, global_size: int, global_rank: int, drop_last: bool) -> List[Tuple[int, int]]:
    """Global row ranges of one rank, the same count on every rank.

    ``drop_last``: each rank gets ``num_rows // global_size`` consecutive rows (the remainder is
    never read). Otherwise each rank gets ``ceil(num_rows / global_size)`` rows: the last ranks
    wrap around to the start of the dataset for their missing rows, so this returns one range, or
    two when the rank wraps. ``num_rows <= 0`` gives no ranges.
    """
    check_shard(global_size, global_rank)
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
    in ``more``: ``(path, row_groups)`` pairs): the unit a partition is read from. ``num_rows``:
    the rows of those row groups in the footers read at planning; every read of the piece checks
    it (:func:`tabprep.io.dataset_read.check_rows`: a file changed since, or another file at the
    path on a worker, is refused)."""

    path: str
    row_groups: Tuple[int, ...]
    num_rows: int
    more: Tuple[Tuple[str, Tuple[int, ...]], ...] = ()
    #: hive keys of the piece's file(s): ``(name, "int64" / "string", value or None)``, added as
    #: constant columns after the read (pieces of files of other key values are never merged)
    keys: Tuple[Tuple[str, str, Any], ...] = ()


def plan_pieces(files: List[str], part_size: int, span_files: bool = False,
                footers: Optional[Dict[str, Any]] = None, row_groups_per_part: Optional[int] = None,
                keys: Optional[Dict[str, Tuple[Tuple[str, str, Any], ...]]] = None) -> List[Piece]:
    """Group consecutive row groups of each file into pieces of about ``part_size`` bytes in memory.

    The in-memory size of a row group is estimated from its row count and the schema (8 bytes
    per int64 value plus a null mask, ...) rather than from parquet's byte counts, which for
    dictionary-encoded columns can be 10x smaller than the decoded data.

    ``span_files`` (the GPU's choice): a piece continues into the next files (of the same
    schema) until it is full, so many small files still make few, big partitions; cuDF reads
    them in one call. On the CPU a partition stays within one file. An empty file (no row
    groups) is a piece of its own with no row groups.

    ``footers``: the files' footers (``path -> pyarrow FileMetaData``) when the caller has read
    them already (:class:`tabprep.Dataset` does, to check the files); otherwise they are read here.

    ``row_groups_per_part`` (NVTabular's ``Dataset`` keyword): instead of ``part_size``, each
    piece is that many consecutive row groups of one file (a file's last piece may have fewer),
    on CPU and GPU alike.

    ``keys``: each file's hive keys (see :attr:`Piece.keys`).
    """
    if row_groups_per_part is not None:
        out = _fixed_row_group_pieces(files, int(row_groups_per_part), footers)
    else:
        pieces = _plan_file_pieces(files, part_size, footers)
        if keys:   # files of other key values never share a piece
            pieces = [(replace(p, keys=keys.get(p.path, ())), size, schema) for p, size, schema in pieces]
        out = _merge_across_files(pieces, part_size) if span_files else [p for p, _, _ in pieces]
    return [replace(p, keys=keys.get(p.path, ())) for p in out] if keys else out


def _fixed_row_group_pieces(files: List[str], n: int, footers: Optional[Dict[str, Any]]) -> List[Piece]:
    out: List[Piece] = []
    for f in files:
        md = footers[f] if footers is not None and f in footers else read_footer(f)
        if md.num_row_groups == 0:
            out.append(Piece(f, (), 0))
            continue
        for a in range(0, md.num_row_groups, n):
            groups = tuple(range(a, min(a + n, md.num_row_groups)))
            out.append(Piece(f, groups, sum(md.row_group(g).num_rows for g in groups)))
    return out


def _merge_across_files(pieces: List[Tuple[Piece, int, Any]], part_size: int) -> List[Piece]:
    # runs of consecutive pieces of one schema; an empty file gets a key of its own (it is
    # read alone). Two pieces of one file never share a run: the first was closed because its
    # next row group, which starts the second, did not fit
    keys: List[int] = []
    for i, (piece, _, schema) in enumerate(pieces):
        same = (i > 0 and piece.row_groups and pieces[i - 1][0].row_groups and schema.equals(pieces[i - 1][2])
                and piece.keys == pieces[i - 1][0].keys)
        keys.append(keys[-1] if same else i)
    out: List[Piece] = []
    for a, b in group_runs([size for _, size, _ in pieces], part_size, keys):
        first = pieces[a][0]
        more = tuple((p.path, p.row_groups) for p, _, _ in pieces[a + 1:b])
        out.append(Piece(first.path, first.row_groups, sum(p.num_rows for p, _, _ in pieces[a:b]), more))
    return out


def _plan_file_pieces(files: List[str], part_size: int,
                      footers: Optional[Dict[str, Any]] = None) -> List[Tuple[Piece, int, Any]]:
    """Per-file pieces, each with its estimated size and the file's Arrow schema."""
    pieces: List[Tuple[Piece, int, Any]] = []
    for f in files:
        md = footers[f] if footers is not None and f in footers else read_footer(f)
        arrow_schema = md.schema.to_arrow_schema()
        if md.num_row_groups == 0:
            pieces.append((Piece(f, (), 0), 0, arrow_schema))
            continue
        rows, sizes = file_row_group_memory(arrow_schema, md)
        for a, b in group_runs(sizes, part_size):
            pieces.append((Piece(f, tuple(range(a, b)), sum(rows[a:b])), sum(sizes[a:b]), arrow_schema))
    return pieces


def _fixed_bytes(arrow_schema: pa.Schema, path_in_schema: str) -> Optional[int]:
    """Decoded bytes per row of a parquet leaf column whose Arrow type has a fixed width of at least
    a byte (the value plus a null-mask byte); None for the others (strings, lists, bools, dictionaries)."""
    name = path_in_schema.split(".")[0]
    typ = arrow_schema.field(name).type if name in arrow_schema.names else None
    if typ is None or pa.types.is_nested(typ) or pa.types.is_dictionary(typ):
        return None
    try:
        width = typ.bit_width
    except ValueError:  # variable-width (strings, binary): no bit_width
        return None
    return width // 8 + 1 if width >= 8 else None


def row_group_memory(arrow_schema: pa.Schema, rg: Any) -> int:
    """Estimated bytes of one decoded row group: fixed-width columns by type, others by parquet size."""
    total = 0
    for j in range(rg.num_columns):
        col = rg.column(j)
        width = _fixed_bytes(arrow_schema, col.path_in_schema)
        total += rg.num_rows * width if width else max(col.total_uncompressed_size, rg.num_rows * 8)
    return total


def file_row_group_memory(arrow_schema: pa.Schema, md: Any) -> Tuple[List[int], List[int]]:
    """Rows and :func:`row_group_memory` of every row group of the footer ``md``. The columns are
    classified once per file, not once per row group: only variable-width columns need a row
    group's own sizes (a 200M-row Criteo file set of 3,000 row groups x 40 columns took 0.4 s of
    planning per fit column by column)."""
    leaves = [md.schema.column(j).path for j in range(md.num_columns)]
    widths = [_fixed_bytes(arrow_schema, p) for p in leaves]
    fixed = sum(w for w in widths if w)
    var = [j for j, w in enumerate(widths) if not w]
    rows, sizes = [], []
    for i in range(md.num_row_groups):
        rg = md.row_group(i)
        n = rg.num_rows
        rows.append(n)
        sizes.append(n * fixed + sum(max(rg.column(j).total_uncompressed_size, n * 8) for j in var))
    return rows, sizes


# -- footers and their checks -----------------------------------------------------------------
def read_footer(path: str, storage_options: Optional[Dict[str, Any]] = None) -> Any:
    """The parquet footer (``pyarrow.parquet.FileMetaData``) of ``path`` (a local path, or a URL
    read through fsspec with ``storage_options``).

    A truncated or corrupt file, or one that is not parquet, raises ``ValueError`` naming it
    (the Arrow error is chained as the cause).
    """
    where, filesystem = arrow_path(path, storage_options)
    try:
        return pq.read_metadata(where, filesystem=filesystem)
    except (OSError, pa.ArrowException) as exc:
        raise ValueError(f"cannot read the parquet file {path}: {exc}. The file is truncated, corrupt or not "
                         f"parquet: write it again, or leave it out of the data.") from exc


def arrow_schema_of(path: str, footer: Any) -> pa.Schema:
    """The Arrow schema stored in a footer; a file with duplicate column names raises ``ValueError``
    naming the file and the columns (readers could not tell the columns apart)."""
    try:
        schema = footer.schema.to_arrow_schema()
    except (pa.ArrowException, ValueError) as exc:
        raise ValueError(f"cannot read the schema of the parquet file {path}: {exc}") from exc
    names = schema.names
    if len(set(names)) != len(names):
        dups = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"the parquet file {path} has duplicate column names: "
                         f"{', '.join(repr(d) for d in dups)} (each appears more than once). Rename the duplicates "
                         f"and write the file again.")
    return schema


def type_kind(t: pa.DataType) -> str:
    """The kind of an Arrow type: what must agree between the files of one dataset.

    Widths and encodings may differ between files (int32 / int64, string / large_string /
    dictionary of strings, timestamp units); kinds (int, float, string, ...) may not, since
    partitions of different kinds give different results (``1`` and ``"1"`` are different
    categories). Lists compare by the kind of their values.
    """
    if pa.types.is_dictionary(t):
        return type_kind(t.value_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return f"list<{type_kind(t.value_type)}>"
    for kind, test in (("int", pa.types.is_integer), ("float", pa.types.is_floating), ("bool", pa.types.is_boolean),
                       ("string", lambda x: pa.types.is_string(x) or pa.types.is_large_string(x)),
                       ("binary", lambda x: pa.types.is_binary(x) or pa.types.is_large_binary(x)),
                       ("timestamp", pa.types.is_timestamp), ("date", pa.types.is_date),
                       ("decimal", pa.types.is_decimal), ("null", pa.types.is_null)):
        if test(t):
            return kind
    return str(t)


def check_file_schemas(files: Sequence[str], schemas: Sequence[pa.Schema], what: str = "parquet file",
                       numbers_agree: bool = False, hint: str = "",
                       kind_fix: str = "Cast it to one type in every file and write them again.") -> None:
    """Refuse files that disagree with the first file, naming the file and the column.

    Every file must have the same column names (a missing column would silently read as nulls
    or fail deep inside a task) and each column the same :func:`type_kind`. A column holding only
    nulls in a file (Arrow type ``null``, what pandas writes for an all-None object column)
    agrees with any kind. ``what``: the files' kind in the messages (``"csv file"``);
    ``numbers_agree``: int and float agree (csv, where a null makes a column float); ``hint``:
    added to the messages of missing and extra columns; ``kind_fix``: the fix of a kind clash.
    """
    if not files:
        return
    first, ref = files[0], schemas[0]
    ref_types = {f.name: f.type for f in ref}
    for path, schema in zip(files[1:], schemas[1:]):
        if schema.names == ref.names and schema.types == ref.types:
            continue  # the usual case: identical schemas
        names = set(schema.names)
        missing = [n for n in ref.names if n not in names]
        if missing:
            raise ValueError(f"the {what} {path} has no column {', '.join(repr(m) for m in missing[:5])}"
                             f"{' ...' if len(missing) > 5 else ''}, which {first} has: every file of a dataset "
                             f"needs the same columns. Write {path} again with them, or leave it out of the data."
                             f"{hint}")
        extra = [n for n in schema.names if n not in ref_types]
        if extra:
            raise ValueError(f"the {what} {path} has column(s) {', '.join(repr(e) for e in extra[:5])}"
                             f"{' ...' if len(extra) > 5 else ''} that {first} does not have: every file of a "
                             f"dataset needs the same columns. Drop them from {path}, or leave it out of the data."
                             f"{hint}")
        for field in schema:
            problem = _clash(ref_types[field.name], field.type, numbers_agree)
            if problem:
                ka, kb = type_kind(ref_types[field.name]), type_kind(field.type)
                raise ValueError(f"column {field.name!r} is {field.type} ({kb}) in the {what} {path} but "
                                 f"{ref_types[field.name]} ({ka}) in {first}: {problem} {kind_fix}")


def _clash(a: pa.DataType, b: pa.DataType, numbers_agree: bool) -> str:
    """Why one column's types ``a`` and ``b`` (of two files) cannot be read as one column, or ""."""
    ka, kb = type_kind(a), type_kind(b)
    if "null" in (ka, kb):
        return ""
    if ka != kb:
        if numbers_agree and {ka, kb} <= {"int", "float"}:
            return ""
        return "every file must give a column the same kind of values."
    a, b = _value_type(a), _value_type(b)
    if pa.types.is_integer(a) and pa.types.is_integer(b) and pa.types.is_signed_integer(a) != pa.types.is_signed_integer(b):
        unsigned = a if not pa.types.is_signed_integer(a) else b
        if unsigned.bit_width == 64:
            # pandas / dask concatenate int64 and uint64 as float64: 2**53 + 1 becomes 2**53
            return ("no integer type holds both int64 and uint64 values: read together they would become float64, "
                    "whose 53-bit mantissa rounds large values.")
    if pa.types.is_timestamp(a) and pa.types.is_timestamp(b) and a.tz != b.tz:
        if a.tz is None or b.tz is None:
            return ("one holds naive (wall-clock) times and the other instants with a time zone; they are never "
                    "converted into each other (series.dt.tz_localize(...) makes wall-clock times instants).")
        return (f"the files store the time zones {a.tz} and {b.tz}; convert one (series.dt.tz_convert(...)) "
                f"so that every file gives the column one time zone.")
    return ""


def _value_type(t: pa.DataType) -> pa.DataType:
    while pa.types.is_dictionary(t) or pa.types.is_list(t) or pa.types.is_large_list(t) or \
            pa.types.is_fixed_size_list(t):
        t = t.value_type
    return t


#: the old private name (tests and callers of ``tabprep.io.dataset`` used it)
_row_group_memory = row_group_memory

__all__ = ["Piece", "arrow_schema_of", "check_file_schemas", "group_runs", "plan_pieces", "read_footer",
           "row_group_memory", "shard_rows", "split_rows", "type_kind"]
