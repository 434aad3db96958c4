"""Reading a :class:`~tabprep.io.dataset.Dataset`'s partitions: one parquet piece as a frame (or
Arrow table), the dataset-wide nullable int columns (from footer statistics) every partition is
cast to, the empty frames dask uses as meta, and the read / write timing and file notes of the
partition tasks. Split out of :mod:`tabprep.io.dataset`, which re-exports these names.
"""
from __future__ import annotations

import contextlib
import functools
import os
import time
from dataclasses import replace
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.parquet as pq

from .. import backend
from . import fs as fsmod
from .planning import Piece, read_footer


def _read_piece(piece: Piece, columns: Optional[List[str]], cpu: bool, nullable: Dict[str, str],
                storage_options: Optional[Dict[str, Any]] = None, arrow: bool = False) -> Any:
    """One partition as a frame; ``arrow`` (CPU): as the Arrow table it is read as (an empty piece
    still gives the empty frame)."""
    if piece.keys:
        names = {k for k, _, _ in piece.keys}
        file_cols = [c for c in columns if c not in names] if columns is not None else None
        frame = _read_piece(replace(piece, keys=()), file_cols, cpu, {}, storage_options, arrow)
        return nullable_frame(with_keys(frame, piece, columns, cpu), nullable) if not isinstance(frame, pa.Table) \
            else with_keys(frame, piece, columns, cpu)
    if not piece.row_groups:
        # the footer is read for the empty frame's schema anyway: its row count is checked for free
        md = read_footer(piece.path, storage_options)
        check_rows(piece, md.num_rows)
        return _meta_from_schema(md.schema.to_arrow_schema(), columns, cpu)
    # a URL: the file system's own path and the (fsspec) file system, built here on the worker
    path, filesystem = fsmod.arrow_path(piece.path, storage_options)
    with piece_read(piece, storage_options):
        if arrow and not piece.more:
            frame = backend.read_parquet_table(path, piece.row_groups, columns, filesystem=filesystem)
        elif piece.more:
            paths = [path] + [fsmod.arrow_path(p, storage_options)[0] for p, _ in piece.more]
            groups = [piece.row_groups] + [g for _, g in piece.more]
            frame = backend.read_parquet_pieces(paths, groups, columns, cpu, filesystem=filesystem)
        else:
            frame = backend.read_parquet_piece(path, piece.row_groups, columns, cpu, filesystem=filesystem)
    # len() of an Arrow table, a pandas or a cuDF frame: one check for every backend
    check_rows(piece, len(frame))
    return frame if isinstance(frame, pa.Table) else nullable_frame(frame, nullable)


def key_array(typ: str, value: Any, n: int) -> pa.Array:
    """``n`` rows of one hive key value (None: nulls) as an Arrow array of ``typ``."""
    return pa.array([value] * n, type=pa.int64() if typ == "int64" else pa.string())


def with_keys(frame: Any, piece: Piece, columns: Optional[List[str]], cpu: bool) -> Any:
    """``frame`` (an Arrow table, a pandas or cuDF frame of the piece's file columns) with the piece's
    hive keys among ``columns`` (None: all, after the file's columns) as constant columns, in the
    order of ``columns``. Backend-generic: the constants are built in Arrow and converted by the
    backend's own :func:`~tabprep.backend.arrow_to_frame`."""
    n = frame.num_rows if isinstance(frame, pa.Table) else len(frame)
    for name, typ, value in piece.keys:
        if columns is not None and name not in columns:
            continue
        arr = key_array(typ, value, n)
        if isinstance(frame, pa.Table):
            frame = frame.append_column(name, arr)
        else:
            col = backend.arrow_to_frame(pa.table({name: arr}), cpu=cpu)[name]
            col.index = frame.index
            frame[name] = col
    if columns is not None:
        frame = frame.select(list(columns)) if isinstance(frame, pa.Table) else frame[list(columns)]
    return frame


def _piece_where(piece: Piece) -> str:
    return piece.path if not piece.more else f"{piece.path} (or the next {len(piece.more)} files)"


#: the cause and the fix of a file that is not the file the reads were planned from
CHANGED_FIX = ("The file changed after the job planned its reads, or this worker sees another file at the same "
               "path: put the data where every worker sees the same files (one shared file system or object "
               "store), and open the data again after changing a file.")


