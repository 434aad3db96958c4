"""Mergeable per-column data profiles: a partial per partition, an associative combine, a
finalize to the JSON-able summary written as ``profile.json`` (:mod:`tabprep.stats.profile_json`;
:mod:`tabprep.quality` writes it).

A partition (pandas or cuDF frame, or the Arrow table of the CPU parquet path) is turned into
an Arrow table through the backend registry (``backend.frame_to_arrow``; cuDF's own Arrow
export on the GPU) and summarized on the host, per column:

* ``rows``, ``nulls`` (null or NaN: the project's null convention), ``nan`` (NaN values, where
  the storage tells them from nulls: Arrow/parquet/cuDF), ``inf`` (+inf and -inf);
* numbers (ints, floats; list leaves): exact count, min, max, mean, std of the finite values
  (:mod:`tabprep.stats.moments`, merged exactly) and a KLL sketch of them (quantiles and histogram);
* everything but floats: Misra-Gries frequent values (top-k with counts, long-tail share);
* everything: a HyperLogLog distinct count over value hashes;
* list columns: the list-length summary (as a numeric column) and the summary of their elements.

``sample_every`` (an int >= 1, default 1): the sketches (KLL quantiles, frequent values, HLL
distinct count, OOV) see every ``sample_every``-th row of each partition (counts scaled back;
the distinct count is then the sample's, a lower bound), so ``Workflow.fit`` can record a
profile for a small fraction of its time; rows, nulls, NaN/inf, min, max, mean and std always
see every value.

``kll_every`` (an int >= 1, default 1; one value for every partition of a pass): the KLL sketch
of a chunk of sampled values (a partition's, or a merged sample's) gets every ``kll_every``-th of
them once sorted, the middle one of each run (:func:`~tabprep.stats.sketches.kll_of_sorted`), so
the KLL updates, the bulk of the sketches' host time, cost ``kll_every`` times less. Normalized
ranks, quantiles, histograms and drift's masses stay unbiased: thinning adds a rank error of at
most ``2 S / (n - S)`` (``S``: ``kll_every // 2`` summed over the chunks sketched, ``n``: the
values sketched), about ``kll_every / m`` with chunks of ``m`` values or more, on top of the KLL
sketch's own; ``profile.json`` records both (``kll_every``, ``quantile_thinning_error``). Counts
(histogram counts, ``count``, ``numeric_count``) come from the exact part, never from the KLL's
``n``. Partials thinned with different factors are never merged (a ``ValueError``).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import backend
from .._util import whole_number
from ..backend.reductions import profile_sample, sorted_sample, sorted_samples
from .moments import MinMax, Moments, combine_minmax, combine_moments
from .profile_json import (FREQ_KEPT, HIST_BINS, PROFILE_VERSION, QUANTILES, TOP_K,  # noqa: F401 (re-exported)
                           finalize_column)
from .profile_json import finalize_profile as _finalize_profile
from .profile_numeric import (Chunk, _chunks, _exact_moments, _finite, _host_moments, _host_type,  # noqa: F401
                              _host_values, _host_values_owned)
from .sketches import HLL, Frequent, hash64, kll_merge, kll_of, kll_of_sorted, thinning_slack
from .sketches import KLL_EVERY_MAX, KLL_THINNED_MIN, kll_every_for  # noqa: F401 (re-exported)



def kind_of(t: pa.DataType) -> str:
    """The profile kind of an Arrow type: int, float, bool, string, list, other."""
    if pa.types.is_dictionary(t):
        return kind_of(t.value_type)
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "float"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t):
        return "string"
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return "list"
    return "other"


def as_table(df: Any, columns: Sequence[str]) -> pa.Table:
    """The columns ``columns`` of a partition as an Arrow table (a no-copy select for a table)."""
    if isinstance(df, pa.Table):
        return df.select(list(columns))
    return backend.frame_to_arrow(df[list(columns)])


@dataclass
class ColumnPartial:
    """The mergeable summary of one column over some rows."""

    dtype: str
    kind: str
    rows: int
    nulls: int
    nan: int
    inf: int
    moments: Optional[Moments]
    minmax: Optional[MinMax]
    kll: Optional[bytes]
    hll: HLL
    freq: Optional[Frequent]
    oov: Optional[int]
    sample_every: int
    lengths: Optional["ColumnPartial"] = None
    values: Optional["ColumnPartial"] = None
    #: an id column whose value counts the fit computes exactly (a Categorify's): no sketch here;
    #: ``Workflow.fit`` adds its frequent values and distinct count from them (``counted_fields``)
    counted: bool = False
    #: sampled values (finite, nulls dropped) not yet in the sketches (``kll``, ``hll``, ``freq``):
    #: a small sample is kept as it is and sketched once, merged (:func:`_flush`), instead of each
    #: partition sorting, hashing and sketching its few values (numeric columns; see ``PENDING_MAX``)
    pending: Optional[np.ndarray] = None
    #: the KLL thinning factor (see the module docstring): the sketch holds every ``kll_every``-th
    #: sorted value of each chunk it was built from; one factor for every partial of a pass
    kll_every: int = 1
    #: the thinning's largest count error summed over the chunks in ``kll``
    #: (:func:`~tabprep.stats.sketches.thinning_slack` each) and the values those chunks held
    kll_slack: int = 0
    kll_values: int = 0
    #: a timestamp / duration / date column's numeric summary: the partial of its values as int64
    #: microseconds (since 1970-01-01 UTC for timestamps; :func:`time_us`), days for dates
    #: (since 1970-01-01; :func:`time_numbers`)
    numeric: Optional["ColumnPartial"] = None


def counted_partial(t: pa.DataType, rows: int, nulls: int) -> ColumnPartial:
    """The partial of an int id column of ``rows`` rows, ``nulls`` of them null, whose value counts
    the fit computes exactly (:attr:`ColumnPartial.counted`): nothing to sketch or sort here."""
    return ColumnPartial(str(t), "category", rows, nulls, 0, 0, None, None, None, HLL.empty(), None, None, 1,
                         counted=True)


def countable(t: pa.DataType) -> bool:
    """An Arrow type whose values a Categorify counts as they are (ints Categorify widens to int64
    without changing them)."""
    return pa.types.is_integer(t) and t != pa.uint64()


def column_partial(col: Any, sample_every: int = 1, vocab: Any = None, categorical: bool = False,
                   sample: Any = None, exact: bool = True, kll_every: int = 1) -> ColumnPartial:
    """The partial of one Arrow column (Array or ChunkedArray). ``vocab``: a ``pandas.Index`` of
    the fitted vocabulary; the partial then counts the non-null values outside it (OOV).
    ``categorical``: an int column of ids (no moments, quantiles or histogram: only counts).

    Over every value, with Arrow's compute kernels: rows, nulls, NaN, inf, min, max, mean, M2.
    Over ``sample`` (every ``sample_every``-th row of the partition; taken here when None): the
    KLL quantile sketch, the value counts (frequent values, OOV; scaled by ``sample_every``) and
    the distinct values (HLL: a lower bound of the distinct count when sampled).

    ``exact=False``: the sketches only (``col`` is then the sample itself, ``sample_every`` 1):
    no NaN/inf counts, moments or extrema (``nan``, ``inf`` 0, ``moments``, ``minmax`` None;
    ``rows``, ``nulls`` the sample's), for a caller that has the exact part from elsewhere
    (:func:`partial_with_exact`); the sketches still see only the finite values.

    ``kll_every``: the KLL sketch's thinning factor (see the module docstring; 1: every sampled
    value)."""
    kll_every = _check_every(kll_every)
    t = col.type
    kind = kind_of(t)
    if categorical and kind == "int":
        kind = "category"
    if kind in ("int", "float", "category") and _host_type(t) is not None:  # (chunks as they are)
        return _numeric_partial(col, t, kind, sample_every, vocab, sample, exact=exact, kll_every=kll_every)
    col = _array(col)
    if pa.types.is_dictionary(t):
        col, t = col.dictionary_decode(), t.value_type
        kind = "category" if categorical and kind == "int" else kind
    if sample_every == 1:
        sample = col
    elif sample is None:
        sample = col.take(pa.array(np.arange(0, len(col), sample_every)))
    else:
        sample = _array(sample)
    if pa.types.is_dictionary(sample.type):
        sample = sample.dictionary_decode()
    rows = len(col)
    if kind == "list":
        lengths = pc.list_value_length(col).drop_null().cast(pa.int64())
        s_lengths = pc.list_value_length(sample).drop_null().cast(pa.int64())
        lp = column_partial(lengths, sample_every, sample=s_lengths, exact=exact, kll_every=kll_every)
        vp = column_partial(pc.list_flatten(col), sample_every, vocab, categorical, sample=pc.list_flatten(sample),
                            exact=exact, kll_every=kll_every)
        return ColumnPartial(str(t), kind, rows, col.null_count, 0, 0, None, None, None, HLL.empty(), None,
                             vp.oov, sample_every, lengths=lp, values=vp, kll_every=kll_every)
    nulls, nan, inf = col.null_count, 0, 0
    moments = minmax = kll = freq = None
    if kind == "float" and not exact:  # the sketches' values: the sample's finite ones
        finite = pc.is_finite(sample)
        if int(pc.sum(finite).as_py() or 0) < len(sample) - sample.null_count:
            sample = pc.filter(sample, finite)
    elif kind == "float":
        nan = int(pc.sum(pc.is_nan(col)).as_py() or 0)
        finite = pc.is_finite(col)
        inf = rows - nulls - nan - int(pc.sum(finite).as_py() or 0)
        nulls += nan
        if nan or inf:
            col = pc.filter(col, finite)  # the finite values (nulls dropped too)
            sample = col if sample_every == 1 else pc.filter(sample, pc.is_finite(sample))
    if kind in ("int", "float") and exact:
        moments, minmax = _exact_moments(col)
    valid = sample.drop_null() if sample.null_count else sample
    slack = nvals = 0
    if kind in ("int", "float"):
        v = valid.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
        # (thinned: the values sorted first, as the numeric path's are; a copy, Arrow's may be read-only)
        kll = kll_of(v) if kll_every == 1 else kll_of_sorted(np.sort(v), kll_every)
        slack, nvals = (thinning_slack(kll_every) if v.size else 0), int(v.size)
    numeric = None
    if kind == "other" and is_time(t):  # (quantiles, histogram, moments of its microseconds / days)
        numeric = column_partial(time_numbers(col), sample_every,
                                 sample=None if sample is col else time_numbers(sample), exact=exact, kll_every=kll_every)
    if kind == "other":
        valid = pa.array([repr(v) for v in valid.to_pylist()], type=pa.string())
    # distinct values (with their counts, but for floats) from Arrow's hash kernels; the HLL hashes
    # only the partition's distinct values (a duplicate never changes a register)
    if kind == "float":
        uniq = pc.unique(valid).to_numpy(zero_copy_only=False)
        counts = None
    else:
        vc = pc.value_counts(valid)
        uniq = vc.field("values").to_numpy(zero_copy_only=False)
        counts = vc.field("counts").to_numpy().astype(np.int64)
        freq = _scaled(Frequent.of_counts(uniq, counts, len(valid)), sample_every)
    hll = HLL.of_hashes(hash64(uniq))
    oov = None
    if vocab is not None:
        if counts is not None:
            oov = int(counts[vocab.get_indexer(uniq) < 0].sum()) if len(uniq) else 0
        else:
            oov = int(np.count_nonzero(vocab.get_indexer(valid.to_numpy(zero_copy_only=False)) < 0))
        oov *= sample_every
    return ColumnPartial(str(t), kind, rows, nulls, nan, inf, moments, minmax, kll, hll, freq, oov, sample_every,
                         kll_every=kll_every, kll_slack=slack, kll_values=nvals, numeric=numeric)


def is_time(t: pa.DataType) -> bool:
    """Whether ``t`` is a timestamp (naive or tz-aware, any unit), a duration or a date (date32,
    date64) type: the types whose profile gets a numeric summary (:func:`time_numbers`)."""
    return pa.types.is_timestamp(t) or pa.types.is_duration(t) or pa.types.is_date(t)


def time_numbers(col: Any) -> Any:
    """A time column's values as the int64 numbers its profile summarizes, nulls kept: a date
    column's days since 1970-01-01 (``profile_json.DATE_UNIT``: date32's own numbers; a date64's
    milliseconds as pyarrow casts them to date32, whole days), else :func:`time_us`."""
    if pa.types.is_date(col.type):
        days = col if pa.types.is_date32(col.type) else pc.cast(col, pa.date32(), safe=False)
        return pc.cast(pc.cast(days, pa.int32()), pa.int64())
    return time_us(col)



def time_us(col: Any) -> Any:
    """A timestamp / duration Arrow array's values as int64 microseconds (since 1970-01-01 UTC for
    a timestamp, tz-aware or not; nanoseconds truncated), nulls (NaT) kept."""
    t = col.type
    us = pa.timestamp("us", t.tz) if pa.types.is_timestamp(t) else pa.duration("us")
    if t.unit != "us":
        col = pc.cast(col, us, safe=False)
    return pc.cast(col, pa.int64())


def _check_every(value: Any, name: str = "kll_every", one: str = "no thinning of the KLL sketches") -> int:
    f = whole_number(value, 1)
    if f is None:   # (sample_every=2.5 sampled every 2nd row and 0 or -3 every row, silently)
        raise ValueError(f"{name} must be an int >= 1 (1: {one}), got {value!r}")
    return f


def _numeric_partial(col: Any, t: pa.DataType, kind: str, sample_every: int, vocab: Any,
                     sample: Optional[Any], chunks: Optional[List[Chunk]] = None, exact: bool = True,
                     kll_every: int = 1) -> ColumnPartial:
    """:func:`column_partial` of a primitive int or float column (``kind`` int, float or category),
    with numpy on views of Arrow's buffers: the sample is a strided view of the values (or the
    given ``sample``), sorted once; the sorted run lengths are its value counts (frequent values,
    OOV), their distinct values feed the HLL, and the KLL sketch gets the sorted values (its
    compactions sort less; any input order keeps its error bound). Same partial as the Arrow path.
    ``chunks``: the column's :data:`Chunk` list when the caller has it (the fit's host column of an
    int column: one chunk, its values hot in the cache); read from ``col`` otherwise. ``exact``:
    see :func:`column_partial` (False: the sketches only); ``kll_every``: the KLL's thinning factor."""
    rows, nulls, nan, inf = len(col), col.null_count, 0, 0
    if chunks is None:
        chunks = _chunks(col)
    if kind == "float" and exact:
        nan = int(pc.sum(pc.is_nan(col)).as_py() or 0)
        inf = rows - nulls - nan - int(pc.sum(pc.is_finite(col)).as_py() or 0)
        nulls += nan
    vals, owned = _host_values_owned(chunks, sample_every) if sample is None else _host_values_owned(_chunks(sample), 1)
    if kind == "float" and (nan or inf or not exact):
        vals, owned = _finite(vals, owned)
    # the exact part, given the sample's extremes (values of valid rows: see _valid_extrema); ids: none
    exact_part = (lambda seen: _host_moments(col, nan or inf, chunks, seen)) if exact and kind != "category" else None
    return _sample_partial(t, kind, (rows, nulls, nan, inf), vals, owned, sample_every, vocab, kll_every, exact_part)


