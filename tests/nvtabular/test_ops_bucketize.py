"""Bucketize as NVTabular 23.08's (nvtabular/ops/bucketize.py): ids are ``np.digitize(x, b,
right=False)`` and ``output_dtype`` is numpy.int32, for the data and the output schema. A null
stays null here (NVTabular's digitize puts NaN in the last bucket: a deliberate, warned
difference, docs/migration.md), in an int32 column (pandas ``Int32`` when a partition holds one)."""
from __future__ import annotations

from contextlib import nullcontext

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


BIG = 1_700_000_000_000_000_000   # a nanosecond timestamp: beyond 2**53, float64 steps of 256


@pytest.mark.parametrize("dtype", ["int64", "Int64", "uint8", "int32"])
def test_int_columns_with_int_boundaries_compare_exactly(backend, dtype, tmp_path):
    # NVTabular's np.digitize of int64 values and a list of ints compares them as ints; tabprep
    # compared as float64, so a value within 256 below a boundary near 1.7e18 landed past it, silently
    if dtype in ("uint8", "int32"):
        vals, bounds = [0, 3, 4, 5, 200], [4, 5, 100]
    else:
        vals, bounds = [BIG - 1, BIG, BIG + 1, BIG - 300, -5, 2**62], [BIG, BIG + 2, 2**62]
    x = pd.Series(vals, dtype=dtype.lower())
    if dtype == "Int64":
        x = pd.concat([x, pd.Series([None], dtype="Int64")], ignore_index=True)
    df = pd.DataFrame({"x": x})
    wf = tp.Workflow(["x"] >> ops.Bucketize(bounds))
    wf.fit(make_dataset(df, backend, nparts=2, empties=False))
    wf.save(str(tmp_path / "wf"))
    want = np.digitize(np.asarray(vals, dtype=np.int64), np.asarray(bounds, dtype=np.int64), right=False).tolist()
    for w in (wf, tp.Workflow.load(str(tmp_path / "wf"))):
        with pytest.warns(tp.NVTabularDifferenceWarning) if dtype == "Int64" else nullcontext():
            out = to_pandas(w.transform(make_dataset(df, backend, nparts=2, empties=False)))["x"]
        assert out.iloc[:len(vals)].astype("int64").tolist() == want
        if dtype == "Int64":
            assert pd.isna(out.iloc[-1])


def test_float_boundaries_on_ints_compare_as_float64_as_nvtabular():
    # a boundary list holding a float is a float64 array in np.digitize: NVTabular compares in float64
    vals, bounds = [BIG - 1, BIG + 1000], [float(BIG), 2.0**62]
    df = pd.DataFrame({"x": np.array(vals, dtype="int64")})
    out = tp.Workflow(["x"] >> ops.Bucketize(bounds)).fit(df).transform(df)["x"]
    assert out.tolist() == np.digitize(np.array(vals, dtype=np.int64), np.array(bounds), right=False).tolist() == [1, 1]


def test_close_int_boundaries_beyond_2_53_are_increasing():
    # validated as float64 they were equal: "must be strictly increasing" for increasing ints
    op = ops.Bucketize([BIG, BIG + 1])
    df = pd.DataFrame({"x": np.array([BIG, BIG + 1, BIG - 1], dtype="int64")})
    assert tp.Workflow(["x"] >> op).fit(df).transform(df)["x"].tolist() == [1, 2, 0]


def test_serving_and_keras_export_compare_ints_exactly():
    from tabprep.serving import ServingTransform

    vals, bounds = [BIG - 1, BIG, BIG + 1, -5, None, 2**62], [BIG, BIG + 2, 2**62]
    frame = pd.DataFrame({"x": pd.Series(vals, dtype="Int64")})
    want = [None if v is None else int(np.digitize(np.int64(v), np.asarray(bounds, dtype=np.int64))) for v in vals]
    wf = tp.Workflow(["x"] >> ops.Bucketize(bounds)).fit(frame)
    st = ServingTransform(wf)
    batch = np.ma.asarray(st.transform_batch(frame)["x"])
    assert [None if np.ma.is_masked(v) else int(v) for v in batch] == want
    for v, w in zip(vals, want):
        got = np.ma.asarray(st({"x": v})["x"]).reshape(-1)[0]
        assert (None if np.ma.is_masked(got) else int(got)) == w, v
    pytest.importorskip("tensorflow")
    from serving_helpers import keras_inputs, keras_outputs
    from tabprep.serving import to_keras

    got = keras_outputs(to_keras(wf)(keras_inputs(st, frame)), ["x"])["x"]
    got = np.ma.asarray(got)
    assert [None if np.ma.is_masked(v) else int(v) for v in got] == want
