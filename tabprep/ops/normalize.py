"""Normalize: standardize continuous columns to zero mean, unit variance."""
from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from .. import backend
from ..schema import ColumnSchema, Tags
from ..stats.moments import Moments, combine_moments, partial_moments
from .base import StatOperator, map_elements, register


@register
class Normalize(StatOperator):
    """``(x - mean) / std`` with the mean and population std (ddof=0) of the non-null values.

    Output is float32. Nulls (and NaN) stay null; apply FillMissing first to fill them.
    A column whose std is 0 (or that had no non-null value) maps to 0. List columns are
    normalized element-wise with statistics over all elements.

    Example:
        >>> conts = ["I1", "I2"] >> FillMissing() >> LogOp() >> Normalize()
    """

    output_tags = (Tags.CONTINUOUS,)
    supports_lists = True

    def __init__(self) -> None:
        self.stats_ = None

    def fit_partial(self, columns: List[str], df: Any) -> Dict[str, Moments]:
        return {c: partial_moments(df[c]) for c in columns}

    def fit_combine(self, partials: List[Dict[str, Moments]]) -> Dict[str, Moments]:
        return {c: combine_moments([p[c] for p in partials]) for c in partials[0]}

    def fit_finalize(self, columns: List[str], combined: Dict[str, Moments]) -> None:
        self.stats_ = {c: {"mean": m.mean, "std": m.std, "count": m.count} for c, m in combined.items()}

    def transform(self, columns: List[str], df: Any) -> Any:
        self._require_fitted()
        out = {}
        for c in columns:
            mean, std = self.stats_[c]["mean"], self.stats_[c]["std"]

            def norm(s: Any, mean: float = mean, std: float = std) -> Any:
                x = backend.float_values(s)
                xp = backend.array_module(x)
                if not std or not np.isfinite(std):
                    return xp.where(xp.isnan(x), np.nan, 0.0).astype("float32")
                return ((x - mean) / std).astype("float32")

            out[c] = map_elements(df[c], norm, dtype="float32")
        return backend.make_frame(out, like=df)

    def column_schema(self, col: ColumnSchema) -> ColumnSchema:
        return col.with_(dtype="float32", add_tags=self.output_tags)
