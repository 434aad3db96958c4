"""Filter: keep the rows for which a predicate holds."""
from __future__ import annotations

from typing import Any, Callable, Dict, List

from .base import Operator


class Filter(Operator):
    """Keep rows where ``f(df)`` is True; ``f`` gets the frame of the selected columns.

    Row order is kept. Because it drops rows, apply Filter to the merged columns at the end
    of a graph (``(cats + conts) >> Filter(f)``), not inside one branch of a ``+``.
    A null in the mask counts as False.

    Example:
        >>> positives = ["label", "C1"] >> Filter(lambda df: df["label"] > 0)
    """

    changes_rows = True
    supports_lists = True
    passes_opaque = True  # struct / decimal / binary columns flow through (issue #30)

    def __init__(self, f: Callable[[Any], Any]) -> None:
        if not callable(f):
            raise TypeError(f"Filter needs a callable, got {type(f).__name__}")
        self.f = f

    def transform(self, columns: List[str], df: Any) -> Any:
        mask = self.f(df[columns])
        if len(mask) != len(df):
            raise ValueError(f"Filter's function returned {len(mask)} values for {len(df)} rows; "
                             f"it must return one boolean per row")
        if hasattr(mask, "fillna"):
            mask = mask.fillna(False).astype(bool)
            if hasattr(mask, "index"):
                mask.index = df.index
        return df.loc[mask, columns] if hasattr(mask, "index") else df[columns][mask]

    def to_config(self) -> Dict[str, Any]:
        from .lambda_op import function_path

        path = function_path(self.f)
        return {"f": {"import": path} if path else {"pickled": True}}

    @classmethod
    def from_config(cls, config: Dict[str, Any], allow_pickle: bool = False) -> "Filter":
        from .lambda_op import function_from_config

        return cls(function_from_config(config.get("f"), "Filter"))
