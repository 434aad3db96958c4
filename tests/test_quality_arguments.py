"""tp.profile's and Workflow.fit's sampling arguments are whole numbers >= 1, and categorical names
name columns of the data, or the call is refused naming the argument.

``tp.profile(data, sample_every=0)`` (or -3, or True) profiled every row and ``sample_every=2.5``
every 2nd, silently; ``categorical=["C1 "]`` (a typo) profiled C1 as numbers, silently."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops


@pytest.fixture()
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"c": rng.integers(0, 50, 600), "x": rng.normal(size=600)})


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "2"])
def test_profile_sample_every(frame, bad):
    with pytest.raises(ValueError, match=r"sample_every must be an int >= 1 .*got"):
        tp.profile(frame, sample_every=bad)


def test_profile_sample_every_whole_numbers_of_other_types(frame):
    a = tp.profile(frame, sample_every=np.int64(3)).doc
    b = tp.profile(frame, sample_every=3).doc
    assert a["columns"] == b["columns"] and a["sample_every"] == 3


def test_profile_categorical_names_columns_of_the_data(frame):
    with pytest.raises(KeyError, match=r"categorical columns \['c '\] are not in .*; its columns are \['c', 'x'\]"):
        tp.profile(frame, categorical=["c "])
    # a categorical column left out by columns= is simply not profiled
    assert "c" not in tp.profile(frame, columns=["x"], categorical=["c"]).doc["columns"]


@pytest.mark.parametrize("bad", [0, 2.5, -1, "4"])
def test_fit_profile_sampling(frame, bad):
    wf = tp.Workflow(["c"] >> ops.Categorify())
    with pytest.raises(ValueError, match=r"profile must be True, False or an int >= 1"):
        wf.fit(tp.Dataset(frame), profile=bad)


@pytest.mark.parametrize("th,match", [
    ({"psi": float("nan")}, r"drift threshold 'psi' must be a number >= 0 \(inf: never\), got nan"),
    ({"psi": -1}, r"drift threshold 'psi' must be a number >= 0 \(inf: never\), got -1"),
    ({"js": True}, r"drift threshold 'js' must be a number >= 0 \(inf: never\), got True"),
    ({"psi": "abc"}, r"drift threshold 'psi' must be a number >= 0 \(inf: never\), got 'abc'"),
    ({"psi": {"x": 0.1}}, r"drift threshold 'psi' must be a number >= 0 .*per column: thresholds=\{'columns'"),
    ({"columns": {"x": {"psi": float("nan")}}}, r"drift threshold 'psi' for column 'x' must be a number >= 0"),
])
def test_drift_thresholds_are_numbers(frame, th, match):
    # a NaN threshold is never exceeded: the report said "no drift" whatever the data, silently
    with pytest.raises(ValueError, match=match):
        tp.drift(tp.profile(frame), frame, thresholds=th)


def test_drift_threshold_columns_name_compared_columns(frame):
    with pytest.raises(KeyError, match=r"thresholds for columns \['x2'\], which neither profile has; the columns are \['c', 'x'\]"):
        tp.drift(tp.profile(frame), frame, thresholds={"columns": {"x2": {"psi": 0.5}}})
    # inf switches a metric off
    shifted = frame.assign(x=frame["x"] + 5)
    assert tp.drift(tp.profile(frame), shifted).doc["columns"]["x"]["drift"]
    off = {"columns": {"x": {k: float("inf") for k in ("psi", "js", "linf", "null_rate")}}}
    assert not tp.drift(tp.profile(frame), shifted, thresholds=off).doc["columns"]["x"]["drift"]
