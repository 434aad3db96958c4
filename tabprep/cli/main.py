"""The ``tabprep`` command: fit, transform, convert, inspect and generate data without writing Python.

This module wires the commands: their arguments, options and help. The work is done in
:mod:`.job` (the job runner and the helpers the commands share), :mod:`.runtime` (option groups,
inputs, outputs and errors), :mod:`.cluster` (the dask cluster), :mod:`.inspect_cmd` and :mod:`.demo_cmd`.

Startup: ``tabprep --help`` and every ``tabprep COMMAND --help`` must stay fast (<= 0.2 s), so this
module imports only click and the light :mod:`.runtime` / :mod:`.progress` at its top; the job
modules (pandas, pyarrow, dask) are imported inside the command bodies.
``tests/test_cli_startup.py`` checks that no help imports pandas, pyarrow, dask or numpy.

Adding a command: either define it here with ``@cli.command`` (heavy imports inside its body), or
put it in its own module ``cli/<name>_cmd.py`` and name it in :data:`LAZY_COMMANDS`
(``"name": "tabprep.cli.name_cmd:function"``): that module is imported only when the command runs
or help lists it, so its top too imports only click, the standard library and :mod:`.runtime`.
"""
from __future__ import annotations

import importlib
import os
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import click

from .._version import __version__
from .runtime import (EXIT_INTERRUPTED, EXIT_TERM, check_columns, check_output, handle_errors, input_rows,
                      job_options, make_dataset, output_options, read_options, resolve_inputs, setup_logging,
                      storage_options_option)

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
TRUSTED_HELP = ("Import the functions and op classes WF_DIR names even when they are not registered "
                "(runs code from their modules: only if you trust WF_DIR).")

__all__ = ["cli", "main", "CRITEO_SPEC", "LAZY_COMMANDS"]

#: commands defined in modules of their own, imported when the command runs or help lists it:
#: ``name -> "module:attribute"`` (a click command); listed after the commands defined here
LAZY_COMMANDS: Dict[str, str] = {
    "serve": "tabprep.cli.serve_cmd:serve",
    "profile": "tabprep.cli.quality_cmd:profile_cmd",
    "drift": "tabprep.cli.quality_cmd:drift_cmd",
}


class _OrderedGroup(click.Group):
    """Lists commands in the order they are defined (the order of a job), not alphabetically, then
    the :data:`LAZY_COMMANDS`, whose modules are imported only when asked for."""

    def list_commands(self, ctx: click.Context) -> List[str]:
        return list(self.commands) + [n for n in LAZY_COMMANDS if n not in self.commands]

    def get_command(self, ctx: click.Context, name: str) -> Optional[click.Command]:
        if name not in self.commands and name in LAZY_COMMANDS:
            module, _, attr = LAZY_COMMANDS[name].partition(":")
            self.add_command(getattr(importlib.import_module(module), attr), name)
        return self.commands.get(name)


def _deferred(module: str, name: str) -> Any:
    """A stand-in for ``module.name`` (a function or class) that imports ``module`` when called."""
    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module, __package__), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


