"""Vocabularies at scale: per-partition value counts, a tree of merges, a finalize, a lookup.

Categorify's statistics are the value counts of a column (or of a group of columns), computed
in the workflow's one streaming pass: :func:`partial_counts` per partition,
:func:`combine_counts` as a tree (fan-in ``SPLIT_EVERY`` = 8), :func:`finalize_vocab` once.

Two layouts of :class:`Counts`:

* **sorted arrays** (integer, bool and nullable-integer columns, values widened to int64): two
  flat arrays, the distinct values in ascending order and their counts (numpy on the CPU,
  cupy on the GPU). A partial is :func:`tabprep.backend.int_counts` (a sort and run lengths);
  a combine is :func:`tabprep.backend.merge_counts` (on the CPU: concatenate the sorted runs,
  a stable sort merges them in ``O(n log k)``, a cumulative sum adds the counts of equal
  neighbours); the finalize is :func:`tabprep.backend.count_order`. No hash table, no Python
  objects: 16 bytes per distinct value.
* **series** (strings, floats, anything else): a pandas / cuDF series of counts indexed by
  value (``value_counts``), merged with ``concat`` + ``groupby().sum()``.

Memory model, for ``D`` distinct values in the column, ``d`` distinct values in one partition
and ``P`` partitions (int64 column; strings add the bytes of their values):

* partial: the partition itself plus ``16 d`` bytes of counts, plus the sort's temporaries
  (about ``16 x rows`` bytes); held until its combine task runs;
* combine: up to 8 partials in, one merged run out; the task's peak is about
  ``40 x (sum of its inputs' lengths)`` bytes (inputs, one sort permutation, the sorted copy,
  the output), at most ``40 x 8 x min(D, partial length)``: bounded by the fan-in, not by ``P``;
* finalize: the merged counts (``16 D``) and one stable sort by descending count (ties by
  ascending value): about ``40 D`` bytes at the peak. For ``D = 20M`` that is ~0.8 GB; the
  learned vocabulary itself is ``16 D`` bytes (values + frequencies), written by
  ``Categorify.save_state`` as parquet parts of at most :data:`PART_ROWS` rows each;
* transform, CPU: a hash table (``pandas.Index`` of the vocabulary, about ``32 D`` bytes, built
  once per vocabulary and shared by all partition tasks); one O(1) probe per value.
* transform, GPU: a :class:`SortedVocab` (the vocabulary sorted by value, ``16 D`` bytes, built
  once per vocabulary) searched with ``searchsorted``; each partition's values are sorted first
  so the binary searches walk the vocabulary in order. Memory per partition task is a few
  arrays of the partition's length.

GPU: the partial, the combine and the finalize are libcudf's precompiled sorts and group-bys
(:mod:`tabprep.backend.gpu`), not CuPy kernels: a fresh GPU worker compiles nothing for a fit.
With ``on_host=True`` each partial is copied to host memory right after it is computed, so the
combine and finalize run on the CPU and device memory only ever holds one partition and its counts.

The other layout (strings) needs a hash table in the lookup (``pandas.Index``) and Python
string objects on the CPU; it is bounded the same way but with a larger constant.
"""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

import numpy as np

from .. import backend
from .combo_order import combo_order

#: most rows of one parquet part of a saved vocabulary (Categorify.save_state)
PART_ROWS = 1 << 22


class Counts:
    """Value counts of one column (or group of columns), excluding nulls, plus the null count.

    ``keys`` is None for the series layout (``counts`` is then a series indexed by value);
    otherwise ``keys`` (ascending distinct int64 values) and ``counts`` are flat arrays.
    ``unsigned``: the keys are uint64 values in their order-keeping int64 form (:func:`unsigned_keys`),
    so that sorts, merges and ties follow the unsigned values. ``combo``: for the combined keys of
    a column group (strings, ``Categorify(encode_type="combo")``), how each part orders
    (:func:`tabprep.ops._combo.part_kind`), so that ties follow the tuple of values; None otherwise.
    """

    __slots__ = ("keys", "counts", "nulls", "unsigned", "combo")

    def __init__(self, counts: Any, nulls: int, keys: Any = None, unsigned: bool = False,
                 combo: Optional[Tuple[str, ...]] = None) -> None:
        self.keys = keys
        self.counts = counts
        self.nulls = int(nulls)
        self.unsigned = bool(unsigned)
        self.combo = combo

    @property
    def sorted_layout(self) -> bool:
        return self.keys is not None

    def __len__(self) -> int:
        return len(self.counts)

    def __reduce__(self):
        # pickled only to travel (dask.distributed moves a combined piece to its final task's
        # worker, or spills it): the sorted layout's int64 arrays go narrowed (issue #34)
        if self.keys is None:
            return (Counts, (self.counts, self.nulls, self.keys, False, self.combo))
        return (_counts_from, (*narrow_ints(self.counts), self.nulls, *narrow_ints(self.keys), self.unsigned))


