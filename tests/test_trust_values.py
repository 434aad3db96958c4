"""Issue #11, values side: the transform contract on datasets, loaders, serving and the CLI;
non-finite statistics of the other stat ops; combo keys across save/load and serving.

References are plain pandas/numpy/mmh3 written here.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import tabprep as tp
from tabprep import ops
from tabprep.cli.main import cli

from conftest import mmh3_u32


def _ints(n: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"C1": rng.integers(0, 40, n).astype("int64"), "C2": rng.integers(0, 1000, n).astype("int64"),
                         "label": rng.integers(0, 2, n).astype("int64")})


def _wf() -> tp.Workflow:
    return tp.Workflow((["C1"] >> ops.Categorify()) + (["C2"] >> ops.HashBucket(num_buckets=97)) + ["label"])


# -- the contract on datasets, loaders' transform_frame, nullable and list columns ------------------
def test_dataset_with_a_drifted_column_is_refused_naming_it(tmp_path):
    df = _ints()
    wf = _wf().fit(df)
    df.assign(C2=df["C2"].astype("float64")).to_parquet(tmp_path / "d.parquet")
    with pytest.raises(TypeError, match=r"(?s)C2.*int64.*float64.*cast=True"):
        wf.transform(tp.Dataset(str(tmp_path / "d.parquet")))
    out = wf.transform(tp.Dataset(str(tmp_path / "d.parquet")), cast=True).compute()
    assert out["C2"].tolist() == [mmh3_u32(int(v)) % 97 for v in df["C2"]]


def test_transform_frame_checks_the_contract_too():
    df = _ints()
    wf = _wf().fit(df)
    with pytest.raises(TypeError, match=r"C1"):
        wf.transform_frame(df.assign(C1=df["C1"].astype(str)))
    # the memo of checked dtypes does not let a later drift through
    wf.transform_frame(df)
    with pytest.raises(TypeError, match=r"C1"):
        wf.transform_frame(df.assign(C1=df["C1"].astype(str)))


def test_nullable_ints_are_the_same_kind_with_identical_ids():
    df = _ints()
    wf = _wf().fit(df)
    a = wf.transform(df)
    nullable = df.assign(C1=df["C1"].astype("Int64"), C2=df["C2"].astype("Int32"))
    b = wf.transform(nullable)
    assert a["C1"].tolist() == b["C1"].tolist() and a["C2"].tolist() == b["C2"].tolist()


def test_cast_keeps_nulls_and_refuses_non_numeric_strings():
    df = _ints()
    wf = _wf().fit(df)
    ref = wf.transform(df)
    s = df["C1"].astype(str).astype(object)
    s[4] = None
    got = wf.transform(df.assign(C1=s), cast=True)
    assert got["C1"][4] == 1  # null id
    assert got["C1"].drop(index=4).tolist() == ref["C1"].drop(index=4).tolist()
    bad = df["C1"].astype(str).astype(object)
    bad[7] = "abc"
    with pytest.raises(ValueError, match=r"C1.*abc"):
        wf.transform(df.assign(C1=bad), cast=True)


def test_a_scalar_for_a_list_column_is_refused_even_with_cast():
    df = pd.DataFrame({"g": pd.Series([[1, 2], [3], []], dtype=pd.ArrowDtype(pa.list_(pa.int64())))})
    wf = tp.Workflow(["g"] >> ops.Categorify()).fit(df)
    with pytest.raises(TypeError, match=r"g.*list"):
        wf.transform(pd.DataFrame({"g": [1, 2, 3]}), cast=True)


def test_stateless_workflow_is_bound_by_its_first_transform_only():
    df = _ints()
    wf = tp.Workflow(["C2"] >> ops.HashBucket(num_buckets=97))
    wf.transform(df)
    with pytest.raises(TypeError, match=r"C2"):
        wf.transform(df.assign(C2=df["C2"].astype(str)))


# -- CLI: transform --cast ---------------------------------------------------------------------------
def test_cli_transform_refuses_drift_and_casts_with_flag(tmp_path):
    df = _ints()
    df.to_parquet(tmp_path / "train.parquet")
    spec = tmp_path / "spec.yaml"
    spec.write_text("features:\n  - columns: [C2]\n    ops: [{HashBucket: {num_buckets: 97}}]\n  - columns: [label]\n")
    r = CliRunner().invoke(cli, ["fit", str(spec), str(tmp_path / "train.parquet"), "--out", str(tmp_path / "wf")])
    assert r.exit_code == 0, r.output
    df.assign(C2=df["C2"].astype("float64")).to_parquet(tmp_path / "csvish.parquet")
    r = CliRunner().invoke(cli, ["transform", str(tmp_path / "wf"), str(tmp_path / "csvish.parquet"),
                                 "--out", str(tmp_path / "out")])
    assert r.exit_code != 0
    assert "C2" in r.output and "float64" in r.output and "--cast" in r.output
    assert not (tmp_path / "out").exists()
    r = CliRunner().invoke(cli, ["transform", str(tmp_path / "wf"), str(tmp_path / "csvish.parquet"),
                                 "--out", str(tmp_path / "out"), "--cast"])
    assert r.exit_code == 0, r.output
    got = pd.read_parquet(tmp_path / "out")
    assert got["C2"].tolist() == [mmh3_u32(int(v)) % 97 for v in df["C2"]]


# -- non-finite values in the other stat ops ---------------------------------------------------------
def test_target_encoding_ignores_infinite_targets():
    df = pd.DataFrame({"c": ["a", "a", "b", "b", "a"], "y": [1.0, np.inf, 0.0, 1.0, 0.0]})
    wf = tp.Workflow(["c"] >> ops.TargetEncoding("y", kfold=1, p_smooth=0)).fit(df)
    out = wf.transform(df)["TE_c_y"].tolist()
    # finite targets only: a -> mean(1, 0) = 0.5, b -> mean(0, 1) = 0.5
    assert out == pytest.approx([0.5, 0.5, 0.5, 0.5, 0.5])


def test_join_groupby_stats_ignore_inf():
    df = pd.DataFrame({"c": ["a", "a", "a", "b"], "x": [1.0, 3.0, np.inf, -np.inf]})
    wf = tp.Workflow(["c"] >> ops.JoinGroupby(cont_cols=["x"], stats=["mean", "max"])).fit(df)
    out = wf.transform(df)
    assert out["c_x_mean"].tolist()[:3] == [2.0, 2.0, 2.0]
    assert out["c_x_max"].tolist()[:3] == [3.0, 3.0, 3.0]
    assert np.isnan(out["c_x_mean"].iloc[3])


def test_normalize_keeps_inf_at_transform_as_documented():
    df = pd.DataFrame({"x": [1.0, 2.0, 3.0, np.inf, -np.inf]})
    out = tp.Workflow(["x"] >> ops.Normalize()).fit(df).transform(df)["x"].to_numpy()
    assert out[3] == np.inf and out[4] == -np.inf


# -- combo keys: save/load, older saved format, serving ------------------------------------------------
COLLIDING = pd.DataFrame({"a": ["x\x1fy", "x", "x\x1fy"], "b": ["z", "y\x1fz", "q"]})


def test_combo_ids_survive_save_load(tmp_path):
    wf = tp.Workflow([["a", "b"]] >> ops.Categorify(encode_type="combo")).fit(COLLIDING)
    wf.save(str(tmp_path / "wf"))
    ids = tp.Workflow.load(str(tmp_path / "wf")).transform(COLLIDING)["a_b"].tolist()
    assert ids == wf.transform(COLLIDING)["a_b"].tolist()
    assert len(set(ids)) == 3


def _parts(key):
    """The parts of a current-format combined key (every part written as ``<len>:<part>\\x1f``)."""
    out = []
    while key:
        n, rest = key.split(":", 1)
        out.append(rest[:int(n)])
        key = rest[int(n) + 1:]
    return out


def test_combo_vocabulary_of_the_older_format_keeps_its_ids(tmp_path):
    """A vocabulary saved before the injective format (keys joined by \\x1f alone) loads with that format."""
    df = pd.DataFrame({"a": ["p", "q", "p"], "b": ["r", "s", "s"]})
    op = ops.Categorify(encode_type="combo")
    wf = tp.Workflow([["a", "b"]] >> op).fit(df)
    meta = op.save_state(tmp_path / "st")
    # rewrite it as an older version wrote it: old-format keys, no combo_key_format
    for key, m in meta["vocabularies"].items():
        for f in m["files"]:
            t = pq.read_table(tmp_path / "st" / f)
            old = ["\x1f".join(_parts(v)) for v in t.column("value").to_pylist()]  # "1:p\x1f1:r\x1f" -> "p\x1fr"
            pq.write_table(pa.table({"value": old, "count": t.column("count")}), tmp_path / "st" / f)
    meta.pop("combo_key_format")
    old_op = ops.Categorify(encode_type="combo")
    old_op.input_groups = op.input_groups
    old_op.load_state(tmp_path / "st", meta)
    assert old_op._combo_format == 1
    node = wf.nodes[-1]
    got = old_op.transform(node.input_columns, df)["a_b"].tolist()
    assert got == wf.transform(df)["a_b"].tolist()
    assert "combo_key_format" in json.dumps(op.save_state(tmp_path / "st2"))


def test_serving_combo_keys_match_offline():
    from tabprep.serving import ServingTransform

    wf = tp.Workflow([["a", "b"]] >> ops.Categorify(encode_type="combo")).fit(COLLIDING)
    offline = wf.transform(COLLIDING)["a_b"].tolist()
    st = ServingTransform(wf)
    batch = st.transform_batch({"a": COLLIDING["a"].tolist(), "b": COLLIDING["b"].tolist()})
    assert np.asarray(batch["a_b"]).ravel().tolist() == offline
    rows = [np.asarray(st.transform_row({"a": a, "b": b})["a_b"]).ravel().tolist()[0]
            for a, b in zip(COLLIDING["a"], COLLIDING["b"])]
    assert rows == offline


# -- spec refusal instead of a spec that cannot load -------------------------------------------------
def test_to_spec_refuses_an_in_memory_side_table():
    side = pd.DataFrame({"k": [1, 2], "v": [0.5, 1.5]})
    wf = tp.Workflow(["k"] >> ops.JoinExternal(side, on="k"))
    with pytest.raises(ValueError, match=r"JoinExternal.*in-memory"):
        wf.to_spec()


# -- check_op on an unregistered op -------------------------------------------------------------------
class Plain(tp.ops.base.Operator, register=False):
    def transform(self, columns, df):
        return df[columns] * 1


def test_check_op_refuses_unregistered_ops_unless_allowed():
    from tabprep.testing import check_op

    with pytest.raises(AssertionError, match=r"save/load round trip.*not registered"):
        check_op(Plain())
    check_op(Plain(), allow_unregistered=True)


def test_categorical_and_string_columns_are_the_same_kind(tmp_path):
    df = pd.DataFrame({"c": pd.Categorical(["a", "b", "a", None]), "x": [1, 2, 3, 4]})
    wf = tp.Workflow(["c"] >> ops.Categorify()).fit(df)
    a = wf.transform(df)["c"].tolist()
    assert wf.transform(df.assign(c=df["c"].astype(object)))["c"].tolist() == a
    df.to_parquet(tmp_path / "c.parquet")  # read back as strings
    assert wf.transform(tp.Dataset(str(tmp_path / "c.parquet"))).compute()["c"].tolist() == a


# -- the same on cuDF (the lead's GPU run) -------------------------------------------------------------
from conftest import BACKENDS, frame_on, to_pandas  # noqa: E402


@pytest.mark.parametrize("backend", BACKENDS)
def test_contract_cast_and_nonfinite_on_each_backend(backend):
    df = _ints()
    wf = _wf().fit(frame_on(df, backend))
    drifted = frame_on(df.assign(C2=df["C2"].astype("float64"), C1=df["C1"].astype(str)), backend)
    with pytest.raises(TypeError, match=r"C1|C2"):
        wf.transform(drifted)
    got = to_pandas(wf.transform(drifted, cast=True))
    assert got["C2"].tolist() == [mmh3_u32(int(v)) % 97 for v in df["C2"]]
    assert got["C1"].tolist() == to_pandas(wf.transform(frame_on(df, backend)))["C1"].tolist()
    lossy = df.assign(C2=df["C2"].astype("float64"))
    lossy.loc[3, "C2"] = 2.5
    with pytest.raises(ValueError, match=r"C2"):
        wf.transform(frame_on(lossy, backend), cast=True)
    x = pd.DataFrame({"x": [1.0, 2.0, np.inf, 3.0, -np.inf, 10.0]})
    out = to_pandas(tp.Workflow(["x"] >> ops.Normalize()).fit(frame_on(x, backend)).transform(frame_on(x, backend)))
    finite = np.array([1.0, 2.0, 3.0, 10.0])
    np.testing.assert_allclose(out["x"].to_numpy()[[0, 1, 3, 5]], ((finite - finite.mean()) / finite.std(ddof=1)),
                               rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_combo_keys_injective_on_each_backend(backend):
    wf = tp.Workflow([["a", "b"]] >> ops.Categorify(encode_type="combo")).fit(frame_on(COLLIDING, backend))
    ids = to_pandas(wf.transform(frame_on(COLLIDING, backend)))["a_b"].tolist()
    cpu = tp.Workflow([["a", "b"]] >> ops.Categorify(encode_type="combo")).fit(COLLIDING).transform(COLLIDING)
    assert ids == cpu["a_b"].tolist() and len(set(ids)) == 3


def test_cast_to_64_bit_ints_never_rounds_through_float64():
    """cast=True took float64 ids beyond 2**53 (a csv int column with a null is read as float64:
    2**53 + 1 arrives as 2**53) and strings with a null went through float64 too: either way the row
    got another category's id, silently (adversarial review, 2026-11-29)."""
    big = 2**53 + 1
    fit = pd.DataFrame({"id": np.array([2**53, big, big, 5], dtype="int64")})
    wf = tp.Workflow(["id"] >> ops.Categorify()).fit(fit)
    want = wf.transform(pd.DataFrame({"id": pd.array([big, None, 5], dtype="Int64")}))["id"].tolist()
    strings = pd.Series([str(big), None, "5"], dtype=object)
    assert wf.transform(pd.DataFrame({"id": strings}), cast=True)["id"].tolist() == want
    floats = pd.Series([float(big), np.nan, 5.0])
    with pytest.raises(ValueError, match=r"'id'.*2\*\*53.*float64"):
        wf.transform(pd.DataFrame({"id": floats}), cast=True)
    small = pd.Series([3.0, np.nan, 5.0])   # below 2**53 floats are exact: cast as before
    assert wf.transform(pd.DataFrame({"id": small}), cast=True)["id"].tolist()[1] == 1


