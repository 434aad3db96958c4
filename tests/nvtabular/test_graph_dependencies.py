"""NVTabular 23.08's nodes computed by an op as op arguments (merlin.dag ``Node.dependencies``):
``TargetEncoding(target_node)``, ``JoinGroupby(cont_cols=node)``, ``DifferenceLag(partition_cols=[node])``.

NVTabular makes such a node a dependency of the op's node: it is computed first (its own
statistics fitted in an earlier pass), the op reads its output columns under the node's output
names, and those columns are not workflow outputs unless selected. Expected values are computed
with pandas in the tests, from the raw columns."""
from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tabprep as tp
from tabprep import ops
from tests.conftest import make_dataset, to_pandas


@pytest.fixture
def df():
    rng = np.random.default_rng(3)
    n = 60
    rating = rng.integers(1, 6, n).astype("float64")
    rating[[2, 17, 40]] = np.nan
    price = rng.uniform(1, 50, n)
    price[[5, 33]] = np.nan
    price[11] = np.inf
    users = np.array(["u1", "u2", "u3", None], dtype=object)[rng.integers(0, 4, n)]
    session = np.repeat(np.array(["s1", None, "s2", "s3", None, "s4"], dtype=object), 10)
    return pd.DataFrame({"user": users, "rating": rating, "price": price, "session": session,
                         "ts": np.arange(n, dtype="int64") * 7 + rng.integers(0, 5, n)})


def _te_reference(cats: pd.Series, y: pd.Series, p_smooth: float) -> np.ndarray:
    """TargetEncoding's documented formula with full-data statistics: (s + p * mean) / (n + p)
    per category over non-null targets; null categories get the global mean."""
    ok = y.notna() & np.isfinite(y.astype("float64"))
    gm = float(y[ok].mean())
    frame = pd.DataFrame({"k": cats[ok], "y": y[ok].astype("float64")})
    s = frame.groupby("k")["y"].sum()
    c = frame.groupby("k")["y"].count()
    enc = (s + p_smooth * gm) / (c + p_smooth)
    return np.array([gm if k is None or k not in enc.index else enc[k] for k in cats], dtype="float64")


def test_target_encoding_of_a_target_computed_by_a_lambda(df, backend):
    """TargetEncoding(labels >> LambdaOp(...)) (NVTabular's docstring example): the op encodes the
    computed target, named as the node names it (TE_user_rating); the target node's column is not
    an output."""
    # fillna first: a comparison with a missing rating is False in pandas (NaN) but null in cuDF
    # (a null, which TargetEncoding skips); the user's function decides, on either backend
    target = ["rating"] >> ops.LambdaOp(lambda t: (t.fillna(0) > 3).astype("int64"))
    wf = tp.Workflow(["user"] >> ops.TargetEncoding(target, p_smooth=2))
    out = to_pandas(wf.fit(make_dataset(df, backend, nparts=3)).transform(make_dataset(df, backend, nparts=3)))
    assert list(out.columns) == ["TE_user_rating"]
    want = _te_reference(df["user"], (df["rating"].fillna(0) > 3).astype("int64"), 2)
    np.testing.assert_allclose(out["TE_user_rating"].to_numpy("float64"), want, rtol=1e-6)
    # the raw rating would give other numbers: the dependency is really the computed one
    raw = _te_reference(df["user"], df["rating"], 2)
    assert not np.allclose(want, raw)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c", None]),
                          st.one_of(st.none(), st.floats(-5, 5, allow_nan=False))), min_size=1, max_size=40),
       st.integers(1, 4))
def test_out_of_fold_encoding_of_a_computed_target_equals_the_two_workflow_baseline(rows, nparts):
    """Property: fit_transform (out-of-fold values, per row's fold) with a computed target equals
    TargetEncoding of the same target computed beforehand in pandas and given as a raw column."""
    df = pd.DataFrame(rows, columns=["k", "r"]).astype({"r": "float64"})
    target = ["r"] >> ops.FillMissing(fill_val=0.0) >> ops.LambdaOp(lambda t: (t > 1).astype("int64"))
    got = tp.Workflow(["k"] >> ops.TargetEncoding(target, kfold=3, p_smooth=1))
    got = to_pandas(got.fit_transform(make_dataset(df, nparts=nparts)))
    pre = df.assign(r=(df["r"].fillna(0.0) > 1).astype("int64"))
    base = tp.Workflow(["k"] >> ops.TargetEncoding("r", kfold=3, p_smooth=1))
    base = to_pandas(base.fit_transform(make_dataset(pre, nparts=nparts)))
    pd.testing.assert_frame_equal(got, base)


