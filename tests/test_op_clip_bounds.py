"""Clip with a fractional bound on an integer column: NVTabular 23.08 returns float64 data (pandas'
clip) under an int schema; tabprep keeps the column's dtype, so it refuses the bound when the graph
is bound (a ValueError naming the column, the bound and the fix) instead of truncating it silently."""
import warnings

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops


def _run(df, graph):
    wf = tp.Workflow(graph)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wf.fit(tp.Dataset(df, npartitions=2))
        return wf, wf.transform(tp.Dataset(df, npartitions=2)).to_ddf().compute()


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "uint8", "uint64", "Int64"])
@pytest.mark.parametrize("lo,hi,bad", [(-1.5, 5.5, "-1.5"), (-1.0, 5.5, "5.5"), (0.25, None, "0.25"),
                                        (None, 2.5, "2.5"), (np.float32(1.5), None, "1.5")])
def test_fractional_bound_on_int_column_raises(dtype, lo, hi, bad):
    vals = [1, 3, 9, 0] if dtype.startswith(("u", "U")) else [1, -3, 9, 0]
    df = pd.DataFrame({"x": pd.array(vals, dtype=dtype)})
    with pytest.raises(ValueError) as err:
        _run(df, ["x"] >> ops.Clip(min_value=lo, max_value=hi))
    msg = str(err.value)
    assert "'x'" in msg and bad in msg and "float64" in msg and "whole" in msg


def test_fractional_bound_on_nullable_int_with_nulls_and_list_column():
    df = pd.DataFrame({"x": pd.array([1, None, 9, 0], dtype="Int64")})
    with pytest.raises(ValueError, match="'x'"):
        _run(df, ["x"] >> ops.Clip(min_value=0.5))
    df = pd.DataFrame({"l": [[1, 2], [3], [], [7, 8]]})
    with pytest.raises(ValueError, match="'l'"):
        _run(df, ["l"] >> ops.Clip(max_value=2.5))


def test_fractional_bound_then_normalize_raises_too():
    df = pd.DataFrame({"x": [1, -3, 9, 0]})
    with pytest.raises(ValueError, match="'x'"):
        _run(df, ["x"] >> ops.Clip(min_value=-1.5, max_value=5.5) >> ops.Normalize())
    with pytest.raises(ValueError, match="'x'"):
        _run(df, ["x"] >> ops.Clip(min_value=-1.5, max_value=5.5) >> ops.NormalizeMinMax())


def test_cast_to_float_first_gives_nvtabular_values():
    df = pd.DataFrame({"x": [1, -3, 9, 0], "y": [2, 2, 2, 2]})
    wf, out = _run(df, ["x"] >> ops.LambdaOp(lambda c: c.astype("float64")) >> ops.Clip(min_value=-1.5, max_value=5.5))
    assert out["x"].dtype == np.float64
    assert out["x"].tolist() == [1.0, -1.5, 5.5, 0.0]
    assert str(wf.output_schema["x"].dtype) == "float64"


@pytest.mark.parametrize("dtype", ["int64", "uint8", "Int64"])
def test_whole_number_bounds_on_int_column_keep_dtype(dtype):
    vals = [1, 3, 9, 0] if dtype == "uint8" else [1, -3, 9, 0]
    df = pd.DataFrame({"x": pd.array(vals, dtype=dtype)})
    wf, out = _run(df, ["x"] >> ops.Clip(min_value=1.0, max_value=np.float64(5)))
    assert out["x"].tolist() == [min(max(v, 1), 5) for v in vals]
    assert str(out["x"].dtype) == dtype
    assert str(wf.output_schema["x"].dtype) in (dtype, dtype.lower())


def test_nan_bound_is_no_bound_and_float_column_takes_fractions():
    df = pd.DataFrame({"x": [1, -3, 9, 0], "f": [1.0, -3.0, np.nan, 0.25]})
    wf, out = _run(df, ["x"] >> ops.Clip(min_value=float("nan"), max_value=5))
    assert out["x"].tolist() == [1, -3, 5, 0] and out["x"].dtype == np.int64
    wf, out = _run(df, ["f"] >> ops.Clip(min_value=-1.5, max_value=0.5))
    assert out["f"].tolist()[:2] == [0.5, -1.5] and np.isnan(out["f"].tolist()[2]) and out["f"].tolist()[3] == 0.25


def test_bool_column():
    df = pd.DataFrame({"b": [True, False, True, False]})
    wf, out = _run(df, ["b"] >> ops.Clip(min_value=0, max_value=1))
    assert out["b"].tolist() == [True, False, True, False] and out["b"].dtype == bool
    with pytest.raises(ValueError, match="'b'"):
        _run(df, ["b"] >> ops.Clip(min_value=0.5))
