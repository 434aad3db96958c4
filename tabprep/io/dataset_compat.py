"""NVTabular 23.08's (merlin-core ``merlin.io.Dataset``) calls on :class:`tabprep.Dataset` that
tabprep lacked (issue #29): ``to_iter``, ``to_cpu`` / ``to_gpu``, ``infer_schema``, ``to_npy``,
and ``to_parquet``'s ``dtypes=``, ``cats=`` / ``conts=`` / ``labels=`` and ``Shuffle`` values."""
from __future__ import annotations

import enum
from typing import Any, Dict, Iterator, List, Optional, Sequence

import numpy as np

from .. import backend
from .._util import whole
from .._warn import warn_once
from ..schema import Schema


def _csv_partition_map(ds: Any) -> Dict[str, List[int]]:
    """merlin-core's CSV ``file_partition_map`` of the csv dataset ``ds`` (see
    ``DatasetCompat.file_partition_map``), from the reader's own split of the files
    (:func:`tabprep.backend.csv_block_counts`; nothing read)."""
    import posixpath

    where: Dict[str, str] = {}
    for path in ds.files:
        name = posixpath.basename(path.replace("\\", "/"))
        if name in where:
            raise ValueError(f"file_partition_map: the csv files {where[name]} and {path} share the name {name!r}, "
                             f"which merlin-core's csv map is keyed by; rename one, or use ds.to_ddf().npartitions")
        where[name] = path
    counts = backend.csv_block_counts(ds.files, ds._csv_block_size(), ds.cpu,
                                      compression=ds.read_kwargs.get("compression", "infer"),
                                      storage_options=ds.storage_options)
    out: Dict[str, List[int]] = {}
    start = 0
    for name, n in zip(where, counts):
        out[name] = list(range(start, start + n))
        start += n
    npartitions = ds.to_ddf().npartitions
    if start != npartitions:  # a reader that splits otherwise: say so rather than give a wrong map
        raise RuntimeError(f"file_partition_map: counted {start} blocks in the csv files of {ds.describe()}, but the "
                           f"reader made {npartitions} partitions; please report this (tabprep.backend.csv_block_counts)")
    return out


class Shuffle(enum.Enum):
    """NVTabular's ``nvt.io.Shuffle`` (merlin.io.Shuffle) for ``to_parquet(shuffle=...)``:
    ``PER_PARTITION`` is tabprep's ``"partition"`` (rows shuffled within each partition);
    ``PER_WORKER`` and ``FULL`` are ``"full"`` (every row to a random output file, each file
    shuffled: at least the mixing NVTabular's per-worker shuffle gives; ``PER_WORKER`` warns once
    per process, see :func:`note_per_worker`)."""

    PER_PARTITION = 0
    PER_WORKER = 1
    FULL = 2


def is_per_worker(shuffle: Any) -> bool:
    """Whether ``shuffle`` is NVTabular's ``Shuffle.PER_WORKER`` (tabprep's or merlin's enum)."""
    return (isinstance(shuffle, Shuffle) or type(shuffle).__name__ == "Shuffle") and shuffle.name == "PER_WORKER"


def note_per_worker(n_files: int, stacklevel: int = 2) -> None:
    """Once per process: ``Shuffle.PER_WORKER`` is written as tabprep's full shuffle.

    merlin-core 23.08 (``merlin/io/dataset.py``, ``dask.py``, ``parquet.py``) mixes rows only among
    the files one task writes: the partitions (in random order) are cut into contiguous ranges, one
    per task of ``out_files_per_proc`` files (one file per partition when neither ``output_files``
    nor ``out_files_per_proc`` is given), and each file is shuffled again after writing. tabprep's
    ``"full"`` sends every row to a random one of all output files: the same rows, mixed more, in
    another file split (``n_files`` here)."""
    warn_once(("to_parquet", "Shuffle.PER_WORKER"),
              f"shuffle=Shuffle.PER_WORKER: tabprep shuffles fully (shuffle='full': every row to a random one of "
              f"all output files, each file shuffled; {n_files} file{'s' if n_files != 1 else ''} here). NVTabular "
              f"23.08 mixes rows only among the files one worker task writes: with neither output_files nor "
              f"out_files_per_proc, one file per partition, each shuffled (tabprep's shuffle='partition' / "
              f"Shuffle.PER_PARTITION); with out_files_per_proc=N on one process, every row over N files (tabprep's "
              f"shuffle='full' with out_files_per_proc=N). The same rows either way; pass shuffle='full' or "
              f"shuffle='partition' to choose and not see this again (docs/migration.md)",
              stacklevel=stacklevel + 1)


