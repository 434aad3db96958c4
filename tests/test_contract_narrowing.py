"""Data wider than the fitted input schema, on columns whose fitted dtype reaches the output
(passed through, renamed, or through a LambdaOp that keeps its input's dtype).

NVTabular 23.08 passes such values through as given (int64 ``2**40 + 1`` stays int64; checked side
by side). tabprep's output schema is fixed at fit, so the output keeps the fitted dtype: values that
dtype holds are kept exactly (with a warning naming the column, once), values it cannot hold are
refused naming the column, both dtypes and the fix. Before, int64 values were wrapped into int32
(``2**40 + 1`` came out as 1) and a finer time unit was truncated, silently.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import _warn, ops

from conftest import BACKENDS, frame_on, to_pandas


@pytest.fixture(autouse=True)
def _warnings_again():
    """The narrowing warning is given once per process and column: again for each test here."""
    _warn._ONCE.difference_update({k for k in _warn._ONCE if isinstance(k, tuple) and k[:1] == ("narrowed",)})
    yield


def _fit_frame() -> pd.DataFrame:
    return pd.DataFrame({"a": pd.Series([1, 2, 2], dtype="int32"), "f": pd.Series([0.5, 1.5, 2.5], dtype="float32"),
                         "k": ["x", "y", "x"]})


def _graphs():
    return {
        "passed through": lambda: (["k"] >> ops.Categorify()) + ["a"],
        "renamed": lambda: ["a"] >> ops.Rename(postfix="_r"),
        "lambda": lambda: ["a"] >> ops.LambdaOp(lambda c: c + 1),
    }


@pytest.mark.parametrize("backend", BACKENDS[1:])   # (the CPU: the test below, frames, datasets and files)
@pytest.mark.parametrize("graph", sorted(_graphs()))
def test_wider_ints_beyond_the_fitted_int_on_the_gpu_are_refused(graph, backend):
    wf = tp.Workflow(_graphs()[graph]()).fit(tp.Dataset(frame_on(_fit_frame(), backend)))
    given = pd.DataFrame({"a": pd.Series([2**40 + 1, 3, 4], dtype="int64"), "f": [0.5, 1.5, 2.5], "k": ["x", "y", "z"]})
    with pytest.raises(ValueError, match=r"(?s)'a.*int32.*int64.*\[\d{10,}"):
        wf.transform(frame_on(given, backend))


@pytest.mark.parametrize("graph", sorted(_graphs()))
def test_wider_ints_beyond_the_fitted_int_are_refused_not_wrapped(tmp_path, graph):
    wf = tp.Workflow(_graphs()[graph]()).fit(tp.Dataset(_fit_frame()))
    given = pd.DataFrame({"a": pd.Series([2**40 + 1, 3, -(2**31) - 1], dtype="int64"), "f": [0.5, 1.5, 2.5],
                          "k": ["x", "y", "z"]})
    with pytest.raises(ValueError, match=r"(?s)'a.*int32.*int64.*\[\d{10,}"):
        wf.transform(given)
    given.to_parquet(tmp_path / "given.parquet", index=False)
    with pytest.raises(ValueError, match=r"(?s)'a.*int32.*int64"):
        wf.transform(tp.Dataset(str(tmp_path / "given.parquet"))).to_parquet(str(tmp_path / "out"))
    assert not (tmp_path / "out" / "_SUCCESS").exists()


@pytest.mark.parametrize("graph", sorted(_graphs()))
def test_wider_ints_the_fitted_int_holds_keep_their_values_with_a_warning(graph, backend):
    wf = tp.Workflow(_graphs()[graph]()).fit(tp.Dataset(frame_on(_fit_frame(), backend)))
    values = [2**31 - 2, -(2**31), 7]
    given = pd.DataFrame({"a": pd.Series(values, dtype="int64"), "f": [0.5, 1.5, 2.5], "k": ["x", "y", "z"]})
    with pytest.warns(tp.NVTabularDifferenceWarning, match=r"(?s)'a.*int64.*int32"):
        out = to_pandas(wf.transform(frame_on(given, backend)))
    col = out.columns[-1]
    # the lambda adds 1 to the int32 values: 2**31 - 2 + 1 still fits
    assert out[col].tolist() == ([v + 1 for v in values] if graph == "lambda" else values)
    assert str(out[col].dtype) == "int32"


def test_float64_given_for_a_float32_fit_is_rounded_to_float32_with_a_warning(backend):
    wf = tp.Workflow((["k"] >> ops.Categorify()) + ["f"]).fit(tp.Dataset(frame_on(_fit_frame(), backend)))
    given = pd.DataFrame({"a": [1, 2, 3], "f": [0.1, 1e-10, np.nan], "k": ["x", "y", "z"]})
    with pytest.warns(tp.NVTabularDifferenceWarning, match=r"(?s)'f'.*float64.*float32"):
        out = to_pandas(wf.transform(frame_on(given, backend)))
    assert str(out["f"].dtype) == "float32"
    np.testing.assert_array_equal(out["f"].to_numpy(), np.array([0.1, 1e-10, np.nan], dtype=np.float32))


def test_the_fitted_dtype_given_warns_nothing():
    wf = tp.Workflow((["k"] >> ops.Categorify()) + ["a", "f"]).fit(tp.Dataset(_fit_frame()))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = wf.transform(_fit_frame())
    assert out["a"].tolist() == [1, 2, 2] and str(out["a"].dtype) == "int32"


def test_a_finer_time_unit_without_nulls_is_refused_not_truncated():
    fit = pd.DataFrame({"t": pd.Series(pd.to_datetime(["2020-01-01", "2020-01-02"])).astype("datetime64[us]"),
                        "k": ["x", "y"]})
    wf = tp.Workflow((["k"] >> ops.Categorify()) + ["t"]).fit(tp.Dataset(fit))
    given = pd.DataFrame({"t": pd.to_datetime([1577836800000000001, 5], unit="ns"), "k": ["x", "y"]})
    with pytest.raises(ValueError, match=r"(?s)'t'.*datetime64\[us\].*datetime64\[ns\]"):
        wf.transform(given)
    exact = pd.DataFrame({"t": pd.to_datetime([1577836800000000000, 5000], unit="ns"), "k": ["x", "y"]})
    out = wf.transform(exact)
    assert str(out["t"].dtype) == "datetime64[us]"
    assert out["t"].astype("int64").tolist() == [1577836800000000, 5]
