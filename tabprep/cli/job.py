"""The job runner of the CLI: one :class:`Job` per command (logging, dask cluster, progress,
profile), the fit and write steps with their summaries, and the helpers the commands share."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import click

from ..backend.parquet import COMPRESSIONS
from . import progress as P
from .cluster import dask_cluster
from .runtime import JobFailed, UsageProblem, check_columns, check_output, input_rows, make_dataset, setup_logging


def load_spec(spec: str) -> Any:
    """The unfitted workflow of a spec file; a missing file is a usage error (exit code 2)."""
    from ..workflow import Workflow

    try:
        return Workflow.from_spec(spec)
    except FileNotFoundError as exc:
        raise UsageProblem(str(exc)) from None


def load_workflow(path: str, allow_pickle: bool, trusted: bool = False,
                  storage_options: Optional[Dict[str, Any]] = None) -> Any:
    """A saved workflow folder (or URL of one), with usage errors that say what WF_DIR must be."""
    from ..io.fs import is_remote, local_path
    from ..registry import UntrustedCodeError
    from ..workflow import Workflow
    from ..workflow.serialize import SPEC_FILE

    remote = is_remote(path)
    if not remote:
        path = local_path(path)
        p = Path(path)
        if not p.is_dir():
            raise UsageProblem(f"{path!r} is not a saved workflow folder (make one with `tabprep fit SPEC DATA --out "
                               f"{path}`)" if not p.exists() else
                               f"{path!r} is a file; WF_DIR is the folder written by `tabprep fit`"
                               + (" (a spec file goes to `tabprep fit`)" if path.endswith((".yaml", ".yml", ".json"))
                                  else ""))
        if not (p / SPEC_FILE).exists():
            raise UsageProblem(f"{path!r} is not a saved workflow folder (no {SPEC_FILE}); make one with `tabprep fit`")
    try:
        return Workflow.load(path, allow_pickle=allow_pickle, trusted=trusted,
                             storage_options=storage_options if remote else None)
    except UntrustedCodeError as exc:
        raise UsageProblem(str(exc)) from None  # the message names --trusted
    except FileNotFoundError as exc:
        if remote:  # a local folder was checked above
            raise UsageProblem(str(exc)) from None
        raise
    except ValueError as exc:
        if "allow_pickle" in str(exc):
            raise UsageProblem(f"{exc} (CLI: --allow-pickle)") from None
        if remote and "half-written" in str(exc):  # an input that is not usable: like a half-written DATA folder
            raise UsageProblem(str(exc)) from None
        raise


def folder_bytes(path: str, storage_options: Optional[Dict[str, Any]] = None) -> int:
    """Total size in bytes of the files under ``path`` (a folder or URL; for the summaries)."""
    from ..io.fs import get_fs

    fs, where = get_fs(path, storage_options)
    return fs.du(where)


def rate(rows: Optional[int], seconds: float) -> str:
    """`` (1.2M rows/s)`` for a summary line, or ``""`` when rows or time are unknown."""
    if not rows or seconds <= 0:
        return ""
    return f" ({P.human(rows / seconds)} rows/s)"


class Job:
    """Shared state of one CLI job: options, client, progress, profile rows."""

    def __init__(self, opts: Dict[str, Any]) -> None:
        self.opts = opts
        self.quiet = bool(opts.get("quiet"))
        #: --storage-option: of every URL the job reads or writes (None: the environment's credentials)
        self.storage_options: Optional[Dict[str, Any]] = opts.get("storage_options")
        self.profile = bool(opts.get("profile"))
        self.data_profile = bool(opts.get("data_profile"))
        self.client: Any = None
        self.profile_rows: List[Dict[str, Any]] = []
        self._cm: Any = None

    def __enter__(self) -> "Job":
        setup_logging(bool(self.opts.get("verbose")), self.quiet)
        o = self.opts
        if o.get("cpu") is False:
            from ..backend import has_cudf

            if not has_cudf():
                raise JobFailed("--gpu needs cuDF, dask-cuDF and a CUDA GPU, which are not usable here "
                                "(pip install tabprep[gpu] on a machine with an NVIDIA GPU); use --cpu")
        self._cm = dask_cluster(o.get("scheduler"), o.get("workers"), o.get("memory_limit"), o.get("cpu"), self.quiet,
                                scheduler_file=o.get("scheduler_file"), rmm_pool_size=o.get("rmm_pool_size"),
                                device_memory_limit=o.get("device_memory_limit"), protocol=o.get("protocol"))
        self.client = self._cm.__enter__()
        if self.client is not None:
            self.say(f"dask cluster: {self.client.scheduler.address} "
                     f"({len(self.client.nthreads())} workers)", err=True)
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self._cm.__exit__(*exc)

    def say(self, text: str, err: bool = False) -> None:
        if not self.quiet:
            click.echo(text, err=err)

    def dataset(self, files: Sequence[str]) -> Any:
        """The Dataset of the (already resolved, :func:`~.runtime.resolve_inputs`) input files."""
        o = self.opts
        return make_dataset(files, o.get("engine"), o.get("sep"), o.get("names"), o.get("part_size"), o.get("cpu"),
                            self.storage_options)

    def progress(self, rows: Optional[int], rename: Optional[Dict[str, str]] = None) -> P.Progress:
        return P.Progress(rows=rows, enabled=not self.quiet, rename=rename)

    # -- steps ---------------------------------------------------------------------------
    def fit(self, wf: Any, ds: Any) -> Dict[str, Any]:
        check_columns(wf, ds)
        rows = input_rows(ds)
        prog = self.progress(rows)
        if self.profile:
            wf.op_timer = P.record
            P.collect_and_reset()
        start = time.perf_counter()
        with P.FitTicker(prog):
            wf.fit(ds, progress=prog, profile=self.data_profile)
        seconds = time.perf_counter() - start
        if self.profile:
            self.profile_rows += P.profile_table("fit", P.gather_times(self.client), wf, round(seconds, 3))
            wf.op_timer = None
        passes = len(wf._stat_levels())
        self.say(f"fit: {P.count(rows, 'row') + ', ' if rows is not None else ''}{P.count(ds.npartitions, 'partition')}, "
                 f"{P.count(passes, 'pass', 'passes')} over the data in {P.duration(seconds)}"
                 f"{rate(rows, seconds)}")
        return {"rows": rows, "seconds": seconds, "partitions": ds.npartitions, "passes": passes}

    def write(self, source: Any, out: str, to: str, wf: Any = None, rows: Optional[int] = None,
              cast: bool = False, out_of_fold: bool = False, transaction: Any = None,
              **kw: Any) -> Dict[str, Any]:
        """Transform ``source`` with ``wf`` (or write it as is) to ``out``.

        ``cast``: see ``Workflow.transform``. ``out_of_fold``: ``source`` is the data ``wf`` was just
        fitted on (fit-transform): target encodings come out of fold. With ``transaction`` the folder
        is only staged in it: the summary is printed by :meth:`say_written` once the caller has committed.
        """
        if wf is not None and self.profile:  # before transform: with a distributed client it ships a copy of wf
            wf.op_timer = P.record
        ds = wf.transform(source, out_of_fold=out_of_fold, cast=cast) if wf is not None else source
        if wf is not None and self.profile:
            P.collect_and_reset()  # not the times of transform's run on the empty meta frame
        rename = None if wf is not None else {"transform": "convert", "transform (phase 1)": "read"}
        prog = self.progress(rows, rename)
        start = time.perf_counter()
        opts = {k: v for k, v in kw.items() if v is not None}
        opts["storage_options"] = self.storage_options
        if to == "parquet":
            meta = ds.to_parquet(out, progress=prog, transaction=transaction, **opts)
        else:
            meta = ds.to_tfrecord(out, progress=prog, transaction=transaction, **opts)
        seconds = time.perf_counter() - start
        if wf is not None and self.profile:
            self.profile_rows += P.profile_table("transform", P.gather_times(self.client), wf, round(seconds, 3))
            wf.op_timer = None
        meta["seconds_total"] = seconds
        if transaction is None:
            self.say_written(meta, out, to, "transform" if wf is not None else "convert")
        return meta

    def say_written(self, meta: Dict[str, Any], out: str, to: str, verb: str) -> None:
        """The summary line of a write; the size is that of the committed folder."""
        seconds = meta["seconds_total"]
        self.say(f"{verb}: {P.count(meta['rows'], 'row')} -> {P.count(len(meta['files']), to + ' file')} in {out} ({P.human(folder_bytes(out, self.storage_options))}B) in "
                 f"{P.duration(seconds)}{rate(meta['rows'], seconds)}")

    def finish(self) -> None:
        if self.profile:
            P.echo_profile(self.profile_rows)


def writer_kwargs(to: str, output_files: Optional[int], split_per_worker: Optional[int],
                  batch_size: Optional[int], shuffle: Optional[str], seed: Optional[int],
                  compression: Optional[str], overwrite: bool) -> Dict[str, Any]:
    """Check the output options of a writing command and turn them into ``to_parquet`` / ``to_tfrecord`` kwargs."""
    if to == "parquet" and batch_size is not None:
        raise UsageProblem("--batch-size applies to --to tfrecord (prebatched records); parquet has no batches")
    if compression is not None:
        allowed = COMPRESSIONS if to == "parquet" else ("gzip", "zlib", "none")
        if compression.lower() not in allowed:
            raise UsageProblem(f"--compression {compression!r} is not available for {to}; use one of {', '.join(allowed)}")
        if compression.lower() == "none":
            compression = "none" if to == "parquet" else None
        elif to == "tfrecord":
            compression = compression.upper()
    opts: Dict[str, Any] = {"output_files": output_files, "split_per_worker": split_per_worker,
                            "shuffle": shuffle, "seed": seed, "overwrite": overwrite}
    if to == "tfrecord":
        opts["batch_size"] = batch_size
        opts["compression"] = compression
    elif compression is not None:
        opts["compression"] = compression
    return opts


def _where(path: str, storage_options: Optional[Dict[str, Any]] = None) -> Tuple[str, str]:
    """``(canonical path, separator)`` (:func:`tabprep.io.fs.canonical`)."""
    from ..io.fs import canonical

    return canonical(path, storage_options)


def _inside(child: str, parent: str, sep: str) -> bool:
    """Whether the canonical path ``child`` lies inside the folder ``parent`` (:func:`tabprep.io.fs.inside`)."""
    from ..io.fs import inside

    return inside(child, parent, sep)


def check_not_overlapping(data: Sequence[str], files: Sequence[str], out: str, option: str,
                          storage_options: Optional[Dict[str, Any]] = None,
                          inputs: Sequence[Tuple[str, str]] = ()) -> None:
    """Refuse an output path that is an input, lies inside an input folder or holds an input file
    (:func:`tabprep.io.fs.overlap`, which ``Dataset.to_parquet`` / ``to_tfrecord`` use too).

    ``data`` are the DATA arguments (their folders are inputs as a whole: an output inside one
    would be read back as data next time), ``files`` the input files they resolved to, ``inputs``
    the command's other inputs as ``(argument, path)`` (``WF_DIR``, ``SPEC``). Writing over an
    input would delete what is being read. Usage error (exit code 2) naming both paths.
    """
    from ..io.fs import fs_of, overlap

    named = [("DATA", d) for d in data if fs_of(d, storage_options).isdir(_where(d, storage_options)[0])]
    named += [("DATA", f) for f in files] + [(arg, p) for arg, p in inputs if p is not None]
    found = overlap(out, [(arg, p, storage_options) for arg, p in named], storage_options)
    if found is not None:
        arg, why = found
        raise UsageProblem(f"{option} {out!r} {why}. Write to a folder outside the inputs ({arg})")


def prepare_outputs(data: Sequence[str], files: Sequence[str], outputs: Sequence[Tuple[str, str, Any]],
                    overwrite: bool, storage_options: Optional[Dict[str, Any]] = None,
                    inputs: Sequence[Tuple[str, str]] = ()) -> None:
    """Every check on the folders a command writes, before any work: no overlap with the inputs
    (DATA and ``inputs``: ``(argument, path)`` such as ``("WF_DIR", wf_dir)``) or with each other
    (``outputs``: ``(option, path, FolderKind)``), then what a crashed run left at each path
    recovered and the path checked (:func:`~.runtime.check_output`)."""
    for k, (opt, path, _) in enumerate(outputs):
        check_not_overlapping(data, files, path, opt, storage_options, inputs)
        p, sep = _where(path, storage_options)
        for opt2, path2, _ in outputs[:k]:
            q = _where(path2, storage_options)[0]
            if p == q or _inside(p, q, sep) or _inside(q, p, sep):
                raise UsageProblem(f"{opt} {path!r} and {opt2} {path2!r} must be separate folders (neither inside "
                                   f"the other): they are written together")
    for opt, path, kind in outputs:
        check_output(path, overwrite, kind, storage_options)


def generate_data(kind: str, rows: int, out: str, files: Optional[int], seed: int, overwrite: bool = False,
                  storage_options: Optional[Dict[str, Any]] = None) -> None:
    """Generate synthetic data into ``out``, committed atomically like every tabprep output.

    The folder is a :data:`tabprep.io.commit.GENERATED` folder: the parquet files plus
    ``_metadata.json`` (files and row counts, and what generated them) and ``_SUCCESS``, so readers
    verify it like a transformed output, and ``--overwrite`` replaces it (or another tabprep
    output) but never a folder tabprep did not write. A URL ``out`` is generated locally and
    uploaded (committed with ``_SUCCESS`` last).
    """
    from .. import __version__
    from ..io import commit, synthetic
    from ..io.planning import read_footer

    with commit.Transaction() as txn:
        stage = txn.stage(out, commit.GENERATED, overwrite=overwrite, storage_options=storage_options, spool=True)
        kwargs: Dict[str, Any] = {"seed": seed}
        if files is not None:
            kwargs["files"] = files
        fn = synthetic.generate_criteo if kind == "criteo" else synthetic.generate_movielens
        paths = fn(rows, str(stage.tmp), **kwargs)
        listing = [{"file": os.path.relpath(p, stage.tmp), "rows": int(read_footer(p).num_rows)} for p in paths]
        meta = {"tabprep_version": __version__, "format": "parquet", "rows": sum(f["rows"] for f in listing),
                "files": listing, "generated": {"kind": kind, "rows": rows, "seed": seed, "files": files}}
        with open(stage.tmp / commit.METADATA_FILE, "w") as fh:
            json.dump(meta, fh, indent=2)
        stage.write_success()
        stage.finish()
