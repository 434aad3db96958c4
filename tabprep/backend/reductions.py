"""Per-partition reductions of one column: finite moments and extrema, integer value counts.

The statistics (``tabprep.stats``) call these per partition. pandas / numpy implementations are
here; the cuDF ones (:mod:`tabprep.backend.gpu`) use libcudf's precompiled casts, reductions,
group-bys and sorts instead of CuPy array kernels, because a fresh GPU worker compiles every
CuPy kernel with NVRTC on first use (0.2-3 s each, measured by ``benchmarks/cold_start.py``:
the fit of 50M Criteo rows took 20.3 s with empty kernel caches and 1.9 s with warm ones, 17 s
of it in these reductions).

Non-finite policy (issue #11): NaN and null are missing, and +-inf is excluded as well, so one
infinite value cannot turn a mean into inf, a std into NaN or a range into [-inf, inf].
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from .arrays import float_values, int_data
from .dispatch import Dispatch, register_gpu_lazy

finite_moments = Dispatch("finite_moments", """``(count, mean, m2)`` of the finite values of a scalar
series: the count of values that are not null, NaN or +-inf, their mean and the sum of their squared
deviations from it, in float64 (two passes). ``(0, 0.0, 0.0)`` when there are none.""")


def _finite(series: Any) -> np.ndarray:
    x = float_values(series)
    bad = ~np.isfinite(x)
    return x[~bad] if bool(bad.any()) else x


@finite_moments.register(object)
def _finite_moments(series: Any) -> Tuple[int, float, float]:
    x = _finite(series)
    n = int(x.size)
    if n == 0:
        return 0, 0.0, 0.0
    mean = float(x.mean())
    d = x - mean
    d *= d  # ufuncs release the GIL (a BLAS dot product here held it)
    return n, mean, float(d.sum())


finite_minmax = Dispatch("finite_minmax", """``(min, max)`` of the finite values of a scalar series as
floats; ``(None, None)`` when there are none (nulls, NaN and +-inf excluded).""")


@finite_minmax.register(object)
def _finite_minmax(series: Any) -> Tuple[Optional[float], Optional[float]]:
    x = _finite(series)
    if x.size == 0:
        return None, None
    return float(x.min()), float(x.max())


int_counts = Dispatch("int_counts", """``(keys, counts, nulls)`` of an int / bool / nullable-int series:
its distinct non-null values widened to int64, sorted ascending (numpy or cupy array), the int64
count of each, and the number of nulls.""")


@int_counts.register(object)
def _int_counts(series: Any) -> Tuple[Any, Any, int]:
    values, mask = int_data(series)
    nulls = int(mask.sum()) if mask is not None else 0
    if nulls:
        values = values[~mask]
    keys, counts = np.unique(values, return_counts=True)
    return keys, counts.astype("int64"), nulls


register_gpu_lazy(finite_moments, finite_minmax, int_counts)
