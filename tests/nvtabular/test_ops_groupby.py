"""Groupby as NVTabular 23.08's (nvtabular/ops/groupby.py): ``_first_or_last`` keeps first/last in
ascending order when ``ascending=False`` sorts the lists; ``column_mapping`` outputs a key column
only when it is selected; conventional aggregations std/var/median/nunique (pandas semantics)."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops
from tabprep.testing import check_op

from conftest import make_dataset, to_pandas


def _frame():
    return pd.DataFrame({
        "session": [1, 1, 1, 2, 2, 3],
        "item": [10, 11, 12, 20, 20, 30],
        "ts": [3, 1, 2, 5, 4, 9],
        "x": [1.0, np.nan, 4.0, 2.0, 2.5, 7.0],
    })


def _run(sel, op, df, backend="cpu"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        wf = tp.Workflow(sel >> op)
        return to_pandas(wf.fit_transform(make_dataset(df, backend, nparts=1)).to_ddf().compute())


def test_descending_sorts_lists_but_first_last_keep_time_order(backend):
    """_first_or_last(kind, ascending=False): 'first' is the last element of the descending list."""
    op = ops.Groupby("session", sort_cols="ts", aggs={"item": ["list", "first", "last"]}, ascending=False)
    out = _run(["session", "item", "ts"], op, _frame(), backend)
    assert [list(v) for v in out["item_list"]] == [[10, 12, 11], [20, 20], [30]]
    assert out["item_first"].tolist() == [11, 20, 30]  # the earliest ts
    assert out["item_last"].tolist() == [10, 20, 30]   # the latest ts


def test_key_output_only_when_selected():
    """column_mapping adds a groupby column only when it is in the selection."""
    out = _run(["item"], ops.Groupby("session", aggs="count"), _frame())
    assert list(out.columns) == ["item_count"]
    out = _run(["session", "item"], ops.Groupby("session", aggs="count"), _frame())
    assert list(out.columns) == ["session", "item_count"]


def test_std_var_median_nunique(backend):
    """std/var (ddof=1)/median/nunique over the non-null values, as pandas' groupby aggregations."""
    df = _frame()
    out = _run(["session", "x", "item"], ops.Groupby("session", aggs={"x": ["std", "var", "median"],
                                                                      "item": ["nunique"]}), df, backend)
    ref = df.groupby("session").agg(x_std=("x", "std"), x_var=("x", "var"), x_median=("x", "median"),
                                    item_nunique=("item", "nunique")).reset_index()
    for c in ["x_std", "x_var", "x_median"]:
        np.testing.assert_allclose(out[c].to_numpy(dtype="float64"), ref[c].to_numpy(), equal_nan=True)
    assert out["item_nunique"].tolist() == ref["item_nunique"].tolist()


def test_dtype_difference_is_announced():
    """count int64 (NVTabular: int32) is a documented difference, warned once per process."""
    import tabprep.ops.groupby as G
    from tabprep import _warn

    _warn._ONCE.discard(G._DTYPES_NOTE)
    with pytest.warns(UserWarning, match="int32/float32"):
        ops.Groupby("session", aggs="count")


