"""Nulls where TargetEncoding / JoinGroupby differ from NVTabular 23.08, from the user's side.

tabprep keeps its semantics and says so (``NVTabularDifferenceWarning`` at fit, naming the column and
the fix) where NVTabular's numbers are a defect:

* a null (NaN) target: NVTabular's count per category is the count of the category's rows (its
  ``_category_stats`` aggregates ``count`` of the key column), the sum skips the null targets, so
  a null target weighs as a 0 (``a = [1, 1]``, ``y = [1, NaN]``: 0.5 where the non-null mean is 1);
  tabprep leaves rows with a null target out of both;
* a null key in a single column: NVTabular fits the null category with a count of 0 (the count of
  the null key column), so TargetEncoding gives ``(sum + p_smooth * mean) / p_smooth`` (inf with
  ``p_smooth=0``) and JoinGroupby a count of 0 and an inf mean; tabprep gives TargetEncoding the
  global mean and JoinGroupby the null group's own statistics.

The expected values are computed here with plain pandas.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops


def _fit(op_node, df: pd.DataFrame) -> tp.Workflow:
    wf = tp.Workflow(op_node)
    wf.fit(tp.Dataset(df, npartitions=2))
    return wf


def _out(wf: tp.Workflow, df: pd.DataFrame) -> pd.DataFrame:
    out = wf.transform(tp.Dataset(df, npartitions=2)).to_ddf().compute()
    return out.reset_index(drop=True)


def _te_reference(df: pd.DataFrame, key: str, target: str, p: float) -> np.ndarray:
    """tabprep's TE (kfold=1): rows with a null target left out of the sums and counts; a null
    or unseen key gets the mean of the non-null targets."""
    ok = df[df[target].notna() & df[key].notna()]
    gm = df[target].dropna().mean()
    g = ok.groupby(key)[target].agg(["sum", "count"])
    enc = (g["sum"] + p * gm) / (g["count"] + p)
    return df[key].map(enc).fillna(gm).to_numpy(dtype="float64")


def _no_warning_fit_transform(op_node, df: pd.DataFrame) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wf = _fit(op_node, df)
        return _out(wf, df)


# -- 1. null targets -------------------------------------------------------------------------------
NULL_TARGET = pd.DataFrame({"a": [1, 1, 2, 2, 1, 3, 3, 2],
                            "y": [1.0, np.nan, 0.0, 1.0, np.nan, 1.0, 1.0, 0.0]})


@pytest.mark.parametrize("p_smooth", [0, 20])
def test_null_target_warns_at_fit_and_keeps_tabpreps_values(p_smooth):
    df = NULL_TARGET
    with pytest.warns(tp.NVTabularDifferenceWarning, match=r"TargetEncoding.*'y'.*null") as rec:
        wf = _fit(["a"] >> ops.TargetEncoding("y", kfold=1, p_smooth=p_smooth), df)
    text = " ".join(str(w.message) for w in rec if issubclass(w.category, tp.NVTabularDifferenceWarning))
    assert "NVTabular" in text and "count" in text and ("drop" in text or "fill" in text.lower())
    out = _out(wf, df)
    np.testing.assert_allclose(out["TE_a_y"].to_numpy(dtype="float64"), _te_reference(df, "a", "y", p_smooth),
                               rtol=1e-6)
    # category 1: targets [1, NaN, NaN] -> 1.0 with p_smooth=0 (NVTabular: 1/3)
    if p_smooth == 0:
        assert out["TE_a_y"][0] == pytest.approx(1.0)


def test_null_target_warning_names_the_target_only_once_per_fit():
    df = NULL_TARGET.assign(b=[5, 5, 6, 6, 6, 5, 5, 6])
    with pytest.warns(tp.NVTabularDifferenceWarning) as rec:
        _fit(["a", "b"] >> ops.TargetEncoding("y", kfold=1), df)
    msgs = [str(w.message) for w in rec if "null" in str(w.message) and "'y'" in str(w.message)]
    assert len(msgs) == 1, msgs


def test_no_null_target_no_warning():
    df = NULL_TARGET.fillna({"y": 0.0})
    out = _no_warning_fit_transform(["a"] >> ops.TargetEncoding("y", kfold=1, p_smooth=0), df)
    np.testing.assert_allclose(out["TE_a_y"].to_numpy(dtype="float64"), _te_reference(df, "a", "y", 0), rtol=1e-6)


def test_null_target_only_in_null_key_rows_is_not_this_difference():
    # the rows with a null target have a null key: NVTabular's count of those rows is 0 anyway
    df = pd.DataFrame({"a": [1.0, 1.0, np.nan, 2.0], "y": [1.0, 0.0, np.nan, 1.0]})
    with pytest.warns(tp.NVTabularDifferenceWarning) as rec:
        _fit(["a"] >> ops.TargetEncoding("y", kfold=1), df)
    msgs = [str(w.message) for w in rec]
    assert not any("target" in m and "'y'" in m and "null (NaN) target" in m for m in msgs), msgs
    assert any("'a'" in m and "null" in m for m in msgs), msgs   # (the null key is warned)


def _same_after_load_without_warning(wf, df, tmp_path):
    """The saved and loaded workflow gives the same output and warns nothing while loading."""
    before = _out(wf, df)
    wf.save(str(tmp_path / "wf"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = tp.Workflow.load(str(tmp_path / "wf"))
        after = _out(loaded, df)
    pd.testing.assert_frame_equal(before, after)


def test_null_target_save_load_does_not_warn_again(tmp_path):
    df = NULL_TARGET
    with pytest.warns(tp.NVTabularDifferenceWarning, match="'y'"):
        wf = _fit(["a"] >> ops.TargetEncoding("y", kfold=1, p_smooth=20), df)
    _same_after_load_without_warning(wf, df, tmp_path)


# -- 2. a null key in a single column ----------------------------------------------------------------
NULL_KEY = pd.DataFrame({"s": ["x", None, None, "x", "z", None],
                         "y": [1.0, 1.0, 0.0, 0.0, 1.0, 1.0],
                         "f": [0.5, 1.5, 2.5, 4.5, 3.0, 5.0]})


@pytest.mark.parametrize("p_smooth", [0, 20])
def test_target_encoding_null_key_warns_and_gives_the_global_mean(p_smooth):
    df = NULL_KEY
    with pytest.warns(tp.NVTabularDifferenceWarning, match=r"TargetEncoding.*'s'.*null") as rec:
        wf = _fit(["s"] >> ops.TargetEncoding("y", kfold=1, p_smooth=p_smooth), df)
    text = " ".join(str(w.message) for w in rec)
    assert "count of 0" in text and "FillMissing" in text
    out = _out(wf, df)
    ref = _te_reference(df, "s", "y", p_smooth)
    np.testing.assert_allclose(out["TE_s_y"].to_numpy(dtype="float64"), ref, rtol=1e-6)
    assert np.isfinite(out["TE_s_y"].to_numpy(dtype="float64")).all()   # (NVTabular: inf with p_smooth=0)
    assert out["TE_s_y"][1] == pytest.approx(df["y"].mean())


def test_join_groupby_null_key_warns_and_gives_the_null_group_its_statistics():
    df = NULL_KEY
    with pytest.warns(tp.NVTabularDifferenceWarning, match=r"JoinGroupby.*'s'.*null") as rec:
        wf = _fit(["s"] >> ops.JoinGroupby(cont_cols=["f"], stats=["count", "sum", "mean"]), df)
    text = " ".join(str(w.message) for w in rec)
    assert "count of 0" in text and "FillMissing" in text
    out = _out(wf, df)
    g = df.groupby("s", dropna=False)["f"].agg(["size", "sum", "mean"])
    key = df["s"].fillna("\x00null")
    g.index = g.index.fillna("\x00null")
    assert out["s_count"].tolist() == key.map(g["size"]).tolist()          # null rows: 3 (NVTabular: 0)
    np.testing.assert_allclose(out["s_f_sum"].to_numpy(dtype="float64"), key.map(g["sum"]).to_numpy(dtype="float64"))
    np.testing.assert_allclose(out["s_f_mean"].to_numpy(dtype="float64"), key.map(g["mean"]).to_numpy(dtype="float64"),
                               rtol=1e-6)


def test_join_groupby_null_key_count_only_warns_too():
    with pytest.warns(tp.NVTabularDifferenceWarning, match=r"JoinGroupby.*'s'"):
        _fit(["s"] >> ops.JoinGroupby(), NULL_KEY)


def test_no_null_key_no_warning():
    df = NULL_KEY.fillna({"s": "w"})
    out = _no_warning_fit_transform(["s"] >> ops.TargetEncoding("y", kfold=1, p_smooth=0), df)
    np.testing.assert_allclose(out["TE_s_y"].to_numpy(dtype="float64"), _te_reference(df, "s", "y", 0), rtol=1e-6)
    out = _no_warning_fit_transform(["s"] >> ops.JoinGroupby(cont_cols=["f"], stats=["count", "mean"]), df)
    assert out["s_count"].tolist() == df["s"].map(df["s"].value_counts()).tolist()


def test_null_key_only_in_transformed_data_does_not_warn():
    # fitted without nulls: a null key at transform is unseen in both libraries (the global mean)
    fit_df = NULL_KEY.fillna({"s": "w"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wf = _fit(["s"] >> ops.TargetEncoding("y", kfold=1, p_smooth=0), fit_df)
        out = _out(wf, NULL_KEY)
    assert out["TE_s_y"][1] == pytest.approx(fit_df["y"].mean())


def test_group_with_null_part_keeps_its_own_single_warning():
    df = NULL_KEY.assign(t=["p", "q", "p", "q", "p", "q"])
    with pytest.warns(tp.NVTabularDifferenceWarning) as rec:
        _fit([["s", "t"]] >> ops.TargetEncoding("y", kfold=1), df)
    msgs = [str(w.message) for w in rec if "null" in str(w.message)]
    assert len(msgs) == 1 and "null part" in msgs[0], msgs


@pytest.mark.parametrize("which", ["te", "jg"])
def test_null_key_save_load_does_not_warn_again(tmp_path, which):
    df = NULL_KEY
    op = (ops.TargetEncoding("y", kfold=1, p_smooth=0) if which == "te"
          else ops.JoinGroupby(cont_cols=["f"], stats=["count", "mean"]))
    with pytest.warns(tp.NVTabularDifferenceWarning, match="'s'"):
        wf = _fit(["s"] >> op, df)
    _same_after_load_without_warning(wf, df, tmp_path)