def test_target_computed_by_a_stat_op_is_fitted_in_an_earlier_pass(df, backend):
    """The dependency's own statistics (FillMedian's median) are fitted in a pass before the
    TargetEncoding that reads its output: two fit passes."""
    target = ["rating"] >> ops.FillMedian() >> ops.LambdaOp(lambda t: (t > 3).astype("int64"))
    wf = tp.Workflow((["user"] >> ops.TargetEncoding(target, p_smooth=5)) + ["price"])
    stages = []
    wf.fit(make_dataset(df, backend, nparts=3), progress=lambda stage, done, total: stages.append(stage))
    assert sorted(set(stages)) == ["fit pass 1", "fit pass 2"]
    out = to_pandas(wf.transform(make_dataset(df, backend, nparts=3)))
    med = df["rating"].median()
    want = _te_reference(df["user"], (df["rating"].fillna(med) > 3).astype("int64"), 5)
    assert list(out.columns) == ["TE_user_rating", "price"]
    np.testing.assert_allclose(out["TE_user_rating"].to_numpy("float64"), want, rtol=1e-6)


def test_join_groupby_of_computed_renamed_continuous_columns(df, backend):
    """JoinGroupby(cont_cols=node): statistics of the node's output columns, under its output
    names (price_x2, which is no raw column: the data need not hold it)."""
    conts = ["price"] >> ops.LambdaOp(lambda p: p * 2) >> ops.Rename(postfix="_x2")
    wf = tp.Workflow(["user"] >> ops.JoinGroupby(cont_cols=conts, stats=["count", "sum", "mean"]))
    assert "price_x2" not in wf.input_columns
    out = to_pandas(wf.fit(make_dataset(df, backend, nparts=3)).transform(make_dataset(df, backend, nparts=3)))
    assert list(out.columns) == ["user_count", "user_price_x2_sum", "user_price_x2_mean"]
    x2 = df["price"] * 2
    frame = pd.DataFrame({"k": df["user"].fillna("<null>"), "v": x2.where(np.isfinite(x2))})
    g = frame.groupby("k")
    keys = df["user"].fillna("<null>")
    np.testing.assert_array_equal(out["user_count"].to_numpy("int64"), keys.map(g.size()).to_numpy("int64"))
    np.testing.assert_allclose(out["user_price_x2_sum"].to_numpy("float64"), keys.map(g["v"].sum()).to_numpy(),
                               rtol=1e-6)
    np.testing.assert_allclose(out["user_price_x2_mean"].to_numpy("float64"), keys.map(g["v"].mean()).to_numpy(),
                               rtol=1e-6)


def _lag_reference(ts: pd.Series, key: pd.Series) -> np.ndarray:
    same = (key == key.shift(1)).to_numpy()
    diff = (ts - ts.shift(1)).to_numpy("float64")
    return np.where(same, diff, np.nan)


def test_difference_lag_partitioned_by_a_computed_key(df, backend):
    """DifferenceLag(partition_cols=[node]): the key is the node's output (Categorify's ids, where
    every null session shares the null id, so consecutive nulls are one key; the raw column's
    nulls match nothing)."""
    key = ["session"] >> ops.Categorify()
    wf = tp.Workflow(["ts"] >> ops.DifferenceLag(partition_cols=[key]))
    out = to_pandas(wf.fit(make_dataset(df, backend, nparts=1)).transform(make_dataset(df, backend, nparts=1)))
    assert list(out.columns) == ["ts_difference_lag_1"]
    want = _lag_reference(df["ts"], df["session"].fillna("<null>"))
    np.testing.assert_array_equal(out["ts_difference_lag_1"].to_numpy("float64"), want)
    raw = to_pandas(tp.Workflow(["ts"] >> ops.DifferenceLag(partition_cols=["session"])).transform(df))
    assert np.isnan(raw["ts_difference_lag_1"].to_numpy("float64")).sum() > np.isnan(want).sum()


def test_dependency_columns_are_outputs_only_when_selected(df):
    """A dependency node's columns join the output only where the graph selects the node itself."""
    target = ["rating"] >> ops.LambdaOp(lambda t: (t > 3).astype("int64"))
    te = ["user"] >> ops.TargetEncoding(target, p_smooth=2)
    wf = tp.Workflow(te + target)
    out = wf.fit_transform(tp.Dataset(df), out_of_fold=False).compute()
    assert list(out.columns) == ["TE_user_rating", "rating"]
    np.testing.assert_array_equal(out["rating"].to_numpy(), (df["rating"] > 3).astype("int64").to_numpy())
    np.testing.assert_allclose(out["TE_user_rating"].to_numpy("float64"),
                               _te_reference(df["user"], (df["rating"] > 3).astype("int64"), 2), rtol=1e-6)


