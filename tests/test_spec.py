"""Workflow.from_spec / to_spec: graphs, round trips, and errors naming the line, the op and the fix."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml

import tabprep as tp
from tabprep import ops
from tabprep.ops.base import Operator
from tabprep.workflow.spec import SpecError, op_signature, spec_to_yaml

ISSUE_SPEC = """\
features:
  - columns: [C1, C2]
    ops: [{Categorify: {freq_threshold: 2}}]
  - columns: [I1, I2]
    ops: [FillMissing, {Clip: {min_value: 0}}, LogOp, Normalize]
  - columns: [label]
"""


def frame(n: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    i1 = rng.normal(3, 5, n)
    i1[rng.random(n) < 0.2] = np.nan
    i2 = pd.array(rng.integers(-5, 100, n), dtype="Int64")
    i2[rng.random(n) < 0.2] = pd.NA
    c2 = rng.choice(["a", "b", "c", "d"], n).astype(object)
    c2[rng.random(n) < 0.1] = None
    return pd.DataFrame({
        "C1": rng.integers(0, 30, n), "C2": pd.Series(c2, dtype="str"), "C3": rng.integers(0, 1000, n),
        "I1": i1, "I2": i2, "u": rng.integers(0, 5, n), "v": rng.integers(3, 9, n),
        "label": rng.integers(0, 2, n),
    })


def fit_out(wf: tp.Workflow, df: pd.DataFrame) -> pd.DataFrame:
    ds = tp.Dataset(df, npartitions=3)
    wf.fit(ds)
    return wf.transform(ds).compute()


# -- building ---------------------------------------------------------------------------------
def test_issue_example_matches_python_graph(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(ISSUE_SPEC)
    wf = tp.Workflow.from_spec(str(path))
    cats = ["C1", "C2"] >> ops.Categorify(freq_threshold=2)
    conts = ["I1", "I2"] >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize()
    py = tp.Workflow(cats + conts + ["label"])
    assert wf.output_columns == py.output_columns == ["C1", "C2", "I1", "I2", "label"]
    df = frame()
    pd.testing.assert_frame_equal(fit_out(wf, df), fit_out(py, df))
    assert wf.output_schema == py.output_schema


def test_dict_json_and_text_inputs_agree(tmp_path):
    data = yaml.safe_load(ISSUE_SPEC)
    (tmp_path / "spec.json").write_text(json.dumps(data, indent="\t"))  # tabs: YAML rejects, JSON fallback
    specs = [tp.Workflow.from_spec(data), tp.Workflow.from_spec(str(tmp_path / "spec.json")),
             tp.Workflow.from_spec(ISSUE_SPEC)]
    assert all(s.to_spec() == specs[0].to_spec() for s in specs)


def test_merge_of_chains_and_shared_vocabulary():
    spec = """
features:
  - name: filled
    columns: [I1, I2]
    ops: [FillMissing]
  - columns: [{feature: filled}, C3]
    ops: [{Clip: {min_value: 0}}, Normalize]
  - columns: [[u, v]]
    ops: [Categorify]
  - columns: [label]
