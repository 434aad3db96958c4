"""The thinned KLL sketch of data profiles (issue #35): every ``kll_every``-th value of each
sorted chunk, one factor per pass. Checked against numpy's exact ranks and quantiles computed
here, in the KLL sketch's exact regime (the thinning's error alone, a deterministic bound) and at
scale (the KLL's own bound plus the thinning's), and across save/load and drift."""
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
from tabprep.stats import profile as prof_mod
from tabprep.stats.profile import (ProfileStat, _flushed, column_partial, combine_columns, combine_tables,
                                   kll_every_for)
from tabprep.stats.sketches import kll_load, kll_of, kll_of_sorted, thinning_rank_error, thinning_slack

from conftest import make_dataset


def _exact_rank(sorted_values: np.ndarray, x: float) -> float:
    """The share of ``sorted_values`` that are <= ``x`` (numpy)."""
    return np.searchsorted(sorted_values, x, side="right") / sorted_values.size


def _chunk_values(r: np.random.Generator, n: int) -> np.ndarray:
    """Floats with ties (rounded), nulls (NaN), +-inf."""
    v = np.round(r.lognormal(0, 1, n), 1)
    v[r.random(n) < 0.05] = np.nan
    v[r.random(n) < 0.01] = np.inf
    v[r.random(n) < 0.01] = -np.inf
    return v


def test_thinning_slack_is_the_largest_count_error_of_a_thinned_chunk():
    """Every threshold's count from the kept values (times ``f``) is within ``f // 2`` of the
    exact count, in any chunk length; the bound is reached (it is the tight one)."""
    for f in range(1, 10):
        worst = 0
        for m in range(0, 3 * f + 4):
            s = np.arange(m, dtype=np.float64)
            kept = s[(f - 1) // 2::f]
            for c in range(m + 1):  # thresholds c - 0.5: c values at or below
                worst = max(worst, abs(np.count_nonzero(kept < c - 0.5) * f - c))
            worst = max(worst, abs(kept.size * f - m))
        assert worst == thinning_slack(f) == f // 2


def test_thinned_chunks_ranks_within_the_thinning_bound_of_numpy(monkeypatch):
    """Chunks of unequal lengths (nulls, +-inf, ties), each sketched in its partition, thinned by
    16 and merged: in the KLL's exact regime (no compaction) every normalized rank is within the
    recorded thinning bound of numpy's, and that bound is ``2 S / (n - S)``, S = 8 a chunk."""
    monkeypatch.setattr(prof_mod, "PENDING_MAX", 0)  # (each partition's sample sketched there)
    r = np.random.default_rng(5)
    chunks = [_chunk_values(r, n) for n in (97, 301, 640, 1000, 777)]
    parts = [column_partial(pa.array(c, from_pandas=True), kll_every=16) for c in chunks]
    p = _flushed(combine_columns(parts))
    finite = np.sort(np.concatenate([c[np.isfinite(c)] for c in chunks]))
    sk = kll_load(p.kll)
    assert not sk.is_estimation_mode()  # (the KLL holds every kept value: the thinning's error alone)
    assert (p.kll_every, p.kll_slack, p.kll_values) == (16, 5 * 8, finite.size)
    assert sk.n == sum(len(np.sort(c[np.isfinite(c)])[7::16]) for c in chunks)
    bound = thinning_rank_error(p.kll_slack, p.kll_values)
    assert bound == pytest.approx(2 * 40 / (finite.size - 40))
    errs = [abs(sk.get_rank(x, True) - _exact_rank(finite, x)) for x in np.unique(finite)]
    assert max(errs) <= bound + 1e-12
    assert max(errs) > 0  # (thinned indeed)
    # the profile's quantiles: the reported value's exact rank interval is within the bound of q
    doc = prof_mod.finalize_profile({"x": combine_columns(parts)}, ["x"], 1, 16)
    col = doc["columns"]["x"]
    assert (doc["kll_every"], col["kll_every"], col["quantile_thinning_error"]) == (16, 16, bound)
    for q, v in col["quantiles"].items():
        lo, hi = np.searchsorted(finite, v, "left") / finite.size, np.searchsorted(finite, v, "right") / finite.size
        assert lo - bound - 1e-12 <= float(q) <= hi + bound + 1e-12, q


_VALUES = st.one_of(st.none(), st.just(float("nan")), st.just(float("inf")), st.just(float("-inf")),
                    st.integers(-3, 3).map(float), st.floats(-1e6, 1e6, allow_nan=False))


@settings(max_examples=40, deadline=None)
@given(xs=st.lists(_VALUES, max_size=150), cuts=st.lists(st.integers(0, 150), max_size=3),
       f=st.integers(1, 6), ints=st.booleans())
def test_thinned_sketch_property(xs, cuts, f, ints):
    """Any small column split into partitions: with ``f == 1`` the sketch is the untinned one (the
    same bytes as before the option existed); with any ``f`` each rank is within the recorded
    bound of numpy's (the KLL exact at this size) and ``kll_values`` counts the finite values."""
    if ints:
        xs = [None if v is None or not np.isfinite(v) else float(int(v)) for v in xs]
    arr = pa.array(xs, type=pa.float64(), from_pandas=False)
    if ints:
        arr = arr.cast(pa.int64())
    bounds = sorted({0, len(xs), *[min(c, len(xs)) for c in cuts]})
    pieces = [arr.slice(a, b - a) for a, b in zip(bounds[:-1], bounds[1:])] or [arr]
    finite = np.sort(np.array([v for v in xs if v is not None and np.isfinite(v)], dtype=np.float64))
    for sketch_here in (True, False):
        old = prof_mod.PENDING_MAX
        prof_mod.PENDING_MAX = -1 if sketch_here else old
        try:
            parts = [column_partial(p, kll_every=f) for p in pieces]
            if f == 1:
                plain = [column_partial(p) for p in pieces]
                for a, b in zip(parts, plain):
                    assert a.kll == b.kll and (a.pending is None) == (b.pending is None)
        finally:
            prof_mod.PENDING_MAX = old
        p = _flushed(combine_columns(parts))
        sk = kll_load(p.kll)
        assert p.kll_values == finite.size and p.kll_every == f
        if f == 1:
            assert p.kll_slack == 0 and kll_of_sorted(finite, 1) == kll_of(finite)
            assert sk.n == finite.size
        bound = thinning_rank_error(p.kll_slack, p.kll_values)
        for x in np.unique(finite):
            got = sk.get_rank(x, True) if not sk.is_empty() else 0.0
            assert abs(got - _exact_rank(finite, x)) <= bound + 1e-12


def test_partials_thinned_differently_are_never_merged():
    a = column_partial(pa.array(np.arange(50_000, dtype=np.float64)), kll_every=1)
    b = column_partial(pa.array(np.arange(50_000, dtype=np.float64)), kll_every=4)
    with pytest.raises(ValueError, match=r"kll_every 1, 4"):
        combine_columns([a, b])
    small = column_partial(pa.array([1.0, 2.0]), kll_every=4)  # (pending values: thinned later, by 4)
    with pytest.raises(ValueError, match=r"column 'x'.*kll_every 1, 4"):
        combine_tables([{"x": a}, {"x": small}])
    with pytest.raises(ValueError, match="kll_every must be an int >= 1"):
        ProfileStat(["x"], kll_every=0)
    with pytest.raises(ValueError, match="kll_every must be an int >= 1"):
        column_partial(pa.array([1.0]), kll_every=1.5)


def test_kll_every_rule_depends_on_the_sample_size_only():
    assert [kll_every_for(n) for n in (0, 16_383, 16_384, 50_000, 65_536, 131_072, 1_000_000, 10**8)] == \
        [1, 1, 2, 4, 8, 16, 16, 16]


def _write_parts(tmp_path, parts):
    for i, df in enumerate(parts):
        pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp_path / f"part_{i}.parquet")
    return str(tmp_path)


