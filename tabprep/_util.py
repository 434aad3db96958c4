"""Small helpers shared across the layers of tabprep.

This module is at the bottom of the package: it imports nothing else of tabprep (and neither
pandas nor cuDF), so any module may use it without creating an import cycle.
"""
from __future__ import annotations

import numbers
import os
from typing import Any, Dict, Iterable, List, Optional


def is_frame(obj: Any) -> bool:
    """True for an in-memory pandas or cuDF ``DataFrame`` (not a dask frame, not a Series).

    Checked by the class's module name, so neither pandas nor cuDF is imported to answer.
    """
    mod = type(obj).__module__
    return type(obj).__name__ == "DataFrame" and (mod.startswith("pandas") or mod.startswith("cudf"))


def close_matches(word: str, choices: Iterable[str], cutoff: float = 0.5) -> List[str]:
    """Up to three of ``choices`` that look like ``word`` (difflib ratio >= ``cutoff``), best first."""
    import difflib   # here: the CLI imports this module for --help (startup, #32)

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


def is_number(value: Any) -> bool:
    """True for a real number (a Python or numpy int or float, NaN and inf included), not a bool, a
    string or None: what an argument counted or compared as a number must be."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)   # (numpy's bool is no numbers.Real)


def whole_number(value: Any, minimum: int) -> Optional[int]:
    """``value`` as an int when it is a whole number >= ``minimum`` (a Python or numpy int, or a
    float such as 64.0), else None: a bool, a string, a fraction, NaN, inf or a smaller number is
    none (``int()`` of them truncated 2.5 to 2, or raised its own unclear errors)."""
    if not is_number(value):
        return None
    try:
        out = int(value)
    except (ValueError, OverflowError):   # NaN, inf
        return None
    return out if value == out and out >= minimum else None


def whole(name: str, value: Any, minimum: int) -> int:
    """``value`` as an int when it is a whole number >= ``minimum`` (:func:`whole_number`), else a
    ``ValueError``: ``"{name} must be an int >= {minimum}, got {value!r}"``."""
    out = whole_number(value, minimum)
    if out is None:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return out


def flag(name: str, value: Any) -> bool:
    """``value`` when it is a bool (Python's or numpy's), else a ``TypeError`` naming ``name``: a
    truthy string such as ``"no"`` would otherwise count as True."""
    if isinstance(value, bool) or (type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_")):
        return bool(value)
    raise TypeError(f"{name} must be True or False, got {value!r} ({type(value).__name__})")


def check_limits(owner: str, limits: Dict[str, Any]) -> None:
    """Refuse negative limits (``{"freq_threshold": 5, "max_size": {"c": -1}}``): ``ValueError``
    naming ``owner``, the parameter, the key and the value (issue #30: they were ignored)."""
    for param, value in limits.items():
        items = value.items() if isinstance(value, dict) else [(None, value)]
        for key, v in items:
            if v is None:
                continue
            if whole_number(v, 0) is None:
                where = f"{param}[{key!r}]" if key is not None else param
                raise ValueError(f"{owner}: {where} must be a whole number >= 0 (0: no limit), got {v!r}")


def check_keyed_params(owner: str, params: Dict[str, Any], known: Iterable[str]) -> None:
    """Refuse a dict parameter (``{"freq_threshold": {"C": 5}}``) naming a key that is none of
    ``known`` (the op's columns or vocabularies): ``ValueError`` naming ``owner``, the parameter,
    the key and the close matches, case-insensitive ones included (issue #30: such a limit was
    silently not applied)."""
    known = [str(k) for k in known]
    for param, value in params.items():
        if not isinstance(value, dict):
            continue
        for key in value:
            if key in known:
                continue
            close = [k for k in known if k.lower() == str(key).lower()] or close_matches(str(key), known, 0.5)
            hint = hint_for(close)
            raise ValueError(f"{owner}: {param} names {key!r}, which is none of its columns {known[:20]}"
                             f"{' ...' if len(known) > 20 else ''}; {hint + ' ' if hint else ''}"
                             f"key {param} by the columns the op encodes")


def refuse_duplicate_columns(columns: Iterable[Any], source: str,
                             fix: str = "df.loc[:, ~df.columns.duplicated()] keeps the first of each") -> None:
    """``ValueError`` naming the duplicated names among a frame's ``columns`` (pandas then hands out
    a frame for ``df[name]``, and every op failed with an AttributeError; issue #30)."""
    names = list(columns)
    if len(set(names)) != len(names):
        dups = sorted({str(c) for c in names if names.count(c) > 1})
        raise ValueError(f"{source} has duplicate column name(s) {dups}; give each column its own name ({fix})")


def switched_off(variable: str) -> bool:
    """True when the environment sets ``variable`` to 0 / false / no / off (any case): how an
    on-by-default behaviour (``TABPREP_GPU_WARMUP``, ``TABPREP_RMM_ASYNC``) is turned off."""
    return os.environ.get(variable, "1").strip().lower() in ("0", "false", "no", "off")
