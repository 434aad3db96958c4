"""DifferenceLag: x[i] - x[i - shift] within a partition key, NaN at key / partition boundaries."""
from __future__ import annotations

from typing import List

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

from conftest import make_dataset, py_values, to_pandas
from list_helpers import frame_to_backend


def data(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    user = np.sort(rng.integers(0, 8, n))
    ts = rng.integers(0, 1000, n).astype("int64")
    ts = np.concatenate([np.sort(ts[user == u]) for u in np.unique(user)])
    price = rng.normal(10, 3, n)
    price[rng.random(n) < 0.15] = np.nan
    session = pd.Series(np.where(rng.random(n) < 0.5, "a", "b"), dtype="str")
    qty = pd.array(rng.integers(0, 5, n), dtype="Int64")
    qty[rng.random(n) < 0.2] = pd.NA
    return pd.DataFrame({"user": user, "session": session, "ts": ts, "price": price, "qty": qty})


def ref_partition(df: pd.DataFrame, col: str, keys: List[str], k: int) -> List[float]:
    x = [None if v is None else float(v) for v in py_values(df[col])]
    key_rows = list(zip(*[py_values(df[c]) for c in keys]))
    out = []
    for i in range(len(df)):
        j = i - k
        ok = (0 <= j < len(df) and None not in key_rows[i] and None not in key_rows[j]
              and key_rows[i] == key_rows[j] and x[i] is not None and x[j] is not None)
        out.append(x[i] - x[j] if ok else None)
    return out


def ref(ds: tp.Dataset, col: str, keys: List[str], k: int) -> List[float]:
    """Reference over the dataset's own partitions (the op works partition by partition)."""
    out: List[float] = []
    for part in ds.to_ddf().to_delayed():
        out += ref_partition(to_pandas(part.compute()), col, keys, k)
    return out


def run(df, op, cols, backend="cpu", nparts=4, empties=True):
    wf = tp.Workflow(cols >> op)
    ds = make_dataset(df, backend, nparts=nparts, empties=empties)
    wf.fit(ds)
    return wf, ds, to_pandas(wf.transform(ds))


def assert_close(got, expected, what=""):
    g = py_values(got)
    assert [v is None for v in g] == [v is None for v in expected], what
    np.testing.assert_allclose([v for v in g if v is not None], [v for v in expected if v is not None], err_msg=what)


def test_single_partition_matches_groupby_diff():
    df = data()
    wf = tp.Workflow(["ts", "price"] >> ops.DifferenceLag("user"))
    out = wf.fit(df).transform(df)
    assert list(out.columns) == ["ts_difference_lag_1", "price_difference_lag_1"]
    expected = df.groupby("user")["ts"].diff()
    np.testing.assert_array_equal(out["ts_difference_lag_1"].to_numpy(), expected.to_numpy(dtype="float64"))
    np.testing.assert_allclose(out["price_difference_lag_1"].to_numpy(),
                               df.groupby("user")["price"].diff().to_numpy(), equal_nan=True)


@pytest.mark.parametrize("shift", [1, 2, -1, [1, -2]])
def test_partitions_with_empties_and_nulls(shift, backend):
    df = data(n=80, seed=1)
    op = ops.DifferenceLag(["user", "session"], shift=shift)
    wf, ds, out = run(df, op, ["ts", "qty"], backend, nparts=4)
    shifts = [shift] if isinstance(shift, int) else shift
    assert list(out.columns) == [f"{c}_difference_lag_{k}" for c in ("ts", "qty") for k in shifts]
    for k in shifts:
        for c in ("ts", "qty"):
            assert_close(out[f"{c}_difference_lag_{k}"], ref(ds, c, ["user", "session"], k), f"{c} shift {k}")
    for col in wf.output_schema:
        assert col.dtype == "float32" and "continuous" in col.tags


def test_string_and_null_keys():
    df = pd.DataFrame({"k": pd.Series(["a", "a", None, None, "b", "b", "b"], dtype="str"),
                       "x": [1.0, 4.0, 5.0, 7.0, 1.0, np.nan, 10.0]})
    wf = tp.Workflow(["x"] >> ops.DifferenceLag("k"))
    out = wf.fit(df).transform(df)
    assert py_values(out["x_difference_lag_1"]) == [None, 3.0, None, None, None, None, None]


def test_float_and_big_int_keys():
    big = 2 ** 60
    df = pd.DataFrame({"k": np.array([big, big + 1, big + 1, 3], dtype="int64"), "f": [0.5, 0.5, np.nan, 0.5],
                       "x": [1, 2, 4, 8]})
    out = tp.Workflow(["x"] >> ops.DifferenceLag("k")).fit(df).transform(df)
    assert py_values(out["x_difference_lag_1"]) == [None, None, 2.0, None]  # big and big+1 differ
    out = tp.Workflow(["x"] >> ops.DifferenceLag("f")).fit(df).transform(df)
    assert py_values(out["x_difference_lag_1"]) == [None, 1.0, None, None]


def test_key_spanning_partitions_restarts_at_each_partition(backend):
    df = pd.DataFrame({"k": np.zeros(8, dtype="int64"), "x": np.arange(8, dtype="float64") ** 2})
    wf, ds, out = run(df, ops.DifferenceLag("k"), ["x"], backend, nparts=2, empties=False)
    # two partitions of 4 rows: the first row of each has no previous row in its partition
    assert py_values(out["x_difference_lag_1"]) == [None, 1.0, 3.0, 5.0, None, 9.0, 11.0, 13.0]


def test_online_path_and_empty_frame(backend):
    df = data(n=30, seed=2)
    wf, ds, out = run(df, ops.DifferenceLag("user"), ["ts"], backend, nparts=3)
    online = to_pandas(wf.transform(frame_to_backend(df, backend)))
    assert_close(online["ts_difference_lag_1"], ref_partition(df, "ts", ["user"], 1))
    empty = to_pandas(wf.transform(frame_to_backend(df.iloc[:0], backend)))
    assert len(empty) == 0 and list(empty.columns) == ["ts_difference_lag_1"]


def test_invalid_arguments():
    with pytest.raises(ValueError):
        ops.DifferenceLag("user", shift=0)
    with pytest.raises(ValueError):
        ops.DifferenceLag([], shift=1)
    with pytest.raises(ValueError):
        ops.DifferenceLag("user", shift=1.5)


def test_save_load_round_trip(tmp_path, backend):
    df = data(n=50, seed=3)
    wf, ds, out = run(df, ops.DifferenceLag(["user"], shift=[1, 3]), ["ts", "price"], backend, nparts=3)
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    assert loaded.output_schema == wf.output_schema
    pd.testing.assert_frame_equal(to_pandas(loaded.transform(ds)), out)