def shuffle_name(shuffle: Any) -> Optional[str]:
    """tabprep's shuffle string for a :class:`Shuffle` value (strings and None pass through)."""
    if isinstance(shuffle, Shuffle) or type(shuffle).__name__ == "Shuffle":
        return "partition" if shuffle.name == "PER_PARTITION" else "full"
    if shuffle is False:
        return None
    return shuffle


class _FrameIter:
    """merlin-core's ``DataFrameIter``: the dataset's partitions as frames, one at a time;
    ``len()`` is the row count of the partitions iterated."""

    def __init__(self, ds: Any, columns: Optional[List[str]], indices: List[int]) -> None:
        self.ds, self.columns, self.indices = ds, columns, indices

    def __len__(self) -> int:
        ddf = self.ds._to_ddf(columns=self.columns)
        return int(sum(len(ddf.get_partition(i)) for i in self.indices))

    def __iter__(self) -> Iterator[Any]:
        ddf = self.ds._to_ddf(columns=self.columns)
        for i in self.indices:
            yield backend.lists_to_numpy(ddf.get_partition(i).compute().reset_index(drop=True))


class DatasetCompat:
    """Mixed into :class:`tabprep.Dataset`."""

    def to_iter(self, columns: Any = None, indices: Optional[Sequence[int]] = None, shuffle: bool = False,
                seed: Optional[int] = None, epochs: int = 1) -> _FrameIter:
        """The partitions as pandas / cuDF frames, one at a time (merlin-core's ``to_iter``):
        ``columns`` (a name or a list; default all), ``indices`` (partition numbers, default all, in
        order; after the shuffle when ``shuffle``), ``shuffle`` (the partitions' order, with ``seed``),
        ``epochs`` (the partitions that many times). List cells come as numpy arrays, as in
        :meth:`compute`."""
        cols = [columns] if isinstance(columns, str) else (list(columns) if columns is not None else None)
        if cols is not None:
            missing = [c for c in cols if c not in self.schema]  # type: ignore[attr-defined]
            if missing:
                raise KeyError(f"to_iter(columns=...): {missing} not in {self.describe()}; columns are "  # type: ignore
                               f"{self.schema.column_names}")  # type: ignore[attr-defined]
        n = self.npartitions  # type: ignore[attr-defined]
        order = list(range(n))
        if shuffle:
            np.random.default_rng(seed).shuffle(order)
        if indices is not None:
            idx = [int(i) for i in ([indices] if isinstance(indices, (int, np.integer)) else indices)]
            bad = [i for i in idx if not -n <= i < n]
            if bad:
                raise IndexError(f"to_iter(indices=...): partitions {bad} do not exist; the dataset has {n}")
            order = [order[i] for i in idx]
        return _FrameIter(self, cols, order * max(1, int(epochs)))

    def head(self, n: int = 5, npartitions: int = 1) -> Any:
        """The first ``n`` rows as one frame (merlin-core binds dask's ``head``: by default only
        the first partition is read, so fewer rows come back, with dask's warning, when it is
        shorter; ``npartitions=-1`` reads as many as needed). List cells as in :meth:`compute`."""
        out = self._to_ddf().head(int(n), npartitions=npartitions)  # type: ignore[attr-defined]
        return backend.lists_to_numpy(out.reset_index(drop=True))

    def tail(self, n: int = 5) -> Any:
        """The last ``n`` rows of the last partition (dask's ``tail``, as merlin-core binds it)."""
        out = self._to_ddf().tail(int(n))  # type: ignore[attr-defined]
        return backend.lists_to_numpy(out.reset_index(drop=True))

    def persist(self) -> Any:
        """``to_ddf().persist()``: the partitions computed and held in memory (merlin-core binds
        dask's ``persist``); list cells as in :meth:`to_ddf`."""
        return self.to_ddf().persist()  # type: ignore[attr-defined]

    def shuffle_by_keys(self, keys: Any, hive_data: Any = None, npartitions: Optional[int] = None) -> Any:
        """A dataset whose partitions each hold all the rows of their keys (merlin-core's
        ``shuffle_by_keys``; NVTabular's recipe before ``ops.Groupby``, which groups each partition on
        its own): a dask shuffle on ``keys`` (a name or a list) into ``npartitions`` partitions
        (default: as many as now; some may be empty). Rows of a key keep no order: give Groupby
        ``sort_cols``. ``hive_data`` (merlin-core: the keys are in the folder layout, so it skips the
        shuffle) is accepted; tabprep shuffles either way, with the same groups."""
        on = [keys] if isinstance(keys, str) else list(keys)
        names = self.schema.column_names  # type: ignore[attr-defined]
        missing = [k for k in on if k not in names]
        if not on or missing:
            raise KeyError(f"shuffle_by_keys: keys {missing or on} are not columns of {self.describe()}; "  # type: ignore
                           f"columns are {names}")
        ddf = self._to_ddf()  # type: ignore[attr-defined]
        n = ddf.npartitions if npartitions is None else whole("shuffle_by_keys(npartitions=...)", npartitions, 1)
        return type(self)(ddf.shuffle(on=on, npartitions=n), cpu=self.cpu)  # type: ignore[attr-defined,call-arg]

    @property
    def file_partition_map(self) -> Dict[str, List[int]]:
        """merlin-core's ``file_partition_map`` of a parquet dataset: each file's path (as the
        dataset lists its files) -> the indices of the partitions holding its rows, in order, from
        tabprep's partition plan (no data read): one partition per file by default, several where a
        file is split (``part_size``, ``row_groups_per_part``); an empty file has its own empty
        partition; on the GPU, where a partition spans several small files, it is listed under each.
        merlin-core 23.08's parquet engine gives a file's last partition as an int instead (its CSV
        engine and its own callers use sequences; docs/migration.md).

        For csv files, as merlin-core's CSV engine: each file's *name* (not its path) -> the
        partitions of its byte blocks (``part_size``; dask's split of a file into blocks, which the
        reader uses too), a compressed file one partition; files sharing a name raise ``ValueError``.

        Raises:
            AttributeError: for a dataset that is not files (a frame, a transformed dataset), as
                merlin-core's frame datasets do.
        """
        if self._ddf is not None or self._tables is not None:  # type: ignore[attr-defined]
            raise AttributeError(f"file_partition_map is only known for a dataset of parquet or csv files, not for "
                                 f"{self.describe()}")  # type: ignore[attr-defined]
        if self.engine == "csv":  # type: ignore[attr-defined]
            return _csv_partition_map(self)
        out: Dict[str, List[int]] = {}
        for i, piece in enumerate(self.pieces):  # type: ignore[attr-defined]
            for path in [piece.path] + [p for p, _ in piece.more]:
                parts = out.setdefault(path, [])
                if not parts or parts[-1] != i:
                    parts.append(i)
        return out

    @property
    def partition_lens(self) -> List[int]:
        """Rows of each partition (merlin-core's; parquet: from the footers, no data read)."""
        if self.engine == "parquet" and self._ddf is None and self._tables is None:  # type: ignore[attr-defined]
            return [p.num_rows for p in self.pieces] or [0]  # type: ignore[attr-defined]
        return [int(n) for n in self._to_ddf().map_partitions(len).compute()]  # type: ignore[attr-defined]

    def repartition(self, npartitions: Optional[int] = None, partition_size: Any = None) -> Any:
        """A dataset of the same rows in ``npartitions`` partitions (or of about ``partition_size``
        bytes each), as merlin-core's ``repartition`` (dask's)."""
        ddf = self._to_ddf().repartition(npartitions=npartitions, partition_size=partition_size)  # type: ignore
        return type(self)(ddf, schema=self.schema)  # type: ignore[attr-defined]

    def sample_dtypes(self, n: int = 1, annotate_lists: bool = False) -> Dict[str, Any]:
        """``{column: dtype}`` (merlin-core's; list columns as ``list<elem>`` names, or with
        ``annotate_lists`` as ``{"dtype", "is_list", "is_ragged"}`` dicts)."""
        out: Dict[str, Any] = {}
        for c in self.schema:  # type: ignore[attr-defined]
            if annotate_lists:
                out[c.name] = {"dtype": c.dtype, "is_list": c.is_list, "is_ragged": c.is_ragged}
            else:
                out[c.name] = f"list<{c.dtype}>" if c.is_list else c.dtype
        return out

    def to_cpu(self) -> Any:
        """Read and compute on the CPU (pandas) from now on (merlin-core's ``to_cpu``). Returns the dataset."""
        return self._move(True)

    def to_gpu(self) -> Any:
        """Read and compute on the GPU (cuDF) from now on (merlin-core's ``to_gpu``); needs cuDF."""
        return self._move(False)

    def _move(self, cpu: bool) -> Any:
        if self.cpu == cpu:  # type: ignore[attr-defined]
            return self
        cpu = backend.resolve_cpu(cpu)
        if self.engine in ("parquet", "csv") and self._ddf is None and self._tables is None:  # type: ignore
            self.__dict__.pop("_meta_memo", None)
            self._pieces = None  # type: ignore[attr-defined]
        else:
            ddf = self._to_ddf()  # type: ignore[attr-defined]
            meta = backend.to_backend(ddf._meta, cpu)
            self._ddf = ddf.map_partitions(backend.to_backend, cpu, meta=meta)  # type: ignore[attr-defined]
            self._ddf_factory = None  # type: ignore[attr-defined]
            self._tables = None  # type: ignore[attr-defined]
        self.cpu = cpu  # type: ignore[attr-defined]
        return self

    def infer_schema(self, n: int = 1) -> Schema:
        """The columns' names and dtypes read from the data again (merlin-core's ``infer_schema``;
        ``n`` is accepted for its signature: tabprep reads parquet footers, not sampled rows),
        kept as :attr:`schema` and returned."""
        self._schema = None  # type: ignore[attr-defined]
        return self.schema  # type: ignore[attr-defined]

    def to_npy(self, output_file: str, append: bool = False) -> None:
        """Write the dataset as one 2-D ``.npy`` array (merlin-core's ``to_npy``): columns in order,
        fixed-length list columns expanded into one column per position. Nulls and ragged lists
        raise ``ValueError`` naming the column. ``append=True`` writes partition by partition (the
        dataset need not fit in memory)."""
        if not append:
            np.save(output_file, _npy_block(self.compute()))  # type: ignore[attr-defined]
            return
        total = self.num_rows  # type: ignore[attr-defined]
        out = None
        row = 0
        for frame in self.to_iter():
            block = _npy_block(frame)
            if out is None:
                out = np.lib.format.open_memmap(output_file, mode="w+", dtype=block.dtype,
                                                shape=(total, block.shape[1]))
            out[row:row + len(block)] = block
            row += len(block)
        if out is None:
            np.save(output_file, np.empty((0, 0)))
        else:
            out.flush()


