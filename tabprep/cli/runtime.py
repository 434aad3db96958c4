"""What every CLI job shares: options, the dask cluster, input / output checks, errors and exit codes.

Exit codes: 0 success; 1 the job failed (a column missing from the data, an op error, an I/O
error...); 2 usage error (bad options, missing input files, an invalid spec, an output folder
that exists without ``--overwrite``). A failure prints one line ``error: ...`` on stderr (the
traceback too with ``--debug``).
"""
from __future__ import annotations

import contextlib
import functools
import logging
import os
import sys
import traceback
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

import click

from .._util import did_you_mean

log = logging.getLogger("tabprep.cli")

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


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
                          "for UCX) or a scheduler-file path; a cluster without workers is waited for up to "
                          "60 s (TABPREP_WAIT_FOR_WORKERS=SECONDS) [env TABPREP_SCHEDULER]."),
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
                          "between GPUs; needs ucxx). An existing cluster's transport is its address's scheme."),
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
def handle_errors(fn: Callable) -> Callable:
    """Map exceptions of a command body to ``error: ...`` and exit codes 1 / 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        debug = bool(kwargs.get("debug")) or os.environ.get("TABPREP_DEBUG", "") not in ("", "0")
        try:
            return fn(*args, **kwargs)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except KeyboardInterrupt:
            click.echo("error: interrupted", err=True)
            raise click.exceptions.Exit(130)
        except Exception as exc:  # noqa: BLE001 - the CLI's job is to turn any failure into one line
            from ..workflow.spec import SpecError
            from .progress import end_open_bar

            end_open_bar()
            if debug:
                traceback.print_exc(file=sys.stderr)
            usage = isinstance(exc, (UsageProblem, SpecError))
            msg = one_line(exc)
            hint = "" if debug else " (--debug shows the traceback)"
            click.echo(f"error: {msg}" + ("" if usage or isinstance(exc, JobFailed) else hint), err=True)
            raise click.exceptions.Exit(EXIT_USAGE if usage else EXIT_FAILED)

    return wrapper


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


def setup_logging(verbose: bool, quiet: bool) -> None:
    level = logging.INFO if verbose else (logging.ERROR if quiet else logging.WARNING)
    logger = logging.getLogger("tabprep")
    if not any(isinstance(h, _StderrHandler) for h in logger.handlers):
        handler = _StderrHandler()
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
        return expand_paths(list(paths), storage_options)
    except FileNotFoundError as exc:
        raise UsageProblem(str(exc)) from None
    except ValueError as exc:  # an incomplete tabprep output
        raise UsageProblem(str(exc)) from None


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
    if part_size is not None:
        from ..io.dataset import parse_size

        try:
            parse_size(part_size)
        except ValueError:
            raise UsageProblem(f"--part-size {part_size!r} is not a size like 256MB") from None
    return Dataset(files, engine=engine, part_size=part_size, cpu=cpu, storage_options=storage_options, **kwargs)


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


# -- dask ------------------------------------------------------------------------------------
#: RMM pool of each LocalCUDACluster worker by default (a fraction of its device's memory): like
#: the in-process job's pool (RMM's default, half the free memory); the rest stays for cuDF's
#: own allocations outside the pool and for dask-cuda's spilling threshold
DEFAULT_RMM_POOL = "0.5"


def _size_or_fraction(value: str, option: str) -> Any:
    """``"0.8"`` -> 0.8 (a fraction of the device), ``"40GB"`` or ``"42949672960"`` (from 1 MiB) ->
    bytes; ``"none"`` -> None."""
    from ..io.dataset import parse_size

    text = str(value).strip()
    if text.lower() == "none":
        return None
    try:
        number = float(text)
    except ValueError:
        number = None
    if number is not None:
        if 0 <= number <= 1:
            return number
        if _byte_count(text):
            return int(text)
        raise UsageProblem(f"{option} {value!r}: a number without a unit is a fraction of the device's memory "
                           f"(0 to 1, e.g. 0.8) or a byte count of at least 1 MiB; give a size with its unit, "
                           f"e.g. 40GB")
    try:
        size = parse_size(text)
    except (ValueError, OverflowError):
        size = None
    if size is None or size < 0:
        raise UsageProblem(f"{option} {value!r} is not a size like 40GB or a fraction like 0.8")
    return size


def _byte_count(text: str) -> bool:
    """Whether a bare number is a byte count, as dask and dask-cuda read a whole number > 1: only
    from 1 MiB, so that "2" (a 2-byte pool) or "4" (a 4-byte worker) is refused as a missing unit
    while a script's 42949672960 keeps working."""
    return text.isdigit() and int(text) >= 2 ** 20


