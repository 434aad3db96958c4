"""Small helpers shared across the layers of tabprep.

This module is at the bottom of the package: it imports nothing else of tabprep (and neither
pandas nor cuDF), so any module may use it without creating an import cycle.
"""
from __future__ import annotations

import difflib
from typing import Any, Iterable, List


def is_frame(obj: Any) -> bool:
    """True for an in-memory pandas or cuDF ``DataFrame`` (not a dask frame, not a Series).

    Checked by the class's module name, so neither pandas nor cuDF is imported to answer.
    """
    mod = type(obj).__module__
    return type(obj).__name__ == "DataFrame" and (mod.startswith("pandas") or mod.startswith("cudf"))


def close_matches(word: str, choices: Iterable[str], cutoff: float = 0.5) -> List[str]:
    """Up to three of ``choices`` that look like ``word`` (difflib ratio >= ``cutoff``), best first."""
    return difflib.get_close_matches(word, list(choices), n=3, cutoff=cutoff)


def did_you_mean(word: str, choices: Iterable[str], cutoff: float = 0.5, sep: str = " or ",
                 capitalize: bool = False) -> str:
    """The hint ``"did you mean 'a' or 'b'?"`` for a misspelt name, or ``""`` when nothing is close.

    Args:
        word: the name the user gave (a column, op, parameter or key).
        choices: the valid names.
        cutoff: similarity threshold of :func:`difflib.get_close_matches` (0..1).
        sep: what joins several suggestions (``" or "``, or ``", "``).
        capitalize: start with ``"Did"`` (the hint is a sentence of its own).
    """
    return hint_for(close_matches(word, choices, cutoff), sep=sep, capitalize=capitalize)


def hint_for(suggestions: List[str], sep: str = " or ", capitalize: bool = False) -> str:
    """``"did you mean 'a' or 'b'?"`` for given suggestions (``""`` for none)."""
    if not suggestions:
        return ""
    return ("Did" if capitalize else "did") + " you mean " + sep.join(repr(c) for c in suggestions) + "?"