class _DeferredModule:
    """A stand-in for a module, imported on its first attribute lookup."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)


# The job helpers the commands use, by the names they had when this module imported them at its
# top (commands written that way keep working) but imported on first use, not for --help
commit = _DeferredModule("tabprep.io.commit")
Job = _deferred(".job", "Job")
folder_bytes = _deferred(".job", "folder_bytes")
generate_data = _deferred(".job", "generate_data")
load_spec = _deferred(".job", "load_spec")
load_workflow = _deferred(".job", "load_workflow")
prepare_outputs = _deferred(".job", "prepare_outputs")
rate = _deferred(".job", "rate")
writer_kwargs = _deferred(".job", "writer_kwargs")
run_demo = _deferred(".demo_cmd", "run_demo")
P = _DeferredModule("tabprep.cli.progress")   # progress bars and counts: used by command bodies only


def __getattr__(name: str) -> Any:
    if name == "CRITEO_SPEC":  # the demo's spec, kept importable from here
        from .demo_cmd import CRITEO_SPEC

        return CRITEO_SPEC
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    Every path (DATA, --out, WF_DIR) may be a URL: s3://bucket/data/ (s3fs), gs://... (gcsfs),
    file://...; credentials come from the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
    AWS_ENDPOINT_URL...) or --storage-option KEY=VALUE. Outputs there get _SUCCESS last.
    Jobs run on dask's threaded scheduler, a local cluster (--workers N) or an existing one
    (--scheduler ADDRESS). Outputs are written atomically: a failed job leaves no output that
    looks complete (readers check _SUCCESS and _metadata.json), and the next run at that path
    cleans up after it. No output may be, or lie inside, an input (and vice versa).

    \b
    Exit codes: 0 ok; 1 the job failed (e.g. a column missing from the data); 2 usage error
    (bad options, missing input files, invalid spec, output exists without --overwrite);
    141 the reader of the output went away (`tabprep inspect WF | head -1`), quietly.
    """


# -- options shared by the writing commands -----------------------------------------------------
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
                     help="parquet: auto (default: snappy, except on the delta-packed int columns, which "
                          "it cannot shrink), snappy, zstd, gzip, lz4, brotli, none; tfrecord: gzip, zlib, none "
                          "(default)."),
        click.option("--overwrite", is_flag=True,
                     help="Replace an existing output folder (once the new one is complete; at an s3:// (gs://...) "
                          "URL, where nothing can be renamed, the old one is deleted when the write starts)."),
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
@click.option("--data-profile", is_flag=True,
              help="Record the training data's profile in the saved workflow (stats/profile.json), the reference "
                   "of `tabprep drift WF_DIR DATA`.")
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
    with Job(opts) as job:
        so = job.storage_options
        wf = load_spec(spec)
        files = resolve_inputs(data, so)
        prepare_outputs(data, files, [("--out", out, commit.WORKFLOW)], overwrite, so, [("SPEC", spec)])
        ds = job.dataset(files)
        job.fit(wf, ds)
        wf.save(out, storage_options=so)
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
@click.option("--trusted", is_flag=True, help=TRUSTED_HELP)
@click.option("--cast", is_flag=True,
              help="Convert columns whose type differs from the fitted one (ints read as floats or strings...) "
                   "to the fitted type; values that would change (2.5 or 'abc' for an int column) are an error. "
                   "Without it such columns are refused.")
@read_options
@job_options
@handle_errors
def transform(wf_dir: str, data: Tuple[str, ...], out: str, to: str, output_files: Optional[int],
              split_per_worker: Optional[int], batch_size: Optional[int], shuffle: Optional[str], seed: Optional[int],
              compression: Optional[str], overwrite: bool, allow_pickle: bool, trusted: bool, cast: bool,
              **opts: Any) -> None:
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
    wopts = writer_kwargs(to, output_files, split_per_worker, batch_size, shuffle, seed, compression, overwrite)
    with Job(opts) as job:
        so = job.storage_options
        wf = load_workflow(wf_dir, allow_pickle, trusted, so)
        files = resolve_inputs(data, so)
        prepare_outputs(data, files, [("--out", out, commit.OUTPUT)], overwrite, so, [("WF_DIR", wf_dir)])
        ds = job.dataset(files)
        check_columns(wf, ds)
        job.write(ds, out, to, wf=wf, rows=input_rows(ds), cast=cast, **wopts)
        job.finish()


# -- fit-transform -----------------------------------------------------------------------------
@cli.command("fit-transform", context_settings=CONTEXT, short_help="Fit SPEC on DATA and transform DATA in one job.")
@click.argument("spec", metavar="SPEC")
@click.argument("data", nargs=-1, required=True, metavar="DATA...")
@click.option("-o", "--out", "out", required=True, metavar="DIR", help="Output folder of the transformed DATA.")
@click.option("--workflow-out", metavar="WF_DIR", default=None,
              help="Also save the fitted workflow there (to transform other data later).")
