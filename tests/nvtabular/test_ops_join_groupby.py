"""JoinGroupby's output dtypes as NVTabular 23.08's (nvtabular/ops/join_groupby.py ``AGG_DTYPES``
and ``_compute_dtype``): ``count`` int32, ``mean`` / ``std`` / ``var`` float32, and ``sum`` /
``min`` / ``max`` in the continuous column's own dtype (a float64 column's sums are not rounded
to float32). Values against plain pandas ``groupby``."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tabprep as tp
from tabprep import ops
from tabprep.workflow.serialize import stats_manifest

from conftest import make_dataset, to_pandas


def _df() -> pd.DataFrame:
    return pd.DataFrame({"u": [1, 1, 2, 2, 3, 3],
                         "x": [1.0e8 + 0.25, 2.0, 3.0, np.nan, 5.5, 7.0],
                         "i": np.array([2**40, 2, 3, 4, 5, -6], dtype="int64"),
                         "f": np.array([1.5, 2.5, 3.5, 4.5, 5.5, 6.5], dtype="float32")})


def test_join_groupby_output_dtypes_are_nvtabulars(backend, tmp_path):
    """count int32; mean/std/var float32; sum/min/max the column's dtype (float64, int64, float32);
    data and schema agree, also after save/load; values equal pandas' (exact for sum/min/max)."""
    df = _df()
    stats = ["count", "sum", "mean", "std", "var", "min", "max"]
    wf = tp.Workflow(["u"] >> ops.JoinGroupby(cont_cols=["x", "i", "f"], stats=stats))
    wf.fit(make_dataset(df, backend, nparts=2, empties=False))
    want = {"u_count": "int32"}
    for c, dt in (("x", "float64"), ("i", "int64"), ("f", "float32")):
        want.update({f"u_{c}_sum": dt, f"u_{c}_mean": "float32", f"u_{c}_std": "float32", f"u_{c}_var": "float32",
                     f"u_{c}_min": dt, f"u_{c}_max": dt})
    wf.save(str(tmp_path / "wf"))
    g = df.groupby("u")
    for w in (wf, tp.Workflow.load(str(tmp_path / "wf"))):
        assert {c: w.output_schema[c].dtype for c in w.output_schema.column_names} == want
        out = to_pandas(w.transform(make_dataset(df, backend, nparts=2, empties=False)))
        assert {c: str(out[c].dtype) for c in out.columns} == want
        assert out["u_count"].tolist() == g["u"].transform("size").tolist()
        for c in ("x", "i", "f"):
            for st in ("sum", "min", "max"):
                assert out[f"u_{c}_{st}"].tolist() == g[c].transform(st).tolist(), (c, st)
            np.testing.assert_allclose(out[f"u_{c}_mean"], g[c].transform("mean").astype("float32"), rtol=1e-6)


def test_join_groupby_unseen_category_int_stats_are_null():
    """A category not seen at fit: null count and null statistics (NVTabular 23.08's left merge
    gives null there; its GPU keeps the null in the int32 count, its CPU astype(int32) raises
    IntCastingNaNError); an int column's sum/min/max stay ints with nulls (pandas' nullable Int64)."""
    wf = tp.Workflow(["u"] >> ops.JoinGroupby(cont_cols=["i"], stats=["count", "sum", "max"]))
    wf.fit(_df())
    out = wf.transform(pd.DataFrame({"u": [1, 9], "i": np.array([0, 0], dtype="int64")}))
    assert out["u_count"][0] == 2 and pd.isna(out["u_count"][1]) and str(out["u_count"].dtype) == "Int32"
    assert str(out["u_i_sum"].dtype) == "Int64" and out["u_i_sum"][0] == 2**40 + 2 and pd.isna(out["u_i_sum"][1])
    assert out["u_i_max"][0] == 2**40 and pd.isna(out["u_i_max"][1])


def nvt_join(train: pd.DataFrame, data: pd.DataFrame, key: str, conts, stats) -> pd.DataFrame:
    """NVTabular 23.08's JoinGroupby on single columns, written in plain pandas from
    join_groupby.py / categorify.py: per-category statistics (``groupby(dropna=False)``), left-merged
    onto the rows (null where the category was not fitted: the merge's NaN, which NVTabular's GPU
    keeps as a null int32 count), columns in ``column_mapping``'s order."""
    g = train.groupby(key, dropna=False)
    table = pd.DataFrame({f"{key}_count": g[key].size()})
    for c in conts:
        table[f"{key}_{c}_sum"] = g[c].sum()
    merged = data[[key]].merge(table.reset_index(), on=key, how="left")
    return merged[nvt_order([key], conts, stats)]


def nvt_order(keys, conts, stats):
    """``JoinGroupby.column_mapping``'s keys in order: for each key, each cont, each stat, with
    ``<key>_count`` where "count" first comes up."""
    names = {}
    for k in keys:
        for c in conts:
            for st in stats:
                names[f"{k}_count" if st == "count" else f"{k}_{c}_{st}"] = None
    return list(names)