def test_thinned_profile_at_scale_within_the_documented_bound(tmp_path):
    """1.2M rows in 8 files (nulls, +-inf, ties, an int column), ``tp.profile`` with its default
    factor (16 at this sample size): quantiles, histogram and ranks against numpy within the KLL's
    bound plus the recorded thinning bound; counts from the exact part; saved and loaded."""
    r = np.random.default_rng(11)
    frames = [pd.DataFrame({"x": _chunk_values(r, 150_000), "i": r.integers(-1000, 1000, 150_000)}) for _ in range(8)]
    prof = tp.profile(_write_parts(tmp_path, frames), sample_every=1)
    assert prof.doc["kll_every"] == 16 == kll_every_for(1_200_000)
    prof.save(str(tmp_path / "out"))
    doc = json.loads((tmp_path / "out" / "profile.json").read_text())
    assert doc["kll_every"] == 16
    whole = pd.concat(frames, ignore_index=True)
    for name in ("x", "i"):
        col = doc["columns"][name]
        v = whole[name].to_numpy(dtype=np.float64)
        finite = np.sort(v[np.isfinite(v)])
        sk = kll_load(__import__("base64").b64decode(col["kll"]))
        thin = col["quantile_thinning_error"]
        assert col["kll_every"] == 16 and 0 < thin <= 8 * 16 / 150_000 * 1.01  # (about f / chunk values)
        eps = sk.normalized_rank_error(False) + thin
        assert col["count"] == len(whole) and col["numeric_count"] == finite.size  # (not the KLL's n)
        assert sk.n < finite.size / 15
        for q, val in col["quantiles"].items():
            lo, hi = _exact_rank(finite, np.nextafter(val, -np.inf)), _exact_rank(finite, val)
            assert lo - eps <= float(q) <= hi + eps, (name, q)
        edges = np.asarray(col["histogram"]["edges"])
        counts = np.asarray(col["histogram"]["counts"])
        assert counts.sum() == pytest.approx(finite.size, rel=1e-12)
        exact = np.histogram(finite, bins=edges)[0]
        # each bin's mass: a difference of two ranks, each within eps
        assert np.abs(counts - exact).max() <= 2 * eps * finite.size
        grid = np.quantile(finite, np.linspace(0.02, 0.98, 25))
        assert max(abs(sk.get_rank(x, True) - _exact_rank(finite, x)) for x in grid) <= eps