def _sample_partial(t: pa.DataType, kind: str, counts: "tuple[int, int, int, int]", vals: Any, owned: bool,
                    sample_every: int, vocab: Any, kll_every: int,
                    exact_part: Optional[Callable[[Any], "tuple[Moments, MinMax]"]] = None,
                    runs: Optional[tuple] = None) -> ColumnPartial:
    """The partial of a numeric column (``kind`` int, float or category, Arrow type ``t``) from its
    ``counts`` (rows, nulls, NaN, inf) and ``vals``, the sample's values without nulls and
    non-finite values: a host numpy array (``owned``: one the caller made, sortable in place), or
    a device array (``backend.profile_sample``), sorted where it lives
    (``backend.sorted_sample``: only the runs and the thinned KLL picks come to the host). A small
    sample (:data:`PENDING_MAX`) is kept unsketched, on the host, in its order. ``exact_part``: ``(Moments,
    MinMax)`` of the whole column given the sample's extremes (None: none); ``runs``: ``sorted_sample(vals,
    ...)`` when the caller has it (``backend.sorted_samples``)."""
    rows, nulls, nan, inf = counts
    moments = minmax = None
    size = len(vals)
    if size <= PENDING_MAX:  # a small sample: sketched later, merged (see _flush)
        if not isinstance(vals, np.ndarray):  # (a device array: its few values copied here)
            vals, owned = backend.to_numpy(vals), True
        if exact_part is not None:
            moments, minmax = exact_part((vals.min(), vals.max()) if vals.size else None)
        # the OOV count here, from the values as they are (the vocabulary is this partition's
        # caller's); the sketches wait, so that a thinned KLL gets few, large chunks
        oov = None if vocab is None else (
            int(np.count_nonzero(vocab.get_indexer(vals) < 0)) if vals.size else 0) * sample_every
        return ColumnPartial(str(t), kind, rows, nulls, nan, inf, moments, minmax, None, _NO_HLL, None, oov,
                             sample_every, pending=np.asarray(vals, _host_type(t)) if owned
                             else np.array(vals, _host_type(t), copy=True),  # (no view of a buffer kept)
                             kll_every=kll_every)
    picks, keys, counts_ = runs or sorted_sample(vals, None if kind == "category" else kll_every, owned=owned)
    if exact_part is not None:
        moments, minmax = exact_part((keys[0], keys[-1]) if keys.size else None)
    kll, hll, freq = _sketches(kind, picks, keys, counts_, size, sample_every)
    oov = None
    if vocab is not None:
        oov = (int(counts_[vocab.get_indexer(keys) < 0].sum()) if keys.size else 0) * sample_every
    slack, nvals = _kll_chunk(kind, size, kll_every)
    return ColumnPartial(str(t), kind, rows, nulls, nan, inf, moments, minmax, kll, hll, freq, oov, sample_every,
                         kll_every=kll_every, kll_slack=slack, kll_values=nvals)