@click.option("--data-profile", is_flag=True,
              help="Record the training data's profile in the saved workflow (stats/profile.json), the reference "
                   "of `tabprep drift WF_DIR DATA`.")
@write_options
@read_options
@job_options
@handle_errors
def fit_transform(spec: str, data: Tuple[str, ...], out: str, workflow_out: Optional[str], to: str,
                  output_files: Optional[int], split_per_worker: Optional[int], batch_size: Optional[int],
                  shuffle: Optional[str], seed: Optional[int], compression: Optional[str], overwrite: bool,
                  **opts: Any) -> None:
    """Fit the workflow of SPEC on DATA, then transform DATA to DIR (Workflow.fit_transform).

    \b
    Target encodings (TargetEncoding) of DATA come out of fold: each row is encoded with the
    statistics of the other folds, so its own label does not leak into its feature.
    DIR and --workflow-out are committed together: after the job, or a crash at any point,
    both are new or both are as before (a crashed commit is finished or undone by the next
    run at either path).

    \b
    Example:
      tabprep fit-transform spec.yaml data/train/ --out out/train/ --workflow-out wf/
    """
    wopts = writer_kwargs(to, output_files, split_per_worker, batch_size, shuffle, seed, compression, overwrite)
    with Job(opts) as job:
        so = job.storage_options
        wf = load_spec(spec)
        files = resolve_inputs(data, so)
        outputs = [("--out", out, commit.OUTPUT)]
        if workflow_out is not None:
            outputs.append(("--workflow-out", workflow_out, commit.WORKFLOW))
        prepare_outputs(data, files, outputs, overwrite, so, [("SPEC", spec)])
        ds = job.dataset(files)
        # Workflow.fit_transform(ds) is fit(ds) then transform(ds, out_of_fold=True); the two
        # halves run as steps here so that the fit has its own progress bar and summary
        job.fit(wf, ds)
        with commit.Transaction() as txn:  # both folders or neither
            meta = job.write(ds, out, to, wf=wf, rows=input_rows(ds), out_of_fold=True, transaction=txn, **wopts)
            if workflow_out is not None:
                wf.save(workflow_out, transaction=txn, storage_options=so)
        job.say_written(meta, out, to, "transform")
        if workflow_out is not None:
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
    wopts = writer_kwargs(to, output_files, split_per_worker, batch_size, shuffle, seed, compression, overwrite)
    with Job(opts) as job:
        files = resolve_inputs(data, job.storage_options)
        prepare_outputs(data, files, [("--out", out, commit.OUTPUT)], overwrite, job.storage_options)
        ds = job.dataset(files)
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
          engine: Optional[str], sep: Optional[str], names: Optional[str], storage_options: Any) -> None:
    """Validate SPEC (and, given DATA, that its columns and dtypes fit DATA) without fitting.

    Prints the normalized spec and the output columns; exit code 2 for an invalid spec, 1 when
    DATA lacks a column.
    """
    from ..workflow.spec import spec_to_json, spec_to_yaml

    setup_logging(verbose, quiet)
    wf = load_spec(spec)
    if data:
        files = resolve_inputs(data, storage_options)
        ds = make_dataset(files, engine, sep, names, None, True, storage_options)
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
@click.option("--trusted", is_flag=True, help=TRUSTED_HELP)
@storage_options_option
@output_options
@handle_errors
def inspect(path: str, as_json: bool, allow_pickle: bool, trusted: bool, storage_options: Any, quiet: bool,
            verbose: bool, debug: bool) -> None:
    """Show a fitted workflow: graph, output schema, embedding sizes, statistics.

    WF_DIR may also be a transformed output folder (with _schema.json): its schema, embedding sizes
    and row counts are shown.
    """
    from ..io.fs import get_fs, remote_errors
    from .inspect_cmd import describe_output, describe_workflow, echo_description

    setup_logging(verbose, quiet)
    fs, p = get_fs(path, storage_options)
    # a remote store's refusal (wrong credentials: a bare "Forbidden") names the URL and what to check
    with remote_errors(p, "read"):
        is_output = not fs.exists(fs.join(p, "workflow.json")) and fs.exists(fs.join(p, "_schema.json"))
    if not is_output:
        info = describe_workflow(load_workflow(path, allow_pickle, trusted, storage_options), path, storage_options)
    else:
        with remote_errors(p, "read"):
            info = describe_output(path, storage_options)
    if as_json:
        import json

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
@click.option("--overwrite", is_flag=True,
              help="Replace an existing folder of generated data or tabprep output (once the new one is complete).")
