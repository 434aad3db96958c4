"""The GPU profile's device work (issue #35): the exact part (``backend.profile_exact``) and the
sample sorted where it lives (``backend.reductions.profile_sample`` / ``sorted_sample``), checked
against numpy written here. CPU: the host implementation of the sorted runs and thinned KLL picks,
and the partial assembled from a sample handed over as an array (the device path's shape). GPU
(``gpu`` marker): the device's numbers equal numpy's, and its partials equal the host-sorted ones
byte for byte."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tabprep.backend.reductions import pick_positions, sorted_sample
from tabprep.stats.sketches import kll_of, kll_of_sorted

from conftest import GPU_SKIP


def _ref_runs(v: np.ndarray):
    """Sorted values, their distinct values and run lengths with a plain Python loop."""
    s = sorted(v.tolist())
    keys, counts = [], []
    for x in s:
        if keys and keys[-1] == x:
            counts[-1] += 1
        else:
            keys.append(x)
            counts.append(1)
    return s, keys, counts


def _ref_picks(s: list, every: int) -> list:
    """The middle value of each run of ``every`` sorted values: position ``i`` with
    ``i % every == (every - 1) // 2`` (for every == 1, every position)."""
    return [x for i, x in enumerate(s) if i % every == (every - 1) // 2]


_DTYPES = [np.int64, np.int32, np.uint8, np.uint64, np.float64, np.float32]


@st.composite
def _samples(draw):
    dtype = np.dtype(draw(st.sampled_from(_DTYPES)))
    if dtype.kind == "f":
        elems = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False, width=8 * dtype.itemsize) | st.just(-0.0)
    elif dtype == np.int64:  # ints that sort as uint32 and ints that do not
        elems = draw(st.sampled_from([st.integers(0, (1 << 32) - 1), st.integers(-(1 << 62), 1 << 62),
                                      st.integers(-5, 5)]))
    else:
        info = np.iinfo(dtype)
        elems = st.integers(int(info.min), int(info.max))
    n = draw(st.integers(0, 300))
    v = draw(hnp.arrays(dtype, n, elements=elems | st.sampled_from([0, 1, 2]).map(dtype.type)))
    return v