def test_join_groupby_count_of_an_unseen_category_is_null(backend):
    """fit a = [x, x, y]; transform a = [x, new, null] (null not fitted either): count [2, null, null]
    and sum [3, NaN, NaN], as NVTabular's GPU (its CPU raises on the null count). The CPU and GPU
    agree; the count stays int32 (nullable), in the data and the schema."""
    train = pd.DataFrame({"a": ["x", "x", "y"], "v": [1.0, 2.0, 3.0]})
    data = pd.DataFrame({"a": ["x", "new", None, "y"], "v": [0.0] * 4})
    wf = tp.Workflow(["a"] >> ops.JoinGroupby(cont_cols=["v"], stats=["sum", "count"]))
    wf.fit(make_dataset(train, backend, nparts=2, empties=False))
    out = to_pandas(wf.transform(make_dataset(data, backend, nparts=2, empties=False)))
    ref = nvt_join(train, data, "a", ["v"], ["sum", "count"])
    assert list(out.columns) == list(ref.columns) == ["a_v_sum", "a_count"]
    assert out["a_count"].isna().tolist() == ref["a_count"].isna().tolist() == [False, True, True, False]
    assert out["a_count"].dropna().tolist() == ref["a_count"].dropna().tolist() == [2, 1]
    assert str(out["a_count"].dtype) in ("Int32", "int32") and wf.output_schema["a_count"].dtype == "int32"
    np.testing.assert_array_equal(out["a_v_sum"].to_numpy("float64", na_value=np.nan), ref["a_v_sum"].to_numpy())


def test_join_groupby_null_count_is_written_to_parquet_as_int32_and_loaded(tmp_path):
    """The null count goes to parquet as an int32 column holding nulls (the schema's dtype, in
    partitions with and without one) and the loader reads it (nulls as 0, its documented rule)."""
    from tabprep.loader import DataLoader

    wf = tp.Workflow(["a"] >> ops.JoinGroupby(cont_cols=["v"], stats=["count"]))
    wf.fit(pd.DataFrame({"a": ["x", "x", "y"], "v": [1.0, 2.0, 3.0]}))
    data = pd.DataFrame({"a": ["x", "y", "x", "new"], "v": [0.0] * 4})
    wf.transform(tp.Dataset(data, npartitions=2)).to_parquet(str(tmp_path / "out"))
    table = pq.read_table(str(tmp_path / "out"))
    assert table.schema.field("a_count").type == pa.int32()
    assert table.column("a_count").to_pylist() == [2, 1, 2, None]
    loader = DataLoader(str(tmp_path / "out"), batch_size=4, cont_names=["a_count"], shuffle=False, device="cpu")
    assert np.concatenate([b["a_count"] for b in loader]).tolist() == [2, 1, 2, 0]


@pytest.mark.parametrize("stats", [["sum", "count"], ["mean", "count", "max"], ["count", "sum"], ["max", "min"],
                                   ["min", "count"]])
def test_join_groupby_output_order_is_nvtabulars_column_mapping(stats, backend):
    """Output columns (frame and schema) in NVTabular's column_mapping order, which the executor
    selects: stats=["sum", "count"] on conts [v, f] gives a_v_sum, a_count, a_f_sum."""
    df = pd.DataFrame({"a": [1, 1, 2], "b": ["p", "q", "q"], "v": [1.0, 2.0, 3.0], "f": [0.5, 0.25, 1.0]})
    wf = tp.Workflow(["a", "b"] >> ops.JoinGroupby(cont_cols=["v", "f"], stats=stats))
    wf.fit(make_dataset(df, backend, nparts=2, empties=False))
    want = nvt_order(["a", "b"], ["v", "f"], stats)
    assert wf.output_schema.column_names == want
    assert list(to_pandas(wf.transform(make_dataset(df, backend, nparts=2, empties=False))).columns) == want
    assert list(wf.output_node.column_mapping) == want


def test_join_groupby_int32_sum_past_its_range_is_int64_with_a_warning():
    """NVTabular keeps an int32 column's sum int32 (it wraps around past 2**31 - 1): tabprep
    outputs that sum as int64, data and schema, and warns naming the output column."""
    df = pd.DataFrame({"u": [1, 1, 1, 2], "v": np.array([2**30, 2**30, 2**30, 5], dtype="int32")})
    wf = tp.Workflow(["u"] >> ops.JoinGroupby(cont_cols=["v"], stats=["sum", "max"]))
    with pytest.warns(tp.NVTabularDifferenceWarning, match="'u_v_sum'.*int32"):
        wf.fit(df)
    assert wf.output_schema["u_v_sum"].dtype == "int64" and wf.output_schema["u_v_max"].dtype == "int32"
    out = wf.transform(df)
    assert str(out["u_v_sum"].dtype) == "int64" and out["u_v_sum"].tolist() == [3 * 2**30] * 3 + [5]


def test_join_groupby_saved_with_count_0_for_unseen_loads_with_null(tmp_path):
    """A workflow saved before the null count (its table's count column int64, 0 on the unseen
    row) gives the null count too once loaded."""
    wf = tp.Workflow(["a"] >> ops.JoinGroupby(cont_cols=["v"], stats=["count", "sum"]))
    wf.fit(pd.DataFrame({"a": ["x", "x", "y"], "v": [1.0, 2.0, 3.0]}))
    wf.save(str(tmp_path / "wf"))
    (state,) = list((tmp_path / "wf").rglob("groupby_000.parquet"))
    t = pq.read_table(state)
    old = pa.array(np.nan_to_num(t.column("a_count").to_numpy()).astype("int64"))
    pq.write_table(t.set_column(t.column_names.index("a_count"), "a_count", old), state)
    spec_path = tmp_path / "wf" / "workflow.json"
    spec = json.loads(spec_path.read_text())
    spec["stats_files"] = stats_manifest(tmp_path / "wf")   # as that version recorded them
    spec_path.write_text(json.dumps(spec))
    out = tp.Workflow.load(str(tmp_path / "wf")).transform(pd.DataFrame({"a": ["x", "new"], "v": [0.0, 0.0]}))
    assert out["a_count"][0] == 2 and pd.isna(out["a_count"][1])
