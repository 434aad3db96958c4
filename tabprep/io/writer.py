"""Write a (transformed) dataset as parquet or TFRecord files: atomic, ordered, evenly split.

Layout of an output folder::

    out/
      part-00000.parquet ...        (or worker_0/, worker_1/ ... with split_per_worker=W)
      _schema.json                   names, dtypes, tags, cardinalities (readers need no guessing)
      _metadata.json                files with their row counts, options
      _SUCCESS                      written last: its presence means the output is complete

Atomicity (:mod:`tabprep.io.commit`): everything is written into a hidden sibling folder
marked ``.tabprep-incomplete`` and renamed into place at the very end, so a crash leaves either
the previous output untouched or a hidden folder that readers refuse (and the next write to the
path cleans up), never a folder that looks complete. An existing folder is replaced only with
``overwrite=True`` and only if tabprep wrote it. On a remote file system (a URL, ``s3://``...)
the files are written in place and ``_SUCCESS`` is written last, at the commit
(:mod:`tabprep.io.objectstore`).

How rows reach files:

* phase 1 transforms each partition once and writes it (one task per partition, memory bounded
  by the partition) either straight to its final file (the default: one file per partition) or,
  when files must be re-cut, to a temporary part file;
* phase 2 (only for ``output_files``, ``split_per_worker``, ``shuffle="full"`` or TFRecord) cuts
  the concatenation of the part files into equal row ranges, one task per output file,
  streaming row groups, so files (and workers) get row counts that differ by at most one.
"""
from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import pickle
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import dask
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .. import backend
from .._version import __version__
from .._util import flag, whole
from .._warn import reemit_from_cluster
from ..schema import Schema
from . import commit
from . import fs as fsmod
from . import objectstore
from .commit import METADATA_FILE, SCHEMA_FILE, SUCCESS_FILE, TFRECORD_SPEC_FILE  # noqa: F401
from .dataset_compat import is_per_worker, note_per_worker, shuffle_name, write_roles
from .planning import split_rows
from .tfrecord import TFRecordSink, spec_for

log = logging.getLogger(__name__)

#: rows per parquet row group in temporary part files (the granularity of phase-2 slicing)
PART_ROW_GROUP = 65536
SHUFFLES = (None, "partition", "full")


@dataclass
class OutputFile:
    """One output file: where it goes and which row ranges of which part files it holds."""

    relpath: str
    slices: List[Tuple[int, int, int]] = field(default_factory=list)  # (part index, start row, stop row)

    @property
    def rows(self) -> int:
        return sum(b - a for _, a, b in self.slices)


def _n_procs() -> int:
    try:
        from distributed import default_client

        # nthreads(): every worker (scheduler_info() lists only 5 in distributed 2025.4-2026.6)
        return max(1, len(default_client().nthreads()))
    except (ImportError, ValueError):
        return 1