#: most sampled values a numeric column's partial keeps unsketched (:attr:`ColumnPartial.pending`),
#: and most a merge of partials keeps before sketching them (1 MiB of 8-byte values): a fit's
#: profile (50k rows in all) sorts, hashes and sketches nothing per partition. 32,768 (was 16,384):
#: ``tp.profile``'s 25k values a column of a 250k-row partition of 10M rows wait too and 8 partials
#: are sketched once in their merge: 1.60-1.68 s against 1.77-1.86 s (2 cores, 4 alternated runs)
PENDING_MAX = 1 << 15
PENDING_MERGED = 1 << 17
#: the empty HLL of a partial whose values are pending (shared, never written: merges make new arrays)
_NO_HLL = HLL.empty()


def _sketches(kind: str, picks: Optional[np.ndarray], keys: np.ndarray, counts: np.ndarray, size: int, every: int
              ) -> "tuple[Optional[bytes], HLL, Optional[Frequent]]":
    """(KLL, HLL, frequent values) of a column's ``size`` sampled values from their sorted runs
    (``backend.sorted_sample``): ``keys`` / ``counts`` their distinct values and counts (scaled by
    ``every``), ``picks`` the sorted values at the thinned KLL's positions
    (:func:`~tabprep.backend.reductions.pick_positions`, so the KLL gets what
    :func:`~tabprep.stats.sketches.kll_of_sorted` of the sorted sample would: the same bytes)."""
    kll = kll_of(picks) if kind != "category" else None
    freq = _scaled(Frequent.of_counts(keys, counts, size), every) if kind != "float" else None
    return kll, HLL.of_hashes(hash64(keys)), freq


