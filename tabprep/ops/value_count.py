"""ValueCount: learn the min / max list lengths of list columns into the schema."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from .. import backend
from ..schema import ColumnSchema, Schema
from ._saved_state import check_number, check_order, column_entries
from .base import StatOperator


class ValueCount(StatOperator):
    """Record the shortest and longest list of each list column as ``value_count`` in the schema.

    Values pass through unchanged; only the output schema changes: list columns get
    ``value_count = {"min": .., "max": ..}`` over the fitted data and ``is_ragged = (min != max)``
    (as NVTabular does: loaders then know which columns are fixed-length). Data transformed
    later may hold other lengths; the recorded bounds describe the fitted dataset.

    Nulls: null rows are not counted (an empty list counts as length 0). A column with no
    non-null row keeps ``value_count=None``. Scalar columns pass through with their schema
    unchanged.

    Example:
        >>> hist = ["item_history"] >> Categorify() >> ValueCount()
        >>> # workflow.output_schema["item_history"].value_count -> {"min": 1, "max": 57}
    """

    supports_lists = True
    #: nested lists (list<list<...>>): min / max per level, as ``value_counts`` in the schema
    supports_nested = "native"

    def __init__(self) -> None:
        self.stats_: Optional[Dict[str, Any]] = None
        #: the list depth of each nested column whose bounds the schema holds (compute_output_schema)
        self._depths: Dict[str, int] = {}

    def fit_partial(self, columns: List[str], df: Any) -> Dict[str, Optional[List[int]]]:
        out: Dict[str, Optional[List[int]]] = {}
        for c in columns:
            s = df[c]
            if not backend.is_list_series(s):
                out[c] = None
                continue
            out[c] = _length_bounds(s)
            if backend.is_list_series(backend.list_leaves(s)[0]):   # nested: [min, max] per level
                out[c] = [out[c]] + nested_length_bounds(s)
        return out

    def fit_combine(self, partials: List[Dict[str, Optional[List[int]]]]) -> Dict[str, Optional[List[int]]]:
        out: Dict[str, Any] = {}
        for c in partials[0]:
            nested = [p[c] for p in partials if p[c] is not None and isinstance(p[c][0], (list, type(None)))]
            if nested:   # per level; a level with no non-null list in a partition is None there
                out[c] = [_merge([p[k] for p in nested]) for k in range(len(nested[0]))]
                continue
            out[c] = _merge([p[c] for p in partials])
        return out

    def fit_finalize(self, columns: List[str], combined: Dict[str, Any]) -> None:
        self.stats_ = {}
        for c, v in combined.items():
            if v is not None and isinstance(v[0], (list, type(None))):
                levels = [None if b is None else {"min": b[0], "max": b[1]} for b in v]
                self.stats_[c] = dict(levels[0] or {}, levels=levels) if levels[0] else None
            else:
                self.stats_[c] = None if v is None else {"min": v[0], "max": v[1]}

    def check_state(self) -> None:
        """A loaded ``{column: None or {"min", "max"[, "levels"]}}`` is one a fit writes: min / max
        integers >= 0 with min <= max; ``levels`` (nested lists) a list of such bounds or None per
        level, the first the column's own (``TypeError``, see the base class). A string bound made
        ``is_ragged`` True (``"3" != 3``), a fraction was rounded down: both silently."""
        for c, vc in column_entries(self.label, self.stats_, ("min", "max"), optional=True).items():
            if vc is None:
                continue
            _check_bounds(self.label, c, vc)
            levels = vc.get("levels")
            if levels is None:
                continue
            if not isinstance(levels, list) or not levels or not all(isinstance(b, dict) or b is None for b in levels):
                raise TypeError(f"{self.label}: the saved 'levels' of column {c!r} must be a list of "
                                f"{{'min', 'max'}} bounds (None for a level without lists), got {levels!r}"[:300])
            for i, bounds in enumerate(levels):
                try:
                    if bounds is not None:
                        _check_bounds(self.label, c, bounds)
                except TypeError as exc:
                    raise TypeError(f"{exc} (in its 'levels', level {i}: the lists nested {i} deep)") from None
            if levels[0] != {"min": vc["min"], "max": vc["max"]}:
                raise TypeError(f"{self.label}: the saved 'levels' of column {c!r} must begin with its own bounds "
                                f"{{'min': {vc['min']!r}, 'max': {vc['max']!r}}}, got {levels[0]!r}")

    def state_columns(self, columns: List[str]) -> List[str]:
        return list(columns)

    def check_bound_state(self) -> None:
        """``TypeError`` unless each nested column's saved ``levels`` has one entry per list level of
        the column (known once the workflow is bound; ``Workflow.load`` calls it): another count
        gave the schema (and the loaders) a wrong shape, silently."""
        for c, depth in getattr(self, "_depths", {}).items():
            levels = ((self.stats_ or {}).get(c) or {}).get("levels")
            if levels and len(levels) != depth:
                raise TypeError(f"{self.label}: the saved 'levels' of column {c!r} hold {len(levels)} levels of list "
                                f"lengths, where the column nests {depth} deep")

    def transform(self, columns: List[str], df: Any) -> Any:
        return df[list(columns)]

    def compute_output_schema(self, input_schema: Schema, columns: List[str]) -> Schema:
        out = []
        for c in columns:
            col: ColumnSchema = input_schema[c]
            vc = (self.stats_ or {}).get(c)
            if col.is_list and vc is not None:
                col = col.with_(value_count={"min": int(vc["min"]), "max": int(vc["max"])},
                                is_ragged=vc["min"] != vc["max"])
                if vc.get("levels"):   # nested: every level's bounds; ragged when any level varies
                    # (the column's list depth, for check_bound_state)
                    self.__dict__.setdefault("_depths", {})[c] = 1 + col.dtype.count("list<")
                    col = col.with_(value_counts=vc["levels"], is_ragged=col.with_(
                        value_counts=vc["levels"]).fixed_shape is None)
            out.append(col)
        return Schema(out)


def _check_bounds(label: str, column: str, bounds: Dict[str, Any]) -> None:
    """``TypeError`` unless ``bounds`` is ``{"min": int >= 0, "max": int >= min}``."""
    if not isinstance(bounds, dict) or "min" not in bounds or "max" not in bounds:
        raise TypeError(f"{label}: the saved 'min' and 'max' of column {column!r} must both be given, "
                        f"got {bounds!r}"[:300])
    for field in ("min", "max"):
        check_number(label, column, field, bounds[field], none=False, integer=True, low=0)
    check_order(label, column, bounds)


def _length_bounds(s: Any) -> Optional[List[int]]:
    """[min, max] length of the non-null lists of list series ``s`` (None: no non-null list)."""
    _, offsets = backend.list_leaves(s)
    xp = backend.array_module(offsets)
    lengths = (offsets[1:] - offsets[:-1])[~xp.asarray(backend.isnull(s))]
    return [int(lengths.min()), int(lengths.max())] if lengths.size else None


def nested_length_bounds(s: Any) -> List[Optional[List[int]]]:
    """[min, max] per inner level of a nested list series (null inner lists are not counted)."""
    out = []
    inner = backend.list_leaves(s)[0]
    while backend.is_list_series(inner):
        out.append(_length_bounds(inner))
        inner = backend.list_leaves(inner)[0]
    return out


def _merge(parts: List[Optional[List[int]]]) -> Optional[List[int]]:
    parts = [p for p in parts if p is not None]
    return [min(p[0] for p in parts), max(p[1] for p in parts)] if parts else None