@storage_options_option
@output_options
@handle_errors
def generate(kind: str, rows: int, out: str, files: Optional[int], seed: int, overwrite: bool, storage_options: Any,
             quiet: bool, verbose: bool, debug: bool) -> None:
    """Generate a synthetic dataset: criteo (label, I1-I13, C1-C26) or movielens (ratings).

    DIR gets parquet files, _metadata.json (files, row counts, kind, seed) and _SUCCESS, committed
    atomically like every tabprep output (readers check them).

    \b
    Example:
      tabprep generate criteo --rows 1000000 --out data/criteo/
    """
    setup_logging(verbose, quiet)
    check_output(out, overwrite, commit.GENERATED, storage_options)
    start = time.perf_counter()
    generate_data(kind, rows, out, files, seed, overwrite, storage_options)
    seconds = time.perf_counter() - start
    if not quiet:
        click.echo(f"generate: {P.count(rows, kind + ' row')} -> {out} ({P.human(folder_bytes(out, storage_options))}B) in "
                   f"{P.duration(seconds)}{rate(rows, seconds)}")


# -- demo -------------------------------------------------------------------------------------------
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
      C1..C26 >> Categorify;  I1..I13 >> FillMissing >> Clip(0) >> LogOp >> Normalize(float32);  + label
    transforms the data to parquet, and prints the embedding sizes and the throughput of each
    step. With --workdir DIR it keeps the files there and prints the equivalent `tabprep`
    commands on them; without, everything goes to a temporary folder, deleted at the end.
    """
    run_demo(rows, workdir, files, opts)


def main(argv: Optional[Sequence[str]] = None) -> Any:
    """Console-script entry point (``tabprep``)."""
    # TensorFlow's C++ logging (oneDNN, cpu_feature_guard: ~8 lines on stderr) is noise in a CLI's
    # output; set before anything imports TensorFlow, and only when the user has not chosen a level
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # like `python -m`: custom ops and functions a spec names ({import: "mymodule:f"}) may live in
    # the working directory
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return cli.main(args=list(argv) if argv is not None else None, prog_name="tabprep")
    except SystemExit as exc:
        if exc.code in (EXIT_TERM, EXIT_INTERRUPTED):   # stopped, cleanup done: nothing to wait for
            exit_now(exc.code)
        raise


def exit_now(code: int) -> None:
    """End the process after a SIGTERM or Ctrl-C, once the job's cleanup has run (temporaries removed, the
    ``terminated`` line written): the streams are flushed and the interpreter's shutdown is
    skipped. That shutdown, and the exit handlers, wait for every thread still running a task of
    the job (dask's threads go on with the tasks they had started): a task that does not return,
    or a long write, held a terminated process alive (a CI run saw a terminated ``tabprep
    transform`` still alive 60 s after its ``terminated`` line; running the exit handlers first
    hung the same way in tests/test_trust_signals.py). Only the console entry point does this,
    not a command invoked in a test runner's process."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed pipe: nothing more to say
            pass
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