def _rows(n: int) -> str:
    return f"{n} row" if n == 1 else f"{n} rows"


def changed_error(where: str, row_groups: Sequence[Any], planned: str, found: str) -> ValueError:
    """The error for a parquet file that is not the file a job planned its reads from (its footer,
    read when the job planned the pieces, promised other rows): names the file, the row groups, the
    planned and found rows (``planned`` / ``found``: e.g. ``"10 rows"``) and :data:`CHANGED_FIX`."""
    return ValueError(f"the parquet file {where} is not the file the job planned its reads from: row groups "
                      f"{list(row_groups)}: planned {planned}, found {found}. {CHANGED_FIX}")


def check_rows(piece: Piece, found: int) -> None:
    """``ValueError`` (:func:`changed_error`) unless ``found``, the rows a read of ``piece`` gave,
    are the rows planned from the footers (``piece.num_rows``). A dask worker that sees another file
    at the path, or a file replaced since the plan, otherwise gave rows missing or extra without a
    word. Compares two counts the read has already: free."""
    if found != piece.num_rows:
        raise changed_error(_piece_where(piece), piece.row_groups, _planned(piece), _rows(found))


def _planned(piece: Piece) -> str:
    return _rows(piece.num_rows) + (f" in {1 + len(piece.more)} files" if piece.more else "")


@contextlib.contextmanager
def piece_read(piece: Piece, storage_options: Optional[Dict[str, Any]] = None) -> Iterator[None]:
    """The read of ``piece`` in the block: a failure whose file now lacks a planned row group, or
    whose planned row groups now hold other rows, raises :func:`changed_error` (the reader's error
    is chained; cuDF's and pyarrow's differ, so any error is looked at); otherwise a reader's
    ``OSError`` / Arrow error raises :func:`corrupt_error`, other errors pass. The footers are read
    again only once a read has failed."""
    try:
        yield
    except Exception as exc:
        changed = _changed_since_plan(piece, storage_options)
        if changed is not None:
            raise changed from exc
        if isinstance(exc, (OSError, pa.ArrowException)):
            raise corrupt_error(_piece_where(piece), piece.row_groups, exc) from exc
        raise


def _changed_since_plan(piece: Piece, storage_options: Optional[Dict[str, Any]]) -> Optional[ValueError]:
    """:func:`changed_error` when a file of ``piece`` (read again) lacks a planned row group, or
    when its planned row groups hold other rows than planned; None when they are as planned or the
    footer cannot be read (the read's own error then says what is wrong)."""
    parts = [(piece.path, piece.row_groups)] + list(piece.more)
    found = 0
    for path, groups in parts:
        try:
            md = read_footer(path, storage_options)
        except Exception:   # gone, or no footer: corrupt_error tells
            return None
        if any(g >= md.num_row_groups for g in groups):
            return changed_error(path, groups, _planned(piece),
                                 f"a file of {md.num_row_groups} row group{'' if md.num_row_groups == 1 else 's'} "
                                 f"and {_rows(md.num_rows)}")
        found += sum(md.row_group(g).num_rows for g in groups)
    if found != piece.num_rows:
        return changed_error(_piece_where(piece), piece.row_groups, _planned(piece), _rows(found))
    return None


@contextlib.contextmanager
def corrupt_named(where: str, row_groups: Sequence[Any]) -> Iterator[None]:
    """A read failing in the block (a corrupt data page once the footer was fine, or a file gone
    since) raises :func:`corrupt_error`, from the reader's error."""
    try:
        yield
    except (OSError, pa.ArrowException) as exc:
        raise corrupt_error(where, row_groups, exc) from exc


def corrupt_error(where: str, row_groups: Sequence[Any], exc: BaseException) -> ValueError:
    """The error for a parquet file whose footer read but whose data did not (``exc``, the
    reader's error, goes in the message; raise it ``from exc``): names the file, its row groups and
    the fix. A file gone since its footer was read is said to be gone, not corrupt."""
    if isinstance(exc, FileNotFoundError):
        return ValueError(f"cannot read row groups {list(row_groups)} of the parquet file {where}: it is gone ({exc}). "
                          f"Was it moved or deleted after the data was opened? Open the data again.")
    return ValueError(f"cannot read row groups {list(row_groups)} of the parquet file {where}: {exc}. "
                      f"The file is corrupt, or was changed after the data was opened: write it again, or leave it "
                      f"out of the data.")


