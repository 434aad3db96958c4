"""Drift and skew (issue #35): metrics against scipy / hand-written formulas, planted shifts
flagged exactly, a second sample of the same distribution quiet, the CLI's exit codes."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import jensenshannon

import tabprep as tp
from tabprep import ops
from tabprep.quality import js_divergence, psi



def _data(n=20000, seed=0, scale=1.0, vocab_shift=0.0, null_rate=0.02):
    r = np.random.default_rng(seed)
    x = r.lognormal(1.0, 0.7, n) * scale
    y = r.normal(0, 1, n)
    y[r.random(n) < null_rate] = np.nan
    c = (r.zipf(1.4, n) % 400).astype("int64")
    moved = r.random(n) < vocab_shift
    c[moved] = 10_000 + r.integers(0, 2000, int(moved.sum()))  # ids the training data never had
    s = np.array(["a", "b", "c", "d"])[r.integers(0, 4, n)]
    return pd.DataFrame({"x": x, "y": y, "c": c, "s": s})


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    d = tmp_path_factory.mktemp("drift")
    _data().to_parquet(d / "train.parquet")
    wf = tp.Workflow((["c", "s"] >> ops.Categorify()) + (["x", "y"] >> ops.FillMissing() >> ops.Normalize()))
    wf.fit(str(d / "train.parquet"), profile=True)
    wf.save(str(d / "wf"))
    return d


def test_js_and_psi_match_scipy_and_the_formula():
    r = np.random.default_rng(5)
    for _ in range(20):
        p, q = r.integers(0, 50, 12).astype(float), r.integers(0, 50, 12).astype(float)
        p[0] = q[1] = 0  # empty bins on either side
        assert js_divergence(p, q) == pytest.approx(jensenshannon(p, q, base=2) ** 2, abs=1e-6)
        pn, qn = np.maximum(p / p.sum(), 1e-4), np.maximum(q / q.sum(), 1e-4)
        assert psi(p, q) == pytest.approx(float(np.sum((qn - pn) * np.log(qn / pn))), abs=1e-12)


def test_planted_shifts_are_flagged_exactly(saved):
    quiet = tp.drift(str(saved / "wf"), _data(seed=1))
    assert quiet.drifted == [], {c: e["metrics"] for c, e in quiet.columns.items()}
    shifted = _data(seed=2, scale=1.5, vocab_shift=0.3, null_rate=0.4)
    shifted["s"] = _data(seed=3)["s"]  # unchanged column
    rep = tp.drift(str(saved / "wf"), shifted)
    assert sorted(rep.drifted) == ["c", "x", "y"]
    assert rep.columns["x"]["exceeded"] == ["js", "psi"] or set(rep.columns["x"]["exceeded"]) <= {"js", "psi"}
    assert "null_rate" in rep.columns["y"]["exceeded"]
    # the OOV share against the fitted vocabulary: the 30% moved to unseen ids
    c = rep.columns["c"]
    assert c["current"]["oov_rate"] == pytest.approx((shifted["c"] >= 10_000).mean(), abs=1e-12)
    # minus the unseen share a fresh training sample shows (Good-Turing: ids seen once / ids)
    train = _data()["c"].value_counts()
    expected = (train == 1).sum() / train.sum()
    assert c["reference"]["oov_rate_expected"] == pytest.approx(expected, abs=1e-12)
    assert c["metrics"]["oov_rate"] == pytest.approx(c["current"]["oov_rate"] - expected, abs=1e-12)
    assert "oov_rate" in rep.columns["c"]["exceeded"]
    # JS on the report's own bin masses, recomputed with scipy
    b = rep.columns["x"]["bins"]
    assert rep.columns["x"]["metrics"]["js"] == pytest.approx(
        jensenshannon(b["reference"], b["current"], base=2) ** 2, abs=1e-6)


def test_linf_is_tfdv_s_metric_on_exact_counts():
    ref = pd.DataFrame({"k": ["a"] * 50 + ["b"] * 30 + ["c"] * 20})
    cur = pd.DataFrame({"k": ["a"] * 20 + ["b"] * 30 + ["d"] * 50})
    rep = tp.drift(tp.profile(ref), tp.profile(cur))
    p = ref["k"].value_counts(normalize=True)
    q = cur["k"].value_counts(normalize=True)
    hand = max(abs(p.get(v, 0.0) - q.get(v, 0.0)) for v in set(p.index) | set(q.index))
    assert rep.columns["k"]["metrics"]["linf"] == pytest.approx(hand, abs=1e-12) == pytest.approx(0.5)
    # the reference's complete value list is the vocabulary: 'd' is out of it
    assert rep.columns["k"]["metrics"]["oov_rate"] == pytest.approx(0.5)


def test_schema_changes_and_thresholds():
    ref = tp.profile(pd.DataFrame({"a": np.arange(1000.0), "gone": np.ones(1000), "t": np.arange(1000)}))
    cur = pd.DataFrame({"a": np.arange(1000.0) + 10, "new": np.ones(1000), "t": np.arange(1000).astype(str)})
    rep = tp.drift(ref, cur)
    assert rep.columns["gone"]["status"] == "missing" and rep.columns["gone"]["drift"]
    assert rep.columns["new"]["status"] == "new" and not rep.columns["new"]["drift"]
    assert rep.columns["t"]["status"] == "retyped" and rep.columns["t"]["drift"]
    assert not rep.columns["a"]["drift"]  # a 1% shift is under the default thresholds (3%, beyond the
    # reference's max, fills the outer bin: psi 0.2017 > 0.2 on the documented 22 bins)
    strict = tp.drift(ref, cur, thresholds={"columns": {"a": {"psi": 0.001}}})
    assert strict.columns["a"]["drift"] and strict.columns["a"]["thresholds"]["psi"] == 0.001
    with pytest.raises(ValueError, match="unknown drift threshold 'pis'"):
        tp.drift(ref, cur, thresholds={"pis": 1})


def test_cli_drift_exit_codes_and_drift_json(saved, tmp_path):
    _data(seed=1).to_parquet(tmp_path / "same.parquet")
    _data(seed=2, scale=2.0).to_parquet(tmp_path / "scaled.parquet")

    def run(data, out, *extra):
        return subprocess.run([sys.executable, "-m", "tabprep.cli", "drift", str(saved / "wf"), str(data), "--out",
                               str(out), "--fail-on-drift", *extra], capture_output=True, text=True, timeout=120)

    ok = run(tmp_path / "same.parquet", tmp_path / "d1")
    assert ok.returncode == 0, ok.stderr
    bad = run(tmp_path / "scaled.parquet", tmp_path / "d2", "--threshold", "y.null_rate=0.5")
    assert bad.returncode == 1 and "drift in 1 of 4 columns: x" in bad.stderr
    doc = json.loads((tmp_path / "d2" / "drift.json").read_text())
    assert doc["format"] == "tabprep-drift" and doc["version"] == 1 and doc["drift"] is True
    x = doc["columns"]["x"]
    assert x["drift"] is True and x["metrics"]["psi"] > x["thresholds"]["psi"] == 0.2
    assert doc["columns"]["y"]["thresholds"]["null_rate"] == 0.5
    assert list(doc["columns"])[0] == "x"  # sorted by drift
    assert (tmp_path / "d2" / "index.html").read_text().count("<svg") >= 4
    usage = run(tmp_path / "same.parquet", tmp_path / "d3", "--threshold", "psi")
    assert usage.returncode == 2 and "METRIC=NUMBER" in usage.stderr


def test_a_workflow_without_a_profile_is_named(tmp_path):
    pd.DataFrame({"a": [1.0, 2.0]}).to_parquet(tmp_path / "t.parquet")
    wf = tp.Workflow(["a"] >> ops.Normalize()).fit(str(tmp_path / "t.parquet"), profile=False)
    wf.save(str(tmp_path / "wf"))
    with pytest.raises(FileNotFoundError, match="no training profile"):
        tp.drift(str(tmp_path / "wf"), pd.DataFrame({"a": [1.0]}))
    # the fitted Workflow object itself: the same advice, not an empty path
    with pytest.raises(ValueError, match=r"no training profile: fit it with profile=True"):
        tp.drift(wf, pd.DataFrame({"a": [1.0]}))


def test_example_drift_flags_exactly_the_planted_columns(tmp_path, capsys):
    # examples/drift.py: a fresh Criteo sample is quiet (the long tail's unseen ids are expected:
    # Good-Turing), the planted shifts flag I2 (scaled), C5 (30% new ids), I7 (null jump)
    import importlib.util
    import os

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "drift.py")
    spec = importlib.util.spec_from_file_location("example_drift", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    res = module.main(["--rows", "20000", "--out", str(tmp_path)])
    assert res["same"] == [] and sorted(res["shifted"]) == ["C5", "I2", "I7"]
    assert "shifted data: drift in" in capsys.readouterr().out
    assert os.path.isfile(res["html"])
