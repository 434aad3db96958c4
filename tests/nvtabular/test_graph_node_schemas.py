"""NVTabular 23.08's ``node.input_schema`` / ``node.output_schema``: None until a Workflow computes
its schemas (fit, ``fit_schema``, load), then the schemas of the columns the node receives and gives.

What nvtabular 23.08 gives (checked in /tmp/nvt2): for ``log = ["a"] >> LogOp()``, ``cat = ["c"] >>
Categorify()``, ``out = log + cat + ["b"]``: None before fit (also after ``Workflow(out)``); after fit
``log`` in/out ``["a"]``, ``out`` in/out ``["a", "c", "b"]``, the selection node under ``log``
``["a"]``; fitting a second workflow that holds ``log`` on float32 data makes ``log``'s schemas
float32 (the most recent workflow's). Dtypes are checked against the pandas frames.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops


@pytest.fixture
def df():
    return pd.DataFrame({"a": [1.0, np.nan, 3.0, np.inf], "b": [1, 2, 3, 4], "c": ["x", "y", None, "x"],
                         "d": np.array([0, 1, 0, 1], dtype="int8")})


def test_none_before_the_workflow_computes_schemas(df):
    log = ["a"] >> ops.LogOp()
    assert log.input_schema is None and log.output_schema is None
    tp.Workflow(log + ["b"])
    assert log.input_schema is None and log.output_schema is None


def test_after_fit_each_node_has_its_input_and_output_schema(df):
    log = ["a"] >> ops.LogOp()
    cat = ["c"] >> ops.Categorify()
    out = log + cat + ["b"]
    wf = tp.Workflow(out)
    wf.fit(tp.Dataset(df))
    assert log.input_schema.column_names == ["a"] and log.output_schema.column_names == ["a"]
    assert cat.input_schema.column_names == ["c"] and cat.output_schema.column_names == ["c"]
    assert out.input_schema.column_names == ["a", "c", "b"]
    assert out.output_schema.column_names == ["a", "c", "b"]
    assert out.output_schema == wf.output_schema
    assert log.parents[0].input_schema.column_names == ["a"]   # the selection node
    assert log.input_schema["a"].dtype == str(df["a"].dtype)
    assert cat.input_schema["c"].dtype != cat.output_schema["c"].dtype   # strings in, ids out
    assert cat.output_schema["c"].dtype == str(wf.transform(df)["c"].dtype)
    assert "categorical" in cat.output_schema["c"].tags
    assert cat.output_schema["c"].cardinality == wf.output_schema["c"].cardinality


@pytest.mark.filterwarnings("ignore::tabprep.NVTabularDifferenceWarning")   # TargetEncoding's fold note
def test_renaming_and_dependency_columns(df):
    """An op's input schema holds what it reads (its parents' columns, and argument columns such as
    TargetEncoding's target); its output schema the columns it makes."""
    te = ["c"] >> ops.TargetEncoding("b")
    renamed = ["a"] >> ops.Rename(postfix="_r")
    wf = tp.Workflow(te + renamed)
    wf.fit(tp.Dataset(df))
    assert set(te.input_schema.column_names) == {"c", "b"}
    assert te.output_schema.column_names == wf.output_schema.select(te.output_columns).column_names
    assert renamed.input_schema.column_names == ["a"] and renamed.output_schema.column_names == ["a_r"]


def test_most_recent_workflow_wins_and_load_sets_them(df, tmp_path):
    """A node in two workflows carries the schemas of the last one that computed schemas; a loaded
    workflow's nodes have theirs."""
    log = ["a"] >> ops.LogOp()
    wf1 = tp.Workflow(log + ["b"])
    wf1.fit(tp.Dataset(df))
    assert log.input_schema["a"].dtype == "float64"
    wf2 = tp.Workflow(log + ["d"])
    wf2.fit(tp.Dataset(df.assign(a=df["a"].astype("float32"))))
    assert log.input_schema["a"].dtype == "float32"
    assert wf2.output_node.input_schema.column_names == ["a", "d"]
    wf1.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    assert loaded.output_node.output_schema == wf1.output_schema
    assert all(n.output_schema is not None for n in loaded.nodes)
    assert log.input_schema["a"].dtype == "float32"   # loading another copy leaves these nodes alone


def test_fit_schema_of_stateless_ops_sets_them(df):
    """``Workflow.fit_schema`` (bind_schema) computes schemas without data, as NVTabular's."""
    node = ["b"] >> ops.LogOp()
    wf = tp.Workflow(node)
    wf.fit_schema(tp.Dataset(df).schema)
    assert node.input_schema["b"].dtype == "int64"
    assert node.output_schema["b"].dtype.startswith("float")
    assert node.output_schema["b"].dtype == wf.output_schema["b"].dtype
