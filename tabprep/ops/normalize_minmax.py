"""NormalizeMinMax: scale continuous columns to [0, 1]."""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

import numpy as np

from .. import backend
from ..dtypes import float_out_dtype
from ..schema import ColumnSchema, Tags
from ..stats.moments import MinMax, combine_minmax, infinite_count, partial_minmax
from .base import FloatOutput, StatOperator, infinite_note, map_elements


class NormalizeMinMax(FloatOutput, StatOperator):
    """``(x - min) / (max - min)`` with min and max over the non-null values.

    Args:
        out_dtype: dtype of the output columns (list columns: of their elements), ``"float32"`` or
            ``"float64"`` (or the numpy types); default None, float64 (NVTabular 23.08's
            ``out_dtype or numpy.float64``). The values are computed in float64 and rounded once.
            A workflow folder saved by tabprep before ``out_dtype`` existed loads with float32,
            the output it was saved with.

    Nulls stay null. ``max == min`` (or no non-null value) maps to 0 (NVTabular 23.08:
    ``x / (2 * x)``; ``Workflow.fit`` warns, naming the column). Values outside the fitted
    range (at transform time on new data) fall outside [0, 1]; clip afterwards if needed.

    Non-finite values: NaN is null. +-inf is excluded from min and max (the range is the finite
    values') and comes out as +-inf (0 when ``max == min``); :class:`Clip` bounds it.

    Example:
        >>> scaled = ["price"] >> NormalizeMinMax()
    """

    output_tags = (Tags.CONTINUOUS,)
    supports_lists = True
    numeric_input = True

    def __init__(self, out_dtype: Any = None) -> None:
        float_out_dtype(out_dtype, "NormalizeMinMax")  # refused here, where the user wrote it
        self.out_dtype = out_dtype
        self.stats_ = None

    # the extrema of the finite values, and the count of +-inf left out (fit_notes_)
    def fit_partial(self, columns: List[str], df: Any) -> Dict[str, Tuple[MinMax, int]]:
        return {c: (partial_minmax(df[c]), infinite_count(df[c])) for c in columns}

    def fit_combine(self, partials: List[Dict[str, Tuple[MinMax, int]]]) -> Dict[str, Tuple[MinMax, int]]:
        return {c: (combine_minmax([p[c][0] for p in partials]), sum(p[c][1] for p in partials)) for c in partials[0]}

    # NVTabular 23.08's names of the fitted statistics ({column: value}; empty before fit)
    @property
    def mins(self) -> Dict[str, Any]:
        """Column -> fitted minimum (NVTabular's ``NormalizeMinMax.mins``)."""
        return {c: st["min"] for c, st in (self.stats_ or {}).items()}

    @property
    def maxs(self) -> Dict[str, Any]:
        """Column -> fitted maximum (NVTabular's ``NormalizeMinMax.maxs``)."""
        return {c: st["max"] for c, st in (self.stats_ or {}).items()}

    def fit_finalize(self, columns: List[str], combined: Dict[str, Tuple[MinMax, int]]) -> None:
        self.stats_ = {c: {"min": m.min, "max": m.max} for c, (m, _) in combined.items()}
        infinite = [c for c, (_, n) in combined.items() if n]
        self.fit_notes_ = [infinite_note("NormalizeMinMax", infinite, "min and max")] if infinite else []

    def fit_warnings(self) -> List[str]:
        """A warning naming the columns whose fitted ``max == min`` (or that hold no value):
        tabprep maps them to 0, NVTabular 23.08 to ``x / (2 * x)`` (0.5, NaN where x is 0)."""
        flat = [c for c, st in (self.stats_ or {}).items()
                if st["min"] is None or st["max"] is None or st["min"] == st["max"]]
        notes = super().fit_warnings()   # fit_notes_: +-inf left out of the statistics
        if not flat:
            return notes
        return notes + [f"NormalizeMinMax: column(s) {flat} have a fitted max equal to their min (constant, or no value, in "
                f"the fitted data): tabprep outputs 0 for every row, where NVTabular 23.08 outputs x / (2 * x) (0.5, "
                f"or NaN where x is 0; docs/migration.md). Drop the column(s) from NormalizeMinMax's input if they "
                f"carry no information."]

    def transform(self, columns: List[str], df: Any) -> Any:
        self._require_fitted()
        dtype = self.output_dtype
        out = {}
        for c in columns:
            lo, hi = self.stats_[c]["min"], self.stats_[c]["max"]

            # computed in float64, rounded once to the output dtype (no copy when it is float64)
            def scale(s: Any, lo: Any = lo, hi: Any = hi) -> Any:
                x = backend.float_values(s)
                xp = backend.array_module(x)
                if lo is None or hi is None or hi == lo:
                    return xp.where(xp.isnan(x), np.nan, 0.0).astype(dtype, copy=False)
                return ((x - lo) / (hi - lo)).astype(dtype, copy=False)

            out[c] = map_elements(df[c], scale, dtype=dtype)
        return backend.make_frame(out, like=df)

    def column_schema(self, col: ColumnSchema) -> ColumnSchema:
        return col.with_(dtype=self.output_dtype, add_tags=self.output_tags)