def plan_outputs(part_rows: Sequence[int], files_per_worker: int, workers: Optional[int], ext: str,
                 align: int = 1) -> List[OutputFile]:
    """Cut the concatenated parts into ``workers x files_per_worker`` near-equal row ranges.

    With ``align=B`` (prebatched TFRecords) the cuts fall on multiples of B rows: whole batches
    are dealt out, so workers get batch counts that differ by at most one and only the very last
    file of the dataset can end with a short batch.
    """
    total = int(sum(part_rows))
    starts = np.concatenate([[0], np.cumsum(part_rows)]).astype("int64")
    unit = max(1, int(align))
    outputs: List[OutputFile] = []
    # units (of `align` rows) split evenly over workers, then each worker's over its files
    for w, (w_lo, w_hi) in enumerate(split_rows(-(-total // unit), workers or 1)):
        for f, (f_lo, f_hi) in enumerate(split_rows(w_hi - w_lo, files_per_worker)):
            lo, hi = min(total, (w_lo + f_lo) * unit), min(total, (w_lo + f_hi) * unit)
            name = f"part-{f:05d}{ext}" if workers else f"part-{w * files_per_worker + f:05d}{ext}"
            rel = f"worker_{w}/{name}" if workers else name
            of = OutputFile(rel)
            # parts overlapping [lo, hi)
            first = int(np.searchsorted(starts, lo, side="right") - 1)
            for p in range(max(first, 0), len(part_rows)):
                p_lo, p_hi = int(starts[p]), int(starts[p + 1])
                if p_lo >= hi:
                    break
                a, b = max(lo, p_lo) - p_lo, min(hi, p_hi) - p_lo
                if b > a:
                    of.slices.append((p, a, b))
            outputs.append(of)
    return outputs


# -- tasks --------------------------------------------------------------------------------
def _shuffle_frame(df: Any, seed: int) -> Any:
    rng = np.random.default_rng(seed)
    return backend.take_frame_rows(df, rng.permutation(len(df)))


def _write_part(df: Any, path: str, shuffle: Optional[str], seed: int, row_group_size: Optional[int],
                compression: str, storage_options: Optional[Dict[str, Any]] = None,
                remote_root: Optional[str] = None, int_encoding: str = "delta") -> Dict[str, Any]:
    """Phase 1: write one transformed partition; return its row count (and bucket counts).
    ``path`` may be a URL (written through fsspec with ``storage_options``) in the folder
    ``remote_root`` being written in place."""
    out: Dict[str, Any] = {"path": path}
    if shuffle in ("partition", "full") and len(df):
        df = _shuffle_frame(df, seed)
    # full shuffle: the rows are in random order now, so each output file can take a contiguous
    # slice of this part (sizes planned in _plan_full_shuffle so that files and workers balance).
    # pandas goes through Arrow (PART_ROW_GROUP rows per group); cuDF encodes on the device.
    # in flight until confirmed: an abort of the folder's write waits for it (objectstore.writing)
    with objectstore.writing(remote_root, storage_options) if remote_root is not None else contextlib.nullcontext():
        with fsmod.fs_of(path, storage_options).output(path) as target:  # locally the path itself
            out["rows"] = backend.write_parquet_part(df, target, row_group_size, compression,
                                                     default_row_group=PART_ROW_GROUP, int_encoding=int_encoding)
        if remote_root is not None:
            objectstore.confirm_written(remote_root, [path], storage_options)
    return out


def _write_indexed(part_paths: List[str], shuffle: Optional[str], seed: int, row_group_size: Optional[int],
                   compression: str, storage_options: Optional[Dict[str, Any]], remote_root: Optional[str],
                   int_encoding: str, df: Any, index: int) -> Dict[str, Any]:
    """:func:`_write_part` of partition ``index`` (the ``finish`` of ``Dataset._table_tasks``)."""
    return _write_part(df, part_paths[index], shuffle, seed + index, row_group_size, compression, storage_options,
                       remote_root, int_encoding)


def _iter_slices(parts: List[str], of: OutputFile, columns: Optional[List[str]] = None,
                 storage_options: Optional[Dict[str, Any]] = None):
    """Stream the row ranges of an OutputFile as Arrow tables, one row group at a time."""
    for p, a, b in of.slices:
        where, filesystem = fsmod.arrow_path(parts[p], storage_options)
        pf = pq.ParquetFile(where, filesystem=filesystem)
        md = pf.metadata
        offset = 0
        for g in range(md.num_row_groups):
            n = md.row_group(g).num_rows
            g_lo, g_hi = offset, offset + n
            offset = g_hi
            if g_hi <= a or g_lo >= b:
                continue
            t = pf.read_row_group(g, columns=columns)
            t = t.slice(max(a, g_lo) - g_lo, min(b, g_hi) - max(a, g_lo))
            if t.num_rows:
                yield t


def _write_output(parts: List[str], of: OutputFile, root: str, fmt: str, schema: Schema,
                  options: Dict[str, Any], shuffle_seed: Optional[int], arrow_schema: pa.Schema,
                  storage_options: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Phase 2: write one output file from slices of part files (``root`` may be a URL; there the
    write is in flight until confirmed: an abort of the folder's write waits for it)."""
    remote = fsmod.fs_of(root, storage_options).remote
    with objectstore.writing(root, storage_options) if remote else contextlib.nullcontext():
        return _write_one_output(parts, of, root, fmt, schema, options, shuffle_seed, arrow_schema, storage_options)


def _write_one_output(parts: List[str], of: OutputFile, root: str, fmt: str, schema: Schema,
                      options: Dict[str, Any], shuffle_seed: Optional[int], arrow_schema: pa.Schema,
                      storage_options: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    fs = fsmod.fs_of(root, storage_options)
    path = fs.join(root, of.relpath)
    folder = fs.dirname(path)
    if fs.remote:
        fs.makedirs(folder)  # object stores: nothing to do (no folders)
    elif os.path.normpath(folder) != os.path.normpath(root):
        # never re-create the (temporary) root: after a failed write removed it, a task still
        # running must fail instead of leaving a half-written folder behind
        try:
            os.mkdir(folder)
        except FileExistsError:
            pass
    chunks = _iter_slices(parts, of, storage_options=storage_options)
    if shuffle_seed is not None:
        # full shuffle: rows of this file come from every part; mix them (the file must fit in memory)
        tables = list(chunks)
        table = pa.concat_tables(tables) if tables else arrow_schema.empty_table()
        perm = np.random.default_rng(shuffle_seed).permutation(table.num_rows)
        chunks = iter([table.take(pa.array(perm))])
    if fmt == "parquet":
        rows = 0
        with fs.output(path) as target:
            writer = pq.ParquetWriter(target, arrow_schema,
                                      **backend.parquet_encodings(arrow_schema, options.get("int_encoding") or "delta",
                                                                  options.get("compression") or "auto"))
            try:
                for t in chunks:
                    writer.write_table(t.cast(arrow_schema), row_group_size=options.get("row_group_size") or None)
                    rows += t.num_rows
            finally:
                writer.close()
        info = {"file": of.relpath, "rows": rows, "bytes": fs.size(path)}
    else:
        sink = TFRecordSink(path, schema, batch_size=options.get("batch_size"),
                            compression=options.get("compression"), drop_last=bool(options.get("drop_last")),
                            storage_options=storage_options)
        try:
            for t in chunks:
                sink.write(t)
            info = sink.close()
        except BaseException as exc:
            sink.abort()  # a remote file is thrown away, not uploaded half-written
            if isinstance(exc, ValueError):  # a value TFRecord cannot hold: name the file too
                raise ValueError(f"writing {of.relpath!r} of the TFRecord output: {exc}") from exc
            raise
        info["file"] = of.relpath
    if fs.remote:
        objectstore.confirm_written(root, [path], storage_options)
    return info


# -- driver ---------------------------------------------------------------------------------
def write_dataset(ds: Any, path: str, fmt: str = "parquet", output_files: Optional[int] = None,
                  out_files_per_proc: Optional[int] = None, shuffle: Optional[str] = None,
                  split_per_worker: Optional[int] = None, overwrite: bool = False, seed: Optional[int] = None,
                  format_options: Optional[Dict[str, Any]] = None,
                  progress: Optional[Callable[[str, int, int], None]] = None,
                  transaction: Optional[commit.Transaction] = None,
                  storage_options: Optional[Dict[str, Any]] = None,
                  roles: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Write ``ds`` (a :class:`tabprep.Dataset`, usually ``workflow.transform(...)``) to ``path``.

    Args:
        path: a local folder, or a URL (``s3://bucket/out``, ``gs://...``) of a remote file
            system written through fsspec with ``storage_options`` (default: the environment's
            credentials); see :mod:`tabprep.io.objectstore` for its commit.
        fmt: ``"parquet"`` or ``"tfrecord"``.
        output_files: number of files (default: one per partition for parquet, 1 for TFRecord).
            With ``split_per_worker``, the number of files in each worker's folder (default 1).
        out_files_per_proc: files per dask worker process (``N x workers`` files; 1 worker without
            a distributed client). Exclusive with ``output_files``.
        shuffle: None keeps row order; ``"partition"`` shuffles rows within each partition;
            ``"full"`` sends each row to a random output file and shuffles each file (one output
            file must then fit in memory). NVTabular's ``Shuffle.PER_PARTITION`` is
            ``"partition"``, ``Shuffle.PER_WORKER`` / ``Shuffle.FULL`` are ``"full"``
            (``PER_WORKER`` warns once per process: NVTabular mixes less, see docs/migration.md).
        roles: ``{"cats" | "conts" | "labels": [{"col_name", "index"}]}`` (``to_parquet(cats=...)``):
            recorded in ``_metadata.json``, with ``_file_list.txt``, as NVTabular does for HugeCTR.
        split_per_worker: W writes ``worker_0`` .. ``worker_{W-1}`` sub-folders holding row counts
            that differ by at most one, for W data-parallel training processes.
        overwrite: replace an existing output folder (atomically, at the end). Only a folder
            tabprep wrote (``_SUCCESS`` and ``_metadata.json``) or an empty one is replaced;
            any other folder is refused with ``FileExistsError``.
        seed: shuffle seed (default: random).
        format_options: parquet: ``row_group_size``, ``compression`` (``"auto"``, the default:
            snappy except on delta-packed int columns, or one codec for all, ``"none"`` included),
            ``int_encoding`` (``"delta"``, the default, or ``"dictionary"``; both: see
            :func:`tabprep.backend.parquet_encodings`); tfrecord: ``batch_size``,
            ``compression`` (None/"GZIP"), ``drop_last``.
        progress: optional ``(stage, done, total)`` callback.
        transaction: a :class:`tabprep.io.commit.Transaction` to stage the folder in (committed
            with the transaction's other folders, e.g. a saved workflow); default: committed here.

    Returns:
        The ``_metadata.json`` content: files with row counts, total rows, timings.
    """
    if fmt not in ("parquet", "tfrecord"):
        raise ValueError(f"unknown output format {fmt!r}: use 'parquet' or 'tfrecord'")
    per_worker = is_per_worker(shuffle)
    shuffle = shuffle_name(shuffle)
    if shuffle not in SHUFFLES:
        raise ValueError(f"shuffle must be one of {SHUFFLES}, got {shuffle!r}")
    if output_files is not None and out_files_per_proc is not None:
        raise ValueError("give output_files or out_files_per_proc, not both")
    options = dict(format_options or {})
    overwrite = flag("overwrite", overwrite)
    if options.get("drop_last") is not None:
        options["drop_last"] = flag("drop_last", options["drop_last"])
    for name, val in (("output_files", output_files), ("out_files_per_proc", out_files_per_proc),
                      ("split_per_worker", split_per_worker), ("row_group_size", options.get("row_group_size"))):
        if val is not None:   # (2.5 raised Python's own TypeError, or was truncated)
            whole(name, val, 1)
    if seed is not None:
        whole("seed", seed, 0)
    int_encoding = options.get("int_encoding") or "delta"
    if fmt == "parquet":  # a bad value fails here, before any task runs
        backend.parquet_encodings(pa.schema([]), int_encoding, options.get("compression") or "auto")
    start = time.perf_counter()
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % (2 ** 31))
    # a transaction of its own, or the caller's; on an error nothing that looks complete is left
    # (the hidden tmp folder is removed, or keeps its .tabprep-incomplete marker for the next write)
    with commit.staged(path, commit.OUTPUT, overwrite, transaction, storage_options=storage_options) as stage:
        tmp = stage.tmp
        fs = stage.fs
        so = fs.storage_options  # travel in the task graph; None: local, or the environment's credentials
        schema = ds.schema
        nparts = ds.npartitions
        if out_files_per_proc is not None:
            output_files = int(out_files_per_proc) * _n_procs()
        if per_worker:   # before any task runs: at the caller's to_parquet / to_tfrecord
            note_per_worker((output_files or 1) * (split_per_worker or 1), stacklevel=3)
        ext = ".parquet" if fmt == "parquet" else ".tfrecord" + (".gz" if (options.get("compression") or "").upper() == "GZIP" else "")
        # one file per partition as is only when no file count was asked for: output_files=N
        # promises N files of near-equal row counts even when N == npartitions
        direct = (fmt == "parquet" and split_per_worker is None and shuffle != "full"
                  and output_files is None)
        parts_dir = str(tmp) if direct else fs.join(tmp, "_parts")
        fs.makedirs(parts_dir)
        part_paths = [fs.join(parts_dir, f"part-{i:05d}.parquet") for i in range(nparts)]
        row_group_size = options.get("row_group_size") if direct else None
        # the parts of a re-cut output are read once, then deleted: the default codecs, whatever the files get
        compression = (options.get("compression") or "auto") if direct else "auto"
        remote_root = str(tmp) if fs.remote else None
        # each partition is read, transformed and written by one task (Dataset._table_tasks), so it
        # never moves between workers; CPU parquet data comes as Arrow tables (no pandas round trip)
        finish = functools.partial(_write_indexed, part_paths, shuffle, seed, row_group_size, compression, so,
                                   remote_root, int_encoding)
        tasks = ds._table_tasks(finish) if hasattr(ds, "_table_tasks") else None
        if tasks is None:  # other sources (csv, in-memory frames): the partitions of the dask frame
            write_fn = dask.delayed(finish, pure=False)
            tasks = [write_fn(part, i) for i, part in enumerate(ds._to_ddf().to_delayed())]
        dask_options = backend.compute_options(not ds.cpu)
        try:
            results = _compute(tasks, progress, "transform" if fmt == "parquet" else "transform (phase 1)",
                               dask_options)
        finally:
            reemit_from_cluster()  # warnings raised in the transform tasks on distributed workers
        backend.release_memory(collect=False)  # the partitions' pages, kept for reuse while they were written
        part_rows = [r["rows"] for r in results]
        if direct:
            files = [{"file": os.path.basename(p), "rows": r} for p, r in zip(part_paths, part_rows)]
        else:
            # every field nullable: a part without nulls may have been written with required fields
            first, filesystem = fsmod.arrow_path(part_paths[0], so) if part_paths else (None, None)
            arrow_schema = pa.schema([f.with_nullable(True) for f in pq.read_schema(first, filesystem=filesystem)]) \
                if part_paths else pa.schema([])
            if shuffle == "full":
                outputs = _plan_full_shuffle(results, output_files or 1, split_per_worker, ext)
            else:
                per_worker = output_files or 1
                align = options.get("batch_size") or 1 if fmt == "tfrecord" else 1
                outputs = plan_outputs(part_rows, per_worker, split_per_worker, ext, align=align)
            out_fn = dask.delayed(_write_output, pure=False)
            tasks = [out_fn(part_paths, of, str(tmp), fmt, schema, options,
                            (seed + 7919 * (j + 1)) if shuffle == "full" else None, arrow_schema, so)
                     for j, of in enumerate(outputs)]
            files = _compute(tasks, progress, f"write {fmt}")  # host-side: Arrow slices of the parts
            fs.rmtree(parts_dir)
        meta = {
            "tabprep_version": __version__,
            "format": fmt,
            "rows": int(sum(f["rows"] for f in files)),
            "files": files,
            "options": {"output_files": output_files, "split_per_worker": split_per_worker, "shuffle": shuffle,
                        **{k: v for k, v in options.items()}},
            "seconds": round(time.perf_counter() - start, 3),
        }
        _write_json(fs.join(tmp, SCHEMA_FILE), schema.to_dict(), fs)
        if split_per_worker:
            for w in range(split_per_worker):
                wdir = fs.join(tmp, f"worker_{w}")
                fs.makedirs(wdir)
                _write_json(fs.join(wdir, SCHEMA_FILE), schema.to_dict(), fs)
                wfiles = [f for f in files if f["file"].startswith(f"worker_{w}/")]
                if fmt == "tfrecord":
                    _write_tfrecord_spec(wdir, schema, options, wfiles, prefix=f"worker_{w}/", fs=fs)
        if fmt == "tfrecord":
            _write_tfrecord_spec(tmp, schema, options, files, prefix="", fs=fs)
        else:
            write_parquet_summary(fs, str(tmp), files, so, split_per_worker)
        write_roles(fs, str(tmp), roles, files, meta)
        _write_json(fs.join(tmp, METADATA_FILE), meta, fs)
        stage.write_success()  # a remote folder's is written by the commit, after everything else
    log.info("wrote %d rows in %d %s files to %s (%.2fs)", meta["rows"], len(files), fmt, stage.final,
             meta["seconds"])
    return meta


def write_parquet_summary(fs: Any, root: str, files: List[Dict[str, Any]], storage_options: Optional[Dict[str, Any]],
                          split_per_worker: Optional[int] = None) -> None:
    """Write ``_metadata``, the summary file dask and NVTabular write next to parquet output: every
    file's footer (schema, row groups, statistics), each row group naming its file relative to the
    folder, so ``pq.read_metadata(out / "_metadata")`` and dask's readers plan without opening the
    files. With ``split_per_worker``, each ``worker_K`` folder gets its own (paths relative to it)
    besides the root's. Written before ``_SUCCESS`` (part of the commit); tabprep's readers skip it
    (its name starts with ``_``). Files whose schemas differ cannot share one: a warning then
    names them and no summary is written."""
    def footer(entry: Dict[str, Any]) -> Any:
        where, filesystem = fsmod.arrow_path(fs.join(root, entry["file"]), storage_options)
        return pq.read_metadata(where, filesystem=filesystem)

    if not files:
        return
    if fs.remote and len(files) > 1:  # a round trip per footer: read them concurrently
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(16, len(files))) as pool:
            footers = list(pool.map(footer, files))
    else:
        footers = [footer(f) for f in files]
    groups = [("", list(zip(files, footers)))]
    if split_per_worker:
        for w in range(split_per_worker):
            prefix = f"worker_{w}/"
            groups.append((prefix, [(f, md) for f, md in zip(files, footers) if f["file"].startswith(prefix)]))
    for prefix, members in groups:
        if not members:
            continue
        summary = None
        for entry, md in members:
            md = pickle.loads(pickle.dumps(md))  # a copy: the root's summary and a worker's share footers
            md.set_file_path(entry["file"][len(prefix):])
            if summary is None:
                summary = md
                continue
            try:
                summary.append_row_groups(md)
            except (RuntimeError, ValueError, pa.ArrowException) as exc:
                log.warning("no _metadata summary written in %s: the schema of %s differs from that of %s (%s)",
                            fs.join(root, prefix) if prefix else root, entry["file"], members[0][0]["file"], exc)
                summary = None
                break
        if summary is not None:
            with fs.output(fs.join(root, prefix + "_metadata")) as target:
                summary.write_metadata_file(target)


def _plan_full_shuffle(results: List[Dict[str, Any]], files_per_worker: int, workers: Optional[int],
                       ext: str) -> List[OutputFile]:
    n_targets = files_per_worker * (workers or 1)
    # every part (already shuffled) gives each target rows // n_targets rows; the remainders go
    # round-robin over all parts, cycling over workers first, so row counts of files (and of
    # worker folders) differ by at most one
    rotation = [w * files_per_worker + f for f in range(files_per_worker) for w in range(workers or 1)]
    counts_by_part = []
    offset = 0
    for r in results:
        base, extra = divmod(int(r["rows"]), n_targets)
        counts = [base] * n_targets
        for k in range(extra):
            counts[rotation[(offset + k) % n_targets]] += 1
        offset = (offset + extra) % n_targets
        counts_by_part.append(counts)
    outputs = []
    for t in range(n_targets):
        if workers:
            w, f = divmod(t, files_per_worker)
            rel = f"worker_{w}/part-{f:05d}{ext}"
        else:
            rel = f"part-{t:05d}{ext}"
        of = OutputFile(rel)
        for p, counts in enumerate(counts_by_part):
            lo = int(sum(counts[:t]))
            hi = lo + int(counts[t])
            if hi > lo:
                of.slices.append((p, lo, hi))
        outputs.append(of)
    return outputs


def _write_tfrecord_spec(folder: Any, schema: Schema, options: Dict[str, Any], files: List[Dict[str, Any]],
                         prefix: str, fs: Any = fsmod.LOCAL) -> None:
    spec = spec_for(schema, options.get("batch_size"), options.get("compression"))
    spec["drop_last"] = bool(options.get("drop_last"))
    spec["files"] = [{**f, "file": f["file"][len(prefix):]} for f in files]
    spec["rows"] = int(sum(f["rows"] for f in files))
    _write_json(fs.join(folder, TFRECORD_SPEC_FILE), spec, fs)


def _write_json(path: Any, obj: Any, fs: Any = fsmod.LOCAL) -> None:
    with fs.open(path, "w") as fh:
        json.dump(obj, fh, indent=2, default=_json_default)


def _json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(f"not JSON-serializable: {type(o).__name__}")


def _compute(tasks: List[Any], progress: Optional[Callable[[str, int, int], None]], stage: str,
             dask_options: Optional[Dict[str, Any]] = None) -> List[Any]:
    """dask.compute with an optional progress callback (local schedulers and distributed);
    ``dask_options``: :func:`backend.compute_options_for` the data (default: the CPU's)."""
    total = len(tasks)
    options = dask_options if dask_options is not None else backend.compute_options(False)
    if progress is None or total == 0:
        return list(dask.compute(*tasks, **options)) if tasks else []
    try:
        from distributed import as_completed, default_client

        client = default_client()
    except (ImportError, ValueError):
        client = None
    if client is not None:
        futures = client.compute(tasks)
        done = 0
        progress(stage, 0, total)
        for _ in as_completed(futures):
            done += 1
            progress(stage, done, total)
        return client.gather(futures)
    from dask.callbacks import Callback

    keys = {t.key for t in tasks}
    state = {"done": 0}

    class _CB(Callback):
        def _posttask(self, key, result, dsk, st, worker_id):  # noqa: D401 - dask hook
            if key in keys:
                state["done"] += 1
                progress(stage, state["done"], total)

    progress(stage, 0, total)
    with _CB():
        return list(dask.compute(*tasks, **options))
