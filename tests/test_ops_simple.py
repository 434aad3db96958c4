"""Clip, LogOp, LambdaOp, Rename and Filter: stateless ops, checked on hand values and numpy."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tabprep as tp
from tabprep import ops

from conftest import double, make_dataset, positive_f64, random_frame, ratio_to, to_pandas, upper_name

HYP = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def run(node, df, backend="cpu", nparts=3):
    wf = tp.Workflow(node)
    ds = make_dataset(df, backend, nparts=nparts)
    wf.fit(ds)
    return wf, to_pandas(wf.transform(ds))


# -- Clip -------------------------------------------------------------------------------
def test_clip_bounds_nulls_and_dtypes(backend):
    df = pd.DataFrame({"f": [-5.0, 0.5, np.nan, 9.0], "i": pd.array([-3, None, 2, 40], dtype="Int64"),
                       "u": np.array([0, 3, 7, 255], dtype="uint8")})
    wf, out = run(["f", "i", "u"] >> ops.Clip(min_value=0, max_value=5), df, backend)
    assert out["f"].isna().tolist() == [False, False, True, False]
    assert out["f"].dropna().tolist() == [0.0, 0.5, 5.0]
    assert out["i"].tolist()[0] == 0 and out["i"].isna().tolist() == [False, True, False, False]
    assert out["i"].dropna().tolist() == [0, 2, 5]
    assert out["u"].tolist() == [0, 3, 5, 5] and str(out["u"].dtype) == "uint8"
    assert [c.dtype for c in wf.output_schema] == ["float64", "int64", "uint8"]


def test_clip_one_sided():
    df = pd.DataFrame({"x": [-2.0, 0.0, 3.0]})
    assert run(["x"] >> ops.Clip(min_value=-1), df)[1]["x"].tolist() == [-1.0, 0.0, 3.0]
    assert run(["x"] >> ops.Clip(max_value=1), df)[1]["x"].tolist() == [-2.0, 0.0, 1.0]


def test_clip_int_column_with_float_bounds_stays_int():
    # whole-number float bounds keep the int column's dtype; a fractional one is refused (it could
    # only be truncated, silently: NVTabular returns float64 data there; tests/test_op_clip_bounds.py)
    df = pd.DataFrame({"a": np.array([1, 2, 30, -5], dtype="int8")})
    wf, out = run(["a"] >> ops.Clip(min_value=0.0, max_value=2.0), df, nparts=2)
    assert str(out["a"].dtype) == "int8" == wf.output_schema["a"].dtype
    assert out["a"].tolist() == [1, 2, 2, 0]
    with pytest.raises(ValueError, match=r"Clip\(min_value=0.5\) on column 'a'.*int8"):
        run(["a"] >> ops.Clip(min_value=0.5, max_value=2.5), df, nparts=2)


@pytest.mark.parametrize("lo,hi", [(np.nan, None), (np.nan, 3), (None, float("nan")), (1, np.nan),
                                   (np.float32("nan"), np.nan)])
def test_a_nan_bound_is_no_bound_as_in_pandas(backend, lo, hi, tmp_path):
    # NVTabular's Clip is pandas' clip on the CPU, where a NaN threshold is no threshold; tabprep's
    # numpy clip turned every value into NaN (a silently different number), in the fused kernels too
    df = pd.DataFrame({"f": [-5.0, 0.5, np.nan, 9.0, 2.0], "f32": np.array([-1, 0, 4, 8, 2], dtype="float32"),
                       "i": np.array([-3, 0, 2, 40, 7], dtype="int64")})
    want = {c: df[c].clip(lower=lo, upper=hi) for c in df}
    for node in (["f", "f32", "i"] >> ops.Clip(min_value=lo, max_value=hi),
                 ["f", "f32", "i"] >> ops.Clip(min_value=lo, max_value=hi) >> ops.Clip(min_value=-100)):  # fused chain
        wf, out = run(node, df, backend)
        for c in df:
            got = out[c].astype("float64").to_numpy()
            np.testing.assert_array_equal(got, want[c].astype("float64").to_numpy(), err_msg=c)
            assert str(out[c].dtype) == str(df[c].dtype), c
        wf.save(str(tmp_path / "wf"))   # and after a save and load (NaN written as JSON's null or NaN)
        again = to_pandas(tp.Workflow.load(str(tmp_path / "wf")).transform(make_dataset(df, backend, nparts=2)))
        for c in df:
            np.testing.assert_array_equal(again[c].astype("float64").to_numpy(), out[c].astype("float64").to_numpy())


def test_a_nan_bound_is_no_bound_when_served_too():
    # the serving kernel clipped with the NaN bound (every value NaN) where the offline transform does not
    from tabprep.serving import ServingTransform

    df = pd.DataFrame({"f": [-5.0, 0.5, np.nan, 9.0], "i": np.array([-3, 0, 2, 40], dtype="int64")})
    wf, out = run(["f", "i"] >> ops.Clip(min_value=float("nan"), max_value=3), df)
    served = ServingTransform(wf)(df)
    for c in ("f", "i"):
        np.testing.assert_array_equal(np.asarray(served[c], dtype="float64"),
                                      df[c].clip(upper=3).astype("float64").to_numpy(), err_msg=c)


def test_numpy_scalar_parameters_save_as_their_values(tmp_path):
    # a bound or a count computed with numpy (np.percentile of float32 values) used to make the save
    # fail ("Object of type float32 is not JSON serializable")
    df = pd.DataFrame({"x": np.array([0.05, 0.5, 0.95, 2.0], dtype="float32"), "c": [1, 2, 3, 4]})
    node = (["x"] >> ops.Clip(min_value=np.float32(0.1), max_value=np.float64(0.9))) + \
        (["c"] >> ops.HashBucket(num_buckets=np.int64(7)))
    wf, out = run(node, df)
    wf.save(str(tmp_path / "wf"))
    again = to_pandas(tp.Workflow.load(str(tmp_path / "wf")).transform(make_dataset(df, "cpu", nparts=1)))
    np.testing.assert_array_equal(again["x"].to_numpy(), out["x"].to_numpy())
    np.testing.assert_array_equal(again["c"].to_numpy(), out["c"].to_numpy())
    np.testing.assert_array_equal(out["x"].to_numpy(), df["x"].clip(np.float32(0.1), np.float32(0.9)).to_numpy())


def test_clip_invalid_args():
    with pytest.raises(ValueError):
        ops.Clip()
    with pytest.raises(ValueError, match="greater"):
        ops.Clip(min_value=3, max_value=1)


@HYP
@given(vals=st.lists(st.one_of(st.none(), st.floats(-1e6, 1e6)), min_size=0, max_size=30),
       lo=st.floats(-100, 0), span=st.floats(0, 200))
def test_property_clip(vals, lo, span):
    hi = lo + span
    df = pd.DataFrame({"x": pd.Series([np.nan if v is None else v for v in vals], dtype="float64")})
    _, out = run(["x"] >> ops.Clip(min_value=lo, max_value=hi), df, nparts=2)
    exp = np.clip(df["x"].to_numpy(), lo, hi)
    np.testing.assert_array_equal(out["x"].to_numpy(), exp)


# -- LogOp --------------------------------------------------------------------------------
def test_log_op(backend):
    df = pd.DataFrame({"f": [0.0, np.e - 1, np.nan, 99.0], "i": pd.array([0, None, 9, 1], dtype="Int64")})
    wf, out = run(["f", "i"] >> ops.LogOp(), df, backend)
    np.testing.assert_allclose(out["f"].to_numpy("float64"), np.log1p([0.0, np.e - 1, np.nan, 99.0]).astype("float32"),
                               rtol=1e-7)
    assert out["i"].isna().tolist() == [False, True, False, False]
    np.testing.assert_allclose(out["i"].dropna().to_numpy("float64"), np.log1p([0.0, 9.0, 1.0]).astype("float32"))
    assert str(out["f"].dtype) == "float32" == wf.output_schema["i"].dtype


def test_log_op_below_minus_one_is_nan():
    df = pd.DataFrame({"x": [-1.0, -2.0, 1.0]})
    out = run(["x"] >> ops.LogOp(), df, nparts=1)[1]["x"].to_numpy("float64")
    assert out[0] == -np.inf and np.isnan(out[1]) and out[2] == pytest.approx(np.log(2), rel=1e-6)


# int, uint64 and float columns against LogOp's formula, bit for bit: tests/test_op_log.py


@pytest.mark.parametrize("dtype", ["int64", "Int64", "int32", "float32"])
def test_fill_then_clip_numpy_paths_match_pandas(backend, dtype):
    """FillMissing and Clip take numpy paths for numpy and masked int columns: same values and dtypes as pandas."""
    rng = np.random.default_rng(5)
    x = pd.Series(rng.integers(-50, 50, 200)).astype(dtype.lower())
    if dtype == "Int64" or dtype == "float32":
        x = x.astype(dtype)
        x[rng.random(200) < 0.3] = None
    df = pd.DataFrame({"x": x})
    out = run(["x"] >> ops.FillMissing(fill_val=7) >> ops.Clip(min_value=-10, max_value=20), df, backend)[1]["x"]
    exp = x.fillna(7).clip(lower=-10, upper=20)
    if dtype == "Int64":
        exp = exp.astype("int64")
    assert str(out.dtype) == str(exp.dtype)
    np.testing.assert_array_equal(out.to_numpy(), exp.to_numpy())


# -- LambdaOp -------------------------------------------------------------------------------
def test_lambda_op_one_and_two_arguments(backend):
    df = random_frame(seed=4, n=60)
    node = (["i8", "f64"] >> ops.LambdaOp(double)) + (["f32"] >> ops.LambdaOp(ratio_to, dependency="label",
                                                                            dtype="float32", tags=["mine"]))
    wf, out = run(node, df, backend)
    assert out["i8"].tolist() == (df["i8"] * 2).tolist() and str(out["i8"].dtype) == "int8"
    np.testing.assert_array_equal(out["f64"].to_numpy(), df["f64"].to_numpy() * 2)
    exp = (df["f32"].astype("float64") / (1 + df["label"].abs())).astype("float32").to_numpy()
    np.testing.assert_array_equal(out["f32"].to_numpy(), exp)
    assert wf.output_schema["f32"].dtype == "float32" and "mine" in wf.output_schema["f32"].tags
    assert "label" not in out.columns  # a dependency is read, not output
    assert "label" in wf.input_columns


def test_lambda_op_returning_numpy_array_and_callable_sugar():
    df = pd.DataFrame({"x": [1.0, 2.0, 3.0], "y": [0, 1, 2]})
    from tabprep.workflow import as_node

    wf, out = run(as_node(["x"]) >> (lambda col: np.asarray(col) + 1.0), df, nparts=2)
    assert out["x"].tolist() == [2.0, 3.0, 4.0]
    assert isinstance(wf.ops[0], ops.LambdaOp)


def test_lambda_op_wrong_length_is_a_clear_error():
    df = pd.DataFrame({"x": [1.0, 2.0, 3.0]})
    wf = tp.Workflow(["x"] >> ops.LambdaOp(lambda col: col.iloc[:1]))
    with pytest.raises(ValueError, match="row count|values for column"):
        wf.fit(df)
        wf.transform(df)


@pytest.mark.parametrize("value", [0, 2.5, "a", np.float32(1.5), np.array(7)])
def test_lambda_op_returning_a_scalar_broadcasts_it_as_pandas_assignment_does(value, tmp_path):
    # NVTabular assigns f's result to the column (new_df[col] = f(col)): a scalar fills every row
    # there; tabprep raised "object of type 'int' has no len()"
    df = pd.DataFrame({"x": [1.0, 2.0, np.nan, 4.0], "y": [1, 2, 3, 4]})
    want = df.copy()
    want["x"] = value.item() if isinstance(value, np.ndarray) else value   # pandas' own assignment
    wf = tp.Workflow((["x"] >> ops.LambdaOp(lambda col: value)) + ["y"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no "came out ... but the output schema says ..." on any partition
        out = to_pandas(wf.fit_transform(make_dataset(df, "cpu", nparts=2)))
    assert out["x"].tolist() == want["x"].tolist()
    assert str(out["x"].dtype) == str(want["x"].dtype)


def test_lambda_op_requires_callable():
    with pytest.raises(TypeError):
        ops.LambdaOp(3)


# -- Rename -------------------------------------------------------------------------------
def test_rename_variants_keep_values_and_order():
    df = random_frame(seed=5, n=20)
    _, out = run(["i8", "s"] >> ops.Rename(postfix="_p"), df)
    assert list(out.columns) == ["i8_p", "s_p"]
    assert out["i8_p"].tolist() == df["i8"].tolist()
    assert out["s_p"].fillna("<n>").tolist() == df["s"].fillna("<n>").tolist()
    _, out = run(["f64", "s"] >> ops.Rename(f=upper_name), df)
    assert list(out.columns) == ["F64_X", "S_X"]
    _, out = run(["u32"] >> ops.Rename(name="new"), df)
    assert list(out.columns) == ["new"] and out["new"].tolist() == df["u32"].tolist()
    assert str(out["new"].dtype) == "uint32"


def test_rename_argument_errors():
    with pytest.raises(ValueError, match="exactly one"):
        ops.Rename()
    with pytest.raises(ValueError, match="exactly one"):
        ops.Rename(postfix="_a", name="b")
    with pytest.raises(ValueError, match="one input column"):
        tp.Workflow(["a", "b"] >> ops.Rename(name="c"))


# -- Filter -------------------------------------------------------------------------------
def test_filter_keeps_row_order_and_drops_null_mask(backend):
    df = random_frame(seed=6, n=150)
    wf, out = run(["f64", "idx", "s"] >> ops.Filter(positive_f64), df, backend, nparts=4)
    keep = (df["f64"] > 10).to_numpy(dtype=bool)  # NaN > 10 is False
    assert out["idx"].tolist() == df["idx"][keep].tolist()
    assert out["f64"].tolist() == df["f64"][keep].tolist()
    assert list(out.columns) == ["f64", "idx", "s"]


def test_filter_nullable_mask_null_counts_false():
    df = pd.DataFrame({"x": pd.array([1, None, 5, 0], dtype="Int64"), "k": [0, 1, 2, 3]})
    _, out = run(["x", "k"] >> ops.Filter(lambda d: d["x"] > 0), df, nparts=2)
    assert out["k"].tolist() == [0, 2]


def test_filter_wrong_length():
    df = pd.DataFrame({"x": [1, 2, 3]})
    wf = tp.Workflow(["x"] >> ops.Filter(lambda d: np.array([True])))
    wf.fit(df)
    with pytest.raises(ValueError, match="one boolean per row"):
        wf.transform(df)


def test_filter_requires_callable():
    with pytest.raises(TypeError):
        ops.Filter("x > 1")
