"""A column selected alone and inside a column group keeps both outputs, as NVTabular 23.08's
``ColumnSelector.grouped_names`` (merlin/dag/selector.py: plain names first, then each subgroup)
feeds ``Categorify.column_mapping`` (nvtabular/ops/categorify.py, encode_type="combo") and
``TargetEncoding.column_mapping`` (nvtabular/ops/target_encoding.py: ``TE_<a>_<b>_<target>``)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops
from tabprep.testing import check_op

from conftest import make_dataset, to_pandas


def _frame():
    return pd.DataFrame({
        "b": ["x", "y", "x", None, "y", "x", "z", "x"],
        "c": [1, 1, 2, 2, 1, 1, 2, None],
        "num": [1.0, 0.0, 3.0, 5.0, 2.0, 1.0, 4.0, 6.0],
    })


def _is_bijective(codes: pd.Series, keys: pd.DataFrame) -> bool:
    """Same key -> same code and different keys -> different codes (nulls count as a key)."""
    k = keys.astype(object).where(keys.notna(), "<NA>").astype(str).agg("|".join, axis=1)
    pairs = pd.DataFrame({"k": k.to_numpy(), "v": codes.to_numpy()}).drop_duplicates()
    return pairs["k"].is_unique and pairs["v"].is_unique


def test_combo_column_alone_and_in_group(backend):
    """["b", "c", ["b", "c"]] >> Categorify(encode_type="combo") outputs b, c and b_c
    (Categorify.column_mapping over grouped_names)."""
    df = _frame().dropna().reset_index(drop=True)  # combos with a null part: test_ops_categorify.py
    wf = tp.Workflow(["b", "c", ["b", "c"]] >> ops.Categorify(encode_type="combo"))
    out = to_pandas(wf.fit_transform(make_dataset(df, backend, nparts=3)).to_ddf().compute())
    assert list(out.columns) == ["b", "c", "b_c"]
    assert wf.output_schema.column_names == ["b", "c", "b_c"]
    assert _is_bijective(out["b"], df[["b"]])
    assert _is_bijective(out["c"], df[["c"]])
    assert _is_bijective(out["b_c"], df[["b", "c"]])


def test_combo_column_alone_and_in_group_warns_that_its_table_is_its_own(backend, tmp_path, monkeypatch):
    """NVTabular 23.08 (checked on 23.8.0) writes the group's domain (``name: b_c``, max 8) into
    ``b``'s and ``c``'s schema, so ``get_embedding_sizes`` sizes their tables by the group's
    vocabulary; tabprep gives each output its own (docs/migration.md). Building such a workflow
    warns once, naming the columns and the group, and saying the ids are the same; loading the
    saved workflow does not warn again; a selection without such a column says nothing."""
    import warnings

    from tabprep import _warn

    monkeypatch.setattr(_warn, "_ONCE", set())
    df = _frame()

    def notes_of(build):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            result = build()
        return result, [str(w.message) for w in rec if issubclass(w.category, tp.NVTabularDifferenceWarning)
                        and "b_c" in str(w.message)]

    def fitted():
        wf = tp.Workflow(["b", "c", ["b", "c"]] >> ops.Categorify(encode_type="combo"))
        out = to_pandas(wf.fit_transform(make_dataset(df, backend, nparts=3)).to_ddf().compute())
        return wf, out

    (wf, out), notes = notes_of(fitted)
    assert len(notes) == 1, notes
    assert "'b'" in notes[0] and "'c'" in notes[0] and "ids are the same" in notes[0]
    # values unchanged: each column's ids are those of its own Categorify, the group's of the group alone
    alone = to_pandas(tp.Workflow(["b", "c"] >> ops.Categorify()).fit_transform(make_dataset(df, backend))
                      .to_ddf().compute())
    group = to_pandas(tp.Workflow([["b", "c"]] >> ops.Categorify(encode_type="combo"))
                      .fit_transform(make_dataset(df, backend)).to_ddf().compute())
    np.testing.assert_array_equal(out["b"].to_numpy(), alone["b"].to_numpy())
    np.testing.assert_array_equal(out["c"].to_numpy(), alone["c"].to_numpy())
    np.testing.assert_array_equal(out["b_c"].to_numpy(), group["b_c"].to_numpy())
    # each output's table is its own vocabulary's: 0 pad, 1 null, 2 OOV, then the distinct values
    assert wf.output_schema["b"].properties["cardinality"] == df["b"].nunique() + 3
    assert wf.output_schema["c"].properties["cardinality"] == df["c"].nunique() + 3
    wf.save(str(tmp_path / "wf"))
    _, notes = notes_of(lambda: tp.Workflow.load(str(tmp_path / "wf")))
    assert notes == []                                  # the graph's author saw it when building
    for sel in ([["b", "c"]], ["b", "c"], ["num", ["b", "c"]]):
        _, notes = notes_of(lambda: tp.Workflow(sel >> ops.Categorify(encode_type="combo"))
                            .fit(make_dataset(df, backend)))
        assert notes == [], sel                          # no column alone and in its group


def test_names_before_groups_order():
    """grouped_names lists the plain names first, then the subgroups: [["b", "c"], "num"] gives num, b_c."""
    wf = tp.Workflow([["b", "c"], "num"] >> ops.Categorify(encode_type="combo"))
    wf.fit(tp.Dataset(_frame()))
    assert wf.output_schema.column_names == ["num", "b_c"]


def test_target_encoding_column_alone_and_in_group(backend):
    """TargetEncoding over ["b", "c", ["b", "c"]] outputs TE_b_num, TE_c_num and TE_b_c_num
    (TargetEncoding.column_mapping: f"TE_{'_'.join(group)}_{target}"), each the smoothed mean of
    the target per category: (sum + p_smooth * mean) / (count + p_smooth)."""
    df = _frame().dropna().reset_index(drop=True)
    wf = tp.Workflow(["b", "c", ["b", "c"]] >> ops.TargetEncoding("num", kfold=1, p_smooth=2))
    ds = make_dataset(df, backend, nparts=2)
    wf.fit(ds)
    out = to_pandas(wf.transform(ds).to_ddf().compute())
    assert list(out.columns) == ["TE_b_num", "TE_c_num", "TE_b_c_num"]
    mean = df["num"].mean()
    for name, keys in [("TE_b_num", ["b"]), ("TE_c_num", ["c"]), ("TE_b_c_num", ["b", "c"])]:
        g = df.groupby(keys)["num"].agg(["sum", "count"])
        ref = ((g["sum"] + 2 * mean) / (g["count"] + 2)).rename("ref")
        expect = df[keys].join(ref, on=keys)["ref"]
        np.testing.assert_allclose(out[name].to_numpy(dtype="float64"), expect.to_numpy(), rtol=1e-6)


def test_join_groupby_column_alone_and_in_group():
    """JoinGroupby over ["b", ["b", "c"]] gives b's and b_c's statistics (JoinGroupby.column_mapping
    over grouped_names, nvtabular/ops/join_groupby.py)."""
    df = _frame().dropna().reset_index(drop=True)
    wf = tp.Workflow(["b", ["b", "c"]] >> ops.JoinGroupby(cont_cols=["num"], stats=["count"]))
    out = wf.fit_transform(tp.Dataset(df)).to_ddf().compute()
    assert list(out.columns) == ["b_count", "b_c_count"]
    assert out["b_count"].tolist() == df.groupby("b")["num"].transform("count").tolist()
    assert out["b_c_count"].tolist() == df.groupby(["b", "c"])["num"].transform("count").tolist()


def test_joint_encoding_cannot_honour_alone_and_in_group():
    """encode_type="joint" outputs one column per input name, so "b" alone and "b" in a shared
    vocabulary with "c" would need two "b" outputs: an error naming the column, never one of them."""
    with pytest.raises(ValueError, match="'b'"):
        tp.Workflow(["b", ["b", "c"]] >> ops.Categorify()).fit(tp.Dataset(_frame().astype({"c": str})))


def test_check_op_combo_with_single_and_group():
    """The conformance battery on a combo selection holding a column alone and in a group."""
    check_op(ops.Categorify(encode_type="combo"), columns=["i", "s", ["i", "s"]])
