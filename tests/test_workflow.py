"""The column graph (>>, +, -, lists), error messages, fit passes, row and column order."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

from conftest import assert_same_frame, make_dataset, random_frame, to_pandas


def fit_out(node, df, backend="cpu", nparts=4):
    wf = tp.Workflow(node)
    ds = make_dataset(df, backend, nparts=nparts)
    wf.fit(ds)
    return wf, to_pandas(wf.transform(ds))


def test_chain_applies_ops_in_order(backend):
    df = random_frame(seed=1, n=120)
    node = ["f32", "I64"] >> ops.FillMissing(fill_val=-1) >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize()
    wf, out = fit_out(node, df, backend)
    for c in ("f32", "I64"):
        x = df[c].astype("float64").fillna(-1).clip(lower=0)
        y = np.log1p(x.to_numpy()).astype("float32").astype("float64")  # LogOp outputs float32
        exp = ((y - y.mean()) / y.std(ddof=1)).astype("float32")
        np.testing.assert_allclose(out[c].to_numpy("float64"), exp, rtol=1e-5, atol=1e-6, err_msg=c)


def test_stats_of_later_ops_see_earlier_outputs():
    # Normalize after FillMissing must use the filled values (a second fit pass)
    df = pd.DataFrame({"x": [np.nan, np.nan, 2.0, 4.0]})
    wf, out = fit_out(["x"] >> ops.FillMissing(fill_val=0) >> ops.Normalize(), df, nparts=2)
    x = np.array([0.0, 0.0, 2.0, 4.0])
    np.testing.assert_allclose(out["x"].to_numpy("float64"), (x - x.mean()) / x.std(ddof=1), rtol=1e-6)
    # and a Categorify after a HashBucket sees the bucket ids
    df = pd.DataFrame({"s": pd.Series(["a", "b", "a", "c"], dtype="str")})
    wf, out = fit_out(["s"] >> ops.HashBucket(num_buckets=1) >> ops.Categorify(), df, nparts=2)
    assert out["s"].tolist() == [3, 3, 3, 3]  # one bucket -> one vocabulary entry


def test_plus_merges_in_order_and_passes_columns_through():
    df = random_frame(seed=2, n=50)
    cats = ["s", "i32"] >> ops.Categorify()
    conts = ["f64"] >> ops.FillMissing()
    wf, out = fit_out(cats + conts + ["label", "u16"], df)
    assert list(out.columns) == ["s", "i32", "f64", "label", "u16"] == wf.output_columns
    assert out["label"].tolist() == df["label"].tolist() and str(out["u16"].dtype) == "uint16"
    # list on the left of '+'
    wf2 = tp.Workflow(["label"] + conts)
    assert wf2.output_columns == ["label", "f64"]


def test_lists_of_names_and_nodes():
    df = random_frame(seed=3, n=30)
    cats = ["s"] >> ops.Categorify()
    conts = ["f32"] >> ops.LogOp()
    wf = tp.Workflow([cats, conts, "label"])
    assert wf.output_columns == ["s", "f32", "label"]  # the written order
    assert tp.Workflow(["label", cats, "i8", conts]).output_columns == ["label", "s", "i8", "f32"]
    # deterministic: the same graph built twice gives the same order
    again = tp.Workflow([["s"] >> ops.Categorify(), ["f32"] >> ops.LogOp(), "label"])
    assert again.output_columns == wf.output_columns
    # nodes on the left of '>>' (a list of nodes feeding an op)
    node = [["i8"] >> ops.Rename(postfix="_a"), "i32"] >> ops.Rename(postfix="_b")
    wf3, out = fit_out(node, df)
    assert list(out.columns) == ["i8_a_b", "i32_b"]
    assert out["i8_a_b"].tolist() == df["i8"].tolist()
    # a bare column name works on the left of '>>'
    assert tp.Workflow("i8" >> ops.Rename(postfix="_x")).output_columns == ["i8_x"]


def test_minus_drops_columns():
    df = random_frame(seed=4, n=40)
    node = (["I64", "i32", "f64"] >> ops.FillMissing(add_binary_cols=True)) - ["I64_filled", "i32_filled"]
    wf, out = fit_out(node, df)
    assert list(out.columns) == ["I64", "i32", "f64", "f64_filled"]
    other = ["i32"] >> ops.Rename(postfix="")
    assert tp.Workflow((["i32", "f64"] + ["label"]) - other).output_columns == ["f64", "label"]
    assert tp.Workflow(tp.workflow.as_node(["i32", "f64"]) - "i32").output_columns == ["f64"]


def test_missing_column_keyerror_names_it_with_close_matches():
    df = random_frame(seed=5, n=10)
    wf = tp.Workflow(["label", "f46"] >> ops.Normalize())
    with pytest.raises(KeyError) as err:
        wf.fit(df)
    msg = str(err.value)
    assert "'f46'" in msg and "f64" in msg and "Did you mean" in msg
    # a missing LambdaOp dependency is reported the same way
    wf = tp.Workflow(["f64"] >> ops.LambdaOp(lambda c, d: c, dependency="lable"))
    with pytest.raises(KeyError, match="lable.*label|label.*lable"):
        wf.fit(df)
    # at transform time too (the fitted workflow meets a frame lacking a column)
    wf = tp.Workflow(["f64", "label"] >> ops.Normalize())
    wf.fit(df)
    with pytest.raises(KeyError, match="'label'"):
        wf.transform(df.drop(columns=["label"]))


def test_duplicate_output_names_across_plus_warn_and_keep_the_later_branch():
    """NVTabular 23.08's rule (tests/nvtabular/test_graph_merge.py), with a warning naming the column."""
    with pytest.warns(UserWarning, match="'s'.*two branches.*later branch's values are kept"):
        wf = tp.Workflow((["s"] >> ops.Categorify()) + ["s"])
    df = pd.DataFrame({"s": ["u", None, "v"], "x": [0.0, 1.0, 3.0]})
    got = wf.fit_transform(df)["s"]  # the raw branch, the later one
    assert got.tolist()[::2] == ["u", "v"] and pd.isna(got.iloc[1])
    with pytest.warns(UserWarning, match="'x_r'"):
        wf = tp.Workflow((["x"] >> ops.Rename(postfix="_r")) + (["x"] >> ops.LogOp() >> ops.Rename(postfix="_r")))
    assert wf.fit_transform(df)["x_r"].tolist() == pytest.approx(np.log1p([0.0, 1.0, 3.0]).tolist())


