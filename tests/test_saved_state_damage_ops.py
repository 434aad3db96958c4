"""The JSON statistics of ReduceDtypeSize, ValueCount, DataStats and DropLowCardinality in a saved
workflow, edited or damaged, are refused when the workflow is loaded, with an error naming
workflow.json, the op, the column, the field and the fix, where a load met them later as a bare
KeyError / TypeError, or not at all: a silently wrong dtype, schema or statistic (as
tests/test_saved_state_damage.py for Normalize, NormalizeMinMax and FillMedian)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import tabprep as tp
from tabprep import ops

from conftest import edit_op_state, saved_workflow

DF = pd.DataFrame({"x": [1.5, 2.0, 4.0, np.nan], "y": [3, -5, 300, 7], "s": ["a", "bb", None, "a"],
                   "l": pd.Series([[1, 2], [3], None, [4, 5, 6]], dtype=pd.ArrowDtype(pa.list_(pa.int64())))})
#: op name -> (op, the columns it is given)
OPS = {"ReduceDtypeSize": (ops.ReduceDtypeSize, ["x", "y"]), "ValueCount": (ops.ValueCount, ["l", "y"]),
       "DataStats": (ops.DataStats, ["x", "y", "s"]), "DropLowCardinality": (ops.DropLowCardinality, ["y", "s"])}
FIX = "fit the workflow and save it again"


def _saved(tmp_path, name):
    cls, cols = OPS[name]
    return saved_workflow(tmp_path, cols >> cls(), DF)


def _edit(spec, fn):
    edit_op_state(spec, lambda state: fn(state["stats"]))


def _refused(tmp_path, column, field=None):
    with pytest.raises(ValueError) as err:
        tp.Workflow.load(str(tmp_path / "wf"))
    msg = str(err.value)
    assert "workflow.json" in msg and repr(column) in msg and FIX in msg, msg
    if field is not None:
        assert repr(field) in msg, msg
    return msg


def _set(column, field, value):
    def edit(stats):
        if value is _DEL:
            del stats[column][field]
        else:
            stats[column][field] = value
    return edit


_DEL = object()


@pytest.mark.parametrize("name", list(OPS))
def test_an_untouched_folder_loads_and_gives_the_same_values_and_schema(tmp_path, name):
    wf, _ = _saved(tmp_path, name)
    back = tp.Workflow.load(str(tmp_path / "wf"))
    pd.testing.assert_frame_equal(back.transform(DF), wf.transform(DF))
    assert back.output_schema == wf.output_schema


@pytest.mark.parametrize("name", list(OPS))
def test_a_column_missing_from_the_statistics_is_refused_at_load(tmp_path, name):
    _, spec = _saved(tmp_path, name)
    _edit(spec, lambda stats: stats.pop("y"))
    msg = _refused(tmp_path, "y")
    assert name in msg


def test_a_column_entry_of_the_wrong_type_is_refused(tmp_path):
    for name in OPS:
        _, spec = _saved(tmp_path / name, name)
        _edit(spec, lambda stats: stats.__setitem__("y", [1, 2, 3]))
        assert name in _refused(tmp_path / name, "y")


@pytest.mark.parametrize("column, field, value", [
    ("y", "min", _DEL), ("y", "max", "300"), ("y", "min", float("nan")), ("y", "min", True), ("y", "max", [300]),
    ("y", "dtype", _DEL), ("y", "dtype", "banana"), ("y", "dtype", 16), ("y", "dtype", "object"),
    # a dtype that does not hold the fitted range: 300 wrapped to 44 in int8, silently
    ("y", "dtype", "int8"), ("x", "dtype", "float16x"), ("y", "min", 400),
])
def test_reduce_dtype_size_damage_is_refused(tmp_path, column, field, value):
    _, spec = _saved(tmp_path, "ReduceDtypeSize")
    _edit(spec, _set(column, field, value))
    assert "ReduceDtypeSize" in _refused(tmp_path, column, field)


@pytest.mark.parametrize("field, value", [
    ("min", _DEL), ("max", "3"), ("min", 2.5), ("min", -1), ("min", 4), ("max", None), ("max", float("nan")),
    ("levels", {"min": 1}), ("levels", [{"min": 1, "max": "3"}]),
])
def test_value_count_damage_is_refused(tmp_path, field, value):
    _, spec = _saved(tmp_path, "ValueCount")
    _edit(spec, _set("l", field, value))
    assert "ValueCount" in _refused(tmp_path, "l", field)


@pytest.mark.parametrize("column, field, value", [
    ("x", "mean", _DEL), ("x", "std", "1.2"), ("x", "min", float("nan")), ("x", "std", -1.0),
    ("x", "per_nan", 250.0), ("x", "max", 0.0), ("y", "cardinality", "4"), ("y", "cardinality", -1),
    ("y", "cardinality", _DEL), ("s", "dtype", 5), ("s", "per_nan", [25.0]),
])
def test_data_stats_damage_is_refused(tmp_path, column, field, value):
    _, spec = _saved(tmp_path, "DataStats")
    _edit(spec, _set(column, field, value))
    assert "DataStats" in _refused(tmp_path, column, field)


@pytest.mark.parametrize("value", ["3", 2.5, -1, [3], None, float("nan"), True])
def test_drop_low_cardinality_damage_is_refused(tmp_path, value):
    _, spec = _saved(tmp_path, "DropLowCardinality")
    _edit(spec, lambda stats: stats.__setitem__("s", value))
    assert "DropLowCardinality" in _refused(tmp_path, "s")


def test_reduce_dtype_size_of_an_empty_int_column_loads(tmp_path):
    """A column with no value is saved as min, max and dtype None: a fit's own state loads."""
    df = pd.DataFrame({"e": pd.Series([None, None], dtype="Int64"), "f": [np.nan, np.nan]})
    wf = tp.Workflow(["e", "f"] >> ops.ReduceDtypeSize()).fit(df)
    wf.save(str(tmp_path / "wf"))
    back = tp.Workflow.load(str(tmp_path / "wf"))
    pd.testing.assert_frame_equal(back.transform(df), wf.transform(df))