def check_memory_limit(value: Optional[str]) -> None:
    """``--memory-limit`` as dask reads it ('auto', a fraction 0..1 of the machine's memory, 0: no
    limit, or a size with a unit): anything else is a usage error before a worker starts (dask
    itself took "4" as 4 bytes and "-1" as minus the machine's memory; a whole number from 1 MiB
    is bytes, as dask reads it)."""
    from dask.utils import parse_bytes

    if value is None or str(value).strip().lower() == "auto":
        return
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        number = None
    if number is not None:
        ok = 0 <= number <= 1 or _byte_count(text)
    else:
        try:
            ok = parse_bytes(text) >= 0
        except (ValueError, TypeError, OverflowError):
            ok = False
    if not ok:
        raise UsageProblem(f"--memory-limit {value!r} is not a memory size like 4GB, a fraction of this machine's "
                           f"memory like 0.5 (a number without a unit), a byte count of at least 1 MiB, 'auto' or 0 "
                           f"(no limit)")


def worker_rmm_pool(size: Any) -> bool:
    """Run on a worker (``client.run``): an RMM pool of ``size`` bytes, or that fraction of its
    device's memory when ``size <= 1``. Only on workers that hold no device data yet."""
    from .. import backend

    if isinstance(size, float) and size <= 1:
        size = int(size * backend.compute_device(False).total_memory()) // 256 * 256
    return backend.use_rmm_pool(size)


#: threads of each GPU worker. dask-cuda's default is one, which serialises a worker's reads, kernels
#: and writes; with two, one partition's parquet read/write (GIL released) overlaps another's
#: kernels; more only contend for the device and the GIL (as GPU_THREADS in-process). Measured with
#: benchmarks/scale.py --gpu --rows 200000000 --workers 1 --threads-per-worker N (issue 16):
#: 2 H200s, older code: 1 thread 18.43 s on 1 worker, 14.35 s on 2; 4 threads 16.70 s and 13.97 s.
#: One H100, 2026-11-23, alternating order: 2 threads 18.72 and 19.36 s, 4 threads 22.11 and
#: 20.78 s (task-seconds of the fit partials 9.1-9.4 against 24.0-24.5); identical outputs.
GPU_WORKER_THREADS = 2


def cuda_cluster_kwargs(n: int, memory_limit: Optional[str], rmm_pool_size: Optional[str],
                        device_memory_limit: Optional[str], protocol: Optional[str]) -> Dict[str, Any]:
    """``LocalCUDACluster`` arguments for ``--workers N`` on the GPU: one worker per GPU 0..N-1."""
    pool = _size_or_fraction(rmm_pool_size if rmm_pool_size is not None else DEFAULT_RMM_POOL, "--rmm-pool-size")
    kwargs: Dict[str, Any] = {"CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in range(n)),
                              "memory_limit": memory_limit or "auto", "dashboard_address": None,
                              "silence_logs": logging.ERROR, "rmm_pool_size": pool,
                              "threads_per_worker": GPU_WORKER_THREADS}
    if device_memory_limit is not None:
        kwargs["device_memory_limit"] = _size_or_fraction(device_memory_limit, "--device-memory-limit") or 0
    if protocol is not None:
        kwargs["protocol"] = protocol
    return kwargs


#: dask settings of the clusters ``--workers`` starts (without a dashboard, so nothing reads what
#: these feed): no statistical profiler on the workers (a stack walk of every thread each 10 ms),
#: no disk counters in the system monitors, a 100 ms event-loop tick instead of 20 ms. The nannies'
#: memory monitor (the workers' memory limit) keeps dask's interval. Measured on the 10M-row Criteo
#: job on 2 cores (LocalCluster of 2 processes; .dev A/B, interleaved runs): with dask's defaults
#: the workers and the client process took 28-33 CPU s against 21-27 with these settings.
LOCAL_CLUSTER_CONFIG: Dict[str, Any] = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.system-monitor.disk": False,
    "distributed.admin.tick.interval": "100ms",
}