@settings(max_examples=80, deadline=None)
@given(v=_samples(), every=st.integers(1, 20), owned=st.booleans(), with_picks=st.booleans())
def test_host_sorted_sample_equals_a_plain_reference(v, every, owned, with_picks):
    """The host's sorted runs and thinned KLL picks (``sorted_sample`` on numpy, which the device
    implementation mirrors): keys ascending in the sample's dtype, int64 run lengths, the picks at
    the middle of each run of ``every``; the caller's array untouched unless it is ``owned``."""
    before = v.copy()
    picks, keys, counts = sorted_sample(v.copy() if owned else v, every if with_picks else None, owned=owned)
    s, rkeys, rcounts = _ref_runs(v)
    if v.dtype.kind == "f":  # (-0.0 and 0.0 are one value: 0.0, whichever the sort put first)
        s, rkeys = [x + 0.0 for x in s], [x + 0.0 for x in rkeys]
    assert keys.dtype == v.dtype and keys.tobytes() == np.array(rkeys, dtype=v.dtype).tobytes()
    assert counts.dtype == np.int64 and counts.tolist() == rcounts
    if with_picks:
        assert picks.dtype == v.dtype and picks.tobytes() == np.array(_ref_picks(s, every), dtype=v.dtype).tobytes()
        assert list(pick_positions(len(s), every)) == [i for i in range(len(s)) if i % every == (every - 1) // 2]
        if picks.size < 200:  # the thinned KLL of the sorted values is the KLL of the picks: the same
            # bytes while the sketch holds every item (past k = 200 its compactions draw random bits)
            assert kll_of(picks) == kll_of_sorted(np.array(s, dtype=v.dtype), every)
    else:
        assert picks is None
    assert np.array_equal(v, before)


def test_zeros_of_either_sign_give_one_key_and_zero_picks_whatever_their_order():
    """-0.0 and 0.0 are one value: one run, its key 0.0, the picks among them 0.0, whichever order
    the values (and so an unstable or radix sort) put them in: the host and the device agree."""
    r = np.random.default_rng(0)
    for dtype in (np.float64, np.float32):
        v = np.array([-0.0] * 50 + [0.0] * 50 + [1.5, -2.0], dtype=dtype)
        seen = set()
        for _ in range(5):
            r.shuffle(v)
            picks, keys, counts = sorted_sample(v.copy(), 4, owned=True)
            assert keys.tolist() == [-2.0, 0.0, 1.5] and counts.tolist() == [1, 100, 1]
            assert not np.signbit(keys[keys == 0]).any() and not np.signbit(picks[picks == 0]).any()
            seen.add((picks.tobytes(), keys.tobytes()))
        assert len(seen) == 1


def test_pick_positions_refuses_a_factor_below_one():
    with pytest.raises(ValueError, match="kll_every must be an int >= 1"):
        pick_positions(10, 0)


def _mixed_frame(n: int, seed: int) -> pd.DataFrame:
    """Numpy-typed columns: floats with NaN (nulls, to pandas) and +-inf, float32, ints, ids."""
    r = np.random.default_rng(seed)
    x = np.round(r.normal(0, 5, n), 2)
    x[r.random(n) < 0.1] = np.nan
    x[r.random(n) < 0.03] = np.inf
    x[r.random(n) < 0.03] = -np.inf
    f32 = r.normal(3, 1, n).astype(np.float32)
    f32[r.random(n) < 0.02] = -np.inf
    return pd.DataFrame({"x": x, "f32": f32, "i": r.integers(-40, 40, n), "big": r.integers(0, 1 << 40, n),
                         "c": r.integers(0, 300, n).astype(np.int32), "u": r.integers(0, 200, n).astype(np.uint8)})


def _strided_finite(df: pd.DataFrame, columns, step: int) -> dict:
    """numpy: the non-null finite values of every ``step``-th row of each column, in row order."""
    out = {}
    for c in columns:
        v = df[c].to_numpy()[::step]
        out[c] = v[np.isfinite(v)] if v.dtype.kind == "f" else v.copy()
    return out


def _kll_input(monkeypatch) -> None:
    """Make the profile's KLL "sketch" the bytes of the values it is given, in their order:
    DataSketches' KLL draws random bits when it compacts (past k = 200 items), so two sketches of
    the same values differ in bytes; the same values in the same order is what makes them one
    sketch (and the same bytes, but for those random bits)."""
    import tabprep.stats.profile as prof

    monkeypatch.setattr(prof, "kll_of", lambda v: np.ascontiguousarray(v, dtype=np.float64).tobytes())


def _assert_identical(got: dict, want: dict, columns) -> None:
    """The partials are the same byte for byte: KLL input (see :func:`_kll_input`), HLL registers,
    frequent items, OOV, pending values."""
    for c in columns:
        g, w = got[c], want[c]
        assert (g.kind, g.dtype, g.rows, g.nulls, g.nan, g.inf, g.oov, g.sample_every) == \
               (w.kind, w.dtype, w.rows, w.nulls, w.nan, w.inf, w.oov, w.sample_every), c
        assert g.moments == w.moments and g.minmax == w.minmax, c
        assert g.kll == w.kll, c
        assert (g.kll_every, g.kll_slack, g.kll_values) == (w.kll_every, w.kll_slack, w.kll_values), c
        assert g.hll.registers.tobytes() == w.hll.registers.tobytes(), c
        assert (g.freq is None) == (w.freq is None), c
        if w.freq is not None:
            assert g.freq.keys.dtype == w.freq.keys.dtype, c
            assert g.freq.keys.tolist() == w.freq.keys.tolist() and g.freq.counts.tolist() == w.freq.counts.tolist()
            assert (g.freq.n, g.freq.error) == (w.freq.n, w.freq.error), c
        assert (g.pending is None) == (w.pending is None), c
        if w.pending is not None:
            assert g.pending.dtype == w.pending.dtype and g.pending.tolist() == w.pending.tolist(), c


@pytest.mark.parametrize("n,every,kll_every", [(1000, 3, 4), (80_000, 2, 4), (150_000, 3, 1), (0, 2, 4)])
def test_partial_from_a_handed_sample_equals_the_arrow_sample_path(n, every, kll_every, monkeypatch):
    """``partial_with_exact`` given the sample as arrays (what ``profile_sample`` hands over from a
    device; here numpy arrays from a pandas frame, sorted by the host's ``sorted_sample``) builds
    the same partials, byte for byte, as the sample copied to Arrow (the path without a device):
    the same values into the KLL sketch, in the same order."""
    import tabprep.stats.profile as prof

    _kll_input(monkeypatch)
    df = _mixed_frame(n, seed=n + every)
    cols = list(df.columns)
    numeric = ["x", "f32", "i", "big", "u"]
    exact = {c: (len(df), int(df[c].isna().sum()), 0, 0, (1, 0.0, 0.0) if c in numeric else None,
                 (0.0, 0.0) if c in numeric else None) for c in cols}   # (the exact part is copied as given)
    vocabs = {"c": pd.Index(np.arange(0, 300, 2), dtype=np.int32), "i": pd.Index(np.arange(-10, 10))}
    want = prof.partial_with_exact(df, cols, exact, every, vocabs, ["c"], kll_every)
    handed = []

    def hand(frame, columns, step):
        handed.append(list(columns))
        return _strided_finite(frame, columns, step)

    monkeypatch.setattr(prof, "profile_sample", hand)
    got = prof.partial_with_exact(df, cols, exact, every, vocabs, ["c"], kll_every)
    assert handed == [cols]
    _assert_identical(got, want, cols)
    sizes = {c: v.size for c, v in _strided_finite(df, cols, every).items()}
    assert any(s > prof.PENDING_MAX for s in sizes.values()) == (n > 50_000)   # (both kinds are tested)
    for c in cols:  # a large enough sample is sorted and sketched; a small one kept pending
        assert (got[c].pending is None) == (sizes[c] > prof.PENDING_MAX), (c, sizes[c])


# ---------------------------------------------------------------------------
# on the device
# ---------------------------------------------------------------------------
def _numpy_exact(df: pd.DataFrame, numeric) -> dict:
    """The exact part written with numpy, of a frame of ``pd.ArrowDtype`` columns (floats hold NaN
    apart from their nulls, as cuDF's do): nulls include NaN; moments and extrema of the finite values."""
    out = {}
    for c in df.columns:
        items = df[c].array._pa_array.combine_chunks().to_pylist()
        isnull = np.array([x is None for x in items], dtype=bool)
        if c not in numeric:
            out[c] = (len(items), int(isnull.sum()), 0, 0, None, None)
            continue
        v = np.array([np.nan if x is None else float(x) for x in items], dtype=np.float64)
        nan = int(np.isnan(v[~isnull]).sum())
        fin = v[np.isfinite(v)]
        mom = (fin.size, float(fin.mean()), float(((fin - fin.mean()) ** 2).sum())) if fin.size else (0, 0.0, 0.0)
        mm = (float(fin.min()), float(fin.max())) if fin.size else (None, None)
        if pa.types.is_integer(df[c].array._pa_array.type) and fin.size:
            ints = [x for x in items if x is not None]   # an int column's extrema: exact Python ints
            mm = (min(ints), max(ints))
        out[c] = (len(items), int(isnull.sum()) + nan, nan, int(np.isinf(v).sum()), mom, mm)
    return out


def _device_frame(n: int, seed: int) -> pd.DataFrame:
    """Arrow-typed columns as cuDF holds them: floats with NaN apart from nulls, +-inf, float32,
    nullable and narrow ints, uint64, bools, datetimes, an all-null and an all-NaN float column."""
    r = np.random.default_rng(seed)
    x = np.round(r.normal(0, 5, n), 3)
    x[r.random(n) < 0.1] = np.nan
    x[r.random(n) < 0.05] = np.inf
    x[r.random(n) < 0.05] = -np.inf
    f32 = r.normal(3, 1, n).astype(np.float32)
    f32[r.random(n) < 0.05] = np.inf
    null = r.random(n) < 0.15
    cols = {
        "x": pa.array(x, mask=r.random(n) < 0.1),
        "f32": pa.array(f32, mask=null),
        "i": pa.array(r.integers(-40, 40, n), mask=null),
        "big": pa.array(r.integers(-(1 << 40), 1 << 40, n)),
        "i8": pa.array(r.integers(-100, 100, n).astype(np.int8)),
        "u64": pa.array(r.integers(0, 1 << 62, n).astype(np.uint64), mask=r.random(n) < 0.02),
        "c": pa.array(r.integers(0, 300, n), mask=null),
        "b": pa.array(r.random(n) < 0.3, mask=null),
        "t": pa.array(r.integers(0, 10**9, n).astype("datetime64[s]"), mask=null),
        "allnull": pa.array([None] * n, type=pa.float64()),
        "allnan": pa.array(np.full(n, np.nan)),
        "allinf": pa.array(np.full(n, -np.inf, dtype=np.float32)),
    }
    return pa.table(cols).to_pandas(types_mapper=pd.ArrowDtype)


_NUMERIC = ["x", "f32", "i", "big", "i8", "u64", "allnull", "allnan", "allinf"]


@pytest.mark.gpu
@GPU_SKIP
@pytest.mark.parametrize("n,sl", [(5000, None), (0, None), (7, None), (5000, (13, 3000))])
def test_gpu_profile_exact_equals_numpy(n, sl):
    """The device's exact part (counts, NaN, +-inf, moments and extrema of the finite values) of
    every kind of column equals numpy's on the same data: counts and extrema identical, moments up
    to float rounding; datetimes are left to the host (absent), bools and ids get counts only. A
    slice (columns at an offset) too."""
    import cudf

    from tabprep import backend

    df = _device_frame(n, seed=n + 1)
    gdf = cudf.DataFrame.from_arrow(pa.Table.from_pandas(df, preserve_index=False))
    if sl is not None:
        df, gdf = df.iloc[sl[0]:sl[1]].reset_index(drop=True), gdf.iloc[sl[0]:sl[1]]
    cols = list(df.columns)
    got = backend.profile_exact(gdf, cols, _NUMERIC)
    want = _numpy_exact(df.drop(columns=["t"]), _NUMERIC)
    assert "t" not in got and set(got) == set(want)
    for c, w in want.items():
        g = got[c]
        assert g[:4] == w[:4], c
        assert (g[4] is None) == (w[4] is None) and g[5] == w[5], c
        if w[4] is not None:
            assert g[4][0] == w[4][0], c
            scale = max(abs(w[5][0]), abs(w[5][1])) if w[4][0] else 0.0  # (rounding: relative to the values)
            assert g[4][1] == pytest.approx(w[4][1], rel=1e-12, abs=1e-13 * scale), c
            assert g[4][2] == pytest.approx(w[4][2], rel=1e-9, abs=1e-12 * w[4][0] * scale * scale), c


@pytest.mark.gpu
@GPU_SKIP
@pytest.mark.parametrize("step", [1, 3])
@pytest.mark.parametrize("n", [0, 500, 50_000])
def test_gpu_sorted_sample_equals_the_host_one(n, step):
    """``profile_sample`` on the device gives numpy's strided non-null finite values in row order;
    ``sorted_sample`` of them on the device gives the host's runs and picks, dtype included."""
    import cudf

    from tabprep.backend.reductions import profile_sample

    df = _device_frame(n, seed=7)
    cols = ["x", "f32", "i", "big", "i8", "u64", "c", "allnull", "allnan"]
    gdf = cudf.DataFrame.from_arrow(pa.Table.from_pandas(df[cols], preserve_index=False))
    dev = profile_sample(gdf, cols, step)
    assert set(dev) == set(cols)
    for c in cols:
        arr = df[c].array._pa_array.combine_chunks()
        host = arr.take(pa.array(np.arange(0, len(arr), step))).drop_null().to_numpy(zero_copy_only=False)
        if host.dtype.kind == "f":
            host = host[np.isfinite(host)]
        assert dev[c].dtype == host.dtype and dev[c].get().tolist() == host.tolist(), c
        for every in (None, 1, 4, 16):
            g = sorted_sample(dev[c], every)
            w = sorted_sample(host, every)
            for a, b in zip(g[1:], w[1:]):
                assert a.dtype == b.dtype and a.tolist() == b.tolist(), (c, every)
            assert (g[0] is None) == (w[0] is None) and (g[0] is None or g[0].tolist() == w[0].tolist()), (c, every)


@pytest.mark.gpu
@GPU_SKIP
@pytest.mark.parametrize("every,kll_every", [(1, 1), (3, 4), (2, 16)])
def test_gpu_device_sorted_partials_equal_the_host_sorted_ones(every, kll_every, monkeypatch):
    """A cuDF partition whose samples are large enough to be sorted (and a small one, kept
    pending): the partials with the sample sorted on the device equal, byte for byte (the KLL's
    input values and their order, HLL registers, frequent items, OOV, pending values), those with
    the sample copied to the host and sorted there
    (``profile_sample`` answering None: the path before the device sort)."""
    import cudf

    import tabprep.stats.profile as prof

    _kll_input(monkeypatch)
    # the large partition's sample (about 73% of every ``every``-th row is finite) is twice the
    # values kept pending, whatever PENDING_MAX is: sorted on the device
    big = 2 * every * prof.PENDING_MAX
    for n in (2000, big):
        df = _device_frame(n, seed=n)
        gdf = cudf.DataFrame.from_arrow(pa.Table.from_pandas(df, preserve_index=False))
        cols = list(df.columns)
        vocabs = {"c": pd.Index(np.arange(0, 300, 2)), "i": pd.Index(np.arange(-10, 10))}
        got = prof.partial_frame(gdf, cols, every, vocabs, ["c"], kll_every)
        with monkeypatch.context() as m:
            m.setattr(prof, "profile_sample", lambda *a: None)
            want = prof.partial_frame(gdf, cols, every, vocabs, ["c"], kll_every)
        _assert_identical(got, want, cols)
        if n == big:
            assert got["x"].pending is None and got["big"].pending is None


@pytest.mark.gpu
@GPU_SKIP
def test_gpu_sorted_samples_of_a_partition_equal_each_sorted_on_the_host():
    """``sorted_samples`` on the device (all the samples of one dtype sorted together: a sample
    id, then the value, one group-by, one copy of each result) gives each sample what the host's
    ``sorted_sample`` gives it alone: keys, counts and thinned picks, dtypes included; samples of
    several dtypes, empty and one-value ones, zeros of both signs, picks or none."""
    import cudf
    import cupy

    from tabprep.backend.reductions import sorted_samples

    r = np.random.default_rng(21)
    zeros = np.where(r.random(30_000) < 0.5, -0.0, 0.0)
    host = {
        "ids": r.integers(0, 700, 40_000).astype(np.int64),
        "big": r.integers(-(1 << 40), 1 << 40, 25_000).astype(np.int64),
        "one": np.array([5], dtype=np.int64),
        "none": np.zeros(0, dtype=np.int64),
        "x": np.concatenate([np.round(r.normal(0, 3, 30_000), 2), zeros]),
        "y": r.normal(size=17_000),
        "f32": r.normal(size=20_000).astype(np.float32),
        "i32": r.integers(-50, 50, 18_000).astype(np.int32),
    }
    everies = {"ids": None, "big": 16, "one": 1, "none": 4, "x": 3, "y": 1, "f32": 16, "i32": None}
    frame = cudf.DataFrame({"a": [1]})
    got = sorted_samples(frame, {c: cupy.asarray(v) for c, v in host.items()}, everies)
    assert set(got) == set(host)
    for c, v in host.items():
        want = sorted_sample(v.copy(), everies[c])
        g = got[c]
        for a, b in zip(g[1:], want[1:]):
            assert a.dtype == b.dtype and a.tolist() == b.tolist(), c
        assert (g[0] is None) == (want[0] is None), c
        if want[0] is not None:
            assert g[0].dtype == want[0].dtype and g[0].tolist() == want[0].tolist(), c
    keys = got["x"][1]
    assert (keys == 0).sum() == 1 and not np.signbit(keys[keys == 0]).any()   # one run of zeros, as 0.0


@pytest.mark.gpu
@GPU_SKIP
@pytest.mark.parametrize("step", [1, 4])
def test_gpu_samples_of_one_type_compacted_together_keep_each_columns_values(step):
    """The columns of one type are compacted in one pass (a concatenation with sample ids): each
    column still gets exactly numpy's strided non-null finite values of its own, in row order,
    also where some are empty (all null, all NaN, first and last of the group), where none are
    null, and from a frame sliced at an offset (its columns start inside their buffers)."""
    import cudf

    from tabprep.backend.reductions import profile_sample

    r = np.random.default_rng(11)
    n = 30_011
    cols = {}
    for j in range(6):   # int64 with nulls at several rates, one without
        cols[f"i{j}"] = pa.array(r.integers(-1000, 1000, n), mask=r.random(n) < (0.1 * j if j else 0.0))
    cols["i_allnull"] = pa.array([None] * n, type=pa.int64())
    for j in range(4):
        f = r.normal(0, 1, n)
        f[r.random(n) < 0.2] = np.nan
        f[r.random(n) < 0.05] = np.inf * np.sign(r.normal(size=1))
        cols[f"f{j}"] = pa.array(f, mask=r.random(n) < 0.1)
    order = ["f_nan_first", "f0", "f1", "f2", "f3", "f_null_last"]
    cols["f_nan_first"] = pa.array(np.full(n, np.nan))
    cols["f_null_last"] = pa.array([None] * n, type=pa.float64())
    names = [f"i{j}" for j in range(6)] + ["i_allnull"] + order
    table = pa.table({c: cols[c] for c in names})
    for lo in (0, 7):
        part = table.slice(lo)
        gdf = cudf.DataFrame.from_arrow(table)[lo:] if lo else cudf.DataFrame.from_arrow(part)
        got = profile_sample(gdf, names, step)
        assert list(got) == names
        for c in names:
            arr = part[c].combine_chunks()
            want = arr.take(pa.array(np.arange(0, len(arr), step))).drop_null().to_numpy(zero_copy_only=False)
            if want.dtype.kind == "f":
                want = want[np.isfinite(want)]
            assert got[c].dtype == want.dtype and got[c].get().tolist() == want.tolist(), (c, lo, step)