"""
    wf = tp.Workflow.from_spec(spec)
    filled = ["I1", "I2"] >> ops.FillMissing()
    py = tp.Workflow(((filled + ["C3"]) >> ops.Clip(min_value=0) >> ops.Normalize())
                     + ([["u", "v"]] >> ops.Categorify()) + ["label"])
    assert wf.output_columns == py.output_columns == ["I1", "I2", "C3", "u", "v", "label"]
    df = frame()
    got, want = fit_out(wf, df), fit_out(py, df)
    pd.testing.assert_frame_equal(got, want)
    # u and v share one vocabulary: equal values get equal ids
    same = df["u"] == df["v"]
    assert same.any() and (got.loc[same, "u"] == got.loc[same, "v"]).all()


def test_column_order_is_kept_with_references():
    spec = {"features": [
        {"name": "a", "columns": ["I1"], "ops": ["FillMissing"]},
        {"columns": ["C3", {"feature": "a"}, "u"], "ops": ["LogOp"]},
    ]}
    assert tp.Workflow.from_spec(spec).output_columns == ["C3", "I1", "u"]


def test_referenced_feature_is_intermediate_unless_output_true():
    spec = {"features": [
        {"name": "a", "columns": ["I1"], "ops": ["FillMissing"]},
        {"columns": [{"feature": "a"}], "ops": [{"Rename": {"postfix": "_r"}}]},
    ]}
    assert tp.Workflow.from_spec(spec).output_columns == ["I1_r"]
    spec["features"][0]["output"] = True
    assert tp.Workflow.from_spec(spec).output_columns == ["I1", "I1_r"]
    spec["features"].append({"columns": ["label"], "output": False})
    assert tp.Workflow.from_spec(spec).output_columns == ["I1", "I1_r"]


def test_drop_step_and_shorthand_entries():
    spec = {"features": [{"columns": ["I1", "I2"], "ops": [{"FillMissing": {"add_binary_cols": True}},
                                                            {"drop": ["I2_filled"]}]}, "label", ["u", "v"]]}
    assert tp.Workflow.from_spec(spec).output_columns == ["I1", "I2", "I1_filled", "label", "u", "v"]


def test_importable_function_parameter():
    spec = {"features": [{"columns": ["C3"], "ops": [{"LambdaOp": {"f": {"import": "conftest:double"}}}]}]}
    wf = tp.Workflow.from_spec(spec)
    out = fit_out(wf, frame())
    assert (out["C3"] == frame()["C3"] * 2).all()
    assert wf.to_spec()["features"][0]["ops"] == [{"LambdaOp": {"f": {"import": "conftest:double"}}}]


class AddOne(Operator):
    """An unregistered op, named in specs by import path."""

    def __init__(self, amount: int = 1) -> None:
        self.amount = amount

    def transform(self, columns, df):
        return df[columns] + self.amount


def test_custom_op_by_import_path():
    wf = tp.Workflow(["C3"] >> AddOne(amount=5))
    spec = wf.to_spec()
    name = next(iter(spec["features"][0]["ops"][0]))
    assert name.endswith(":AddOne")
    wf2 = tp.Workflow.from_spec(spec)
    assert (fit_out(wf2, frame())["C3"] == frame()["C3"] + 5).all()


# -- round trips -------------------------------------------------------------------------------
def graphs():
    shared = ["I1"] >> ops.FillMissing(fill_val=-1)
    return {
        "issue": lambda: tp.Workflow.from_spec(ISSUE_SPEC),
        "merge": lambda: tp.Workflow([((["I1", "I2"] >> ops.FillMissing()) + ["C3"]) >> ops.Normalize(), "label"]),
        "shared": lambda: tp.Workflow([shared, shared >> ops.Rename(postfix="_r")]),
        "shared_output_after_use": lambda: tp.Workflow([(s := ["I1"] >> ops.FillMissing()) >> ops.LogOp()
                                                        >> ops.Rename(postfix="_log"), s]),
        "groups": lambda: tp.Workflow([[["u", "v"], "C1"] >> ops.Categorify(max_size=10, num_oov_buckets=3),
                                       "label"]),
        "params": lambda: tp.Workflow([["C1", "C3"] >> ops.HashBucket(num_buckets={"C1": 10, "C3": 7},
                                                                        embedding_dim=4),
                                       (["I1", "I2"] >> ops.FillMissing(add_binary_cols=True)) - ["I2_filled"]]),
    }


@pytest.mark.parametrize("name", list(graphs()))
def test_round_trip(name, tmp_path):
    wf = graphs()[name]()
    spec = wf.to_spec()
    wf2 = tp.Workflow.from_spec(spec)
    assert wf2.output_columns == wf.output_columns
    assert wf2.to_spec() == spec
    # through text files too
    for fname in ("spec.yaml", "spec.json"):
        wf.to_spec(str(tmp_path / fname))
        assert tp.Workflow.from_spec(str(tmp_path / fname)).to_spec() == spec
    df = frame()
    pd.testing.assert_frame_equal(fit_out(wf, df), fit_out(wf2, df))


def test_round_trip_keeps_feature_names_and_defaults_are_left_out():
    spec = {"features": [
        {"name": "filled", "columns": ["I1"], "ops": [{"FillMissing": {"fill_val": 0}}]},
        {"columns": [{"feature": "filled"}, "C3"], "ops": ["Normalize"]},
    ]}
    out = tp.Workflow.from_spec(spec).to_spec()
    assert out["features"][0] == {"name": "filled", "columns": ["I1"], "ops": ["FillMissing"]}
    assert out["features"][1]["columns"] == [{"feature": "filled"}, "C3"]


def test_saved_workflow_round_trips(tmp_path):
    wf = tp.Workflow.from_spec(ISSUE_SPEC)
    fit_out(wf, frame())
    wf.save(str(tmp_path / "wf"))
    assert tp.Workflow.load(str(tmp_path / "wf")).to_spec() == wf.to_spec()


def test_yaml_output_is_readable():
    text = spec_to_yaml(tp.Workflow.from_spec(ISSUE_SPEC).to_spec())
    assert "columns: [C1, C2]" in text and "Clip: {min_value: 0}" in text
    assert yaml.safe_load(text)["features"][2] == {"columns": ["label"]}


# -- to_spec refusals ----------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda: ["C3"] >> ops.LambdaOp(lambda c: c + 1),
    lambda: ["C3", "label"] >> ops.Filter(lambda df: df["label"] > 0),
    lambda: ["C3"] >> ops.Rename(f=lambda n: n + "_x"),
])
def test_to_spec_refuses_lambdas(make):
    wf = tp.Workflow([make(), "I1"])
    with pytest.raises(SpecError) as info:
        wf.to_spec()
    msg = str(info.value)
    assert "cannot write" in msg and ("lambda" in msg or "importable" in msg)


def test_to_spec_refuses_local_op_class():
    class Local(Operator):
        def transform(self, columns, df):
            return df[columns]

    with pytest.raises(SpecError, match="neither registered"):
        tp.Workflow(["C3"] >> Local()).to_spec()


# -- errors ------------------------------------------------------------------------------------------
ERRORS = [
    # (spec text, line, fragments of the message)
    ("features:\n  - columns: [C1]\n    ops:\n      - Categorfy: {freq_threshold: 2}\n", 4,
     ["unknown op 'Categorfy'", "features[0].ops[0]", "did you mean 'Categorify'"]),
    ("features:\n  - columns: [a]\n    ops: [normalize]\n", 3, ["unknown op 'normalize'", "'Normalize'"]),
    ("features:\n  - columns: [a]\n    ops: [Nothing]\n", 3, ["unknown op 'Nothing'", "known ops are", "Categorify"]),
    ("features:\n  - columns: [a]\n    ops:\n      - Clip: {min: 0}\n", 4,
     ["Clip has no parameter 'min'", "did you mean 'min_value'", "signature: Clip(min_value"]),
    ("features:\n  - columns: [a]\n    ops:\n      - Clip: {min_value: 5, max_value: 1}\n", 4,
     ["invalid parameters for Clip", "greater than", "signature: Clip("]),
    ("features:\n  - columns: [a]\n    ops: [HashBucket]\n", 3,
     ["bad parameters for HashBucket", "num_buckets", "signature: HashBucket(num_buckets"]),
    ("features:\n  - columns: [a]\n    ops:\n      - Clip:\n        min_value: 0\n", 4,
     ["several keys", "not indented", "{Clip: {min_value: 0}}"]),
    ("features:\n  - columns: [a\n    ops: [LogOp]\n", 3, ["invalid YAML"]),
    ("features:\n  - name: ab\n    columns: [a]\n  - columns: [{feature: abc}]\n", 4,
     ["no feature is named 'abc'", "did you mean 'ab'"]),
    ("features:\n  - name: p\n    columns: [{feature: q}]\n  - name: q\n    columns: [{feature: p}]\n", 2,
     ["cycle", "p -> q -> p"]),
    ("features:\n  - columns: [a, 1]\n", 2, ["column name 1 is not a string", "quote"]),
    ("features:\n  - columns: [a, yes]\n", 2, ["booleans", "quote"]),
    ("features:\n  - column: [a]\n", 2, ["unknown key 'column'", "did you mean 'columns'"]),
    ("features:\n  - columns: [a]\n    Categorify: {}\n", 3, ["'Categorify' is an op", "ops: list"]),
    ("feature:\n  - columns: [a]\n", 1, ["unknown top-level key 'feature'", "did you mean 'features'"]),
    ("features:\n  - columns: [a]\n  - columns: [a]\n    ops: [LogOp]\n", 3, ["duplicate output columns", "'a'"]),
    ("features:\n  - columns: [a]\n    ops: [{drop: [b]}]\n", 3, ["no column 'b' to drop"]),
    ("features:\n  - columns: [a, b]\n    ops: [{Rename: {name: z}}]\n", 3, ["Rename cannot be applied", "exactly one"]),
    ("features:\n  - name: x\n    columns: [a]\n  - name: x\n    columns: [b]\n", 4, ["'x' is used twice", "line 2"]),
    ("features: []\n", 1, ["non-empty list"]),
    ("version: 7\nfeatures:\n  - columns: [a]\n", 1, ["version 7"]),
    ("features:\n  - ops: [LogOp]\n", 2, ["no 'columns:'"]),
    ("features:\n  - columns: [a]\n    ops: [LogOp]\n    ops: [Normalize]\n", 4, ["'ops' appears twice", "line 3"]),
]


@pytest.mark.parametrize("text,line,fragments", ERRORS, ids=[e[2][0][:30] for e in ERRORS])
def test_errors_name_line_op_and_fix(tmp_path, text, line, fragments):
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as info:
        tp.Workflow.from_spec(str(path))
    msg = str(info.value)
    assert msg.startswith(f"{path} line "), msg
    assert info.value.line == line, msg
    for frag in fragments:
        assert frag in msg, (frag, msg)


def test_errors_without_a_file_name_where():
    with pytest.raises(SpecError, match=r"^features\[0\]\.ops\[0\]|unknown op 'Foo' in features\[0\]\.ops\[0\]"):
        tp.Workflow.from_spec({"features": [{"columns": ["a"], "ops": ["Foo"]}]})


def test_missing_or_empty_spec_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        tp.Workflow.from_spec(str(tmp_path / "nope.yaml"))
    (tmp_path / "empty.yaml").write_text("# nothing\n")
    with pytest.raises(SpecError, match="empty"):
        tp.Workflow.from_spec(str(tmp_path / "empty.yaml"))
    with pytest.raises(SpecError, match="is a folder"):
        tp.Workflow.from_spec(str(tmp_path))


def test_every_registered_op_has_a_printable_signature():
    for name, cls in ops.registered_ops().items():
        assert op_signature(cls).startswith(name + "(")
