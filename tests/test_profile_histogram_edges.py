"""Histogram edges of columns whose min and max are a few ULP apart, beyond 2**53, subnormal, or
whose max - min overflows: profile, fit(profile=True) and DataStats do not crash, and the
histogram's edges are strictly increasing, span [min, max], and hold every value's mass."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

CASES = [[0.1 + 0.2, 0.3] * 50, [2**53 + 1, 2**53 + 3, 2**53 + 5], [5e-324, 0.0], [-1.7e308, 1.7e308, 0.0]]


@pytest.mark.parametrize("values", CASES, ids=["ulp", "int-2**53", "subnormal", "overflow"])
def test_histogram_edges_are_robust(values, tmp_path):
    df = pd.DataFrame({"price": values})
    col = tp.profile(df).columns["price"]
    h = col["histogram"]
    e = np.array(h["edges"])
    assert np.all(np.isfinite(e)) and np.all(np.diff(e) > 0) if e.size > 1 else True
    # (the edges are float64; an int column's min and max stay its exact ints)
    assert e[0] == float(min(values)) and e[-1] == float(max(values))
    assert col["min"] == min(values) and col["max"] == max(values)
    assert len(h["counts"]) == max(e.size - 1, 1)
    assert sum(h["counts"]) == pytest.approx(len(values))
    df.to_parquet(tmp_path / "d.parquet")
    wf = tp.Workflow(["price"] >> ops.FillMissing())
    wf.fit(str(tmp_path / "d.parquet"), profile=True)
    stats = tp.Workflow(["price"] >> ops.DataStats())
    stats.fit(str(tmp_path / "d.parquet"))