def _kll_chunk(kind: str, size: int, kll_every: int) -> "tuple[int, int]":
    """(:attr:`ColumnPartial.kll_slack`, :attr:`ColumnPartial.kll_values`) of one chunk of
    ``size`` sampled values sketched with the thinning factor ``kll_every``."""
    if kind == "category" or not size:
        return 0, 0
    return thinning_slack(kll_every), int(size)


def _flush(p: ColumnPartial) -> ColumnPartial:
    """``p`` with its pending values put into its sketches (merged with those it has)."""
    if p.pending is None:
        return p
    picks, keys, counts = sorted_sample(p.pending, None if p.kind == "category" else p.kll_every)
    kll, hll, freq = _sketches(p.kind, picks, keys, counts, p.pending.size, p.sample_every)
    slack, nvals = _kll_chunk(p.kind, p.pending.size, p.kll_every)
    return replace(p, pending=None, kll=kll if p.kll is None or kll is None else kll_merge([p.kll, kll]),
                   kll_slack=p.kll_slack + slack, kll_values=p.kll_values + nvals,
                   hll=hll.merge(p.hll), freq=freq if p.freq is None or freq is None else Frequent.merge([p.freq, freq]))


def _array(col: Any) -> Any:
    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return col


def _scaled(f: Frequent, every: int) -> Frequent:
    """Counts of a 1-in-``every`` sample scaled to the whole partition (estimates)."""
    if every == 1:
        return f
    return Frequent(f.keys, f.counts * every, f.n * every, f.error * every)


