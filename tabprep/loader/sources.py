"""Sources of a loader: units of data (row groups, partitions, row ranges) and how to read them.

Part of :mod:`tabprep.loader.core` (see its docstring for the loader's data flow).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import pyarrow as pa

from .. import backend
from ..schema import Schema

#: rows of one unit when the source is an in-memory frame (units are grouped into pieces)
FRAME_UNIT_ROWS = 8192

log = logging.getLogger("tabprep.loader.core")


# ---------------------------------------------------------------------------------------
# sources: units of data and how to read them
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Unit:
    group: int       # pieces never span groups (files)
    key: Any         # row-group index / partition index / (start, stop)
    num_rows: int


@dataclass(frozen=True)
class _Piece:
    """Consecutive units of one group, rows ``[start, stop)`` of their concatenation."""

    units: Tuple[int, ...]
    start: int
    stop: int

    @property
    def num_rows(self) -> int:
        return self.stop - self.start


class _Source:
    """Where the rows come from. Subclasses fill ``units``, ``cpu``, ``schema``."""

    units: List[_Unit]
    cpu: bool
    schema: Optional[Schema]

    def read(self, units: Sequence[_Unit], columns: Optional[List[str]]) -> Any:
        raise NotImplementedError

    def read_part(self, units: Sequence[_Unit], columns: Optional[List[str]]) -> Any:
        """Rows of ``units`` as a *part*: a frame, or whatever :meth:`stack` stacks best; parts
        are sliced with :func:`tabprep.backend.slice_rows`."""
        return self.read(units, columns)

    def read_pieces(self, pieces: Sequence["_Piece"], columns: Optional[List[str]]) -> Any:
        """The rows of ``pieces``, in order, as one frame read at once; None where this source reads
        piece by piece (the caller then reads each piece and stacks them)."""
        return None

    def column_stream(self, pieces: Sequence["_Piece"],
                      columns: Optional[List[str]]) -> Optional["_ColumnStream"]:
        """``(name, parts)`` of each of ``columns`` in turn, read one column at a time: ``parts`` are
        the column's values in each of ``pieces`` (trimmed to the piece's rows), in order. None where
        this source does not read column by column (the caller reads whole pieces). The stream's
        ``types`` are the columns' expected Arrow types."""
        return None

    def stack(self, parts: Sequence[Any]) -> Any:
        """One frame (index 0..n-1) of parts stacked in order."""
        return parts[0].reset_index(drop=True) if len(parts) == 1 else backend.concat_rows(parts)

    def stack_columns(self, parts: Sequence[Any]) -> Any:
        """Parts stacked in order for the loader to take columns from (:func:`tabprep.backend.frame_column`)
        when no transform needs a frame: :meth:`stack` unless the source has something cheaper."""
        return self.stack(parts)

    def row_bytes(self, columns: Optional[List[str]]) -> float:
        """Estimated bytes of one row of ``columns`` in memory."""
        raise NotImplementedError

    def describe(self) -> str:
        return type(self).__name__


