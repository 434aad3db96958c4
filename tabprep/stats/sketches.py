"""Mergeable, bounded-memory sketches of a column, for data profiles (:mod:`tabprep.stats.profile`).

* :class:`HLL`: HyperLogLog distinct count over 64-bit value hashes (``2**p`` one-byte registers;
  relative standard error ``1.04 / sqrt(2**p)``, 1.6% at the default ``p = 12``). Merge: the
  registers' maximum. Vectorized in numpy (DataSketches' ``hll_sketch`` takes one value per call).
* :class:`Frequent`: Misra-Gries frequent items (the mergeable summary of Agarwal et al., 2012):
  at most ``capacity`` counters; every estimate is a lower bound of the true count and at most
  ``error`` below it, with ``error <= n / (capacity + 1)``. Exact while a column has no more
  distinct values than ``capacity``.
* KLL quantiles: Apache DataSketches' ``kll_doubles_sketch`` (normalized rank error ~1.3% at
  ``k = 200``, 99% confidence), carried between tasks as its serialized bytes; optionally
  *thinned* (:func:`kll_of_sorted`): it gets every ``f``-th value of a sorted chunk, each
  standing for the ``f`` values around it (see :func:`thinning_slack` for the added error).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence

import numpy as np
import pandas as pd

from ..backend.reductions import pick_positions

#: HLL precision (registers = 2**HLL_P)
HLL_P = 12
#: Misra-Gries counters kept per column
FREQ_CAPACITY = 1024
#: KLL accuracy parameter (DataSketches' default)
KLL_K = 200


def datasketches() -> Any:
    """The ``datasketches`` module, or an ImportError that says how to install it."""
    try:
        import datasketches as ds
    except ImportError as exc:  # pragma: no cover - it is a dependency of tabprep
        raise ImportError("data profiles need Apache DataSketches' Python package: pip install datasketches "
                          "(or pip install 'tabprep[quality]')") from exc
    return ds


def hash64(values: np.ndarray) -> np.ndarray:
    """64-bit hashes of host values (numbers, strings, objects); equal values hash equal across
    partitions and processes (pandas' ``hash_array`` with its fixed key)."""
    if values.dtype.kind == "f":
        values = np.where(values == 0, 0.0, values)  # -0.0 and 0.0 are one value
    return pd.util.hash_array(values, categorize=False)


@dataclass
class HLL:
    registers: np.ndarray  # uint8, 2**p

    @classmethod
    def empty(cls, p: int = HLL_P) -> "HLL":
        return cls(np.zeros(1 << p, dtype=np.uint8))

    @classmethod
    def of_hashes(cls, h: np.ndarray, p: int = HLL_P) -> "HLL":
        """Registers of the uint64 hashes ``h``: index = top ``p`` bits, rank = position of the
        first 1 in the remaining bits (their leading zeros + 1)."""
        m = 1 << p
        if h.size == 0:
            return cls.empty(p)
        h = h.astype(np.uint64, copy=False)
        idx = (h >> np.uint64(64 - p)).astype(np.int64)
        rest = h & np.uint64((1 << (64 - p)) - 1)
        width = 64 - p
        # floor(log2(rest)) from the float64 exponent bits (exact except within 2**-53 below a power
        # of two: a register then reads one less, a negligible bias); np.frexp was ~10x slower
        log2 = (rest.astype(np.float64).view(np.int64) >> 52) - 1023
        rank = np.where(rest == 0, width + 1, width - log2).astype(np.uint8)
        # the largest rank per register: a scatter-max (numpy >= 2's ufunc.at is a tight loop, ~2 ns
        # a hash; the bincount of (index, rank) pairs it replaces cost ~10x more from 30k hashes on)
        reg = np.zeros(m, dtype=np.uint8)
        np.maximum.at(reg, idx, rank)
        return cls(reg)

    def merge(self, other: "HLL") -> "HLL":
        return HLL(np.maximum(self.registers, other.registers))

    def estimate(self) -> float:
        """The distinct count estimate (with the linear-counting correction for small counts)."""
        m = self.registers.size
        alpha = 0.7213 / (1 + 1.079 / m)
        est = alpha * m * m / float(np.sum(np.ldexp(1.0, -self.registers.astype(np.int64))))
        zeros = int(np.count_nonzero(self.registers == 0))
        if est <= 2.5 * m and zeros:
            est = m * math.log(m / zeros)
        return float(est)


@dataclass
class Frequent:
    """Misra-Gries counters: ``keys`` (host values) with lower-bound ``counts``, the number of
    values summarized ``n`` and the largest undercount ``error``."""

    keys: np.ndarray
    counts: np.ndarray
    n: int
    error: int = 0

    @classmethod
    def empty(cls) -> "Frequent":
        return cls(np.array([], dtype=object), np.array([], dtype=np.int64), 0, 0)

    @classmethod
    def of_values(cls, values: np.ndarray, capacity: int = FREQ_CAPACITY) -> "Frequent":
        if values.size == 0:
            return cls.empty()
        vc = pd.Series(values, copy=False).value_counts(sort=False, dropna=True)
        return cls(vc.index.to_numpy(), vc.to_numpy().astype(np.int64), int(values.size))._trim(capacity)

    @classmethod
    def of_counts(cls, keys: np.ndarray, counts: np.ndarray, n: int, capacity: int = FREQ_CAPACITY) -> "Frequent":
        """The summary of exact value counts (``keys`` distinct)."""
        return cls(keys, counts, int(n))._trim(capacity)

    def _trim(self, capacity: int) -> "Frequent":
        if self.keys.size <= capacity:
            return self
        # Misra-Gries reduction: subtract the (capacity+1)-th largest count from every counter
        cut = np.partition(self.counts, self.counts.size - capacity - 1)[self.counts.size - capacity - 1]
        keep = self.counts > cut
        return Frequent(self.keys[keep], self.counts[keep] - cut, self.n, self.error + int(cut))

    @staticmethod
    def merge(parts: Sequence["Frequent"], capacity: int = FREQ_CAPACITY) -> "Frequent":
        live = [p for p in parts if p.n]
        if not live:
            return Frequent.empty()
        if len(live) == 1:
            return live[0]
        mixed = _mixed(live)
        keys = np.concatenate([_as_object(p.keys) if mixed else p.keys for p in live])
        counts = np.concatenate([p.counts for p in live])
        n, error = sum(p.n for p in live), sum(p.error for p in live)
        if keys.dtype.kind in "iub":  # one int / bool dtype: a sort and a scatter-add (pandas' groupby cost ~20x)
            uniq, inv = np.unique(keys, return_inverse=True)
            summed = np.zeros(uniq.size, dtype=np.int64)
            np.add.at(summed, inv, counts)
            return Frequent(uniq, summed, n, error)._trim(capacity)
        grouped = pd.Series(counts).groupby(keys, sort=False).sum()
        out = Frequent(grouped.index.to_numpy(), grouped.to_numpy().astype(np.int64), n, error)
        return out._trim(capacity)

    def top(self, k: int) -> List[tuple]:
        """The ``k`` largest ``(value, count)`` (ties by value order, for stable output)."""
        if self.keys.size == 0:
            return []
        if self.keys.dtype.kind in "iub":  # numbers: one lexsort, Python scalars from tolist (the
            # per-value conversion cost ~10 ms a profile of 40 id columns)
            order = np.lexsort((self.keys, -self.counts))[:k]
            return list(zip(self.keys[order].tolist(), self.counts[order].tolist()))
        try:  # value order among equal counts (keys of one comparable type)
            by_value = np.argsort(self.keys, kind="stable")
        except TypeError:  # (mixed types: first-seen order)
            by_value = np.arange(self.counts.size)
        rank = np.empty(self.counts.size, dtype=np.int64)
        rank[by_value] = np.arange(self.counts.size)
        order = np.lexsort((rank, -self.counts))[:k]
        return [(_plain(self.keys[i]), int(self.counts[i])) for i in order]


def _mixed(parts: Sequence[Frequent]) -> bool:
    return len({p.keys.dtype for p in parts}) > 1


def _as_object(a: np.ndarray) -> np.ndarray:
    return a.astype(object)


def _plain(v: Any) -> Any:
    """A JSON-able python value of a numpy scalar."""
    if isinstance(v, np.generic):
        return v.item()
    return v


def kll_of(values: Optional[np.ndarray]) -> bytes:
    """The serialized KLL sketch of finite float64 ``values`` (empty sketch for None)."""
    sk = datasketches().kll_doubles_sketch(KLL_K)
    if values is not None and values.size:
        x = np.ascontiguousarray(values, dtype=np.float64)
        if not x.flags.writeable:  # (DataSketches' binding refuses read-only arrays: Arrow's zero-copy views)
            x = x.copy()
        sk.update(x)
    return sk.serialize()


def kll_of_sorted(s: np.ndarray, every: int = 1) -> bytes:
    """The serialized KLL sketch of every ``every``-th value of the *sorted* finite values ``s``:
    the middle value of each run of ``every`` (positions ``(every - 1) // 2 + j * every``:
    :func:`~tabprep.backend.reductions.pick_positions`), so
    that each kept value stands for the ``every`` values around it. Counted that way (each item
    weighing ``every``), the number of values ``<= x`` is off by at most :func:`thinning_slack`
    of ``every`` for any ``x`` (and so is the total), so normalized ranks, quantiles and CDFs of
    a merge of such chunks, all thinned with the same ``every``, stay unbiased up to that slack
    per chunk. ``every == 1``: :func:`kll_of` of ``s`` (the same bytes). A KLL update holds the
    GIL and costs ~20 ns a value, the bulk of a profile's host time: thinning cuts it ``every``-fold."""
    r = pick_positions(s.size, every)  # (the positions the device path gathers too)
    return kll_of(s if r.step == 1 else s[r.start::r.step])


def thinning_slack(every: int) -> int:
    """The largest error, in values, of the count of values ``<= x`` (any ``x``) that a chunk
    thinned by :func:`kll_of_sorted` with factor ``every`` gives (kept items times ``every``):
    ``ceil((every - 1) / 2)``, ``every // 2`` (0 for ``every == 1``)."""
    return int(every) // 2


def thinning_rank_error(slack: int, values: int) -> float:
    """Bound of the normalized rank error that thinning adds to a KLL sketch merged from chunks
    of ``values`` values in all whose slacks (:func:`thinning_slack`) sum to ``slack``: the rank
    ``(c + e1) / (n + e2)`` with ``|e1|, |e2| <= slack`` is within ``2 slack / (n - slack)`` of
    ``c / n`` (1.0 when that bound says nothing). With chunks of ``m`` values or more, at most
    about ``every / m``."""
    if slack <= 0:
        return 0.0
    if values <= slack:
        return 1.0
    return min(1.0, 2.0 * slack / (values - slack))


def kll_merge(blobs: Sequence[bytes]) -> bytes:
    ds = datasketches()
    out = ds.kll_doubles_sketch(KLL_K)
    for b in blobs:
        sk = ds.kll_doubles_sketch.deserialize(b)
        if not sk.is_empty():
            out.merge(sk)
    return out.serialize()


def kll_load(blob: bytes) -> Any:
    return datasketches().kll_doubles_sketch.deserialize(blob)


#: the most KLL thinning factor :func:`kll_every_for` chooses: past 16 the KLL's share of the
#: sketches' time is small against the sample's sort, and the measured rank error starts to grow
KLL_EVERY_MAX = 16
#: fewest values the KLL sketches of a column get in a pass, thinned (:func:`kll_every_for`):
#: still ~14x the ~600 values a k=200 sketch retains
KLL_THINNED_MIN = 1 << 13


def kll_every_for(sampled_rows: int) -> int:
    """The KLL thinning factor of a pass whose sketches see about ``sampled_rows`` rows in all
    (the pass's sample size: one global rule, never a partition's own): the largest power of two
    ``f <= KLL_EVERY_MAX`` (16) that leaves the sketches at least ``KLL_THINNED_MIN`` (8,192)
    values; 1 below 16,384 rows. 16 at ``tp.profile``'s default 1M-row sample, 4 in a fit's
    50k-row one. The thinning's rank error is at most ``2 S / (n - S)`` (``S``: ``f // 2`` per
    sketched chunk, ``n``: the values sketched; ``quantile_thinning_error`` in profile.json);
    a numeric column's chunks hold more than 32,768 values but for the last one merged
    (:data:`tabprep.stats.profile.PENDING_MAX`), so it stays under about ``f / 32768 + 2 f / n``:
    7.3e-4 at worst, 1.3e-4 at a 1M-row sample in 8 partitions, against the KLL sketch's own 1.3%."""
    f = 1
    while f * 2 <= KLL_EVERY_MAX and sampled_rows // (f * 2) >= KLL_THINNED_MIN:
        f *= 2
    return f