#: integer arrays at least this long travel in the narrowest integer dtype holding their values
#: (:func:`narrow_ints`); shorter ones are not worth the pass over them
NARROW_MIN = 1 << 12

#: the integer dtypes an array may travel in, narrowest first
_NARROW_DTYPES = tuple(np.dtype(d) for d in ("uint8", "int8", "uint16", "int16", "uint32", "int32"))


def narrow_ints(arr: Any) -> Tuple[Any, Optional[str]]:
    """``(array, dtype)``: a 64-bit integer array (numpy or cupy) of at least :data:`NARROW_MIN`
    items as the narrowest integer dtype holding its values, with its own dtype to widen it back
    to (:func:`widen_ints`); anything else as it is, with None. For the bytes that move between
    processes: a vocabulary's counts are mostly small numbers and its values often fit 32 bits."""
    dtype = getattr(arr, "dtype", None)
    if dtype is None or dtype.kind not in "iu" or dtype.itemsize != 8 or getattr(arr, "size", 0) < NARROW_MIN:
        return arr, None
    lo, hi = int(arr.min()), int(arr.max())
    for small in _NARROW_DTYPES:
        info = np.iinfo(small)
        if info.min <= lo and hi <= info.max:
            return arr.astype(small), dtype.str
    return arr, None


def widen_ints(arr: Any, dtype: Optional[str]) -> Any:
    """The array :func:`narrow_ints` narrowed, as ``dtype`` again (a new array); ``arr`` itself when
    it was not narrowed (``dtype`` None)."""
    return arr if dtype is None else arr.astype(dtype)


def _counts_from(counts: Any, counts_dtype: Optional[str], nulls: int, keys: Any, keys_dtype: Optional[str],
                 unsigned: bool = False) -> Counts:
    return Counts(widen_ints(counts, counts_dtype), nulls, widen_ints(keys, keys_dtype), unsigned)


#: the int64 sign bit: ``x ^ SIGN`` maps uint64 values (as wrapped int64) to int64 in the same order
SIGN = np.int64(-(2 ** 63))


def is_uint64(series: Any) -> bool:
    """True for a uint64 column (numpy / cuDF ``uint64``, pandas ``UInt64``, a host column of uint64
    values): the one integer dtype whose values (2**63 and up) int64 cannot hold in order."""
    dtype = getattr(series, "dtype", None)
    if dtype is None:
        dtype = getattr(getattr(series, "values", None), "dtype", None)
    return str(dtype) in ("uint64", "UInt64")


def unsigned_keys(keys: Any, counts: Any) -> Tuple[Any, Any]:
    """Ascending int64 keys of uint64 values (each the value's int64 bits, as the lookups see it)
    and their counts, as order-keeping int64 keys (``key ^ SIGN``: 0 -> -2**63, 2**64 - 1 ->
    2**63 - 1), still ascending: the values from 2**63 on, negative as int64, sort first as they
    come and last once converted. Numpy or cupy."""
    xp = backend.array_module(keys)
    cut = int(xp.searchsorted(keys, 0))   # the first value below 2**63
    return xp.concatenate([keys[cut:], keys[:cut]]) ^ SIGN, xp.concatenate([counts[cut:], counts[:cut]])


# -- partial ------------------------------------------------------------------------------------
#: int, bool and nullable-int columns (not lists or strings): the sorted-array layout
is_int_like = backend.is_int_like


