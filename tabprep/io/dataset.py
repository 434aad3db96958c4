"""Dataset: a lazily read, partitioned table on the CPU (pandas) or the GPU (cuDF).

Reading verifies before it plans (issue #11):

* a folder tabprep wrote (it has ``_metadata.json``, ``_schema.json`` or the
  ``.tabprep-incomplete`` marker) is read only when it is complete: ``_SUCCESS`` present, the
  parquet files its ``_metadata.json`` lists all there and nothing else, and each file's row count
  (from its footer) as recorded. Otherwise ``ValueError`` names the folder or file and says to run
  the write again. A path that is missing while an interrupted commit left its hidden
  temporaries next to it is first recovered (:func:`tabprep.io.commit.recover`).
* every parquet footer is read once (:attr:`Dataset.file_metadata`), and the files must agree:
  an unreadable file, duplicate column names, a file missing a column or holding a column of
  another kind raise ``ValueError`` naming the file and the column
  (:func:`tabprep.io.planning.check_file_schemas`).
* ``_schema.json`` (tags, cardinalities) is taken only from the data files' own folder.

Paths may be fsspec URLs (``s3://bucket/data/``, ``gs://...``; ``storage_options=`` as in
pandas, see :mod:`tabprep.io.fs`): files are listed and their footers read through the file
system, and the partitions' read tasks carry the options to the workers. A tabprep folder on
remote storage is read only with ``_SUCCESS`` (its commit, :mod:`tabprep.io.objectstore`).
"""
from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import pyarrow as pa
import pyarrow.parquet as pq

from .. import backend
from .._util import refuse_duplicate_columns, whole, whole_number
from .._warn import reemit_from_cluster
from ..schema import Schema
from ..schema_merlin import merlin_json_columns
from .commit import INCOMPLETE_MARKER, METADATA_FILE, SCHEMA_FILE, SUCCESS_FILE, Transaction  # noqa: F401
from . import fs as fsmod
from .dataset_compat import DatasetCompat, Shuffle, prepare_output  # noqa: F401 - Shuffle: tp.io.Shuffle
from .csv_check import csv_read_options
from .dataset_options import part_size_of_fraction, split_read_kwargs
from .planning import Piece, arrow_schema_of, check_file_schemas, plan_pieces, read_footer  # noqa: F401
from .planning import row_group_memory as _row_group_memory  # noqa: F401 - re-exported
from .paths import _expand, expand_paths, infer_engine as _infer_engine  # noqa: F401 - expand_paths is re-exported
from .writer import write_dataset
# reading partitions lives in dataset_read.py; its names stay importable from here
from .dataset_read import (  # noqa: F401
    _file_null_columns, _footer_null_columns, _io_timed, _meta_from_file, _meta_from_schema, _note_source, _read_piece,
    _run_part, null_columns, nullable_frame, piece_columns, source_noted, timed_columns, timed_read,
)

log = logging.getLogger(__name__)

#: default partition size (uncompressed bytes of the columns read); the GPU takes bigger bites
#: (see :class:`tabprep.backend.HostDevice` / :class:`~tabprep.backend.CudaDevice`)
DEFAULT_PART_SIZE_CPU = backend.PART_SIZE_CPU
#: GPU floor; the default is 1/16 of the device's memory when larger
DEFAULT_PART_SIZE_GPU = backend.PART_SIZE_GPU


def parse_size(size: Union[None, int, str]) -> Optional[int]:
    """``"128MB"`` / ``"1GiB"`` / ``1000000`` -> bytes (None stays None), as dask's ``parse_bytes``
    reads them, which merlin-core's ``Dataset(part_size=)`` and dask-cuda's sizes use: kB / KB, MB,
    GB, TB are powers of 1000, KiB, MiB, GiB, TiB powers of 1024 ("128MB" is 128,000,000 bytes).
    ``ValueError`` for text that is not a size."""
    if size is None or isinstance(size, int):
        return size
    from dask.utils import parse_bytes   # (here: `import tabprep` imports no dask)

    try:
        return int(parse_bytes(str(size)))
    except (KeyError, TypeError) as exc:   # (older dask raised KeyError for an unknown unit)
        raise ValueError(f"{size!r} is not a size like '128MB', '1GiB' or 1000000") from exc


