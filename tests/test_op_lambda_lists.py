"""LambdaOp with a one-argument function on a list column: tabprep applies ``f`` to the column's
elements (one value each, on the CPU and the GPU alike), where NVTabular 23.08 passes ``f`` the
column of lists, one cell per row (checked side by side: ``c.apply(np.sum)`` gives ``[6, 0, 9]``
there, the lists unchanged here). The difference is kept (documented) and now said once per op and
column, naming the fix ``f(col, df)``, which gets the whole lists in both."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops


def _frame() -> pd.DataFrame:
    return pd.DataFrame({"l": [[1, 2, 3], [], [4, 5]], "x": [1, 2, 3]})


def _double(c):
    return c * 2


def _row_sums(c, df):
    return c.apply(lambda row: int(np.sum(row)))


def test_one_argument_function_on_a_list_column_is_element_wise_and_said_once():
    wf = tp.Workflow(["l"] >> ops.LambdaOp(_double)).fit(tp.Dataset(_frame()))
    with pytest.warns(tp.NVTabularDifferenceWarning, match=r"(?s)'l'.*element.*NVTabular.*f\(col, df\)"):
        out = wf.transform(_frame())
    assert [list(map(int, row)) for row in out["l"]] == [[2, 4, 6], [], [8, 10]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # once per op and column
        wf.transform(_frame())


def test_two_argument_function_gets_the_whole_lists_without_a_word():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wf = tp.Workflow(["l"] >> ops.LambdaOp(_row_sums, dtype="int64")).fit(tp.Dataset(_frame()))
        out = wf.transform(_frame())
    assert out["l"].tolist() == [6, 0, 9]


def test_scalar_columns_are_not_concerned():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wf = tp.Workflow(["x"] >> ops.LambdaOp(_double)).fit(tp.Dataset(_frame()))
        assert wf.transform(_frame())["x"].tolist() == [2, 4, 6]


def _lengths(c, df):
    return c.apply(len)


def test_a_number_per_row_from_a_list_column_comes_out_as_numpy_int64():
    """``c.apply(len)`` of an Arrow-backed list column returns ``int64[pyarrow]`` on pandas; the
    output is the schema's numpy int64, as NVTabular's (it was ``int64[pyarrow]``, silently)."""
    wf = tp.Workflow(["l"] >> ops.LambdaOp(_lengths)).fit(tp.Dataset(_frame()))
    out = wf.transform(_frame())
    assert out["l"].tolist() == [3, 0, 2]
    assert out["l"].dtype == np.dtype("int64") and wf.output_schema["l"].dtype == "int64"
