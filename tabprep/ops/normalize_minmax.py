"""NormalizeMinMax: scale continuous columns to [0, 1]."""
from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from .. import backend
from ..schema import ColumnSchema, Tags
from ..stats.moments import MinMax, combine_minmax, partial_minmax
from .base import StatOperator, map_elements


class NormalizeMinMax(StatOperator):
    """``(x - min) / (max - min)`` with min and max over the non-null values; float32 out.

    Nulls stay null. ``max == min`` (or no non-null value) maps to 0. Values outside the fitted
    range (at transform time on new data) fall outside [0, 1]; clip afterwards if needed.

    Non-finite values: NaN is null. +-inf is excluded from min and max (the range is the finite
    values') and comes out as +-inf (0 when ``max == min``); :class:`Clip` bounds it.

    Example:
        >>> scaled = ["price"] >> NormalizeMinMax()
    """

    output_tags = (Tags.CONTINUOUS,)
    supports_lists = True
    numeric_input = True

    def __init__(self) -> None:
        self.stats_ = None

    def fit_partial(self, columns: List[str], df: Any) -> Dict[str, MinMax]:
        return {c: partial_minmax(df[c]) for c in columns}

    def fit_combine(self, partials: List[Dict[str, MinMax]]) -> Dict[str, MinMax]:
        return {c: combine_minmax([p[c] for p in partials]) for c in partials[0]}

    # NVTabular 23.08's names of the fitted statistics ({column: value}; empty before fit)
    @property
    def mins(self) -> Dict[str, Any]:
        """Column -> fitted minimum (NVTabular's ``NormalizeMinMax.mins``)."""
        return {c: st["min"] for c, st in (self.stats_ or {}).items()}

    @property
    def maxs(self) -> Dict[str, Any]:
        """Column -> fitted maximum (NVTabular's ``NormalizeMinMax.maxs``)."""
        return {c: st["max"] for c, st in (self.stats_ or {}).items()}

    def fit_finalize(self, columns: List[str], combined: Dict[str, MinMax]) -> None:
        self.stats_ = {c: {"min": m.min, "max": m.max} for c, m in combined.items()}

    def transform(self, columns: List[str], df: Any) -> Any:
        self._require_fitted()
        out = {}
        for c in columns:
            lo, hi = self.stats_[c]["min"], self.stats_[c]["max"]

            def scale(s: Any, lo: Any = lo, hi: Any = hi) -> Any:
                x = backend.float_values(s)
                xp = backend.array_module(x)
                if lo is None or hi is None or hi == lo:
                    return xp.where(xp.isnan(x), np.nan, 0.0).astype("float32")
                return ((x - lo) / (hi - lo)).astype("float32")

            out[c] = map_elements(df[c], scale, dtype="float32")
        return backend.make_frame(out, like=df)

    def column_schema(self, col: ColumnSchema) -> ColumnSchema:
        return col.with_(dtype="float32", add_tags=self.output_tags)
