"""Drift defects from an adversarial review: each case recomputed in the test from the documented
formula (docs/guide/data-quality.md) with numpy / scipy, independently of tabprep's code."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabprep as tp


def test_values_that_became_inf_are_flagged_by_inf_rate():
    x = np.random.default_rng(0).normal(size=100000)
    ref = tp.profile(pd.DataFrame({"x": x}))
    for cur_x, share in [(np.full_like(x, np.inf), 1.0), (np.where(np.arange(x.size) % 10 == 0, -np.inf, x), 0.1)]:
        rep = tp.drift(ref, tp.profile(pd.DataFrame({"x": cur_x})))
        e = rep.columns["x"]
        # documented: |share of +-inf among the current's rows - the reference's| (threshold 0.05)
        expected = abs(np.isinf(cur_x).mean() - np.isinf(x).mean())
        assert e["metrics"]["inf_rate"] == pytest.approx(expected) == pytest.approx(share)
        assert rep.drift and "inf_rate" in e["exceeded"] and e["status"] == "drift"
    same = tp.drift(ref, tp.profile(pd.DataFrame({"x": x[::-1].copy()})))
    assert not same.drift and same.columns["x"]["metrics"]["inf_rate"] == 0.0


def _df(n=1000):
    r = np.random.default_rng(1)
    return pd.DataFrame({"x": r.normal(size=n), "s": np.array(["a", "b", "c"])[r.integers(0, 3, n)]})


def test_an_empty_side_is_its_own_status_and_counts_as_drift(tmp_path):
    import json
    import subprocess
    import sys

    df = _df()
    ref = tp.profile(df)
    for rep, side in [(tp.drift(ref, tp.profile(df.iloc[:0])), "current"), (tp.drift(tp.profile(df.iloc[:0]), ref), "reference"),
                      (tp.drift(ref, {"format": "tabprep-serving-stats", "rows": 0,
                                      "columns": {c: {"rows": 0, "nulls": 0} for c in df}}), "current")]:
        assert rep.drift and rep.doc["empty"] == [side]
        assert sorted(rep.drifted) == ["s", "x"]
        for e in rep.columns.values():
            assert e["status"] == "empty" and e["exceeded"] == ["empty"] and side in e["reason"]
    rep.save(str(tmp_path / "rep"))
    assert "no data" in (tmp_path / "rep" / "index.html").read_text()
    assert json.loads((tmp_path / "rep" / "drift.json").read_text())["columns"]["x"]["status"] == "empty"
    # the CLI: --fail-on-drift fails on an empty current
    ref.save(str(tmp_path / "prof"))
    df.iloc[:0].to_parquet(tmp_path / "empty.parquet")
    run = subprocess.run([sys.executable, "-m", "tabprep.cli", "drift", str(tmp_path / "prof"), str(tmp_path / "empty.parquet"),
                          "--out", str(tmp_path / "d"), "--fail-on-drift", "--cpu"], capture_output=True, text=True)
    assert run.returncode == 1, run.stderr
    assert "no data" in run.stderr and "no drift" not in run.stderr


def _documented_bins(ref, cur):
    """The documented bins, from the exact data: edges the reference's quantiles 0, 0.05, ..., 1
    (its min and max outermost; equal edges merged); bins: below the min, [e0, e1], (e1, e2], ...,
    (e19, e20], above the max: 22 bins. Masses: the share of each side's values in each bin."""
    edges = np.unique(np.quantile(ref, np.linspace(0, 1, 21)))
    def masses(v):
        v = np.sort(v)
        below = np.searchsorted(v, edges[0], "left")
        upto = np.searchsorted(v, edges[1:] if edges.size > 1 else edges, "right")
        return np.diff(np.concatenate([[0], [below], upto, [v.size]])) / v.size
    return edges, masses(ref), masses(cur)


def _scipy_js(p, q):
    from scipy.spatial.distance import jensenshannon
    return jensenshannon(p, q, base=2) ** 2


def _psi(p, q):
    p, q = np.maximum(p, 1e-4), np.maximum(q, 1e-4)
    return float(np.sum((q - p) * np.log(q / p)))


