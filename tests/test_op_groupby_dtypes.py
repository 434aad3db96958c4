"""Groupby keeps the column's dtype where NVTabular 23.08 does, checked from the user's side.

* ``min`` / ``max`` / ``first`` / ``last`` of float32 / float16 / float64 / nullable Float32 /
  int8 / int16 / uint8 columns: data dtype == schema dtype == the column's (NVTabular's schema;
  its min/max data agree with it);
* ``list`` / ``first`` / ``last`` of nullable Int64 / Int32 / UInt64 / boolean columns with
  nulls: exact integer values (2**53 + 1, 2**64 - 1) in the integer type, a null element null.

References are computed here with plain pandas / numpy, over several partitions with nulls,
before and after ``wf.save`` / ``tp.Workflow.load``.
"""
from __future__ import annotations

import glob

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tabprep as tp
from tabprep import ops

# 8 rows, groups of 2 rows (g = 1..4): Dataset(df, npartitions=2) cuts at row 4, between groups.
# Within a group the input rows run against ``t``, so sort_cols matters.
_G = [1, 1, 2, 2, 3, 3, 4, 4]
_T = [2, 1, 4, 3, 6, 5, 8, 7]


def _floats_frame() -> pd.DataFrame:
    nan = np.nan
    return pd.DataFrame({
        "g": _G, "t": _T,
        # group 1 (sorted by t): [nan, 0.1] / 2: [inf, 2.5] / 3: all null / 4: [-1.25, 16777217]
        "f32": np.array([0.1, nan, 2.5, np.inf, nan, nan, 16777217.0, -1.25], "float32"),
        "f64": np.array([0.1, nan, 2.5, 1e300, nan, nan, 2.0 ** 53 + 2, -1.25], "float64"),
        "f16": np.array([0.1, nan, 2.5, 1.5, nan, nan, 7.0, -1.25], "float16"),
        "F32": pd.array([0.1, None, 2.5, 1.5, None, None, 7.0, -1.25], dtype="Float32"),
        "i8": np.array([-128, 127, 3, 4, 5, 6, 7, 8], "int8"),
        "i16": np.array([5, 6, -32768, 32767, 9, 10, 11, 12], "int16"),
        "u8": np.array([255, 0, 3, 4, 5, 6, 7, 8], "uint8"),
    })


_FLOAT_COLS = ["f32", "f64", "f16", "F32", "i8", "i16", "u8"]
_SCALAR_AGGS = ["first", "last", "min", "max"]


def _numpy_dtype(dtype) -> np.dtype:
    return np.dtype(getattr(dtype, "numpy_dtype", dtype))


def _groups(df: pd.DataFrame):
    """(key, rows of the group sorted by t) with plain pandas."""
    ordered = df.sort_values(["g", "t"], kind="stable")
    return [(k, part) for k, part in ordered.groupby("g", sort=True)]


def _scalar_reference(df: pd.DataFrame, col: str, agg: str) -> list:
    out = []
    for _, part in _groups(df):
        vals = part[col]
        if agg in ("first", "last"):
            v = vals.iloc[0] if agg == "first" else vals.iloc[-1]
            out.append(None if pd.isna(v) else v)
            continue
        present = vals[vals.notna()].to_numpy(dtype=_numpy_dtype(vals.dtype))
        out.append(None if not len(present) else (present.min() if agg == "min" else present.max()))
    return out


def _check_scalars(out: pd.DataFrame, schema, df: pd.DataFrame, where: str) -> None:
    for c in _FLOAT_COLS:
        for a in _SCALAR_AGGS:
            name = f"{c}_{a}"
            src = df[c].dtype
            assert out[name].dtype == src, f"{where}: {name} data {out[name].dtype}, column {src}"
            assert str(schema[name].dtype) == str(_numpy_dtype(src)), \
                f"{where}: {name} schema {schema[name].dtype}, column {src}"
            ref = _scalar_reference(df, c, a)
            got = out[name].tolist()
            assert len(got) == len(ref), (where, name, got, ref)
            for gv, rv in zip(got, ref):
                if rv is None:
                    assert pd.isna(gv), (where, name, got, ref)
                else:
                    # same value in the column's own dtype (no float64 detour: 16777217 and
                    # 2**53 + 2 would round if they went through float32 / were recast)
                    assert _numpy_dtype(src).type(gv) == rv, (where, name, got, ref)