def piece_columns(read: Any) -> Optional[Callable[[Sequence[str]], Iterator[Tuple[str, Any]]]]:
    """For a reader of :meth:`Dataset._piece_readers` that reads one piece of one local parquet
    file as an Arrow table: ``columns(names)``, which yields ``(name, Arrow column)`` for each of
    ``names`` (columns the reader reads), read one at a time
    (:func:`tabprep.backend.read_parquet_columns`: the columns of the table the reader gives). None
    for other readers (cuDF, several files in one piece, an empty piece, a remote file system:
    there a whole piece is read at once, its column chunks coalesced)."""
    if not (isinstance(read, functools.partial) and read.func is _read_piece and read.args):
        return None
    piece, kw = read.args[0], read.keywords
    if not kw.get("arrow") or piece.more or not piece.row_groups or kw.get("columns") is None:
        return None
    path, filesystem = fsmod.arrow_path(piece.path, kw.get("storage_options"))
    if filesystem is not None:
        return None
    known = set(kw["columns"])
    keys = {k: (t, v) for k, t, v in piece.keys}

    def columns(names: Sequence[str]) -> Iterator[Tuple[str, Any]]:
        unknown = [c for c in names if c not in known]
        if unknown:
            raise KeyError(f"columns {unknown} are not read by this partition's reader (it reads {sorted(known)})")
        # (the consumer's own errors never pass through here: it holds no column between reads)
        with piece_read(piece):
            stream = backend.read_parquet_columns(path, piece.row_groups, [c for c in names if c not in keys])
        for name in names:   # hive keys: constant columns of the piece's rows
            if name in keys:
                yield name, pa.chunked_array([key_array(*keys[name], piece.num_rows)])
                continue
            with piece_read(piece):
                item = next(stream)
            check_rows(piece, len(item[1]))
            yield item
    return columns


def _run_part(read: Callable[[], Any], fn: Callable[..., Any], args: Tuple[Any, ...], handle: Any,
              finish: Optional[Callable[[Any, int], Any]], index: int) -> Any:
    """A partition's task of :meth:`Dataset._table_tasks`: ``fn(read(), handle, *args)``, then
    ``finish(that, index)`` when given. Read and write seconds go to the workflow's ``op_timer``
    (as ``(io)`` read / write) when ``handle`` is a workflow that has one."""
    ahead = getattr(handle, "build_lookups_ahead", None)   # a workflow: its vocabularies' lookups
    if ahead is not None and isinstance(read, functools.partial) and "cpu" in read.keywords:
        ahead(bool(read.keywords["cpu"]))   # built in the background while this partition is read
    part = timed_read(read, handle)
    with source_noted(read):  # raised on a worker, it names the file there as here
        out = fn(part, handle, *args)
    del part
    if finish is None:
        return out
    return _io_timed(handle, "write", "write", lambda: finish(out, index), len(out))


@contextlib.contextmanager
def source_noted(read: Any) -> Iterator[None]:
    """A failure in the block (computing the partition ``read`` reads, a reader of
    :meth:`Dataset._piece_readers`) gets the note that names its file and row groups; the CLI
    prints the notes in its one-line error. Nothing for other readers."""
    try:
        yield
    except Exception as exc:
        _note_source(exc, read)
        raise


def _note_source(exc: BaseException, read: Any) -> None:
    piece = read.args[0] if isinstance(read, functools.partial) and read.args else None
    if not isinstance(piece, Piece):
        return
    where = piece.path if not piece.more else f"{piece.path} (or the next {len(piece.more)} files)"
    note = f"in the parquet file {where}, row groups {list(piece.row_groups)}"
    try:
        if hasattr(exc, "add_note"):
            exc.add_note(note)
        else:  # pragma: no cover - Python 3.10
            exc.__notes__ = [*getattr(exc, "__notes__", []), note]  # type: ignore[attr-defined]
    except AttributeError:  # pragma: no cover - exceptions that refuse attributes
        pass


