"""Vocabularies at scale: per-partition value counts, a tree of merges, a finalize.

Memory model (CPU and GPU alike):

* partial: the value counts of one partition's column (at most one entry per distinct
  value of the partition) plus its null count;
* combine: concatenation + group-by-sum of up to ``SPLIT_EVERY`` partials at a time, so a
  combine task holds at most ``SPLIT_EVERY`` x (distinct values per partial) entries;
* finalize: one sort of the merged counts by (descending count, ascending value), then the
  ``freq_threshold`` / ``max_size`` cut.

The merged counts of a column (16 bytes per distinct int64 value, plus the values of
strings) are the one structure that grows with cardinality; a 20M-distinct int64 column
needs ~320 MB for it. On the GPU, counts are moved to host memory for the merge when
``on_host=True`` so device memory is bounded by the partition size.
"""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

import numpy as np
import pandas as pd

from .. import backend


class Counts:
    """Value counts of one column (or group of columns): ``counts`` indexed by value, ``nulls``."""

    __slots__ = ("counts", "nulls")

    def __init__(self, counts: Any, nulls: int) -> None:
        self.counts = counts
        self.nulls = int(nulls)

    def __reduce__(self):
        return (Counts, (self.counts, self.nulls))


def partial_counts(series_list: List[Any], on_host: bool = False) -> Counts:
    """Counts of the non-null values of one or more series (list columns count their elements)."""
    parts = []
    nulls = 0
    for s in series_list:
        if backend.is_list_series(s):
            s, _ = backend.list_leaves(s)
        counts, n = backend.value_counts(s)
        parts.append(counts)
        nulls += n
    counts = parts[0] if len(parts) == 1 else _sum_counts(parts)
    if on_host and backend.is_gpu(counts):
        counts = counts.to_pandas()
    return Counts(counts, nulls)


def combine_counts(partials: List[Counts]) -> Counts:
    """Merge several :class:`Counts` (associative)."""
    nonempty = [p.counts for p in partials if len(p.counts)]
    nulls = sum(p.nulls for p in partials)
    if not nonempty:
        return Counts(partials[0].counts, nulls)
    return Counts(_sum_counts(nonempty), nulls)


def _sum_counts(parts: List[Any]) -> Any:
    if len(parts) == 1:
        return parts[0]
    lib = backend.frame_lib(parts[0])
    if lib is pd and all(p.index.dtype.kind in "iu" for p in parts):
        # int64 values: numpy concatenate + pandas groupby on a plain int index (fast path)
        values = np.concatenate([p.index.to_numpy(dtype="int64") for p in parts])
        counts = np.concatenate([p.to_numpy(dtype="int64") for p in parts])
        return pd.Series(counts).groupby(values, sort=False).sum()
    merged = lib.concat(parts)
    return merged.groupby(level=0, sort=False).sum()


def finalize_vocab(counts: Counts, freq_threshold: int = 0, max_size: int = 0) -> Tuple[Any, np.ndarray]:
    """Vocabulary in id order: descending frequency, ties by ascending value.

    Returns ``(values, frequencies)`` on the host (pandas Index-able array, int64 counts).
    Values seen fewer than ``freq_threshold`` times are dropped (they become out-of-vocabulary),
    and at most ``max_size`` values are kept when ``max_size > 0``.
    """
    c = counts.counts
    if backend.is_gpu(c):
        c = c.to_pandas()
    if len(c) == 0:
        return np.array([], dtype=c.index.dtype if hasattr(c.index, "dtype") else "int64"), np.array([], dtype="int64")
    values = c.index.to_numpy()
    freqs = c.to_numpy(dtype="int64")
    if freq_threshold and freq_threshold > 1:
        keep = freqs >= freq_threshold
        values, freqs = values[keep], freqs[keep]
    # sort by value first, then a stable sort by -count: ties stay in ascending value order
    order = np.argsort(values, kind="stable")
    values, freqs = values[order], freqs[order]
    order = np.argsort(-freqs, kind="stable")
    values, freqs = values[order], freqs[order]
    if max_size and max_size > 0:
        values, freqs = values[:max_size], freqs[:max_size]
    return values, freqs


def vocab_index(values: Any, like: Any) -> Any:
    """Lookup structure of a vocabulary for :func:`tabprep.backend.index_of` on ``like``'s backend."""
    if backend.is_gpu(like):
        import cudf

        return cudf.Series(values)
    return pd.Index(values)
