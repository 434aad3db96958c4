"""JoinExternal with null keys matches NVTabular 23.08: a null data key joins the side table's null key.

NVTabular joins with ``df.merge(side, left_on=on, right_on=on_ext, how=how)``: pandas' merge matches
a null (NaN / None / NA) key to a null key, and cuDF's merge does the same (libcudf's joins compare
nulls as equal by default). So a left join gives a null-key row the side table's null-key values and
an inner join keeps it. The references here are plain pandas merges.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops
from test_op_join_external import _values, check as _check   # (None for every missing value, column by column)

DATA = pd.DataFrame({"k": [1.0, np.nan, 3.0, np.nan, 1.0, 5.0],
                     "s": ["x", None, "y", None, "x", "q"],
                     "v": [0, 1, 2, 3, 4, 5]})
SIDE_K = pd.DataFrame({"k": [1.0, np.nan, 5.0], "w": [10.0, 20.0, 50.0]})
SIDE_S = pd.DataFrame({"s": ["x", None], "w2": [10.0, 20.0]})


def _reference(data: pd.DataFrame, side: pd.DataFrame, on, how: str, cols) -> pd.DataFrame:
    """pandas' merge (NVTabular's), rows in the data's order."""
    on = [on] if isinstance(on, str) else list(on)
    left = data[cols].reset_index(drop=True).assign(__row=np.arange(len(data)))
    m = left.merge(side, on=on, how=how).sort_values("__row")
    return m.drop(columns="__row").reset_index(drop=True)


def _run(node, data: pd.DataFrame) -> pd.DataFrame:
    wf = tp.Workflow(node)
    wf.fit(tp.Dataset(data, npartitions=2))
    return wf.transform(tp.Dataset(data, npartitions=2)).to_ddf().compute().reset_index(drop=True), wf


@pytest.mark.parametrize("how", ["left", "inner"])
@pytest.mark.parametrize("on,side", [("k", SIDE_K), ("s", SIDE_S)])
def test_null_data_key_joins_the_side_tables_null_key(how, on, side):
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # the same result as NVTabular's: nothing to warn about
        out, _ = _run([on, "v"] >> ops.JoinExternal(side, on=on, how=how), DATA)
    ref = _reference(DATA, side, on, how, [on, "v"])
    _check(out, ref)
    ext = [c for c in side.columns if c != on][0]
    null_rows = DATA[on].isna().to_numpy()
    if how == "left":
        assert out.loc[null_rows, ext].tolist() == [20.0, 20.0]
    else:  # the null-key rows are kept
        assert out["v"].tolist() == [v for v, k in zip(DATA["v"], DATA[on]) if k in ("x", 1.0, 5.0) or pd.isna(k)]


@pytest.mark.parametrize("how", ["left", "inner"])
def test_side_table_without_null_key_leaves_null_rows_unmatched(how):
    side = SIDE_K.dropna()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out, _ = _run(["k", "v"] >> ops.JoinExternal(side, on="k", how=how), DATA)
    _check(out, _reference(DATA, side, "k", how, ["k", "v"]))


def test_multi_key_with_a_null_part_matches_as_pandas():
    data = pd.DataFrame({"a": [1, 1, 2, 2], "b": ["p", None, None, "q"], "v": [0, 1, 2, 3]})
    side = pd.DataFrame({"a": [1, 2], "b": [None, "q"], "w": [7.0, 8.0]})
    out, _ = _run(["a", "b", "v"] >> ops.JoinExternal(side, on=["a", "b"], how="left"), data)
    ref = _reference(data, side, ["a", "b"], "left", ["a", "b", "v"])
    _check(out, ref)
    assert _values(out["w"]) == [None, 7.0, None, 8.0]


def test_several_null_keys_in_the_side_table_raise_as_duplicates():
    side = pd.DataFrame({"k": [1.0, np.nan, np.nan], "w": [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match="duplicate keys"):
        _run(["k", "v"] >> ops.JoinExternal(side, on="k"), DATA)


@pytest.mark.parametrize("how", ["left", "inner"])
def test_null_key_match_survives_save_and_load(tmp_path, how):
    out, wf = _run(["s", "v"] >> ops.JoinExternal(SIDE_S, on="s", how=how), DATA)
    wf.save(str(tmp_path / "wf"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = tp.Workflow.load(str(tmp_path / "wf"))
        again = loaded.transform(tp.Dataset(DATA, npartitions=2)).to_ddf().compute().reset_index(drop=True)
    pd.testing.assert_frame_equal(out, again)
    _check(again, _reference(DATA, SIDE_S, "s", how, ["s", "v"]))


def test_parquet_side_table_null_key(tmp_path):
    path = tmp_path / "side.parquet"
    SIDE_S.to_parquet(path, index=False)
    out, _ = _run(["s", "v"] >> ops.JoinExternal(str(path), on="s"), DATA)
    _check(out, _reference(DATA, SIDE_S, "s", "left", ["s", "v"]))


@pytest.mark.parametrize("data_dtype,side_dtype", [("UInt64", "Int64"), ("Int64", "UInt64"), ("Int32", "Int64")])
def test_nullable_integer_null_keys_match_across_signedness(data_dtype, side_dtype):
    data = pd.DataFrame({"k": pd.array([1, None, 3], dtype=data_dtype), "v": [0, 1, 2]})
    side = pd.DataFrame({"k": pd.array([1, None], dtype=side_dtype), "w": [10.0, 20.0]})
    out, _ = _run(["k", "v"] >> ops.JoinExternal(side, on="k"), data)
    assert _values(out["w"]) == [10.0, 20.0, None]


@pytest.mark.parametrize("how", ["left", "inner"])
@pytest.mark.parametrize("on,side", [("k", SIDE_K), ("s", SIDE_S)])
def test_null_data_key_joins_the_side_tables_null_key_on_either_backend(backend, how, on, side):
    """The same join on frames of the backend (cuDF on the GPU: its merge, or tabprep's lookup there,
    must match null keys as pandas' does)."""
    from conftest import frame_on, to_pandas

    data = DATA.assign(k=DATA["k"].astype("float64"))
    wf = tp.Workflow([on, "v"] >> ops.JoinExternal(side, on=on, how=how)).fit(tp.Dataset(frame_on(data, backend)))
    out = to_pandas(wf.transform(frame_on(data, backend)))
    _check(out, _reference(data, side, on, how, [on, "v"]))
