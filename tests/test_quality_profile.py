"""Data profiles (issue #35): tp.profile and the training profile Workflow.fit records, checked
against numpy / pandas computed here on the exact data."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tabprep as tp
from tabprep import ops
from tabprep.stats.sketches import HLL, Frequent, hash64

from conftest import GPU_SKIP, make_dataset


def _frame(n=3000, seed=0):
    r = np.random.default_rng(seed)
    x = r.normal(10, 3, n)
    x[r.random(n) < 0.05] = np.nan
    c = (r.zipf(1.6, n) % 300).astype("int64")
    s = np.array(["red", "green", "blue", "teal"])[r.integers(0, 4, n)].astype(object)
    s[r.random(n) < 0.1] = None
    return pd.DataFrame({"x": x, "c": c, "s": s, "i": r.integers(-5, 50, n)})


def test_profile_matches_numpy_and_pandas(backend):
    df = _frame()
    prof = tp.profile(make_dataset(df, backend, nparts=5), categorical=["c"])
    x = df["x"].dropna().to_numpy()
    px = prof["x"]
    assert prof.rows == len(df) == px["count"]
    assert px["nulls"] == int(df["x"].isna().sum())
    assert px["min"] == pytest.approx(x.min()) and px["max"] == pytest.approx(x.max())
    assert px["mean"] == pytest.approx(x.mean(), rel=1e-12)
    assert px["std"] == pytest.approx(x.std(), rel=1e-9)
    # KLL quantiles: the rank of each reported quantile is within the sketch's bound (n < 1e4:
    # the sketch keeps few compactions; 2% rank error documented for k=200)
    xs = np.sort(x)
    for q, v in px["quantiles"].items():
        rank = np.searchsorted(xs, v, side="right") / xs.size
        assert abs(rank - float(q)) <= 0.02 + 1 / xs.size, (q, v, rank)
    assert sum(px["histogram"]["counts"]) == pytest.approx(x.size)
    # categorical ids: exact value counts (fewer distinct values than counters), no quantiles
    pc_ = prof["c"]
    assert pc_["kind"] == "category" and "quantiles" not in pc_
    vc = df["c"].value_counts()
    assert pc_["distinct"] == vc.size and pc_["distinct_exact"]
    assert [t["count"] for t in pc_["top"]] == vc.to_numpy()[:len(pc_["top"])].tolist()
    assert pc_["top_share"] == pytest.approx(vc.to_numpy()[:20].sum() / len(df))
    assert pc_["tail_share"] == pytest.approx(1 - pc_["top_share"])
    ps = prof["s"]
    assert ps["nulls"] == int(df["s"].isna().sum())
    assert {t["value"]: t["count"] for t in ps["top"]} == df["s"].value_counts().to_dict()
    # an int column not declared categorical gets both
    pi = prof["i"]
    assert pi["distinct"] == df["i"].nunique() and pi["min"] == df["i"].min() and "quantiles" in pi


def test_nan_inf_and_nulls_from_parquet(tmp_path):
    # parquet keeps null and NaN apart: nulls counts both (the project's convention), nan the NaNs
    t = pa.table({"f": pa.array([1.0, None, float("nan"), float("inf"), -float("inf"), 3.0, None])})
    pq.write_table(t, tmp_path / "a.parquet")
    p = tp.profile(str(tmp_path / "a.parquet"))["f"]
    assert (p["count"], p["nulls"], p["nan"], p["inf"]) == (7, 3, 1, 2)
    assert (p["min"], p["max"], p["mean"]) == (1.0, 3.0, 2.0)


def test_merged_partials_do_not_depend_on_partitioning():
    df = _frame(2000, seed=3)
    one = tp.profile(make_dataset(df, "cpu", nparts=1, empties=False), categorical=["c"])
    many = tp.profile(make_dataset(df, "cpu", nparts=7), categorical=["c"])
    for col in df.columns:
        a, b = one[col], many[col]
        for key in ("count", "nulls", "min", "max", "distinct", "top"):
            assert a.get(key) == b.get(key), (col, key)
        if a.get("mean") is not None:
            assert a["mean"] == pytest.approx(b["mean"], rel=1e-12)


def test_list_column_lengths_and_elements(tmp_path):
    lists = [[1, 2], [], None, [3], [1, 1, 1, 4]]
    pq.write_table(pa.table({"l": pa.array(lists, type=pa.list_(pa.int64()))}), tmp_path / "l.parquet")
    p = tp.profile(str(tmp_path / "l.parquet"))["l"]
    lengths = np.array([len(v) for v in lists if v is not None])
    assert p["kind"] == "list" and p["nulls"] == 1
    assert p["list_length"]["mean"] == pytest.approx(lengths.mean())
    assert p["list_length"]["max"] == lengths.max()
    leaves = pd.Series([e for v in lists if v for e in v])
    assert {t["value"]: t["count"] for t in p["values"]["top"]} == leaves.value_counts().to_dict()


def test_empty_dataset_and_all_null_column(tmp_path):
    pq.write_table(pa.table({"a": pa.array([], pa.float64()), "b": pa.array([], pa.string())}), tmp_path / "e.parquet")
    prof = tp.profile(str(tmp_path / "e.parquet"))
    assert prof.rows == 0 and prof["a"]["count"] == 0 and prof["b"]["null_rate"] == 0.0
    assert "<svg" in prof._repr_html_()
    df = pd.DataFrame({"n": pd.Series([None] * 50, dtype="float64"), "k": ["a"] * 50})
    p = tp.profile(df)["n"]
    assert p["nulls"] == 50 and p["null_rate"] == 1.0 and p["min"] is None and p["distinct"] == 0


def test_millions_of_distinct_values_bounded_memory():
    # 2M distinct ids: the sketches stay small (HLL 4 KB, 1,024 counters) and the estimate is
    # within 4 standard errors (1.04 / sqrt(4096) = 1.6%)
    ids = np.arange(2_000_000, dtype=np.int64) * 7919
    h = HLL.of_hashes(hash64(ids))
    assert h.registers.nbytes == 4096
    assert abs(h.estimate() / ids.size - 1) < 4 * 0.0163
    f = Frequent.of_values(np.concatenate([ids, np.full(300_000, 5, dtype=np.int64)]))
    assert f.keys.size <= 1024
    (value, count), = f.top(1)
    assert value == 5 and 300_000 - f.error <= count <= 300_000  # (5 is not a multiple of 7919)
    assert f.error <= f.n / 1025


def test_frequent_items_merge_bound():
    # Misra-Gries merged from parts: every estimate is a lower bound within `error`
    r = np.random.default_rng(1)
    parts = [r.zipf(1.3, 20_000) % 5000 for _ in range(6)]
    merged = Frequent.merge([Frequent.of_values(p, capacity=64) for p in parts], capacity=64)
    truth = pd.Series(np.concatenate(parts)).value_counts()
    for v, c in merged.top(64):
        assert truth[v] - merged.error <= c <= truth[v]
    assert merged.error <= merged.n / 65


def test_fit_records_the_training_profile_and_save_load_keeps_it(tmp_path):
    df = _frame(1500)
    df["label"] = np.arange(len(df)) % 2
    df.to_parquet(tmp_path / "train.parquet")
    wf = tp.Workflow((["c", "s"] >> ops.Categorify()) + (["x"] >> ops.FillMissing() >> ops.Normalize()))
    wf.fit(str(tmp_path / "train.parquet"), profile=True)
    assert set(wf.profile_["columns"]) == {"c", "s", "x"}
    assert wf.profile_["columns"]["c"]["kind"] == "category"  # read by Categorify: ids
    assert wf.profile_["columns"]["x"]["nulls"] == int(df["x"].isna().sum())
    wf.save(str(tmp_path / "wf"))
    on_disk = json.loads((tmp_path / "wf" / "stats" / "profile.json").read_text())
    assert on_disk["columns"]["x"]["mean"] == pytest.approx(df["x"].mean())
    back = tp.Workflow.load(str(tmp_path / "wf"))
    assert back.profile_ == on_disk
    none = tp.Workflow(["x"] >> ops.Normalize()).fit(str(tmp_path / "train.parquet"), profile=False)
    assert none.profile_ is None


def test_profile_names_a_missing_column():
    with pytest.raises(KeyError, match="'nope'"):
        tp.profile(pd.DataFrame({"a": [1]}), columns=["a", "nope"])


def test_hll_registers_do_not_depend_on_the_path():
    # registers from a reference written here (a loop over the hashes); duplicates never change one
    h = hash64(np.arange(20_000, dtype=np.int64) * 31)
    ref = np.zeros(4096, dtype=np.uint8)
    for x in h[:3000].tolist():
        rest = x & ((1 << 52) - 1)
        ref[x >> 52] = max(ref[x >> 52], 52 - rest.bit_length() + 1)
    assert np.array_equal(HLL.of_hashes(h[:3000]).registers, ref)
    assert np.array_equal(HLL.of_hashes(h).registers, HLL.of_hashes(np.concatenate([h, h])).registers)


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint64", "float64"])
def test_sampled_partial_of_a_chunked_column_matches_pandas(dtype):
    # the host path: every 3rd row of the partition across chunk boundaries (chunks of 5, 7, 1,
    # 0 and 40 rows, each at an offset of its buffers), nulls dropped; ids in [0, 2**32) and
    # outside it (negative, >= 2**32)
    from tabprep.stats.profile import _flushed, column_partial

    r = np.random.default_rng(4)
    vals = r.choice(np.array([0, 1, 7, 2**32 - 1, 2**32 + 5, 3, 3, 3] + ([-4] if dtype[0] != "u" else [9])), 53)
    vals = vals.astype(dtype)
    nulls = r.random(53) < 0.2
    base = pa.array(vals, mask=nulls)
    chunks, at = [], 0
    for size in (5, 7, 1, 0, 40):  # slices of one array: chunks at offsets 5, 12, 13... of its buffers
        chunks.append(base.slice(at, size))
        at += size
    col = pa.chunked_array(chunks, type=chunks[0].type)
    sample = pd.Series(vals[::3])[~nulls[::3]]
    for categorical in (False, True):
        # (a small sample waits unsketched, its OOV counted: the sketches once flushed)
        p = _flushed(column_partial(col, 3, vocab=pd.Index(np.array([3, 7], dtype=dtype)), categorical=categorical))
        assert (p.rows, p.nulls) == (53, int(nulls.sum()))
        if dtype != "float64":
            got = dict(zip(p.freq.keys.tolist(), p.freq.counts.tolist()))
            assert got == {k: 3 * v for k, v in sample.value_counts().items()}
            assert p.freq.n == 3 * len(sample)
        assert p.oov == 3 * int((~sample.isin([3, 7])).sum())
        assert np.array_equal(p.hll.registers, HLL.of_hashes(hash64(sample.unique())).registers)
        if not categorical or dtype == "float64":
            full = pd.Series(vals)[~nulls]
            assert p.minmax.min == full.min() and p.minmax.max == full.max() and p.moments.count == len(full)
            from tabprep.stats.sketches import kll_load

            sk = kll_load(p.kll)
            assert sk.n == len(sample) and sk.get_min_value() == sample.min() and sk.get_max_value() == sample.max()


def test_top_values_break_ties_by_value():
    f = Frequent.merge([Frequent.of_values(np.array([9, 9, 5, 5, 7])), Frequent.of_values(np.array([1, 1, 3]))])
    assert f.top(5) == [(1, 2), (5, 2), (9, 2), (3, 1), (7, 1)]
    s = Frequent.of_values(np.array(["b", "a", "c", "a", "b"], dtype=object))
    assert s.top(3) == [("a", 2), ("b", 2), ("c", 1)]


@pytest.mark.parametrize("dtype,scale,huge_junk", [("int64", 1000, False), ("int64", 1000, True), ("int64", 2**40, False),
                                                   ("uint64", 2**62, False), ("uint64", 1000, False), ("int32", 1000, False)])
def test_exact_int_moments_ignore_what_null_slots_hold(dtype, scale, huge_junk, monkeypatch):
    # the int moments read every slot of the values buffer and subtract the null slots: the null
    # slots here hold garbage (huge values, the minimum, negatives), chunks start at offsets of
    # their buffers; reference: Python's exact integers over the valid values only
    from fractions import Fraction

    from tabprep.stats.profile import column_partial

    r = np.random.default_rng(7)
    n = 400
    vals = r.integers(0, scale, n).astype(dtype)
    nulls = r.random(n) < 0.3
    junk = vals.copy()
    planted = [np.iinfo(dtype).max, 0, 5, np.iinfo(dtype).min] if huge_junk else [0, 5, 2000, 3]
    junk[nulls] = np.array(planted, dtype=dtype)[np.arange(nulls.sum()) % 4]
    validity = pa.py_buffer(np.packbits(~nulls, bitorder="little").tobytes())
    base = pa.Array.from_buffers(pa.from_numpy_dtype(np.dtype(dtype)), n, [validity, pa.py_buffer(junk.tobytes())])
    assert base.null_count == int(nulls.sum())
    col = pa.chunked_array([base.slice(0, 3), base.slice(3, 0), base.slice(3, 190), base.slice(193)])
    good = [int(v) for v in vals[~nulls]]
    if dtype in ("int64", "uint64") and scale <= 1000 and not huge_junk:  # the int64 path itself, no fallback
        import tabprep.stats.profile as prof

        monkeypatch.setattr(prof, "_exact_moments", lambda col: pytest.fail("fell back to Arrow's kernels"))
    k, s1, s2 = len(good), sum(good), sum(v * v for v in good)
    p = column_partial(col)
    # the extrema are the exact ints (beyond 2**53 too: uint64 up to 2**62 here), not their float64 roundings
    assert p.moments.count == k and (p.minmax.min, p.minmax.max) == (min(good), max(good))
    assert type(p.minmax.min) is int and type(p.minmax.max) is int
    if scale <= 1000:  # the exact path: correctly rounded mean and M2
        assert p.moments.mean == float(Fraction(s1, k))
        assert p.moments.m2 == float(Fraction(k * s2 - s1 * s1, k))
    else:  # large values: Arrow's float kernels
        assert p.moments.mean == pytest.approx(float(Fraction(s1, k)), rel=1e-12)
        assert p.moments.m2 == pytest.approx(float(Fraction(k * s2 - s1 * s1, k)), rel=1e-9)


def _numpy_exact(df, numeric):
    """The exact part of each column's partial, computed here with numpy/pandas (the reference the
    device path must give): rows, nulls (NaN included), NaN, inf, (count, mean, M2) and (min, max)
    of the finite values."""
    out = {}
    for c in df.columns:
        s = df[c]
        rows = len(s)
        if c in numeric:
            v = s.to_numpy(dtype="float64", na_value=np.nan)
            nan = 0  # a pandas frame holds no NaN apart from its nulls (the Arrow conversion's rule)
            nulls = int(s.isna().sum())
            fin = v[np.isfinite(v)]
            inf = int(np.isinf(v).sum())
            mom = (fin.size, float(fin.mean()) if fin.size else 0.0, float(((fin - fin.mean()) ** 2).sum()) if fin.size else 0.0)
            mm = (float(fin.min()), float(fin.max())) if fin.size else (None, None)
            out[c] = (rows, nulls, nan, inf, mom, mm)
        else:
            out[c] = (rows, int(s.isna().sum()), 0, 0, None, None)
    return out


def _arrow_exact(df, numeric):
    """:func:`_numpy_exact` of a frame of ``pd.ArrowDtype`` columns, whose floats hold NaN apart
    from their nulls (as cuDF's do): NaN counted on its own, and among the nulls."""
    out = {}
    for c in df.columns:
        arr = df[c].array._pa_array.combine_chunks()
        rows, null = len(arr), arr.null_count
        if c not in numeric:
            out[c] = (rows, null, 0, 0, None, None)
            continue
        v = np.array([np.nan if x is None else float(x) for x in arr.to_pylist()])
        valid = ~np.array([x is None for x in arr.to_pylist()], dtype=bool)
        nan = int(np.isnan(v[valid]).sum())
        fin = v[np.isfinite(v)]
        inf = int(np.isinf(v).sum())
        mom = (fin.size, float(fin.mean()) if fin.size else 0.0, float(((fin - fin.mean()) ** 2).sum()) if fin.size else 0.0)
        mm = (float(fin.min()), float(fin.max())) if fin.size else (None, None)
        out[c] = (rows, null + nan, nan, inf, mom, mm)
    return out


def _device_like_frame(n, seed):
    """A frame as the device path sees it (cuDF-like Arrow columns): float NaN apart from nulls,
    +-inf, int columns with nulls, an id column, strings, a float32 column."""
    r = np.random.default_rng(seed)
    x = r.normal(0, 5, n)
    x[r.random(n) < 0.1] = np.nan
    x[r.random(n) < 0.05] = np.inf
    x[r.random(n) < 0.05] = -np.inf
    xnull = r.random(n) < 0.1
    i = r.integers(-40, 40, n)
    big = r.integers(0, 1 << 32, n)
    f32 = r.normal(3, 1, n).astype(np.float32)
    f32[r.random(n) < 0.05] = np.inf
    s = np.array(["a", "b", "c"], dtype=object)[r.integers(0, 3, n)]
    null = r.random(n) < 0.15
    cols = {
        "x": pa.array(x, mask=xnull),  # NaN values and nulls apart
        "i": pa.array(i, mask=null),
        "big": pa.array(big, mask=r.random(n) < 0.02),
        "f32": pa.array(f32),
        "c": pa.array(r.integers(0, 300, n), mask=null),
        "s": pa.array(s, mask=null),
    }
    return pa.table(cols).to_pandas(types_mapper=pd.ArrowDtype)


_FRAMES = {"pandas": lambda: _frame(1000, seed=5), "pandas-empty": lambda: _frame(1000, seed=5).iloc[:0],
           "arrow": lambda: _device_like_frame(1000, 6), "arrow-big": lambda: _device_like_frame(40_000, 7),
           "arrow-empty": lambda: _device_like_frame(10, 8).iloc[:0]}


def _no_exact_work(monkeypatch):
    """Make the exact part of a column's partial (moments, extrema, NaN/inf counts over the
    column) fail if it is computed: ``partial_with_exact`` has it from ``exact``."""
    import pyarrow.compute as pc

    import tabprep.stats.profile as prof
    import tabprep.stats.profile_numeric as prof_num

    def boom(*a, **k):
        raise AssertionError("the exact part was computed from the sample")

    for mod in (prof, prof_num):
        monkeypatch.setattr(mod, "_host_moments", boom, raising=False)
        monkeypatch.setattr(mod, "_exact_moments", boom, raising=False)
    monkeypatch.setattr(pc, "is_nan", boom)
    monkeypatch.setattr(pc, "min_max", boom)


def _assert_same_partials(got, want, columns, moments_rel=(1e-12, 1e-9)):
    """The partials ``got`` equal ``want`` column by column: counts, moments (to ``moments_rel``:
    mean, M2), extrema, frequent values, HLL registers, pending values; KLL medians within the
    sketch's rank error (its compactions draw random bits)."""
    from tabprep.stats.sketches import kll_load

    for c in columns:
        g, w = got[c], want[c]
        assert (g.kind, g.rows, g.nulls, g.nan, g.inf, g.sample_every, g.oov) == \
               (w.kind, w.rows, w.nulls, w.nan, w.inf, w.sample_every, w.oov), c
        assert (g.moments is None) == (w.moments is None) and (g.minmax is None) == (w.minmax is None), c
        if w.moments is not None:
            assert g.moments.count == w.moments.count
            assert g.moments.mean == pytest.approx(w.moments.mean, rel=moments_rel[0])
            assert g.moments.m2 == pytest.approx(w.moments.m2, rel=moments_rel[1])
            assert (g.minmax.min, g.minmax.max) == (w.minmax.min, w.minmax.max)
        if w.freq is not None:
            assert g.freq.keys.tolist() == w.freq.keys.tolist() and g.freq.counts.tolist() == w.freq.counts.tolist()
            assert (g.freq.n, g.freq.error) == (w.freq.n, w.freq.error)
        assert g.hll.registers.tolist() == w.hll.registers.tolist(), c
        assert (g.pending is None) == (w.pending is None), c
        if w.pending is not None:  # (a small sample, kept unsketched: the same values)
            assert g.pending.dtype == w.pending.dtype and np.sort(g.pending).tolist() == np.sort(w.pending).tolist(), c
        assert (g.kll is None) == (w.kll is None), c
        assert (g.kll_every, g.kll_slack, g.kll_values) == (w.kll_every, w.kll_slack, w.kll_values), c
        if w.kll is not None:
            gk, wk = kll_load(g.kll), kll_load(w.kll)
            assert gk.n == wk.n
            if wk.n:
                # KLL compacts with random bits: the medians agree within the sketches' rank error
                assert abs(wk.get_rank(gk.get_quantile(0.5)) - 0.5) <= 2 * wk.normalized_rank_error(False) + 1e-9


@pytest.mark.parametrize("every,kll_every", [(1, 1), (3, 1), (3, 4)])
@pytest.mark.parametrize("frame", sorted(_FRAMES))
def test_device_path_assembly_equals_the_whole_partition_path(every, kll_every, frame, monkeypatch):
    """The GPU profile (backend.profile_exact on the device, sketches from the strided sample
    copied to the host) assembles the same partial as the host path over the whole partition:
    checked on the CPU with the exact part computed by numpy here; the sample's own moments,
    extrema and NaN/inf counts are not computed (they would be thrown away)."""
    from tabprep.stats.profile import as_table, partial_table, partial_with_exact

    df = _FRAMES[frame]()
    if frame == "pandas":
        df.loc[[3, 7], "x"] = [np.inf, -np.inf]
    numeric = ["x", "i"] if frame.startswith("pandas") else ["x", "i", "big", "f32"]
    vocabs = {"c": pd.Index(np.arange(0, 300, 2))}
    exact = (_numpy_exact if frame.startswith("pandas") else _arrow_exact)(df, numeric)
    want = partial_table(as_table(df, list(df.columns)), every, vocabs, ["c"], kll_every=kll_every)
    with monkeypatch.context() as m:
        _no_exact_work(m)
        got = partial_with_exact(df, list(df.columns), exact, every, vocabs, ["c"], kll_every)
    _assert_same_partials(got, want, list(df.columns))


_VALUES = st.one_of(st.none(), st.just(float("nan")), st.just(float("inf")), st.just(float("-inf")),
                   st.integers(-3, 3).map(float), st.floats(-1e6, 1e6, allow_nan=False))


@settings(max_examples=30, deadline=None)
@given(xs=st.lists(_VALUES, max_size=60), ints=st.lists(st.one_of(st.none(), st.integers(-5, 5)), max_size=60),
       every=st.integers(1, 4))
def test_device_path_assembly_property(xs, ints, every):
    """Any float column (nulls, NaN apart from them, +-inf, duplicates) and int column with nulls:
    the sketches-only assembly equals the whole-partition host path."""
    from tabprep.stats.profile import as_table, partial_table, partial_with_exact

    n = min(len(xs), len(ints))
    x = pa.array([v for v in xs[:n]], type=pa.float64(), from_pandas=False)
    df = pa.table({"x": x, "i": pa.array(ints[:n], type=pa.int64())}).to_pandas(types_mapper=pd.ArrowDtype)
    want = partial_table(as_table(df, ["x", "i"]), every)
    got = partial_with_exact(df, ["x", "i"], _arrow_exact(df, ["x", "i"]), every)
    _assert_same_partials(got, want, ["x", "i"])


@pytest.mark.gpu
@GPU_SKIP
@pytest.mark.parametrize("kll_every", [1, 4])
@pytest.mark.parametrize("every", [1, 3])
def test_gpu_partial_frame_sketches_only_the_device_sample(every, kll_every, monkeypatch):
    """A cuDF partition (floats with NaN apart from nulls, +-inf, int nulls, ids, strings): the exact
    part from the device (``backend.profile_exact``), the sketches from the sample copied to the
    host without its own moments, extrema or NaN/inf counts; the same partials as the host's over
    the whole Arrow table."""
    import cudf

    from tabprep.stats.profile import partial_frame, partial_table

    for n in (1000, 40_000):
        table = pa.Table.from_pandas(_device_like_frame(n, 11), preserve_index=False)
        gdf = cudf.DataFrame.from_arrow(table)
        vocabs = {"c": pd.Index(np.arange(0, 300, 2))}
        want = partial_table(table, every, vocabs, ["c"], kll_every=kll_every)
        with monkeypatch.context() as m:
            _no_exact_work(m)
            got = partial_frame(gdf, table.column_names, every, vocabs, ["c"], kll_every)
        _assert_same_partials(got, want, table.column_names, moments_rel=(1e-9, 1e-9))


@pytest.mark.parametrize("n", [100, 40_000])  # (kept unsketched; sorted and sketched)
@pytest.mark.parametrize("dtype", ["int64", "float64", "big"])
def test_partial_leaves_the_callers_values_as_they_are(n, dtype):
    """The sample's values are sorted in place only in an array the partial made: a column's Arrow
    buffer, the fit's host values (``column_hook``'s chunks) and pending values keep their order."""
    from tabprep.stats.profile import _flush, _numeric_partial, column_partial, combine_columns

    r = np.random.default_rng(3)
    v = r.normal(0, 1, n) if dtype == "float64" else r.integers(-(1 << 40) if dtype == "big" else 0, 1 << 40, n)
    mask = r.random(n) < 0.1
    for m in (None, mask):
        arr = pa.array(v, mask=m)
        before = arr.to_numpy(zero_copy_only=False).copy()
        for every in (1, 3):
            column_partial(arr, every)
            column_partial(pa.chunked_array([arr.slice(0, n // 2), arr.slice(n // 2)]), every)
        assert np.array_equal(arr.to_numpy(zero_copy_only=False), before, equal_nan=True)
        host = v.copy()
        _numeric_partial(arr, arr.type, "int" if dtype != "float64" else "float", 1, None, None,
                         chunks=[(host, m)])
        assert np.array_equal(host, v)
    p = column_partial(pa.array(v[:50]))
    pending = p.pending.copy()
    _flush(p)
    combine_columns([p, column_partial(pa.array(v[50:60]))])
    assert np.array_equal(p.pending, pending)


def test_sketches_only_partial_of_an_arrow_float_column_sees_its_finite_values():
    """``exact=False`` on a float column numpy does not read as it is (half floats, decimals: Arrow's
    kernels): no moments, yet the KLL and HLL see only the finite non-null values, as with
    ``exact=True``."""
    import decimal

    from tabprep.stats.profile import column_partial
    from tabprep.stats.sketches import kll_load

    half = pa.array(np.array([1.5, np.nan, np.inf, 2.0, -np.inf, 0.0], dtype=np.float16),
                    mask=np.array([0, 0, 0, 0, 0, 1], dtype=bool))
    dec = pa.array([decimal.Decimal("1.5"), None, decimal.Decimal("2.0"), decimal.Decimal("1.5")])
    for col in (half, dec):
        p = column_partial(col, exact=False)
        assert p.kind == "float" and p.moments is None and p.minmax is None and (p.nan, p.inf) == (0, 0)
        sk = kll_load(p.kll)
        assert (sk.n, sk.get_min_value(), sk.get_max_value()) == (2 if col is half else 3, 1.5, 2.0)
        assert round(p.hll.estimate()) == 2
    whole = column_partial(dec)
    assert kll_load(whole.kll).n == 3 and whole.hll.registers.tolist() == column_partial(dec, exact=False).hll.registers.tolist()


def test_device_path_without_exact_moments_uses_the_whole_column():
    """A numeric column whose exact entry has no moments (not one ``profile_exact`` counted as
    numeric): its moments and extrema are the whole column's, never the sample's."""
    from tabprep.stats.profile import partial_with_exact

    df = pd.DataFrame({"i": np.arange(30, dtype=np.int64) ** 2, "j": np.arange(30, dtype=np.int64)})
    exact = {"i": (30, 0, 0, 0, None, None), "j": (30, 0, 0, 0, (30, 14.5, 2247.5), (0.0, 29.0))}
    got = partial_with_exact(df, ["i", "j"], exact, 4)
    i = df["i"].to_numpy()
    assert (got["i"].moments.count, got["i"].minmax.min, got["i"].minmax.max) == (30, 0.0, 841.0)
    assert got["i"].moments.mean == pytest.approx(i.mean()) and got["i"].moments.m2 == pytest.approx(((i - i.mean()) ** 2).sum())
    assert (got["j"].moments.count, got["j"].moments.mean, got["j"].minmax.max) == (30, 14.5, 29.0)
    assert got["i"].sample_every == got["j"].sample_every == 4


@pytest.mark.gpu
@GPU_SKIP
@pytest.mark.parametrize("n", [4000, 100_000])  # (samples kept pending; samples sorted on the device)
def test_gpu_profile_equals_cpu_profile_with_sampling(n, tmp_path, monkeypatch):
    """cuDF partitions: exact fields from the device, sketches from the strided sample (sorted on
    the device when large); the same profile as the CPU's on the same single partition
    (sample_every 4), the quantiles within the KLL's bound plus the thinning's of the sample's
    exact ranks (numpy)."""
    import base64

    from tabprep.stats.sketches import kll_load
    from tabprep.workflow import workflow as wfmod

    df = _frame(n, seed=9)
    path = str(tmp_path / "p.parquet")
    df.to_parquet(path)
    monkeypatch.setattr(wfmod, "PROFILE_SAMPLE_ROWS", n // 4)  # every 4th row sketched
    cpu = tp.profile(tp.Dataset(path, cpu=True), categorical=["c"])
    gpu = tp.profile(tp.Dataset(path, cpu=False), categorical=["c"])
    assert gpu.doc["sample_every"] == cpu.doc["sample_every"] == 4
    assert gpu.doc["kll_every"] == cpu.doc["kll_every"]
    for c in df.columns:
        a, b = gpu[c], cpu[c]
        for key in ("count", "nulls", "nan", "inf", "min", "max", "distinct", "top", "frequent_n", "oov"):
            assert a.get(key) == b.get(key), (c, key)
        for key in ("mean", "std"):
            if b.get(key) is not None:
                assert a[key] == pytest.approx(b[key], rel=1e-9), (c, key)
    for c in ("x", "i"):
        col = gpu.doc["columns"][c]
        sample = df[c].to_numpy(dtype=np.float64)[::4]
        sample = np.sort(sample[np.isfinite(sample)])
        eps = kll_load(base64.b64decode(col["kll"])).normalized_rank_error(False) + col["quantile_thinning_error"]
        for q, val in col["quantiles"].items():
            lo = np.searchsorted(sample, val, side="left") / sample.size
            hi = np.searchsorted(sample, val, side="right") / sample.size
            assert lo - eps <= float(q) <= hi + eps, (c, q)


def test_fit_profile_reuses_the_fit_pass_read(tmp_path, monkeypatch):
    """The training profile is computed in the fit pass's own per-partition task, from the Arrow
    table that task read: no file is read again, and no frame is converted back to Arrow."""
    import tabprep.io.dataset as dataset_mod
    import tabprep.stats.profile as profile_mod

    df = _frame(1800)
    for i in range(3):
        df.iloc[i * 600:(i + 1) * 600].to_parquet(tmp_path / f"part-{i}.parquet")
    reads = []
    real_read = dataset_mod._read_piece

    def counting_read(piece, *args, **kwargs):
        reads.append(kwargs.get("columns"))
        return real_read(piece, *args, **kwargs)

    def no_conversion(*_args, **_kwargs):
        raise AssertionError("the profile converted a partition to Arrow again")

    monkeypatch.setattr(dataset_mod, "_read_piece", counting_read)
    monkeypatch.setattr(profile_mod.backend, "frame_to_arrow", no_conversion)

    def fit(profile):
        reads.clear()
        wf = tp.Workflow((["c"] >> ops.Categorify()) + (["x"] >> ops.FillMissing() >> ops.Normalize()) + ["i"])
        wf.fit(str(tmp_path), profile=profile)
        return wf, list(reads)

    plain, plain_reads = fit(False)
    profiled, profiled_reads = fit(True)
    assert len(plain_reads) == len(profiled_reads) == 3  # one read per file, with or without the profile
    assert sorted(profiled_reads[0]) == ["c", "i", "x"]  # the profile's extra column joins the same read
    assert profiled.profile_["columns"]["x"]["nulls"] == int(df["x"].isna().sum())
    assert profiled.profile_["columns"]["i"]["max"] == float(df["i"].max())


def test_fit_profile_of_the_columns_the_fit_reads_equals_tp_profile_and_exact_sums(tmp_path, monkeypatch):
    # the fit computes the profile of the int columns its ops read from the host columns it reads
    # them into (fusion's hook); it must give tp.profile's profile of the same files and sampling,
    # and exact moments (reference: Python ints) over values whose int64 sums of squares need
    # several blocks (|value| < 2**24: blocks of 2**15 rows), with nulls and negative values
    from fractions import Fraction

    r = np.random.default_rng(3)
    frames = []
    for k in range(2):
        n = 40_000
        i = r.integers(-(2**24) + 1, 2**24, n)
        c = r.integers(0, 50, n) * 7919
        frame = pd.DataFrame({"i": pd.array(i, dtype="Int64"), "c": pd.array(c, dtype="Int64"),
                              "x": r.normal(size=n), "label": r.integers(0, 2, n)})
        frame.loc[r.random(n) < 0.1, "i"] = pd.NA
        frame.loc[r.random(n) < 0.05, "c"] = pd.NA
        frame.to_parquet(tmp_path / f"part-{k}.parquet")
        frames.append(frame)
    df = pd.concat(frames, ignore_index=True)
    import tabprep.stats.profile as prof

    after = []  # the columns the profile computed after the fit's partials, not in fusion's hook
    real = prof.partial_frame
    monkeypatch.setattr(prof, "partial_frame", lambda df, columns, *a, **k: after.append(list(columns)) or real(df, columns, *a, **k))
    wf = tp.Workflow((["c"] >> ops.Categorify()) + (["i", "x"] >> ops.FillMissing() >> ops.Normalize()) + ["label"])
    wf.fit(str(tmp_path), profile=3)
    assert after == [["x", "label"]] * 2  # c and i: from the fit's host columns (floats keep NaN apart from nulls)
    monkeypatch.setattr(prof, "partial_frame", real)
    got = wf.profile_["columns"]
    want = tp.profile(str(tmp_path), columns=["c", "i", "x", "label"], categorical=["c"], sample_every=3).columns
    random = {"kll", "quantiles", "histogram"}  # (DataSketches' KLL compacts at random: within its bound)
    for col in ("i", "x", "label"):
        assert {k: v for k, v in got[col].items() if k not in random} == {k: v for k, v in want[col].items() if k not in random}, col
    # c, read by Categorify alone: its counts are the fit's exact ones, tp.profile's over every row
    assert got["c"] == tp.profile(str(tmp_path), columns=["c"], categorical=["c"], sample_every=1)["c"]
    for col in ("i", "x"):  # quantiles: ranks in the data within KLL's 1.3% plus the 1-in-3 sample's 1.0% (99%)
        data = np.sort(df[col].dropna().to_numpy(dtype=float))
        for q, v in got[col]["quantiles"].items():
            assert abs(np.searchsorted(data, v, side="right") / data.size - float(q)) <= 0.03, (col, q)
    good = [int(v) for v in df["i"].dropna()]
    k, s1, s2 = len(good), sum(good), sum(v * v for v in good)
    assert got["i"]["nulls"] == int(df["i"].isna().sum())
    assert (got["i"]["min"], got["i"]["max"]) == (float(min(good)), float(max(good)))
    assert got["i"]["mean"] == pytest.approx(float(Fraction(s1, k)), rel=1e-15)  # (each partition's rounded once)
    assert got["i"]["std"] == pytest.approx(float(Fraction(k * s2 - s1 * s1, k * k)) ** 0.5, rel=1e-15)
    truth = df["c"].dropna().astype(int).value_counts()
    assert got["c"]["distinct"] == truth.size  # 50 ids: exact


# -- the training profile takes exact value counts from Categorify ------------------------------------
def _exact_counts(s: pd.Series) -> "list[list[int]]":
    """``[value, count]`` of the non-null values of ``s``, most frequent first, ties by value
    (pandas, computed here)."""
    vc = s.dropna().astype("int64").value_counts()
    order = sorted(vc.items(), key=lambda kv: (-kv[1], kv[0]))
    return [[int(v), int(n)] for v, n in order]


def _assert_exact_ids(entry: dict, s: pd.Series) -> None:
    """A profile entry of an id column holds the exact value counts of ``s`` (nulls dropped)."""
    counts = _exact_counts(s)
    nonnull = int(s.notna().sum())
    assert entry["kind"] == "category" and entry["dtype"] == "int64"
    assert entry["count"] == len(s) and entry["nulls"] == int(s.isna().sum())
    assert entry["null_rate"] == pytest.approx(entry["nulls"] / len(s))
    assert entry["frequent"] == counts[:256]
    assert entry["top"] == [{"value": v, "count": n} for v, n in counts[:20]]
    assert (entry["frequent_n"], entry["frequent_error"], entry["frequent_exact"]) == (nonnull, 0, True)
    assert (entry["distinct"], entry["distinct_exact"], entry["distinct_sampled"]) == (len(counts), True, False)
    assert entry["top_share"] == pytest.approx(sum(n for _, n in counts[:20]) / nonnull, rel=1e-15)
    assert entry["tail_share"] == pytest.approx(1 - entry["top_share"], rel=1e-15)
    assert "quantiles" not in entry and "mean" not in entry


def _id_frames(seed: int = 11) -> "list[pd.DataFrame]":
    """Two files' worth of rows and an empty one: ``c`` has about 2,000 distinct ids (more than
    the profile's 1,024 frequent-value counters), ``g`` 40, both with nulls; ``d`` 50 ids; ``e``
    ids with nulls; ``a``/``b`` a shared vocabulary; ``x`` floats with NaN (null once written), +inf and -inf."""
    r = np.random.default_rng(seed)
    frames = []
    for n in (30_000, 0, 20_000):
        f = pd.DataFrame({
            "c": pd.array((r.zipf(1.2, n) % 4000) * 7, dtype="Int64"),
            "g": pd.array(r.integers(0, 40, n), dtype="Int64"),
            "d": pd.array(r.integers(0, 50, n), dtype="Int64"),
            "e": pd.array(r.integers(0, 30, n), dtype="Int64"),
            "a": pd.array(r.integers(0, 20, n), dtype="Int64"),
            "b": pd.array(r.integers(10, 30, n), dtype="Int64"),
            "x": r.normal(size=n)})
        for col, rate in (("c", 0.05), ("g", 0.2), ("e", 0.1)):
            f.loc[r.random(n) < rate, col] = pd.NA
        if n:
            f.loc[[0, 5, 9], "x"] = [np.inf, -np.inf, np.nan]
        frames.append(f)
    return frames


def _id_workflow() -> tp.Workflow:
    return tp.Workflow((["c", "g"] >> ops.Categorify()) + (["d"] >> ops.Categorify(max_size=10))
                       + (["e"] >> ops.FillMissing(fill_val=3) >> ops.Categorify())
                       + ([["a", "b"]] >> ops.Categorify()) + ["x"])


def test_fit_profile_takes_categorify_exact_counts(tmp_path):
    """The training profile of a column that a Categorify reads as it is (its own vocabulary,
    no frequency limit) holds the fit's exact value counts: every frequent value and the exact
    distinct count, also past the sketches' capacity and with the sketches sampling, across
    files (one empty), save/load and ``inspect``. Columns whose vocabulary is not their exact
    counts (``max_size``, a fill before Categorify, a shared vocabulary) keep the sketches of
    tp.profile."""
    frames = _id_frames()
    for k, f in enumerate(frames):
        pq.write_table(pa.Table.from_pandas(f, preserve_index=False), tmp_path / f"part-{k}.parquet")
    df = pd.concat(frames, ignore_index=True)
    assert df["c"].nunique() > 1024
    wf = _id_workflow().fit(str(tmp_path), profile=4)
    got = wf.profile_["columns"]
    assert wf.profile_["sample_every"] == 4
    _assert_exact_ids(got["c"], df["c"])
    _assert_exact_ids(got["g"], df["g"])
    # the others: tp.profile's entries of the same files and sampling (KLL compacts at random)
    want = tp.profile(str(tmp_path), columns=list(got), categorical=["c", "g", "d", "e", "a", "b"], sample_every=4).columns
    random = {"kll", "quantiles", "histogram"}
    for col in ("d", "e", "a", "b", "x"):
        assert {k: v for k, v in got[col].items() if k not in random} == \
            {k: v for k, v in want[col].items() if k not in random}, col
    assert got["d"]["distinct"] == 50 and got["d"]["distinct_sampled"]  # the data's ids, not the 7 in the vocabulary
    assert got["e"]["nulls"] == int(df["e"].isna().sum())  # the raw column's nulls, not the filled one's
    assert (got["x"]["inf"], got["x"]["nulls"]) == (4, 2)  # (pandas' NaN is written as null)
    # exact where both are exact: tp.profile over every row of g (40 ids) gives the same entry
    assert got["g"] == tp.profile(str(tmp_path), columns=["g"], categorical=["g"], sample_every=1)["g"]
    # saved, loaded and shown by inspect as computed
    wf.save(str(tmp_path / "wf"))
    on_disk = json.loads((tmp_path / "wf" / "stats" / "profile.json").read_text())
    assert on_disk == json.loads(json.dumps(wf.profile_))
    assert tp.Workflow.load(str(tmp_path / "wf")).profile_ == on_disk
    from click.testing import CliRunner

    from tabprep.cli.main import cli

    res = CliRunner().invoke(cli, ["inspect", str(tmp_path / "wf"), "--json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    shown = json.loads(res.output)["training_profile"]["columns"]["c"]
    assert shown["distinct"] == df["c"].nunique() and shown["null_rate"] == pytest.approx(df["c"].isna().mean())


def test_fit_profile_exact_counts_on_frames(backend):
    """The same on dask frames' partitions (empty ones included; pandas or cuDF), and with the
    default sampling: the Categorify column's counts are exact, the others unchanged."""
    df = pd.concat(_id_frames(5), ignore_index=True).iloc[:6000].reset_index(drop=True)
    wf = tp.Workflow((["c", "g"] >> ops.Categorify()) + ["d"])
    wf.fit(make_dataset(df[["c", "g", "d"]], backend, nparts=4, empties=True), profile=True)
    got = wf.profile_["columns"]
    _assert_exact_ids(got["c"], df["c"])
    _assert_exact_ids(got["g"], df["g"])
    assert got["d"]["kind"] == "int" and got["d"]["distinct"] == df["d"].nunique()


@pytest.mark.parametrize("merged_max", [None, 1500])
def test_sketches_of_pending_samples_equal_the_partitions_sketches(merged_max, monkeypatch):
    """Small samples are kept unsketched in the partials and sketched once, merged (the fit's
    profile samples few rows a partition); a merge holding more than ``PENDING_MERGED`` values
    sketches them then (here: ``PENDING_MERGED`` 1,500 values, fewer than the 4 partitions' 4,000). Whichever happens, the profile is the one of sketches built per partition
    (``PENDING_MAX = 0``: every partial sketches its sample): the same exact fields, frequent
    values and distinct counts (fewer distinct values than counters), and quantiles within the
    KLL bound of the data's (numpy, here); across 6 partitions with an empty one, nulls, NaN, inf."""
    import tabprep.stats.profile as prof

    r = np.random.default_rng(21)
    n = 12_000
    x = r.normal(5, 2, n)
    x[r.random(n) < 0.05] = np.inf
    x[:7] = -np.inf
    df = pd.DataFrame({"x": x, "i": pd.array(r.integers(-40, 300, n), dtype="Int64"),
                       "c": pd.array(r.zipf(1.5, n) % 500, dtype="Int64")})
    df.loc[r.random(n) < 0.1, "i"] = pd.NA
    df.loc[r.random(n) < 0.03, "x"] = np.nan

    import inspect

    flushed = []  # (the caller that sketched pending values, how many)
    real_flush = prof._flush

    def spy(p):
        if p.pending is not None:
            flushed.append((inspect.stack()[1].function, p.pending.size))
        return real_flush(p)

    monkeypatch.setattr(prof, "_flush", spy)
    limits = prof.PENDING_MAX, prof.PENDING_MERGED

    def run(limit, merged):
        monkeypatch.setattr(prof, "PENDING_MAX", limit)
        monkeypatch.setattr(prof, "PENDING_MERGED", merged)
        flushed.clear()
        return tp.profile(make_dataset(df, "cpu", nparts=6, empties=True), categorical=["c"], sample_every=3).columns

    eager = run(0, limits[1])
    assert not [f for f in flushed if f[1]]  # (every partial sketched its sample; the empty ones have none)
    got = run(limits[0], merged_max or limits[1])
    callers = {name for name, size in flushed if size > 3000}  # (the 4 partitions' samples together)
    assert callers == ({"combine_columns"} if merged_max else {"_flushed"}), flushed
    random = {"kll", "quantiles", "histogram"}
    for col in ("x", "i", "c"):
        assert {k: v for k, v in got[col].items() if k not in random} == \
            {k: v for k, v in eager[col].items() if k not in random}, col
    assert got["x"]["inf"] == int(np.isinf(df["x"]).sum()) and got["i"]["nulls"] == int(df["i"].isna().sum())
    for col in ("x", "i"):  # ranks in the data: KLL's 1.3% plus the 1-in-3 sample's (DKW, 99%: 2.1%)
        data = np.sort(df[col].dropna().to_numpy(dtype=float))
        data = data[np.isfinite(data)]
        for q, v in got[col]["quantiles"].items():
            assert abs(np.searchsorted(data, v, side="right") / data.size - float(q)) <= 0.035, (col, q)


def test_fit_profile_keeps_sketches_for_a_categorify_subclass_with_its_own_fit(tmp_path):
    """A Categorify subclass whose fit keeps other counts (here: only the 5 most frequent
    values) is not a source of exact counts: its column's profile is the sketches' (all 60 ids,
    the data's counts), not the subclass's vocabulary."""
    class TopFive(ops.Categorify):
        reads_ids = True  # (a subclass's name is not Categorify's: it says it reads ids)

        def fit_finalize(self, columns, combined):
            super().fit_finalize(columns, combined)
            for st in self.stats_.values():
                st["values"], st["freqs"] = st["values"][:5], st["freqs"][:5]

    r = np.random.default_rng(4)
    df = pd.DataFrame({"c": pd.array(r.integers(0, 60, 5000), dtype="Int64")})
    df.to_parquet(tmp_path / "d.parquet")
    wf = tp.Workflow(["c"] >> TopFive()).fit(str(tmp_path), profile=True)
    entry = wf.profile_["columns"]["c"]
    assert len(wf.nodes[-1].op.stats_["c"]["values"]) == 5 and entry["distinct"] == 60
    _assert_exact_ids(entry, df["c"])  # (5,000 rows: every row sketched, 60 < 1,024 counters: exact)
