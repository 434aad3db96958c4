"""HashedCross over several column groups of the selection, and num_buckets dicts keyed by tuples.

NVTabular 23.08 (``nvtabular/ops/hashed_cross.py``) crosses ``_nest_columns(col_selector.names)``:
merlin-core's ``ColumnSelector.names`` flattens the subgroups, so ``[["a", "s"], ["f", "g"]]``
gives ONE column ``a_X_s_X_f_X_g`` there, and a ``num_buckets`` dict keyed per group
(``{("a", "s"): 7, ("f", "g"): 5}``, what NVTabular's own feature-column converter builds) fails
with ``KeyError: ('a', 's', 'f', 'g')``. That flattening is an accident (the op's older API took a
list of crosses, ``_nest_columns`` keeps a branch for groups, the op's test says "TODO: multiple
crosses"): tabprep gives one cross per group and says so with an NVTabularDifferenceWarning when
the graph is built. NVTabular's only dict key form is the cross's tuple of column names
(``{("a", "s"): 7}``); tabprep takes it, beside its ``{"a_X_s": 7}``.

References: plain Python over ``mmh3`` (MurmurHash3_x86_32, seed 0, of each value's canonical
bytes, conftest.ref_murmur3) and Boost's hash_combine, as tests/test_op_hashed_cross.py.
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

from test_op_hashed_cross import ref_cross   # (plain Python over mmh3 and Boost's hash_combine)

DIFF = tp.NVTabularDifferenceWarning




def _df():
    return pd.DataFrame({"a": [1, 2, 3, 1], "s": pd.Series(["a", "b", "c", "a"], dtype="str"),
                         "f": [1, 2, 3, 4], "g": [5, 6, 7, 8]})


def _cross_warnings(record):
    return [str(w.message) for w in record if issubclass(w.category, DIFF) and "one cross" in str(w.message)]


def _build(selection, op):
    """(workflow, warnings of the graph's build: ``>>`` and ``Workflow(...)``)."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        wf = tp.Workflow(selection >> op)
    return wf, _cross_warnings(rec)


def _load_quietly(path):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        loaded = tp.Workflow.load(str(path))
        out = loaded.transform(_df())
    assert _cross_warnings(rec) == []   # said when the graph was built, not by every load
    return loaded, out


# -- 1. several groups: one cross per group (NVTabular's flattening is an accident), loud -------------
def test_several_groups_one_cross_each_and_warned_at_build(tmp_path):
    wf, said = _build([["a", "s"], ["f", "g"]], ops.HashedCross(10))
    assert len(said) == 1
    msg = said[0]
    assert "['a', 's']" in msg and "['f', 'g']" in msg and "a_X_s_X_f_X_g" in msg   # the groups, NVTabular's column
    wf.fit(tp.Dataset(_df()))
    out = wf.transform(_df())
    assert list(out.columns) == ["a_X_s", "f_X_g"]
    assert out["a_X_s"].tolist() == ref_cross(_df(), ["a", "s"], 10)
    assert out["f_X_g"].tolist() == ref_cross(_df(), ["f", "g"], 10)
    assert {str(t) for t in out.dtypes} == {"int32"}
    assert wf.output_schema.column_names == ["a_X_s", "f_X_g"]
    assert str(wf.output_schema["f_X_g"].dtype) == "int32"

    wf.save(str(tmp_path / "wf"))
    loaded, again = _load_quietly(tmp_path / "wf")
    pd.testing.assert_frame_equal(again, out)
    assert loaded.output_schema.column_names == ["a_X_s", "f_X_g"]


def test_dict_keyed_per_group_by_tuples_several_groups(tmp_path):
    # NVTabular's own feature-column converter builds exactly this (and it fails there: KeyError)
    wf, said = _build([("a", "s"), ("f", "g")], ops.HashedCross({("a", "s"): 7, ("f", "g"): 5}))
    assert len(said) == 1 and "a_X_s_X_f_X_g" in said[0]
    wf.fit(tp.Dataset(_df()))
    out = wf.transform(_df())
    assert out["a_X_s"].tolist() == ref_cross(_df(), ["a", "s"], 7)
    assert out["f_X_g"].tolist() == ref_cross(_df(), ["f", "g"], 5)
    assert wf.output_schema["a_X_s"].properties["num_buckets"] == 7
    wf.save(str(tmp_path / "wf"))
    _, again = _load_quietly(tmp_path / "wf")
    pd.testing.assert_frame_equal(again, out)


def test_column_outside_any_group_is_warned():
    # NVTabular: ["a", ["f", "g"]] -> one column a_X_f_X_g; tabprep crosses the group only
    wf, said = _build(["a", ["f", "g"]], ops.HashedCross(10))
    assert len(said) == 1 and "a_X_f_X_g" in said[0] and "'a'" in said[0]
    wf.fit(tp.Dataset(_df()))
    assert list(wf.transform(_df()).columns) == ["f_X_g"]


@pytest.mark.parametrize("selection", [[["a", "s"]], ["a", "s"], [("a", "s")], ["a", ["a", "s"]]])
def test_one_cross_as_nvtabular_is_not_warned(selection):
    wf, said = _build(selection, ops.HashedCross(10))
    assert said == []
    wf.fit(tp.Dataset(_df()))
    out = wf.transform(_df())
    assert list(out.columns) == ["a_X_s"] and out["a_X_s"].tolist() == ref_cross(_df(), ["a", "s"], 10)


def test_columns_argument_is_tabprep_own_and_not_warned():
    # HashedCross(columns=...) has no NVTabular counterpart: nothing to compare with
    wf, said = _build(["a", "s", "f", "g"], ops.HashedCross([["a", "s"], ["f", "g"]], num_buckets=10))
    assert said == []
    wf.fit(tp.Dataset(_df()))
    assert list(wf.transform(_df()).columns) == ["a_X_s", "f_X_g"]


# -- 2. a dict keyed by the cross's tuple of columns (NVTabular's key form) -------------------------
@pytest.mark.parametrize("selection", [[["a", "s"]], ["a", "s"]])
def test_tuple_keyed_num_buckets(selection, tmp_path):
    wf = tp.Workflow(selection >> ops.HashedCross({("a", "s"): 7}))
    wf.fit(tp.Dataset(_df()))
    out = wf.transform(_df())
    assert list(out.columns) == ["a_X_s"]
    assert out["a_X_s"].tolist() == ref_cross(_df(), ["a", "s"], 7)
    assert str(out["a_X_s"].dtype) == "int32"
    col = wf.output_schema["a_X_s"]
    assert str(col.dtype) == "int32" and col.properties["num_buckets"] == 7 and col.properties["cardinality"] == 7

    wf.save(str(tmp_path / "wf"))
    json.dumps(json.loads((Path(tmp_path) / "wf" / "workflow.json").read_text()))  # plain JSON
    loaded, again = _load_quietly(tmp_path / "wf")
    pd.testing.assert_frame_equal(again, out)
    assert loaded.output_schema["a_X_s"].properties["num_buckets"] == 7


def test_tuple_key_in_other_order_is_a_key_error_as_in_nvtabular():
    with pytest.raises(KeyError, match="a_X_s"):
        tp.Workflow([["a", "s"]] >> ops.HashedCross({("s", "a"): 7})).fit(tp.Dataset(_df()))


def test_tuple_and_name_keys_for_one_cross_must_agree():
    with pytest.raises(ValueError, match="a_X_s"):
        ops.HashedCross({("a", "s"): 7, "a_X_s": 8})
    op = ops.HashedCross({("a", "s"): 7, "a_X_s": 7})   # the same number twice: fine
    wf = tp.Workflow([["a", "s"]] >> op)
    wf.fit(tp.Dataset(_df()))
    assert wf.transform(_df())["a_X_s"].tolist() == ref_cross(_df(), ["a", "s"], 7)


def test_tuple_keyed_embedding_dim():
    wf = tp.Workflow([["a", "s"]] >> ops.HashedCross({("a", "s"): 7}, embedding_dim={("a", "s"): 3}))
    wf.fit(tp.Dataset(_df()))
    assert wf.output_schema["a_X_s"].properties["embedding_sizes"] == {"cardinality": 7, "dimension": 3}


def test_tuple_keys_must_name_columns():
    with pytest.raises(TypeError, match="num_buckets"):
        ops.HashedCross({(1, 2): 7})
