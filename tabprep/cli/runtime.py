"""What every CLI job shares: options, input / output checks, errors and exit codes (the dask
cluster: :mod:`.cluster`).

Exit codes: 0 success; 1 the job failed (a column missing from the data, an op error, an I/O
error...); 2 usage error (bad options, missing input files, an invalid spec, an output folder
that exists without ``--overwrite``). A failure prints one line ``error: ...`` on stderr (the
traceback too with ``--debug``).
"""
from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

import click

from .._util import did_you_mean


EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
#: the reader of stdout went away (``tabprep inspect WF | head -1``): 128 + SIGPIPE, the status a
#: shell reports for the GNU tools, which SIGPIPE kills in the same place
EXIT_PIPE = 141


#: stopped by SIGTERM (Kubernetes, Slurm): 128 + 15, the status a shell reports for it
EXIT_TERM = 143
#: stopped by Ctrl-C (SIGINT): 128 + 2
EXIT_INTERRUPTED = 130


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: raised in the main thread like Ctrl-C's ``KeyboardInterrupt``, so every
    ``finally``/``except BaseException`` that cleans up after Ctrl-C (a write's temporary
    folder, the local dask cluster) runs for it too."""


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While the block runs (in the main thread), SIGTERM raises :class:`Terminated`; the
    previous handler is restored afterwards. Elsewhere (a thread) nothing changes.

    SIGTERM and Ctrl-C's SIGINT (where Python's default handler has it) reach the main thread
    wherever the kernel delivered them (:class:`~tabprep.cli.signals.MainThreadRelay`): one that
    landed on a worker thread while the main thread waited for a task that did not return was
    never handled, and the job stayed alive."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    import signal   # here, not at the top: `tabprep --help` imports this module (startup, #32)

    from .signals import MainThreadRelay

    relay: Optional[MainThreadRelay] = None

    def raise_terminated(signum: int, frame: Any) -> None:
        # once: a second SIGTERM must not interrupt the cleanup the first one started (a
        # supervisor that insists sends SIGKILL after its grace period)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if relay is not None:
            relay.handled(signum)
        raise Terminated()

    def raise_interrupt(signum: int, frame: Any) -> None:   # Python's default_int_handler, told to the relay
        if relay is not None:
            relay.handled(signum)
        raise KeyboardInterrupt()

    previous = signal.signal(signal.SIGTERM, raise_terminated)
    previous_int = signal.getsignal(signal.SIGINT)
    own_int = previous_int is signal.default_int_handler   # (a handler the user set is left alone)
    if own_int:
        signal.signal(signal.SIGINT, raise_interrupt)
    try:
        if hasattr(signal, "pthread_kill"):   # (POSIX; elsewhere the handlers alone, as before)
            relay = MainThreadRelay([signal.SIGTERM, signal.SIGINT] if own_int else [signal.SIGTERM])
        yield
    finally:
        if relay is not None:
            relay.stop()
        if own_int:
            signal.signal(signal.SIGINT, previous_int)
        signal.signal(signal.SIGTERM, previous)


class UsageProblem(Exception):
    """Bad input from the command line (exit code 2)."""


class JobFailed(Exception):
    """The job could not complete (exit code 1)."""


# -- options ------------------------------------------------------------------------------
def _workers_type(value: Any) -> Any:
    if value is None or value == "auto":
        return value
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise click.BadParameter(f"{value!r} is not a number of workers (an integer >= 1, or 'auto')") from None
    if n < 1:
        raise click.BadParameter(f"needs at least 1 worker, got {n}")
    return n


def output_options(f: Callable) -> Callable:
    """--quiet / --verbose / --debug: on every command."""
    opts = [
        click.option("-q", "--quiet", is_flag=True, help="No progress bars or summaries; only errors (for schedulers)."),
        click.option("-v", "--verbose", is_flag=True, help="Log what tabprep does (INFO level) on stderr."),
        click.option("--debug", is_flag=True, envvar="TABPREP_DEBUG",
                     help="Print the full traceback on failure [env TABPREP_DEBUG=1]."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def job_options(f: Callable) -> Callable:
    """Options of every job that runs on dask (fit, transform, fit-transform, convert, demo)."""
    opts = [
        click.option("--cpu/--gpu", "cpu", default=None,
                     help="Run on the CPU (pandas) or the GPU (cuDF). Default: the GPU when cuDF and a GPU are "
                          "usable, else the CPU."),
        click.option("--part-size", metavar="SIZE", default=None,
                     help="Target size of one partition, e.g. 256MB (default 128MB on CPU; on GPU 1/16 of the device memory, at least 1GB). Smaller "
                          "partitions use less memory per task."),
        click.option("--scheduler", metavar="ADDRESS", envvar="TABPREP_SCHEDULER", default=None,
                     help="Run on an existing dask.distributed cluster, e.g. tcp://10.0.0.5:8786 (ucx://... "
                          "for UCX) or a scheduler-file path; a cluster without workers (before or during the job) "
                          "is waited for up to 60 s (TABPREP_WAIT_FOR_WORKERS=SECONDS) [env TABPREP_SCHEDULER]."),
        click.option("--scheduler-file", metavar="PATH", envvar="TABPREP_SCHEDULER_FILE", default=None,
                     help="Run on the existing cluster whose scheduler wrote PATH (`dask scheduler "
                          "--scheduler-file PATH`; a shared file system for several nodes) "
                          "[env TABPREP_SCHEDULER_FILE]."),
        click.option("--workers", metavar="N", callback=lambda c, p, v: _workers_type(v), default=None,
                     help="Start a local dask.distributed cluster of N worker processes ('auto': one per core; "
                          "on GPU a LocalCUDACluster with one worker per GPU). Default: dask's threaded "
                          "scheduler in this process."),
        click.option("--memory-limit", metavar="SIZE", default=None,
                     help="Memory limit of each --workers worker process, e.g. 4GB (default: RAM / workers)."),
        click.option("--rmm-pool-size", metavar="SIZE", default=None,
                     help="GPU: RMM memory pool of each GPU worker (or of this process without --workers), "
                          f"e.g. 40GB or 0.8 (a fraction of the device's memory); 'none': no pool. Default: "
                          f"{DEFAULT_RMM_POOL} of the device for --workers (this process: half the free memory); "
                          "on an existing --scheduler cluster the workers' own pool, unless given."),
        click.option("--device-memory-limit", metavar="SIZE", default=None,
                     help="GPU --workers: device memory a worker's data may use before it spills to host "
                          "memory, e.g. 60GB or 0.8 (default: dask-cuda's, 0.8 of the device; 0: no spilling)."),
        click.option("--protocol", type=click.Choice(["tcp", "ucx"]), default=None,
                     help="--workers: transport between the workers, tcp (default) or ucx (NVLink / InfiniBand "
                          "between GPUs; needs distributed-ucxx-cu12 or -cu13). An existing cluster's transport "
                          "is its address's scheme."),
        click.option("--profile", is_flag=True, help="Print a per-op time summary at the end."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return output_options(f)


def _parse_storage_options(ctx: Any, param: Any, values: Sequence[str]) -> Optional[Dict[str, Any]]:
    """``KEY=VALUE`` pairs -> a dict; a VALUE that is JSON (``true``, ``3``, ``{"a": 1}``) is decoded."""
    import json

    out: Dict[str, Any] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{item!r} is not KEY=VALUE (e.g. --storage-option anon=true)")
        try:
            out[key.strip()] = json.loads(value)
        except ValueError:
            out[key.strip()] = value
    return out or None


def storage_options_option(f: Callable) -> Callable:
    """--storage-option KEY=VALUE (repeatable): options of the remote file system of URL paths."""
    return click.option(
        "--storage-option", "storage_options", multiple=True, metavar="KEY=VALUE", callback=_parse_storage_options,
        help="Option of the file system of s3:// (gs://, ...) paths, passed to fsspec like pandas' storage_options, "
             "e.g. endpoint_url=http://127.0.0.1:9000 or anon=true; JSON values are decoded (client_kwargs='{...}'). "
             "Repeatable. Credentials otherwise come from the environment (AWS_ACCESS_KEY_ID, "
             "AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL, AWS_PROFILE...).")(f)


def read_options(f: Callable) -> Callable:
    """How DATA is read: --engine, --sep, --names, --storage-option."""
    opts = [
        storage_options_option,
        click.option("--engine", type=click.Choice(["parquet", "csv"]), default=None,
                     help="Format of DATA (default: from the file extensions)."),
        click.option("--sep", default=None, metavar="CHAR",
                     help="Field separator of csv DATA (default ','; use $'\\t' for tab-separated files)."),
        click.option("--names", default=None, metavar="A,B,...",
                     help="Column names of csv DATA that has no header line (comma-separated)."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


# -- errors ---------------------------------------------------------------------------------
def handle_errors(fn: Optional[Callable] = None, *, sigterm: bool = True) -> Any:
    """Map exceptions of a command body to ``error: ...`` and exit codes 1 / 2 (130 Ctrl-C).

    ``sigterm``: SIGTERM stops the command like Ctrl-C (:func:`sigterm_as_interrupt`: cleanup
    runs, exit 143). ``tabprep serve`` passes False: uvicorn handles SIGTERM itself (it finishes
    the requests in flight)."""
    if fn is None:
        return functools.partial(handle_errors, sigterm=sigterm)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        debug = bool(kwargs.get("debug")) or os.environ.get("TABPREP_DEBUG", "") not in ("", "0")
        try:
            if not sigterm:
                return fn(*args, **kwargs)
            with sigterm_as_interrupt():
                return fn(*args, **kwargs)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Terminated:
            click.echo("error: terminated (SIGTERM); temporary files removed", err=True)
            raise click.exceptions.Exit(EXIT_TERM)
        except KeyboardInterrupt:
            click.echo("error: interrupted", err=True)
            raise click.exceptions.Exit(EXIT_INTERRUPTED)
        except Exception as exc:  # noqa: BLE001 - the CLI's job is to turn any failure into one line
            if isinstance(exc, BrokenPipeError) and stdout_reader_gone():
                quiet_stdout()
                raise click.exceptions.Exit(EXIT_PIPE)
            from ..workflow.spec import SpecError
            from .progress import end_open_bar

            end_open_bar()
            if debug:
                import traceback

                traceback.print_exc(file=sys.stderr)
            usage = isinstance(exc, (UsageProblem, SpecError))
            msg = one_line(exc)
            hint = "" if debug else " (--debug shows the traceback)"
            click.echo(f"error: {msg}" + ("" if usage or isinstance(exc, JobFailed) else hint), err=True)
            raise click.exceptions.Exit(EXIT_USAGE if usage else EXIT_FAILED)

    return wrapper


def stdout_reader_gone() -> bool:
    """True when stdout is a pipe whose reading end is closed (``| head`` has exited): a
    ``BrokenPipeError`` of a socket (dask's) or of a child's pipe is a real failure instead."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (a test runner's buffer)
        return False
    import select

    if not hasattr(select, "poll"):  # Windows: cannot ask; stdout is by far the likeliest pipe
        return True
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def quiet_stdout() -> None:
    """Point stdout at the null device, so that what is still buffered for the gone reader
    is dropped at exit instead of raising again (Python's documented recipe for SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):
        pass


_PLAIN = (ValueError, KeyError, TypeError, RuntimeError, OSError, UsageProblem, JobFailed)


def one_line(exc: BaseException) -> str:
    """``exc`` as one line, with the notes tabprep added on the way up (which op, which columns,
    which file: ``add_note``, also on exceptions raised on a dask worker) in parentheses."""
    if isinstance(exc, KeyError) and exc.args:
        text = str(exc.args[0])
    else:
        text = str(exc) or type(exc).__name__
    text = " ".join(text.split())
    if not isinstance(exc, _PLAIN):
        text = f"{type(exc).__name__}: {text}"
    notes = [" ".join(str(n).split()) for n in getattr(exc, "__notes__", None) or []]
    if notes:
        text += f" ({'; '.join(n for n in notes if n)})"
    return text


@functools.lru_cache(maxsize=None)
def _stderr_handler_class() -> type:
    """The handler class, made on first use: ``logging`` (with ``traceback``, ``string``...) is
    imported by a command that runs, not by ``--help`` (startup, #32)."""
    import logging

    class _StderrHandler(logging.StreamHandler):
        """Writes to whatever ``sys.stderr`` is at the time (test runners swap it)."""

        def __init__(self) -> None:
            super().__init__()

        @property
        def stream(self) -> Any:  # type: ignore[override]
            return sys.stderr

        @stream.setter
        def stream(self, value: Any) -> None:
            pass

    return _StderrHandler


def setup_logging(verbose: bool, quiet: bool) -> None:
    import logging

    level = logging.INFO if verbose else (logging.ERROR if quiet else logging.WARNING)
    logger = logging.getLogger("tabprep")
    handler_class = _stderr_handler_class()
    if not any(isinstance(h, handler_class) for h in logger.handlers):
        handler = handler_class()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(level)
    for name in ("distributed", "distributed.nanny", "distributed.scheduler", "distributed.worker"):
        logging.getLogger(name).setLevel(logging.INFO if verbose else logging.ERROR)


# -- inputs / outputs ------------------------------------------------------------------------
def resolve_inputs(paths: Sequence[str], storage_options: Optional[Dict[str, Any]] = None) -> List[str]:
    """Expand DATA arguments (files, folders, globs, or URLs of them); a missing one is a usage error."""
    from ..io.dataset import expand_paths

    if not paths:
        raise UsageProblem("no DATA given: pass parquet/csv files, folders or globs")
    try:
        files = expand_paths(list(paths), storage_options)
    except FileNotFoundError as exc:
        raise UsageProblem(str(exc)) from None
    except ValueError as exc:  # an incomplete tabprep output, or a file named twice (io's check)
        msg = str(exc)
        raise UsageProblem("DATA" + msg[len("the data"):] if msg.startswith("the data names") else msg) from None
    return files


def check_output(path: str, overwrite: bool, kind: Any = None, storage_options: Optional[Dict[str, Any]] = None) -> None:
    """Before any work: recover what a crashed run left at ``path``, then ``path`` must be new,
    empty, or (with --overwrite) a folder of ``kind`` tabprep wrote, and its parent writable.

    ``kind``: a :class:`tabprep.io.commit.FolderKind` (default: an output folder). A URL
    (``s3://...``) is checked on its file system (nothing to recover there: no temporaries).
    """
    from ..io import commit
    from ..io.fs import is_remote, local_path

    kind = kind if kind is not None else commit.OUTPUT
    what = kind.what
    if is_remote(path):
        from ..io import objectstore

        try:
            objectstore.check_target(path, kind, overwrite, storage_options)
        except FileExistsError as exc:
            raise UsageProblem(str(exc).replace("pass overwrite=True (CLI: --overwrite)", "pass --overwrite")) from None
        except OSError as exc:  # unreachable endpoint, missing bucket, refused credentials
            raise JobFailed(f"cannot check {what} {path!r}: {one_line(exc)}") from None
        return
    path = local_path(path)
    p = Path(path)
    anc = p.absolute().parent
    while not anc.exists():
        anc = anc.parent
    if not anc.is_dir():
        raise JobFailed(f"cannot write {what} {path!r}: {str(anc)!r} is a file, not a folder")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise JobFailed(f"cannot write {what} {path!r}: no write permission in {str(anc)!r}")
    try:
        commit.recover(path)  # stale temporaries of a killed run: finished or undone (logged)
    except RuntimeError as exc:  # a live tabprep process is writing there
        raise JobFailed(str(exc)) from None
    except OSError as exc:
        raise JobFailed(f"cannot clean up what an interrupted run left next to {path!r}: {exc}") from None
    if p.exists():
        if p.is_file():
            raise UsageProblem(f"{what} {path!r} is an existing file; choose another path")
        if any(p.iterdir()) and not overwrite:
            raise UsageProblem(f"{what} {path!r} exists and is not empty; pass --overwrite to replace it "
                               f"(it is replaced only once the new output is complete)")
        try:
            commit.check_target(path, kind, overwrite)
        except FileExistsError as exc:  # a folder tabprep did not write: never replaced
            raise UsageProblem(str(exc)) from None


def make_dataset(files: List[str], engine: Optional[str], sep: Optional[str], names: Optional[str],
                 part_size: Optional[str], cpu: Optional[bool], storage_options: Optional[Dict[str, Any]] = None) -> Any:
    from ..io.dataset import Dataset

    kwargs: Dict[str, Any] = {}
    if sep is not None:
        kwargs["sep"] = sep.encode().decode("unicode_escape") if "\\" in sep else sep
    if names:
        kwargs["names"] = [n.strip() for n in names.split(",") if n.strip()]
        kwargs["header"] = None
    if kwargs and (engine or "") != "csv" and not all(f.endswith((".csv", ".tsv", ".txt", ".csv.gz")) for f in files):
        raise UsageProblem("--sep/--names apply to csv DATA; add --engine csv if the files are csv")
    if names and files:
        _check_names(files[0], kwargs["names"], kwargs.get("sep", ","), storage_options)
    if part_size is not None:
        from ..io.dataset import parse_size

        try:
            parse_size(part_size)
        except ValueError:
            raise UsageProblem(f"--part-size {part_size!r} is not a size like 256MB") from None
    return Dataset(files, engine=engine, part_size=part_size, cpu=cpu, storage_options=storage_options, **kwargs)


def _check_names(first: str, names: List[str], sep: str, storage_options: Optional[Dict[str, Any]]) -> None:
    """--names must give one name per field of a line (pandas takes extra leading fields as an
    index and drops them, so the names would land on the last fields); read from the first line."""
    import pandas as pd

    try:
        fields = pd.read_csv(first, sep=sep, header=None, nrows=1, index_col=False,
                             storage_options=storage_options if "://" in first else None).shape[1]
    except Exception:  # noqa: BLE001 - an unreadable file fails with its own error when read
        return
    if fields != len(names):
        raise UsageProblem(f"--names gives {len(names)} names ({','.join(names)}) but the lines of {first!r} have "
                           f"{fields} fields (--sep {sep!r}): give one name per field")


def input_rows(ds: Any) -> Optional[int]:
    """Row count when it is cheap to know (parquet metadata); None for csv."""
    try:
        return int(ds.num_rows) if ds.engine == "parquet" else None
    except Exception:  # noqa: BLE001 - progress bars work without it
        return None


def check_columns(wf: Any, ds: Any) -> None:
    """Fail early, naming the spec line, when a column the workflow reads is not in the data."""
    schema = ds.schema
    lines = wf._spec_column_lines
    source = wf._spec_source
    for col in wf.input_columns:
        if col in schema:
            continue
        where = ""
        if lines.get(col):
            where = f" ({source or 'spec'} line {lines[col]})"
        hint = did_you_mean(col, schema.column_names)
        hint = f"; {hint}" if hint else ""
        names = schema.column_names
        avail = ", ".join(names[:20]) + (" ..." if len(names) > 20 else "")
        raise JobFailed(f"column {col!r}{where} is not in {ds.describe()}{hint} Its columns: {avail}")


#: RMM pool of each LocalCUDACluster worker by default (a fraction of its device's memory): like
#: the in-process job's pool (RMM's default, half the free memory); the rest stays for cuDF's
#: own allocations outside the pool and for dask-cuda's spilling threshold
DEFAULT_RMM_POOL = "0.5"
