"""JoinGroupby against pandas ``groupby(dropna=False)`` statistics merged back onto the rows."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

from conftest import make_dataset, to_pandas

STATS = ["count", "sum", "mean", "std", "var", "min", "max"]


def _frame(seed: int = 0, n: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = pd.array(rng.integers(0, 9, n), dtype="Int64")
    a[rng.random(n) < 0.1] = pd.NA
    s = rng.choice(np.array(["x", "y", "z"], dtype=object), n)
    s[rng.random(n) < 0.1] = None
    x = rng.normal(1000.0, 3.0, n)  # a large mean: std must not cancel
    x[rng.random(n) < 0.15] = np.nan
    i = pd.array(rng.integers(-50, 50, n), dtype="Int64")
    i[rng.random(n) < 0.2] = pd.NA
    return pd.DataFrame({"a": a, "s": pd.Series(s, dtype="str"), "x": x, "i": i})


def reference(train: pd.DataFrame, data: pd.DataFrame, key, conts, stats) -> pd.DataFrame:
    """pandas: per-category stats (nulls are a category), left-merged onto ``data``'s rows."""
    cols = [key] if isinstance(key, str) else list(key)
    name = "_".join(cols)
    t = train[cols + conts].copy()
    for c in conts:
        t[c] = t[c].astype("float64")
    g = t.groupby(cols, dropna=False)
    table = pd.DataFrame({f"{name}_count": g.size()})
    for c in conts:
        for st in stats:
            if st != "count":
                table[f"{name}_{c}_{st}"] = g[c].agg(st)
    # a combined key with a null part is a category of its own (NVTabular: groupby dropna=False)
    merged = data[cols].reset_index(drop=True).merge(table.reset_index(), on=cols, how="left")
    # a category not fitted: null count and statistics (the merge's NaN: NVTabular's GPU keeps it)
    wanted = ([f"{name}_count"] if "count" in stats else []) + \
        [f"{name}_{c}_{st}" for c in conts for st in stats if st != "count"]
    return merged[wanted]


def check(out: pd.DataFrame, ref: pd.DataFrame) -> None:
    assert list(out.columns) == list(ref.columns)
    for c in ref.columns:
        got = out[c].to_numpy(dtype="float64", na_value=np.nan)
        exp = ref[c].to_numpy(dtype="float64", na_value=np.nan)
        np.testing.assert_allclose(got, exp.astype("float32").astype("float64"), rtol=2e-6, atol=1e-6,
                                   equal_nan=True, err_msg=c)


def test_matches_pandas_groupby_with_nulls_and_empty_partitions():
    train = _frame(0)
    data = _frame(1, 120)
    data.loc[::6, "a"] = 42  # unseen
    data.loc[::5, "s"] = "new"
    wf = tp.Workflow(["a", "s"] >> ops.JoinGroupby(["x", "i"], stats=STATS))
    wf.fit(make_dataset(train, nparts=5))
    out = to_pandas(wf.transform(make_dataset(data, nparts=3)))
    expected = pd.concat([reference(train, data, "a", ["x", "i"], STATS),
                          reference(train, data, "s", ["x", "i"], STATS)], axis=1)
    check(out, expected)
    unseen = data["a"].to_numpy(dtype="float64", na_value=np.nan) == 42
    assert out.loc[unseen, "a_count"].isna().all() and out.loc[unseen, "a_x_sum"].isna().all()
    # NVTabular 23.08's dtypes: count int32, mean float32, sum the column's (tests/nvtabular/test_ops_join_groupby.py)
    assert str(out["a_count"].dtype) == "Int32" and str(out["a_x_mean"].dtype) == "float32"  # int32 with nulls
    assert [c.dtype for c in wf.output_schema][:3] == ["int32", "float64", "float32"]


def test_default_stats_and_names():
    # NVTabular 23.08's default stats: ("count",) (tests/nvtabular/test_ops_nvt_arguments.py)
    assert ops.JoinGroupby("x").output_column_names(["a"]) == ["a_count"]
    op = ops.JoinGroupby("x", stats=["count", "sum", "mean", "std", "min", "max"])
    assert op.output_column_names(["a"]) == ["a_count", "a_x_sum", "a_x_mean", "a_x_std", "a_x_min", "a_x_max"]
    assert ops.JoinGroupby([], stats="count").output_column_names(["a", "b"]) == ["a_count", "b_count"]


def test_column_group_key():
    train = _frame(2)
    wf = tp.Workflow([["a", "s"]] >> ops.JoinGroupby(["x"], stats=["count", "mean", "max"]))
    wf.fit(make_dataset(train, nparts=3))
    out = to_pandas(wf.transform(make_dataset(train, nparts=2)))
    check(out, reference(train, train, ["a", "s"], ["x"], ["count", "mean", "max"]))


