"""Groupby ``sum`` (and the other number aggregations) of a string column, from the user's side.

pandas' ``df.groupby(k)[s].sum()`` concatenates a group's strings (nulls skipped). NVTabular 23.08
does not give that: its ``_apply_aggs`` casts every ``*_sum`` output to float32 after pandas'
aggregation, which raises on concatenated text, and turns digit strings into a number ("1" + "2"
-> 12.0). tabprep refuses the aggregation when the workflow is bound, naming the column and the
alternative (docs/migration.md, Groupby): aggregate ``list`` and join each list with a LambdaOp.
These tests check both references with plain pandas, the refusal for every string dtype tabprep
reads (the in-memory Arrow dictionary one gave a cryptic pyarrow error from inside the
transform), and that the documented recipe gives pandas' concatenation, nulls, an all-null group
and an empty partition included.
"""
from __future__ import annotations

import warnings

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import tabprep as tp
from tabprep import ops

from conftest import to_pandas

K = [1, 1, 2, 2, 3, 3, 3]
S = ["a", "b", None, None, "c", None, "d"]   # group 2: all null


def _nvt_23_08_sum(df: pd.DataFrame) -> pd.Series:
    """NVTabular 23.08's Groupby(aggs={"s": "sum"}) on one partition (its _apply_aggs, in pandas)."""
    out = df[["k", "s"]].groupby(["k"]).agg({"s": ["sum"]}).reset_index()
    out.columns = ["_".join(n for n in name if n != "") for name in out.columns.to_flat_index()]
    return out["s_sum"].astype(np.float32)


def _dataset(df: pd.DataFrame) -> tp.Dataset:
    """Three partitions, each holding whole groups, the middle one empty."""
    parts = [df[df.k < 3].reset_index(drop=True), df.iloc[:0], df[df.k >= 3].reset_index(drop=True)]
    return tp.Dataset(dd.from_map(lambda f: f, parts, meta=df.iloc[:0], enforce_metadata=False))


STRING_COLUMNS = {
    "object": lambda: pd.Series(S, dtype=object),
    "str": lambda: pd.Series(S, dtype="str"),
    "arrow string": lambda: pd.Series(S, dtype=pd.ArrowDtype(pa.string())),
    "arrow large_string": lambda: pd.Series(S, dtype=pd.ArrowDtype(pa.large_string())),
    "category": lambda: pd.Series(S, dtype="category"),
    "arrow dictionary": lambda: pd.Series(pd.array(pa.array(S).dictionary_encode(),
                                                   dtype=pd.ArrowDtype(pa.dictionary(pa.int32(), pa.string())))),
}


def test_the_references_pandas_concatenates_and_nvtabular_raises():
    df = pd.DataFrame({"k": K, "s": pd.Series(S, dtype="str")})
    assert df.groupby("k", sort=True)["s"].sum().tolist() == ["ab", "", "cd"]
    with pytest.raises(ValueError, match="could not convert string to float"):
        _nvt_23_08_sum(df)
    digits = pd.DataFrame({"k": [1, 1, 2], "s": ["1", "2", "7"]})
    assert _nvt_23_08_sum(digits).tolist() == [12.0, 7.0]   # NVTabular's number from digit strings


@pytest.mark.parametrize("agg", ["sum", "mean"])
@pytest.mark.parametrize("dtype", list(STRING_COLUMNS))
def test_a_number_aggregation_of_strings_is_refused_naming_the_column_and_the_alternative(dtype, agg):
    df = pd.DataFrame({"k": K, "s": STRING_COLUMNS[dtype]()})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # Groupby's dtype note
        wf = tp.Workflow(["k", "s"] >> ops.Groupby("k", aggs={"s": [agg]}))
    with pytest.raises(TypeError) as err:
        wf.fit(_dataset(df))
        wf.transform(_dataset(df)).compute()
    msg = str(err.value)
    assert "Groupby" in msg and "'s'" in msg and repr(agg) in msg and "strings" in msg, msg
    # the alternative: the list of the group's strings, joined by a LambdaOp (the recipe below)
    assert "'list'" in msg and "LambdaOp" in msg and "docs/migration.md" in msg, msg


def concat_strings(col, df):
    """docs/migration.md's recipe: a ``list`` output's strings joined in row order, nulls skipped."""
    return col.map(lambda v: None if v is None else "".join(x for x in v if x is not None))


@pytest.mark.parametrize("dtype", ["object", "str", "arrow string", "category"])
def test_the_documented_recipe_gives_pandas_concatenation(tmp_path, dtype):
    df = pd.DataFrame({"k": K, "s": STRING_COLUMNS[dtype]()})
    ref = pd.DataFrame({"k": K, "s": pd.Series(S, dtype="str")}).groupby("k", sort=True)["s"].sum()
    grouped = ["k", "s"] >> ops.Groupby("k", aggs={"s": "list"})
    wf = tp.Workflow(grouped["k"] + (grouped["s_list"] >> ops.LambdaOp(concat_strings, dtype="str")
                                     >> ops.Rename(name="s_sum")))
    out = to_pandas(wf.fit(_dataset(df)).transform(_dataset(df)))
    assert out["k"].tolist() == ref.index.tolist()
    assert out["s_sum"].tolist() == ref.tolist() == ["ab", "", "cd"]
