"""Live skew counters of ServingTransform and `tabprep serve` (GET /stats, GET /metrics), compared
with the training profile by tp.drift (issue #35)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    d = tmp_path_factory.mktemp("skew")
    r = np.random.default_rng(0)
    n = 4000
    x = r.normal(5, 1, n)
    x[::50] = np.nan
    pd.DataFrame({"c": r.integers(0, 100, n), "x": x, "s": np.array(["a", "b"])[r.integers(0, 2, n)]}).to_parquet(
        d / "train.parquet")
    wf = tp.Workflow((["c", "s"] >> ops.Categorify()) + (["x"] >> ops.FillMissing() >> ops.Normalize()))
    wf.fit(str(d / "train.parquet"), profile=True)
    wf.save(str(d / "wf"))
    return tp.Workflow.load(str(d / "wf")), d


def _requests(seed=1, n=300, oov_share=0.0):
    r = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        c = int(r.integers(0, 100)) if r.random() >= oov_share else 1000 + i
        x = None if i % 10 == 0 else float(r.normal(5, 1)) * (10 if i % 25 == 1 else 1)
        rows.append({"c": c, "x": x, "s": "a" if i % 3 else "zz"})
    return rows


def test_counters_equal_hand_counts_for_rows_and_batches(fitted):
    wf, _ = fitted
    st = tp.ServingTransform(wf, stats=True)
    rows = _requests()
    for row in rows[:200]:
        st(row)
    batch = rows[200:]
    st.transform_batch({k: [r[k] for r in batch] for k in ("c", "x", "s")})
    lo, hi = wf.profile_["columns"]["x"]["min"], wf.profile_["columns"]["x"]["max"]
    doc = st.stats.to_dict()
    assert doc["rows"] == len(rows)
    assert doc["columns"]["x"]["nulls"] == sum(r["x"] is None for r in rows)
    assert doc["columns"]["x"]["out_of_range"] == sum(r["x"] is not None and not lo <= r["x"] <= hi for r in rows) > 0
    assert doc["columns"]["c"]["oov"] == sum(r["c"] >= 100 for r in rows) == 0
    assert doc["columns"]["s"]["oov"] == sum(r["s"] == "zz" for r in rows) == 100
    assert tp.ServingTransform(wf, stats=False).stats is None


def test_stats_and_metrics_endpoints_and_drift_on_them(fitted, tmp_path):
    from starlette.testclient import TestClient

    from tabprep.serving.http import make_app

    wf, d = fitted
    st = tp.ServingTransform(wf, stats=True)
    client = TestClient(make_app(st))
    rows = _requests(seed=2, oov_share=0.3)
    for row in rows:
        assert client.post("/transform", content=json.dumps(row)).status_code == 200
    stats = client.get("/stats").json()
    assert stats["format"] == "tabprep-serving-stats" and stats["rows"] == len(rows)
    oov = sum(r["c"] >= 1000 for r in rows)
    assert stats["columns"]["c"]["oov"] == oov
    metrics = client.get("/metrics")
    assert metrics.headers["content-type"].startswith("text/plain")
    assert f'tabprep_column_oov_total{{column="c"}} {oov}' in metrics.text.splitlines()
    assert f"tabprep_rows_total {len(rows)}" in metrics.text
    # the same counters, compared with the training profile: the OOV jump of c and s, null jump of x
    (tmp_path / "stats.json").write_text(json.dumps(stats))
    rep = tp.drift(str(d / "wf"), str(tmp_path / "stats.json"))
    assert rep.columns["c"]["metrics"]["oov_rate"] == pytest.approx(oov / len(rows))
    assert sorted(rep.drifted) == ["c", "s", "x"], {c: e["metrics"] for c, e in rep.columns.items()}
    assert rep.columns["x"]["exceeded"] == ["null_rate"]


def test_buffered_row_counters_equal_a_per_value_reference():
    # observe_row buffers rows and counts them with numpy; every read (to_dict, prometheus) sees
    # every row observed so far. Reference: the per-value rules written out here.
    from tabprep.serving.stats import FLUSH_ROWS, ServingStats

    r = np.random.default_rng(5)
    vocab = {"c": [1, 2, 3, 2**70], "s": ["a", "b"], "l": [10, 11]}
    st = ServingStats(["c", "s", "x", "l", "m"], vocabs=vocab, ranges={"x": (0.0, 1.0), "m": (0, 5)})
    rows = []
    for i in range(FLUSH_ROWS * 2 + 37):
        rows.append({"c": [None, 1, 2, 9, 2**70, 2**71][i % 6], "s": [None, "a", "zz"][i % 3],
                     "x": [None, float("nan"), float(r.normal(0.5, 1))][i % 3],
                     "l": [None, [10, 12, None], [], [11]][i % 4],
                     "m": [3, 7.5, None, "odd"][i % 4] if i % 2 else 2})  # (mixed: per value)
    ref = {"nulls": dict.fromkeys(st.columns, 0), "oov": {"c": 0, "s": 0, "l": 0}, "out_of_range": {"x": 0, "m": 0}}
    for i, row in enumerate(rows):
        st.observe_row(row)
        for c, v in row.items():
            if v is None or (isinstance(v, float) and v != v):
                ref["nulls"][c] += 1
            elif c in ("c", "s"):
                ref["oov"][c] += v not in vocab[c]
            elif c == "l":
                ref["oov"][c] += sum(x is not None and x not in vocab[c] for x in v)
            elif c == "x":
                ref["out_of_range"][c] += not 0.0 <= v <= 1.0
            elif c == "m" and not isinstance(v, str):
                ref["out_of_range"][c] += not 0 <= v <= 5
        if i in (5, FLUSH_ROWS, len(rows) - 1):
            doc = st.to_dict()
            assert doc["rows"] == i + 1
            for key in ("nulls", "oov", "out_of_range"):
                assert {c: doc["columns"][c][key] for c in ref[key]} == ref[key], (i, key)
    assert f'tabprep_rows_total {len(rows)}' in st.prometheus()