def partial_counts(series_list: List[Any], on_host: bool = False) -> Counts:
    """Counts of the non-null values of one or more series (list columns count their elements)."""
    parts: List[Counts] = []
    leaves = [backend.list_leaves(s)[0] if backend.is_list_series(s) else s for s in series_list]
    # uint64 keys are counted in their order-keeping int64 form when every column of the vocabulary
    # is uint64 (ties then follow the unsigned values, as NVTabular's sort of the column does)
    unsigned = all(is_uint64(s) for s in leaves)
    for s in leaves:
        if is_int_like(s):
            keys, counts, nulls = backend.int_counts(s)
            if unsigned:
                keys, counts = unsigned_keys(keys, counts)
            parts.append(Counts(counts, nulls, keys, unsigned))
        else:
            counts, nulls = backend.value_counts(s)
            parts.append(Counts(counts, nulls))
    out = parts[0] if len(parts) == 1 else combine_counts(parts)
    if on_host:
        out = to_host(out)
    return out


def to_host(c: Counts) -> Counts:
    """The same counts in host memory (numpy / pandas)."""
    if backend.is_cpu(c.counts):
        return c
    return Counts(backend.to_host(c.counts), c.nulls, None if c.keys is None else backend.to_host(c.keys), c.unsigned,
                  c.combo)


# -- combine ------------------------------------------------------------------------------------
def combine_counts(partials: List[Counts]) -> Counts:
    """Merge several :class:`Counts` (associative, so it runs as a tree)."""
    nulls = sum(p.nulls for p in partials)
    nonempty = [p for p in partials if len(p)]
    combo = next((p.combo for p in partials if p.combo is not None), None)
    if not nonempty:
        return Counts(partials[0].counts, nulls, partials[0].keys, partials[0].unsigned, combo)
    if len(nonempty) == 1:
        p = nonempty[0]
        return Counts(p.counts, nulls, p.keys, p.unsigned, combo)
    if all(p.sorted_layout for p in nonempty):
        if len({p.unsigned for p in nonempty}) > 1:
            raise ValueError("a vocabulary's partitions hold uint64 values in some and signed integers in others "
                             "(the column's type differs between files?): cast the column to one integer type")
        if not backend.same_device(p.keys for p in nonempty):  # some partials were moved to the host: merge there
            nonempty = [to_host(p) for p in nonempty]
        keys, counts = backend.merge_counts([p.keys for p in nonempty], [p.counts for p in nonempty])
        return Counts(counts, nulls, keys, nonempty[0].unsigned)
    return Counts(_sum_series([_as_series(p) for p in nonempty]), nulls, combo=combo)


def _as_series(c: Counts) -> Any:
    if not c.sorted_layout:
        return c.counts
    lib = backend.frame_lib(c.keys)  # pandas for numpy keys, cuDF for cupy ones
    return lib.Series(c.counts, index=lib.Index(c.keys))


def _sum_series(parts: List[Any]) -> Any:
    parts = backend.on_one_backend(parts)
    lib = backend.frame_lib(parts[0])
    merged = lib.concat(parts)
    return merged.groupby(level=0, sort=False).sum()


# -- partitioned finalize -------------------------------------------------------------------------
def split_counts(counts: Counts, shards: int) -> List[Counts]:
    """``counts`` cut into ``shards`` parts by a hash of the value (``murmur3(value) % shards``, the
    same on both backends): every worker sends a value's count to the same part, so part ``j`` of
    all workers, merged, holds the whole count of each of its values. Layout and device kept; the
    nulls go with part 0. Integer values hash as int64 (the sorted layout); the series layout hashes
    its index (strings, floats...). A column must keep one layout on every worker (an integer
    column read as floats in some partitions would hash ``5`` and ``5.0`` apart)."""
    if shards <= 1:
        return [counts]
    if counts.sorted_layout:
        parts = backend.shard_counts(counts.keys, counts.counts, shards)
        return [Counts(c, counts.nulls if j == 0 else 0, k, counts.unsigned) for j, (k, c) in enumerate(parts)]
    series = counts.counts
    if len(series) == 0:
        return [Counts(series, counts.nulls if j == 0 else 0, combo=counts.combo) for j in range(shards)]
    ids = backend.bucket_ids(series.index.to_series(), shards, "int32")  # values have no null
    return [Counts(series[(ids == j).values], counts.nulls if j == 0 else 0, combo=counts.combo) for j in range(shards)]


