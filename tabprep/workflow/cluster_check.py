"""A workflow sent to a dask.distributed cluster: the client's tabprep code on every worker, and a
scatter that cannot hang when a worker dies during it.

Every fit pass and transform scatters the workflow to every worker (:func:`scatter_workflow`,
called by ``Workflow._graph_handle``); before the first one for a client and set of workers,
:func:`check_worker_code` compares a fingerprint of tabprep's code (version + a hash of the
package's ``.py`` files) in the client with every worker's: a worker importing another tabprep
(an older install, a modified source tree) computes its tasks with other code, a silent wrong
result, so a difference is an error naming the worker, both versions and both package folders.
"""
from __future__ import annotations

import asyncio
import functools
import hashlib
import logging
import os
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple

import dask

from .._util import switched_off
from .._version import __version__

log = logging.getLogger(__name__)

#: ``TABPREP_CHECK_WORKER_CODE=0`` skips :func:`check_worker_code`: for workers whose tabprep differs
#: on purpose in a way that cannot change results (a client-only patch, a debugging print on the
#: workers), or installs without ``.py`` sources (byte-code only), whose hash cannot match
CHECK_ENV = "TABPREP_CHECK_WORKER_CODE"
#: ``TABPREP_SCATTER_TIMEOUT=SECONDS`` (0: none): the bound of one broadcast scatter of a workflow
SCATTER_TIMEOUT_ENV = "TABPREP_SCATTER_TIMEOUT"
#: seconds one broadcast scatter of the workflow may take on a cluster that lost no worker. dask
#: copies it as a tree (each holder sends to 2 more), log2(workers) rounds: a 2 GB workflow (a 100M
#: value vocabulary) on 128 workers at 100 MB/s is 7 rounds of 20 s, 140 s; 600 s leaves a 4x margin
#: for slower networks. A worker that leaves during the scatter is detected within WORKER_LOST_GRACE_S.
SCATTER_TIMEOUT_S = 600.0
#: seconds a scatter may still run once a worker it started with has left: dask's broadcast
#: (``Scheduler.replicate``) keeps trying to copy to the worker it was given, forever; a scatter
#: that was about to finish finishes within this
WORKER_LOST_GRACE_S = 10.0
#: seconds every worker has to say which tabprep it runs (it hashes 2 MB of sources: milliseconds;
#: generous for workers busy with another job's tasks, which share their event loop)
PROBE_TIMEOUT_S = 60.0
#: seconds between two looks at the cluster's workers during a scatter, and the bound of one look
_POLL_S = 0.5
_ASK_S = 10.0


class WorkerCodeMismatch(RuntimeError):
    """A worker of the cluster runs other tabprep code than the client (or none)."""


class ScatterFailed(RuntimeError):
    """The workflow could not be sent to every worker (a worker left during it, or the bound passed,
    or the workers did not answer the code check)."""


def distributed_client() -> Any:
    """The active dask.distributed client, or None (local schedulers, or distributed not installed)."""
    if dask.config.get("scheduler", None) not in (None, "dask.distributed", "distributed"):
        return None  # the user chose a local scheduler explicitly (dask.config.set(scheduler="sync"))
    try:
        from distributed import default_client
    except ImportError:
        return None
    try:
        return default_client()
    except ValueError:
        return None