def cpu_cluster_kwargs(workers: Any, memory_limit: Optional[str] = None,
                       protocol: Optional[str] = None) -> Dict[str, Any]:
    """``LocalCluster`` arguments for ``--workers N`` on the CPU: N processes sharing the cores
    (``"auto"``: one single-threaded process per core), no dashboard."""
    cores = os.cpu_count() or 1
    n = cores if workers == "auto" else int(workers)
    return {"n_workers": n, "threads_per_worker": max(1, cores // n), "processes": True,
            "memory_limit": memory_limit or "auto", "dashboard_address": None, "silence_logs": logging.ERROR,
            **({"protocol": protocol} if protocol else {})}


#: seconds to reach an existing cluster's scheduler and hear it answer
CONNECT_TIMEOUT_S = 20.0
#: seconds a job waits for the first worker of an existing cluster that has none yet (workers of a
#: batch system may join after the job starts); the environment's TABPREP_WAIT_FOR_WORKERS overrides
WAIT_FOR_WORKERS_S = 60.0


def _read_scheduler_file(path: str, option: str) -> str:
    """The address in the scheduler file ``path`` (what ``dask scheduler --scheduler-file`` writes)."""
    import json

    how = f"start the scheduler with `dask scheduler --scheduler-file {path}`" + (
        "; or give the scheduler's address, e.g. tcp://10.0.0.5:8786" if option == "--scheduler" else "")
    if os.path.isdir(path):
        raise UsageProblem(f"{option} {path!r} is a folder, not a scheduler file ({how})")
    if not os.path.isfile(path):
        raise UsageProblem(f"{option} {path!r} does not exist ({how})")
    try:
        with open(path) as fh:
            address = json.load(fh).get("address")
    except (OSError, ValueError, AttributeError):
        address = None
    if not isinstance(address, str) or not address:
        raise UsageProblem(f"{option} {path!r} is not a dask scheduler file (JSON with the scheduler's \"address\"); "
                           f"{how}, which writes it")
    return address


def _check_address(address: str, option: str) -> None:
    """A usage error for what cannot be a scheduler address (``garbage``, ``tcp://host:port``)."""
    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        scheme, loc = parse_address(address)
        if scheme != "inproc":
            parse_host_port(loc)
    except (ValueError, TypeError):
        raise UsageProblem(f"{option} {address!r} is neither a scheduler address like tcp://10.0.0.5:8786 nor an "
                           f"existing scheduler file") from None


def _probe(address: str, where: str, timeout: float) -> None:
    """Ask ``address`` who it is, all within ``timeout`` seconds. dask's Client bounds only the TCP
    connect: a server that accepts and never answers as a scheduler (an HTTP server waiting for its
    request line) hung it forever, and an HTTP reply read as a frame length asked for 3 EiB."""
    import asyncio

    from distributed.comm import connect

    async def ask() -> Any:
        comm = await connect(address, timeout=timeout)
        try:
            await comm.write({"op": "identity", "n_workers": 0, "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    hint = "is it the scheduler's address (port 8786 unless it was started with another)?"
    try:
        reply = asyncio.run(asyncio.wait_for(ask(), timeout))
    except (asyncio.TimeoutError, TimeoutError):
        raise JobFailed(f"the server {where} did not answer as a dask scheduler within {timeout:g} s: {hint}") from None
    except OSError as exc:  # refused, unreachable, unknown host
        raise JobFailed(f"cannot connect to the dask scheduler {where}: {one_line(exc)}") from None
    except Exception as exc:  # noqa: BLE001 - whatever a server that is not a scheduler says back
        # (a MemoryError: an HTTP answer read as the length of a dask message)
        detail = "" if isinstance(exc, MemoryError) else f" ({one_line(exc)})"
        raise JobFailed(f"the server {where} did not answer as a dask scheduler{detail}: {hint}") from None
    kind = reply.get("type") if isinstance(reply, dict) else None
    if kind != "Scheduler":
        raise JobFailed(f"the server {where} did not answer as a dask scheduler (it is {kind or 'something else'}): "
                        f"{hint}")


def _wait_seconds() -> float:
    text = os.environ.get("TABPREP_WAIT_FOR_WORKERS", "").strip()
    if not text:
        return WAIT_FOR_WORKERS_S
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise UsageProblem(f"TABPREP_WAIT_FOR_WORKERS={text!r} is not a number of seconds >= 0")
    return seconds


def _connect(address: str, where: str, start_worker: str, quiet: bool) -> Any:
    """A client of the scheduler at ``address``, which has at least one worker (waited for up to
    TABPREP_WAIT_FOR_WORKERS seconds, announced on stderr)."""
    from distributed import Client

    wait = _wait_seconds()
    if not address.startswith("inproc://"):  # in-process clusters cannot be misaddressed
        _probe(address, where, CONNECT_TIMEOUT_S)
    try:
        client = Client(address=address, timeout=f"{CONNECT_TIMEOUT_S}s")
    except (OSError, TimeoutError) as exc:
        raise JobFailed(f"cannot connect to the dask scheduler {where}: {one_line(exc)}") from None
    if not client.scheduler_info()["workers"]:
        if not quiet:
            click.echo(f"the dask scheduler {where} has no workers yet: waiting up to {wait:g} s for a worker "
                       f"(TABPREP_WAIT_FOR_WORKERS=SECONDS to change)", err=True)
        try:
            client.wait_for_workers(1, timeout=wait)
        except (TimeoutError, OSError):
            client.close()
            raise JobFailed(f"the dask scheduler {where} has no workers (waited {wait:g} s for one); start them with "
                            f"`dask worker {start_worker}` (`dask cuda worker ...` on GPU nodes), or wait longer "
                            f"with TABPREP_WAIT_FOR_WORKERS=SECONDS") from None
    return client


@contextlib.contextmanager
def dask_cluster(scheduler: Optional[str], workers: Any, memory_limit: Optional[str], cpu: Optional[bool],
                 quiet: bool, scheduler_file: Optional[str] = None, rmm_pool_size: Optional[str] = None,
                 device_memory_limit: Optional[str] = None, protocol: Optional[str] = None) -> Iterator[Any]:
    """The distributed client for the job (None: dask's threaded scheduler in this process).

    ``--scheduler`` / ``--scheduler-file``: an existing cluster (``rmm_pool_size`` given: an RMM
    pool on each of its workers through ``client.run``); ``--workers``: a local cluster
    (``LocalCUDACluster`` on the GPU with :func:`cuda_cluster_kwargs`).
    """
    if sum(bool(x) for x in (scheduler, scheduler_file, workers)) > 1:
        raise UsageProblem("give one of --scheduler / --scheduler-file (an existing cluster) or --workers "
                           "(a local one), not both")
    check_memory_limit(memory_limit)
    if memory_limit and not workers:
        raise UsageProblem("--memory-limit sets the memory of the workers started by --workers; "
                           "add --workers N (an existing --scheduler cluster has its own limits)")
    if (device_memory_limit or protocol) and not workers:
        raise UsageProblem(f"{'--device-memory-limit' if device_memory_limit else '--protocol'} applies to the "
                           f"workers started by --workers; an existing cluster sets it when its workers start "
                           f"(`dask cuda worker --device-memory-limit ...`, a ucx:// scheduler address)")
    from .. import backend

    on_gpu = not backend.resolve_cpu(cpu)
    if (rmm_pool_size or device_memory_limit) and not on_gpu:
        raise UsageProblem(f"{'--rmm-pool-size' if rmm_pool_size else '--device-memory-limit'} sets GPU memory; "
                           f"this job runs on the CPU (drop it, or run with --gpu)")
    if not scheduler and not scheduler_file and not workers:
        if on_gpu:  # in-process GPU job: pooled device memory, as NVTabular does
            pool = _size_or_fraction(rmm_pool_size, "--rmm-pool-size") if rmm_pool_size else "default"
            if pool is not None:
                worker_rmm_pool(None if pool == "default" else pool)
        yield None
        return
    if scheduler or scheduler_file:
        option, given = ("--scheduler-file", scheduler_file) if scheduler_file else ("--scheduler", scheduler)
        assert given is not None
        if scheduler_file or os.path.exists(given) or given.endswith(".json"):
            address = _read_scheduler_file(given, option)
            where, start_worker = f"at {address!r} (of {given!r})", f"--scheduler-file {given}"
        else:
            _check_address(given, option)
            address, where, start_worker = given, f"at {given!r}", given
        client = _connect(address, where, start_worker, quiet)
        with client:
            pool = _size_or_fraction(rmm_pool_size, "--rmm-pool-size") if rmm_pool_size else None
            if pool is not None:
                client.run(worker_rmm_pool, pool)
            yield client
        return
    import dask
    from distributed import Client

    # the settings reach the worker processes through their nannies, which copy the configuration
    # when they are made; the user's own configuration is left as it was
    with dask.config.set(LOCAL_CLUSTER_CONFIG):
        cluster = _local_cluster(on_gpu, workers, memory_limit, rmm_pool_size, device_memory_limit, protocol)
    with cluster, Client(cluster) as client:
        log.info("started a local cluster of %d workers", len(client.scheduler_info()["workers"]))
        yield client


def _local_cluster(on_gpu: bool, workers: Any, memory_limit: Optional[str], rmm_pool_size: Optional[str],
                   device_memory_limit: Optional[str], protocol: Optional[str]) -> Any:
    """The ``LocalCUDACluster`` (``on_gpu``) or ``LocalCluster`` of processes of ``--workers``."""
    from .. import backend

    if on_gpu:
        try:
            from dask_cuda import LocalCUDACluster
        except ImportError:
            raise JobFailed("--workers on the GPU needs dask-cuda (pip install tabprep[gpu]); or add --cpu") from None
        n_gpus = backend.gpu_count()
        n = n_gpus if workers == "auto" else int(workers)
        if n > n_gpus:
            raise UsageProblem(f"--workers {n} on the GPU needs {n} GPUs (one worker per GPU); this machine has "
                               f"{n_gpus}")
        return LocalCUDACluster(**cuda_cluster_kwargs(n, memory_limit, rmm_pool_size, device_memory_limit, protocol))
    from distributed import LocalCluster

    return LocalCluster(**cpu_cluster_kwargs(workers, memory_limit, protocol))

