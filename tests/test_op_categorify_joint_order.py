"""Categorify(encode_type="joint") over a selection mixing column groups and plain columns: the
output column order is NVTabular 23.08's (``ColumnSelector.names``: the plain names first, in
selection order, then each group's columns), in the frame, ``wf.output_schema``,
``get_embedding_sizes`` and after ``wf.save`` / ``Workflow.load``. Checked against
nvtabular 23.8.0 (CPU): ``[["a", "b"], "n"]`` gives ``n, a, b``; ``["m", ["a", "b"], "n"]``
gives ``m, n, a, b``. (NVTabular puts a one-name group ``["n"]`` among the groups; tabprep's
selection does not keep such a group, so ``["n"]`` is a plain column here: not tested.) References below are plain pandas (0 pad, 1 null, 2 OOV, then values by
descending count, ties by ascending value)."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops


def _ids(*columns):
    """{value: id} of one vocabulary over the non-null values of ``columns``."""
    counts = Counter(v for col in columns for v in col if v is not None and v == v)
    order = sorted(counts, key=lambda v: (-counts[v], v))
    return {v: 3 + i for i, v in enumerate(order)}


def _expect(values, ids):
    return [1 if (v is None or v != v) else ids.get(v, 2) for v in values]


def _frame():
    return pd.DataFrame({
        "m": ["p", "q", "p", None, "q", "p"],
        "a": ["x", "y", "x", "w", None, "x"],
        "b": ["y", "z", "z", None, "y", "w"],
        "n": [1.0, 2.0, 1.0, np.nan, 2.0, 3.0],
    })


@pytest.mark.parametrize("selection, order", [
    ([["a", "b"], "n"], ["n", "a", "b"]),
    (["m", ["a", "b"], "n"], ["m", "n", "a", "b"]),
    ([["a", "b"], "m", "n"], ["m", "n", "a", "b"]),
])
def test_joint_output_order_is_nvtabulars(selection, order, tmp_path):
    df = _frame()
    wf = tp.Workflow(selection >> ops.Categorify(encode_type="joint"))
    ds = tp.Dataset(df, npartitions=2)
    wf.fit(ds)
    out = wf.transform(ds).to_ddf().compute()
    assert list(out.columns) == order
    assert wf.output_schema.column_names == order
    assert list(tp.get_embedding_sizes(wf, multihot=False)) == order
    # the ids are each column's (the group's shared vocabulary)
    shared = _ids(df["a"], df["b"])
    assert out["a"].tolist() == _expect(df["a"], shared)
    assert out["b"].tolist() == _expect(df["b"], shared)
    assert out["n"].tolist() == _expect(df["n"], _ids(df["n"]))
    if "m" in order:
        assert out["m"].tolist() == _expect(df["m"], _ids(df["m"]))
    sizes = tp.get_embedding_sizes(wf, multihot=False)
    assert sizes["a"][0] == sizes["b"][0] == 3 + len(shared)
    # saved and loaded: the same order everywhere
    wf.save(str(tmp_path / "wf"))
    back = tp.Workflow.load(str(tmp_path / "wf"))
    assert back.output_schema.column_names == order
    assert list(tp.get_embedding_sizes(back, multihot=False)) == order
    again = back.transform(tp.Dataset(df, npartitions=2)).to_ddf().compute()
    assert list(again.columns) == order
    pd.testing.assert_frame_equal(again.reset_index(drop=True), out.reset_index(drop=True))
    # transform of a pandas frame (no Dataset) as well
    assert list(back.transform(df).columns) == order


def test_joint_order_feeds_the_next_op():
    """A following op sees the columns in that order too (its outputs follow it)."""
    df = _frame()
    wf = tp.Workflow([["a", "b"], "n"] >> ops.Categorify() >> ops.Rename(postfix="_id"))
    wf.fit(tp.Dataset(df, npartitions=2))
    assert wf.output_schema.column_names == ["n_id", "a_id", "b_id"]
    out = wf.transform(tp.Dataset(df)).to_ddf().compute()
    assert list(out.columns) == ["n_id", "a_id", "b_id"]


def test_plain_selection_and_group_only_keep_their_order():
    """No group, or only groups: the order written (as NVTabular 23.8.0 gives them)."""
    df = _frame()
    for selection, order in [(["n", "a", "m"], ["n", "a", "m"]), ([["b", "a"]], ["b", "a"]),
                             ([["b", "a"], "m"], ["m", "b", "a"])]:
        wf = tp.Workflow(selection >> ops.Categorify())
        wf.fit(tp.Dataset(df))
        assert wf.output_schema.column_names == order, selection
        assert list(wf.transform(df).columns) == order, selection
