"""The JSON part of the saved state of Categorify, TargetEncoding and JoinGroupby (their tables are
checksummed parquet files; workflow.json holds the counts, sizes, totals and key formats beside
them), edited or damaged, is refused when the workflow is loaded, naming workflow.json, the op, the
field and the fix, where a load gave a bare ``ValueError: invalid literal for int()``, a bare
``TypeError`` at transform, or a silently wrong output (JoinGroupby with a smaller ``size``)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

from conftest import edit_op_state, saved_workflow

DF = pd.DataFrame({"a": ["x", "y", "x", None, "z", "y"], "b": [1, 1, 2, 2, 3, 3],
                   "t": [1.0, 0.0, 1.0, 0.0, 1.0, 1.0], "v": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
FIX = "fit the workflow and save it again"
OPS = {"Categorify": lambda: ["a"] >> ops.Categorify(),
       "TargetEncoding": lambda: ["a"] >> ops.TargetEncoding("t", kfold=2),
       "JoinGroupby": lambda: ["a"] >> ops.JoinGroupby(cont_cols=["v"], stats=["sum", "count"]),
       "Categorify combo": lambda: [["a", "b"]] >> ops.Categorify(encode_type="combo")}


def _saved(tmp_path, name):
    return saved_workflow(tmp_path, OPS[name](), DF)


_edit = edit_op_state


def _refused(tmp_path, op, field):
    with pytest.raises(ValueError) as err:
        tp.Workflow.load(str(tmp_path / "wf"))
    msg = str(err.value)
    assert "workflow.json" in msg and op in msg and repr(field) in msg and FIX in msg, msg


@pytest.mark.parametrize("name", list(OPS))
def test_an_untouched_folder_loads_and_gives_the_same_values(tmp_path, name):
    wf, _ = _saved(tmp_path, name)
    pd.testing.assert_frame_equal(tp.Workflow.load(str(tmp_path / "wf")).transform(DF), wf.transform(DF))


@pytest.mark.parametrize("name", ["Categorify", "TargetEncoding", "JoinGroupby"])
@pytest.mark.parametrize("value", ["x", "4", 0, 99, 2.5, None, True])
def test_a_damaged_combo_key_format_is_refused(tmp_path, name, value):
    """(a format out of 1..4 was read as another one: other ids for a combo group, silently)"""
    _, spec = _saved(tmp_path, name)
    _edit(spec, lambda st: st.__setitem__("combo_key_format", value))
    _refused(tmp_path, name, "combo_key_format")


@pytest.mark.parametrize("field, value", [("nulls", "1"), ("nulls", -1), ("nulls", 1.5), ("size", "3"),
                                          ("size", -2), ("files", "vocab_000.part_0000.parquet")])
def test_categorify_vocabulary_damage_is_refused(tmp_path, field, value):
    _, spec = _saved(tmp_path, "Categorify")
    _edit(spec, lambda st: st["vocabularies"]["a"].__setitem__(field, value))
    _refused(tmp_path, "Categorify", field)


@pytest.mark.parametrize("size", [1, 2, 4, "3", None])
def test_join_groupby_size_other_than_its_table_is_refused(tmp_path, size):
    """A smaller size cut the table: categories were looked up in the wrong rows, silently."""
    _, spec = _saved(tmp_path, "JoinGroupby")
    _edit(spec, lambda st: st["files"]["a"].__setitem__("size", size))
    _refused(tmp_path, "JoinGroupby", "size")


@pytest.mark.parametrize("edit", ["totals a string", "target missing", "sum a string", "count too short",
                                  "sum too long", "count negative", "sum NaN", "no rows", "seed a string"])
def test_target_encoding_totals_damage_is_refused(tmp_path, edit):
    _, spec = _saved(tmp_path, "TargetEncoding")

    def fn(st):
        tot = st["totals"]
        if edit == "totals a string":
            st["totals"] = "x"
        elif edit == "target missing":
            del tot["t"]
        elif edit == "sum a string":
            tot["t"]["sum"][0] = "1.0"
        elif edit == "count too short":
            tot["t"]["count"] = tot["t"]["count"][:1]
        elif edit == "sum too long":
            tot["t"]["sum"] = tot["t"]["sum"] + [1.0]
        elif edit == "count negative":
            tot["t"]["count"][0] = -1
        elif edit == "sum NaN":
            tot["t"]["sum"][0] = float("nan")
        elif edit == "no rows":
            tot["t"]["count"] = [0, 0]
        else:
            st["fold_seed_used"] = "x"
    _edit(spec, fn)
    field = "fold_seed_used" if edit == "seed a string" else "totals"
    _refused(tmp_path, "TargetEncoding", field)
