"""The cuDF implementations of the per-partition reductions (:mod:`tabprep.backend.reductions`):
finite moments and extrema, integer value counts, their merge and their vocabulary order, on
pylibcudf (libcudf's precompiled operations), so a fresh GPU worker compiles no CuPy kernel for a
fit (:mod:`tabprep.backend.gpu_warmup` says why).

Part of :mod:`tabprep.backend.gpu`, which imports it (importing registers these implementations),
so it is loaded lazily too, never by ``import tabprep``.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

import cudf
import cupy
import numpy as np
import pylibcudf as plc

from . import reductions as R
from .dispatch import register_gpu as _register


# ---------------------------------------------------------------------------
# per-partition reductions: libcudf only (no CuPy kernel to compile on a fresh worker)
# ---------------------------------------------------------------------------
_F64 = plc.DataType(plc.TypeId.FLOAT64)
_BOOL8 = plc.DataType(plc.TypeId.BOOL8)
_I64 = plc.DataType(plc.TypeId.INT64)
_U32 = plc.DataType(plc.TypeId.UINT32)
# libcudf's boolean-mask compaction (rows where the mask is true; null counts as false): renamed
# apply_retention_mask in cuDF 26.x, where the old name warns
_retain = getattr(plc.stream_compaction, "apply_retention_mask", None) or plc.stream_compaction.apply_boolean_mask


def _finite_column(series: Any) -> Any:
    """The finite values of ``series`` as a float64 pylibcudf column (nulls, NaN and +-inf dropped,
    as :func:`tabprep.backend.reductions.finite_values` on the host): ``abs(x) < inf``, which is
    false for NaN and null for nulls, then libcudf's boolean-mask compaction.

    pylibcudf straight on the column: cuDF's Series layer (nans_to_nulls, where, a scalar pulled
    back after every reduction) cost about 10 ms per 10M-row column on an H100, almost all of it
    Python and synchronisations (13 columns of 10M rows: 187 ms, against 33 ms here), so
    Normalize's fit paid ~0.1 s per partition whatever the partition's size."""
    if getattr(series.dtype, "kind", None) in ("M", "m"):
        # datetimes / timedeltas: their counts (NaT is null), as on the host; libcudf casts no
        # timestamp to float
        series = series.astype("int64")
    col, finite = _abs_against_inf(_plc_column(series), plc.binaryop.BinaryOperator.LESS)
    return _retain(plc.Table([col]), finite).columns()[0]


def _abs_against_inf(col: Any, op: Any) -> Any:
    """``(col as float64, abs(col) <op> inf)``: the BOOL8 column is null for nulls, false for NaN."""
    if col.type().id() != plc.TypeId.FLOAT64:
        col = plc.unary.cast(col, _F64)
    return col, _abs_compared(col, op)


def _abs_compared(col: Any, op: Any) -> Any:
    """``abs(col) <op> +inf`` of a float pylibcudf column, in its own float type: BOOL8, null for
    nulls (NaN compares false)."""
    absval = plc.unary.unary_operation(col, plc.unary.UnaryOperator.ABS)
    return plc.binaryop.binary_operation(absval, _scalar(float("inf"), col.type()), op, _BOOL8)


_SCALARS: dict = {}


def _scalar(value: Any, dtype: Any) -> Any:
    """A device scalar of ``value`` as libcudf type ``dtype``, made once per device, type and value.

    ``plc.Scalar.from_py`` copies the value from pageable host memory, which first waits for all
    work queued on the legacy default stream: in a loader's transform that includes the other
    preparing thread's parquet decode, so each new scalar stalled the transform on the read. Keyed
    by the current device: a scalar made on one GPU is never handed to a kernel on another. The
    scalars are never written to (libcudf takes them as const inputs)."""
    key = (cupy.cuda.runtime.getDevice(), dtype.id(), type(value), value if value == value else "nan")
    out = _SCALARS.get(key)
    if out is None:
        if len(_SCALARS) > 4096:   # (many bucket counts over a long-lived process)
            _SCALARS.clear()
        out = _SCALARS[key] = plc.Scalar.from_py(value, dtype)
    return out


def _murmur_mod(col: Any, n: int) -> Any:
    """``murmur3_x86_32(col) % n`` as a UINT32 pylibcudf column (libcudf's hash, seed 0: cuDF's
    ``hash_values(method="murmur3")`` and the host's :func:`tabprep.hashing.murmur3_32` of the same
    bytes), for HashBucket's ids and the fit's shards."""
    h = plc.hashing.murmurhash3_x86_32(plc.Table([col]), 0)
    return plc.binaryop.binary_operation(h, _scalar(int(n), _U32), plc.binaryop.BinaryOperator.MOD, _U32)


def _moments_of(col: Any):
    """``(count, mean, m2)`` of a float64 pylibcudf column without nulls (libcudf reductions; the
    mean stays on the device for the deviations)."""
    n = col.size()
    if n == 0:
        return 0, 0.0, 0.0
    mean = plc.reduce.reduce(col, plc.aggregation.mean(), _F64)
    d = plc.binaryop.binary_operation(col, mean, plc.binaryop.BinaryOperator.SUB, _F64)
    sq = plc.binaryop.binary_operation(d, d, plc.binaryop.BinaryOperator.MUL, _F64)
    m2 = plc.reduce.reduce(sq, plc.aggregation.sum(), _F64)
    return n, float(mean.to_py()), float(m2.to_py())


def _minmax_of(col: Any):
    if col.size() == 0:
        return None, None
    lo, hi = plc.reduce.minmax(col)
    return float(lo.to_py()), float(hi.to_py())


@_register(R.finite_moments)
def _finite_moments(series: Any):
    return _moments_of(_finite_column(series))


@_register(R.finite_minmax)
def _finite_minmax(series: Any):
    return _minmax_of(_finite_column(series))


@_register(R.finite_moments_minmax)
def _finite_moments_minmax(series: Any):
    col = _finite_column(series)
    return _moments_of(col), _minmax_of(col)


@_register(R.infinite_count)
def _infinite_count(series: Any) -> int:
    # abs(x) == inf on libcudf, counted by a sum of the booleans (nulls are skipped)
    col = _plc_column(series)
    if col.size() == 0:
        return 0
    _, inf = _abs_against_inf(col, plc.binaryop.BinaryOperator.EQUAL)
    n = plc.reduce.reduce(plc.unary.cast(inf, _I64), plc.aggregation.sum(), _I64).to_py()
    return int(n or 0)


@_register(R.any_true)
def _any_true(values: Any) -> bool:
    if len(values) == 0:
        return False
    # libcudf's reduction on a zero-copy column of the cupy array: no NVRTC compile on a fresh
    # worker, and none of cuDF's Series layer (Categorify's transform asks this once per column)
    return bool(plc.reduce.reduce(_plc_column(values), plc.aggregation.any(), _BOOL8).to_py())


# pylibcudf (libcudf's precompiled sorts and group-bys) straight on columns: cuDF's Python layer
# (value_counts, groupby, sort_values) launches a few CuPy kernels of its own, which a fresh
# worker compiles with NVRTC
def _plc_column(x: Any) -> Any:
    """The pylibcudf column of a cuDF series or a cupy array (zero-copy)."""
    if isinstance(x, cupy.ndarray):
        from_cai = getattr(plc.Column, "from_cuda_array_interface", None)
        if from_cai is not None:
            return from_cai(x)
        x = cudf.Series(x)
    col = x._column
    return col.plc_column if hasattr(col, "plc_column") else col.to_pylibcudf(mode="read")


def _cupy_int64(col: Any) -> Any:
    """An int64 cupy array of a pylibcudf column without nulls."""
    if col.type().id() != plc.TypeId.INT64:
        col = plc.unary.cast(col, plc.DataType(plc.TypeId.INT64))
    return cudf.Series.from_pylibcudf(col).values


def _sorted_group_counts(table: Any, agg: Any) -> tuple:
    """``(keys, aggregate)`` of a table sorted by its first column (nulls last, excluded): libcudf's
    sort-based group-by, which on sorted keys is one pass."""
    key = table.columns()[0]
    gb = plc.groupby.GroupBy(plc.Table([key]), null_handling=plc.types.NullPolicy.EXCLUDE,
                             keys_are_sorted=plc.types.Sorted.YES)
    value = table.columns()[-1]
    keys, results = gb.aggregate([plc.groupby.GroupByRequest(value, [agg])])
    return _cupy_int64(keys.columns()[0]), _cupy_int64(results[0].columns()[0])


@_register(R.int_counts)
def _int_counts(series: Any):
    # libcudf: drop nulls, sort, then a sorted group-by count. 3.7-6.3 ms on 20M int64 on an H100
    # (30 to 1.9M distinct values), against 3.5-3.9 ms for CuPy's unique, which a fresh worker must
    # compile (multi-block scans: seconds of NVRTC on the job's thread), and 11-24 ms for cuDF's
    # value_counts + sort_index (which also launches CuPy kernels). Nulls are dropped first: with
    # 2% nulls among 12.5M values the sorted group-by took 19.5 ms, against 4.4 ms without them
    # (and 5.1 ms for CuPy): the 50M-row Criteo fit took 2.4-3.5 s instead of 1.2 s
    nulls = int(series.null_count)
    col = _plc_column(series)
    if nulls:
        col = plc.stream_compaction.drop_nulls(plc.Table([col]), [0], 1).columns()[0]
    if col.type().id() != plc.TypeId.INT64:
        col = plc.unary.cast(col, plc.DataType(plc.TypeId.INT64))
    srt = plc.sorting.sort(plc.Table([col]), [plc.types.Order.ASCENDING], [plc.types.NullOrder.AFTER])
    keys, counts = _sorted_group_counts(srt, plc.aggregation.count(plc.types.NullPolicy.EXCLUDE))
    return keys, counts, nulls


@_register(R._merge_counts)
def _merge_counts(keys_list: Sequence[Any], counts_list: Sequence[Any]):
    # libcudf: concatenate the runs, sort by key, sorted group-by sum (no CuPy kernel)
    runs = plc.concatenate.concatenate([plc.Table([_plc_column(k), _plc_column(c)])
                                        for k, c in zip(keys_list, counts_list)])
    srt = plc.sorting.sort_by_key(runs, plc.Table([runs.columns()[0]]), [plc.types.Order.ASCENDING],
                                  [plc.types.NullOrder.AFTER])
    return _sorted_group_counts(srt, plc.aggregation.sum())


@_register(R.count_order)
def _count_order(keys: Any, counts: Any, freq_threshold: int = 0, max_size: int = 0):
    # libcudf's stable sort by descending count: keys ascend already, so ties keep ascending value
    tbl = plc.Table([_plc_column(keys), _plc_column(counts)])
    srt = plc.sorting.stable_sort_by_key(tbl, plc.Table([tbl.columns()[1]]), [plc.types.Order.DESCENDING],
                                         [plc.types.NullOrder.AFTER])
    values, freqs = (_cupy_int64(c).get() for c in srt.columns())
    if freq_threshold and freq_threshold > 1:
        keep = freqs >= freq_threshold  # on the host: counts descend, so this is a prefix
        values, freqs = values[keep], freqs[keep]
    if max_size and max_size > 0:
        values, freqs = values[:max_size], freqs[:max_size]
    return values, freqs


@_register(R.shard_counts)
def _shard_counts(keys: Any, counts: Any, shards: int) -> list:
    # libcudf: murmur3 of the int64 keys (the host's murmur3_32 of the same bytes), modulo, then one
    # order-keeping boolean-mask compaction per part: no CuPy kernel for a fresh worker to compile
    if shards <= 1 or len(keys) == 0:
        return [(keys, counts)] + [(keys[:0], counts[:0]) for _ in range(shards - 1)]
    kcol, ccol = _plc_column(keys), _plc_column(counts)
    if kcol.type().id() != plc.TypeId.INT64:
        kcol = plc.unary.cast(kcol, _I64)
    ids = _murmur_mod(kcol, shards)
    table = plc.Table([kcol, ccol])
    out = []
    for j in range(shards):
        mask = plc.binaryop.binary_operation(ids, _scalar(j, _U32), plc.binaryop.BinaryOperator.EQUAL, _BOOL8)
        part = _retain(table, mask).columns()
        out.append((_cupy_int64(part[0]), _cupy_int64(part[1])))
    return out


@_register(R.top_counts)
def _top_counts(keys: Any, counts: Any, freq_threshold: int = 0, max_size: Optional[int] = None):
    # libcudf: the threshold as a boolean-mask compaction; the first max_size by a stable sort on
    # descending count (keys ascend: ties by value), then a sort of those back by key
    table = plc.Table([_plc_column(keys), _plc_column(counts)])
    if freq_threshold and freq_threshold > 1:
        mask = plc.binaryop.binary_operation(table.columns()[1], _scalar(int(freq_threshold), _I64),
                                             plc.binaryop.BinaryOperator.GREATER_EQUAL, _BOOL8)
        table = _retain(table, mask)
    if max_size is not None and table.columns()[0].size() > max_size:
        srt = plc.sorting.stable_sort_by_key(table, plc.Table([table.columns()[1]]), [plc.types.Order.DESCENDING],
                                             [plc.types.NullOrder.AFTER])
        top = plc.copying.slice(srt, [0, int(max_size)])[0]
        table = plc.sorting.sort_by_key(top, plc.Table([top.columns()[0]]), [plc.types.Order.ASCENDING],
                                        [plc.types.NullOrder.AFTER])
    cols = table.columns()
    return _cupy_int64(cols[0]), _cupy_int64(cols[1])


# ---------------------------------------------------------------------------
# the data profile's partial (tabprep.stats.profile): its exact part and its sorted sample
# ---------------------------------------------------------------------------
_I32 = plc.DataType(plc.TypeId.INT32)
_FLOATS = (plc.TypeId.FLOAT32, plc.TypeId.FLOAT64)
_INTS = tuple(getattr(plc.TypeId, t) for t in ("INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32", "UINT64"))


def _finite_bools(col: Any) -> Any:
    """``abs(col) < inf`` of a float pylibcudf column: BOOL8, false for NaN and +-inf, null for nulls."""
    return _abs_compared(col, plc.binaryop.BinaryOperator.LESS)


@_register(R.profile_exact)
def _profile_exact(df: Any, columns: Sequence[str], numeric: Sequence[str]):
    """Rows, nulls (NaN included), NaN, +-inf, moments and extrema of the finite values of each of
    ``columns`` of a cuDF frame, on the device (``numeric``: those that get moments); list and other
    nested columns, datetimes, decimals and categoricals are left to the host (absent from the result).

    Per numeric column, libcudf only, no compacting copy: ints as they are; other values as
    float64 (a cast for bools, float32 and a float64 column at an offset: a new column, whose
    null mask starts at its first row); for floats, ``abs(x) < inf`` as the column's null mask (``bools_to_mask``: null for
    nulls, NaN and +-inf; its null count, which it returns, gives the finite count) put on the
    column without a copy (``with_mask``); then reductions that skip nulls: mean, the sum of
    squares of ``x - mean`` (M2, in two passes: no one-pass formula) and minmax; NaN are counted
    (``is_nan``, a sum) only where that count shows non-finite values. The reductions' device
    scalars are pulled back after every column's calls are queued (a ``to_py`` each waits for
    the device: the first waits for all, the others find their values there)."""
    out: dict = {}
    later = []
    num = set(numeric)
    for c in columns:
        s = df[c]
        if not isinstance(s.dtype, np.dtype) or s.dtype.kind not in "iufbO":
            continue   # lists, structs, decimals, datetimes, categoricals: the host's whole-column path
        rows, nulls = len(s), int(s.null_count)
        out[c] = (rows, nulls, 0, 0, None, None)
        if c not in num:
            continue
        col = _plc_column(s)
        is_float = col.type().id() in _FLOATS
        # ints are reduced as they are (the mean and the deviations come out as float64; the
        # extrema are the ints', whose float64 casts are the cast column's extrema): a float64
        # copy of the column, 0.8-2.2 ms a column on a 25M-row partition (H200 hosts)
        # (benchmarks/profile_exact.py), is made only for floats (NaN, +-inf masked) and bools
        if col.type().id() not in _INTS and (col.type().id() != plc.TypeId.FLOAT64 or col.offset()):
            col = plc.unary.cast(col, _F64)
        missing, nan = nulls, None   # missing: nulls, NaN and +-inf
        if is_float and rows > nulls:
            mask, missing = plc.transform.bools_to_mask(_finite_bools(col))
            if missing > nulls:  # NaN or +-inf among the values: NaN counted, then all masked
                nan = plc.reduce.reduce(plc.unary.is_nan(col), plc.aggregation.sum(), _I64)
                col = col.with_mask(mask, missing)
        n = rows - missing
        stats = None
        if n:
            mean = plc.reduce.reduce(col, plc.aggregation.mean(), _F64)
            dev = plc.binaryop.binary_operation(col, mean, plc.binaryop.BinaryOperator.SUB, _F64)
            m2 = plc.reduce.reduce(dev, plc.aggregation.sum_of_squares(), _F64)
            stats = (mean, m2) + tuple(plc.reduce.minmax(col))
        later.append((c, rows, nulls, missing, n, nan, stats))
    for c, rows, nulls, missing, n, nan, stats in later:   # the device's numbers, pulled back now
        nan = int(nan.to_py() or 0) if nan is not None else 0
        moments, minmax = (0, 0.0, 0.0), (None, None)
        if stats is not None:
            mean, m2, lo, hi = (x.to_py() for x in stats)
            # (an int column's extrema stay Python ints: exact beyond 2**53, as the host's)
            lo, hi = (v if isinstance(v, int) and not isinstance(v, bool) else float(v) for v in (lo, hi))
            moments, minmax = (n, float(mean), float(m2)), (lo, hi)
        out[c] = (rows, nulls + nan, nan, missing - nulls - nan, moments, minmax)
    return out


def _host_copy(col: Any) -> np.ndarray:
    """A numpy copy of a pylibcudf column without nulls (a device-to-host copy, no kernel)."""
    return cudf.Series.from_pylibcudf(col).values.get()


@_register(R.profile_sample)
def _profile_sample(df: Any, columns: Sequence[str], step: int) -> dict:
    """Every ``step``-th row of ``columns`` (one gather of a sequence), then per column its non-null
    finite values in row order (floats: ``abs(x) < inf``, false for NaN and +-inf, null for nulls;
    other types: the non-null values); cupy views of the results.

    The columns to clean are compacted together, per type: their concatenation with a column of
    sample ids, one order-keeping compaction of both (``_retain``), and each column's bounds found
    by a ``searchsorted`` of the kept ids (one small copy to the host). A compaction learns its
    output size on the host, so each waited for everything queued on the default stream, the
    other partition's read included: 27 waits per Criteo partition before, one per type now. Int
    columns without nulls are handed over as they are."""
    cols = [_plc_column(df[c]) for c in columns]
    rows = len(df)
    if step > 1 and rows:
        idx = plc.filling.sequence(len(range(0, rows, step)), _scalar(0, _I32), _scalar(int(step), _I32))
        cols = plc.copying.gather(plc.Table(cols), idx, plc.copying.OutOfBoundsPolicy.DONT_CHECK).columns()
    out = {}
    groups: Dict[tuple, List[tuple]] = {}
    for c, col in zip(columns, cols):
        is_float = col.type().id() in _FLOATS
        if not col.size() or (not is_float and not col.null_count()):
            out[c] = cudf.Series.from_pylibcudf(col).values
        else:
            groups.setdefault((col.type().id(), col.type().scale()), []).append((c, col, is_float))
    for members in groups.values():
        seg = None if len(members) == 1 else _segment_ids([col.size() for _, col, _ in members])
        if seg is None:
            out.update({c: _clean_sample(col, is_float) for c, col, is_float in members})
            continue
        whole = plc.concatenate.concatenate([col for _, col, _ in members])
        keep = _finite_bools(whole) if members[0][2] else plc.unary.is_valid(whole)
        kept_seg, kept = _retain(plc.Table([seg, whole]), keep).columns()
        seg_ids = cudf.Series.from_pylibcudf(kept_seg).values
        bounds = cupy.searchsorted(seg_ids, cupy.arange(len(members) + 1, dtype=np.int32)).get()
        values = cudf.Series.from_pylibcudf(kept).values
        for j, (c, _, _) in enumerate(members):
            out[c] = values[bounds[j]:bounds[j + 1]]
    return {c: out[c] for c in columns}


def _segment_ids(sizes: Sequence[int]) -> Any:
    """An INT32 pylibcudf column of ``j`` repeated ``sizes[j]`` times: which piece each row of the
    pieces' concatenation came from; None when the concatenation would pass libcudf's row limit
    (``2**31 - 1``), where the caller takes the pieces one by one. Pieces of one size (a
    partition's sampled columns) need no device array of the sizes."""
    sizes = [int(n) for n in sizes]
    if sum(sizes) >= 2 ** 31 - 1:
        return None
    ids = plc.Table([plc.filling.sequence(len(sizes), _scalar(0, _I32), _scalar(1, _I32))])
    if len(set(sizes)) == 1:
        return plc.filling.repeat(ids, sizes[0]).columns()[0]
    repeats = cupy.asarray(np.array(sizes, dtype=np.int32))   # (a copy, no kernel)
    return plc.filling.repeat(ids, _plc_column(repeats)).columns()[0]


def _clean_sample(col: Any, is_float: bool) -> Any:
    """The non-null (floats: finite) values of one pylibcudf column, in row order, as a cupy array."""
    if is_float:
        col = _retain(plc.Table([col]), _finite_bools(col)).columns()[0]
    elif col.null_count():
        col = plc.stream_compaction.drop_nulls(plc.Table([col]), [0], 1).columns()[0]
    return cudf.Series.from_pylibcudf(col).values


@_register(R.sorted_sample)
def _sorted_sample(values: Any, every: Optional[int], owned: bool = False):
    """libcudf's sort, then its sorted group-by count (the runs: distinct keys ascending, the
    first of each run) and a gather of :func:`~tabprep.backend.reductions.pick_positions` (the
    thinned KLL picks); only those are copied to the host."""
    col = _plc_column(values)
    n = col.size()
    if n == 0:
        empty = np.zeros(0, dtype=values.dtype)
        return (None if every is None else empty), empty, np.zeros(0, dtype=np.int64)
    srt = plc.sorting.sort(plc.Table([col]), [plc.types.Order.ASCENDING], [plc.types.NullOrder.AFTER])
    s = srt.columns()[0]
    gb = plc.groupby.GroupBy(plc.Table([s]), null_handling=plc.types.NullPolicy.EXCLUDE,
                             keys_are_sorted=plc.types.Sorted.YES)
    keys, results = gb.aggregate([plc.groupby.GroupByRequest(s, [plc.aggregation.count(plc.types.NullPolicy.EXCLUDE)])])
    picks = None
    if every is not None:
        r = R.pick_positions(n, every)
        if not len(r):  # (fewer values than the first pick's position)
            picks = np.zeros(0, dtype=values.dtype)
        else:
            if r.step > 1:
                idx = plc.filling.sequence(len(r), _scalar(int(r.start), _I32), _scalar(int(r.step), _I32))
                srt = plc.copying.gather(srt, idx, plc.copying.OutOfBoundsPolicy.DONT_CHECK)
            picks = R.plus_zero(_host_copy(srt.columns()[0]))
    counts = _host_copy(results[0].columns()[0]).astype(np.int64, copy=False)
    return picks, R.plus_zero(_host_copy(keys.columns()[0])), counts


@_register(R.sorted_samples)
def _sorted_samples(frame: Any, samples: Dict[str, Any], everies: Dict[str, Optional[int]]) -> Dict[str, tuple]:
    """The samples of each dtype sorted together: libcudf's sort of ``(sample id, value)``, its
    sorted group-by count on both (each sample's runs, in sample order), a gather of every sample's
    :func:`~tabprep.backend.reductions.pick_positions` (offset by where its values start), then one
    copy of each result to the host, cut there per sample. The same ``(picks, keys, counts)`` as
    :func:`_sorted_sample` of each (a run of -0.0 and 0.0 is one key, made 0.0, as there)."""
    out: Dict[str, tuple] = {}
    groups: Dict[str, List[str]] = {}
    for c, v in samples.items():
        groups.setdefault(np.dtype(v.dtype).str, []).append(c)
    for names in groups.values():
        cols = [_plc_column(samples[c]) for c in names]
        sizes = np.array([col.size() for col in cols], dtype=np.int64)
        seg = None if len(names) == 1 else _segment_ids(sizes)
        if seg is None:
            out.update({c: _sorted_sample(samples[c], everies[c]) for c in names})
            continue
        table = plc.Table([seg, plc.concatenate.concatenate(cols)])
        asc, after = [plc.types.Order.ASCENDING] * 2, [plc.types.NullOrder.AFTER] * 2
        srt = plc.sorting.sort(table, asc, after)
        s_seg, s_val = srt.columns()
        gb = plc.groupby.GroupBy(plc.Table([s_seg, s_val]), null_handling=plc.types.NullPolicy.EXCLUDE,
                                 keys_are_sorted=plc.types.Sorted.YES)
        keys, results = gb.aggregate([plc.groupby.GroupByRequest(s_val, [plc.aggregation.count(plc.types.NullPolicy.EXCLUDE)])])
        starts = np.concatenate([[0], np.cumsum(sizes)])
        ranges = [None if everies[c] is None else R.pick_positions(int(n), everies[c]) for c, n in zip(names, sizes)]
        positions = [np.arange(starts[j] + r.start, starts[j] + r.stop, r.step, dtype=np.int32)
                     for j, r in enumerate(ranges) if r is not None]
        picked = np.zeros(0, dtype=np.dtype(samples[names[0]].dtype))
        if positions and sum(len(p) for p in positions):
            where = cupy.asarray(np.concatenate(positions))
            picked = R.plus_zero(_host_copy(plc.copying.gather(plc.Table([s_val]), _plc_column(where),
                                                             plc.copying.OutOfBoundsPolicy.DONT_CHECK).columns()[0]))
        kseg = _host_copy(keys.columns()[0])
        kval = R.plus_zero(_host_copy(keys.columns()[1]))
        counts = _host_copy(results[0].columns()[0]).astype(np.int64, copy=False)
        bounds = np.searchsorted(kseg, np.arange(len(names) + 1), side="left")
        at = 0
        for j, c in enumerate(names):
            a, b = bounds[j], bounds[j + 1]
            picks = None
            if ranges[j] is not None:
                n = len(ranges[j])
                picks, at = picked[at:at + n], at + n
            out[c] = (picks, kval[a:b], counts[a:b])
    return out
