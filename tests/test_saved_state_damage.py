"""A saved workflow whose JSON statistics were edited or damaged is refused when it is loaded, with
an error naming the file, the op, the column and the field, where transform raised a bare KeyError
('mean') or computed with a string."""
from __future__ import annotations


import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

from conftest import edit_op_state, saved_workflow

DF = pd.DataFrame({"x": [1.0, 2.0, 4.0, np.nan], "y": [3, 1, 2, 7]})
OPS = {"Normalize": (ops.Normalize, "mean"), "NormalizeMinMax": (ops.NormalizeMinMax, "min"),
       "FillMedian": (ops.FillMedian, "median")}


def _saved(tmp_path, name):
    cls, _ = OPS[name]
    return saved_workflow(tmp_path, ["x", "y"] >> cls(), DF)


def _edit(spec, fn):
    edit_op_state(spec, lambda state: fn(state["stats"]))


@pytest.mark.parametrize("name", list(OPS))
def test_an_untouched_folder_loads_and_gives_the_same_values(tmp_path, name):
    wf, _ = _saved(tmp_path, name)
    got = tp.Workflow.load(str(tmp_path / "wf")).transform(DF)
    pd.testing.assert_frame_equal(got, wf.transform(DF))


@pytest.mark.parametrize("name", list(OPS))
@pytest.mark.parametrize("damage", ["field removed", "field a string", "field a list", "column not a mapping"])
def test_a_damaged_statistic_is_refused_at_load_naming_column_and_field(tmp_path, name, damage):
    _, spec = _saved(tmp_path, name)
    field = OPS[name][1]

    def edit(stats):
        if damage == "field removed":
            del stats["x"][field]
        elif damage == "field a string":
            stats["x"][field] = "2.5"
        elif damage == "field a list":
            stats["x"][field] = [2.5]
        else:
            stats["x"] = 2.5
    _edit(spec, edit)
    with pytest.raises(ValueError) as err:
        tp.Workflow.load(str(tmp_path / "wf"))
    msg = str(err.value)
    assert "workflow.json" in msg and name in msg and "'x'" in msg and "edited or damaged" in msg
    assert "fit the workflow and save it again" in msg   # the fix
    if damage != "column not a mapping":
        assert repr(field) in msg


@pytest.mark.parametrize("name", list(OPS))
def test_a_column_missing_from_the_statistics_is_refused_at_load(tmp_path, name):
    _, spec = _saved(tmp_path, name)
    _edit(spec, lambda stats: stats.pop("y"))
    with pytest.raises(ValueError, match=r"workflow\.json.*" + name + r".*'y'.*edited or damaged"):
        tp.Workflow.load(str(tmp_path / "wf"))
