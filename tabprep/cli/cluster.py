"""The dask cluster of a CLI job: a local one (``--workers``: ``LocalCluster`` of processes, or
``LocalCUDACluster`` on the GPU) or an existing one (``--scheduler`` / ``--scheduler-file``), with
the memory options checked before anything starts."""
from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from typing import Any, Dict, Iterator, List, Optional

from concurrent.futures import CancelledError

import click

from .runtime import DEFAULT_RMM_POOL, JobFailed, UsageProblem, one_line

log = logging.getLogger("tabprep.cli")


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


#: the scheduler of a ``--workers`` cluster: no dashboard (``dashboard_address=None``), yet dask still
#: binds the scheduler's HTTP server (health and metrics routes) to 8787 by default, and warned
#: "Port 8787 is already in use" (past ``-q``) when another cluster or job held it: any free port
NO_DASHBOARD_PORT: Dict[str, Any] = {"dashboard_address": ":0"}


def cuda_cluster_kwargs(n: int, memory_limit: Optional[str], rmm_pool_size: Optional[str],
                        device_memory_limit: Optional[str], protocol: Optional[str]) -> Dict[str, Any]:
    """``LocalCUDACluster`` arguments for ``--workers N`` on the GPU: one worker per GPU 0..N-1."""
    pool = _size_or_fraction(rmm_pool_size if rmm_pool_size is not None else DEFAULT_RMM_POOL, "--rmm-pool-size")
    kwargs: Dict[str, Any] = {"CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in range(n)),
                              "memory_limit": memory_limit or "auto", "dashboard_address": None,
                              "scheduler_kwargs": dict(NO_DASHBOARD_PORT),
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
            "scheduler_kwargs": dict(NO_DASHBOARD_PORT),
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

    # a tls:// scheduler: the client's certificate and CA from dask's configuration
    # (DASK_DISTRIBUTED__COMM__TLS__...), as distributed.Client itself takes them
    from distributed.security import Security

    connection_args = Security().get_connection_args("client") if address.startswith("tls://") else {}

    async def ask() -> Any:
        try:
            comm = await connect(address, timeout=timeout, **connection_args)
        except OSError as exc:  # dask retried until ``timeout``: refused, unreachable, unknown host
            return exc
        try:   # connected: the answer within ``timeout`` too (a server that never answers)
            await asyncio.wait_for(comm.write({"op": "identity", "n_workers": 0, "reply": True}), timeout)
            return await asyncio.wait_for(comm.read(), timeout)
        finally:
            comm.abort()

    hint = "is it the scheduler's address (port 8786 unless it was started with another)?"
    try:
        # (the connect and the answer are bounded each; this bounds anything else, e.g. a TLS handshake)
        reply = asyncio.run(asyncio.wait_for(ask(), 2 * timeout + 1))
    except (asyncio.TimeoutError, TimeoutError):
        raise JobFailed(f"the server {where} did not answer as a dask scheduler within {timeout:g} s: {hint}") from None
    except OSError as exc:  # the connection lost while asking
        raise JobFailed(f"cannot connect to the dask scheduler {where}: {one_line(exc)}") from None
    except Exception as exc:  # noqa: BLE001 - whatever a server that is not a scheduler says back
        # (a MemoryError: an HTTP answer read as the length of a dask message)
        detail = "" if isinstance(exc, MemoryError) else f" ({one_line(exc)})"
        raise JobFailed(f"the server {where} did not answer as a dask scheduler{detail}: {hint}") from None
    if isinstance(reply, OSError):
        raise JobFailed(_unreachable(reply, where, timeout)) from None
    kind = reply.get("type") if isinstance(reply, dict) else None
    if kind != "Scheduler":
        raise JobFailed(f"the server {where} did not answer as a dask scheduler (it is {kind or 'something else'}): "
                        f"{hint}")


def _unreachable(exc: OSError, where: str, timeout: float) -> str:
    """The error of a scheduler address dask could not connect to within ``timeout`` seconds. dask
    says only "Timed out trying to connect"; the cause it retried on is in the exception's chain."""
    chain: List[BaseException] = []
    cause: Optional[BaseException] = exc
    while cause is not None and len(chain) < 10:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    # the innermost socket error (refused, unknown host), not a cancellation of dask's retries
    causes = [c for c in chain[1:] if isinstance(c, OSError) and not isinstance(c, TimeoutError)]
    root = causes[-1] if causes else exc
    if not isinstance(root, ConnectionRefusedError) and _refused(where):
        root = ConnectionRefusedError("connection refused")
    fix = ("start the scheduler (`dask scheduler`; port 8786 unless started with another) or correct the "
           "address given to --scheduler / --scheduler-file")
    if isinstance(root, ConnectionRefusedError):
        return f"nothing accepts connections {where} (connection refused for {timeout:g} s): {fix}"
    detail = f" ({one_line(root)})" if root is not exc else ""   # (dask's own text repeats the timeout)
    return (f"cannot connect to the dask scheduler {where} within {timeout:g} s{detail}: is the host "
            f"reachable from here? {fix}")


def _refused(where: str) -> bool:
    """Whether a plain TCP connect to the ``tcp://host:port`` in ``where`` is refused now (one try,
    1 s). dask's chain holds the refusal only when its last retry was refused; on a busy machine
    that retry was often cancelled by dask's own timeout instead, and a refused address read as
    unreachable."""
    import re
    import socket

    m = re.search(r"tcp://\[?([^\]'/]+?)\]?:(\d+)", where)
    if m is None:
        return False
    try:
        socket.create_connection((m.group(1), int(m.group(2))), timeout=1.0).close()
    except ConnectionRefusedError:
        return True
    except OSError:
        return False
    return False


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


def _connect(address: str, where: str, start_worker: str, quiet: bool, wait: float) -> Any:
    """A client of the scheduler at ``address``, which has at least one worker (waited for up to
    ``wait`` seconds, TABPREP_WAIT_FOR_WORKERS, announced on stderr)."""
    from distributed import Client

    if not address.startswith("inproc://"):  # in-process clusters cannot be misaddressed
        _probe(address, where, CONNECT_TIMEOUT_S)
    try:
        client = Client(address=address, timeout=f"{CONNECT_TIMEOUT_S}s")
    except (OSError, TimeoutError) as exc:
        raise JobFailed(f"cannot connect to the dask scheduler {where}: {one_line(exc)}") from None
    if not client.nthreads():
        if not quiet and wait > 0:
            click.echo(f"the dask scheduler {where} has no workers yet: waiting up to {wait:g} s for a worker "
                       f"(TABPREP_WAIT_FOR_WORKERS=SECONDS to change)", err=True)
        try:
            if wait <= 0:  # dask reads timeout=0 as no timeout: it waited forever
                raise TimeoutError
            client.wait_for_workers(1, timeout=wait)
        except (TimeoutError, OSError):
            client.close()
            raise JobFailed(f"the dask scheduler {where} has no workers (waited {wait:g} s for one); start them with "
                            f"`dask worker {start_worker}` (`dask cuda worker ...` on GPU nodes), or wait longer "
                            f"with TABPREP_WAIT_FOR_WORKERS=SECONDS") from None
    return client


class _WorkerWatch:
    """Fails the job of an existing cluster that has had no worker for ``wait`` seconds.

    dask's scheduler keeps the tasks of a cluster whose workers all left (``dask worker
    --no-nanny`` killed, nodes lost) waiting for a worker, forever unless the operator set
    ``distributed.scheduler.no-workers-timeout`` (the scheduler's configuration, which a client
    cannot set): the job hung. A thread asks the scheduler for its number of workers every
    ``wait / 10`` s (0.1 to 1 s; the cluster-wide count only, not each worker's identity); once the
    cluster has had none for ``wait`` seconds, :attr:`failed` holds the job's error and every future
    of the client is cancelled, then again at each poll (the futures of a compute started after),
    so the main thread's blocking compute raises. Workers that come back within ``wait`` s reset the
    clock. A worker lost without closing its connection (a node's network gone) counts from when
    the scheduler removes it (``distributed.scheduler.worker-ttl``, 5 min by default).
    """

    def __init__(self, client: Any, wait: float, where: str, start_worker: str) -> None:
        self.client = client
        self.wait = wait
        self.message = (f"the dask scheduler {where} has had no workers for {wait:g} s (all left during the job); "
                        f"start workers with `dask worker {start_worker}` (`dask cuda worker ...` on GPU nodes), or "
                        f"wait longer with TABPREP_WAIT_FOR_WORKERS=SECONDS")
        #: the job's error once the cluster has had no worker for ``wait`` seconds
        self.failed: Optional[str] = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tabprep-worker-watch", daemon=True)

    def __enter__(self) -> "_WorkerWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=CONNECT_TIMEOUT_S)

    def _n_workers(self) -> Optional[int]:
        try:
            info = self.client.sync(self.client.scheduler.identity, n_workers=0, callback_timeout=CONNECT_TIMEOUT_S)
            return int(info["n_workers"])
        except Exception:  # noqa: BLE001 - scheduler unreachable: the client's own reconnection decides
            log.debug("could not ask the scheduler for its workers", exc_info=True)
            return None

    def _cancel_all(self) -> None:
        from distributed import Future

        client = self.client

        async def cancel() -> None:  # on the client's event loop, which owns client.futures
            futures = [Future(key, client) for key in list(client.futures)]
            if futures:
                await client.cancel(futures, asynchronous=True, reason="no-workers", msg=self.failed)

        try:
            client.sync(cancel, callback_timeout=CONNECT_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - a client closing meanwhile: the job ends anyway
            log.debug("could not cancel the job's futures", exc_info=True)

    def _run(self) -> None:
        none_since: Optional[float] = None
        while not self._stop.wait(min(1.0, max(0.1, self.wait / 10))):
            n = self._n_workers()
            if n is None:
                continue
            if n > 0:
                none_since = None
                continue
            now = time.monotonic()
            if none_since is None:
                none_since = now
                log.warning("the dask cluster has no workers left: waiting up to %g s for one "
                            "(TABPREP_WAIT_FOR_WORKERS=SECONDS to change)", self.wait)
            if now - none_since >= self.wait:
                self.failed = self.message
                self._cancel_all()


def _lost_data(exc: BaseException, where: str, start_worker: str) -> Optional[str]:
    """The error of a job whose futures dask cancelled as "already forgotten": data the job had
    sent to the workers (the workflow, scattered to every worker) left with the last of them,
    and dask recomputes results, not data sent by a client."""
    if not isinstance(exc, CancelledError):
        return None
    groups = getattr(exc, "error_groups", None) or [exc]
    if not any(getattr(g, "reason", None) == "already forgotten" for g in groups):
        return None
    return (f"the dask scheduler {where} lost all its workers during the job, and with them the workflow the job "
            f"had sent to every worker, which dask cannot recompute; run the job again once the cluster has workers "
            f"(`dask worker {start_worker}`)")


def _ucx_available() -> bool:
    """Whether dask's UCX transport (the ``distributed_ucxx`` package) is installed; looked up, not imported."""
    import importlib.util

    return importlib.util.find_spec("distributed_ucxx") is not None


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
    if protocol == "ucx" and workers and not _ucx_available():
        raise UsageProblem("--protocol ucx needs dask's UCX transport, which is not installed: pip install "
                           "distributed-ucxx-cu12 (or -cu13 for CUDA 13); or leave --protocol out (tcp)")
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
        wait = _wait_seconds()
        client = _connect(address, where, start_worker, quiet, wait)
        with client, _WorkerWatch(client, wait, where, start_worker) as watch:
            pool = _size_or_fraction(rmm_pool_size, "--rmm-pool-size") if rmm_pool_size else None
            if pool is not None:
                client.run(worker_rmm_pool, pool)
            try:
                yield client
            except Exception as exc:  # the watch's cancel, or data lost with the workers: one line saying so
                why = watch.failed or _lost_data(exc, where, start_worker)
                if why is None:
                    raise
                raise JobFailed(why) from None
        return
    import dask
    from distributed import Client

    # the settings reach the worker processes through their nannies, which copy the configuration
    # when they are made; the user's own configuration is left as it was
    with dask.config.set(LOCAL_CLUSTER_CONFIG):
        cluster = _local_cluster(on_gpu, workers, memory_limit, rmm_pool_size, device_memory_limit, protocol)
    with cluster, Client(cluster) as client:
        log.info("started a local cluster of %d workers", len(client.nthreads()))
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

