"""Per-partition reductions of one column: finite moments and extrema, integer value counts; the
merge of integer value counts and their vocabulary order (Categorify's combine and finalize).

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

from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from .arrays import array_module, float_values, int_data
from .columns import HostColumn
from .dispatch import Dispatch, register_gpu_lazy

finite_moments = Dispatch("finite_moments", """``(count, mean, m2)`` of the finite values of a scalar
series: the count of values that are not null, NaN or +-inf, their mean and the sum of their squared
deviations from it, in float64 (two passes). ``(0, 0.0, 0.0)`` when there are none.""")


def finite_values(series: Any) -> Any:
    """The finite values of a scalar series as a float64 array (numpy or cupy): nulls, NaN and
    +-inf dropped (the non-finite policy above)."""
    x = float_values(series)
    finite = array_module(x).isfinite(x)
    return x if bool(finite.all()) else x[finite]


def _moments(x: np.ndarray) -> Tuple[int, float, float]:
    n = int(x.size)
    if n == 0:
        return 0, 0.0, 0.0
    mean = float(x.mean())
    d = x - mean
    d *= d  # ufuncs release the GIL (a BLAS dot product here held it)
    return n, mean, float(d.sum())


def _minmax(x: np.ndarray) -> Tuple[Optional[float], Optional[float]]:
    if x.size == 0:
        return None, None
    return float(x.min()), float(x.max())


@finite_moments.register(object)
def _finite_moments(series: Any) -> Tuple[int, float, float]:
    return _moments(finite_values(series))


finite_minmax = Dispatch("finite_minmax", """``(min, max)`` of the finite values of a scalar series as
floats; ``(None, None)`` when there are none (nulls, NaN and +-inf excluded).""")


@finite_minmax.register(object)
def _finite_minmax(series: Any) -> Tuple[Optional[float], Optional[float]]:
    return _minmax(finite_values(series))


finite_moments_minmax = Dispatch("finite_moments_minmax", """``(finite_moments(s), finite_minmax(s))``,
reading the values once (Normalize's fit).""")


@finite_moments_minmax.register(object)
def _finite_moments_minmax(series: Any) -> Tuple[Tuple[int, float, float], Tuple[Optional[float], Optional[float]]]:
    x = finite_values(series)
    return _moments(x), _minmax(x)


any_true = Dispatch("any_true", """Whether a boolean array (numpy or cupy) has a True value, as a Python bool.

A dispatcher rather than ``bool(a.any())`` because CuPy compiles its ``any`` reduction with NVRTC on
a fresh GPU worker (about 3 s: it pulls in CUB's headers), on the job's own thread; the GPU
implementation is libcudf's precompiled reduction. Empty arrays give False.""")


@any_true.register(object)
def _any_true(values: Any) -> bool:
    return bool(values.any())


infinite_count = Dispatch("infinite_count", """How many +inf / -inf values a float series holds, as an int
(nulls and NaN are not infinite). Callers pass float series only (ints, bools, datetimes hold none).
The GPU implementation is libcudf's (no CuPy kernel to compile on a fresh worker, and cuDF's
``values`` refuses a column holding nulls).""")


@infinite_count.register(object)
def _infinite_count(series: Any) -> int:
    x = float_values(series)
    return int(array_module(x).isinf(x).sum())


@infinite_count.register((pd.Series, HostColumn))
def _infinite_count_host(series: Any) -> int:
    v = series.values
    if not (isinstance(v, np.ndarray) and v.dtype.kind == "f"):
        return _infinite_count(series)  # (masked / Arrow-backed values: as floats, nulls NaN)
    # numpy floats (a pandas column's values, a host column's): no float64 copy, one bool pass; a
    # host column's null slots are not read (their values are arbitrary)
    inf = np.isinf(v)
    mask = series.mask if isinstance(series, HostColumn) else None
    return int((inf & ~mask).sum() if mask is not None else inf.sum())


int_counts = Dispatch("int_counts", """``(keys, counts, nulls)`` of an int / bool / nullable-int series:
its distinct non-null values widened to int64, sorted ascending (numpy or cupy array), the int64
count of each, and the number of nulls.""")


#: a span of values (max - min) up to this many times their number is counted with a bincount
_DENSE_SPAN = 2


@int_counts.register(object)
def _int_counts(series: Any) -> Tuple[Any, Any, int]:
    values, mask = int_data(series)
    nulls = int(mask.sum()) if mask is not None else 0
    v = values[~mask] if nulls else values  # nulls: a fresh array, sorted in place below
    if len(v) == 0:
        return v.copy(), np.zeros(0, dtype=np.int64), nulls
    lo, hi = int(v.min()), int(v.max())
    span = hi - lo  # Python ints: no int64 overflow
    # the per-partition counts of the fit, ~2 ms of sort per 250k values: dense ids (a span within
    # 2x their number) skip the sort (bincount, 0.6-1.0 ms); a span below 2**32 sorts 32-bit
    # offsets (x86-simd-sort: 1.4 against 2.2 ms with the conversion, Criteo-like hashed ids)
    if span <= _DENSE_SPAN * len(v):
        counts = np.bincount(v - lo if lo else v, minlength=span + 1)
        keys = np.flatnonzero(counts)
        return keys + lo, counts[keys].astype("int64", copy=False), nulls
    if span < (1 << 32):
        u = (v - lo).astype(np.uint32)  # wraps to the offset for every value (two's complement)
        u.sort()
        keys, counts = _runs(u)
        return keys.astype(np.int64) + lo, counts, nulls
    if not nulls:
        v = v.copy()  # int_data may hand out a view of the column
    v.sort()
    return _runs(v) + (nulls,)


def _runs(v: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Distinct values of a sorted non-empty array and the length of each run (int64):
    np.unique(return_counts=True) without its extra copy and passes."""
    starts = np.empty(len(v), dtype=bool)
    starts[0] = True
    np.not_equal(v[1:], v[:-1], out=starts[1:])
    idx = np.flatnonzero(starts)
    return v[idx], np.diff(idx, append=len(v)).astype("int64", copy=False)


_merge_counts = Dispatch("merge_counts", """See :func:`merge_counts`; dispatched on the first keys array.""")


def merge_counts(keys_list: Sequence[Any], counts_list: Sequence[Any]) -> Tuple[Any, Any]:
    """Merge runs of distinct int64 keys (each ascending) with their int64 counts.

    Returns ``(keys, counts)``: every key of the runs once, ascending, with the sum of its
    counts (numpy or cupy, like the inputs). Empty runs are allowed. Exact (integer sums).
    """
    return _merge_counts.dispatch(type(keys_list[0]))(keys_list, counts_list)


@_merge_counts.register(object)
def _merge_counts_numpy(keys_list: Sequence[np.ndarray], counts_list: Sequence[np.ndarray]) -> Tuple[Any, Any]:
    keys = np.concatenate(keys_list)
    counts = np.concatenate(counts_list)
    order = np.argsort(keys, kind="stable")  # timsort: merges the k sorted runs in O(n log k)
    keys = keys[order]
    counts = counts[order]
    del order
    n = len(keys)
    if n == 0:
        return keys, counts
    starts = np.empty(n, dtype=bool)
    starts[0] = True
    np.not_equal(keys[1:], keys[:-1], out=starts[1:])
    idx = np.flatnonzero(starts)
    del starts
    if len(idx) == n:
        return keys, counts
    # sum of each run of equal keys: differences of the cumulative sum at the runs' ends
    csum = np.cumsum(counts)
    ends = np.empty(len(idx), dtype="int64")
    ends[:-1] = idx[1:] - 1
    ends[-1] = n - 1
    sums = csum[ends]
    sums[1:] -= csum[ends[:-1]]
    return keys[idx], sums


count_order = Dispatch("count_order", """``(values, freqs)`` of distinct ascending int64 ``keys`` and
their ``counts`` (numpy or cupy) in vocabulary order: descending count, ties by ascending value, as
host numpy int64 arrays. ``count_order(keys, counts, freq_threshold=0, max_size=0)``: counts below
``freq_threshold`` (when > 1) are dropped first, then at most ``max_size`` (when > 0) are kept.""")


@count_order.register(object)
def _count_order(keys: np.ndarray, counts: np.ndarray, freq_threshold: int = 0,
                 max_size: int = 0) -> Tuple[np.ndarray, np.ndarray]:
    if freq_threshold and freq_threshold > 1:
        keep = counts >= freq_threshold
        keys, counts = keys[keep], counts[keep]
    if len(keys) == 0:
        return np.array([], dtype="int64"), np.array([], dtype="int64")
    # keys ascend already: a stable sort on descending count keeps ties in ascending value order
    top = int(counts.max())
    rank = top - counts
    if top < (1 << 16):
        rank = rank.astype("uint16")  # numpy's stable sort is a radix sort for 16-bit keys
    order = np.argsort(rank, kind="stable")
    del rank
    if max_size and max_size > 0:
        order = order[:max_size]
    return keys[order].astype("int64", copy=False), counts[order].astype("int64", copy=False)


shard_counts = Dispatch("shard_counts", """``[(keys, counts), ...]``: distinct ascending int64 ``keys`` and
their ``counts`` (numpy or cupy) cut into ``shards`` parts by ``murmur3(key) % shards`` (the key's
int64 bytes, :func:`tabprep.backend.murmur3`'s hash on both backends, so every worker sends a
value to the same part), each part's keys still ascending, on the inputs' device. The fit's
partitioned finalize of a vocabulary (``tabprep.workflow.reduction``).""")


@shard_counts.register(object)
def _shard_counts(keys: np.ndarray, counts: np.ndarray, shards: int) -> list:
    from ..hashing import murmur3_32

    if shards <= 1 or len(keys) == 0:
        return [(keys, counts)] + [(keys[:0], counts[:0]) for _ in range(shards - 1)]
    # (numpy's uint32 % by a scalar, as hashing.mod_uint32, kept in uint8 for the radix sort below)
    ids = (murmur3_32(keys) % np.uint32(shards)).astype("uint8" if shards < 256 else "int64", copy=False)
    # one stable sort by part (a radix sort for 8-bit keys) keeps each part's keys ascending,
    # instead of ``shards`` boolean selections over all keys
    order = np.argsort(ids, kind="stable")
    ends = np.cumsum(np.bincount(ids, minlength=shards))
    keys, counts = keys[order], counts[order]
    starts = np.concatenate([[0], ends[:-1]])
    return [(keys[a:b], counts[a:b]) for a, b in zip(starts.tolist(), ends.tolist())]


top_counts = Dispatch("top_counts", """``(keys, counts)``: of distinct ascending int64 ``keys`` and their
``counts`` (numpy or cupy), those with a count of at least ``freq_threshold`` (when > 1) and, with
``max_size`` (None: no limit), only the ``max_size`` first in vocabulary order (descending count,
ties by ascending key); keys still ascending, on the inputs' device.
``top_counts(keys, counts, freq_threshold=0, max_size=None)``: a part's reduction in the fit's
partitioned finalize (``tabprep.stats.vocab.reduce_counts``).""")


@top_counts.register(object)
def _top_counts(keys: np.ndarray, counts: np.ndarray, freq_threshold: int = 0,
                max_size: Optional[int] = None) -> Tuple[np.ndarray, np.ndarray]:
    if freq_threshold and freq_threshold > 1:
        keep = counts >= freq_threshold
        keys, counts = keys[keep], counts[keep]
    if max_size is not None and len(keys) > max_size:
        # count_order's stable sort by descending count (keys ascend: ties by value), then the
        # first positions back in ascending order: no sort of the keys themselves
        rank = int(counts.max()) - counts
        top = np.sort(np.argsort(rank, kind="stable")[:max_size])
        keys, counts = keys[top], counts[top]
    return keys, counts


profile_exact = Dispatch("profile_exact", """The exact part of a data profile's partial, computed where a
partition lives: ``{column: (rows, nulls, nan, inf, moments, minmax)}`` for the scalar columns of a
device frame (``nulls`` counts NaN too, ``moments`` is ``(count, mean, m2)`` and ``minmax`` ``(min,
max)`` of the finite values, both None for a non-numeric column), or None where the host computes
the whole partial from the partition's Arrow table (pandas frames, Arrow tables). On the GPU this
lets the profile copy to the host only the rows its sketches sample (``tabprep.stats.profile``).""")


@profile_exact.register(object)
def _profile_exact(df: Any, columns: Any, numeric: Any) -> None:
    return None


def pick_positions(size: int, every: int) -> range:
    """The positions, in a sorted chunk of ``size`` values, of the values a KLL sketch thinned by
    ``every`` gets (:func:`tabprep.stats.sketches.kll_of_sorted`): the middle one of each run of
    ``every``, ``(every - 1) // 2 + j * every``; every position for ``every == 1``. The one
    definition of the thinned picks, on the host (a slice) and on the device (a gather of this
    sequence): both backends hand the KLL sketch the same values."""
    every = int(every)
    if every < 1:
        raise ValueError(f"kll_every must be an int >= 1, got {every}")
    return range((every - 1) // 2, int(size), every)


sorted_sample = Dispatch("sorted_sample", """``(picks, keys, counts)`` of a 1-D sample of a numeric column
(numpy array, or cuDF series / cupy array on the device) whose nulls and non-finite values are
dropped already, sorted ascending where it lives: ``keys`` its distinct values ascending (a run of
equal values in the sorted order is one key; -0.0 equals 0.0), ``counts`` the int64 length of each
run, ``picks`` the sorted values at :func:`pick_positions` of ``every`` (None when ``every`` is
None: no KLL sketch), all host numpy arrays in the sample's dtype (counts int64), any -0.0 among
the keys and picks made 0.0 (:func:`plus_zero`). Only these go to
the host: the sorted sample stays where it was sorted. ``sorted_sample(values, every,
owned=False)``: ``owned`` (numpy), the caller's own array, which may be sorted in place.""")


@sorted_sample.register(object)
def _sorted_sample(values: np.ndarray, every: Optional[int], owned: bool = False
                   ) -> Tuple[Optional[np.ndarray], np.ndarray, np.ndarray]:
    if values.size == 0:
        return (None if every is None else values[:0]), values[:0], np.zeros(0, dtype=np.int64)
    if values.dtype.kind in "iu" and values.dtype.itemsize == 8 and values.min() >= 0 and values.max() < 1 << 32:
        # 64-bit ints within [0, 2**32) (hashed ids, most counts) sort as uint32, about twice as
        # fast as int64 (same order, same numbers; converted back below)
        s = values.astype(np.uint32)
        s.sort()
    elif owned:
        s = values
        s.sort()
    else:
        s = np.sort(values)
    keys, counts = _runs(s)
    picks = None
    if every is not None:
        r = pick_positions(s.size, every)
        picks = plus_zero((s if r.step == 1 else s[r.start::r.step]).astype(values.dtype, copy=False))
    return picks, plus_zero(keys.astype(values.dtype, copy=False)), counts


sorted_samples = Dispatch("sorted_samples", """:func:`sorted_sample` of several samples of one partition at
once: ``sorted_samples(frame, samples, everies)`` gives ``{column: (picks, keys, counts)}``, each
what ``sorted_sample(samples[column], everies[column])`` gives, for ``samples`` (``{column:
values}``, from :func:`profile_sample` of ``frame``). Dispatched on ``frame``'s type. On the host a
loop over :func:`sorted_sample`; on the device one sort of all the samples of a dtype together (a
sample id, then the value), one group-by and one copy of each result to the host: per sample, a
sort, a group-by and three copies each waited for the device, that is for all the work queued on
its default stream (another partition's parquet decode included).""")


@sorted_samples.register(object)
def _sorted_samples(frame: Any, samples: Dict[str, Any], everies: Dict[str, Optional[int]]) -> Dict[str, tuple]:
    return {c: sorted_sample(v, everies[c]) for c, v in samples.items()}


def plus_zero(a: Optional[np.ndarray]) -> Optional[np.ndarray]:
    """A float array with its -0.0 made 0.0, in place (``x + 0.0``; other values and other dtypes
    as they are): a sort may put -0.0 before or after 0.0 (numpy's introsort and libcudf's radix
    sort differ), so a run's key or a thinned pick in a run of zeros could be either; as 0.0,
    both backends hand the sketches the same values (-0.0 and 0.0 are one value, as for
    :func:`tabprep.stats.sketches.hash64`). ``a`` is :func:`sorted_sample`'s own array."""
    if a is not None and a.dtype.kind == "f":
        np.add(a, 0.0, out=a)
    return a


profile_sample = Dispatch("profile_sample", """``{column: values}``: of each of ``columns`` of a device
frame, the values of every ``step``-th row (rows 0, step, 2 step...) that are not null, nor NaN or
+-inf for floats, in row order, on the device (a cuDF series), for
:func:`sorted_sample` there; None where the partition is on the host (pandas frames, Arrow
tables: the profile reads the sample from Arrow). ``profile_sample(df, columns, step)``; columns:
int, uint and float ones.""")


@profile_sample.register(object)
def _profile_sample(df: Any, columns: Any, step: int) -> None:
    return None


register_gpu_lazy(any_true, finite_moments, finite_minmax, finite_moments_minmax, int_counts, _merge_counts,
                  count_order, profile_exact, infinite_count, shard_counts, top_counts, sorted_sample,
                  sorted_samples, profile_sample)