def test_nested_value_counts_and_continuous_columns_load(tmp_path):
    """A fit's own layouts load: ValueCount's per-level bounds of a nested list column (a level with
    no list is None), DropLowCardinality with a continuous input (never counted, so not saved)."""
    nested = pd.Series([[[1, 2], [3]], [[4], None], None, [[]]],
                       dtype=pd.ArrowDtype(pa.list_(pa.list_(pa.int64()))))
    df = pd.DataFrame({"n": nested, "x": [1.0, 2.0, 3.0, 4.0], "y": [1, 1, 2, 2]})
    counted = ((["x"] >> ops.Normalize()) + ["y"]) >> ops.DropLowCardinality()
    wf = tp.Workflow((["n"] >> ops.ValueCount()) + counted)
    wf.fit(df)
    wf.save(str(tmp_path / "wf"))
    doc = json.loads((tmp_path / "wf" / "workflow.json").read_text())
    states = [n["state"]["stats"] for n in doc["nodes"] if n.get("kind") == "op" and n["op"] != "Normalize"]
    assert any("levels" in (s.get("n") or {}) for s in states)            # the nested bounds were saved
    assert any(set(s) == {"y"} for s in states)                           # x (continuous) was not counted
    back = tp.Workflow.load(str(tmp_path / "wf"))
    assert back.output_schema == wf.output_schema
    pd.testing.assert_frame_equal(back.transform(df), wf.transform(df))


@pytest.mark.parametrize("edit", ["a level more", "a level less"])
def test_value_count_levels_other_than_the_columns_depth_are_refused(tmp_path, edit):
    """A nested column's saved bounds hold one entry per list level; another count gave the output
    schema (value_counts, read by the loaders) a wrong shape, silently."""
    nested = pd.Series([[[1, 2], [3]], [[4], None], None, [[]]],
                       dtype=pd.ArrowDtype(pa.list_(pa.list_(pa.int64()))))
    df = pd.DataFrame({"n": nested})
    tp.Workflow(["n"] >> ops.ValueCount()).fit(df).save(str(tmp_path / "wf"))

    def fn(stats):
        levels = stats["n"]["levels"]
        assert len(levels) == 2   # the fit's: the outer lists and the inner ones
        stats["n"]["levels"] = levels + [{"min": 2, "max": 2}] if edit == "a level more" else levels[:1]
    _edit(tmp_path / "wf" / "workflow.json", fn)
    assert "ValueCount" in _refused(tmp_path, "n", "levels")