def test_op_instance_cannot_be_reused_in_two_chains():
    op = ops.Normalize()
    _ = ["a"] >> op
    with pytest.raises(ValueError, match="already used"):
        _ = ["b"] >> op


def test_rshift_rejects_non_ops():
    with pytest.raises(TypeError):
        tp.workflow.as_node(["a"]) >> 3  # noqa: B015


def test_op_class_is_instantiated_by_rshift():
    wf = tp.Workflow(tp.workflow.as_node(["x"]) >> ops.LogOp)
    assert isinstance(wf.ops[0], ops.LogOp)


def test_row_order_kept_over_many_partitions(backend):
    df = random_frame(seed=6, n=300).sample(frac=1.0, random_state=1).reset_index(drop=True)
    node = (["s", "i32"] >> ops.Categorify()) + (["f64"] >> ops.Normalize()) + ["idx"]
    _, out = fit_out(node, df, backend, nparts=7)
    assert out["idx"].tolist() == df["idx"].tolist()


def test_transform_before_fit_raises():
    df = random_frame(seed=7, n=10)
    wf = tp.Workflow(["s"] >> ops.Categorify())
    with pytest.raises(RuntimeError, match="fit"):
        _ = wf.output_schema
    with pytest.raises(RuntimeError, match="fit"):
        wf.transform(df)
    with pytest.raises(RuntimeError, match="fit"):
        wf.transform(tp.Dataset(df))


def test_refit_replaces_statistics():
    a = pd.DataFrame({"s": pd.Series(["x", "x", "y"], dtype="str")})
    b = pd.DataFrame({"s": pd.Series(["y", "y", "z", "z", "z"], dtype="str")})
    wf = tp.Workflow(["s"] >> ops.Categorify())
    wf.fit(a)
    assert wf.output_schema["s"].cardinality == 5
    wf.fit(b)
    assert wf.transform(b)["s"].tolist() == [4, 4, 3, 3, 3]
    assert wf.transform(a)["s"].tolist() == [2, 2, 4]  # x is unseen now
    assert wf.output_schema["s"].cardinality == 5


def test_filter_inside_one_branch_is_refused():
    df = random_frame(seed=8, n=40)
    node = (["f64"] >> ops.Filter(lambda d: d["f64"] > 10)) + ["label"]
    wf = tp.Workflow(node)
    wf.fit(df)
    with pytest.raises(ValueError, match="different row counts"):
        wf.transform(df)


def test_filter_on_merged_columns(backend):
    df = random_frame(seed=9, n=100)
    node = ((["s"] >> ops.Categorify()) + ["f64", "idx"]) >> ops.Filter(lambda d: d["f64"] > 10)
    _, out = fit_out(node, df, backend)
    keep = (df["f64"] > 10).to_numpy(dtype=bool)
    assert out["idx"].tolist() == df["idx"][keep].tolist()
    assert list(out.columns) == ["s", "f64", "idx"]