def _null_typed(p: ColumnPartial) -> bool:
    """Whether ``p`` is the partial of a column of Arrow's ``null`` type (every value null)."""
    return p.dtype == "null" and p.nulls == p.rows


def combine_columns(parts: Sequence[ColumnPartial]) -> ColumnPartial:
    """The partial of the union of the rows of ``parts`` (associative, order-free up to the
    sketches' own merge)."""
    first = parts[0]
    if len(parts) == 1:
        return first
    typed = [p for p in parts if not _null_typed(p)]
    if typed and len(typed) < len(parts):
        # a partition whose column is all null (Arrow ``null`` type: a file of Nones) holds nulls of
        # the other partitions' type: its rows count as nulls of that column, nothing else
        like = typed[0]
        parts = [p if not _null_typed(p) else
                 ColumnPartial(like.dtype, like.kind, p.rows, p.rows, 0, 0, None, None, None, _NO_HLL, None,
                               None if p.oov is None else 0, p.sample_every, kll_every=like.kll_every)
                 for p in parts]
        first = parts[0]
    kinds = {p.kind for p in parts}
    if len(kinds) > 1:
        dtypes = sorted({p.dtype for p in parts})
        raise ValueError(f"a column changes type between partitions ({', '.join(dtypes)}): profile each file on "
                         "its own or cast the column to one type")
    factors = {p.kll_every for p in parts if p.kll is not None or p.pending is not None}
    if len(factors) > 1:  # (an item of one sketch would weigh as much as several of another's)
        raise ValueError(f"cannot merge profile partials whose KLL sketches are thinned by different factors "
                         f"(kll_every {', '.join(map(str, sorted(factors)))}): their items stand for different "
                         "numbers of values; profile every partition of one pass with one kll_every")

    def opt(items: List[Any], fn: Any) -> Any:
        live = [i for i in items if i is not None]
        return fn(live) if live else None

    pending = [p.pending for p in parts if p.pending is not None]
    if len(pending) > 1:  # (an empty partition's values need not share the others' dtype: not concatenated)
        pending = [v for v in pending if v.size] or pending[:1]
    if pending:  # the sampled values wait, merged, while they are few; else they go into the sketches
        merged = np.concatenate(pending) if len(pending) > 1 else pending[0]
        parts = [replace(p, pending=None) for p in parts]
        if merged.size <= PENDING_MERGED:
            pending = merged
        else:
            f = next(iter(factors)) if factors else parts[0].kll_every
            parts[0], pending = _flush(replace(parts[0], pending=merged, kll_every=f)), None
    hll = parts[0].hll
    for p in parts[1:]:
        if p.hll is not _NO_HLL:
            hll = hll.merge(p.hll)
    return ColumnPartial(
        first.dtype, first.kind, sum(p.rows for p in parts), sum(p.nulls for p in parts),
        sum(p.nan for p in parts), sum(p.inf for p in parts),
        opt([p.moments for p in parts], combine_moments), opt([p.minmax for p in parts], combine_minmax),
        opt([p.kll for p in parts], kll_merge), hll, opt([p.freq for p in parts], Frequent.merge),
        opt([p.oov for p in parts], sum), first.sample_every,
        lengths=opt([p.lengths for p in parts], combine_columns), values=opt([p.values for p in parts], combine_columns),
        numeric=opt([p.numeric for p in parts], combine_columns),
        counted=any(p.counted for p in parts),  # (the fit's counts cover every partition: any sketch is moot)
        pending=pending if isinstance(pending, np.ndarray) else None,
        kll_every=factors.pop() if factors else first.kll_every,
        kll_slack=sum(p.kll_slack for p in parts), kll_values=sum(p.kll_values for p in parts))


