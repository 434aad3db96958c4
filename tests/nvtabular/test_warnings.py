"""Warnings about NVTabular 23.08's behaviour (docs/migration.md) are given where the user builds
the graph, once, and not again each time a saved workflow is loaded (a serving process or a data
loader loads it over and over; the graph's author already saw them). NVTabular itself keeps the
later branch of a ``+`` merge silently (merlin.dag's ``__add__``), and its
``Categorify(single_table=True)`` ids differ from tabprep's (see docs/migration.md)."""
from __future__ import annotations

import warnings

import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

_TEXTS = ("'+' merge", "single_table", "Groupby: count/nunique")


def _df():
    return pd.DataFrame({"a": ["x", "y", "x", None], "b": ["u", "u", "v", "v"], "s": [1, 1, 2, 2],
                         "n": [1.0, 2.0, 3.0, 4.0]})


def _ours(record):
    return [str(w.message) for w in record if any(t in str(w.message) for t in _TEXTS)]


def test_build_warns_and_load_does_not(tmp_path, monkeypatch):
    """Building warns (the '+' shadowing, single_table, Groupby's dtypes); fit and save work;
    Workflow.load of the folder, twice, emits none of these warnings."""
    import tabprep.ops.groupby as groupby_module

    monkeypatch.setattr(groupby_module, "_warned_dtypes", False)  # once per process: as in a fresh one
    with pytest.warns(tp.NVTabularDifferenceWarning) as record:
        graph = ((["a"] >> ops.Categorify()) + (["a"] >> ops.HashBucket(10))
                 + (["b"] >> ops.Categorify(single_table=True)))
        wf = tp.Workflow(graph)
    got = _ours(record)
    assert any("'+' merge" in m and "'a'" in m for m in got), got
    assert any("single_table" in m for m in got), got
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gb = tp.Workflow(["s", "n"] >> ops.Groupby("s", aggs={"n": ["sum", "count"]}))
        gb.fit(tp.Dataset(_df()))
    wf.fit(tp.Dataset(_df()))
    wf.save(str(tmp_path / "wf"))
    gb.save(str(tmp_path / "gb"))
    monkeypatch.setattr(groupby_module, "_warned_dtypes", False)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(2):
            loaded = tp.Workflow.load(str(tmp_path / "wf"))
            loaded_gb = tp.Workflow.load(str(tmp_path / "gb"))
    assert _ours(record) == []
    # the loaded workflows compute what the fitted ones do
    pd.testing.assert_frame_equal(loaded.transform(_df()), wf.transform(_df()))
    pd.testing.assert_frame_equal(loaded_gb.transform(_df()), gb.transform(_df()))


def test_building_again_after_a_load_warns_again():
    """A graph built by the user after a load (in the same thread) still warns: only the load is quiet."""
    with pytest.warns(UserWarning, match="single_table"):
        ops.Categorify(single_table=True)