def test_transform_returns_dataset_for_datasets_and_frame_for_frames():
    df = random_frame(seed=10, n=30)
    wf = tp.Workflow(["s"] >> ops.Categorify())
    ds = tp.Dataset(df, npartitions=2)
    wf.fit(ds)
    lazy = wf.transform(ds)
    assert isinstance(lazy, tp.Dataset)
    eager = wf.transform(df)
    assert isinstance(eager, pd.DataFrame)
    assert_same_frame(to_pandas(lazy), eager.reset_index(drop=True))


def test_output_schema_tags_and_input_columns():
    df = random_frame(seed=11, n=30)
    node = (["s"] >> ops.Categorify()) + (["f64"] >> ops.Normalize()) + (["u32"] >> ops.HashBucket(10)) + ["label"]
    wf = tp.Workflow(node)
    wf.fit(df)
    sch = wf.output_schema
    assert sch.column_names == ["s", "f64", "u32", "label"]
    assert "categorical" in sch["s"].tags and "continuous" in sch["f64"].tags and "hashed" in sch["u32"].tags
    assert sch["label"].tags == () and sch["label"].dtype == "int64"
    assert set(wf.input_columns) == {"s", "f64", "u32", "label"}
    assert tp.get_embedding_sizes(wf).keys() == {"s", "u32"}


class _Stamp(tp.ops.StatOperator):
    """A stat op whose finalize sets its statistics and two more attributes, one private."""

    def fit_partial(self, columns, df):
        return {c: int(df[c].notna().sum()) for c in columns}

    def fit_combine(self, partials):
        return {c: sum(p[c] for p in partials) for c in partials[0]}

    def fit_finalize(self, columns, combined):
        self.stats_ = dict(combined)
        self.total_ = sum(combined.values())
        self._cache = {"built": False}
        if hasattr(self, "stale_"):
            del self.stale_

    def transform(self, columns, df):
        return df[columns]


def test_fit_state_lands_on_the_users_op_objects():
    """The ops a user holds are the ones fitted: every attribute their finalize sets (learned state
    and private caches) is on them after ``fit``, whichever process finalized; a re-fit on other
    data replaces it; the parameters stay the objects the user passed."""
    params = {"keep": [1, 2]}
    op = _Stamp()
    op.params_seen = params
    op.stale_ = "from an earlier fit"
    wf = tp.Workflow(["a", "b"] >> op)
    wf.fit(tp.Dataset(pd.DataFrame({"a": [1.0, None, 3.0], "b": [1, 2, 3]}), npartitions=2))
    assert wf.stat_nodes[0].op is op
    assert op.stats_ == {"a": 2, "b": 3} and op.total_ == 5 and op._cache == {"built": False}
    assert op.params_seen is params and not hasattr(op, "stale_")  # what finalize deletes is gone
    wf.fit(tp.Dataset(pd.DataFrame({"a": [None, None], "b": [4, 5]})))
    assert op.stats_ == {"a": 0, "b": 2} and op.total_ == 2


class _KeysSeen(tp.ops.Categorify):
    """A user's subclass whose finalize looks at all keys at once (and declares nothing new)."""

    def fit_finalize(self, columns, combined):
        super().fit_finalize(columns, combined)
        self.keys_seen_ = sorted(combined)


def test_subclass_overriding_finalize_is_not_split_by_key():
    """Categorify declares keyed statistics (its keys are merged and finalized in parallel tasks);
    a subclass that overrides fit_finalize without declaring them again must see every key in one
    finalize, as it did before the split existed."""
    cols = [f"c{i}" for i in range(12)]
    frame = pd.DataFrame({c: np.arange(30) % (i + 2) for i, c in enumerate(cols)})
    op = _KeysSeen()
    tp.Workflow(cols >> op).fit(tp.Dataset(frame, npartitions=3))
    assert op.keys_seen_ == sorted(cols)
    assert list(op.stats_) == cols


def test_a_lazy_transform_of_parquet_pickles(tmp_path):
    """The dataset ``transform`` returns builds its dask frame only when asked; it still pickles
    (to a worker, a cache, a subprocess) and gives the same partitions after the round trip, with
    Categorify ids as counted in the test (null 1, by descending count from 3, ties by value)."""
    import pickle

    pd.DataFrame({"c": pd.array([5, 5, 9, None, 9, 9, 7], dtype="Int64"),
                  "x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]}).to_parquet(tmp_path / "a.parquet")
    ds = tp.Dataset(str(tmp_path / "a.parquet"), cpu=True)
    wf = tp.Workflow((["c"] >> ops.Categorify()) + ["x"])
    wf.fit(ds)
    out = wf.transform(ds)
    back = pickle.loads(pickle.dumps(out))
    assert back.npartitions == out.npartitions == 1
    got = back.to_ddf().compute()
    assert got["c"].tolist() == [4, 4, 3, 1, 3, 3, 5]  # 9 x3 -> 3, 5 x2 -> 4, 7 -> 5, null -> 1
    assert got["x"].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    pd.testing.assert_frame_equal(got, out.to_ddf().compute())