@functools.lru_cache(maxsize=None)
def code_fingerprint() -> Tuple[str, str, str]:
    """``(version, sha256 of the package's .py files, package folder)`` of the tabprep this process
    imported; computed once per process (164 files, about 2 MB: some 10 ms). The hash covers the
    files' paths relative to the package and their bytes, so the same code in another folder (an
    identical install elsewhere on a worker node) has the same hash."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py"), key=lambda p: p.relative_to(root).as_posix()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return __version__, digest.hexdigest(), str(root)


def _worker_fingerprint() -> Tuple[str, str, str, str]:
    """Run on each worker (``client.run``): its :func:`code_fingerprint` plus ``""``; a worker
    whose tabprep has no such function gives its version and folder and hash ``""``; one without
    tabprep ``("", "", "", why)``. Sent by value (see below): a worker without this module
    could not unpickle a reference to it."""
    import sys

    try:
        from tabprep.workflow.cluster_check import code_fingerprint as fingerprint
    except ImportError as exc:
        try:
            import tabprep
        except ImportError as missing:
            return "", "", "", f"{missing} (Python {sys.executable})"
        folder = os.path.dirname(getattr(tabprep, "__file__", "") or "")
        return str(getattr(tabprep, "__version__", "unknown")), "", folder, f"{exc}"
    return (*fingerprint(), "")


# pickled by value (cloudpickle does so for a function whose module is not importable): the worker
# needs no tabprep to run it
_worker_fingerprint.__module__ = "tabprep_worker_probe"

#: (client id, scheduler address, worker addresses) already checked in this process
_checked: Set[Tuple[str, str, frozenset]] = set()
_checked_lock = threading.Lock()


def check_worker_code(client: Any, workers: Optional[List[str]] = None) -> None:
    """Raise :class:`WorkerCodeMismatch` naming each worker of ``client``'s cluster whose tabprep
    differs from this process's (version, package folder, source hash) or which has none, with
    the fix. Once per client and set of worker addresses (a job's later passes pay one call to
    the scheduler for the addresses). ``TABPREP_CHECK_WORKER_CODE=0`` skips it.

    A worker that joins after the check and before the next pass's is checked then; one that
    joins during a pass is not checked before that pass's tasks reach it.
    """
    if switched_off(CHECK_ENV):
        return
    addresses = sorted(workers if workers is not None else client.nthreads())
    key = (str(client.id), str(getattr(client.scheduler, "address", "")), frozenset(addresses))
    with _checked_lock:
        if key in _checked:
            return
    if not addresses:
        return
    mine = code_fingerprint()
    try:   # (callback_timeout: Client.sync's bound; a stopped worker process never answers)
        answers = client.run(_worker_fingerprint, workers=addresses, on_error="return",
                             callback_timeout=PROBE_TIMEOUT_S)
    except TimeoutError:
        raise ScatterFailed(f"the {len(addresses)} dask workers of the cluster did not all answer within "
                            f"{PROBE_TIMEOUT_S:g} s when asked which tabprep they run (hashing its sources takes "
                            f"milliseconds): is one stuck or stopped? Check the workers ({', '.join(addresses)}), "
                            f"restart the stuck one, and run the job again") from None
    bad: Dict[Tuple[str, ...], List[str]] = {}
    unknown = False
    for address, answer in sorted(answers.items()):
        if isinstance(answer, BaseException):
            # a worker that left meanwhile, or a probe that failed: not a mismatch; checked again next pass
            log.warning("could not ask dask worker %s for its tabprep code: %r", address, answer)
            unknown = True
            continue
        if tuple(answer[:2]) != mine[:2]:
            bad.setdefault(tuple(answer), []).append(address)
    if bad:
        raise WorkerCodeMismatch(_mismatch_message(mine, bad))
    if not unknown:
        with _checked_lock:
            _checked.add(key)


def _mismatch_message(mine: Tuple[str, str, str], bad: Dict[Tuple[str, ...], List[str]]) -> str:
    here = f"tabprep {mine[0]} from {mine[2]} (source hash {mine[1][:12]})"
    parts = []
    for (version, digest, folder, why), addresses in bad.items():
        who = f"dask worker{'s' if len(addresses) > 1 else ''} {', '.join(addresses)}"
        runs = "run" if len(addresses) > 1 else "runs"
        if not version:
            parts.append(f"{who} cannot import tabprep ({why})")
        elif not digest:
            parts.append(f"{who} {runs} tabprep {version} from {folder}, which predates this check ({why})")
        else:
            parts.append(f"{who} {runs} tabprep {version} from {folder} (source hash {digest[:12]})")
    other_code = any(version for version, *_ in bad)
    return ("; ".join(parts) + f"; this client runs {here}. "
            + ("Tasks computed with other code could give other results: " if other_code else "")
            + f"install the same tabprep on every worker (same version and source, e.g. `pip install "
              f"tabprep=={mine[0]}` in the workers' environment) and restart the workers"
            + (f"; {CHECK_ENV}=0 skips this check" if other_code else ""))


def scatter_timeout() -> float:
    """Seconds a broadcast scatter may take: ``TABPREP_SCATTER_TIMEOUT`` (0: no bound), else
    :data:`SCATTER_TIMEOUT_S`."""
    text = os.environ.get(SCATTER_TIMEOUT_ENV, "").strip()
    if not text:
        return SCATTER_TIMEOUT_S
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise ValueError(f"{SCATTER_TIMEOUT_ENV}={text!r} is not a number of seconds >= 0 (0: no bound)")
    return seconds


def scatter_workflow(client: Any, workflow: Any) -> Any:
    """``client.scatter(workflow, broadcast=True, hash=False)``'s future, after
    :func:`check_worker_code`, bounded in time.

    dask's broadcast copies the data to the workers it started with and retries a copy to one
    that left (killed, or restarted by its nanny) forever: the job hung. The scheduler's workers
    are polled every 0.5 s during the scatter; once one it started with has been gone for
    :data:`WORKER_LOST_GRACE_S` s, or after ``TABPREP_SCATTER_TIMEOUT`` s (600 by default), the
    scatter is abandoned (its data released, which ends dask's retries) and
    :class:`ScatterFailed` says what happened and what to do.
    """
    before = sorted(client.nthreads())
    check_worker_code(client, before)
    key = f"{type(workflow).__name__}-{uuid.uuid4().hex}"
    limit = scatter_timeout()

    async def watched() -> Any:
        # (asynchronous=True: the public API's coroutine, run on the client's event loop like this one)
        scatter = asyncio.ensure_future(
            client.scatter({key: workflow}, broadcast=True, hash=False, asynchronous=True))
        start = time.monotonic()
        lost_since: Optional[float] = None
        gone: List[str] = []
        while True:
            done, _ = await asyncio.wait([scatter], timeout=_POLL_S)
            if done:
                return scatter.result()[key]
            now = time.monotonic()
            if limit and now - start > limit:
                scatter.cancel()
                return ScatterFailed(
                    f"sending the workflow to the {len(before)} workers of the dask cluster did not finish within "
                    f"{limit:g} s; is a worker stuck (or the network slow)? Check the workers, and run the job "
                    f"again; {SCATTER_TIMEOUT_ENV}=SECONDS allows longer (0: no bound)")
            try:
                current = set(await asyncio.wait_for(client.nthreads(asynchronous=True), _ASK_S))
            except Exception:  # noqa: BLE001 - the scheduler's answer is late: look again next time
                continue
            gone = [w for w in before if w not in current]
            if gone and lost_since is None:
                lost_since = now
            if lost_since is not None and now - lost_since >= WORKER_LOST_GRACE_S:
                scatter.cancel()
                return ScatterFailed(
                    f"dask worker{'s' if len(gone) > 1 else ''} {', '.join(gone)} left the cluster while the "
                    f"workflow was being sent to every worker, which dask then retries forever; run the job again "
                    f"(the workers the cluster has then get it)")

    result = client.sync(watched)
    if isinstance(result, ScatterFailed):
        _release(client, key)
        raise result
    return result


def _release(client: Any, key: str) -> None:
    """Tell the scheduler this client does not want ``key``: the abandoned scatter's data is
    forgotten, which also ends the scheduler's copy loop (``Scheduler.replicate`` drops
    forgotten keys)."""
    from distributed import Future

    try:
        Future(key, client).release()
    except Exception:  # noqa: BLE001 - a client closing meanwhile: its data goes with it
        log.debug("could not release the abandoned scatter %s", key, exc_info=True)
