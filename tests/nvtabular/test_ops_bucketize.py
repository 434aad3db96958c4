"""Bucketize as NVTabular 23.08's (nvtabular/ops/bucketize.py): ids are ``np.digitize(x, b,
right=False)`` and ``output_dtype`` is numpy.int32, for the data and the output schema. A null
stays null here (NVTabular's digitize puts NaN in the last bucket: a deliberate, warned
difference, docs/migration.md), in an int32 column (pandas ``Int32`` when a partition holds one)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

from conftest import make_dataset, to_pandas


def test_bucketize_ids_are_int32(backend, tmp_path):
    df = pd.DataFrame({"x": [-1.0, 0.0, 2.5, 9.0, 10.0, np.inf], "i": np.array([1, 5, 7, 12, -3, 0], dtype="int64")})
    wf = tp.Workflow(["x", "i"] >> ops.Bucketize([0.0, 5.0, 10.0]))
    wf.fit(make_dataset(df, backend, nparts=2, empties=False))
    wf.save(str(tmp_path / "wf"))
    for w in (wf, tp.Workflow.load(str(tmp_path / "wf"))):
        assert [w.output_schema[c].dtype for c in ("x", "i")] == ["int32", "int32"]
        out = to_pandas(w.transform(make_dataset(df, backend, nparts=2, empties=False)))
        for c in ("x", "i"):
            assert str(out[c].dtype) == "int32"
            assert out[c].tolist() == np.digitize(df[c].to_numpy("float64"), [0.0, 5.0, 10.0]).tolist()


def test_bucketize_null_stays_null_in_an_int32_column():
    df = pd.DataFrame({"x": [1.0, np.nan, 7.0]})
    wf = tp.Workflow(["x"] >> ops.Bucketize([5.0]))
    with pytest.warns(tp.NVTabularDifferenceWarning, match="Bucketize: column 'x'"):
        out = wf.fit(df).transform(df)
    assert str(out["x"].dtype) == "Int32" and out["x"][0] == 0 and pd.isna(out["x"][1]) and out["x"][2] == 1
