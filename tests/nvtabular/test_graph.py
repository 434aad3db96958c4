"""NVTabular 23.08's graph API (merlin.dag: nodes, ColumnSelector, Tags, Subgraph) and the
Workflow calls around it. Expected values are written out or computed with pandas in the test."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops


@pytest.fixture
def df():
    return pd.DataFrame({"a": [1, 2, 3, 1, None], "b": ["x", "y", "x", "z", None],
                         "c": [0.5, 1.5, np.inf, np.nan, 2.0], "label": [0, 1, 1, 0, 1]})


def test_node_getitem_selects_output_columns(df):
    """merlin.dag.Node.__getitem__: node["a"] and node[["a", "b"]] select output columns of the node."""
    cats = ["a", "b"] >> ops.Categorify()
    wf = tp.Workflow(cats["b"] + ["label"])
    out = wf.fit_transform(tp.Dataset(df)).compute()
    assert list(out.columns) == ["b", "label"]
    full = tp.Workflow(["a", "b"] >> ops.Categorify()).fit_transform(tp.Dataset(df)).compute()
    assert out["b"].tolist() == full["b"].tolist()
    assert (["a", "b"] >> ops.Categorify())[["a", "b"]].output_columns == ["a", "b"]
    with pytest.raises(KeyError, match="nope"):
        cats["nope"]


def test_node_plus_empty_list_is_the_node():
    """NVTabular: node + [] (an empty selection) leaves the node as it is."""
    node = ["a"] >> ops.LogOp()
    assert (node + []) is node and ([] + node) is node


def test_list_rshift_op_class(df):
    """NVTabular: cols >> ops.Normalize (the class) is cols >> ops.Normalize()."""
    wf = tp.Workflow(["c"] >> ops.FillMissing >> ops.LogOp)
    out = wf.fit_transform(tp.Dataset(df)).compute()
    c = df["c"].fillna(0)
    np.testing.assert_allclose(out["c"].to_numpy(), np.log1p(c.to_numpy()), equal_nan=True)


def test_pandas_index_as_selection(df):
    """NVTabular accepts df.columns (a pandas Index) as a selection."""
    wf = tp.Workflow(df.columns[:2] >> ops.Categorify())
    assert wf.output_columns == ["a", "b"]


def test_column_selector_names_subgroups_tags(df):
    """merlin.dag.ColumnSelector(names, subgroups=, tags=): names and groups; tags resolved on the
    data's schema (tags come from a tabprep output's _schema.json or Dataset(schema=))."""
    sel = tp.ColumnSelector(["a"], subgroups=[tp.ColumnSelector(["b", "label"])])
    assert sel.grouped_names == ["a", ("b", "label")]
    schema = tp.Schema([tp.ColumnSchema("a", dtype="float64", tags=(tp.Tags.CATEGORICAL,)),
                        tp.ColumnSchema("b", dtype="str", tags=(tp.Tags.CATEGORICAL,)),
                        tp.ColumnSchema("c", dtype="float64", tags=(tp.Tags.CONTINUOUS,)),
                        tp.ColumnSchema("label", dtype="int64", tags=(tp.Tags.TARGET,))])
    wf = tp.Workflow((tp.ColumnSelector(tags=[tp.Tags.CATEGORICAL]) >> ops.Categorify())
                     + (tp.ColumnSelector(tags=[tp.Tags.CONTINUOUS]) >> ops.FillMissing()) + ["label"])
    wf.fit(tp.Dataset(df, schema=schema))
    assert wf.output_columns == ["a", "b", "c", "label"]
    assert wf.output_schema.select_by_tag(tp.Tags.CATEGORICAL).column_names == ["a", "b"]
    assert wf.transform(df)["c"].tolist()[3] == 0


def test_nodes_as_op_arguments(df):
    """NVTabular: TargetEncoding(target_node), JoinGroupby(cont_cols=node),
    DifferenceLag(partition_cols=[node]) take nodes of raw columns for column names."""
    te_node = ["b"] >> ops.TargetEncoding(tp.ColumnSelector(["label"]), kfold=1, p_smooth=0)
    jg_node = ["b"] >> ops.JoinGroupby(cont_cols=tp.Workflow(["c"]).output_node, stats=["count"])
    dl_node = ["c"] >> ops.DifferenceLag(partition_cols=[tp.Workflow(["a"]).output_node])
    out = tp.Workflow(te_node + jg_node + dl_node).fit_transform(tp.Dataset(df), out_of_fold=False).compute()
    # target mean per b (kfold=1, no smoothing): x -> 0.5, y -> 1, z -> 0
    assert out["TE_b_label"].tolist()[:4] == [0.5, 1.0, 0.5, 0.0]
    assert not te_node.deps and not jg_node.deps and not dl_node.deps  # raw selections: names only


def test_combo_group_of_nodes(df):
    """A group written with nodes of raw columns: [[node_a, "b"]] >> Categorify(encode_type="combo")."""
    a = tp.Workflow(["a"]).output_node
    wf = tp.Workflow([[a, "b"]] >> ops.Categorify(encode_type="combo"))
    assert wf.output_columns == ["a_b"]


def test_subgraph_and_get_subworkflow(df):
    """merlin.dag Subgraph(name, node) and Workflow.get_subworkflow(name): the named part, fitted."""
    cats = tp.Subgraph("cats", ["a", "b"] >> ops.Categorify())
    wf = tp.Workflow(cats + ["c", "label"])
    wf.fit(tp.Dataset(df))
    sub = wf.get_subworkflow("cats")
    assert sub.output_columns == ["a", "b"]
    pd.testing.assert_frame_equal(sub.transform(df), wf.transform(df)[["a", "b"]])
    with pytest.raises(KeyError, match="cats"):
        wf.get_subworkflow("nope")


def test_remove_inputs(df):
    """Workflow.remove_inputs(cols): the workflow without those raw inputs (e.g. the label, to serve)."""
    wf = tp.Workflow((["a", "b"] >> ops.Categorify()) + (["c"] >> ops.Normalize()) + ["label"])
    wf.fit(tp.Dataset(df))
    want = wf.transform(df)
    wf.remove_inputs(["label"])
    assert wf.output_columns == ["a", "b", "c"]
    got = wf.transform(df.drop(columns=["label"]))
    pd.testing.assert_frame_equal(got, want[["a", "b", "c"]])


def test_input_output_dtypes_and_fit_schema(df):
    """Workflow.input_dtypes / output_dtypes and fit_schema(schema) (NVTabular's bind)."""
    wf = tp.Workflow((["b"] >> ops.HashBucket(10)) + ["c"])
    wf.fit_schema(tp.Dataset(df).schema)
    assert wf.input_dtypes == {"b": "str", "c": "float64"}
    assert list(wf.output_dtypes) == ["b", "c"] and wf.output_dtypes["c"] == "float64"
    assert wf.output_dtypes["b"] == wf.output_schema["b"].dtype


def test_subworkflows_and_clear_stats(df):
    """Workflow.subworkflows (names) and clear_stats() (fit again after)."""
    wf = tp.Workflow(tp.Subgraph("conts", ["c"] >> ops.Normalize()) + ["label"])
    assert wf.subworkflows == ["conts"]
    wf.fit(tp.Dataset(df))
    assert wf.fitted
    wf.clear_stats()
    assert not wf.fitted
    with pytest.raises(RuntimeError, match="fit"):
        wf.transform(df)


def test_column_selector_merges_with_nodes_and_names():
    """merlin.dag: ColumnSelector + node, node + ColumnSelector, names + ColumnSelector."""
    node = ["a"] >> ops.LogOp()
    assert (tp.ColumnSelector(["b"]) + node).output_columns == ["b", "a"]
    assert (node + tp.ColumnSelector(["b"])).output_columns == ["a", "b"]
    assert (["x"] + tp.ColumnSelector(["b"])).names == ["x", "b"]
    with pytest.raises(TypeError, match="ColumnSelector"):
        tp.ColumnSelector([1.5])


def _derived():
    return ["label"] >> ops.LambdaOp(lambda s: (s > 0).astype("int8"))


@pytest.mark.parametrize("make, names", [
    (lambda d: ["b"] >> ops.TargetEncoding(d), ["TE_b_label"]),
    (lambda d: ["b"] >> ops.JoinGroupby(cont_cols=d, stats=["sum"]), ["b_label_sum"]),
    (lambda d: ["c"] >> ops.DifferenceLag(partition_cols=[d]), ["c_difference_lag_1"]),
    (lambda d: ["a", "c"] >> ops.Groupby(groupby_cols=d), None),
    (lambda d: ["c"] >> ops.LambdaOp(lambda s, df: s, dependency=d), ["c"]),
])
def test_node_computed_by_an_op_as_argument_is_a_dependency(make, names):
    """NVTabular's ops with column arguments (TargetEncoding's target, JoinGroupby's cont_cols,
    DifferenceLag's partition_cols, Groupby's groupby_cols, LambdaOp's dependency) take a node an
    op computes: the node becomes a dependency of the op's node (computed first, named by its
    output columns), not a raw column the data must hold (tests/nvtabular/test_graph_dependencies.py
    checks the values)."""
    derived = _derived()
    node = make(derived)
    assert node.deps == (derived,)
    wf = tp.Workflow(node)
    assert derived in wf.nodes and wf.nodes.index(derived) < wf.nodes.index(node)
    assert "style=dashed" in node.graph.source  # node.graph draws the dependency edge, dashed
    if names is not None:
        assert wf.output_columns == names


def test_raw_nodes_as_groupby_and_lambda_arguments(df):
    """Groupby(groupby_cols=node) and LambdaOp(dependency=node) with nodes of raw columns read those
    columns (they raised "'int' object is not iterable")."""
    key = tp.Workflow(["a"]).output_node
    df = df.dropna(subset=["a"])   # (null keys: see test_ops_groupby.py)
    out = tp.Workflow(["a", "label"] >> ops.Groupby(groupby_cols=key, aggs={"label": ["sum"]})).transform(df)
    ref = df.groupby("a")["label"].sum()
    assert dict(zip(out["a"], out["label_sum"])) == ref.to_dict()
    lab = tp.Workflow(["label"]).output_node
    got = tp.Workflow(["c"] >> ops.LambdaOp(lambda s, frame: s * frame["label"], dependency=lab)).transform(df)
    np.testing.assert_array_equal(got["c"].to_numpy(), (df["c"] * df["label"]).to_numpy())


def test_column_selector_star_selects_every_input_column():
    """merlin.dag.ColumnSelector("*") (``selector.all``) selects every column of the data, resolved
    when the workflow meets the data's schema (checked on nvtabular 23.8.0: ``ColumnSelector("*")
    >> FillMissing(fill_val=-1)`` fills a and b; ``>> Rename(postfix="_r")`` renames a, b and c)."""
    df = pd.DataFrame({"a": [1.0, None], "b": [None, 2.0], "c": ["x", None]})
    wf = tp.Workflow(tp.ColumnSelector("*") >> ops.FillMissing(fill_val=-1))
    out = wf.fit_transform(tp.Dataset(df[["a", "b"]])).compute()
    assert out.to_dict("list") == {"a": [1.0, -1.0], "b": [-1.0, 2.0]}
    wf = tp.Workflow((tp.ColumnSelector("*") >> ops.Rename(postfix="_r")) + ["a"])
    assert list(wf.fit_transform(tp.Dataset(df)).compute().columns) == ["a_r", "b_r", "c_r", "a"]
    assert tp.ColumnSelector("*").all and not tp.ColumnSelector(["a"]).all
    assert tp.Schema(["x", "y"]).select(tp.ColumnSelector("*")).column_names == ["x", "y"]
    assert tp.Schema(["x", "y"]).excluding(tp.ColumnSelector("*")).column_names == []  # merlin: Schema()