class _ParquetSource(_Source):
    def __init__(self, files: List[str], cpu: bool, schema: Optional[Schema],
                 footers: Optional[Dict[str, Any]] = None, storage_options: Optional[Dict[str, Any]] = None) -> None:
        import pyarrow.parquet as pq

        from ..io.fs import arrow_path

        self.files = files
        # (path, file system) of each file: the path itself and None locally, the file system's
        # path and its fsspec instance for a URL (s3://...)
        self._where = [arrow_path(f, storage_options) for f in files]
        self.cpu = cpu
        self.schema = schema
        # parquet on the CPU: parts are Arrow tables, stacked and converted to pandas once
        self._reader = backend.parquet_reader(cpu)
        self.units = []
        self._row_bytes: Dict[str, float] = {}
        #: each file's footer (the column stream's expected types come from it)
        self._footers: List[Any] = []
        total_rows = 0
        for gi, f in enumerate(files):
            try:
                # the Dataset's footers: read once, and checked (files agree, tabprep outputs complete)
                md = footers[f] if footers is not None and f in footers else \
                    pq.ParquetFile(self._where[gi][0], filesystem=self._where[gi][1]).metadata
            except Exception as exc:  # noqa: BLE001 - any unreadable file gets the same advice
                raise ValueError(f"cannot read parquet file {f}: {exc}. Remove or re-write it.") from exc
            self._footers.append(md)
            for i in range(md.num_row_groups):
                rg = md.row_group(i)
                if rg.num_rows:
                    self.units.append(_Unit(gi, i, rg.num_rows))
                    total_rows += rg.num_rows
                for j in range(rg.num_columns):
                    col = rg.column(j)
                    name = col.path_in_schema.split(".")[0]
                    self._row_bytes[name] = self._row_bytes.get(name, 0.0) + col.total_uncompressed_size
        self._total_rows = max(total_rows, 1)

    def read(self, units: Sequence[_Unit], columns: Optional[List[str]]) -> Any:
        path, filesystem = self._where[units[0].group]
        return backend.read_parquet_piece(path, [u.key for u in units], columns, self.cpu, filesystem=filesystem,
                                          direct=True)

    def read_arrow(self, units: Sequence[_Unit], columns: Optional[List[str]]) -> Any:
        path, filesystem = self._where[units[0].group]
        return backend.read_parquet_table(path, [u.key for u in units], columns, filesystem)

    def read_part(self, units: Sequence[_Unit], columns: Optional[List[str]]) -> Any:
        path, filesystem = self._where[units[0].group]
        keys = [u.key for u in units]
        with corrupt_named(self.files[units[0].group], keys):   # the footer was read at the start
            return self._reader.read(path, keys, columns, filesystem=filesystem)

    def read_pieces(self, pieces: Sequence["_Piece"], columns: Optional[List[str]]) -> Any:
        # on the GPU, a chunk's whole pieces of local files in one cuDF read: libcudf decodes the
        # files side by side and no concatenation follows (per piece: 78 ms per 2.5M Criteo rows on
        # an H100, against 34 ms in one call). Trimmed pieces, remote files and files whose schemas
        # differ (cuDF refuses to read them together) go piece by piece.
        if self.cpu or len(pieces) < 2:
            return None
        paths, groups = [], []
        for p in pieces:
            units = [self.units[i] for i in p.units]
            path, filesystem = self._where[units[0].group]
            if filesystem is not None or p.start or p.stop != sum(u.num_rows for u in units):
                return None
            paths.append(path)
            groups.append([u.key for u in units])
        try:
            return backend.read_parquet_pieces(paths, groups, columns, False, direct=True)
        except Exception as exc:  # noqa: BLE001 - e.g. schemas differ between files: read piece by piece
            log.debug("reading %d pieces in one call failed (%s); reading them one by one", len(pieces), exc)
            return None

    def column_stream(self, pieces: Sequence["_Piece"],
                      columns: Optional[List[str]]) -> Optional["_ColumnStream"]:
        # on the CPU, local files: the loader gathers each column into its block right after reading
        # it, while its values are still in the CPU's cache (a chunk's whole pieces read first had
        # left the first columns' values out of the cache by the time of their gather: 0.91-1.07 s
        # against 1.2-1.6 s for 4 chunks of 2M transformed Criteo rows on one thread)
        if not self.cpu or columns is None or not pieces:
            return None
        if any(self._where[self.units[p.units[0]].group][1] is not None for p in pieces):
            return None   # remote files keep the coalesced whole-piece reads
        return self._columns(pieces, columns)

    def _columns(self, pieces: Sequence["_Piece"], columns: List[str]) -> "_ColumnStream":
        reads = []
        for p in pieces:   # one column reader per piece (its file's footer parsed once per chunk)
            units = [self.units[i] for i in p.units]
            full = sum(u.num_rows for u in units)
            trim = (p.start, p.stop - p.start) if p.start or p.stop != full else None
            keys = [u.key for u in units]
            reads.append((backend.read_parquet_columns(self._where[units[0].group][0], keys, columns),
                          self.files[units[0].group], keys, trim))
        group = self.units[pieces[0].units[0]].group
        return _ColumnStream(reads, columns, arrow_schema_of(self.files[group], self._footers[group]))

    def stack(self, parts: Sequence[Any]) -> Any:
        return self._reader.stack(parts)

    def stack_columns(self, parts: Sequence[Any]) -> Any:
        # on the CPU the parts are Arrow tables: concatenated without a copy, their numeric columns
        # then go to numpy without a pandas frame (about a third of the no-workflow chunk's time)
        if self.cpu and all(isinstance(p, pa.Table) for p in parts):
            try:
                return parts[0] if len(parts) == 1 else pa.concat_tables(parts)
            except pa.ArrowInvalid:   # schemas differ between files: pandas reconciles them
                pass
        return self.stack(parts)

    def row_bytes(self, columns: Optional[List[str]]) -> float:
        names = columns if columns is not None else list(self._row_bytes)
        return max(sum(self._row_bytes.get(c, 8.0 * self._total_rows) for c in names) / self._total_rows, 1.0)

    def describe(self) -> str:
        return f"{len(self.files)} parquet file(s) like {self.files[0]}" if self.files else "no files"