def test_a_dependency_that_also_feeds_a_fused_chain_is_computed_once_for_both(df, tmp_path):
    """A node both continued by element-wise ops (fused into one host pass) and used as an op's
    argument keeps its own output for the argument; in memory and from parquet (the Arrow paths)."""
    filled = ["price"] >> ops.FillMissing(fill_val=0.0)
    clipped = filled >> ops.Clip(min_value=0, max_value=60)
    wf = tp.Workflow(clipped + (["user"] >> ops.JoinGroupby(cont_cols=filled, stats=["sum"])))
    df.to_parquet(tmp_path / "d.parquet", index=False)
    outs = []
    for data in (tp.Dataset(df), tp.Dataset(str(tmp_path / "d.parquet"))):
        outs.append(to_pandas(wf.fit(data).transform(data)))
    wf.transform(tp.Dataset(str(tmp_path / "d.parquet"))).to_parquet(str(tmp_path / "out"))  # the writer's Arrow path
    outs.append(pd.read_parquet(tmp_path / "out"))
    for out in outs:
        f = df["price"].fillna(0.0)
        np.testing.assert_allclose(out["price"].to_numpy("float64"), f.clip(0, 60).to_numpy())
        v = f.where(np.isfinite(f))
        keys = df["user"].fillna("<null>")
        sums = pd.DataFrame({"k": keys, "v": v}).groupby("k")["v"].sum()
        np.testing.assert_allclose(out["user_price_sum"].to_numpy("float64"), keys.map(sums).to_numpy(), rtol=1e-6)


def test_a_dependency_is_computed_once_per_frame(df):
    """A node read by two ops as an argument and also selected is computed once per transform."""
    calls = []

    def binary(t):
        calls.append(len(t))
        return (t > 3).astype("int64")

    target = ["rating"] >> ops.LambdaOp(binary, dtype="int64")
    wf = tp.Workflow((["user"] >> ops.TargetEncoding(target)) + (["session"] >> ops.JoinGroupby(cont_cols=target, stats=["count", "mean"]))
                     + target)
    wf.fit(tp.Dataset(df))
    calls.clear()
    out = wf.transform(df)
    assert calls == [len(df)]
    assert list(out.columns)[-1] == "rating" and "TE_user_rating" in out and "session_rating_mean" in out


def _saved_workflow():
    target = ["rating"] >> ops.FillMedian()
    conts = ["price"] >> ops.FillMissing(fill_val=1.0) >> ops.LogOp()
    key = ["session"] >> ops.Categorify()
    return tp.Workflow((["user"] >> ops.TargetEncoding(target, p_smooth=3))
                       + (["user"] >> ops.JoinGroupby(cont_cols=conts, stats=["mean"]))
                       + (["ts"] >> ops.DifferenceLag(partition_cols=[key])))


def test_save_load_keeps_the_dependency_edges(df, tmp_path):
    """Workflow.save records the dependency edges in workflow.json: the loaded workflow (no code
    run) computes the dependencies and transforms exactly like the original."""
    wf = _saved_workflow()
    wf.fit(tp.Dataset(df))
    before = wf.transform(df)
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    after = loaded.transform(df)
    pd.testing.assert_frame_equal(before, after)
    assert list(after.columns) == ["TE_user_rating", "user_price_mean", "ts_difference_lag_1"]
    med = df["rating"].median()
    np.testing.assert_allclose(after["TE_user_rating"].to_numpy("float64"),
                               _te_reference(df["user"], df["rating"].fillna(med), 3), rtol=1e-6)
    lp = np.log1p(df["price"].fillna(1.0))
    keys = df["user"].fillna("<null>")
    means = pd.DataFrame({"k": keys, "v": lp.where(np.isfinite(lp))}).groupby("k")["v"].mean()
    np.testing.assert_allclose(after["user_price_mean"].to_numpy("float64"), keys.map(means).to_numpy(), rtol=1e-6)
    np.testing.assert_array_equal(after["ts_difference_lag_1"].to_numpy("float64"),
                                  _lag_reference(df["ts"], df["session"].fillna("<null>")))