def test_partitioning_does_not_change_statistics():
    train = _frame(3, 500)
    outs = []
    for nparts in (1, 7):
        wf = tp.Workflow(["a"] >> ops.JoinGroupby(["x"], stats=["std", "var", "mean"]))
        wf.fit(make_dataset(train, nparts=nparts, empties=nparts > 1))
        outs.append(to_pandas(wf.transform(train)))
    for c in outs[0].columns:
        np.testing.assert_allclose(outs[0][c], outs[1][c], rtol=1e-6, equal_nan=True)


def test_save_load_round_trip(tmp_path):
    train = _frame(4)
    data = _frame(5, 80)
    data.loc[::4, "s"] = "unseen"
    wf = tp.Workflow((["a", "s"] >> ops.JoinGroupby(["x"])) + ([["a", "s"]] >> ops.JoinGroupby(["i"], stats=["sum"])))
    wf.fit(make_dataset(train, nparts=3))
    before = to_pandas(wf.transform(data))
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    assert loaded.output_schema == wf.output_schema
    pd.testing.assert_frame_equal(to_pandas(loaded.transform(make_dataset(data, nparts=2))), before)


def test_invalid_stats():
    with pytest.raises(ValueError, match="stats"):
        ops.JoinGroupby(["x"], stats=["median"])
    with pytest.raises(ValueError, match="cont_cols"):
        ops.JoinGroupby([], stats=["mean"])


def test_null_in_a_continuous_column_warns_once(backend):
    """NVTabular 23.08's mean divides by the row count, nulls included: tabprep's differs, loudly."""
    import warnings

    df = pd.DataFrame({"user": [1, 1, 2, 2, 3, 3], "price": [np.nan, 2.5, 1.0, 3.0, 4.0, np.nan],
                       "qty": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
    wf = tp.Workflow(["user"] >> ops.JoinGroupby(cont_cols=["price", "qty"], stats=["count", "mean"]))
    with pytest.warns(UserWarning, match=r"JoinGroupby: continuous column\(s\) \['price'\] hold nulls.*"
                                         r"NVTabular 23.08's mean counts null rows") as rec:
        wf.fit(make_dataset(df, backend, nparts=3))
    assert sum("JoinGroupby" in str(w.message) for w in rec) == 1  # once per op, not per partition
    out = to_pandas(wf.transform(make_dataset(df, backend, nparts=1)))
    assert out["user_price_mean"].tolist() == [2.5, 2.5, 2.0, 2.0, 4.0, 4.0]  # nulls left out
    with warnings.catch_warnings():  # no null in the conts, or no moment asked: silent
        warnings.simplefilter("error")
        tp.Workflow(["user"] >> ops.JoinGroupby(cont_cols=["qty"], stats=["mean"])).fit(make_dataset(df, backend))
        tp.Workflow(["user"] >> ops.JoinGroupby(cont_cols=["price"], stats=["sum", "max"])).fit(make_dataset(df, backend))


def test_group_with_a_null_part_warns(backend):
    """NVTabular 23.08 fits a combination with a null part with count 0: tabprep differs, loudly."""
    df = pd.DataFrame({"a": [None, None, 1.0, 1.0], "b": [1.0, 2.0, 1.0, 2.0], "x": [1.0, 2.0, 3.0, 4.0]})
    wf = tp.Workflow([["a", "b"]] >> ops.JoinGroupby(cont_cols=["x"], stats=["mean"]))
    with pytest.warns(UserWarning, match=r"JoinGroupby: the column group 'a_b' \(\['a', 'b'\]\) has rows with a null part"):
        wf.fit(make_dataset(df, backend, nparts=2))


def test_64_bit_integers_beyond_2_53_are_said_to_be_rounded_and_uint64_never_wraps():
    """The statistics are computed in float64 (docs/migration.md). An int64 column beyond 2**53 came
    out rounded with no word (min of [2**60 + 1, 2**60 + 3] gave 2**60); a uint64 max of 2**64 - 1
    rounded to 2**64 and was cast back to uint64 as 0."""
    df = pd.DataFrame({"user": [1, 1, 2], "ts": np.array([2**60 + 1, 2**60 + 3, 5], dtype="int64")})
    wf = tp.Workflow(["user"] >> ops.JoinGroupby(cont_cols=["ts"], stats=["min", "max"]))
    with pytest.warns(UserWarning, match=r"'user_ts_min' holds integers beyond 2\*\*53.*rounded"):
        wf.fit(tp.Dataset(df))
        out = wf.transform(df)
    assert out["user_ts_min"].tolist()[2] == 5   # small values stay exact
    assert abs(int(out["user_ts_min"].iloc[0]) - (2**60 + 1)) <= 2**8

    df = pd.DataFrame({"k": [1, 1, 2], "v": np.array([2**64 - 1, 2**63 + 1, 7], dtype="uint64")})
    wf = tp.Workflow(["k"] >> ops.JoinGroupby(cont_cols=["v"], stats=["min", "max"]))
    with pytest.warns(UserWarning, match="'k_v_max' holds values outside uint64.*as float64"):
        wf.fit(tp.Dataset(df))
        out = wf.transform(df)
    top = out["k_v_max"].tolist()
    assert top[2] == 7 and all(float(t) >= 2.0**64 - 2**12 for t in top[:2]), top   # not 0
