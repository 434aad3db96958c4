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
