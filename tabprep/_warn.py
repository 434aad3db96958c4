"""The warning class of NVTabular differences, and where such warnings are (not) given.

This module is at the bottom of the package, as :mod:`tabprep._util`: it imports nothing else
of tabprep (nor pandas), so ops and the workflow layer both use it.

* :class:`NVTabularDifferenceWarning`: every warning tabprep gives where a migrating NVTabular
  23.08 user meets a deliberate difference, or an NVTabular behaviour that would otherwise pass
  unnoticed (docs/migration.md). Filter it as a whole once you have read that page:
  ``warnings.filterwarnings("ignore", category=tp.NVTabularDifferenceWarning)``.
* :func:`warn_difference`: gives one. ``at_build=True`` marks a warning about how a graph was
  built (an op's arguments, a ``+`` merge): ``Workflow.load`` rebuilds the saved graph under
  :func:`rebuilding`, and those warnings stay quiet there, since the graph's author saw them
  when building it and a serving process or loader loads the folder again and again.
* :func:`task_warnings` / :func:`reemit_from_cluster`: a warning raised inside a dask task on a
  dask.distributed worker process never reaches the user's console; such tasks send theirs to
  the scheduler as events (``worker.log_event``), and after the job (a fit pass, a write, a
  ``Dataset.compute``) the client gives each distinct message once, as a warning of its class.
"""
from __future__ import annotations

import contextlib
import contextvars
import logging
import sys
import threading
import uuid
import warnings
from typing import Any, Iterator, List, MutableSet, Optional, Set, Tuple

log = logging.getLogger("tabprep")


class NVTabularDifferenceWarning(UserWarning):
    """tabprep behaves differently from NVTabular 23.08 here, or NVTabular's own behaviour would
    surprise (the message names the column / option and the fix; docs/migration.md says why)."""


_REBUILDING: "contextvars.ContextVar[bool]" = contextvars.ContextVar("tabprep_rebuilding", default=False)


@contextlib.contextmanager
def rebuilding() -> Iterator[None]:
    """While ``Workflow.load`` rebuilds a saved graph: build-time warnings are not repeated."""
    token = _REBUILDING.set(True)
    try:
        yield
    finally:
        _REBUILDING.reset(token)


def is_rebuilding() -> bool:
    """True while ``Workflow.load`` rebuilds a saved graph (see :func:`rebuilding`)."""
    return _REBUILDING.get()


_FIRST_LOCK = threading.Lock()


def first_time(seen: MutableSet[Any], key: Any) -> bool:
    """True for the first caller with ``key``, which is added to ``seen``: the check and the record
    of a once-only warning as one step. Partitions and loader chunks run in threads side by side,
    and a check between them that waits on a device (a GPU null check) releases the GIL: a plain
    ``if key not in seen: seen.add(key)`` let every thread warn (found on an H100)."""
    with _FIRST_LOCK:
        if key in seen:
            return False
        seen.add(key)
        return True


#: keys of the once-per-process warnings given so far (:func:`warn_once`)
_ONCE: Set[Any] = set()


def warned_once(key: Any) -> bool:
    """Whether :func:`warn_once` already gave ``key``'s warning in this process (a cheap check
    before computing whether the warning applies)."""
    return key in _ONCE


def warn_once(key: Any, message: str, stacklevel: int = 2, at_build: bool = False) -> None:
    """:func:`warn_difference` the first time this process meets ``key``. With ``at_build``, not
    while a saved workflow is loaded, and the key is not used up there."""
    if (at_build and _REBUILDING.get()) or not first_time(_ONCE, key):
        return
    warn_difference(message, stacklevel=stacklevel + 1, at_build=at_build)


def warn_difference(message: str, stacklevel: int = 2, at_build: bool = False) -> None:
    """``warnings.warn(message, NVTabularDifferenceWarning)`` at the caller's ``stacklevel``;
    with ``at_build`` not while a saved workflow is loaded (logged at DEBUG instead)."""
    if at_build and _REBUILDING.get():
        log.debug("not repeated while loading a saved workflow: %s", message)
        return
    sink = _SINK.get()
    if sink is not None:  # in a task on a distributed worker: sent to the client (task_warnings)
        sink.append((NVTabularDifferenceWarning.__name__, message))
        return
    warnings.warn(message, NVTabularDifferenceWarning, stacklevel=stacklevel + 1)


