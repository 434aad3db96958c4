"""+-inf in the data a statistic is fitted on (docs/migration.md, "Non-finite values in
statistics"): NVTabular 23.08 counts an infinite value, so one inf poisons the column (checked on
nvtabular 23.8.0 with x = [1, None, 4, 10, inf, 3]: Normalize gives -inf or NaN in every row,
NormalizeMinMax 0 or NaN, TargetEncoding inf for every category, JoinGroupby's sum and mean of the
category holding the inf inf, FillMedian 4.0 where tabprep's median of the finite values is 3.5).
tabprep leaves +-inf out; the fit says so, naming the op and the column, so a migrating user does
not meet the different numbers silently."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

from conftest import make_dataset, to_pandas

INF_NOTE = r"hold \+-inf"


def _df(x):
    return pd.DataFrame({"cat": ["a", "b", "a", "b", "a", "b"], "x": x, "y": [0.0, 1.0, 1.0, 0.0, 1.0, 1.0]})


CASES = {
    "Normalize": (lambda: ["x"] >> ops.Normalize(), "x"),
    "NormalizeMinMax": (lambda: ["x"] >> ops.NormalizeMinMax(), "x"),
    "FillMedian": (lambda: ["x"] >> ops.FillMedian(), "x"),
    "TargetEncoding": (lambda: ["cat"] >> ops.TargetEncoding("x", kfold=1), "x"),
    "JoinGroupby": (lambda: ["cat"] >> ops.JoinGroupby(cont_cols=["x"], stats=["mean"]), "x"),
}


def _fit(make, x, backend):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tp.NVTabularDifferenceWarning)   # TargetEncoding's build-time note
        node = make()
    wf = tp.Workflow(node)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        wf.fit(make_dataset(_df(x), backend, nparts=2, empties=False))
    return wf, [str(w.message) for w in rec if issubclass(w.category, tp.NVTabularDifferenceWarning)]


@pytest.mark.parametrize("name", list(CASES))
def test_fit_on_infinite_values_warns_naming_op_and_column(name, backend, tmp_path):
    make, column = CASES[name]
    wf, notes = _fit(make, [1.0, None, 4.0, 10.0, np.inf, 3.0], backend)
    ours = [m for m in notes if "+-inf" in m]
    assert len(ours) == 1, notes
    assert ours[0].startswith(f"{name}:") and repr(column) in ours[0] and "NVTabular 23.08" in ours[0]
    assert "Clip" in ours[0]                     # the fix
    # -inf too, and only where the data holds one
    _, notes = _fit(make, [1.0, None, -np.inf, 10.0, 2.0, 3.0], backend)
    assert sum("+-inf" in m for m in notes) == 1, notes
    _, notes = _fit(make, [1.0, None, 4.0, 10.0, np.nan, 3.0], backend)
    assert not [m for m in notes if "+-inf" in m], notes
    # a saved workflow loads without repeating it (nothing is fitted there)
    wf.save(str(tmp_path / "wf"))
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        tp.Workflow.load(str(tmp_path / "wf"))
    assert not [w for w in rec if "+-inf" in str(w.message)]


def test_normalize_statistics_leave_infinite_values_out(backend):
    """The values behind the note: mean and std of the finite values (pandas, written here)."""
    x = [1.0, None, 4.0, 10.0, np.inf, 3.0]
    wf, _ = _fit(CASES["Normalize"][0], x, backend)
    finite = pd.Series(x).replace([np.inf, -np.inf], np.nan).dropna()
    op = [n.op for n in wf.nodes if n.kind == "op"][0]
    assert op.means["x"] == pytest.approx(finite.mean())
    assert op.stds["x"] == pytest.approx(finite.std(ddof=1))
    out = to_pandas(wf.transform(make_dataset(_df(x), backend, nparts=2, empties=False)))
    assert np.isposinf(out["x"][4])                # an infinite value stays infinite at transform


def test_infinite_count_of_each_column_kind():
    """The partials' count: +-inf only (not NaN or nulls), none in int columns, a host column's
    null slots not read (their values are arbitrary)."""
    from tabprep.backend import HostColumn
    from tabprep.stats.moments import infinite_count

    assert infinite_count(pd.Series([1.0, np.inf, -np.inf, np.nan])) == 2
    assert infinite_count(pd.Series(np.array([np.inf, 2.0], dtype="float32"))) == 1
    assert infinite_count(pd.Series([1.0, None, np.inf], dtype="Float64")) == 1
    assert infinite_count(pd.Series([1, 2, 3])) == 0
    assert infinite_count(pd.Series([1, None], dtype="Int64")) == 0
    assert infinite_count(HostColumn(np.array([np.inf, 1.0, -np.inf]), np.array([True, False, False]))) == 1
    import pyarrow as pa   # a list column as tabprep holds one (Arrow-backed): its leaves are counted

    lists = pd.Series(pd.arrays.ArrowExtensionArray(pa.array([[1.0, np.inf], [], None, [-np.inf, np.nan]])))
    assert infinite_count(lists) == 2


def test_infinite_count_of_each_column_kind_on_the_backend(backend):
    """The same counts on cuDF columns (CPU and GPU agree): a float column holding nulls, NaN and
    +-inf, datetimes and timedeltas holding NaT (none infinite), nullable ints and bools. On the
    GPU (2026-11-28, 4x H200) this raised "cupy does not support NaT." / "cannot convert to
    'float64'-dtype NumPy array with missing values" inside Normalize's fit partial."""
    from conftest import frame_on
    from tabprep.stats.moments import infinite_count

    f = np.array([1.0, np.inf, -np.inf, np.nan, 2.5, np.inf])
    df = pd.DataFrame({
        "f": pd.array([1.0, np.inf, -np.inf, None, 2.5, np.inf], dtype="Float64"),
        "f32": f.astype("float32"),
        "t": pd.to_datetime(["2020-01-01", None, "2021-05-05", "1970-01-01", None, "2000-01-01"]),
        "d": pd.to_timedelta([1, None, 3, 4, None, 6], unit="s"),
        "i": pd.array([1, None, 3, 4, 5, 6], dtype="Int64"),
        "b": pd.array([True, None, False, True, True, False], dtype="boolean"),
    })
    data = frame_on(df, backend)
    want = {"f": 3, "f32": int(np.isinf(f).sum()), "t": 0, "d": 0, "i": 0, "b": 0}
    assert {c: infinite_count(data[c]) for c in df.columns} == want
    assert {c: infinite_count(data[c].iloc[:0]) for c in df.columns} == dict.fromkeys(df.columns, 0)
