"""Filter: keep the rows for which a predicate holds."""
from __future__ import annotations

from typing import Any, Callable, Dict, List

from .._util import is_frame
from .base import Operator


class Filter(Operator):
    """Keep rows where ``f(df)`` is True; ``f`` gets the frame of the selected columns.

    As in NVTabular 23.08, ``f`` may return a boolean mask (one value per row) or the filtered
    frame itself (``lambda df: df[df["label"] > 0]``: a subset of the rows, by index).

    Row order is kept. Because it drops rows, apply Filter to the merged columns at the end
    of a graph (``(cats + conts) >> Filter(f)``), not inside one branch of a ``+``.
    A null in the mask counts as False.

    Example:
        >>> positives = ["label", "C1"] >> Filter(lambda df: df["label"] > 0)
    """

    changes_rows = True
    supports_lists = True
    passes_opaque = True  # struct / decimal / binary columns flow through (issue #30)
    resets_index = True   # (NVTabular's Filter: reset_index(drop=True))

    def __init__(self, f: Callable[[Any], Any]) -> None:
        if not callable(f):
            raise TypeError(f"Filter needs a callable, got {type(f).__name__}")
        self.f = f

    def transform(self, columns: List[str], df: Any) -> Any:
        mask = self.f(df[columns])
        if is_frame(mask):
            return self._rows_of(mask, columns, df)
        if len(mask) != len(df):
            raise ValueError(f"Filter's function returned {len(mask)} values for {len(df)} rows; "
                             f"it must return one boolean per row")
        if hasattr(mask, "fillna"):
            mask = mask.fillna(False).astype(bool)
            if hasattr(mask, "index"):
                mask.index = df.index
        return df.loc[mask, columns] if hasattr(mask, "index") else df[columns][mask]

    def _rows_of(self, filtered: Any, columns: List[str], df: Any) -> Any:
        """The selected columns of ``df``'s rows that ``f``'s returned frame kept (by index)."""
        missing = [c for c in columns if c not in filtered.columns]
        if missing:
            raise ValueError(f"Filter's function returned a frame without the selected column(s) {missing}; return "
                             f"the filtered frame (df[mask]) or a boolean mask")
        if len(filtered) > len(df) or not bool(filtered.index.isin(df.index).all()):
            raise ValueError("Filter's function returned a frame whose rows are not a subset of its input's "
                             "(more rows, or an index its input does not have); return df[mask] or a boolean mask")
        return filtered[columns]

    def to_config(self) -> Dict[str, Any]:
        from .lambda_op import function_path

        path = function_path(self.f)
        return {"f": {"import": path} if path else {"pickled": True}}

    @classmethod
    def from_config(cls, config: Dict[str, Any], allow_pickle: bool = False) -> "Filter":
        from .lambda_op import function_from_config

        return cls(function_from_config(config.get("f"), "Filter"))
