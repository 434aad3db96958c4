"""FillMissing, FillMedian, Clip, LogOp and Rename as NVTabular 23.08's (nvtabular/ops/fill.py,
clip.py, logop.py, rename.py): values against numpy / pandas written here, dtypes and output
names as nvtabular 23.8.0 gives them (run side by side on this frame: identical outputs)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

from conftest import make_dataset, to_pandas


def _df():
    return pd.DataFrame({"x": [1.0, None, 4.0, 10.0, np.inf, 3.0], "i": [0, 1, 9, 3, 2, 7]})


def _run(sel, op, backend="cpu", df=None):
    wf = tp.Workflow(sel >> op)
    out = to_pandas(wf.fit_transform(make_dataset(_df() if df is None else df, backend, nparts=2)).to_ddf().compute())
    return wf, out


def test_fill_missing_value_and_bool_indicator(backend):
    """FillMissing(fill_val, add_binary_cols=True): nulls -> fill_val, inf kept, ``x_filled`` bool
    (True where filled) after ``x``; default fill 0; an int column without nulls unchanged."""
    wf, out = _run(["x"], ops.FillMissing(fill_val=-1, add_binary_cols=True), backend)
    assert list(out.columns) == ["x", "x_filled"]
    assert out["x"].tolist() == _df()["x"].fillna(-1).tolist()
    assert str(out["x_filled"].dtype) == "bool" and out["x_filled"].tolist() == _df()["x"].isna().tolist()
    assert wf.output_schema["x_filled"].dtype == "bool"
    _, out = _run(["x", "i"], ops.FillMissing(), backend)
    assert out["x"].tolist() == _df()["x"].fillna(0).tolist()
    assert str(out["i"].dtype) == "int64" and out["i"].tolist() == _df()["i"].tolist()


def test_fill_median_of_finite_values(backend):
    """FillMedian: nulls -> the median of the fitted values (pandas' median), ``x_filled``."""
    df = pd.DataFrame({"x": [1.0, None, 4.0, 10.0, 2.0, 3.0, 8.0]})
    _, out = _run(["x"], ops.FillMedian(add_binary_cols=True), backend, df)
    assert out["x"].tolist() == df["x"].fillna(df["x"].median()).tolist()
    assert out["x_filled"].tolist() == df["x"].isna().tolist()


def test_fill_median_leaves_infinite_values_out_where_nvtabular_counts_them():
    """Deliberate difference (docs/migration.md, non-finite values): tabprep's median is of the
    finite values, 3.5 here; nvtabular 23.8.0's dask quantile counts inf and gives 4.0."""
    _, out = _run(["x"], ops.FillMedian())
    finite = _df()["x"][np.isfinite(_df()["x"])]
    assert out["x"].tolist()[1] == finite.median() == 3.5


def test_clip_bounds_nulls_and_dtype(backend):
    """Clip(min_value, max_value): inf clipped to max_value, null stays null, dtype kept (int64 too)."""
    wf, out = _run(["x"], ops.Clip(min_value=0, max_value=5), backend)
    np.testing.assert_array_equal(out["x"].to_numpy("float64"), np.clip(_df()["x"].to_numpy(), 0, 5))
    _, out = _run(["x"], ops.Clip(min_value=2), backend)
    np.testing.assert_array_equal(out["x"].to_numpy("float64"), np.clip(_df()["x"].to_numpy(), 2, None))
    _, out = _run(["i"], ops.Clip(max_value=5), backend)
    assert str(out["i"].dtype) == "int64" and out["i"].tolist() == np.minimum(_df()["i"], 5).tolist()


def test_log_op_is_float32_log1p(backend):
    """LogOp: log(float32(x) + 1) as float32 for int and float input (nvtabular's astype(float32) and
    float32 sum; the log correctly rounded: tests/test_op_log.py), tagged continuous; inf stays inf,
    null stays null."""
    wf, out = _run(["x", "i"], ops.LogOp(), backend)
    for c in ("x", "i"):
        assert str(out[c].dtype) == "float32" and wf.output_schema[c].dtype == "float32"
        x32 = _df()[c].to_numpy().astype("float32")
        want = np.log((x32 + np.float32(1)).astype("float64")).astype("float32")
        np.testing.assert_array_equal(out[c].to_numpy(), want)
        assert "continuous" in wf.output_schema[c].tags


def test_rename_postfix_function_and_name():
    """Rename(postfix=), Rename(f=), Rename(name=) for one column; name= with two columns is an error."""
    assert _run(["x", "i"], ops.Rename(postfix="_r"))[1].columns.tolist() == ["x_r", "i_r"]
    assert _run(["x", "i"], ops.Rename(f=str.upper))[1].columns.tolist() == ["X", "I"]
    _, out = _run(["i"], ops.Rename(name="z"))
    assert out.columns.tolist() == ["z"] and out["z"].tolist() == _df()["i"].tolist()
    with pytest.raises(ValueError, match="name="):
        _run(["x", "i"], ops.Rename(name="z"))


def test_fill_missing_empty_list_fills_null_list_rows(backend):
    """``FillMissing(fill_val=[])`` (a tabprep addition; NVTabular 23.08 raises a TypeError from
    pandas' fillna) turns null rows of a list column into empty lists, NVTabular's GPU result for a
    null list row in Categorify; null elements inside a row are left alone. A scalar column is refused
    by name."""
    from conftest import list_series

    df = pd.DataFrame({"l": list_series([[1.0, None], None, [], [3.0], None], "float64"),
                       "s": [1.0, None, 2.0, 3.0, 4.0]})
    wf = tp.Workflow(["l"] >> ops.FillMissing(fill_val=[]))
    out = to_pandas(wf.fit_transform(make_dataset(df, backend, nparts=2)))
    got = [list(v) for v in out["l"]]
    assert [len(v) for v in got] == [2, 0, 0, 1, 0]
    assert got[0][0] == 1.0 and pd.isna(got[0][1]) and got[3] == [3.0]
    with pytest.raises(TypeError, match="'s'"):
        tp.Workflow(["s"] >> ops.FillMissing(fill_val=[])).fit(make_dataset(df, backend))
    nested = pd.DataFrame({"n": pd.Series([[[1], [2, 3]], None], dtype=object)})
    with pytest.raises(TypeError, match="'n' is a nested list column"):
        tp.Workflow(["n"] >> ops.FillMissing(fill_val=[])).fit(tp.Dataset(nested))