class _ColumnStream:
    """A chunk's columns read one at a time from its pieces' parquet files (``reads``: per piece,
    :func:`tabprep.backend.read_parquet_columns` of ``columns``, the file as the user named it, its
    row groups and ``(start, length)`` or None): iterating gives ``(name, parts)``; ``types`` are
    the Arrow types of the first piece's file (``schema``: what a column is expected to be)."""

    def __init__(self, reads: List[Tuple[Iterator[Tuple[str, Any]], str, List[Any], Optional[Tuple[int, int]]]],
                 columns: List[str], schema: pa.Schema) -> None:
        self._reads = reads
        self._columns = columns
        self.types: Dict[str, Any] = {f.name: f.type for f in schema}

    def __iter__(self) -> Iterator[Tuple[str, List[Any]]]:
        for name in self._columns:
            parts = []
            for stream, where, keys, trim in self._reads:   # (each stream yields ``columns`` in order)
                with corrupt_named(where, keys):
                    _, col = next(stream)
                parts.append(col.slice(*trim) if trim is not None else col)
            yield name, parts


class _FrameSource(_Source):
    def __init__(self, frame: Any, schema: Optional[Schema]) -> None:
        self.frame = frame.reset_index(drop=True)
        self.cpu = backend.is_cpu(frame)
        self.schema = schema
        n = len(self.frame)
        self.units = [_Unit(0, (a, min(a + FRAME_UNIT_ROWS, n)), min(a + FRAME_UNIT_ROWS, n) - a)
                      for a in range(0, n, FRAME_UNIT_ROWS)]

    def read(self, units: Sequence[_Unit], columns: Optional[List[str]]) -> Any:
        df = self.frame if columns is None else self.frame[list(columns)]
        return df.iloc[units[0].key[0]: units[-1].key[1]]

    def row_bytes(self, columns: Optional[List[str]]) -> float:
        df = self.frame if columns is None else self.frame[list(columns)]
        return max(float(df.memory_usage(index=False).sum()) / max(len(df), 1), 1.0)


class _DaskSource(_Source):
    """Partitions of a dask (or dask-cuDF) frame; their lengths are computed once (one pass)."""

    def __init__(self, ddf: Any, cpu: bool, schema: Optional[Schema]) -> None:
        self.ddf = ddf
        self.cpu = cpu
        self.schema = schema
        lengths = ddf.map_partitions(len).compute()
        self.units = [_Unit(i, i, int(n)) for i, n in enumerate(lengths) if int(n) > 0]

    def read(self, units: Sequence[_Unit], columns: Optional[List[str]]) -> Any:
        ddf = self.ddf if columns is None else self.ddf[list(columns)]
        frames = [ddf.get_partition(u.key).compute() for u in units]
        return frames[0] if len(frames) == 1 else backend.concat_rows(frames)

    def row_bytes(self, columns: Optional[List[str]]) -> float:
        meta = self.ddf._meta if columns is None else self.ddf._meta[list(columns)]
        return 8.0 * max(len(meta.columns), 1)


