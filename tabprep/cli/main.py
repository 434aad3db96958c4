"""The ``tabprep`` command: fit, transform, convert, inspect and generate data without writing Python."""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import click

from .. import __version__
from . import progress as P
from .runtime import (JobFailed, UsageProblem, check_columns, check_output, dask_cluster,
                      handle_errors, input_rows, job_options, make_dataset, output_options, read_options,
                      resolve_inputs, setup_logging)

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

#: the canonical Criteo workflow, as run by ``tabprep demo``
CRITEO_SPEC = """\
# The canonical Criteo workflow: 26 categorical columns encoded as contiguous ids,
# 13 continuous columns filled, clipped at 0, log-transformed and standardized, plus the label.
version: 1
features:
  - columns: [{cats}]
    ops: [Categorify]
  - columns: [{conts}]
    ops: [FillMissing, {{Clip: {{min_value: 0}}}}, LogOp, Normalize]
  - columns: [label]
""".format(cats=", ".join(f"C{i}" for i in range(1, 27)), conts=", ".join(f"I{i}" for i in range(1, 14)))


class _OrderedGroup(click.Group):
    """Lists commands in the order they are defined (the order of a job), not alphabetically."""

    def list_commands(self, ctx: click.Context) -> List[str]:
        return list(self.commands)


@click.group(cls=_OrderedGroup, context_settings=CONTEXT)
@click.version_option(__version__, "-V", "--version", prog_name="tabprep")
def cli() -> None:
    """Prepare tabular data for deep learning: fit a workflow on a dataset, then transform
    datasets to parquet or TFRecord, on one machine or a dask cluster.

    \b
    The usual job:
      tabprep fit spec.yaml data/train/ --out wf/          # learn vocabularies, means...
      tabprep transform wf/ data/train/ --out out/train/   # apply them
      tabprep transform wf/ data/valid/ --out out/valid/ --to tfrecord --batch-size 1024
      tabprep inspect wf/                                  # schema, embedding sizes, statistics
    or both at once: tabprep fit-transform spec.yaml data/train/ --out out/train/ --workflow-out wf/
    Try it on synthetic data: tabprep demo

    \b
    A spec (YAML or JSON) lists features: columns and the ops applied to them, in order:
      features:
        - columns: [C1, C2]
          ops: [{Categorify: {freq_threshold: 2}}]
        - columns: [I1, I2]
          ops: [FillMissing, {Clip: {min_value: 0}}, LogOp, Normalize]
        - columns: [label]
    Merges of chains refer to named features: columns: [{feature: NAME}, C3]; columns sharing one
    vocabulary are grouped: columns: [[user_a, user_b]]; functions are named by import path:
    {LambdaOp: {f: {import: "mymodule:fn"}}} (the working directory is importable). `tabprep
    check SPEC` validates a spec; in Python: tabprep.Workflow.from_spec(path) / workflow.to_spec().

    \b
    DATA: parquet or csv files, folders of them, or globs (quote them: 'data/*.parquet').
    Jobs run on dask's threaded scheduler, a local cluster (--workers N) or an existing one
    (--scheduler ADDRESS). Outputs are written atomically: a failed job leaves no output that
    looks complete (readers check the _SUCCESS file).

    \b
    Exit codes: 0 ok; 1 the job failed (e.g. a column missing from the data); 2 usage error
    (bad options, missing input files, invalid spec, output exists without --overwrite).
    """


# -- helpers -------------------------------------------------------------------------------
def _load_spec(spec: str) -> Any:
    from ..workflow import Workflow

    try:
        return Workflow.from_spec(spec)
    except FileNotFoundError as exc:
        raise UsageProblem(str(exc)) from None


def _load_workflow(path: str, allow_pickle: bool) -> Any:
    from ..workflow import Workflow
    from ..workflow.serialize import SPEC_FILE

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
        return Workflow.load(path, allow_pickle=allow_pickle)
    except ValueError as exc:
        if "allow_pickle" in str(exc):
            raise UsageProblem(f"{exc} (CLI: --allow-pickle)") from None
        raise