def test_check_op():
    """The conformance battery with the new aggregations."""
    df = _frame().assign(label=[0, 1, 0, 1, 1, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check_op(ops.Groupby("session", sort_cols="ts", aggs={"x": ["std", "median"], "item": ["nunique", "first"]},
                             ascending=False), data=df, columns=["session", "x", "item"])


def test_null_key_group_is_announced(backend):
    """NVTabular 23.08 groups with ``df.groupby(groupby_cols)`` (pandas' and cuDF's default
    ``dropna=True``), so rows with a null key are dropped; tabprep keeps them as one last group
    (a documented difference): the transform warns, naming the key and how to drop them."""
    import tabprep.ops.groupby as G
    from tabprep import _warn

    _warn._ONCE.discard(G._NULL_KEYS_NOTE)
    df = pd.DataFrame({"session": [1.0, None, 1.0, 2.0, None], "item": [10, 11, 12, 13, 14]})
    wf = tp.Workflow(["session", "item"] >> ops.Groupby("session", aggs={"item": ["list"]}))
    with pytest.warns(UserWarning, match=r"null key.*\['session'\].*Dropna"):
        out = to_pandas(wf.transform(make_dataset(df, backend, nparts=1, empties=False)))
    assert out["session"].isna().tolist() == [False, False, True]
    assert [list(v) for v in out["item_list"]] == [[10, 12], [13], [11, 14]]
    # rows dropped first (NVTabular's result): no null group, no warning
    _warn._ONCE.discard(G._NULL_KEYS_NOTE)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        kept = to_pandas(tp.Workflow(["session", "item"] >> ops.Dropna() >> ops.Groupby("session", aggs={"item": ["list"]}))
                         .transform(make_dataset(df, backend, nparts=1, empties=False)))
    assert kept["session"].tolist() == [1.0, 2.0]


def test_output_order_keys_then_list_aggs_then_the_others(backend):
    """Groupby.column_mapping orders the outputs: the selected keys, then every column's list-type
    aggregations (``list``, ``first``, ``last``: NVTabular's ``_list_aggs``), then every column's
    other aggregations (``_conv_aggs``); columns in the ``aggs`` dict's order (or the selection's
    for a list of aggs). Within one column's block NVTabular's order is a Python set's (it changes
    with PYTHONHASHSEED); tabprep keeps the order given. The data's columns and the output schema
    agree."""
    df = _frame()
    aggs = {"x": ["sum", "list", "count", "last", "first"], "item": ["max", "first", "mean", "list"]}
    want = ["session", "x_list", "x_last", "x_first", "item_first", "item_list",
            "x_sum", "x_count", "item_max", "item_mean"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Groupby's dtype note (test_ops_groupby above)
        wf = tp.Workflow(["item", "x", "ts", "session"] >> ops.Groupby("session", sort_cols="ts", aggs=aggs))
        out = to_pandas(wf.fit_transform(make_dataset(df, backend, nparts=1)).to_ddf().compute())
    assert list(out.columns) == want and wf.output_schema.column_names == want
    assert pd.isna(out["x_first"][0]) and out["x_first"].tolist()[1:] == [2.5, 7.0]  # in ts order
    assert out["item_max"].tolist() == [12, 20, 30] and out["x_count"].tolist() == [2, 2, 1]
    # a list of aggs for every selected non-key column: selection order
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        wf = tp.Workflow(["x", "session", "item"] >> ops.Groupby("session", sort_cols="ts", aggs=["sum", "last"]))
        out = to_pandas(wf.fit_transform(make_dataset(df, backend, nparts=1)).to_ddf().compute())
    want = ["session", "x_last", "item_last", "x_sum", "item_sum"]
    assert list(out.columns) == want and wf.output_schema.column_names == want
    assert out["item_last"].tolist() == [10, 20, 30] and out["x_sum"].tolist() == [5.0, 4.5, 7.0]


def test_min_max_keep_the_column_dtype(backend):
    """NVTabular 23.08's Groupby casts count/nunique and sum/mean/... (docs/migration.md) but not
    min/max: they keep the column's dtype (int64 ids stay int64, exact past 2**53); float columns
    skip nulls. Reference: pandas' groupby min/max."""
    df = _frame().assign(big=[2**60 + 1, 2**60 + 3, 2**60 + 2, 5, 7, -1])
    out = _run(["session", "item", "big", "x"], ops.Groupby("session", aggs={"item": ["min", "max"],
                                                                            "big": ["min", "max"],
                                                                            "x": ["min", "max"]}), df, backend)
    ref = df.groupby("session").agg(item_min=("item", "min"), item_max=("item", "max"), big_min=("big", "min"),
                                    big_max=("big", "max"), x_min=("x", "min"), x_max=("x", "max")).reset_index()
    for c in ["item_min", "item_max", "big_min", "big_max"]:
        assert str(out[c].dtype) == "int64", c
        assert out[c].tolist() == ref[c].tolist(), c
    assert out["x_min"].tolist() == ref["x_min"].tolist() and out["x_max"].tolist() == ref["x_max"].tolist()
    wf = tp.Workflow(["session", "item", "x"] >> ops.Groupby("session", aggs={"item": ["min", "max"], "x": "min"}))
    schema = wf.bind_schema(tp.Dataset(df).schema).output_schema
    assert schema["item_min"].dtype == schema["item_max"].dtype == "int64" and schema["x_min"].dtype == "float64"