def _npy_block(frame: Any) -> np.ndarray:
    frame = backend.lists_to_numpy(backend.to_host(frame))
    cols = []
    for name in frame.columns:
        s = frame[name]
        if s.isna().any():
            raise ValueError(f"to_npy: column {name!r} has nulls; fill them first (ops.FillMissing / Categorify)")
        if s.dtype == object and len(s) and isinstance(s.iloc[0], np.ndarray):
            lengths = {len(v) for v in s}
            if len(lengths) > 1:
                raise ValueError(f"to_npy: list column {name!r} has rows of different lengths {sorted(lengths)[:5]}; "
                                 f"pad them first (ops.ListSlice(n, pad=True))")
            cols.append(np.stack(s.to_list()).reshape(len(s), -1))
        else:
            cols.append(np.asarray(s.to_numpy()).reshape(len(s), 1))
    return np.hstack(cols) if cols else np.empty((len(frame), 0))


def prepare_output(ds: Any, dtypes: Optional[Dict[str, Any]], cats: Any, conts: Any, labels: Any) -> tuple:
    """``(dataset to write, column roles)`` for ``to_parquet(dtypes=, cats=, conts=, labels=)``:
    ``dtypes`` casts output columns (merlin-core's), the roles are recorded as NVTabular's writer
    records them for HugeCTR (see :func:`write_roles`)."""
    schema = ds.schema
    if dtypes:
        missing = [c for c in dtypes if c not in schema]
        if missing:
            raise KeyError(f"to_parquet(dtypes=...): {missing} are not columns of {ds.describe()}; columns are "
                           f"{schema.column_names}")
        new_schema = Schema(c.with_(dtype=str(np.dtype(dtypes[c.name])) if not isinstance(dtypes[c.name], str)
                                    else dtypes[c.name]) if c.name in dtypes else c for c in schema)
        casts = {c: dtypes[c] for c in dtypes}
        ddf = ds._to_ddf()
        ddf = ddf.map_partitions(lambda df: df.astype(casts), meta=ddf._meta.astype(casts))
        ds = type(ds)(ddf, schema=new_schema)
    roles = None
    if cats is not None or conts is not None or labels is not None:
        names = ds.schema.column_names
        roles = {}
        for role, cols in (("cats", cats), ("conts", conts), ("labels", labels)):
            cols = [cols] if isinstance(cols, str) else list(cols or [])
            missing = [c for c in cols if c not in names]
            if missing:
                raise KeyError(f"to_parquet({role}=...): {missing} are not output columns; they are {names}")
            roles[role] = [{"col_name": c, "index": names.index(c)} for c in cols]
    return ds, roles


def write_roles(fs: Any, root: str, roles: Optional[Dict[str, Any]], files: List[Dict[str, Any]],
                meta: Dict[str, Any]) -> None:
    """NVTabular's writer records ``cats`` / ``conts`` / ``labels`` (name and column index) in its
    ``_metadata.json`` and lists the data files in ``_file_list.txt`` (HugeCTR's parquet reader
    reads both); tabprep adds the roles to its own ``_metadata.json`` (``meta``) and writes the list."""
    if not roles:
        return
    meta.update(roles)
    with fs.open(fs.join(root, "_file_list.txt"), "w") as fh:
        fh.write(f"{len(files)}\n" + "".join(f"{f['file']}\n" for f in files))


__all__ = ["Shuffle", "DatasetCompat", "shuffle_name", "prepare_output", "write_roles"]
