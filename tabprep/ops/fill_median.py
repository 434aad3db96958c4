"""FillMedian: replace nulls with each column's median."""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

from .._warn import warn_once
from ..stats.moments import Sketch, combine_sketches, infinite_count, partial_sketch, sketch_quantile
from .base import StatOperator, infinite_note
from .fill_missing import FillMissing


class FillMedian(FillMissing, StatOperator):
    """Fill nulls with the median of the column's non-null values.

    The median interpolates between the two middle values like ``pandas.Series.median``.
    It is exact while a column has at most 65,536 distinct values; above that the
    mergeable sketch (:mod:`tabprep.stats.moments`) bounds memory and the median is exact
    to within 1/65536 of the value distribution's rank range. A column with no non-null value
    is filled with 0. Integer columns are filled with the median rounded to the column's dtype.

    Non-finite values: NaN is null (filled). +-inf is excluded from the median (only finite
    values count) and, not being null, is kept as +-inf.

    Example:
        >>> conts = ["I1"] >> FillMedian(add_binary_cols=True)
    """

    #: checked when a saved workflow is loaded (ops/_saved_state.py)
    state_fields = ("median",)

    def __init__(self, add_binary_cols: bool = False) -> None:
        # NVTabular fits dask's quantile(method="dask"): over several partitions it merges per-partition
        # percentiles ([1, 2] and [3, 4] give 2.0 there, 2.5 here), so its fill value depends on the
        # partitioning. Once per process, when a graph is built (the fit cannot tell: it regroups partitions)
        warn_once("FillMedian approximate", "FillMedian: tabprep fills with the exact median (pandas' median, up to "
                  "65,536 distinct values per column), where NVTabular 23.08 fits dask's quantile(method='dask'), "
                  "which over several partitions merges per-partition percentiles: on data of more than one "
                  "partition its fill value can differ and depends on the partitioning (docs/migration.md, "
                  "FillMedian). On one partition both are the exact median.", at_build=True)
        self.add_binary_cols = add_binary_cols
        self.fill_val = None
        self.stats_ = None

    def get_params(self) -> Dict[str, Any]:
        return {"add_binary_cols": self.add_binary_cols}

    # the sketch of the finite values, and the count of +-inf left out (fit_notes_)
    def fit_partial(self, columns: List[str], df: Any) -> Dict[str, Tuple[Sketch, int]]:
        return {c: (partial_sketch(df[c]), infinite_count(df[c])) for c in columns}

    def fit_combine(self, partials: List[Dict[str, Tuple[Sketch, int]]]) -> Dict[str, Tuple[Sketch, int]]:
        return {c: (combine_sketches([p[c][0] for p in partials]), sum(p[c][1] for p in partials)) for c in partials[0]}

    @property
    def medians(self) -> Dict[str, float]:
        """Column -> fitted median (NVTabular's ``FillMedian.medians``; empty before fit)."""
        return {c: st["median"] for c, st in (self.stats_ or {}).items()}

    def fit_finalize(self, columns: List[str], combined: Dict[str, Tuple[Sketch, int]]) -> None:
        self.stats_ = {}
        infinite = [c for c, (_, n) in combined.items() if n]
        self.fit_notes_ = [infinite_note("FillMedian", infinite, "median")] if infinite else []
        for c, (sk, _) in combined.items():
            med = sketch_quantile(sk, 0.5)
            self.stats_[c] = {"median": 0.0 if med is None else med, "exact": sk.exact}

    def _fill_value(self, columns: List[str]) -> Dict[str, Any]:
        self._require_fitted()
        return {c: self.stats_[c]["median"] for c in columns}

    def transform(self, columns: List[str], df: Any) -> Any:
        from .. import backend
        from .fill_missing import binary_flags, fill_column

        self._require_fitted()
        out = {}
        for c in columns:
            s = df[c]
            med = self.stats_[c]["median"]
            if not backend.is_float_series(s) and not backend.is_list_series(s) and not backend.is_string_series(s):
                med = int(round(med))
            out[c] = fill_column(s, med)
        if self.add_binary_cols:
            for c in columns:
                out[f"{c}_filled"] = binary_flags(df[c], f"{c}_filled")
        return backend.make_frame(out, like=df)
