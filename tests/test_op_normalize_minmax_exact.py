"""NormalizeMinMax on integer columns beyond 2**53 (ns timestamps, ids): exact integer min / max
and ``(x - min)`` in integer arithmetic before the float64 division, as NVTabular 23.08 computes on
int columns (pandas: ``(int64 - int) / int``); ``.mins`` / ``.maxs`` are Python ints.

References are plain Python ints: ``float(x - lo) / float(hi - lo)`` (one rounding of the exact
difference, then the float64 division).
"""
import json
import warnings

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

BASE = 1_600_000_000_000_000_000
OFFS = [0, 1000, 2000, 5000, 7000]


def _ref(values, lo, hi):
    return [np.nan if v is None else float(v - lo) / float(hi - lo) for v in values]


def _fit(df, col="x", **kw):
    op = ops.NormalizeMinMax(**kw)
    wf = tp.Workflow([col] >> op)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wf.fit(tp.Dataset(df, npartitions=2))
    return wf, op


def _out(wf, df):
    return wf.transform(tp.Dataset(df, npartitions=2)).to_ddf().compute()


def _assert_same(got, ref):
    got = [float(v) for v in got]
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        if np.isnan(r):
            assert np.isnan(g)
        else:
            assert g == r, (got, ref)


def test_int64_beyond_2p53_exact_values_and_int_stats(tmp_path):
    vals = [BASE + d for d in OFFS]
    df = pd.DataFrame({"x": np.array(vals, dtype="int64")})
    wf, op = _fit(df)
    lo, hi = min(vals), max(vals)
    assert op.mins == {"x": lo} and op.maxs == {"x": hi}
    assert type(op.mins["x"]) is int and type(op.maxs["x"]) is int
    out = _out(wf, df)
    assert out["x"].dtype == np.float64
    _assert_same(out["x"].tolist(), _ref(vals, lo, hi))
    assert out["x"].tolist()[1] == 1 / 7  # not 0.148148 (the float64 rounding of 1.6e18 + 1000)
    assert str(wf.output_schema["x"].dtype) == "float64"

    wf.save(str(tmp_path / "wf"))
    wf2 = tp.Workflow.load(str(tmp_path / "wf"))
    op2 = [o for o in wf2.ops if isinstance(o, ops.NormalizeMinMax)][0]
    assert op2.mins == {"x": lo} and type(op2.mins["x"]) is int and type(op2.maxs["x"]) is int
    _assert_same(_out(wf2, df)["x"].tolist(), _ref(vals, lo, hi))


def test_nullable_int64_with_nulls_and_new_data_outside_range():
    vals = [BASE + d if d is not None else None for d in [0, None, 1000, 2000, None, 7000]]
    df = pd.DataFrame({"x": pd.array(vals, dtype="Int64")})
    wf, op = _fit(df)
    lo, hi = BASE, BASE + 7000
    assert op.mins == {"x": lo} and op.maxs == {"x": hi} and type(op.maxs["x"]) is int
    _assert_same(_out(wf, df)["x"].tolist(), _ref(vals, lo, hi))
    new = [BASE - 3500, BASE + 14000, None, BASE + 1]
    df2 = pd.DataFrame({"x": pd.array(new, dtype="Int64")})
    _assert_same(_out(wf, df2)["x"].tolist(), _ref(new, lo, hi))


def test_uint64_beyond_int64():
    vals = [2**64 - 1, 2**63 + 5, 2**63 + 12, 2**64 - 8]
    df = pd.DataFrame({"x": np.array(vals, dtype="uint64")})
    wf, op = _fit(df)
    lo, hi = min(vals), max(vals)
    assert op.mins == {"x": lo} and op.maxs == {"x": hi} and type(op.mins["x"]) is int
    _assert_same(_out(wf, df)["x"].tolist(), _ref(vals, lo, hi))


def test_int64_full_range_no_overflow():
    # hi - lo is 2**64 - 1: the difference is exact (NVTabular's int64 subtraction wraps here)
    vals = [-2**63, -1, 0, 2**62, 2**63 - 1]
    df = pd.DataFrame({"x": np.array(vals, dtype="int64")})
    wf, op = _fit(df)
    _assert_same(_out(wf, df)["x"].tolist(), _ref(vals, -2**63, 2**63 - 1))


