"""The fitted input schema is a contract at transform; nothing is silently wrong (issue #11).

References are plain pandas/numpy/mmh3 written here.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

from conftest import mmh3_u32


def _fit_ints(n: int = 400):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"C1": rng.integers(0, 50, n).astype("int64"),
                       "C2": rng.integers(0, 1000, n).astype("int64"),
                       "label": rng.integers(0, 2, n)})
    wf = tp.Workflow((["C1"] >> ops.Categorify()) + (["C2"] >> ops.HashBucket(num_buckets=97)) + ["label"])
    wf.fit(df)
    return wf, df


def test_strings_for_an_int_column_are_refused_naming_column_and_dtypes():
    wf, df = _fit_ints()
    drifted = df.assign(C1=df["C1"].astype(str))
    with pytest.raises(TypeError, match=r"(?s)C1.*int64.*(str|object).*cast=True"):
        wf.transform(drifted)


def test_floats_for_an_int_column_are_refused_not_hashed_differently():
    wf, df = _fit_ints()
    drifted = df.assign(C2=df["C2"].astype("float64"))  # e.g. read back from csv
    with pytest.raises(TypeError, match=r"(?s)C2.*int64.*float64.*cast=True"):
        wf.transform(drifted)


def test_cast_true_converts_integral_floats_to_identical_ids():
    wf, df = _fit_ints()
    expected = wf.transform(df)
    got = wf.transform(df.assign(C2=df["C2"].astype("float64"), C1=df["C1"].astype(str)), cast=True)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), expected.reset_index(drop=True))
    # and the HashBucket ids are the documented murmur3 of the int64 values
    ref = np.array([mmh3_u32(int(v)) % 97 for v in df["C2"]])
    np.testing.assert_array_equal(got["C2"].to_numpy(), ref)


def test_cast_true_fails_on_lossy_values_naming_the_column():
    wf, df = _fit_ints()
    bad = df.assign(C2=df["C2"].astype("float64"))
    bad.loc[3, "C2"] = 2.5
    with pytest.raises(ValueError, match=r"C2"):
        wf.transform(bad, cast=True)


def test_widening_ints_is_accepted_with_identical_ids():
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"C1": rng.integers(-50, 50, 300).astype("int32"), "label": rng.integers(0, 2, 300)})
    wf = tp.Workflow((["C1"] >> ops.Categorify()) + (["C1"] >> ops.HashBucket(num_buckets=31) >> ops.Rename(postfix="_h"))
                     + ["label"])
    wf.fit(df)
    a = wf.transform(df)
    b = wf.transform(df.assign(C1=df["C1"].astype("int64")))
    pd.testing.assert_frame_equal(a, b)


def test_transform_does_not_mutate_the_fitted_workflow(tmp_path):
    wf, df = _fit_ints()
    wf.save(tmp_path / "before")
    wf.transform(df.assign(C1=df["C1"].astype("int16"), C2=df["C2"].astype("int32")))
    wf.save(tmp_path / "after")
    before = json.loads((tmp_path / "before" / "workflow.json").read_text())
    after = json.loads((tmp_path / "after" / "workflow.json").read_text())
    assert before["input_schema"] == after["input_schema"]
    assert before["output_schema"] == after["output_schema"]


def test_transform_of_a_dataset_does_not_mutate_the_loaded_workflow(tmp_path):
    wf, df = _fit_ints()
    wf.save(tmp_path / "wf")
    before = (tmp_path / "wf" / "workflow.json").read_text()
    small = df.assign(C1=df["C1"].astype("int16"))
    small.to_parquet(tmp_path / "d.parquet")
    wf2 = tp.Workflow.load(tmp_path / "wf")
    wf2.transform(tp.Dataset(str(tmp_path / "d.parquet"))).compute()
    wf2.save(tmp_path / "wf2")
    assert json.loads((tmp_path / "wf2" / "workflow.json").read_text())["input_schema"] == \
        json.loads(before)["input_schema"]


# -- non-finite values ----------------------------------------------------------------------------------
def test_normalize_with_inf_is_not_all_zero():
    x = np.array([1.0, 2.0, 3.0, np.inf, 4.0, -np.inf, np.nan, 5.0])
    df = pd.DataFrame({"x": x})
    wf = tp.Workflow(["x"] >> ops.Normalize())
    out = wf.fit(df).transform(df)["x"].to_numpy()
    finite = x[np.isfinite(x)]
    mean, std = finite.mean(), finite.std(ddof=1)
    # documented policy: +-inf is excluded from the statistics (NaN is null)
    np.testing.assert_allclose(out[np.isfinite(x)], ((finite - mean) / std).astype("float32"), rtol=1e-6)
    assert np.isnan(out[6])
    assert np.isfinite(out[[0, 1, 2, 4, 7]]).all()
    assert not (out[[0, 1, 2, 4, 7]] == 0).all()


def test_normalize_minmax_and_fill_median_ignore_inf():
    x = np.array([1.0, 2.0, np.inf, 3.0, -np.inf, 10.0])
    df = pd.DataFrame({"x": x})
    out = tp.Workflow(["x"] >> ops.NormalizeMinMax()).fit(df).transform(df)["x"].to_numpy()
    np.testing.assert_allclose(out[[0, 1, 3, 5]], np.float32((np.array([1, 2, 3, 10.0]) - 1) / 9), rtol=1e-6)
    med = tp.Workflow(["x"] >> ops.FillMedian()).fit(pd.DataFrame({"x": [1.0, np.nan, np.inf, 3.0, 2.0]}))
    filled = med.transform(pd.DataFrame({"x": [np.nan]}))["x"].tolist()
    assert filled == [2.0]


# -- the user's exception comes out unchanged ----------------------------------------------------------
class PickyError(Exception):
    def __init__(self, code: int, detail: str) -> None:
        super().__init__(code, detail)
        self.code = code


def raise_picky(col):
    raise PickyError(7, "bad row")


def test_lambda_exception_is_reraised_unchanged():
    df = pd.DataFrame({"a": [1, 2]})
    wf = tp.Workflow(["a"] >> ops.LambdaOp(raise_picky))
    with pytest.raises(PickyError) as info:
        wf.fit(df).transform(df)
    assert info.value.code == 7
    assert info.value.args == (7, "bad row")
    assert "LambdaOp" in "".join(getattr(info.value, "__notes__", [])) + str(info.value.__cause__ or "")


# -- combo keys with the separator byte ------------------------------------------------------------------
def test_combo_categorify_keys_containing_the_separator_do_not_collide():
    df = pd.DataFrame({"a": ["x\x1fy", "x"], "b": ["z", "y\x1fz"]})
    wf = tp.Workflow([["a", "b"]] >> ops.Categorify(encode_type="combo"))
    out = wf.fit(df).transform(df)
    ids = out["a_b"].tolist()
    assert ids[0] != ids[1], "two different (a, b) pairs got the same combo id"


# -- _schema.json is read from the data's own folder only ------------------------------------------------
def test_schema_json_two_folders_up_is_not_inherited(tmp_path):
    df = pd.DataFrame({"C1": ["a", "b", "a"], "label": [0, 1, 0]})
    wf = tp.Workflow((["C1"] >> ops.Categorify()) + ["label"])
    wf.fit(df)
    wf.transform(tp.Dataset(df)).to_parquet(str(tmp_path / "out"))
    nested = tmp_path / "out" / "sub" / "deeper"
    nested.mkdir(parents=True)
    pd.DataFrame({"C1": [5, 6], "label": [1, 1]}).to_parquet(nested / "x.parquet")
    ds = tp.Dataset(str(nested))
    assert "categorical" not in ds.schema["C1"].tags