def reduce_counts(counts: Counts, freq_threshold: int = 0, max_size: Optional[int] = None) -> Counts:
    """One part (:func:`split_counts`, merged over the workers) reduced to what its values can
    contribute to the vocabulary: counts below ``freq_threshold`` dropped and, with ``max_size``
    (None: no limit; 0 keeps none), only its ``max_size`` first values in vocabulary order
    (descending count, ties by ascending value): the vocabulary's first ``max_size`` values are
    among the union of the parts' first ``max_size``. In the layout of ``counts`` (the sorted
    layout on its device, values ascending; the series layout on the host), nulls kept: merged with
    the other parts (disjoint values) and finalized, they give :func:`finalize_vocab` of the unsplit
    counts."""
    if counts.sorted_layout:  # on its device, keys ascending as they are (no sort without max_size)
        keys, freqs = backend.top_counts(counts.keys, counts.counts, freq_threshold, max_size)
        return Counts(freqs, counts.nulls, keys, counts.unsigned)
    values, freqs = finalize_vocab(counts, freq_threshold, max_size or 0)
    if max_size == 0:   # (finalize_vocab's 0 means no limit)
        values, freqs = values[:0], freqs[:0]
    import pandas as pd

    index_dtype = backend.to_host(counts.counts[:0]).index.dtype
    return Counts(pd.Series(freqs, index=pd.Index(values, dtype=index_dtype)), counts.nulls, combo=counts.combo)


# -- finalize -----------------------------------------------------------------------------------
def finalize_vocab(counts: Counts, freq_threshold: int = 0, max_size: int = 0) -> Tuple[Any, np.ndarray]:
    """Vocabulary in id order: descending frequency, ties by ascending value.

    Returns ``(values, frequencies)`` on the host (numpy arrays; int64 values for integer
    columns, objects for strings). Values seen fewer than ``freq_threshold`` times are dropped
    (they become out-of-vocabulary), and at most ``max_size`` values are kept when
    ``max_size > 0``. uint64 vocabularies (``counts.unsigned``) are ordered by the unsigned values
    and returned as their int64 bits (what the lookups compare; ``.view("uint64")`` gives the values).
    """
    if counts.sorted_layout:
        values, freqs = backend.count_order(counts.keys, counts.counts, freq_threshold, max_size)
        return (values ^ SIGN if counts.unsigned else values), freqs
    c = backend.to_host(counts.counts)
    if len(c) == 0:
        # no non-null value: an empty vocabulary of the column's kind (strings -> object)
        try:
            empty_dtype = np.dtype(getattr(c.index, "dtype", "int64"))
        except TypeError:  # pandas extension dtypes (str, Int64...) are not numpy dtypes
            empty_dtype = np.dtype(object)
        return np.array([], dtype=empty_dtype), np.array([], dtype="int64")
    values = c.index.to_numpy()
    freqs = c.to_numpy(dtype="int64")
    if freq_threshold and freq_threshold > 1:
        keep = freqs >= freq_threshold
        values, freqs = values[keep], freqs[keep]
    # sort by value first, then a stable sort by -count: ties stay in ascending value order (a
    # column group's combined keys: the order of the tuples of values, not of the key strings)
    order = _value_order(values, counts.combo)
    values, freqs = values[order], freqs[order]
    order = np.argsort(-freqs, kind="stable")
    values, freqs = values[order], freqs[order]
    if max_size and max_size > 0:
        values, freqs = values[:max_size], freqs[:max_size]
    return values, freqs


def _value_order(values: np.ndarray, combo: Optional[Tuple[str, ...]]) -> np.ndarray:
    """The stable ascending order of a vocabulary's distinct values: the values' own, or for the
    combined keys of a column group the order of their tuples (:func:`~tabprep.stats.combo_order.combo_order`)."""
    if combo is None:
        return np.argsort(values, kind="stable")
    return combo_order(values, combo)


# -- lookup ---------------------------------------------------------------------------------------
#: an integer vocabulary sorted by value (the GPU's lookup structure; numpy or cupy)
SortedVocab = backend.SortedVocab


def vocab_index(values: Any, like: Any) -> Any:
    """Lookup structure of a vocabulary (host array in id order) for :func:`index_of` on ``like``'s
    backend: a hash table (``pandas.Index``) on the CPU, :class:`SortedVocab` for integer
    vocabularies on the GPU (see :func:`tabprep.backend.vocab_lookup`)."""
    return backend.vocab_lookup(values, like)


def index_of(series: Any, index: Any, data: Optional[Tuple[Any, Any]] = None) -> Any:
    """Position of each value of ``series`` in the vocabulary (``vocab_index``), -1 when absent or null.

    ``data``: ``backend.int_data(series)`` when the caller has it already (int columns).
    """
    return backend.index_of(series, index, data=data)