@pytest.mark.parametrize("fit_dtype,given_dtype", [("int64", "uint64"), ("uint64", "int64"), ("int32", "uint64")])
def test_uint64_against_signed_ints_is_refused_unless_cast(fit_dtype, given_dtype):
    """Integer vocabularies are looked up by int64 bits: uint64 2**64 - 5 found int64 -5's id (and the
    other way round), silently; TargetEncoding and JoinGroupby likewise (adversarial review). The
    contract now refuses the pair; cast=True converts exactly and refuses what does not fit."""
    fit_values = [-5, -5, 3, 3, 3] if fit_dtype != "uint64" else [2**64 - 5, 2**64 - 5, 3, 3, 3]
    wf = tp.Workflow(["c"] >> ops.Categorify()).fit(pd.DataFrame({"c": np.array(fit_values, dtype=fit_dtype)}))
    given = np.array([2**64 - 5, 3] if given_dtype == "uint64" else [-5, 3], dtype=given_dtype)
    with pytest.raises(TypeError, match=rf"c \({fit_dtype} -> {given_dtype}\)"):
        wf.transform(pd.DataFrame({"c": given}))
    with pytest.raises(ValueError, match="'c'"):   # the value the fitted dtype cannot hold: refused
        wf.transform(pd.DataFrame({"c": given}), cast=True)
    ok = np.array([3, 3], dtype=given_dtype)
    assert wf.transform(pd.DataFrame({"c": ok}), cast=True)["c"].tolist() == [3, 3]   # 3 is the most frequent: id 3


def test_a_joint_vocabulary_over_uint64_and_signed_ints_is_refused():
    """[["a" (int64), "b" (uint64)]] >> Categorify() counted -5 and 2**64 - 5 as one value (one id,
    frequency 2): a joint vocabulary compares int64 bits (adversarial review)."""
    df = pd.DataFrame({"a": pd.Series([-5, 1, 1], dtype="int64"),
                       "b": pd.Series(np.array([2**64 - 5, 7, 7], dtype="uint64"))})
    with pytest.raises(TypeError, match=r"\['a', 'b'\].*uint64.*int64"):
        tp.Workflow([["a", "b"]] >> ops.Categorify()).fit(df)