def reader_cpu(reader_kwargs: Optional[Dict[str, Any]], cpu: Optional[bool],
               device: Any) -> "tuple[Optional[Dict[str, Any]], Optional[bool]]":
    """``(reader_kwargs less "cpu", cpu)``: NVTabular's loaders take the device of the data they
    read as ``reader_kwargs={"cpu": True}`` (its ``Dataset``'s keyword); tabprep's is ``device=``.
    Both given and disagreeing is a ``ValueError``."""
    if not reader_kwargs or "cpu" not in reader_kwargs:
        return reader_kwargs, cpu
    kwargs = dict(reader_kwargs)
    given = kwargs.pop("cpu")
    if given is None:
        return kwargs, cpu
    if device is not None and bool(given) != bool(cpu):
        raise ValueError(f"reader_kwargs={{'cpu': {given!r}}} contradicts device={device!r}; give one of them")
    return kwargs, bool(given)


def reader_options(data: Any, reader_kwargs: Optional[Dict[str, Any]],
                   storage_options: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The loader's ``reader_kwargs`` with its ``storage_options=`` keyword merged in.

    ``storage_options`` may be given either way (pandas' / dask's keyword, or inside
    ``reader_kwargs`` as before); both ways with different values is a ``ValueError``, as is a
    :class:`tabprep.Dataset` input whose own options differ (a Dataset reads with its own)."""
    from ..io.dataset import Dataset

    kwargs = dict(reader_kwargs or {})
    if storage_options is not None:
        given = kwargs.get("storage_options")
        if given is not None and dict(given) != dict(storage_options):
            raise ValueError("storage_options were given twice with different values: as storage_options= and in "
                             "reader_kwargs['storage_options']; pass them once (storage_options=)")
        kwargs["storage_options"] = storage_options
    so = kwargs.get("storage_options")
    if isinstance(data, Dataset) and so is not None and dict(so) != dict(data.storage_options or {}):
        raise ValueError("the loader's storage_options differ from those of the Dataset it was given, which reads "
                         "its files with its own: pass them to tp.Dataset(..., storage_options=) only")
    return kwargs or None


def _make_source(data: Any, cpu: Optional[bool], engine: Optional[str], reader_kwargs: Optional[Dict[str, Any]],
                 schema: Optional[Schema]) -> _Source:
    from ..io.dataset import Dataset

    if isinstance(data, Dataset):
        ds = data
    elif _is_frame(data):
        frame = backend.to_backend(backend.lists_to_arrow(data), cpu)  # list cells (numpy / Python) as Arrow lists
        from ..workflow.workflow import schema_of_frame

        return _FrameSource(frame, schema or schema_of_frame(frame))
    else:
        ds = Dataset(data, engine=engine, cpu=cpu, **(reader_kwargs or {}))
    # (hive keys: read through the Dataset's partitions, which add them as columns)
    if ds.engine == "parquet" and ds.files and getattr(ds, "_ddf", None) is None and not ds.hive_keys:
        use_cpu = ds.cpu if cpu is None else backend.resolve_cpu(cpu)
        return _ParquetSource(ds.files, use_cpu, schema or ds.schema, footers=ds.file_metadata,
                              storage_options=getattr(ds, "storage_options", None))
    if ds.engine == "memory" and not ds.files:
        # an in-memory Dataset: slice the frame itself rather than computing dask partitions
        frame = ds._to_ddf().compute()
        return _make_source(frame, cpu if cpu is not None else ds.cpu, None, None, schema or ds.schema)
    return _DaskSource(ds._to_ddf(), ds.cpu, schema or ds.schema)


from .._util import is_frame as _is_frame  # noqa: E402 - one definition for the package
from ..io.dataset_read import corrupt_named  # noqa: E402
from ..io.planning import arrow_schema_of  # noqa: E402
