"""JoinExternal with the side table's own key names (``on_ext``) listed in ``columns_ext``.

NVTabular 23.08 selects ``columns_ext`` from the side table and merges with ``left_on=on,
right_on=on_ext``: the side key must be in ``columns_ext`` (a KeyError without it) and is output
under its own name after the selected columns, in ``columns_ext``'s order, holding the side
table's key (equal to the data's key where a row matched, null where none did). tabprep gives the
same columns and values; integer side columns of a left join are nullable where NVTabular makes
them float64 (tabprep's documented rule for every integer side column).

References: pandas ``merge(left_on=, right_on=)``, row order kept.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

DIFF = tp.NVTabularDifferenceWarning


def _df():
    return pd.DataFrame({"k": np.array([3, 1, 2, 9], dtype="int32"), "v": [0, 1, 2, 3]})


def _side():
    return pd.DataFrame({"kk": np.array([1, 2, 3], dtype="int64"), "w": [10.0, 20.0, 30.0],
                         "junk": pd.Series(["a", "b", "c"], dtype="str")})


def _ref(df, side, on, on_ext, columns_ext, how="left"):
    """pandas: the selected columns, then ``columns_ext`` of the side row matched by key (row order kept)."""
    left = df.reset_index(drop=True).assign(__row=np.arange(len(df)))
    m = left.merge(side[columns_ext], left_on=on, right_on=on_ext, how=how).sort_values("__row")
    return m[list(df.columns) + [c for c in columns_ext if c not in df.columns]].reset_index(drop=True)


def _floats(s):
    return pd.Series(s).to_numpy(dtype="float64", na_value=np.nan)


def _build(node_fn):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        wf = tp.Workflow(node_fn())
    return wf, [str(w.message) for w in rec if issubclass(w.category, DIFF)]


@pytest.mark.parametrize("columns_ext", [["kk", "w"], ["w", "kk"]])
def test_side_key_in_columns_ext_is_output_as_nvtabular(columns_ext, tmp_path):
    wf, said = _build(lambda: ["k", "v"] >> ops.JoinExternal(_side(), on="k", on_ext="kk", columns_ext=columns_ext))
    assert not [m for m in said if "not output" in m]   # kk is output: nothing to warn about
    wf.fit(tp.Dataset(_df()))
    out = wf.transform(_df())
    want = _ref(_df(), _side(), "k", "kk", columns_ext)
    assert list(out.columns) == ["k", "v"] + columns_ext == list(want.columns)
    for c in want.columns:
        np.testing.assert_array_equal(_floats(out[c]), _floats(want[c]), err_msg=c)
    assert out["kk"].dtype.kind in "iu"          # the side key's integers (nullable: a row has no match)
    assert str(out["w"].dtype) == "float64" and str(out["k"].dtype) == "int32"
    assert wf.output_schema.column_names == ["k", "v"] + columns_ext
    assert str(wf.output_schema["kk"].dtype) == "int64"   # the side table's dtype, as NVTabular's schema

    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    again = loaded.transform(_df())
    pd.testing.assert_frame_equal(again, out)
    assert loaded.output_schema.column_names == ["k", "v"] + columns_ext


def test_side_key_inner_join_keeps_its_integer_dtype(tmp_path):
    wf = tp.Workflow(["k", "v"] >> ops.JoinExternal(_side(), on="k", on_ext="kk", columns_ext=["kk", "w"],
                                                    how="inner"))
    wf.fit(tp.Dataset(_df()))
    out = wf.transform(_df())
    want = _ref(_df(), _side(), "k", "kk", ["kk", "w"], how="inner")
    assert list(out.columns) == ["k", "v", "kk", "w"]
    assert out["kk"].tolist() == want["kk"].tolist() == [3, 1, 2]
    assert str(out["kk"].dtype) == "int64"
    assert out["w"].tolist() == want["w"].tolist()
    wf.save(str(tmp_path / "wf"))
    pd.testing.assert_frame_equal(tp.Workflow.load(str(tmp_path / "wf")).transform(_df()), out)


def test_several_keys_listed_in_columns_ext():
    df = pd.DataFrame({"k1": [2, 1, 1], "k2": pd.Series(["y", "x", "y"], dtype="str")})
    side = pd.DataFrame({"e1": [1, 2], "e2": pd.Series(["x", "y"], dtype="str"), "w": [1.5, 2.5]})
    wf = tp.Workflow(["k1", "k2"] >> ops.JoinExternal(side, on=["k1", "k2"], on_ext=["e1", "e2"],
                                                      columns_ext=["e1", "e2", "w"]))
    wf.fit(tp.Dataset(df))
    out = wf.transform(df)
    want = _ref(df, side, ["k1", "k2"], ["e1", "e2"], ["e1", "e2", "w"])
    assert list(out.columns) == ["k1", "k2", "e1", "e2", "w"]
    np.testing.assert_array_equal(_floats(out["e1"]), _floats(want["e1"]))
    assert [None if pd.isna(v) else v for v in out["e2"]] == [None if pd.isna(v) else v for v in want["e2"]]
    np.testing.assert_array_equal(_floats(out["w"]), _floats(want["w"]))


def test_side_key_left_out_of_columns_ext_still_warns():
    # NVTabular 23.08 raises KeyError('kk') here; tabprep joins and says the key is not output
    wf, said = _build(lambda: ["k", "v"] >> ops.JoinExternal(_side(), on="k", on_ext="kk", columns_ext=["w"]))
    assert [m for m in said if "on_ext" in m and "columns_ext" in m]
    wf.fit(tp.Dataset(_df()))
    assert list(wf.transform(_df()).columns) == ["k", "v", "w"]


@pytest.mark.parametrize("columns_ext", [None, ["kk", "w"]])
def test_on_ext_survives_save_load_and_the_spec_round_trip(tmp_path, columns_ext):
    """``on_ext`` and ``drop_duplicates_ext`` are part of the op's config: a spec written by
    ``wf.to_spec()`` and read back joins a side-table path on its own key name, as a saved folder
    does (the spec lost them and failed at fit, "key column(s) ['k'] are not in the side table")."""
    side = pd.DataFrame({"kk": [1, 2, 3, 3], "w": [10, 20, 30, 30]})
    side.to_parquet(tmp_path / "side.parquet", index=False)
    df = pd.DataFrame({"k": [1, 2, 4, 3], "v": [0, 1, 2, 3]})
    wf = tp.Workflow(["k", "v"] >> ops.JoinExternal(str(tmp_path / "side.parquet"), on="k", on_ext="kk",
                                                   columns_ext=columns_ext, drop_duplicates_ext=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # (the build note when kk is not listed)
        wf.fit(tp.Dataset(df))
        ref = wf.transform(df)
        wf.save(str(tmp_path / "wf"))
        loaded = tp.Workflow.load(str(tmp_path / "wf"))
        again = tp.Workflow.from_spec(wf.to_spec())
        again.fit(tp.Dataset(df))
    merged = df.merge(side.drop_duplicates(), left_on="k", right_on="kk", how="left")
    assert ref["w"].tolist()[:2] == [10, 20] and pd.isna(ref["w"].tolist()[2]) and ref["w"].tolist()[3] == 30
    assert [None if pd.isna(v) else int(v) for v in ref["w"]] == [None if pd.isna(v) else int(v) for v in merged["w"]]
    pd.testing.assert_frame_equal(loaded.transform(df), ref)
    pd.testing.assert_frame_equal(again.transform(df), ref)
