"""Checks of an op's statistics as a saved workflow holds them in its JSON (``workflow.json``).

The JSON is readable and editable by design; an edit or a damaged file must be refused when the
workflow is loaded, naming the op, the column and the field, not met at transform as a bare
``KeyError: 'mean'`` or a computation on a string (found by a review, 2026-11-29).
"""
from __future__ import annotations

import numbers
from typing import Any, Iterable, List, Sequence


def check_state_fields(label: str, stats: Any, fields: Sequence[str]) -> None:
    """``TypeError`` unless ``stats`` is None (not fitted) or ``{column: {field: number or None}}``
    holding every one of ``fields`` for every column (a bool or a string is not a number)."""
    if stats is None:
        return
    if not isinstance(stats, dict):
        raise TypeError(f"{label}: the saved statistics must map columns to their values, got {_short(stats)}")
    for column, entry in stats.items():
        if not isinstance(entry, dict):
            raise TypeError(f"{label}: the saved statistics of column {column!r} must be a mapping of "
                            f"{list(fields)}, got {_short(entry)}")
        for field in fields:
            if field not in entry:
                raise TypeError(f"{label}: the saved statistics of column {column!r} lack {field!r}")
            value = entry[field]
            if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
                raise TypeError(f"{label}: the saved {field!r} of column {column!r} must be a number, got {_short(value)}")


def missing_columns(stats: Any, columns: Iterable[str]) -> List[str]:
    """The ``columns`` a fitted op's ``{column: ...}`` statistics have no entry for."""
    if not isinstance(stats, dict):
        return []
    return [c for c in columns if c not in stats]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