def _folder_bytes(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


def _rate(rows: Optional[int], seconds: float) -> str:
    if not rows or seconds <= 0:
        return ""
    return f" ({P.human(rows / seconds)} rows/s)"


class _Job:
    """Shared state of one CLI job: options, client, progress, profile rows."""

    def __init__(self, opts: Dict[str, Any]) -> None:
        self.opts = opts
        self.quiet = bool(opts.get("quiet"))
        self.profile = bool(opts.get("profile"))
        self.client: Any = None
        self.profile_rows: List[Dict[str, Any]] = []
        self._cm: Any = None

    def __enter__(self) -> "_Job":
        setup_logging(bool(self.opts.get("verbose")), self.quiet)
        o = self.opts
        if o.get("cpu") is False:
            from ..backend import has_cudf

            if not has_cudf():
                raise JobFailed("--gpu needs cuDF, dask-cuDF and a CUDA GPU, which are not usable here "
                                "(pip install tabprep[gpu] on a machine with an NVIDIA GPU); use --cpu")
        self._cm = dask_cluster(o.get("scheduler"), o.get("workers"), o.get("memory_limit"), o.get("cpu"), self.quiet)
        self.client = self._cm.__enter__()
        if self.client is not None:
            self.say(f"dask cluster: {self.client.scheduler.address} "
                     f"({len(self.client.scheduler_info()['workers'])} workers)", err=True)
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self._cm.__exit__(*exc)

    def say(self, text: str, err: bool = False) -> None:
        if not self.quiet:
            click.echo(text, err=err)

    def dataset(self, data: Sequence[str]) -> Any:
        files = resolve_inputs(data)
        o = self.opts
        return make_dataset(files, o.get("engine"), o.get("sep"), o.get("names"), o.get("part_size"), o.get("cpu"))

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
            wf.fit(ds, progress=prog)
        seconds = time.perf_counter() - start
        if self.profile:
            self.profile_rows += P.profile_table("fit", P.gather_times(self.client), wf, round(seconds, 3))
            wf.op_timer = None
        passes = len(wf._stat_levels())
        self.say(f"fit: {f'{rows:,} rows, ' if rows is not None else ''}{ds.npartitions} partitions, "
                 f"{passes} pass{'es' if passes != 1 else ''} over the data in {P.duration(seconds)}"
                 f"{_rate(rows, seconds)}")
        return {"rows": rows, "seconds": seconds, "partitions": ds.npartitions, "passes": passes}

    def write(self, source: Any, out: str, to: str, wf: Any = None, rows: Optional[int] = None,
              **kw: Any) -> Dict[str, Any]:
        """Transform ``source`` with ``wf`` (or write it as is) to ``out``."""
        ds = wf.transform(source) if wf is not None else source
        if wf is not None and self.profile:
            wf.op_timer = P.record
            P.collect_and_reset()
        rename = None if wf is not None else {"transform": "convert", "transform (phase 1)": "read"}
        prog = self.progress(rows, rename)
        start = time.perf_counter()
        opts = {k: v for k, v in kw.items() if v is not None}
        if to == "parquet":
            meta = ds.to_parquet(out, progress=prog, **opts)
        else:
            meta = ds.to_tfrecord(out, progress=prog, **opts)
        seconds = time.perf_counter() - start
        if wf is not None and self.profile:
            self.profile_rows += P.profile_table("transform", P.gather_times(self.client), wf, round(seconds, 3))
            wf.op_timer = None
        size = _folder_bytes(out)
        verb = "transform" if wf is not None else "convert"
        self.say(f"{verb}: {meta['rows']:,} rows -> {len(meta['files'])} {to} file"
                 f"{'s' if len(meta['files']) != 1 else ''} in {out} ({P.human(size)}B) in {P.duration(seconds)}"
                 f"{_rate(meta['rows'], seconds)}")
        meta["seconds_total"] = seconds
        return meta

    def finish(self) -> None:
        if self.profile:
            P.echo_profile(self.profile_rows)


def _write_options(to: str, output_files: Optional[int], split_per_worker: Optional[int],
                   batch_size: Optional[int], shuffle: Optional[str], seed: Optional[int],
                   compression: Optional[str], overwrite: bool) -> Dict[str, Any]:
    if to == "parquet" and batch_size is not None:
        raise UsageProblem("--batch-size applies to --to tfrecord (prebatched records); parquet has no batches")
    if compression is not None:
        allowed = ("snappy", "zstd", "gzip", "lz4", "brotli", "none") if to == "parquet" else ("gzip", "zlib", "none")
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


def _check_not_inside(files: List[str], out: str) -> None:
    out_abs = os.path.abspath(out)
    for f in files:
        if os.path.abspath(f).startswith(out_abs + os.sep):
            raise UsageProblem(f"the output folder {out!r} holds the input {f!r}; write to another folder")


def write_options(f: Any) -> Any:
    """--to and the output layout options (transform, fit-transform, convert)."""
    opts = [
        click.option("--to", "to", type=click.Choice(["parquet", "tfrecord"]), default="parquet", show_default=True,
                     help="Output format."),
        click.option("--output-files", type=click.IntRange(min=1), default=None, metavar="N",
                     help="Number of output files (default: one per partition for parquet, 1 for TFRecord); with "
                          "--split-per-worker, files per worker folder."),
        click.option("--split-per-worker", type=click.IntRange(min=1), default=None, metavar="W",
                     help="Write worker_0/ .. worker_{W-1}/ folders with row counts differing by at most one, "
                          "for W data-parallel training processes."),
        click.option("--batch-size", type=click.IntRange(min=1), default=None, metavar="B",
                     help="TFRecord only: prebatched records of B rows (default: one tf.train.Example per row)."),
        click.option("--shuffle", type=click.Choice(["partition", "full"]), is_flag=False, flag_value="partition",
                     default=None,
                     help="Shuffle rows: --shuffle (= partition) within each partition; --shuffle full across "
                          "all output files (each output file must fit in memory). Default: keep row order."),
        click.option("--seed", type=int, default=None, help="Shuffle seed (default: random)."),
        click.option("--compression", default=None, metavar="CODEC",
                     help="parquet: snappy (default), zstd, gzip, lz4, brotli, none; tfrecord: gzip, zlib, none "
                          "(default)."),
        click.option("--overwrite", is_flag=True, help="Replace an existing output folder (once the new one is complete)."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


# -- fit -------------------------------------------------------------------------------------
@cli.command(context_settings=CONTEXT, short_help="Fit SPEC on DATA; save the workflow to WF_DIR.")
@click.argument("spec", metavar="SPEC")
@click.argument("data", nargs=-1, required=True, metavar="DATA...")
@click.option("-o", "--out", "out", required=True, metavar="WF_DIR", help="Folder to save the fitted workflow to.")
@click.option("--overwrite", is_flag=True, help="Replace an existing WF_DIR (once the new one is complete).")
@read_options
@job_options
@handle_errors
def fit(spec: str, data: Tuple[str, ...], out: str, overwrite: bool, **opts: Any) -> None:
    """Fit the workflow of SPEC (YAML/JSON) on DATA and save it to WF_DIR.

    \b
    Statistics (vocabularies, means, ...) are computed in one streaming pass over DATA per
    dependency level. WF_DIR then holds workflow.json (graph, schemas, embedding sizes) and the
    statistics; use it with `tabprep transform` or tabprep.Workflow.load(WF_DIR).

    \b
    Example:
      tabprep fit spec.yaml 'data/train/*.parquet' --out wf/ --workers 4 --part-size 256MB
    """
    with _Job(opts) as job:
        wf = _load_spec(spec)
        check_output(out, overwrite, "workflow folder")
        ds = job.dataset(data)
        job.fit(wf, ds)
        wf.save(out)
        job.say(f"saved the fitted workflow to {out} ({len(wf.output_columns)} output columns; "
                f"`tabprep inspect {out}` shows the schema, embedding sizes and statistics)")
        job.finish()


# -- transform -------------------------------------------------------------------------------
@cli.command(context_settings=CONTEXT, short_help="Transform DATA with WF_DIR to parquet/TFRecord.")
@click.argument("wf_dir", metavar="WF_DIR")
@click.argument("data", nargs=-1, required=True, metavar="DATA...")
@click.option("-o", "--out", "out", required=True, metavar="DIR", help="Output folder.")
@write_options
@click.option("--allow-pickle", is_flag=True,
              help="Load a workflow saved with pickled functions (runs code from WF_DIR: only if you trust it).")
@read_options
@job_options
@handle_errors
def transform(wf_dir: str, data: Tuple[str, ...], out: str, to: str, output_files: Optional[int],
              split_per_worker: Optional[int], batch_size: Optional[int], shuffle: Optional[str], seed: Optional[int],
              compression: Optional[str], overwrite: bool, allow_pickle: bool, **opts: Any) -> None:
    """Transform DATA with the fitted workflow in WF_DIR and write it to DIR.

    \b
    DIR gets the data files, _schema.json (dtypes, tags, cardinalities), _metadata.json (files and
    row counts), tfrecord_spec.json for TFRecord, and _SUCCESS, written last.

    \b
    Examples:
      tabprep transform wf/ data/valid/ --out out/valid/
      tabprep transform wf/ data/train/ --out out/train/ --to tfrecord --batch-size 1024 \\
          --split-per-worker 8 --shuffle full
    """
    wopts = _write_options(to, output_files, split_per_worker, batch_size, shuffle, seed, compression, overwrite)
    with _Job(opts) as job:
        wf = _load_workflow(wf_dir, allow_pickle)
        check_output(out, overwrite)
        ds = job.dataset(data)
        _check_not_inside(ds.files, out)
        check_columns(wf, ds)
        job.write(ds, out, to, wf=wf, rows=input_rows(ds), **wopts)
        job.finish()


# -- fit-transform -----------------------------------------------------------------------------
@cli.command("fit-transform", context_settings=CONTEXT, short_help="Fit SPEC on DATA and transform DATA in one job.")
@click.argument("spec", metavar="SPEC")
@click.argument("data", nargs=-1, required=True, metavar="DATA...")
@click.option("-o", "--out", "out", required=True, metavar="DIR", help="Output folder of the transformed DATA.")
@click.option("--workflow-out", metavar="WF_DIR", default=None,
              help="Also save the fitted workflow there (to transform other data later).")
@write_options
@read_options
@job_options
@handle_errors
def fit_transform(spec: str, data: Tuple[str, ...], out: str, workflow_out: Optional[str], to: str,
                  output_files: Optional[int], split_per_worker: Optional[int], batch_size: Optional[int],
                  shuffle: Optional[str], seed: Optional[int], compression: Optional[str], overwrite: bool,
                  **opts: Any) -> None:
    """Fit the workflow of SPEC on DATA, then transform DATA to DIR.

    \b
    The workflow is saved to --workflow-out only once the output is written, so a failed job
    leaves neither.

    \b
    Example:
      tabprep fit-transform spec.yaml data/train/ --out out/train/ --workflow-out wf/
    """
    wopts = _write_options(to, output_files, split_per_worker, batch_size, shuffle, seed, compression, overwrite)
    with _Job(opts) as job:
        wf = _load_spec(spec)
        check_output(out, overwrite)
        if workflow_out is not None:
            check_output(workflow_out, overwrite, "workflow folder")
            if os.path.abspath(workflow_out) == os.path.abspath(out):
                raise UsageProblem("--workflow-out must differ from --out")
        ds = job.dataset(data)
        _check_not_inside(ds.files, out)
        job.fit(wf, ds)
        job.write(ds, out, to, wf=wf, rows=input_rows(ds), **wopts)
        if workflow_out is not None:
            wf.save(workflow_out)
            job.say(f"saved the fitted workflow to {workflow_out}")
        job.finish()


# -- convert -------------------------------------------------------------------------------------
@cli.command(context_settings=CONTEXT, short_help="Convert csv -> parquet, parquet -> TFRecord (no workflow).")
@click.argument("data", nargs=-1, required=True, metavar="DATA...")
@click.option("-o", "--out", "out", required=True, metavar="DIR", help="Output folder.")
@write_options
@read_options
@job_options
@handle_errors
def convert(data: Tuple[str, ...], out: str, to: str, output_files: Optional[int], split_per_worker: Optional[int],
            batch_size: Optional[int], shuffle: Optional[str], seed: Optional[int], compression: Optional[str],
            overwrite: bool, **opts: Any) -> None:
    """Convert DATA as is: csv -> parquet, parquet (or csv) -> TFRecord.

    \b
    TFRecord cannot hold nulls: fill them first (`tabprep fit-transform` with FillMissing /
    Categorify), or the job fails naming the column.

    \b
    Examples:
      tabprep convert 'raw/day_*.tsv' --engine csv --sep '\\t' --names label,I1,I2 --out data/
      tabprep convert out/train/ --to tfrecord --batch-size 1024 --out tfr/train/
    """
    wopts = _write_options(to, output_files, split_per_worker, batch_size, shuffle, seed, compression, overwrite)
    with _Job(opts) as job:
        check_output(out, overwrite)
        ds = job.dataset(data)
        _check_not_inside(ds.files, out)
        job.write(ds, out, to, rows=input_rows(ds), **wopts)
        job.finish()


# -- check ---------------------------------------------------------------------------------------
@cli.command(context_settings=CONTEXT, short_help="Validate a spec (against DATA's columns if given).")
@click.argument("spec", metavar="SPEC")
@click.argument("data", nargs=-1, metavar="[DATA...]")
@click.option("--json", "as_json", is_flag=True, help="Print the normalized spec as JSON.")
@read_options
@output_options
@handle_errors
def check(spec: str, data: Tuple[str, ...], as_json: bool, quiet: bool, verbose: bool, debug: bool,
          engine: Optional[str], sep: Optional[str], names: Optional[str]) -> None:
    """Validate SPEC (and, given DATA, that its columns and dtypes fit DATA) without fitting.

    Prints the normalized spec and the output columns; exit code 2 for an invalid spec, 1 when
    DATA lacks a column.
    """
    from ..workflow.spec import spec_to_json, spec_to_yaml

    setup_logging(verbose, quiet)
    wf = _load_spec(spec)
    if data:
        files = resolve_inputs(data)
        ds = make_dataset(files, engine, sep, names, None, True)
        check_columns(wf, ds)
        wf._bind(ds.schema, ds.describe())
    if quiet:
        return
    normalized = wf.to_spec()
    if as_json:
        click.echo(spec_to_json(normalized), nl=False)
        return
    click.echo(f"{spec}: ok, {len(wf.input_columns)} input columns -> {len(wf.output_columns)} output columns"
               + (f" (checked against {len(data)} DATA argument{'s' if len(data) != 1 else ''})" if data else ""))
    click.echo(spec_to_yaml(normalized), nl=False)


# -- inspect --------------------------------------------------------------------------------------
@cli.command(context_settings=CONTEXT, short_help="Show schema, embedding sizes and statistics of WF_DIR.")
@click.argument("path", metavar="WF_DIR")
@click.option("--json", "as_json", is_flag=True, help="Print everything as one JSON object.")
@click.option("--allow-pickle", is_flag=True, help="Load a workflow saved with pickled functions (trusted only).")
@output_options
@handle_errors
def inspect(path: str, as_json: bool, allow_pickle: bool, quiet: bool, verbose: bool, debug: bool) -> None:
    """Show a fitted workflow: graph, output schema, embedding sizes, statistics.

    WF_DIR may also be a transformed output folder (with _schema.json): its schema, embedding sizes
    and row counts are shown.
    """
    from .inspect_cmd import describe_output, describe_workflow, echo_description

    setup_logging(verbose, quiet)
    p = Path(path)
    if (p / "workflow.json").exists() or not (p / "_schema.json").exists():
        info = describe_workflow(_load_workflow(path, allow_pickle), path)
    else:
        info = describe_output(path)
    if as_json:
        click.echo(json.dumps(info, indent=2, default=str))
    elif not quiet:
        echo_description(info)


# -- generate ---------------------------------------------------------------------------------------
@cli.command(context_settings=CONTEXT, short_help="Generate synthetic criteo or movielens data.")
@click.argument("kind", type=click.Choice(["criteo", "movielens"]), metavar="criteo|movielens")
@click.option("--rows", type=click.IntRange(min=1), required=True, metavar="N", help="Number of rows.")
@click.option("-o", "--out", "out", required=True, metavar="DIR", help="Output folder (parquet files).")
@click.option("--files", type=click.IntRange(min=1), default=None, metavar="K", help="Number of files.")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed (same seed, same data).")
@click.option("--overwrite", is_flag=True, help="Replace an existing output folder.")
@output_options
@handle_errors
def generate(kind: str, rows: int, out: str, files: Optional[int], seed: int, overwrite: bool, quiet: bool,
             verbose: bool, debug: bool) -> None:
    """Generate a synthetic dataset: criteo (label, I1-I13, C1-C26) or movielens (ratings).

    \b
    Example:
      tabprep generate criteo --rows 1000000 --out data/criteo/
    """
    setup_logging(verbose, quiet)
    check_output(out, overwrite)
    start = time.perf_counter()
    _generate_atomic(kind, rows, out, files, seed)
    seconds = time.perf_counter() - start
    if not quiet:
        click.echo(f"generate: {rows:,} {kind} rows -> {out} ({P.human(_folder_bytes(out))}B) in "
                   f"{P.duration(seconds)}{_rate(rows, seconds)}")


def _generate_atomic(kind: str, rows: int, out: str, files: Optional[int], seed: int) -> None:
    """Generate into a hidden sibling folder and rename it into place at the end."""
    from ..io import synthetic

    final = Path(out)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.parent / f".{final.name}.tabprep-tmp-{uuid.uuid4().hex[:8]}"
    try:
        kwargs: Dict[str, Any] = {"seed": seed}
        if files is not None:
            kwargs["files"] = files
        fn = synthetic.generate_criteo if kind == "criteo" else synthetic.generate_movielens
        fn(rows, str(tmp), **kwargs)
        if final.exists():
            trash = final.parent / f".{final.name}.tabprep-old-{uuid.uuid4().hex[:8]}"
            os.rename(final, trash)
            os.rename(tmp, final)
            shutil.rmtree(trash, ignore_errors=True)
        else:
            os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


# -- demo -------------------------------------------------------------------------------------------
DEMO_MARKER = ".tabprep-demo"


@cli.command(context_settings=CONTEXT, short_help="Generate, fit and transform Criteo-like data end to end.")
@click.option("--rows", type=click.IntRange(min=1), default=1_000_000, show_default=True, metavar="N",
              help="Rows of synthetic Criteo data.")
@click.option("--workdir", metavar="DIR", default=None,
              help="Keep everything in DIR (data, spec.yaml, workflow, output). Default: a temporary folder, "
                   "deleted at the end.")
@click.option("--files", type=click.IntRange(min=1), default=None, metavar="K",
              help="Number of generated files (default: about one per 250k rows).")
@job_options
@handle_errors
def demo(rows: int, workdir: Optional[str], files: Optional[int], **opts: Any) -> None:
    """Run the main job end to end on synthetic Criteo data.

    \b
    Generates N Criteo-like rows (label, I1-I13, C1-C26), fits the canonical workflow
      C1..C26 >> Categorify;  I1..I13 >> FillMissing >> Clip(0) >> LogOp >> Normalize;  + label
    transforms the data to parquet, and prints the embedding sizes and the throughput of each
    step, then the equivalent `tabprep` commands.
    """
    if workdir is not None:
        wd = Path(workdir)
        if wd.exists() and any(wd.iterdir()) and not (wd / DEMO_MARKER).exists():
            raise UsageProblem(f"--workdir {workdir!r} exists and holds other files; give a new or empty folder "
                               f"(or one a previous `tabprep demo` used)")
        wd.mkdir(parents=True, exist_ok=True)
        keep = True
    else:
        wd = Path(tempfile.mkdtemp(prefix="tabprep-demo-"))
        keep = False
    (wd / DEMO_MARKER).write_text("a tabprep demo folder; `tabprep demo --workdir` may overwrite it\n")
    raw, spec_path, wf_dir, out = wd / "raw", wd / "spec.yaml", wd / "workflow", wd / "out"
    try:
        with _Job(opts) as job:
            n_files = files or max(1, min(64, rows // 250_000))
            job.say(f"demo: {rows:,} synthetic Criteo rows in {wd}" + ("" if keep else " (temporary)"))
            start = time.perf_counter()
            _generate_atomic("criteo", rows, str(raw), n_files, 0)
            t_gen = time.perf_counter() - start
            job.say(f"generate: {rows:,} rows -> {raw} ({n_files} files, {P.human(_folder_bytes(str(raw)))}B) in "
                    f"{P.duration(t_gen)}{_rate(rows, t_gen)}")
            spec_path.write_text(CRITEO_SPEC)
            wf = _load_spec(str(spec_path))
            ds = job.dataset([str(raw)])
            fit_info = job.fit(wf, ds)
            wf.save(str(wf_dir))
            meta = job.write(ds, str(out), "parquet", wf=wf, rows=input_rows(ds), overwrite=True)
            if not job.quiet:
                from ..ops.embeddings import get_embedding_sizes

                sizes = get_embedding_sizes(wf)
                click.echo(f"embedding sizes (column: cardinality, dim) of {len(sizes)} categorical columns:")
                items = [f"{k}: ({c:,}, {d})" for k, (c, d) in sizes.items()]
                for i in range(0, len(items), 4):
                    click.echo("  " + "   ".join(f"{x:<22}" for x in items[i:i + 4]).rstrip())
                total = fit_info["seconds"] + meta["seconds_total"]
                click.echo(f"throughput: fit {P.human(rows / fit_info['seconds'])} rows/s, transform+write "
                           f"{P.human(rows / meta['seconds_total'])} rows/s, fit+transform "
                           f"{P.human(rows / total)} rows/s ({P.duration(total)} for {rows:,} rows)")
                if keep:
                    click.echo("the same job with commands:")
                    click.echo(f"  tabprep generate criteo --rows {rows} --out {raw} --overwrite")
                    click.echo(f"  tabprep fit {spec_path} {raw} --out {wf_dir} --overwrite")
                    click.echo(f"  tabprep transform {wf_dir} {raw} --out {out} --overwrite")
                    click.echo(f"  tabprep inspect {wf_dir}")
                else:
                    click.echo("(pass --workdir DIR to keep the data, spec, workflow and output)")
            job.finish()
    finally:
        if not keep:
            shutil.rmtree(wd, ignore_errors=True)


from .serve_cmd import serve as _serve  # noqa: E402 - `tabprep serve` lives in its own module

cli.add_command(_serve)


def main(argv: Optional[Sequence[str]] = None) -> Any:
    """Console-script entry point (``tabprep``)."""
    # like `python -m`: custom ops and functions a spec names ({import: "mymodule:f"}) may live in
    # the working directory
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    return cli.main(args=list(argv) if argv is not None else None, prog_name="tabprep")


if __name__ == "__main__":  # pragma: no cover
    main()
