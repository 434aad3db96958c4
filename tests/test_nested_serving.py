"""Serving nested list columns (issue #31): ServingTransform (one row, a batch) and the HTTP app
take nested lists for a nested column and give what the offline transform gives."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tabprep as tp
from tabprep import ops
from tabprep.serving import ServingTransform

ROWS = [[[1, 2], [3]], [[4]], [], [[5, 6, 7], []], [[2, 9]]]


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    d = tmp_path_factory.mktemp("srv")
    pq.write_table(pa.table({"x": pa.array(ROWS, type=pa.list_(pa.list_(pa.int64()))), "y": [1.0, 2.0, 3.0, 4.0, 5.0]}),
                   str(d / "d.parquet"))
    wf = tp.Workflow((["x"] >> ops.Categorify()) + (["y"] >> ops.Normalize()))
    wf.fit(tp.Dataset(str(d / "d.parquet")))
    wf.save(str(d / "wf"))
    wf = tp.Workflow.load(str(d / "wf"))
    offline = wf.transform(tp.Dataset(str(d / "d.parquet")))._to_ddf().compute()
    return wf, offline["x"].array._pa_array.to_pylist()


def test_one_row_gives_the_offline_nested_ids(fitted):
    wf, offline = fitted
    st = ServingTransform(wf)
    for row, want in zip(ROWS, offline):
        assert st.row_values({"x": row, "y": 1.0})["x"] == want
    out = st({"x": ROWS[0], "y": 1.0})
    leaves = [v for inner in offline[0] for v in inner]
    assert out["x__values"].tolist() == leaves and out["x__nnzs"].tolist() == [len(leaves)]
    assert out["x__row_lengths_0"].tolist() == [2] and out["x__row_lengths_1"].tolist() == [2, 1]


def test_batch_gives_leaves_nnzs_and_row_lengths(fitted):
    wf, offline = fitted
    out = ServingTransform(wf).transform_batch({"x": ROWS + [None], "y": [1.0] * 6})
    want = offline + [[]]   # a null row reads as an empty list
    assert out["x__values"].tolist() == [v for r in want for inner in r for v in inner]
    assert out["x__nnzs"].tolist() == [sum(len(i) for i in r) for r in want]
    assert out["x__row_lengths_0"].tolist() == [len(r) for r in want]
    assert out["x__row_lengths_1"].tolist() == [len(i) for r in want for i in r]


def test_http_rows_and_columns(fitted):
    from starlette.testclient import TestClient

    from tabprep.serving.http import make_app

    wf, offline = fitted
    client = TestClient(make_app(ServingTransform(wf)))
    res = client.post("/transform", content=json.dumps({"rows": [{"x": r, "y": 1.0} for r in ROWS]}))
    assert res.status_code == 200, res.text
    assert [r["x"] for r in res.json()["rows"]] == offline
    res = client.post("/transform", content=json.dumps({"x": ROWS[3], "y": 2.0}))
    assert res.status_code == 200 and res.json()["x"] == offline[3]
    res = client.post("/transform", content=json.dumps({"x": [1, 2], "y": 2.0}))
    assert res.status_code == 422 and res.json()["column"] == "x"


def test_deeper_nesting_refused(fitted):
    from tabprep.serving.columns import ServingInputError

    wf, _ = fitted
    with pytest.raises(ServingInputError, match=r"'x'.*deeper nesting than fitted"):
        ServingTransform(wf).row_values({"x": [[[1]]], "y": 1.0})


def test_list_slice_on_nested_is_not_servable(tmp_path):
    from tabprep.serving.kernels import ServingBuildError

    pq.write_table(pa.table({"x": pa.array(ROWS, type=pa.list_(pa.list_(pa.int64())))}), str(tmp_path / "d.parquet"))
    wf = tp.Workflow(["x"] >> ops.ListSlice(0, 1))
    wf.fit(tp.Dataset(str(tmp_path / "d.parquet")))
    with pytest.raises(ServingBuildError, match=r"ListSlice.*'x'"):
        ServingTransform(wf)
