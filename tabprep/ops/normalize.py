"""Normalize: standardize continuous columns to zero mean, unit variance."""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

import numpy as np

from .. import backend
from ..dtypes import float_out_dtype
from ..schema import ColumnSchema, Tags
from ..stats.moments import MinMax, Moments, combine_minmax, combine_moments, infinite_count, partial_moments_minmax
from .base import FloatOutput, StatOperator, infinite_note, map_elements


class Normalize(FloatOutput, StatOperator):
    """``(x - mean) / std`` with the mean and sample std (ddof=1, as NVTabular 23.08's
    ``_finalize_moments``) of the non-null values.

    Args:
        out_dtype: dtype of the output columns (list columns: of their elements), ``"float32"`` or
            ``"float64"`` (or the numpy types); default None, float64 (NVTabular 23.08's
            ``out_dtype or numpy.float64``). The values are computed in float64 and rounded once.
            A workflow folder saved by tabprep before ``out_dtype`` existed loads with float32,
            the output it was saved with.

    Nulls (and NaN) stay null; apply FillMissing first to fill them.
    A column whose std is 0 (constant, one non-null value, or none) maps to 0 (NVTabular:
    ``x - mean``; ``Workflow.fit`` warns, naming the column). List columns are
    normalized element-wise with statistics over all elements.

    Non-finite values: NaN is null (excluded from the statistics, stays NaN). +-inf is excluded
    from the mean and std (one inf would make every row 0) and comes out as +-inf (0 when the
    fitted std is 0); bound it with :class:`Clip` first if the model must not see it.

    Example:
        >>> conts = ["I1", "I2"] >> FillMissing() >> LogOp() >> Normalize()
    """

    #: checked when a saved workflow is loaded (ops/_saved_state.py)
    state_fields = ("mean", "std")

    keyed_statistics = True  # moments per column: merged and finalized in parallel per column

    output_tags = (Tags.CONTINUOUS,)
    supports_lists = True
    numeric_input = True
    supports_nested = "leaves"   # nested lists: element-wise on the leaves, structure kept

    def __init__(self, out_dtype: Any = None) -> None:
        float_out_dtype(out_dtype, "Normalize")  # refused here, where the user wrote it
        self.out_dtype = out_dtype
        self.stats_ = None

    # partials carry the extrema too: a constant column must get std exactly 0, but its float
    # mean is not always exact (mean of [0.1] * 3 != 0.1), which leaves a ~1e-17 "std" that
    # would turn every value into +-1 instead of 0.
    # ... and the count of +-inf left out (fit_notes_: NVTabular 23.08 counts them)
    def fit_partial(self, columns: List[str], df: Any) -> Dict[str, Tuple[Moments, MinMax, int]]:
        return {c: partial_moments_minmax(df[c]) + (infinite_count(df[c]),) for c in columns}

    def fit_partial_columns(self, columns: List[str], cols: Dict[str, Any]) -> Dict[str, Tuple[Moments, MinMax, int]]:
        """:meth:`fit_partial` on host columns (the same float64 values: nulls and NaN, +-inf left out)."""
        return {c: partial_moments_minmax(cols[c]) + (infinite_count(cols[c]),) for c in columns}

    def fit_combine(self, partials: List[Dict[str, Tuple[Moments, MinMax, int]]]) -> Dict[str, Tuple[Moments, MinMax, int]]:
        return {c: (combine_moments([p[c][0] for p in partials]), combine_minmax([p[c][1] for p in partials]),
                    sum(p[c][2] for p in partials)) for c in partials[0]}

    # NVTabular 23.08's names of the fitted statistics ({column: float}; empty before fit)
    @property
    def means(self) -> Dict[str, float]:
        """Column -> fitted mean (NVTabular's ``Normalize.means``)."""
        return {c: st["mean"] for c, st in (self.stats_ or {}).items()}

    @property
    def stds(self) -> Dict[str, float]:
        """Column -> fitted standard deviation (NVTabular's ``Normalize.stds``)."""
        return {c: st["std"] for c, st in (self.stats_ or {}).items()}

    def fit_finalize(self, columns: List[str], combined: Dict[str, Tuple[Moments, MinMax, int]]) -> None:
        stats = {}
        infinite = [c for c, part in combined.items() if part[2]]
        self.fit_notes_ = [infinite_note("Normalize", infinite, "mean and std")] if infinite else []
        for c, (m, mm, _) in combined.items():
            # NVTabular divides by the sample std (moments.py: _finalize_moments(ddof=1))
            mean, std = m.mean, m.sample_std
            if mm.min is not None and mm.min == mm.max:
                mean, std = mm.min, 0.0
            stats[c] = {"mean": mean, "std": std, "count": m.count}
        self.stats_ = stats

    def fit_warnings(self) -> List[str]:
        """A warning per column whose fitted std is 0 (computed from ``stats_``, so the keyed
        shards of a fit give one list): tabprep maps it to 0, NVTabular 23.08 to ``x - mean``."""
        notes = super().fit_warnings()   # fit_notes_: +-inf left out of the statistics
        zero = [c for c, st in (self.stats_ or {}).items() if not st["std"]]
        if not zero:
            return notes
        return notes + [f"Normalize: column(s) {zero} have a fitted std of 0 (constant, or fewer than 2 values, in the "
                f"fitted data): tabprep outputs 0 for every row, where NVTabular 23.08 outputs x - mean (the "
                f"same on the fitted data, different on new data; docs/migration.md). Drop the column(s) from "
                f"Normalize's input if they carry no information."]

    def transform(self, columns: List[str], df: Any) -> Any:
        self._require_fitted()
        dtype = self.output_dtype
        out = {}
        for c in columns:
            mean, std = self.stats_[c]["mean"], self.stats_[c]["std"]

            # computed in float64, rounded once to the output dtype (no copy when it is float64)
            def norm(s: Any, mean: float = mean, std: float = std) -> Any:
                x = backend.float_values(s)
                xp = backend.array_module(x)
                if not std or not np.isfinite(std):
                    return xp.where(xp.isnan(x), np.nan, 0.0).astype(dtype, copy=False)
                if xp is not np:  # cuDF may hand out a view of the column: no in-place update
                    return ((x - mean) / std).astype(dtype, copy=False)
                x -= mean  # in place: x is a fresh float64 copy (same rounding as (x - mean) / std)
                x /= std
                return x.astype(dtype, copy=False)

            out[c] = map_elements(df[c], norm, dtype=dtype)
        return backend.make_frame(out, like=df)

    def column_kernel(self, column: str) -> Any:
        """Column kernel (see :meth:`Operator.column_kernel`; numpy or CuPy): ``(x - mean) / std`` in one float64 array."""
        if not self.fitted or column not in self.stats_:
            return None
        mean, std, dtype = self.stats_[column]["mean"], self.stats_[column]["std"], self.output_dtype
        return lambda col: backend.normalize_host(col, mean, std, dtype)

    def column_schema(self, col: ColumnSchema) -> ColumnSchema:
        return col.with_(dtype=self.output_dtype, add_tags=self.output_tags)