def test_list_column_of_int64_and_float32_out():
    rows = [[BASE, BASE + 1000], [BASE + 7000], [], [BASE + 2000, BASE + 5000]]
    df = pd.DataFrame({"x": rows})
    wf, op = _fit(df)
    assert op.mins == {"x": BASE} and type(op.mins["x"]) is int
    out = _out(wf, df)["x"].tolist()
    for got, row in zip(out, rows):
        _assert_same(list(got), _ref(row, BASE, BASE + 7000))
    wf32, _ = _fit(pd.DataFrame({"x": np.array([BASE + d for d in OFFS], dtype="int64")}), out_dtype="float32")
    got = _out(wf32, pd.DataFrame({"x": np.array([BASE + d for d in OFFS], dtype="int64")}))["x"]
    assert got.dtype == np.float32
    assert got.tolist() == [float(np.float32(r)) for r in _ref([BASE + d for d in OFFS], BASE, BASE + 7000)]


def test_datetime_counts_exact():
    ns = [BASE + d for d in OFFS]
    df = pd.DataFrame({"t": pd.to_datetime(ns, unit="ns")})
    df.loc[2, "t"] = pd.NaT
    wf, op = _fit(df, col="t")
    live = [v for i, v in enumerate(ns) if i != 2]
    assert op.mins == {"t": min(live)} and type(op.mins["t"]) is int
    ref = _ref([None if i == 2 else v for i, v in enumerate(ns)], min(live), max(live))
    _assert_same(_out(wf, df)["t"].tolist(), ref)


def test_float_column_unchanged_float_stats():
    df = pd.DataFrame({"x": [1.0, 2.5, np.nan, 4.0]})
    wf, op = _fit(df)
    assert type(op.mins["x"]) is float and op.mins == {"x": 1.0} and op.maxs == {"x": 4.0}
    _assert_same(_out(wf, df)["x"].tolist(), [0.0, 0.5, np.nan, 1.0])


def test_folder_saved_with_float_stats_keeps_its_results(tmp_path):
    # a folder saved before the fix holds float min / max for the int column: it loads and gives
    # what it gave then, (float64(x) - min) / (max - min)
    vals = [BASE + d for d in OFFS]
    df = pd.DataFrame({"x": np.array(vals, dtype="int64")})
    wf, _ = _fit(df)
    wf.save(str(tmp_path / "wf"))
    spec_path = tmp_path / "wf" / "workflow.json"
    spec = json.loads(spec_path.read_text())
    for node in spec["nodes"]:
        if node.get("op") == "NormalizeMinMax":
            st = node["state"]["stats"]["x"]
            st["min"], st["max"] = float(st["min"]), float(st["max"])
    spec_path.write_text(json.dumps(spec))
    wf2 = tp.Workflow.load(str(tmp_path / "wf"))
    x = np.array(vals, dtype="int64").astype(np.float64)
    lo, hi = float(BASE), float(BASE + 7000)
    old = ((x - lo) / (hi - lo)).tolist()
    assert old[1] != 1 / 7
    assert _out(wf2, df)["x"].tolist() == old


def test_int64_and_datetimes_beyond_2p53_on_either_backend(backend):
    """The same exact values from frames of the backend (cuDF on the GPU: its own min / max and the
    cupy integer difference), for an int64 column with a null and ns datetimes."""
    from conftest import frame_on, to_pandas

    vals = [BASE + d for d in OFFS] + [None]
    df = pd.DataFrame({"x": pd.array(vals, dtype="Int64"),
                       "t": pd.to_datetime([BASE + d for d in OFFS] + [None], unit="ns")})
    wf = tp.Workflow(["x", "t"] >> ops.NormalizeMinMax())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wf.fit(tp.Dataset(frame_on(df, backend)))
    out = to_pandas(wf.transform(frame_on(df, backend)))
    ref = _ref(vals, BASE, BASE + 7000)
    _assert_same(out["x"].tolist(), ref)
    _assert_same(out["t"].tolist(), ref)