def warn_user(message: str, stacklevel: int = 2) -> None:
    """``warnings.warn(message, UserWarning)`` at the caller's ``stacklevel``; in a task on a
    distributed worker sent to the client as :func:`warn_difference` sends its warnings
    (:func:`task_warnings`), and given there as a ``UserWarning``."""
    sink = _SINK.get()
    if sink is not None:
        sink.append((UserWarning.__name__, message))
        return
    warnings.warn(message, UserWarning, stacklevel=stacklevel + 1)


#: the scheduler event topic of warnings raised in tasks on dask.distributed workers
TOPIC = "tabprep-warnings"
#: while a task runs on a distributed worker: where warn_difference puts its warnings
_SINK: "contextvars.ContextVar[Optional[List[Tuple[str, str]]]]" = contextvars.ContextVar("tabprep_warning_sink",
                                                                                          default=None)
#: the job tokens this process gave to the workflows it scattered (see new_job); events of other
#: clients' jobs on a shared scheduler are not ours to show
_OUR_JOBS: Set[str] = set()
#: events already re-emitted (a lazy transform computed later reports under its job's token)
_SEEN_EVENTS: Set[Tuple[Any, ...]] = set()


def new_job() -> str:
    """A token for the workflow copy scattered to the workers (``wf._warn_job``): its tasks' warnings
    are logged under it, and :func:`reemit_from_cluster` shows this process's ones."""
    job = uuid.uuid4().hex
    _OUR_JOBS.add(job)
    return job


def _current_worker() -> Any:
    """The dask.distributed worker running this thread's task, or None (client, local schedulers)."""
    if "distributed" not in sys.modules:  # never imported: not on a worker
        return None
    try:
        from distributed import get_worker

        return get_worker()
    except (ImportError, ValueError):
        return None


def _client() -> Any:
    if "distributed" not in sys.modules:
        return None
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):
        return None


@contextlib.contextmanager
def task_warnings(job: Optional[str]) -> Iterator[None]:
    """Around a fit / transform task. On a dask.distributed worker, the task's
    :func:`warn_difference` warnings (a worker's ``warnings.warn`` goes to its own stderr, which
    the user does not read) are collected and logged to the scheduler as one event of
    :data:`TOPIC`, ``{"job": job, "warnings": [[category, message], ...]}``, before the task's
    result is reported (a worker sends both on one ordered stream); the client shows them with
    :func:`reemit_from_cluster` after the job. Elsewhere (local schedulers, the client) nothing
    changes: the warning is given where it is raised."""
    worker = _current_worker() if job is not None else None
    if worker is None:
        yield
        return
    sink: List[Tuple[str, str]] = []
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)
        if sink:
            try:
                worker.log_event(TOPIC, {"job": job, "warnings": [list(w) for w in dict.fromkeys(sink)]})
            except Exception as exc:  # noqa: BLE001 - a warning must never fail the task
                log.warning("could not send %d warning(s) to the client (%s): %s", len(sink), exc,
                            "; ".join(m for _, m in sink))


def reemit_from_cluster(stacklevel: int = 2) -> None:
    """After a job on a dask.distributed client: give each distinct warning its tasks logged (under
    one of this process's job tokens, and not given before) once, here, as a warning of its class."""
    if not _OUR_JOBS:
        return
    client = _client()
    if client is None:
        return
    try:
        events = client.get_events(TOPIC)
    except Exception as exc:  # noqa: BLE001 - an old scheduler, a closing client: warnings only
        log.debug("could not read the workers' warnings from the scheduler: %s", exc)
        return
    found: List[Tuple[str, str]] = []
    for stamp, msg in events:
        if not isinstance(msg, dict) or msg.get("job") not in _OUR_JOBS:
            continue
        key = (stamp, msg["job"], tuple(tuple(w) for w in msg.get("warnings") or ()))
        if key in _SEEN_EVENTS:
            continue
        _SEEN_EVENTS.add(key)
        found += [(str(c), str(m)) for c, m in msg.get("warnings") or ()]
    seen = set()
    for category, message in found:
        if message in seen:
            continue
        seen.add(message)
        cls = NVTabularDifferenceWarning if category == NVTabularDifferenceWarning.__name__ else UserWarning
        warnings.warn(message, cls, stacklevel=stacklevel + 1)