def test_js_psi_bins_are_the_documented_22_bins_and_catch_tails():
    r = np.random.default_rng(3)
    ref = r.normal(size=100000)
    tail = r.normal(size=100000)
    tail[tail > np.quantile(tail, 0.96)] *= 1e4   # the top 4% multiplied by 1e4
    disjoint = r.normal(loc=100, size=100000)
    pr = tp.profile(pd.DataFrame({"y": ref}), sample_every=None)
    for cur, want in [(tail, "tail"), (disjoint, "disjoint"), (r.normal(size=100000), "same")]:
        e = tp.drift(pr, tp.profile(pd.DataFrame({"y": cur}), sample_every=None)).columns["y"]
        edges, p, q = _documented_bins(ref, cur)
        assert len(e["bins"]["reference"]) == len(p) == 22
        assert e["bins"]["edges"][0] == ref.min() and e["bins"]["edges"][-1] == ref.max()
        # the KLL sketches' rank error (~1.3%) on each bin's mass
        assert np.abs(np.array(e["bins"]["reference"]) - p).max() < 0.015
        assert np.abs(np.array(e["bins"]["current"]) - q).max() < 0.015
        assert e["metrics"]["js"] == pytest.approx(_scipy_js(p, q), abs=0.01)
        assert e["metrics"]["psi"] == pytest.approx(_psi(p, q), rel=0.1, abs=0.01)
        if want == "tail":
            assert _psi(p, q) > 0.2 and e["metrics"]["psi"] > 0.2 and "psi" in e["exceeded"]
        if want == "disjoint":
            assert e["metrics"]["js"] == pytest.approx(1.0) == pytest.approx(_scipy_js(p, q))
        if want == "same":
            assert not e["drift"]
    # a constant reference: three bins (below, the value, above)
    pc = tp.profile(pd.DataFrame({"y": np.full(100, 2.0)}))
    e = tp.drift(pc, tp.profile(pd.DataFrame({"y": np.r_[np.full(50, 2.0), np.full(50, 3.0)]}))).columns["y"]
    assert e["bins"]["reference"] == [0.0, 1.0, 0.0] and e["bins"]["current"] == pytest.approx([0.0, 0.5, 0.5])


def test_a_replaced_vocabulary_is_flagged_or_reported_unchecked():
    a = pd.DataFrame({"s": [f"a{i}" for i in range(5000)]})
    b = pd.DataFrame({"s": [f"b{i}" for i in range(5000)]})
    rep = tp.drift(tp.profile(a), tp.profile(b))
    e = rep.columns["s"]
    # two profiles of 5,000 distinct values each keep 256 frequent values: values new in the current
    # cannot be told from them, and the report says so rather than "ok"
    assert e["status"] == "unchecked" and "new values" in e["reason"] and rep.doc["unchecked"] == ["s"]
    # a small vocabulary (the reference's list complete): new values are measured, documented as
    # the share of the current's values outside the reference's complete list (oov_rate)
    small_ref = pd.DataFrame({"s": np.array(["a", "b", "c"])[np.arange(3000) % 3]})
    small_cur = pd.DataFrame({"s": np.array(["a", "x", "y"])[np.arange(3000) % 3]})
    e = tp.drift(tp.profile(small_ref), tp.profile(small_cur)).columns["s"]
    assert e["drift"] and e["metrics"]["oov_rate"] == pytest.approx(2 / 3)
    # list columns' elements likewise
    la = pd.DataFrame({"l": [[f"a{i}", f"a{i + 1}"] for i in range(5000)]})
    lb = pd.DataFrame({"l": [[f"b{i}", f"b{i + 1}"] for i in range(5000)]})
    e = tp.drift(tp.profile(la), tp.profile(lb)).columns["l"]
    assert e["status"] == "unchecked" and "elements" in e["reason"]


def test_datetime_and_duration_type_changes_are_retyped():
    t = pd.Series(pd.date_range("2024-01-01", periods=100, freq="h"))
    ref = tp.profile(pd.DataFrame({"t": t}))
    for cur in [t - t.iloc[0],                 # timestamp -> duration
                t.dt.tz_localize("UTC"),       # naive -> tz-aware
                t.astype("datetime64[s]")]:    # us/ns -> s unit
        e = tp.drift(ref, tp.profile(pd.DataFrame({"t": cur}))).columns["t"]
        assert e["status"] == "retyped" and e["drift"], (cur.dtype, e)
    assert tp.drift(ref, tp.profile(pd.DataFrame({"t": t.copy()}))).columns["t"]["status"] == "ok"


def test_unknown_columns_are_named():
    p = tp.profile(_df())
    with pytest.raises(KeyError, match=r"'A'.*\['x', 's'\]"):
        tp.drift(p, p, columns=["A"])