def timed_read(read: Callable[[], Any], handle: Any) -> Any:
    """``read()`` (a reader of :meth:`Dataset._piece_readers`), its seconds recorded as the ``(io)``
    read row of ``handle``'s ``op_timer`` when ``handle`` is a workflow that has one."""
    return _io_timed(handle, "read parquet", "read", read, len)


def timed_columns(columns: Callable[[Sequence[str]], Iterator[Tuple[str, Any]]], names: Sequence[str],
                  handle: Any) -> Iterator[Tuple[str, Any]]:
    """``columns(names)`` (see :func:`piece_columns`), the seconds spent reading them recorded, once
    they are all read, as the ``(io)`` read row of ``handle``'s ``op_timer`` when ``handle`` is a
    workflow that has one (as :func:`timed_read` records a whole partition's read)."""
    timer = getattr(handle, "op_timer", None)
    if timer is None:
        yield from columns(names)
        return
    clock = getattr(handle, "op_clock", time.perf_counter)
    stream, spent, rows = columns(names), 0.0, 0
    while True:
        t0 = clock()
        try:
            item = next(stream)
        except StopIteration:
            break
        finally:
            spent += clock() - t0
        rows = len(item[1])
        yield item
        del item   # (not held while the next column is read)
    timer("(io)", "read parquet", "read", spent, rows)


def _io_timed(handle: Any, label: str, kind: str, call: Callable[[], Any], rows: Any) -> Any:
    """``call()``, its seconds recorded as an ``(io)`` row of ``handle``'s ``op_timer`` when
    ``handle`` is a workflow that has one; ``rows``: the row count, or a function of the result."""
    timer = getattr(handle, "op_timer", None)
    if timer is None:
        return call()
    clock = getattr(handle, "op_clock", time.perf_counter)
    t0 = clock()
    res = call()
    timer("(io)", label, kind, clock() - t0, rows(res) if callable(rows) else rows)
    return res


def nullable_frame(frame: Any, nullable: Dict[str, str]) -> Any:
    """``frame`` (pandas, or an Arrow table of a partition: converted) with the int columns that hold a null
    somewhere in the dataset as nullable ints, as :meth:`Dataset.to_ddf` gives every partition (otherwise
    partitions would disagree on dtypes)."""
    if isinstance(frame, pa.Table):
        frame = backend.arrow_to_frame(frame, cpu=True)
    casts = {c: t for c, t in nullable.items() if c in frame.columns and str(frame[c].dtype) != t}
    return frame.astype(casts) if casts else frame


def _meta_from_file(path: str, columns: Optional[List[str]], cpu: bool, nulls: Optional[set] = None,
                    storage_options: Optional[Dict[str, Any]] = None) -> Any:
    where, filesystem = fsmod.arrow_path(path, storage_options)
    return _meta_from_schema(pq.read_schema(where, filesystem=filesystem), columns, cpu, nulls)


def _meta_from_schema(schema: pa.Schema, columns: Optional[List[str]], cpu: bool, nulls: Optional[set] = None) -> Any:
    if columns is not None:
        schema = pa.schema([schema.field(c) for c in columns])
    # int columns that hold a null anywhere in the dataset are nullable ints in every partition
    return backend.empty_frame(schema, cpu, nulls)


def null_columns(files: List[str]) -> set:
    """Names of the columns that hold at least one null in any of ``files`` (from parquet statistics)."""
    out: set = set()
    for f in files:
        out |= _file_null_columns(f, os.path.getmtime(f))
    return out


@functools.lru_cache(maxsize=4096)
def _file_null_columns(path: str, mtime: float) -> frozenset:
    return _footer_null_columns(read_footer(path))


def _footer_null_columns(md: Any) -> frozenset:
    """Columns of one parquet footer that may hold a null (no statistics counts as "may")."""
    names = []
    for j in range(md.num_columns):
        col = md.schema.column(j)
        for i in range(md.num_row_groups):
            if md.row_group(i).num_rows == 0:
                continue  # an empty row group (empty file) has no statistics and holds no null
            st = md.row_group(i).column(j).statistics
            if st is None or not st.has_null_count or st.null_count > 0:
                names.append(col.path.split(".")[0])
                break
    return frozenset(names)