def _check_partitioning(part_size: Any, npartitions: Any) -> None:
    """``ValueError`` for a ``part_size`` that is not a size of at least one byte (``"128MB"`` or a
    whole number of bytes) and an ``npartitions`` that is not a whole number >= 1: -1 bytes made a
    partition per row group and ``npartitions=0`` one partition, silently."""
    if part_size is not None:
        size = parse_size(part_size) if isinstance(part_size, str) else whole_number(part_size, 1)
        if size is None or size < 1:
            raise ValueError(f"part_size must be a size like '128MB' or a number of bytes >= 1, got {part_size!r}")
    if npartitions is not None:
        whole("npartitions", npartitions, 1)


class Dataset(DatasetCompat):
    """A table read lazily in partitions.

    Args:
        path_or_source: a parquet/csv file, a glob (``"data/*.parquet"``), a folder, a list of
            files, or an in-memory pandas / cuDF / dask DataFrame.
        engine: ``"parquet"`` or ``"csv"`` (default: from the file extension).
        part_size: target bytes of one partition (uncompressed columns read), e.g. ``"256MB"``;
            default 128 MB on CPU, 1 GB on GPU. Partitions are made of whole parquet row groups.
        cpu: None picks cuDF when it is usable, True forces pandas, False forces cuDF.
        npartitions: for in-memory frames, how many partitions to split them into.
        part_mem_fraction: NVTabular's other spelling of ``part_size``: that fraction of the
            device's total memory (the GPU's; the host's RAM on the CPU).
        storage_options: options of the remote file system of URL paths (``s3://``, ``gs://``...),
            e.g. ``{"key": ..., "secret": ..., "endpoint_url": ...}`` for S3 (see
            :mod:`tabprep.io.fs`); default: the file system reads the environment
            (``AWS_ACCESS_KEY_ID``...). Ignored for local paths.
        **read_kwargs: for csv, passed to the reader (the keywords of ``pandas.read_csv``, e.g.
            ``sep``, ``names``); for parquet, ``row_groups_per_part=N`` (NVTabular's: a partition
            is N consecutive row groups of one file, instead of ``part_size`` bytes). Any other
            keyword is a ``TypeError`` naming it (NVTabular ignores most of them).

    Example:
        >>> ds = Dataset("data/train/*.parquet", part_size="256MB")
        >>> ds.num_rows
    """

    def __init__(self, path_or_source: Any, engine: Optional[str] = None, part_size: Union[None, int, str] = None,
                 cpu: Optional[bool] = None, npartitions: Optional[int] = None, schema: Optional[Schema] = None,
                 storage_options: Optional[Dict[str, Any]] = None, part_mem_fraction: Optional[float] = None,
                 **read_kwargs: Any) -> None:
        self.source = path_or_source
        self.storage_options = dict(storage_options) if storage_options else None
        self.engine = engine
        self.part_size = part_size
        self.npartitions_hint = npartitions
        self.read_kwargs = read_kwargs
        #: NVTabular's ``row_groups_per_part`` (parquet): row groups of one file per partition
        self.row_groups_per_part: Optional[int] = None
        self._ddf = None
        #: builds ``_ddf`` at the first :meth:`to_ddf` (a transform's frame; see :meth:`_from_ddf`)
        self._ddf_factory: Optional[Callable[[], Any]] = None
        self._pieces: Optional[List[Piece]] = None
        self._schema = schema
        self.files: List[str] = []
        #: rows of each file as recorded in the _metadata.json of the tabprep output it belongs to
        self._expected_rows: Dict[str, int] = {}
        self._footers: Optional[Dict[str, Any]] = None
        self._nulls: Optional[set] = None
        self._tables: Optional[Tuple[Any, ...]] = None
        self._csv_kwargs: Optional[Dict[str, Any]] = None
        src = path_or_source
        if isinstance(src, Dataset):
            self.__dict__.update(src.__dict__)
            return
        if part_size is not None and part_mem_fraction is not None:
            raise TypeError("give part_size or part_mem_fraction (NVTabular's), not both")
        _check_partitioning(part_size, npartitions)
        if _is_dask_frame(src):
            self.cpu = backend.is_cpu(src._meta) if cpu is None else backend.resolve_cpu(cpu)
            self._ddf = src
            self.engine = "dask"
        elif _is_memory_frame(src):
            self.cpu = backend.is_cpu(src) if cpu is None else backend.resolve_cpu(cpu)
            # object columns of bools, Decimals, bytes or mixes would become strings ("True", "1.5")
            # in the dask frame, and a later transform of the frame itself would not match (issue #30)
            refuse_duplicate_columns(src.columns, "the frame")
            found = backend.non_string_objects(src, list(src.columns))
            if found:
                raise TypeError(backend.non_string_objects_message(found, "the frame"))
            frame = backend.to_backend(src, self.cpu)
            self._ddf = _from_frame(frame, npartitions or 1)
            self.engine = "memory"
        else:
            self.cpu = backend.resolve_cpu(cpu)
            self.files, self._expected_rows, (self._hive, self._hive_types) = _expand(src, self.storage_options, engine)
            self.engine = engine or _infer_engine(self.files, self.storage_options)
            if self.engine not in ("parquet", "csv"):
                raise ValueError(f"engine must be 'parquet' or 'csv', got {self.engine!r}")
        self.row_groups_per_part, self.read_kwargs = split_read_kwargs(self.engine, read_kwargs, self.describe())
        if part_mem_fraction is not None:
            self.part_size = part_size_of_fraction(part_mem_fraction, self.cpu)

    # -- construction used by Workflow.transform -----------------------------------------
    @classmethod
    def _from_ddf(cls, make_ddf: Callable[[], Any], schema: Schema, cpu: bool, source: str,
                  tables: Optional[Tuple[Any, ...]] = None) -> "Dataset":
        """A dataset of the dask frame the no-argument callable ``make_ddf`` builds at the first
        :meth:`to_ddf` (so that a transform written from its ``tables`` never imports
        dask.dataframe, ~0.5 s). ``tables``: ``(source dataset, columns, fn, handle, args)``,
        how to compute the same partitions in one task each from the source's parquet pieces instead
        (see :meth:`_table_tasks`): ``fn(part, handle, *args)`` for each partition of the source's
        ``columns``, read as an Arrow table on the CPU and as a cuDF frame on the GPU; ``handle`` may
        be a dask collection or future (a dependency of every task)."""
        ds = cls.__new__(cls)
        ds.source = source
        ds.engine = "dask"
        ds.part_size = None
        ds.npartitions_hint = None
        ds.read_kwargs = {}
        ds.storage_options = None
        ds._ddf = None
        ds._ddf_factory = make_ddf
        ds._pieces = None
        ds._schema = schema
        ds.files = []
        ds._expected_rows = {}
        ds._footers = None
        ds._nulls = None
        ds._tables = tables
        ds._csv_kwargs = None
        ds.cpu = cpu
        return ds

    # -- description ---------------------------------------------------------------------
    def describe(self) -> str:
        if self.files:
            shown = self.files[0] if len(self.files) == 1 else f"{len(self.files)} files like {self.files[0]}"
            return f"the dataset ({shown})"
        return f"the dataset ({self.source if isinstance(self.source, str) else type(self.source).__name__})"

    def __repr__(self) -> str:
        return f"Dataset({self.describe()}, cpu={self.cpu})"

    def input_paths(self) -> List[Tuple[str, Any]]:
        """``(path, storage options)`` of what this dataset reads: the folders it was given and the
        files they resolved to; a transformed dataset's are its source's (``Workflow.transform``)."""
        found = list(self._tables[0].input_paths()) if self._tables else []
        if self.files:  # read from paths (not a frame, nor a transform)
            so = self.storage_options
            for item in self.source if isinstance(self.source, (list, tuple)) else [self.source]:
                if isinstance(item, (str, os.PathLike)) and not any(c in str(item) for c in "*?["):
                    fs, where = fsmod.get_fs(str(item), so)
                    if fs.isdir(where):
                        found.append((str(item), so))
            found += [(f, so) for f in self.files]
        return found

    def _refuse_own_input(self, path: Any, storage_options: Optional[Dict[str, Any]]) -> None:
        """``ValueError`` if ``path`` is, holds or lies inside one of :meth:`input_paths` (writing
        there would delete or replace the data being read; the CLI refuses the same)."""
        inputs = self.input_paths()
        found = fsmod.overlap(path, [("read by the dataset", p, so) for p, so in inputs],
                              storage_options) if inputs else None
        if found is not None:
            raise ValueError(f"output path {str(path)!r} {found[1]}. Write to a folder outside the dataset's inputs")

    # -- schema and size -----------------------------------------------------------------
    @property
    def schema(self) -> Schema:
        """Column names and dtypes (plus tags/properties when written by tabprep)."""
        if self._schema is None:
            self._schema = self._infer_schema()
        return self._schema

    @property
    def file_metadata(self) -> Dict[str, Any]:
        """The parquet footer (``pyarrow.parquet.FileMetaData``) of every file, read once and checked.

        Raises ``ValueError`` naming the file (and column) for an unreadable file, duplicate
        column names, files whose columns or column kinds disagree with the first file, and a
        file of a tabprep output whose row count differs from its ``_metadata.json``.
        Empty for csv and in-memory data.
        """
        if self._footers is None:
            if self.engine != "parquet":
                return {}
            so = self.storage_options
            if any(fsmod.is_remote(f) for f in self.files) and len(self.files) > 1:
                # remote footers: a round trip each, so read them concurrently
                from concurrent.futures import ThreadPoolExecutor

                with ThreadPoolExecutor(min(16, len(self.files))) as pool:
                    footers = dict(zip(self.files, pool.map(lambda f: read_footer(f, so), self.files)))
            else:
                footers = {f: read_footer(f, so) for f in self.files}
            schemas = [arrow_schema_of(f, footers[f]) for f in self.files]
            check_file_schemas(self.files, schemas)
            clash = [k for k in self.hive_keys if k in schemas[0].names]
            if clash:
                folder = next(f"{clash[0]}={v}" for v in [self._hive[self.files[0]][clash[0]]])
                raise ValueError(f"the hive key {clash[0]!r} (folder {folder} of {self.files[0]}) is also a column of the "
                                 f"files: the data names {clash[0]!r} twice (pyarrow refuses it too). Rename the key "
                                 f"folders or the column.")
            for f, md in footers.items():
                want = self._expected_rows.get(fsmod.fs_of(f, so).norm(f))
                if want is not None and md.num_rows != want:
                    raise ValueError(f"the parquet file {f} holds {md.num_rows} rows but the {METADATA_FILE} of its "
                                     f"tabprep output lists {want}: it was changed after tabprep wrote it. Run the "
                                     f"write that produced it again.")
            self._footers = footers
        return self._footers

    @property
    def hive_keys(self) -> Dict[str, str]:
        """The hive keys read as columns (``key=value`` folders): name -> ``"int64"`` / ``"string"``."""
        return dict(getattr(self, "_hive_types", None) or {})

    def _arrow_schema(self) -> pa.Schema:
        """The first file's Arrow schema, the hive keys after its columns."""
        first = self.files[0]
        schema = arrow_schema_of(first, self.file_metadata[first])
        for k, t in self.hive_keys.items():
            schema = schema.append(pa.field(k, pa.int64() if t == "int64" else pa.string()))
        return schema

    def _infer_schema(self) -> Schema:
        if self.engine == "parquet":
            first = self.files[0]
            try:
                base = Schema.from_arrow(self._arrow_schema())
            except ValueError as exc:
                if ".parquet" in first or ".pq" in first:
                    raise
                raise ValueError(f"{exc} For csv files, pass engine='csv'.") from exc
            stored = _stored_schema(self.files[0], self.storage_options, base)
            if stored is not None:
                return Schema(stored[c.name] if c.name in stored else c for c in base)
            return base
        return Schema.from_frame(self._to_ddf()._meta)

    @property
    def num_rows(self) -> int:
        if self.engine == "parquet":
            return sum(p.num_rows for p in self.pieces)
        return int(self._to_ddf().map_partitions(len).sum().compute())

    @property
    def npartitions(self) -> int:
        """Partitions of :meth:`_to_ddf`'s frame (of parquet data and its transforms: from the
        files' pieces, without building the frame)."""
        if self._ddf is None:
            if self.engine == "parquet":
                return max(1, len(self.pieces))  # no piece: to_ddf gives one empty partition
            if self._tables is not None:
                return self._tables[0].npartitions  # a transform keeps its source's partitions
        return self._to_ddf().npartitions

    def meta_frame(self, columns: Optional[Sequence[str]] = None) -> Any:
        """An empty frame of ``columns`` (default all) with :meth:`_to_ddf`'s partition dtypes (dask's
        ``meta``); for parquet data without building the dask frame."""
        if self.engine == "parquet" and self._ddf is None:
            return self._parquet_meta(list(columns) if columns is not None else self.schema.column_names)[0]
        return self._to_ddf(columns=columns)._meta

    # -- partitions ------------------------------------------------------------------------
    @property
    def pieces(self) -> List[Piece]:
        if self._pieces is None:
            dev = backend.compute_device(self.cpu)
            self._pieces = plan_pieces(self.files, parse_size(self.part_size) or dev.default_part_size(),
                                       span_files=dev.pieces_span_files, footers=self.file_metadata,
                                       keys={f: tuple((k, t, self._hive[f][k]) for k, t in self.hive_keys.items())
                                             for f in self.files} if self.hive_keys else None,
                                       row_groups_per_part=getattr(self, "row_groups_per_part", None))
        return self._pieces

    def to_ddf(self, columns: Optional[Sequence[str]] = None) -> Any:
        """The dask (or dask-cuDF) DataFrame, as NVTabular (merlin-core) hands it to users;
        ``columns`` limits what is read.

        On the CPU, list columns are object columns of numpy arrays (one per row; a null row:
        None) in every partition and in the meta, as :meth:`compute` gives them (pyarrow's
        ``to_pandas``). tabprep's own reads, transforms and writes use :meth:`_to_ddf`, whose
        pandas partitions keep Arrow list columns (one buffer per column, no array per row)."""
        ddf = self._to_ddf(columns)
        meta = ddf._meta
        if not backend.arrow_list_columns(meta):
            return ddf
        return ddf.map_partitions(backend.lists_to_numpy, meta=backend.lists_to_numpy(meta),
                                  token="tabprep-numpy-list-cells")

    def _to_ddf(self, columns: Optional[Sequence[str]] = None) -> Any:
        """The dask (or dask-cuDF) DataFrame as tabprep computes on it (pandas partitions hold list
        columns as Arrow list columns); ``columns`` limits what is read. See :meth:`to_ddf`."""
        if self._ddf is None and self._ddf_factory is not None:
            self._ddf = self._ddf_factory()
        if self._ddf is not None:
            return self._ddf[list(columns)] if columns is not None else self._ddf
        if self.engine == "parquet":
            cols = list(columns) if columns is not None else None
            schema = self.schema
            meta_cols = cols if cols is not None else schema.column_names
            meta, nullable = self._parquet_meta(meta_cols)
            pieces = self.pieces
            if not pieces:
                return _from_frame(meta, 1)
            # storage_options travel in the graph: each task builds its file system on its worker
            extra = {"storage_options": self.storage_options} if self.storage_options else {}
            import dask.dataframe as dd  # here, not at import: it imports dask.array and scipy (~0.8 s of CLI start)

            return dd.from_map(_read_piece, pieces, columns=cols, cpu=self.cpu, nullable=nullable, meta=meta,
                               label="tabprep-read-parquet", enforce_metadata=False, **extra)
        # csv
        blocksize = self._csv_block_size()
        if getattr(self, "_csv_kwargs", None) is None:   # the files' heads agree (once)
            self._csv_kwargs = csv_read_options(self.files, self.read_kwargs, self.storage_options)
        kwargs = dict(self._csv_kwargs)
        if self.storage_options and any(fsmod.is_remote(f) for f in self.files):
            kwargs["storage_options"] = self.storage_options  # dask's csv reader opens URLs with fsspec
        ddf = backend.read_csv(self.files, blocksize, self.cpu, **kwargs)
        return ddf[list(columns)] if columns is not None else ddf

    def _csv_block_size(self) -> int:
        """Bytes of each csv block (one partition): ``part_size``, else the device's default."""
        return parse_size(self.part_size) or backend.compute_device(self.cpu).csv_block_size

    def _parquet_meta(self, columns: List[str]) -> Tuple[Any, Dict[str, str]]:
        """dask's ``meta`` frame of ``columns`` and the nullable int dtypes every partition is cast to.

        Built once per column list (25-45 ms for the 40 Criteo columns; a fit or a transform asks
        three times: ``to_ddf``, ``_piece_readers``, ``_nullable_dtypes``); callers get copies."""
        memo = self.__dict__.setdefault("_meta_memo", {})
        key = (tuple(columns), self.cpu)
        if key not in memo:
            footers = self.file_metadata
            arrow_schema = self._arrow_schema()
            if self._nulls is None:
                self._nulls = set().union(*(_footer_null_columns(md) for md in footers.values()))
                self._nulls |= {k for k in self.hive_keys if any(self._hive[f][k] is None for f in self.files)}
            meta = _meta_from_schema(arrow_schema, columns, self.cpu, self._nulls)
            memo[key] = (meta, backend.nullable_int_dtypes(meta))
        meta, nullable = memo[key]
        return meta.copy(), dict(nullable)

    def _table_tasks(self, finish: Optional[Callable[[Any, int], Any]] = None) -> Optional[List[Any]]:
        """For a transform of parquet data (see :meth:`_from_ddf`): one ``dask.delayed`` per partition
        that reads it, computes it (on the CPU from its Arrow table when the ops allow, else as
        :meth:`_to_ddf`'s frame) and, with ``finish``, returns ``finish(result, partition_index)``
        (the writer's write of the partition). None for other datasets.

        One task per partition, not a read task, a transform task and a write task: on a
        dask.distributed cluster the scheduler could otherwise run the write on another worker and
        move the whole partition there (measured on 2 GPU workers, 200M rows in 10 partitions: one
        such move took 4.4 s of a 12 s transform). The same rows and values either way."""
        import dask

        if self._tables is None:
            return None
        source, cols, fn, handle, args = self._tables
        readers = source._piece_readers(cols, arrow=True)
        if readers is None:
            return None
        # ``handle`` (a dask.delayed or a distributed future) stays an argument of the graph;
        # a task that writes is not pure (its key must not be shared with an earlier run)
        call = dask.delayed(_run_part, pure=finish is None)
        return [call(read, fn, args, handle, finish, i) for i, read in enumerate(readers)]

    def _piece_readers(self, columns: Sequence[str], arrow: bool = False) -> Optional[List[Any]]:
        """One picklable no-argument callable per partition of a parquet dataset, reading ``columns``
        as :meth:`_to_ddf`'s partition (``arrow=True`` on the CPU: as the Arrow table it is read as;
        an empty piece gives the empty frame). None for other datasets."""
        if self.engine != "parquet" or self._ddf is not None:
            return None
        cols = list(columns)
        _, nullable = self._parquet_meta(cols)
        pieces = self.pieces
        if not pieces:
            return None
        return [functools.partial(_read_piece, p, columns=cols, cpu=self.cpu, nullable=nullable,
                                  storage_options=self.storage_options, arrow=arrow and self.cpu) for p in pieces]

    def _nullable_dtypes(self, columns: Sequence[str]) -> Dict[str, str]:
        """The nullable int dtypes :meth:`_to_ddf`'s pandas partitions of ``columns`` are cast to."""
        if self.engine != "parquet" or not self.cpu:
            return {}
        return self._parquet_meta(list(columns))[1]

    def compute(self) -> Any:
        """The whole dataset as one pandas / cuDF DataFrame (it must fit in memory).

        On the CPU, list columns come as object columns of numpy arrays (a null row: None), as
        NVTabular gives them (and :meth:`to_ddf`'s partitions)."""
        try:
            out = self._to_ddf().compute()
        finally:
            reemit_from_cluster()  # warnings raised in a transform's tasks on distributed workers
        return backend.lists_to_numpy(out.reset_index(drop=True))

    # -- output ---------------------------------------------------------------------------
    def to_parquet(self, path: Optional[str] = None, output_files: Optional[int] = None,
                   out_files_per_proc: Optional[int] = None, shuffle: Optional[str] = None,
                   split_per_worker: Optional[int] = None, overwrite: bool = False, seed: Optional[int] = None,
                   row_group_size: Optional[int] = None, compression: str = "auto", progress: Any = None,
                   transaction: Optional[Transaction] = None, output_path: Optional[str] = None,
                   storage_options: Optional[Dict[str, Any]] = None, int_encoding: str = "delta",
                   dtypes: Optional[Dict[str, Any]] = None, cats: Any = None, conts: Any = None,
                   labels: Any = None) -> Dict[str, Any]:
        """Write the dataset as parquet; see :func:`tabprep.io.writer.write_dataset`.

        ``int_encoding``: ``"delta"`` (default) writes integer columns DELTA_BINARY_PACKED (faster to
        write and to read than dictionary encoding, as small on id columns; readers need it: pyarrow,
        cuDF, Polars, DuckDB, Spark >= 3.3), ``"dictionary"`` pyarrow's default encodings (the CPU
        writer; cuDF keeps its own). ``compression``: ``"auto"`` (default) leaves the delta-packed
        int columns uncompressed (snappy finds nothing in them) and snappy-compresses the others;
        ``"snappy"``, ``"zstd"``, ``"gzip"``, ``"lz4"``, ``"brotli"`` or ``"none"`` apply to every
        column (cuDF's writer takes ``"auto"`` as snappy). ``output_path=`` is NVTabular's name for
        ``path`` (accepted so ported scripts run). ``storage_options``: of the output's file system
        when ``path`` is a URL (``s3://``...; not taken from the input's). NVTabular's ``dtypes=``
        (``{column: dtype}``) casts output columns; ``cats=`` / ``conts=`` / ``labels=`` are recorded in
        ``_metadata.json`` with ``_file_list.txt`` (as NVTabular writes them for HugeCTR); ``shuffle``
        also takes ``tp.io.Shuffle.PER_PARTITION`` (NVTabular's enum)."""
        path = _output_path(path, output_path)
        self._refuse_own_input(path, storage_options)
        src, roles = prepare_output(self, dtypes, cats, conts, labels)
        return write_dataset(src, path, fmt="parquet", roles=roles, output_files=output_files,
                             out_files_per_proc=out_files_per_proc, shuffle=shuffle,
                             split_per_worker=split_per_worker, overwrite=overwrite, seed=seed,
                             format_options={"row_group_size": row_group_size, "compression": compression,
                                             "int_encoding": int_encoding},
                             progress=progress, transaction=transaction, storage_options=storage_options)

    def to_tfrecord(self, path: Optional[str] = None, batch_size: Optional[int] = None,
                    output_files: Optional[int] = None, split_per_worker: Optional[int] = None,
                    compression: Optional[str] = None, drop_last: bool = False, shuffle: Optional[str] = None,
                    overwrite: bool = False, seed: Optional[int] = None, progress: Any = None,
                    transaction: Optional[Transaction] = None, output_path: Optional[str] = None,
                    storage_options: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """Write TFRecords (one Example per row, or prebatched with ``batch_size``); see :mod:`tabprep.io.tfrecord`.
        ``output_path=`` is accepted for ``path`` (NVTabular's name); ``storage_options`` as in :meth:`to_parquet`."""
        path = _output_path(path, output_path)
        self._refuse_own_input(path, storage_options)
        return write_dataset(self, path, fmt="tfrecord", output_files=output_files, shuffle=shuffle,
                             split_per_worker=split_per_worker, overwrite=overwrite, seed=seed,
                             format_options={"batch_size": batch_size, "compression": compression,
                                             "drop_last": drop_last},
                             progress=progress, transaction=transaction, storage_options=storage_options)


# -- helpers -------------------------------------------------------------------------
def default_gpu_part_size() -> int:
    """:data:`DEFAULT_PART_SIZE_GPU` or 1/16 of the current device's memory, the larger."""
    return backend.CudaDevice(0).default_part_size()


def _from_frame(frame: Any, npartitions: int) -> Any:
    return backend.to_dask(frame, npartitions)  # pandas: list columns of Python objects become Arrow lists


_lists_to_arrow = backend.lists_to_arrow


def _stored_schema(first_file: str, storage_options: Optional[Dict[str, Any]], base: Schema) -> Optional[Schema]:
    """The _schema.json tabprep writes next to its output files, if any: only the data's own folder
    counts (a _schema.json further up describes other data). Without one, the tags and properties of
    the ``.merlin/schema.json`` NVTabular's ``to_parquet`` writes there, put on ``base`` (the
    files' own names and dtypes)."""
    fs = fsmod.fs_of(first_file, storage_options)
    folder = fs.dirname(fs.norm(first_file))
    p = fs.join(folder, SCHEMA_FILE)
    merlin = fs.join(fs.join(folder, ".merlin"), "schema.json")
    found = p if fs.exists(p) else merlin if fs.exists(merlin) else None
    if found is None:
        return None
    try:
        with fs.open(found, "r") as fh:
            data = json.load(fh)
        if found == p:
            return Schema.from_dict(data)
        cols = merlin_json_columns(data)
        return Schema(c.with_(add_tags=list(cols[c.name][0]), add_properties=cols[c.name][1]) if c.name in cols else c
                      for c in base)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"cannot read {found}: {exc}. Run the write that produced {folder!r} again, "
                         f"or remove that file.") from exc


def _is_dask_frame(obj: Any) -> bool:
    return hasattr(obj, "to_delayed") and hasattr(obj, "_meta") and hasattr(obj, "npartitions")


_is_memory_frame = backend.is_frame


def _output_path(path: Optional[str], output_path: Optional[str]) -> str:
    """``path``, or NVTabular's ``output_path=`` spelling of it."""
    if path is not None and output_path is not None:
        raise TypeError("give the output folder once: path or output_path (NVTabular's name), not both")
    if path is None and output_path is None:
        raise TypeError("missing the output folder: to_parquet(path) (or output_path=path, NVTabular's name)")
    return path if path is not None else output_path