@pytest.mark.parametrize("edit", ["self", "later"])
def test_a_dependency_cycle_in_an_edited_workflow_json_is_refused(df, tmp_path, edit):
    """A dependency on the node itself or on a later node (a cycle) in workflow.json: ValueError
    naming the file and the node, never a hang or a silently different graph."""
    wf = _saved_workflow()
    wf.fit(tp.Dataset(df))
    wf.save(str(tmp_path / "wf"))
    path = tmp_path / "wf" / "workflow.json"
    spec = json.loads(path.read_text())
    user = next(e for e in spec["nodes"] if e.get("deps"))
    ids = [e["id"] for e in spec["nodes"]]
    user["deps"] = [user["id"]] if edit == "self" else [ids[-1]]
    path.write_text(json.dumps(spec))
    with pytest.raises(ValueError, match=re.escape(user["id"]) + ".*(depends|cycle)"):
        tp.Workflow.load(str(tmp_path / "wf"))


def test_a_dependency_naming_an_input_column_of_the_op_is_refused(df):
    """A node whose output column is also one of the columns the op transforms (NVTabular would
    silently replace the op's input with the dependency's values): ValueError naming the column."""
    rating = ["rating"] >> ops.LambdaOp(lambda t: (t > 3).astype("int64"))
    with pytest.raises(ValueError, match="'rating'.*Rename"):
        ["rating", "user"] >> ops.TargetEncoding(rating)


def test_a_dependency_with_other_rows_is_refused_by_name(df):
    """A dependency that filtered rows cannot line up with the op's rows: ValueError naming the op."""
    target = ["rating"] >> ops.Filter(lambda f: f["rating"] > 2)
    wf = tp.Workflow(["user"] >> ops.TargetEncoding(target))
    with pytest.raises(ValueError, match="TargetEncoding.*rows.*Filter"):
        wf.fit(tp.Dataset(df))


def test_a_graph_cycle_through_dependencies_is_refused():
    """A cycle (a node made a dependency of itself by editing the graph) is refused by Workflow."""
    from tabprep.ops.node import Node

    n = ["user"] >> ops.TargetEncoding(["rating"] >> ops.LambdaOp(lambda t: t))
    n.deps = (Node("drop", parents=[n], columns=[]),)
    with pytest.raises(ValueError, match="cycle"):
        tp.Workflow(n)


def test_serving_refuses_the_consumer_by_name_and_serves_the_rest(df):
    """Serving: the ops that read columns beside their inputs have no serving kernel (as with raw
    arguments): ServingBuildError names the op; the other outputs serve equal to the offline ones."""
    from tabprep.serving import ServingBuildError, ServingTransform

    target = ["rating"] >> ops.LambdaOp(lambda t: (t > 3).astype("int64"))
    logp = ["price"] >> ops.FillMissing(fill_val=1.0) >> ops.LogOp()
    wf = tp.Workflow((["user"] >> ops.TargetEncoding(target)) + logp)
    wf.fit(tp.Dataset(df))
    with pytest.raises(ServingBuildError, match="TargetEncoding"):
        ServingTransform(wf)
    st = ServingTransform(wf, exclude=["TE_user_rating"])
    assert st.input_names == ["price"]
    rows = df.iloc[:5]
    got = st({"price": rows["price"].tolist()})
    np.testing.assert_allclose(got["price"], wf.transform(rows)["price"].to_numpy(), rtol=1e-6)


def test_to_spec_refuses_dependency_edges_by_name():
    """A spec has no way to write a node used as an op's argument: SpecError naming the op."""
    from tabprep.workflow.spec_read import SpecError

    wf = tp.Workflow(["user"] >> ops.TargetEncoding(["rating"] >> ops.FillMedian()))
    with pytest.raises(SpecError, match=r"TargetEncoding.*wf\.save"):
        wf.to_spec()


def test_tag_selection_as_op_argument_is_refused_by_name():
    """A node selected by tag names no columns before the schema is known: TypeError naming the argument."""
    with pytest.raises(TypeError, match=re.escape("TargetEncoding(target=...)")):
        ops.TargetEncoding(tp.ColumnSelector(tags=[tp.Tags.TARGET]) >> ops.LambdaOp(lambda t: t))


def test_lambda_takes_a_computed_node(df):
    """LambdaOp(dependency=node): f's frame holds the node's output (not the raw column)."""
    key = ["user"] >> ops.FillMissing(fill_val="none")
    lam = ["price"] >> ops.LambdaOp(lambda s, frame: s.where(frame["user"] != "u1", -1.0), dependency=key)
    out = tp.Workflow(lam).transform(df)
    want = df["price"].where(df["user"].fillna("none") != "u1", -1.0)
    np.testing.assert_array_equal(out["price"].to_numpy(), want.to_numpy())
