"""merlin-core 23.08's ``Node`` API on tabprep's nodes (issue #29): the attributes NVTabular scripts
read (``selector``, ``dependencies``, ``parents_with_dependencies``, ``children``, ``column_mapping``,
``exportable``) and graph surgery (``add_parent``, ``add_child``, ``add_dependency``,
``remove_child``, ``compute_schemas``, ``validate_schemas``).

Expected values are what nvtabular 23.08 gives on the same graphs (run in /tmp/nvt2, CPU, on the
frame of the ``df`` fixture); output values are checked against plain pandas written here.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tabprep as tp
from tabprep import ops
from tabprep.schema import ColumnSelector

pytestmark = pytest.mark.filterwarnings("ignore::tabprep.NVTabularDifferenceWarning")


@pytest.fixture
def df():
    return pd.DataFrame({"a": [1.0, 2.0, 2.0, np.nan, 5.0], "b": [1.0, 2.0, 3.0, 4.0, np.inf],
                         "c": ["x", "y", "x", "z", None], "t": [0, 1, 1, 0, 1]})


def _out(node, df, tmp_path=None):
    wf = tp.Workflow(node)
    got = wf.fit_transform(tp.Dataset(df)).to_ddf().compute().reset_index(drop=True)
    if tmp_path is not None:  # the same outputs from the saved workflow
        wf.save(str(tmp_path / "wf"))
        again = tp.Workflow.load(str(tmp_path / "wf")).transform(tp.Dataset(df)).to_ddf().compute()
        pd.testing.assert_frame_equal(got, again.reset_index(drop=True))
    return got


def _filled(df):  # FillMissing(fill_val=-1) of a, in plain pandas
    return df["a"].fillna(-1.0)


def _clipped(df):  # Clip(max_value=3) of b
    return df["b"].clip(upper=3.0)


# -- read-only attributes ---------------------------------------------------------------------
def test_selection_nodes_selector_and_ops_selector_after_schemas(df):
    # nvtabular: the selection under ["a", "c"] >> Categorify has selector names ['a', 'c'];
    # the op node's selector is None until the workflow computes schemas, then its input columns
    cat = ["a", "c"] >> ops.Categorify()
    sel = cat.parents[0]
    assert isinstance(sel.selector, ColumnSelector) and sel.selector.grouped_names == ["a", "c"]
    assert cat.selector is None
    te = ["c"] >> ops.TargetEncoding("t")
    combo = [["a", "c"]] >> ops.Categorify(encode_type="combo")
    drop = (["a", "b", "c"] >> ops.FillMissing()) - ["c"]
    tp.Workflow(cat + te + combo + drop).fit_schema(tp.Dataset(df).schema)
    assert cat.selector.grouped_names == ["a", "c"]
    assert te.selector.grouped_names == ["c"]            # the target is not among the op's selection
    assert combo.selector.grouped_names == [("a", "c")]  # one subgroup, as nvtabular
    assert drop.selector.grouped_names == ["a", "b"]      # a '-': its output columns


def test_dependencies_parents_with_dependencies_and_children(df):
    # nvtabular: (cat + norm).dependencies == [norm] (merlin makes '+''s right operand a dependency);
    # parents_with_dependencies == [cat, norm]; TargetEncoding("t")'s dependency is a selection of t
    cat = ["a", "c"] >> ops.Categorify()
    norm = ["b"] >> ops.Normalize()
    out = cat + norm
    assert out.dependencies == [norm]
    assert out.parents_with_dependencies == [cat, norm] == out.grouped_parents_with_dependencies
    assert cat.dependencies == [] and cat.parents_with_dependencies == [cat.parents[0]]
    te = ["c"] >> ops.TargetEncoding("t")
    (dep,) = te.dependencies
    assert dep.kind == "select" and dep.selector.grouped_names == ["t"]
    assert [n.output_columns for n in te.parents_with_dependencies] == [["c"], ["t"]]
    # children: nvtabular's cat.children == [the '+' node]; out.children == []
    assert cat.children == [out] and norm.children == [out] and out.children == []
    assert cat.parents[0].children == [cat]
    computed = ["t"] >> ops.LambdaOp(lambda s: s * 2) >> ops.Rename(name="t2")
    te2 = ["c"] >> ops.TargetEncoding(computed)
    assert te2.dependencies == [computed] and computed.children == [te2]


def test_children_do_not_keep_abandoned_nodes_alive():
    import gc
    import weakref

    base = ["a"] >> ops.Normalize()
    tried = base >> ops.LogOp()  # a branch written and dropped, as in a notebook
    gone = weakref.ref(tried)
    del tried
    gc.collect()
    assert gone() is None and base.children == []


def test_children_survive_pickling_and_deepcopy():
    import copy
    import pickle

    out = (["a"] >> ops.Normalize()) + ["b"]
    for again in (pickle.loads(pickle.dumps(out)), copy.deepcopy(out)):
        assert again.output_columns == ["a", "b"]
        assert [p.children for p in again.parents] == [[again], [again]]


def test_column_mapping_is_nvtabulars(df):
    # values printed by nvtabular 23.08 after fit_schema of the same graph
    cat = ["a", "c"] >> ops.Categorify()
    te = ["c"] >> ops.TargetEncoding("t")
    combo = [["a", "c"]] >> ops.Categorify(encode_type="combo")
    cross = [["a", "c"]] >> ops.HashedCross(10)
    jg = ["a"] >> ops.JoinGroupby(cont_cols=["b"], stats=["sum", "count"])
    ren = ["a", "b"] >> ops.Rename(postfix="_r")
    drop = (["a", "b", "c"] >> ops.FillMissing()) - ["c"]
    tp.Workflow(cat + te + combo + cross + jg + ren + drop).fit_schema(tp.Dataset(df).schema)
    assert cat.column_mapping == {"a": ["a"], "c": ["c"]}
    assert te.column_mapping == {"TE_c_t": ["t", "c"]}
    assert combo.column_mapping == {"a_c": ["a", "c"]}
    assert cross.column_mapping == {"a_X_c": ["a", "c"]}
    assert jg.column_mapping == {"a_b_sum": ["b", "a"], "a_count": ["a"]}
    assert ren.column_mapping == {"a_r": ["a"], "b_r": ["b"]}
    assert drop.column_mapping == {"a": ["a"], "b": ["b"]}


def test_exportable_is_false():
    # nvtabular 23.08 CPU: exportable() of every node of these graphs is False
    node = ["a"] >> ops.Normalize()
    assert node.exportable() is False and node.exportable("ensemble") is False


# -- surgery: the workflow's outputs equal nvtabular's for the same calls --------------------------
def test_add_parent_transforms_the_new_columns_too(df, tmp_path):
    # nvtabular: n = ["a"] >> FillMissing(fill_val=-1); n.add_parent(["c"]) outputs a and c, both filled
    n = ["a"] >> ops.FillMissing(fill_val=-1)
    n.add_parent(["c"])
    got = _out(n, df, tmp_path)
    assert list(got.columns) == ["a", "c"]
    assert got["a"].tolist() == _filled(df).tolist()
    assert got["c"].tolist() == ["x", "y", "x", "z", -1]  # nvtabular's values (FillMissing of an object column)


@settings(max_examples=15, deadline=None)
@given(st.permutations(["a", "b", "t", "x"]), st.integers(1, 3))
def test_add_parent_equals_the_merge_written_with_plus(order, k):
    """Property: ``(first >> op).add_parent(rest)`` outputs what ``(first + rest) >> op`` does (merlin's
    op reads every parent's columns), on data with nulls and inf; the reference is pandas' fillna."""
    frame = pd.DataFrame({"a": [1.0, np.nan, np.inf], "b": [np.nan, 2.0, 3.0], "t": [0.0, 1.0, np.nan],
                          "x": [np.nan, np.nan, -np.inf]})
    first, rest = list(order[:k]), list(order[k:])
    edited = first >> ops.FillMissing(fill_val=-1)
    edited.add_parent(rest)
    got = tp.Workflow(edited).fit(tp.Dataset(frame)).transform(frame)
    assert list(got.columns) == first + rest
    pd.testing.assert_frame_equal(got.reset_index(drop=True), frame[first + rest].fillna(-1.0), check_dtype=False)


def test_add_parent_node_and_add_child_are_the_same_edge(df, tmp_path):
    # nvtabular S3 / S8: x.add_child(n) and n.add_parent(x) give a and the clipped b
    for how in ("add_child", "add_parent"):
        n = ["a"] >> ops.FillMissing(fill_val=-1)
        x = ["b"] >> ops.Clip(max_value=3)
        x.add_child(n) if how == "add_child" else n.add_parent(x)
        assert n in x.children
        got = _out(n, df, tmp_path / how)
        assert list(got.columns) == ["a", "b"]
        assert got["a"].tolist() == _filled(df).tolist() and got["b"].tolist() == _clipped(df).tolist()


def test_add_dependency_on_an_op_does_not_change_its_outputs(df, tmp_path):
    # nvtabular S2 / S11: the dependency's columns reach the op's frame, the op transforms its parents' only
    n = ["a"] >> ops.FillMissing(fill_val=-1)
    n.add_dependency(["b"])
    assert [d.output_columns for d in n.dependencies] == [["b"]]
    got = _out(n, df, tmp_path)
    assert list(got.columns) == ["a"] and got["a"].tolist() == _filled(df).tolist()


def test_add_dependency_on_a_merge_adds_a_branch(df, tmp_path):
    # nvtabular S5: (a + b).add_dependency(["t"]) outputs a, b, t
    a = ["a"] >> ops.FillMissing(fill_val=-1)
    b = ["b"] >> ops.Clip(max_value=3)
    c = a + b
    c.add_dependency(["t"])
    got = _out(c, df, tmp_path)
    assert list(got.columns) == ["a", "b", "t"]
    assert got["t"].tolist() == df["t"].tolist() and got["b"].tolist() == _clipped(df).tolist()


def test_remove_child_drops_a_merge_branch(df):
    # nvtabular S4: a.remove_child(a + b) leaves b; a.children is then empty
    a = ["a"] >> ops.FillMissing(fill_val=-1)
    b = ["b"] >> ops.Clip(max_value=3)
    c = a + b
    a.remove_child(c)
    assert a.children == [] and b.children == [c] and c.parents_with_dependencies == [b]
    got = _out(c, df)
    assert list(got.columns) == ["b"] and got["b"].tolist() == _clipped(df).tolist()


def test_what_tabprep_cannot_follow_raises_naming_its_spelling(df):
    a = ["a"] >> ops.FillMissing(fill_val=-1)
    b = ["b"] >> ops.Clip(max_value=3)
    c = a + b
    # nvtabular S9: b.remove_child(c) leaves b in the graph (a merlin dependency); tabprep refuses
    with pytest.raises(ValueError, match=r"dependency .*node_a \+ node_c"):
        b.remove_child(c)
    # nvtabular S10: an op left without parents fails later with IndexError
    op = a >> ops.Clip(max_value=3)
    with pytest.raises(ValueError, match="no input columns left"):
        a.remove_child(op)
    # nvtabular S7: add_child(["c"]) makes a node outside the graph (no effect)
    with pytest.raises(ValueError, match=r"node\[\[\.\.\.\]\]"):
        a.add_child(["c"])
    # nvtabular S6: a '-' given a dependency keeps other columns; tabprep refuses
    with pytest.raises(ValueError, match="node - other_node"):
        ((["a", "b"] >> ops.FillMissing()) - ["a"]).add_dependency(["b"])
    # a column group written with nodes: its columns are fixed
    group = a + [a, "t"]
    with pytest.raises(ValueError, match="column group"):
        group.dependencies[0].add_parent(["b"])
    # a cycle
    down = a >> ops.Rename(postfix="_x")
    with pytest.raises(ValueError, match="cycle"):
        a.add_parent(down)
    assert a.parents[0].kind == "select" and len(a.parents) == 1  # unchanged after the refusal
    # a node whose schemas a workflow computed is not edited under it
    wf = tp.Workflow(b)
    wf.fit(tp.Dataset(df))
    with pytest.raises(ValueError, match="before Workflow"):
        b.add_parent(["t"])


def test_compute_and_validate_schemas(df):
    # nvtabular: compute_schemas(root) sets input / output schemas; a missing column is an error
    # naming it; validate_schemas returns None
    import tabprep.workflow  # noqa: F401 - installs the schema computation (ops may not import it)

    node = ["a", "b"] >> ops.FillMissing()
    schema = tp.Dataset(df).schema
    assert node.compute_schemas(schema) is None
    assert node.input_schema.column_names == ["a", "b"] and node.output_schema.column_names == ["a", "b"]
    assert [str(c.dtype) for c in node.output_schema] == [str(df["a"].dtype), str(df["b"].dtype)]
    assert node.validate_schemas(schema) is None
    # the parents' output schemas provide the columns, also for a root schema without them (merlin's too)
    assert node.validate_schemas(tp.Schema([c for c in schema if c.name != "b"]), strict_dtypes=True) is None
    missing = ["a", "zz"] >> ops.FillMissing()
    with pytest.raises(KeyError, match="zz"):
        missing.compute_schemas(schema)
    with pytest.raises(RuntimeError, match="compute_schemas"):
        (["a"] >> ops.FillMissing()).validate_schemas(schema)
