"""Lookup structures of fitted statistics, built once per process and device, and ahead of need.

A fitted op that looks values up in a vocabulary (Categorify, TargetEncoding, JoinGroupby) builds
one lookup structure per vocabulary and device (:func:`tabprep.stats.vocab.vocab_index`: a hash
table on the CPU, a sorted copy on the GPU) the first time a partition needs it, and keeps it in
its per-process cache (dropped when the op is pickled, so every worker builds its own).

:func:`build_once` makes that build happen once when several threads ask at the same time (a
dask worker's threads all start with an empty cache); an op's ``warm_lookups(like)`` builds all of
its structures for ``like``'s device, and :func:`start_builds` does that for a whole workflow in a
background thread, so that a worker's first partition is read while its vocabularies are built,
where its first task used to wait for both in turn (issue #34: on 4 GPU workers each worker's
first tasks built the 26 Criteo vocabularies' lookups, 0.32 s cold, with the second thread
waiting on the same locks).
"""
from __future__ import annotations

import logging
import threading
import weakref
from typing import Any, Callable, Dict, Hashable, Iterable

log = logging.getLogger(__name__)

#: guards the creation of the per-entry build locks
_LOCKS = threading.Lock()


def build_once(cache: Dict[Any, Any], key: Hashable, build: Callable[[], Any]) -> Any:
    """``cache[key]``, computed by ``build()`` and stored the first time. A lock per key (kept
    in ``cache`` itself, under ``("build", key)``): threads asking for the same key wait for one
    build, other keys build at the same time. ``build``'s exception reaches the caller, and
    nothing is stored (the next caller tries again)."""
    out = cache.get(key)
    if out is not None:
        return out
    with _LOCKS:   # held for the dict lookup only
        lock = cache.setdefault(("build", key), threading.Lock())
    with lock:
        out = cache.get(key)
        if out is None:
            out = cache[key] = build()
    return out


#: the workflows whose lookups a background thread is building or has built, by device; weak, so
#: a workflow's copy (a worker's unpickled one) starts with none, and a dropped workflow is forgotten
_STARTED: "weakref.WeakKeyDictionary[Any, set]" = weakref.WeakKeyDictionary()

#: background builds started by this process, by device (what a dask worker did, for logs and tests)
started: Dict[str, int] = {}


def start_builds(owner: Any, ops: Iterable[Any], like: Any, device: str) -> bool:
    """Start one daemon thread that calls ``op.warm_lookups(like)`` for each of ``ops`` that has
    it, in order, once per ``owner`` (a workflow) and ``device`` in this process; True if started.

    The thread makes ``like``'s device its current device (a new thread starts on device 0). A
    failed build is logged and left: the partition that needs the structure builds it and raises
    there, with its own context. Results never depend on whether this ran: the ops build the
    same structures on first use without it."""
    warm = [op for op in ops if callable(getattr(op, "warm_lookups", None))]
    if not warm:
        return False
    with _LOCKS:
        devices = _STARTED.setdefault(owner, set())
        if device in devices:
            return False
        devices.add(device)
        started[device] = started.get(device, 0) + 1
    thread = threading.Thread(target=_build_all, args=(warm, like, device), daemon=True,
                              name=f"tabprep-lookups-{device}")
    thread.start()
    return True


def _build_all(ops: Iterable[Any], like: Any, device: str) -> None:
    try:
        if device.startswith("gpu:"):
            import cupy

            cupy.cuda.Device(int(device[4:])).use()
        for op in ops:
            op.warm_lookups(like)
    except Exception:  # noqa: BLE001 - a background nicety: the transform builds (and raises) itself
        log.debug("building lookup structures ahead of the transform failed; the transform builds them",
                  exc_info=True)
