"""Checks of an op's statistics as a saved workflow holds them in its JSON (``workflow.json``).

The JSON is readable and editable by design; an edit or a damaged file must be refused when the
workflow is loaded, naming the op, the column and the field, not met at transform as a bare
``KeyError: 'mean'`` or a computation on a string (found by a review, 2026-11-29). An op declares
its fields in ``StatOperator.state_fields`` or checks its own layout in ``check_state`` with the
helpers here; each raises ``TypeError``, which ``Workflow.load`` reports as a ``ValueError`` naming
workflow.json and the fix.
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Dict, Iterable, List, Optional, Sequence


def check_state_fields(label: str, stats: Any, fields: Sequence[str]) -> None:
    """``TypeError`` unless ``stats`` is None (not fitted) or ``{column: {field: number or None}}``
    holding every one of ``fields`` for every column (a bool or a string is not a number); no
    ``fields``: nothing checked."""
    if not fields:
        return
    for column, entry in column_entries(label, stats, fields).items():
        for field in fields:
            value = entry[field]
            if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
                raise TypeError(f"{label}: the saved {field!r} of column {column!r} must be a number, got {_short(value)}")


def column_entries(label: str, stats: Any, fields: Sequence[str], optional: bool = False) -> Dict[str, Any]:
    """``stats`` as ``{column: entry}`` once every entry is a mapping holding ``fields`` (with
    ``optional``, an entry may also be None: a column the fit found nothing in); ``TypeError``
    naming the op, the column and the missing field otherwise. ``{}`` for None (not fitted)."""
    if stats is None:
        return {}
    if not isinstance(stats, dict):
        raise TypeError(f"{label}: the saved statistics must map columns to their values, got {_short(stats)}")
    for column, entry in stats.items():
        if entry is None and optional:
            continue
        if not isinstance(entry, dict):
            raise TypeError(f"{label}: the saved statistics of column {column!r} must be a mapping of "
                            f"{list(fields)}, got {_short(entry)}")
        for field in fields:
            if field not in entry:
                raise TypeError(f"{label}: the saved statistics of column {column!r} lack {field!r}")
    return stats


def check_number(label: str, column: Optional[str], field: Optional[str], value: Any, *, none: bool = True,
                 integer: bool = False, low: Optional[float] = None, high: Optional[float] = None) -> None:
    """``TypeError`` naming the op, the column (None: a field of the op's own) and ``field`` (None:
    the column's value itself) unless ``value`` is a finite number (``integer``: a Python int) in
    ``[low, high]``, or None where ``none`` allows it. A bool, a string, a list and NaN / +-inf are
    refused: a fit never writes them, and each was read at transform as something else (``"3" != 5``
    is True)."""
    if column is None:
        what = f"the saved {field!r}"
    else:
        what = f"the saved {field!r} of column {column!r}" if field else f"the saved value of column {column!r}"
    if value is None:
        if none:
            return
        raise TypeError(f"{label}: {what} must be {'an integer' if integer else 'a number'}, got None")
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or (integer and not isinstance(value, int)):
        raise TypeError(f"{label}: {what} must be {'an integer' if integer else 'a number'}, got {_short(value)}")
    if not math.isfinite(value):
        raise TypeError(f"{label}: {what} must be a finite number, got {_short(value)}")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"in [{low}, {high}]" if low is not None and high is not None else \
            (f">= {low}" if low is not None else f"<= {high}")
        raise TypeError(f"{label}: {what} must be {bounds}, got {_short(value)}")


def check_order(label: str, column: str, entry: Dict[str, Any], low: str = "min", high: str = "max") -> None:
    """``TypeError`` unless ``entry[low] <= entry[high]`` where both are numbers."""
    lo, hi = entry.get(low), entry.get(high)
    if lo is not None and hi is not None and lo > hi:
        raise TypeError(f"{label}: the saved {low!r} of column {column!r} ({lo!r}) is above its {high!r} ({hi!r})")


def combo_key_format(label: str, meta: Dict[str, Any]) -> int:
    """The saved ``combo_key_format`` of a Categorify / TargetEncoding / JoinGroupby (1 when absent:
    saved before format 2, whose ids it keeps), checked: an integer in 1..the current format (another
    number was read as some format, so a column group got other ids, silently)."""
    from ._combo import COMBO_KEY_FORMAT

    value = meta.get("combo_key_format", 1)
    check_number(label, None, "combo_key_format", value, none=False, integer=True, low=1, high=COMBO_KEY_FORMAT)
    return value


def check_vocabularies(label: str, meta: Dict[str, Any]) -> int:
    """Categorify's saved ``{"vocabularies": {column: {"files", "nulls", "size"}}}`` checked (file
    names, counts >= 0: ``tabprep inspect`` reads them); returns its :func:`combo_key_format`."""
    vocabs = meta.get("vocabularies")
    if not isinstance(vocabs, dict):
        raise TypeError(f"{label}: the saved 'vocabularies' must map columns to their files, got {_short(vocabs)}")
    for column, m in vocabs.items():
        if not isinstance(m, dict):
            raise TypeError(f"{label}: the saved vocabulary of column {column!r} must be a mapping of 'files', 'nulls' "
                            f"and 'size', got {_short(m)}")
        files = m["files"] if "files" in m else [m.get("file")]   # 'file': saved before vocabularies had parts
        if not isinstance(files, list) or not files or not all(isinstance(f, str) for f in files):
            raise TypeError(f"{label}: the saved 'files' of column {column!r} must be a list of file names, "
                            f"got {_short(files)}")
        check_number(label, column, "nulls", m.get("nulls"), none=False, integer=True, low=0)
        check_number(label, column, "size", m.get("size", 0), none=False, integer=True, low=0)
    return combo_key_format(label, meta)


def check_size(label: str, column: str, size: Any, rows: int) -> int:
    """A saved table ``size`` checked against the rows its (checksummed) file holds."""
    check_number(label, column, "size", size, none=False, integer=True, low=0)
    if size != rows:
        raise TypeError(f"{label}: the saved 'size' of column {column!r} is {size}, where its table file holds {rows} "
                        f"categories")
    return size


def check_numbers(label: str, what: str, values: Any, length: int, integer: bool = False) -> None:
    """``TypeError`` unless ``values`` is a list of ``length`` finite numbers (``integer``: ints >= 0)."""
    kind = "integers >= 0" if integer else "finite numbers"
    ok = isinstance(values, list) and len(values) == length and all(
        not isinstance(v, bool) and (isinstance(v, int) and v >= 0 if integer else
                                     isinstance(v, numbers.Real) and math.isfinite(v)) for v in values)
    if not ok:
        raise TypeError(f"{label}: {what} must be a list of {length} {kind}, got {_short(values)}")


def missing_columns(stats: Any, columns: Iterable[str]) -> List[str]:
    """The ``columns`` a fitted op's ``{column: ...}`` statistics have no entry for."""
    if not isinstance(stats, dict):
        return []
    return [c for c in columns if c not in stats]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