def _float_workflow() -> tp.Workflow:
    aggs = {c: list(_SCALAR_AGGS) for c in _FLOAT_COLS}
    return tp.Workflow(["g", "t"] + _FLOAT_COLS >> ops.Groupby(groupby_cols=["g"], sort_cols=["t"], aggs=aggs))


def test_min_max_first_last_keep_the_columns_dtype(tmp_path):
    df = _floats_frame()
    wf = _float_workflow()
    wf.fit(tp.Dataset(df, npartitions=2))
    out = wf.transform(tp.Dataset(df, npartitions=2)).to_ddf().compute().reset_index(drop=True)
    assert out["g"].tolist() == [1, 2, 3, 4]
    _check_scalars(out, wf.output_schema, df, "transform")
    _check_scalars(wf.transform(tp.Dataset(df, npartitions=2)).compute(), wf.output_schema, df, "compute")

    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    again = loaded.transform(tp.Dataset(df, npartitions=2)).to_ddf().compute().reset_index(drop=True)
    _check_scalars(again, loaded.output_schema, df, "after load")


def test_min_max_of_float32_written_to_parquet_stay_float32(tmp_path):
    df = _floats_frame()
    wf = _float_workflow()
    wf.fit(tp.Dataset(df, npartitions=2))
    wf.transform(tp.Dataset(df, npartitions=2)).to_parquet(str(tmp_path / "out"))
    files = sorted(glob.glob(str(tmp_path / "out" / "*.parquet")))
    table = pa.concat_tables([pq.read_table(f) for f in files])
    for a in ("min", "max", "first", "last"):
        assert table.schema.field(f"f32_{a}").type == pa.float32(), a
        assert table.schema.field(f"f16_{a}").type == pa.float16(), a
    assert table.column("f32_max").to_pylist() == [float(np.float32(0.1)), float("inf"), None, 16777216.0]


# -- nullable integer / boolean columns -------------------------------------------------------
_BIG = 2 ** 53 + 1   # not a float64
_UMAX = 2 ** 64 - 1


def _nullable_frame() -> pd.DataFrame:
    return pd.DataFrame({
        "g": _G, "t": _T,
        "I": pd.array([None, _BIG, 3, None, None, None, 7, -_BIG], dtype="Int64"),
        "J": pd.array([None, 2 ** 31 - 1, 3, 4, None, None, -(2 ** 31), 8], dtype="Int32"),
        "U": pd.array([None, _UMAX, 3, 4, None, None, 7, _UMAX - 1], dtype="UInt64"),
        "B": pd.array([None, True, False, True, None, None, True, False], dtype="boolean"),
    })


_NULLABLE_COLS = ["I", "J", "U", "B"]
_ARROW = {"I": pa.int64(), "J": pa.int32(), "U": pa.uint64(), "B": pa.bool_()}


def _list_reference(df: pd.DataFrame, col: str) -> list:
    """Each group's values in t order as Python ints / bools, a null as None (plain pandas)."""
    return [[None if v is pd.NA else (bool(v) if col == "B" else int(v)) for v in part[col].array]
            for _, part in _groups(df)]


def _nullable_workflow() -> tp.Workflow:
    aggs = {c: ["list", "first", "last"] for c in _NULLABLE_COLS}
    return tp.Workflow(["g", "t"] + _NULLABLE_COLS >> ops.Groupby(groupby_cols=["g"], sort_cols=["t"], aggs=aggs))


