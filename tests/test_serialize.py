"""Workflow.save / Workflow.load: round trips, user functions by import path, pickling opt-in."""
from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

from conftest import (assert_same_frame, double, make_dataset, positive_f64, random_frame, ratio_to, to_pandas,
                      upper_name)


def full_workflow():
    cats = ["s", "i32"] >> ops.Categorify(freq_threshold=2, num_oov_buckets=2)
    hashed = ["u32"] >> ops.HashBucket(num_buckets={"u32": 50}, embedding_dim=8)
    conts = ["f32", "I64"] >> ops.FillMedian(add_binary_cols=True) >> ops.Clip(min_value=0) >> ops.LogOp() \
        >> ops.Normalize()
    lam = ["f64"] >> ops.LambdaOp(ratio_to, dependency="label", dtype="float32") >> ops.NormalizeMinMax()
    ren = ["i8"] >> ops.LambdaOp(double) >> ops.Rename(f=upper_name)
    return tp.Workflow(((cats + hashed + conts + lam + ren + ["label", "idx"]) - ["I64_filled"])
                       >> ops.Filter(positive_f64_or_all))


@tp.register_function  # saved as 'test_serialize:positive_f64_or_all'; loading resolves registered names only
def positive_f64_or_all(df):
    """Filter keeping rows with label >= 0 (all of them) -- importable."""
    return df["label"] >= 0


def test_full_workflow_round_trip(tmp_path, backend):
    train = random_frame(seed=1, n=300)
    data = random_frame(seed=2, n=120)
    wf = full_workflow()
    wf.fit(make_dataset(train, backend, nparts=4))
    before = to_pandas(wf.transform(make_dataset(data, backend, nparts=3)))
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    after = to_pandas(loaded.transform(make_dataset(data, backend, nparts=2)))
    assert_same_frame(after, before, "loaded workflow output")
    assert loaded.output_schema == wf.output_schema
    assert tp.get_embedding_sizes(loaded) == tp.get_embedding_sizes(wf)
    assert tp.get_embedding_sizes(loaded)["u32"] == (50, 8)
    assert loaded.output_columns == wf.output_columns
    # the spec is readable JSON naming the ops and the user functions by import path
    spec = json.loads((tmp_path / "wf" / "workflow.json").read_text())
    text = json.dumps(spec)
    assert "conftest:ratio_to" in text and "conftest:upper_name" in text
    assert "test_serialize:positive_f64_or_all" in text
    assert {n.get("op") for n in spec["nodes"]} >= {"Categorify", "HashBucket", "FillMedian", "LambdaOp", "Filter"}
    assert not list((tmp_path / "wf").rglob("*.pkl")), "importable functions must not be pickled"


def test_lambda_is_refused_at_save_with_a_clear_message(tmp_path):
    df = random_frame(seed=3, n=20)
    wf = tp.Workflow(["f64"] >> ops.LambdaOp(lambda c: c + 1))
    wf.fit(df)
    with pytest.raises(ValueError, match="allow_pickle") as err:
        wf.save(str(tmp_path / "wf"))
    assert "lambda" in str(err.value)
    assert not (tmp_path / "wf").exists()
    assert not [p for p in os.listdir(tmp_path)], "a refused save must leave nothing behind"


def test_lambda_needs_allow_pickle_at_save_and_load(tmp_path):
    df = random_frame(seed=4, n=40)
    wf = tp.Workflow(["f64", "label"] >> ops.LambdaOp(lambda c: c * 3 + 1) >> ops.Filter(lambda d: d["label"] > 1))
    wf.fit(df)
    before = wf.transform(df)
    wf.save(str(tmp_path / "wf"), allow_pickle=True)
    with pytest.raises(ValueError, match="allow_pickle"):
        tp.Workflow.load(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"), allow_pickle=True)
    after = loaded.transform(df)
    assert_same_frame(after.reset_index(drop=True), before.reset_index(drop=True))
    keep = (df["label"] * 3 + 1 > 1).to_numpy()
    assert after["f64"].tolist() == pytest.approx((df["f64"][keep] * 3 + 1).tolist(), nan_ok=True)


def test_filter_lambda_refused_without_allow_pickle(tmp_path):
    df = random_frame(seed=5, n=20)
    wf = tp.Workflow(["f64"] >> ops.Filter(lambda d: d["f64"] > 0))
    wf.fit(df)
    with pytest.raises(ValueError, match="allow_pickle"):
        wf.save(str(tmp_path / "wf"))


def test_rename_lambda_is_refused_clearly(tmp_path):
    df = random_frame(seed=6, n=20)
    wf = tp.Workflow(["f64"] >> ops.Rename(f=lambda n: n + "_z"))
    wf.fit(df)
    with pytest.raises(ValueError, match="importable|postfix"):
        wf.save(str(tmp_path / "wf"))
    assert not (tmp_path / "wf").exists()


def test_failed_save_keeps_the_previous_save(tmp_path):
    df = random_frame(seed=7, n=30)
    good = tp.Workflow(["s"] >> ops.Categorify())
    good.fit(df)
    good.save(str(tmp_path / "wf"))
    spec_before = (tmp_path / "wf" / "workflow.json").read_text()
    bad = tp.Workflow(["f64"] >> ops.LambdaOp(lambda c: c))
    bad.fit(df)
    with pytest.raises(ValueError):
        bad.save(str(tmp_path / "wf"))
    assert (tmp_path / "wf" / "workflow.json").read_text() == spec_before
    assert sorted(os.listdir(tmp_path)) == ["wf"], "no temporary folder may be left behind"
    # saving again over an existing save replaces it
    other = tp.Workflow(["i32"] >> ops.HashBucket(num_buckets=3))
    other.fit(df)
    other.save(str(tmp_path / "wf"))
    assert tp.Workflow.load(str(tmp_path / "wf")).output_columns == ["i32"]
    assert sorted(os.listdir(tmp_path)) == ["wf"]


def test_save_unfitted_and_load_missing(tmp_path):
    wf = tp.Workflow(["s"] >> ops.Categorify())
    with pytest.raises(RuntimeError, match="fit"):
        wf.save(str(tmp_path / "wf"))
    with pytest.raises(FileNotFoundError, match="nowhere"):
        tp.Workflow.load(str(tmp_path / "nowhere"))


def test_loaded_workflow_refits_like_a_new_one(tmp_path):
    a = random_frame(seed=8, n=60)
    b = random_frame(seed=9, n=80)
    wf = tp.Workflow((["s"] >> ops.Categorify()) + (["f64"] >> ops.Normalize()))
    wf.fit(a)
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    loaded.fit(b)
    fresh = tp.Workflow((["s"] >> ops.Categorify()) + (["f64"] >> ops.Normalize()))
    fresh.fit(b)
    assert_same_frame(loaded.transform(a), fresh.transform(a))


def test_loaded_workflow_transforms_parquet_input(tmp_path):
    df = random_frame(seed=10, n=90)
    df.to_parquet(tmp_path / "data.parquet", row_group_size=20)
    wf = tp.Workflow((["s", "I64"] >> ops.Categorify()) + (["f32"] >> ops.FillMissing() >> ops.Normalize()))
    ds = tp.Dataset(str(tmp_path / "data.parquet"), part_size=1000, cpu=True)
    wf.fit(ds)
    wf.save(str(tmp_path / "wf"))
    before = to_pandas(wf.transform(df))
    after = to_pandas(tp.Workflow.load(str(tmp_path / "wf")).transform(ds))
    assert_same_frame(after, before)
    assert np.isfinite(after["f32"]).all()
