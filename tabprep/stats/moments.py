"""Mergeable moments, extrema and quantile sketches of float columns.

Every partial is a few numbers (or, for medians, a bounded sketch), computed in float64
on the host so pandas and cuDF partials merge identically.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, List, Optional, Tuple

import numpy as np
import pandas as pd

from .. import backend

#: most distinct (value, weight) pairs a median sketch keeps; exact below this
SKETCH_SIZE = 1 << 16


def _finite_values(series: Any) -> Any:
    """The finite float64 values of ``series`` (list leaves for list columns) and their array
    module (the non-finite policy of :mod:`tabprep.backend.reductions`)."""
    x = backend.finite_values(_leaves(series))
    return x, backend.array_module(x)


@dataclass
class Moments:
    """count, mean and sum of squared deviations (M2) of the non-null values.

    ``exact``: for moments merged by :func:`combine_moments`, the exact sums they were rounded
    from (``sum(n_i * mean_i)`` and ``sum(m2_i + n_i * mean_i**2)`` over the partials, as
    fractions), so that a further merge rounds once more, never twice; None for a partial."""

    count: int
    mean: float
    m2: float
    exact: Optional[Tuple[Fraction, Fraction]] = field(default=None, repr=False, compare=False)

    @property
    def std(self) -> float:
        """Population standard deviation (ddof=0); 0 when there are no values."""
        return math.sqrt(self.m2 / self.count) if self.count else 0.0

    @property
    def sample_std(self) -> float:
        """Sample standard deviation (ddof=1); 0 with fewer than 2 values."""
        return math.sqrt(self.m2 / (self.count - 1)) if self.count > 1 else 0.0


def partial_moments(series: Any) -> Moments:
    return Moments(*backend.finite_moments(_leaves(series)))


def partial_moments_minmax(series: Any) -> "tuple[Moments, MinMax]":
    """:func:`partial_moments` and :func:`partial_minmax` of ``series``, reading its values once."""
    (n, mean, m2), (lo, hi) = backend.finite_moments_minmax(_leaves(series))
    return Moments(n, mean, m2), MinMax(lo, hi)


def infinite_count(series: Any) -> int:
    """How many +-inf values ``series`` holds (list leaves for list columns): the values the fitted
    statistics leave out (the non-finite policy); 0 for integer and bool columns, which hold none."""
    s = _leaves(series)
    if getattr(getattr(s, "dtype", None), "kind", "f") in ("i", "u", "b", "M", "m"):
        return 0  # (datetimes and timedeltas too: NaT is null, never infinite)
    return backend.infinite_count(s)


def _leaves(series: Any) -> Any:
    if backend.is_list_series(series):
        series, _ = backend.list_leaves(series)
    return series


def combine_moments(parts: List[Moments]) -> Moments:
    """Chan et al.'s parallel merge, computed exactly and rounded once.

    The merged mean is ``sum(n_i * mean_i) / n`` and M2 is ``sum(m2_i + n_i * mean_i**2) - n *
    mean**2``, both evaluated in rational arithmetic on the partials' float64 numbers (a float is
    a fraction with a power-of-two denominator) and rounded to float64 at the end: the result does
    not depend on the order or grouping of the merges (the fit's tree follows the cluster: each
    worker first merges the partitions it fitted), and it is the correctly rounded value of the
    formula, with no cancellation for values with a large offset. A few microseconds per merge
    of a column's moments."""
    live = [p for p in parts if p.count]
    if not all(math.isfinite(p.mean) and math.isfinite(p.m2) for p in live):
        return _chan(live)  # values near the float64 limit: a partial's M2 overflowed already
    count, s1, s2 = 0, Fraction(0), Fraction(0)
    for p in live:
        count += p.count
        if p.exact is not None:
            s1, s2 = s1 + p.exact[0], s2 + p.exact[1]
        else:
            mean = Fraction(p.mean)
            s1, s2 = s1 + p.count * mean, s2 + Fraction(p.m2) + p.count * mean * mean
    if count == 0:
        return Moments(0, 0.0, 0.0)
    m2 = max(s2 - s1 * s1 / count, Fraction(0))
    try:
        return Moments(count, float(s1 / count), float(m2), exact=(s1, s2))
    except OverflowError:  # M2 beyond float64 (values of magnitude ~1e154 and more): inf, as Chan's floats give
        return Moments(count, float(s1 / count), math.inf)