def _check_nullable_scalars(out: pd.DataFrame, schema, df: pd.DataFrame, where: str) -> None:
    for c in _NULLABLE_COLS:
        lists = _list_reference(df, c)
        assert str(schema[f"{c}_list"].dtype) == str(_numpy_dtype(df[c].dtype)), (where, c)
        for a in ("first", "last"):
            name = f"{c}_{a}"
            assert str(schema[name].dtype) == str(_numpy_dtype(df[c].dtype)), (where, name)
            assert out[name].dtype == df[c].dtype, (where, name, out[name].dtype)
            ref = [vals[0] if a == "first" else vals[-1] for vals in lists]
            got = [None if v is pd.NA else v for v in out[name].tolist()]
            assert got == ref, (where, name, got, ref)
            assert all(type(v) is type(r) for v, r in zip(got, ref) if r is not None), (where, name, got)


def _exact_cells(cells, ref, col: str, where: str) -> None:
    """List cells as a user reads them: exact values of the integer (bool) type, a null null."""
    cells = list(cells)
    assert len(cells) == len(ref), (where, col, cells, ref)
    for cell, want in zip(cells, ref):
        got = list(cell)
        assert len(got) == len(want), (where, col, cell, want)
        for v, w in zip(got, want):
            if w is None:
                assert v is None or v is pd.NA, (where, col, cell, want)
                continue
            kind = (bool, np.bool_) if col == "B" else (int, np.integer)
            assert isinstance(v, kind), (where, col, cell, want, type(v))
            assert v == w, (where, col, cell, want)


def test_list_first_last_of_nullable_ints_are_exact(tmp_path):
    df = _nullable_frame()
    wf = _nullable_workflow()
    wf.fit(tp.Dataset(df, npartitions=2))

    # a frame in, a frame out (Arrow list columns): exact lists, integer element type
    out = wf.transform(df)
    for c in _NULLABLE_COLS:
        assert out[f"{c}_list"].dtype == pd.ArrowDtype(pa.list_(_ARROW[c])), c
        _exact_cells(out[f"{c}_list"].tolist(), _list_reference(df, c), c, "frame")
    _check_nullable_scalars(out, wf.output_schema, df, "frame")

    # several partitions written to parquet: list<int64> etc., exact
    wf.transform(tp.Dataset(df, npartitions=2)).to_parquet(str(tmp_path / "out"))
    files = sorted(glob.glob(str(tmp_path / "out" / "*.parquet")))
    table = pa.concat_tables([pq.read_table(f) for f in files])
    for c in _NULLABLE_COLS:
        assert table.schema.field(f"{c}_list").type.value_type == _ARROW[c], c
        assert table.column(f"{c}_list").to_pylist() == _list_reference(df, c), c

    # first / last through to_ddf, and after save / load
    got = wf.transform(tp.Dataset(df, npartitions=2)).to_ddf().compute().reset_index(drop=True)
    _check_nullable_scalars(got, wf.output_schema, df, "to_ddf")
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    again = loaded.transform(df)
    _check_nullable_scalars(again, loaded.output_schema, df, "after load")
    for c in _NULLABLE_COLS:
        _exact_cells(again[f"{c}_list"].tolist(), _list_reference(df, c), c, "after load")


def test_list_of_nullable_ints_to_ddf_cells_are_exact(tmp_path):
    """NVTabular 23.08 hands ``[9007199254740993, <NA>]`` (int64 elements) in ``to_ddf()``; pyarrow's
    ``to_numpy`` made every cell of such a chunk float64 (tabprep.backend.list_cells)."""
    df = _nullable_frame()
    wf = _nullable_workflow()
    wf.fit(tp.Dataset(df, npartitions=2))
    got = wf.transform(tp.Dataset(df, npartitions=2)).to_ddf().compute().reset_index(drop=True)
    for c in _NULLABLE_COLS:
        _exact_cells(got[f"{c}_list"], _list_reference(df, c), c, "to_ddf")
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    again = loaded.transform(tp.Dataset(df, npartitions=2)).compute()
    for c in _NULLABLE_COLS:
        _exact_cells(again[f"{c}_list"], _list_reference(df, c), c, "compute after load")