def partial_table(table: pa.Table, sample_every: int = 1, vocabs: Optional[Dict[str, Any]] = None,
                  categorical: Sequence[str] = (), exact: bool = True, kll_every: int = 1) -> Dict[str, ColumnPartial]:
    """``{column: partial}`` of every column of ``table`` (``categorical``: int id columns;
    ``exact``, ``kll_every``: see :func:`column_partial`)."""
    vocabs = vocabs or {}
    cats = set(categorical)
    # each column's sketches see the same rows: every ``sample_every``-th of the partition (a
    # strided sample: no ordering bias), taken per column (a view of a numeric column's buffer)
    return {name: column_partial(table.column(name), sample_every, vocabs.get(name), name in cats, exact=exact,
                                 kll_every=kll_every)
            for name in table.column_names}


def partial_frame(df: Any, columns: Sequence[str], sample_every: int = 1, vocabs: Optional[Dict[str, Any]] = None,
                  categorical: Sequence[str] = (), kll_every: int = 1) -> Dict[str, ColumnPartial]:
    """:func:`partial_table` of a partition in any form (Arrow table, pandas or cuDF frame).

    Where the partition lives on a device (``backend.profile_exact`` answers), the exact part
    (rows, nulls, NaN, inf, moments, extrema) is computed there, and so is the sorted sample of
    the int and float columns (every ``sample_every``-th row, as on the host): only its distinct
    values, their counts and the thinned KLL picks are copied to the host (the other columns'
    sampled rows are copied); the partial is the one the host computes from the whole partition,
    up to the rounding of the moments' sums.
    ``kll_every``: the KLL sketches' thinning factor (:func:`column_partial`)."""
    if isinstance(df, pa.Table):
        return partial_table(df.select(list(columns)), sample_every, vocabs, categorical, kll_every=kll_every)
    cats = set(categorical)
    numeric = [c for c in columns if c not in cats and getattr(df[c].dtype, "kind", "O") in "iuf"]
    exact = backend.profile_exact(df, list(columns), numeric)
    if not exact:
        return partial_table(as_table(df, columns), sample_every, vocabs, categorical, kll_every=kll_every)
    return partial_with_exact(df, columns, exact, sample_every, vocabs, categorical, kll_every)


