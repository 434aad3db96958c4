"""Dropna: drop the rows with a null in the selected columns."""
from __future__ import annotations

from typing import Any, List

from .. import backend
from .base import Operator


class Dropna(Operator):
    """Drop every row holding a null (None, NaN, NA) in one of the selected columns, as NVTabular
    23.08's ``Dropna`` (``df.dropna(subset=columns)``). Row order is kept; +-inf is a value.

    A list column's row is dropped when the row itself is null (not when it holds a null
    element). Like :class:`Filter`, it changes the rows: apply it to the merged columns.

    Example:
        >>> complete = ["cat1", "num1"] >> Dropna()
    """

    changes_rows = True
    supports_lists = True
    resets_index = True   # (NVTabular's Dropna: reset_index(drop=True))

    def __init__(self) -> None:
        pass

    def transform(self, columns: List[str], df: Any) -> Any:
        if not columns:
            return df
        keep = None
        for c in columns:
            ok = ~backend.isnull(df[c])
            keep = ok if keep is None else keep & ok
        return df[columns][keep]