def test_thinned_and_unthinned_profiles_of_the_same_data_show_no_drift(backend):
    """A profile with ``kll_every=8`` against one with 1 (the same rows, on the backend's path:
    the GPU's device exact part plus the host's sample): no numeric column drifts, the counts are
    the same exact figures, the thinning is recorded."""
    r = np.random.default_rng(2)
    n = 60_000
    df = pd.DataFrame({"x": _chunk_values(r, n), "i": r.integers(0, 500, n)})
    thin = tp.profile(make_dataset(df, backend, nparts=3), kll_every=8)
    full = tp.profile(make_dataset(df, backend, nparts=3), kll_every=1)
    assert (thin.doc["kll_every"], full.doc["kll_every"]) == (8, 1)
    x = df["x"].to_numpy()
    finite = np.sort(x[np.isfinite(x)])
    for c in ("x", "i"):
        a, b = thin[c], full[c]
        assert (a["count"], a["nulls"], a["numeric_count"], a["min"], a["max"]) == \
               (b["count"], b["nulls"], b["numeric_count"], b["min"], b["max"])
        assert a["quantile_thinning_error"] > 0 == b["quantile_thinning_error"]
    sk = kll_load(__import__("base64").b64decode(thin["x"]["kll"]))
    eps = sk.normalized_rank_error(False) + thin["x"]["quantile_thinning_error"]
    assert abs(sk.get_rank(float(np.median(finite)), True) - _exact_rank(finite, float(np.median(finite)))) <= eps
    rep = tp.drift(full, thin)
    assert not rep.drifted, rep.drifted


def test_cli_profile_kll_every(tmp_path):
    """``tabprep profile --kll-every 4`` records the factor and its bound in profile.json; 0 is
    refused by name."""
    from click.testing import CliRunner

    from tabprep.cli.main import cli

    r = np.random.default_rng(3)
    data = _write_parts(tmp_path, [pd.DataFrame({"x": _chunk_values(r, 20_000)}) for _ in range(2)])
    res = CliRunner().invoke(cli, ["profile", data, "--out", str(tmp_path / "p"), "--kll-every", "4", "-q"])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "p" / "profile.json").read_text())
    assert doc["kll_every"] == doc["columns"]["x"]["kll_every"] == 4
    assert 0 < doc["columns"]["x"]["quantile_thinning_error"] < 1e-3
    bad = CliRunner().invoke(cli, ["profile", data, "--out", str(tmp_path / "q"), "--kll-every", "0"])
    assert bad.exit_code == 2 and "--kll-every" in bad.output


def test_small_partitions_with_a_vocabulary_are_thinned_once_merged():
    """Many small partitions profiled against a vocabulary (what ``tp.drift`` does): their samples
    wait unsketched and are thinned once merged, so the thinning's bound is one chunk's (not one
    per partition: 40 x 8 values would be 4% here); the OOV counts are numpy's."""
    from tabprep.stats.profile import partial_table

    r = np.random.default_rng(8)
    frames = [pd.DataFrame({"c": r.integers(0, 60, 300), "i": r.integers(-20, 90, 300)}) for _ in range(40)]
    vocab = pd.Index(np.arange(0, 50))
    parts = [partial_table(pa.Table.from_pandas(f, preserve_index=False), 1, {"c": vocab, "i": vocab}, ["c"],
                           kll_every=16) for f in frames]
    doc = prof_mod.finalize_profile(combine_tables(parts), ["c", "i"], 1, 16)
    for name in ("c", "i"):
        v = np.concatenate([f[name].to_numpy() for f in frames])
        assert doc["columns"][name]["oov"] == int(np.count_nonzero(~np.isin(v, vocab))), name
    n = 40 * 300
    col = doc["columns"]["i"]
    assert col["quantile_thinning_error"] == pytest.approx(2 * 8 / (n - 8))
    finite = np.sort(np.concatenate([f["i"].to_numpy() for f in frames]).astype(np.float64))
    sk = kll_load(__import__("base64").b64decode(col["kll"]))
    eps = sk.normalized_rank_error(False) + col["quantile_thinning_error"]
    assert max(abs(sk.get_rank(x, True) - _exact_rank(finite, x)) for x in np.unique(finite)) <= eps
