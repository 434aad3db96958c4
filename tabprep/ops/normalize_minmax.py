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

    #: checked when a saved workflow is loaded (ops/_saved_state.py)
    state_fields = ("min", "max")

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
        wide = [c for c, st in (self.stats_ or {}).items() if _ints(st["min"], st["max"]) and st["max"] - st["min"] > _I64_MAX]
        if wide:
            notes = notes + [f"NormalizeMinMax: column(s) {wide} span more than 2**63 - 1 (max - min): tabprep computes "
                             f"x - min exactly, where NVTabular 23.08's int64 subtraction wraps around (different numbers; "
                             f"docs/migration.md)."]
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
                if _ints(lo, hi) and hi != lo and _int_kind(s):
                    return _scale_ints(s, lo, hi).astype(dtype, copy=False)
                x = backend.float_values(s)
                xp = backend.array_module(x)
                if lo is None or hi is None or hi == lo:
                    return xp.where(xp.isnan(x), np.nan, 0.0).astype(dtype, copy=False)
                return ((x - lo) / (hi - lo)).astype(dtype, copy=False)

            out[c] = map_elements(df[c], scale, dtype=dtype)
        return backend.make_frame(out, like=df)

    def column_schema(self, col: ColumnSchema) -> ColumnSchema:
        return col.with_(dtype=self.output_dtype, add_tags=self.output_tags)


# -- integer columns: exact (x - min), as NVTabular 23.08's (int64 series - int) / int -------------------------
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


def _ints(*values: Any) -> bool:
    """Whether the fitted statistics are exact ints (fitted on an int / datetime column by this
    tabprep; a folder saved before holds floats, and keeps its float64 arithmetic)."""
    return all(type(v) is int for v in values)


def _int_kind(s: Any) -> bool:
    """Int, uint, nullable-int and datetime / timedelta series (not bools, not strings)."""
    return getattr(s.dtype, "kind", "O") in ("i", "u", "M", "m") and not backend.is_string_series(s)


def _scale_ints(s: Any, lo: int, hi: int) -> Any:
    """``float64(x - lo) / float64(hi - lo)`` with ``x - lo`` exact (integer arithmetic), NaN where
    null: what pandas computes for NVTabular on an int64 column, also where ``x - lo`` leaves int64
    (there NVTabular's subtraction wraps; here the difference is exact, then rounded once)."""
    values, mask = backend.int_data(s)   # int64 (counts for times); null slots arbitrary
    if getattr(s.dtype, "kind", "") == "u" and getattr(s.dtype, "itemsize", 8) == 8:
        values = values.view(np.uint64)  # int_data's int64 holds uint64's bits
    return scale_int_values(values, mask, lo, hi - lo)


def scale_int_values(values: Any, mask: Any, lo: int, span: int) -> Any:
    """``float64(values - lo) / float64(span)`` of int64 or uint64 ``values`` (numpy or cupy), the
    difference exact (:func:`_exact_diff`), NaN where ``mask`` (None: no nulls): the op's transform
    and its serving kernel."""
    xp = backend.array_module(values)
    out = _exact_diff(values, lo, xp, values.dtype == np.uint64) / float(span)
    if mask is not None:
        xp.copyto(out, np.nan, where=mask)
    return out


def _exact_diff(v: Any, lo: int, xp: Any, unsigned: bool) -> Any:
    """``float64(v - lo)``, the exact difference rounded once (|v - lo| < 2**64 for int64 / uint64 v
    and a ``lo`` of the same dtype's range)."""
    if not unsigned and _I64_MIN <= lo <= _I64_MAX:
        d = v - np.int64(lo)   # wraps (silently) where the difference leaves int64
        # wrapped iff the sign of d is not the one of v - lo: lo > 0 and v < lo with d >= 0 (or the reverse)
        wrapped = (d < 0) != (v < np.int64(lo)) if lo else None
        if wrapped is None or not bool(wrapped.any()):
            return d.astype(np.float64)
    elif unsigned and 0 <= lo <= 2 * _I64_MAX + 1:
        pass
    else:  # lo outside the column's dtype (fitted on another dtype): float64, as before
        return v.astype(np.float64) - float(lo)
    u = v if unsigned else v.view(np.uint64)
    lo_u = np.uint64(lo % (1 << 64))
    below = v < (np.uint64(lo) if unsigned else np.int64(lo))
    mag = xp.where(below, lo_u - u, u - lo_u)  # |v - lo|, exact modulo 2**64 (below 2**64)
    out = mag.astype(np.float64)
    return xp.where(below, -out, out)   # (cupy's ufuncs take no where=)
