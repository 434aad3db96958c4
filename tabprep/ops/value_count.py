"""ValueCount: learn the min / max list lengths of list columns into the schema."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from .. import backend
from ..schema import ColumnSchema, Schema
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

    def __init__(self) -> None:
        self.stats_: Optional[Dict[str, Any]] = None

    def fit_partial(self, columns: List[str], df: Any) -> Dict[str, Optional[List[int]]]:
        out: Dict[str, Optional[List[int]]] = {}
        for c in columns:
            s = df[c]
            if not backend.is_list_series(s):
                out[c] = None
                continue
            _, offsets = backend.list_leaves(s)
            xp = backend.array_module(offsets)
            lengths = (offsets[1:] - offsets[:-1])[~xp.asarray(backend.isnull(s))]
            out[c] = [int(lengths.min()), int(lengths.max())] if lengths.size else None
        return out

    def fit_combine(self, partials: List[Dict[str, Optional[List[int]]]]) -> Dict[str, Optional[List[int]]]:
        out: Dict[str, Optional[List[int]]] = {}
        for c in partials[0]:
            parts = [p[c] for p in partials if p[c] is not None]
            out[c] = [min(p[0] for p in parts), max(p[1] for p in parts)] if parts else None
        return out

    def fit_finalize(self, columns: List[str], combined: Dict[str, Optional[List[int]]]) -> None:
        self.stats_ = {c: (None if v is None else {"min": v[0], "max": v[1]}) for c, v in combined.items()}

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
            out.append(col)
        return Schema(out)
