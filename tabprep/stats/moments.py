"""Mergeable moments, extrema and quantile sketches of float columns.

Every partial is a few numbers (or, for medians, a bounded sketch), computed in float64
on the host so pandas and cuDF partials merge identically.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, List, Optional

import numpy as np

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
    """count, mean and sum of squared deviations (M2) of the non-null values."""

    count: int
    mean: float
    m2: float

    @property
    def std(self) -> float:
        """Population standard deviation (ddof=0); 0 when there are no values."""
        return math.sqrt(self.m2 / self.count) if self.count else 0.0


def partial_moments(series: Any) -> Moments:
    return Moments(*backend.finite_moments(_leaves(series)))


def partial_moments_minmax(series: Any) -> "tuple[Moments, MinMax]":
    """:func:`partial_moments` and :func:`partial_minmax` of ``series``, reading its values once."""
    (n, mean, m2), (lo, hi) = backend.finite_moments_minmax(_leaves(series))
    return Moments(n, mean, m2), MinMax(lo, hi)


def _leaves(series: Any) -> Any:
    if backend.is_list_series(series):
        series, _ = backend.list_leaves(series)
    return series


def combine_moments(parts: List[Moments]) -> Moments:
    """Chan et al.'s parallel update: exact and numerically stable for any split."""
    out = Moments(0, 0.0, 0.0)
    for p in parts:
        if p.count == 0:
            continue
        if out.count == 0:
            out = Moments(p.count, p.mean, p.m2)
            continue
        n = out.count + p.count
        delta = p.mean - out.mean
        mean = out.mean + delta * p.count / n
        m2 = out.m2 + p.m2 + delta * delta * out.count * p.count / n
        out = Moments(n, mean, m2)
    return out


@dataclass
class MinMax:
    min: Optional[float]
    max: Optional[float]


def partial_minmax(series: Any) -> MinMax:
    return MinMax(*backend.finite_minmax(_leaves(series)))


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
