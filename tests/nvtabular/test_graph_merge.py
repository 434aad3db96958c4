"""NVTabular 23.08's `+` merge of branches that output the same column (merlin-core 23.08:
``LocalExecutor._merge_upstream_columns`` takes an overlapping column from the later upstream
frame; ``Schema.__add__`` puts it at the later branch's place and merges its ``ColumnSchema``
with ``__merge__``: the later dtype and properties over the earlier ones, tags overridden). tabprep
follows the rule and warns when the branches compute the column differently. References: pandas."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops
from tests.conftest import make_dataset, to_pandas


@pytest.fixture
def df():
    return pd.DataFrame({"a": ["x", "y", "x", None, "x", "z"], "b": [1, 2, 3, 4, 5, 6],
                         "c": [0.5, -2.0, np.inf, np.nan, 3.0, 10.0]})


def test_later_branch_wins_values_place_and_schema(df, backend):
    """merlin-core: [a, b, c] + [a] -> columns [b, c, a], `a` the later branch's values; the
    merged schema has the later tags (colliding earlier tags dropped: categorical vs continuous)."""
    with pytest.warns(UserWarning, match=r"column 'c'.*\['c'\] >> Clip and later \['c'\] >> LogOp.*"
                                         r"values are kept.*Rename"):
        wf = tp.Workflow((["a", "b"] >> ops.Categorify()) + (["c"] >> ops.Clip(min_value=0.0)) + ["b"]
                         + (["c"] >> ops.LogOp()))
    assert wf.output_columns == ["a", "b", "c"]  # b: raw after the Categorify's b; c: LogOp's place
    out = to_pandas(wf.fit_transform(make_dataset(df, backend, nparts=2)).compute())
    assert list(out.columns) == ["a", "b", "c"]
    assert out["b"].tolist() == df["b"].tolist()  # the later branch: the raw column, not its ids
    with np.errstate(invalid="ignore"):
        want_c = np.log1p(df["c"].to_numpy(dtype=float))
    np.testing.assert_array_equal(out["c"].to_numpy(dtype=float), want_c.astype(np.float32))
    # the raw b's schema merged over the Categorify's: its dtype, the earlier tags and domain kept
    # (merlin-core's ColumnSchema.__merge__; what the warning is about)
    b = wf.output_schema["b"]
    assert b.dtype == "int64" and "categorical" in b.tags and "domain" in b.properties
    assert "continuous" in wf.output_schema["c"].tags
    # serving computes the later branch only, and agrees
    served = tp.ServingTransform(wf)(df)
    np.testing.assert_array_equal(np.asarray(served["c"], dtype=float).ravel(), out["c"].to_numpy(dtype=float))
    assert np.asarray(served["b"]).ravel().tolist() == df["b"].tolist()


def test_categorical_then_continuous_tags_merge(df):
    """merlin-core's TagSet.override: the later branch's `continuous` removes the earlier
    `categorical`; properties of both, the later winning a key."""
    with pytest.warns(UserWarning, match="column 'b'"):
        wf = tp.Workflow((["b"] >> ops.Categorify()) + (["b"] >> ops.Normalize()))
    wf.fit(tp.Dataset(df))
    col = wf.output_schema["b"]
    assert "continuous" in col.tags and "categorical" not in col.tags
    assert col.dtype == "float64"  # the later branch's: Normalize's (NVTabular's default float64)


def test_same_values_twice_do_not_warn(df):
    """A raw column selected by two branches, or one node used twice, has one value: no warning."""
    clip = ["c"] >> ops.Clip(max_value=5.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wf = tp.Workflow((["a"] >> ops.Categorify()) + ["b"] + ["b", "c"])
        again = tp.Workflow(clip + ["b"] + clip)
    assert wf.output_columns == ["a", "b", "c"]
    out = wf.fit_transform(tp.Dataset(df)).compute()
    assert out["b"].tolist() == df["b"].tolist()
    np.testing.assert_array_equal(out["c"].to_numpy(), df["c"].to_numpy())
    assert again.output_columns == ["b", "c"]
    got = again.transform(tp.Dataset(df)).compute()
    np.testing.assert_array_equal(got["c"].to_numpy(), df["c"].clip(upper=5.0).to_numpy())


def test_a_tag_selection_resolved_at_fit_warns_too(df):
    """A column that reaches a '+' through a ColumnSelector(tags=...) is known only once the data's
    schema is: the warning comes at fit, and the later branch's values are kept."""
    schema = tp.Schema([tp.ColumnSchema("a", dtype="str"), tp.ColumnSchema("b", dtype="int64"),
                        tp.ColumnSchema("c", dtype="float64", tags=(tp.Tags.CONTINUOUS,))])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to say before the tags are resolved
        wf = tp.Workflow((["c"] >> ops.Clip(max_value=1.0)) + (tp.ColumnSelector(tags=[tp.Tags.CONTINUOUS])
                                                               >> ops.FillMissing(fill_val=-1.0)))
    with pytest.warns(UserWarning, match=r"column 'c'.*\['c'\] >> Clip and later .*FillMissing"):
        wf.fit(tp.Dataset(df, schema=schema))
    got = wf.transform(tp.Dataset(df)).compute()
    assert got["c"].tolist() == df["c"].fillna(-1.0).tolist()