def partial_with_exact(df: Any, columns: Sequence[str], exact: Dict[str, Any], sample_every: int = 1,
                       vocabs: Optional[Dict[str, Any]] = None, categorical: Sequence[str] = (),
                       kll_every: int = 1) -> Dict[str, ColumnPartial]:
    """The partials of ``columns`` of the frame ``df``: for a column in ``exact`` (``{column: (rows,
    nulls, nan, inf, moments, minmax)}``, see ``backend.profile_exact``) its sketches from the
    strided sample ``df.iloc[::sample_every]`` and its exact fields from ``exact`` (the sample's
    own NaN/inf counts, moments and extrema are not computed: ``exact=False``); the int and float
    columns' samples taken and sorted where the frame lives when its backend can (``profile_sample`` /
    ``sorted_samples``: the same partial); the others (list columns, ..., and a numeric column whose entry
    lacks moments) from the whole frame. ``kll_every``: the KLL's thinning factor, the same for all."""
    parts: Dict[str, ColumnPartial] = {}
    host = [c for c in columns if c not in exact]
    if host:
        parts.update(partial_table(as_table(df, host), sample_every, vocabs, categorical, kll_every=kll_every))
    dev = [c for c in columns if c in exact]
    if dev:
        vocabs = vocabs or {}
        cats = set(categorical)
        frame = df[dev]
        # int and float columns: the sample taken, cleaned and sorted where the partition lives (None on the host)
        sortable = [c for c in dev if isinstance(frame[c].dtype, np.dtype) and frame[c].dtype.kind in "iuf"]
        on_device = (profile_sample(frame, sortable, sample_every) or {}) if sortable else {}
        sampled: Dict[str, ColumnPartial] = {}
        kinds = {}
        for c in on_device:
            t = pa.from_numpy_dtype(frame[c].dtype)
            kinds[c] = (t, "category" if c in cats and kind_of(t) == "int" else kind_of(t))
        # the samples to sort (a small one is kept unsketched: _sample_partial), all at once
        big = {c: v for c, v in on_device.items() if len(v) > PENDING_MAX}
        runs = sorted_samples(frame, big, {c: None if kinds[c][1] == "category" else kll_every for c in big})
        for c, v in on_device.items():
            sampled[c] = _sample_partial(*kinds[c], (0, 0, 0, 0), v, False, 1, vocabs.get(c), kll_every, runs=runs.get(c))
        rest = [c for c in dev if c not in on_device]
        if rest:  # (the others, or all on the host: the sample copied to Arrow)
            sample = frame if len(rest) == len(dev) else frame[rest]
            sample = sample if sample_every == 1 else sample.iloc[::sample_every]
            # the sketches only: the sample's own NaN/inf counts, moments and extrema would be replaced
            sampled.update(partial_table(as_table(sample, rest), 1, vocabs, categorical, exact=False,
                                         kll_every=kll_every))
        lacking = []
        for c in dev:
            rows, nulls, nan, inf, mom, mm = exact[c]
            p = sampled[c]
            numeric = p.kind in ("int", "float")
            if (numeric and (mom is None or mm is None)) or p.numeric is not None:
                # (a time column's microseconds: their moments and extrema from the whole column here)
                lacking.append(c)  # (no exact moments for a column that has them: the whole column's)
                continue
            parts[c] = replace(
                p, rows=rows, nulls=nulls, nan=nan, inf=inf,
                moments=Moments(*mom) if numeric else None, minmax=MinMax(*mm) if numeric else None,
                freq=None if p.freq is None else _scaled(p.freq, sample_every),
                oov=None if p.oov is None else p.oov * sample_every, sample_every=sample_every)
        if lacking:
            parts.update(partial_table(as_table(df, lacking), sample_every, vocabs, categorical, kll_every=kll_every))
    return {c: parts[c] for c in columns}


