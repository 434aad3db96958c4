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
