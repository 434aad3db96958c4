"""Dropna as NVTabular 23.08's (nvtabular/ops/dropna.py ``Dropna.transform``:
``df.dropna(subset=selected columns)``): rows with a null in a selected column are dropped."""
from __future__ import annotations

import numpy as np
import pandas as pd

import tabprep as tp
from tabprep import ops
from tabprep.testing import check_op

from conftest import make_dataset, to_pandas


def _df():
    return pd.DataFrame({"a": [1.0, np.nan, 3.0, np.inf, 5.0], "s": ["x", "y", None, "z", "w"],
                         "n": pd.array([1, 2, 3, None, 5], dtype="Int64")})


def test_drops_rows_with_a_null_in_the_selection(backend):
    """Rows with NaN / None in a selected column go; +inf is a value; other columns are not looked at."""
    df = _df()
    wf = tp.Workflow(["a", "s"] >> ops.Dropna())
    out = to_pandas(wf.fit_transform(make_dataset(df, backend, nparts=3)).to_ddf().compute())
    ref = df[["a", "s"]].dropna()
    assert out["a"].tolist() == ref["a"].tolist()
    assert out["s"].tolist() == ref["s"].tolist()


def test_nullable_ints_and_empty_result():
    """pandas NA of a nullable int column is a null; an all-dropped frame keeps its columns."""
    out = tp.Workflow(["n"] >> ops.Dropna()).fit_transform(tp.Dataset(_df())).to_ddf().compute()
    assert out["n"].tolist() == [1, 2, 3, 5]
    empty = ops.Dropna().transform(["a"], pd.DataFrame({"a": [np.nan, None]}, dtype="float64"))
    assert len(empty) == 0 and list(empty.columns) == ["a"]


def test_check_op():
    """The conformance battery."""
    check_op(ops.Dropna())
