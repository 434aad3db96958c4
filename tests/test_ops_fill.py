"""FillMissing (constant, optional <col>_filled flags) and FillMedian (pandas' median)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tabprep as tp
from tabprep import ops

from conftest import make_dataset, to_pandas

HYP = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def run(op, train, data=None, backend="cpu", nparts=3):
    data = train if data is None else data
    wf = tp.Workflow(list(train.columns) >> op)
    wf.fit(make_dataset(train, backend, nparts=nparts))
    return wf, to_pandas(wf.transform(make_dataset(data, backend, nparts=2)))


def test_fill_missing_default_zero(backend):
    df = pd.DataFrame({"f": [1.5, np.nan, -2.0], "i": pd.array([None, 4, 5], dtype="Int64"),
                       "f32": np.array([np.nan, np.nan, 1.0], dtype="float32"), "i8": np.array([1, 2, 3], dtype="int8")})
    wf, out = run(ops.FillMissing(), df, backend=backend)
    assert out["f"].tolist() == [1.5, 0.0, -2.0]
    assert out["i"].tolist() == [0, 4, 5] and str(out["i"].dtype) == "int64"
    assert out["f32"].tolist() == [0.0, 0.0, 1.0] and str(out["f32"].dtype) == "float32"
    assert out["i8"].tolist() == [1, 2, 3] and str(out["i8"].dtype) == "int8"
    assert list(out.columns) == ["f", "i", "f32", "i8"]
    assert wf.output_schema["i"].dtype == "int64"


def test_fill_missing_binary_cols(backend):
    df = pd.DataFrame({"a": [np.nan, 2.0, np.nan], "b": pd.array([1, None, 3], dtype="Int64")})
    wf, out = run(ops.FillMissing(fill_val=-1, add_binary_cols=True), df, backend=backend)
    assert list(out.columns) == ["a", "b", "a_filled", "b_filled"] == wf.output_columns
    assert out["a"].tolist() == [-1.0, 2.0, -1.0] and out["b"].tolist() == [1, -1, 3]
    assert out["a_filled"].tolist() == [True, False, True]
    assert out["b_filled"].tolist() == [False, True, False]
    assert str(out["a_filled"].dtype) == "bool" and wf.output_schema["a_filled"].dtype == "bool"


def test_fill_median_like_pandas(backend):
    train = pd.DataFrame({
        "odd": [5.0, np.nan, 1.0, 3.0, 100.0, np.nan],  # 4 values -> median interpolates: 4.0
        "even": [1.0, 2.0, 10.0, np.nan, 20.0, np.nan],  # 4 values -> 6.0
        "i": pd.array([1, 2, None, 7, 9, 9], dtype="Int64")})  # 5 values -> 7
    wf, out = run(ops.FillMedian(), train, backend=backend)
    med_odd = train["odd"].median()
    med_even = train["even"].median()
    assert (med_odd, med_even) == (4.0, 6.0)
    assert out["odd"].tolist() == [5.0, med_odd, 1.0, 3.0, 100.0, med_odd]
    assert out["even"].tolist() == [1.0, 2.0, 10.0, med_even, 20.0, med_even]
    assert out["i"].tolist() == [1, 2, int(train["i"].median()), 7, 9, 9]
    assert str(out["i"].dtype) == "int64"


def test_fill_median_all_null_column_gets_zero():
    df = pd.DataFrame({"x": [np.nan, np.nan], "y": [1.0, np.nan]})
    _, out = run(ops.FillMedian(add_binary_cols=True), df, nparts=2)
    assert out["x"].tolist() == [0.0, 0.0]
    assert out["y"].tolist() == [1.0, 1.0]
    assert out["x_filled"].tolist() == [True, True]


def test_fill_median_uses_training_median_on_new_data():
    train = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0, 100.0]})
    test = pd.DataFrame({"x": [np.nan, -1.0]})
    _, out = run(ops.FillMedian(), train, test)
    assert out["x"].tolist() == [3.0, -1.0]


@HYP
@given(vals=st.lists(st.one_of(st.none(), st.floats(-1e9, 1e9, allow_nan=False)), min_size=1, max_size=50),
       nparts=st.integers(1, 4))
def test_property_fill_median_equals_pandas_median(vals, nparts):
    df = pd.DataFrame({"x": pd.Series([np.nan if v is None else v for v in vals], dtype="float64")})
    _, out = run(ops.FillMedian(), df, nparts=nparts)
    med = df["x"].median()
    med = 0.0 if np.isnan(med) else med
    expected = df["x"].fillna(med).to_numpy()
    np.testing.assert_allclose(out["x"].to_numpy(), expected, rtol=1e-12, atol=1e-6)
    assert not out["x"].isna().any()


@HYP
@given(vals=st.lists(st.one_of(st.none(), st.integers(-1000, 1000)), min_size=1, max_size=30),
       fill=st.integers(-5, 5))
def test_property_fill_missing_ints(vals, fill):
    df = pd.DataFrame({"x": pd.array(vals, dtype="Int64")})
    _, out = run(ops.FillMissing(fill_val=fill, add_binary_cols=True), df, nparts=2)
    assert out["x"].tolist() == [fill if v is None else v for v in vals]
    assert out["x_filled"].tolist() == [v is None for v in vals]


def test_fill_median_says_nvtabulars_median_is_approximate_over_partitions():
    # NVTabular 23.08's FillMedian fits dask's quantile(method="dask"): exact on one partition,
    # merged per-partition percentiles on several ([1, 2] and [3, 4] give 2.0 there). tabprep's
    # median is exact (2.5, pandas' median): a different number on the same data, so building the
    # op says so, once per process (not when a saved workflow is loaded)
    from tabprep import _warn

    _warn._ONCE.discard("FillMedian approximate")
    with pytest.warns(tp.NVTabularDifferenceWarning, match=r"FillMedian.*exact median.*method='dask'"):
        node = ["x"] >> ops.FillMedian()
    df = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0, np.nan]})
    wf = tp.Workflow(node).fit(make_dataset(df, "cpu", nparts=2, empties=False))
    assert wf.ops[0].medians == {"x": pd.Series([1.0, 2.0, 3.0, 4.0]).median()} == {"x": 2.5}
