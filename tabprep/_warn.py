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
* :func:`captured` / :func:`reemit`: a warning raised inside a dask task on a worker process
  never reaches the user's console; tasks record theirs (:func:`captured`) and return them with
  their result, and the client gives each distinct message once (:func:`reemit`).
"""
from __future__ import annotations

import contextlib
import contextvars
import logging
import warnings
from typing import Iterable, Iterator, List, Tuple

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


def warn_difference(message: str, stacklevel: int = 2, at_build: bool = False) -> None:
    """``warnings.warn(message, NVTabularDifferenceWarning)`` at the caller's ``stacklevel``;
    with ``at_build`` not while a saved workflow is loaded (logged at DEBUG instead)."""
    if at_build and _REBUILDING.get():
        log.debug("not repeated while loading a saved workflow: %s", message)
        return
    warnings.warn(message, NVTabularDifferenceWarning, stacklevel=stacklevel + 1)


#: a captured warning: (category name, message); the category is one of tabprep's UserWarnings
Captured = Tuple[str, str]


@contextlib.contextmanager
def captured() -> Iterator[List[Captured]]:
    """Record the UserWarnings raised in the block (in a dask task), as ``(category, message)``.

    Other warnings pass through to the usual filters. The list is filled when the block ends.
    Not thread-safe (``warnings.catch_warnings``): run only in tasks, whose warnings would be
    lost on a worker anyway; on the client's own threads the normal machinery applies.
    """
    found: List[Captured] = []
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always", UserWarning)
        try:
            yield found
        finally:
            pass
    for w in record:
        if issubclass(w.category, UserWarning):
            found.append((w.category.__name__, str(w.message)))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def reemit(found: Iterable[Captured], stacklevel: int = 2) -> None:
    """Give each distinct captured message once, on the client, in the order first seen."""
    seen = set()
    for category, message in found:
        if message in seen:
            continue
        seen.add(message)
        cls = NVTabularDifferenceWarning if category == NVTabularDifferenceWarning.__name__ else UserWarning
        warnings.warn(message, cls, stacklevel=stacklevel + 1)
