"""``wf.input_schema`` after a fit is the schema of the columns the graph reads (selections and op
dependencies, in first-use order), as NVTabular 23.08 gives it (checked side by side with
nvtabular 23.8.0: ``['c', 'a', 'y', 'b', 'lab']`` for the graph below), not every column of the
fitted dataset. Before, tabprep gave the dataset's columns in the dataset's order, unused ones
included, and disagreed with its own ``input_dtypes``."""
from __future__ import annotations

import operator

import pandas as pd

import tabprep as tp
from tabprep import ops

READ = ["c", "a", "y", "b", "lab"]


def _frame() -> pd.DataFrame:
    return pd.DataFrame({"a": [1, 2, 1, 2], "b": [1.0, 2, 3, 4], "c": ["x", "y", "x", "z"], "unused": [0, 0, 0, 0],
                         "y": [1, 0, 1, 0], "lab": [1, 0, 0, 1]})


def _plus_lab(col, frame):
    return operator.add(col, frame["lab"])


def _workflow() -> tp.Workflow:
    return tp.Workflow((["c", "a"] >> ops.Categorify()) + (["a"] >> ops.TargetEncoding("y"))
                       + (["b"] >> ops.LambdaOp(_plus_lab, dependency=["lab"])) + ["lab"])


def test_input_schema_is_the_columns_the_graph_reads_in_nvtabulars_order(tmp_path):
    wf = _workflow().fit(tp.Dataset(_frame()))
    assert wf.input_schema.column_names == READ
    assert list(wf.input_dtypes) == READ
    assert wf.input_schema["b"].dtype == "float64" and wf.input_schema["a"].dtype == "int64"
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"), trusted=True)   # (the module's _plus_lab: imported)
    assert loaded.input_schema.column_names == READ
    # the transform still takes frames with more columns, and gives the same output
    pd.testing.assert_frame_equal(loaded.transform(_frame()), wf.transform(_frame()))


def test_remove_inputs_then_fit_gives_the_remaining_reads():
    wf = tp.Workflow((["c"] >> ops.Categorify()) + ["a", "b"])
    wf.remove_inputs(["b"])
    wf.fit(tp.Dataset(_frame()))
    assert wf.input_schema.column_names == ["c", "a"]