def _chan(parts: List[Moments]) -> Moments:
    """Chan et al.'s merge in float64 (for partials whose numbers are not all finite)."""
    out = Moments(0, 0.0, 0.0)
    for p in parts:
        if out.count == 0:
            out = Moments(p.count, p.mean, p.m2)
            continue
        n = out.count + p.count
        delta = p.mean - out.mean
        out = Moments(n, out.mean + delta * p.count / n, out.m2 + p.m2 + delta * delta * out.count * p.count / n)
    return out


@dataclass
class MinMax:
    """Extrema of the non-null finite values: floats, or Python ints for :func:`partial_minmax` of an
    integer or datetime / timedelta column and for a data profile's partial of an int column
    (exact beyond 2**53); None when there are none."""

    min: Optional[Any]
    max: Optional[Any]


def partial_minmax(series: Any) -> MinMax:
    """:class:`MinMax` of ``series`` (list leaves for list columns): exact Python ints for int, uint
    (uint64 included) and nullable-int columns, and for datetimes / timedeltas (their int64 counts,
    NaT null), as NVTabular 23.08's ``ddf.min()`` of an int column; floats otherwise (bools too)."""
    s = _leaves(series)
    kind = getattr(s.dtype, "kind", "O")
    if kind in ("M", "m"):
        values, mask = backend.int_data(s)  # int64 counts, NaT null
        if mask is not None:
            values = values[~mask]
        return MinMax(int(values.min()), int(values.max())) if values.size else MinMax(None, None)
    if kind in ("i", "u") and not backend.is_string_series(s):
        lo, hi = s.min(), s.max()  # the frame library's own reductions (nulls skipped): exact ints
        if lo is None or hi is None or bool(pd.isna(lo)) or bool(pd.isna(hi)):
            return MinMax(None, None)   # no value (pandas: NaN / NA; cuDF: NA)
        return MinMax(int(lo), int(hi))
    return MinMax(*backend.finite_minmax(s))


def combine_minmax(parts: List[MinMax]) -> MinMax:
    lows = [p.min for p in parts if p.min is not None]
    highs = [p.max for p in parts if p.max is not None]
    return MinMax(min(lows) if lows else None, max(highs) if highs else None)


@dataclass
class Sketch:
    """Sorted distinct values with weights; exact while it holds at most SKETCH_SIZE values.

    Past that it is compressed into SKETCH_SIZE equal-weight bins, each represented by its
    weighted mean, so a quantile is then off by at most one bin (1/65536 of the rank range).
    """

    values: np.ndarray
    weights: np.ndarray
    exact: bool = True


def partial_sketch(series: Any) -> Sketch:
    x, xp = _finite_values(series)
    x = backend.to_numpy(x) if xp is not np else x
    values, weights = np.unique(x, return_counts=True)
    return _compress(Sketch(values, weights.astype("int64")))


def combine_sketches(parts: List[Sketch]) -> Sketch:
    values = np.concatenate([p.values for p in parts])
    weights = np.concatenate([p.weights for p in parts])
    exact = all(p.exact for p in parts)
    if values.size == 0:
        return Sketch(values, weights, exact)
    uniq, inverse = np.unique(values, return_inverse=True)
    summed = np.bincount(inverse, weights=weights).astype("int64")
    return _compress(Sketch(uniq, summed, exact))


def _compress(s: Sketch) -> Sketch:
    if s.values.size <= SKETCH_SIZE:
        return s
    cum = np.cumsum(s.weights)
    total = cum[-1]
    bins = np.minimum((cum - 1) * SKETCH_SIZE // total, SKETCH_SIZE - 1)
    w = np.bincount(bins, weights=s.weights, minlength=SKETCH_SIZE)
    vw = np.bincount(bins, weights=s.values * s.weights, minlength=SKETCH_SIZE)
    keep = w > 0
    return Sketch(vw[keep] / w[keep], w[keep].astype("int64"), exact=False)


def sketch_quantile(s: Sketch, q: float) -> Optional[float]:
    """The q-quantile with linear interpolation between ranks (pandas' default); None if empty."""
    if s.values.size == 0:
        return None
    cum = np.cumsum(s.weights)
    total = int(cum[-1])
    pos = q * (total - 1)
    lo_rank, hi_rank = int(math.floor(pos)), int(math.ceil(pos))
    lo = s.values[np.searchsorted(cum, lo_rank + 1)]
    hi = s.values[np.searchsorted(cum, hi_rank + 1)]
    return float(lo + (hi - lo) * (pos - lo_rank))