def finalize_profile(combined: Dict[str, ColumnPartial], columns: Sequence[str], sample_every: int = 1,
                     kll_every: int = 1) -> Dict[str, Any]:
    """The ``profile.json`` document of merged partials (``profile_json.finalize_profile``), their
    pending sampled values sketched first (``kll_every``: the pass's thinning factor, recorded)."""
    return _finalize_profile({c: _flushed(p) for c, p in combined.items()}, columns, sample_every, kll_every)


def _flushed(p: ColumnPartial) -> ColumnPartial:
    """:func:`_flush` of ``p`` and of its list lengths' and elements' partials."""
    p = _flush(p)
    if p.lengths is not None or p.values is not None or p.numeric is not None:
        p = replace(p, lengths=None if p.lengths is None else _flushed(p.lengths),
                    values=None if p.values is None else _flushed(p.values),
                    numeric=None if p.numeric is None else _flushed(p.numeric))
    return p


def combine_tables(parts: Sequence[Dict[str, ColumnPartial]]) -> Dict[str, ColumnPartial]:
    names: List[str] = []
    for p in parts:
        names += [n for n in p if n not in names]
    out = {}
    for n in names:
        try:
            out[n] = combine_columns([p[n] for p in parts if n in p])
        except ValueError as exc:
            raise ValueError(f"column {n!r}: {exc}") from exc
    return out


# the fit-pass statistic lives in profile_stat.py (this module stays under 600 lines); kept importable here
from .profile_stat import ProfileStat  # noqa: E402,F401
