"""List (multi-hot) columns end to end: parquet in, element-wise ops, parquet out, schema, embeddings.

References are written by hand over Python lists: vocabularies over all elements, a null
element gets id 1, a null row stays a null row, 0 is never produced (padding id).
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tabprep as tp
from tabprep import ops

from conftest import double, is_cpu, make_dataset, ref_murmur3, to_pandas
from list_helpers import list_series, pylists

ROWS_I = [[1, 2], [3], None, [], [1, None, 5], [7, 7, 7], [2], [9, 1], [3, 3], [1]]
ROWS_S = [["a", "b"], ["c"], None, [], ["a", None], ["z"], ["b", "b"], ["a"], [], ["héllo", "a"]]
ROWS_F = [[1.0, 2.5], [3.0], None, [], [1.0, None], [float("nan")], [0.5], [4.0, -1.0], [2.0], []]


def table() -> pa.Table:
    return pa.table({
        "li": pa.array(ROWS_I, type=pa.list_(pa.int64())),
        "ls": pa.array(ROWS_S, type=pa.list_(pa.string())),
        "lf": pa.array(ROWS_F, type=pa.list_(pa.float64())),
        "x": pa.array(np.arange(len(ROWS_I), dtype="int64")),
    })


def frame() -> pd.DataFrame:
    return pd.DataFrame({"li": list_series(ROWS_I, pa.int64()), "ls": list_series(ROWS_S, pa.string()),
                         "lf": list_series(ROWS_F, pa.float64()), "x": np.arange(len(ROWS_I), dtype="int64")})


@pytest.fixture
def parquet_path(tmp_path):
    path = tmp_path / "lists.parquet"
    pq.write_table(table(), path, row_group_size=3)
    return str(path)


# -- references ------------------------------------------------------------------------------
def _present(v):
    return v is not None and not (isinstance(v, float) and np.isnan(v))


def ref_categorify(train_rows, data_rows):
    """Ids per element: vocabulary values from 3, unseen 2; a null element 2 too (NVTabular 23.08: its
    vocabulary holds no null, so a null element is out of vocabulary); a null row stays null."""
    counts = Counter(v for r in train_rows if r for v in r if _present(v))
    vocab = {v: 3 + i for i, (v, _) in enumerate(sorted(counts.items(), key=lambda vc: (-vc[1], vc[0])))}
    return [None if r is None else [2 if not _present(v) else vocab.get(v, 2) for v in r] for r in data_rows]


def ref_hash(rows, nb):
    return [None if r is None else [0 if not _present(v) else ref_murmur3(v) % nb for v in r] for r in rows]


def ref_normalize(rows):
    x = np.array([v for r in rows if r for v in r if _present(v)], dtype="float64")
    mean, std = x.mean(), x.std(ddof=1)
    return [None if r is None else [None if not _present(v) else float(np.float32((v - mean) / std)) for v in r]
            for r in rows]


def assert_lists_close(got, expected, what=""):
    assert len(got) == len(expected), what
    for i, (g, e) in enumerate(zip(got, expected)):
        if e is None:
            assert g is None, f"{what} row {i}: {g} != null"
            continue
        assert g is not None and len(g) == len(e), f"{what} row {i}: {g} != {e}"
        for a, b in zip(g, e):
            if b is None:
                assert a is None, f"{what} row {i}: {g} != {e}"
            else:
                assert a == pytest.approx(b, rel=1e-6, abs=1e-6), f"{what} row {i}: {g} != {e}"


# -- reading -----------------------------------------------------------------------------------
def test_parquet_list_columns_are_read_as_lists(parquet_path, backend):
    ds = tp.Dataset(parquet_path, cpu=is_cpu(backend), part_size=1)
    assert ds.npartitions > 1
    sch = ds.schema
    assert [sch[c].is_list for c in ("li", "ls", "lf", "x")] == [True, True, True, False]
    assert (sch["li"].dtype, sch["ls"].dtype, sch["lf"].dtype) == ("int64", "str", "float64")
    out = to_pandas(ds)
    assert pylists(out["li"]) == ROWS_I
    assert pylists(out["ls"]) == ROWS_S
    assert pylists(out["lf"]) == [None if r is None else [v if _present(v) else None for v in r] for r in ROWS_F]


def test_fixed_size_list_records_value_count(tmp_path):
    path = tmp_path / "fixed.parquet"
    pq.write_table(pa.table({"fx": pa.array([[1, 2], [3, 4], None, [5, None]], type=pa.list_(pa.int64(), 2))}), path)
    ds = tp.Dataset(str(path), cpu=True)
    col = ds.schema["fx"]
    assert col.is_list and not col.is_ragged and col.value_count == {"min": 2, "max": 2}
    wf = tp.Workflow(["fx"] >> ops.Categorify())
    out = to_pandas(wf.fit(ds).transform(ds))
    assert pylists(out["fx"]) == ref_categorify([[1, 2], [3, 4], None, [5, None]], [[1, 2], [3, 4], None, [5, None]])
    assert wf.output_schema["fx"].value_count == {"min": 2, "max": 2}


# -- element-wise ops ------------------------------------------------------------------------
def list_workflow():
    cats = ["li", "ls"] >> ops.Categorify()
    hashed = ["li"] >> ops.HashBucket(num_buckets=13) >> ops.Rename(postfix="_h")
    conts = ["lf"] >> ops.Normalize(out_dtype="float32")  # float32 leaves (the default, float64: test_ops_normalize_dtype)
    filled = ["li"] >> ops.FillMissing(fill_val=-1) >> ops.Rename(postfix="_f")
    doubled = ["lf"] >> ops.LambdaOp(double) >> ops.Rename(postfix="_x2")
    return tp.Workflow(cats + hashed + conts + filled + doubled + ["x"])


def check_list_output(out):
    assert pylists(out["li"]) == ref_categorify(ROWS_I, ROWS_I)
    assert pylists(out["ls"]) == ref_categorify(ROWS_S, ROWS_S)
    assert pylists(out["li_h"]) == ref_hash(ROWS_I, 13)
    assert_lists_close(pylists(out["lf"]), ref_normalize(ROWS_F), "Normalize")
    assert pylists(out["li_f"]) == [None if r is None else [-1 if v is None else v for v in r] for r in ROWS_I]
    assert_lists_close(pylists(out["lf_x2"]),
                       [None if r is None else [v * 2 if _present(v) else None for v in r] for r in ROWS_F], "LambdaOp")
    assert out["x"].tolist() == list(range(len(ROWS_I)))


def test_element_wise_ops_on_parquet_lists(parquet_path, backend):
    ds = tp.Dataset(parquet_path, cpu=is_cpu(backend), part_size=1)
    wf = list_workflow()
    out = to_pandas(wf.fit(ds).transform(ds))
    check_list_output(out)


def test_element_wise_ops_with_empty_partitions(backend):
    ds = make_dataset(frame(), backend, nparts=3)
    wf = list_workflow()
    out = to_pandas(wf.fit(ds).transform(ds))
    check_list_output(out)
    # online path on one frame agrees
    check_list_output(to_pandas(wf.transform(frame() if is_cpu(backend) else __import__("cudf").from_pandas(frame()))))


def test_unseen_elements_get_oov_id():
    df = frame()
    wf = tp.Workflow(["li", "ls"] >> ops.Categorify())
    wf.fit(tp.Dataset(df, npartitions=2))
    new = pd.DataFrame({"li": list_series([[1, 1000], [None], None, []], pa.int64()),
                        "ls": list_series([["zz", "a"], [None], None, []], pa.string())})
    out = wf.transform(new)
    assert pylists(out["li"]) == ref_categorify(ROWS_I, [[1, 1000], [None], None, []])
    assert pylists(out["ls"]) == ref_categorify(ROWS_S, [["zz", "a"], [None], None, []])
    ids = [v for r in pylists(out["li"]) if r for v in r]
    assert 0 not in ids  # 0 is the padding id, never produced by Categorify


def test_list_schema_and_embedding_sizes(parquet_path):
    ds = tp.Dataset(parquet_path, cpu=True)
    wf = list_workflow()
    wf.fit(ds)
    sch = wf.output_schema
    for c in ("li", "ls", "li_h", "lf", "li_f", "lf_x2"):
        assert sch[c].is_list and sch[c].is_ragged, c
    assert not sch["x"].is_list
    assert sch["li"].dtype == "int64" and sch["lf"].dtype == "float32"
    n_li = len({v for r in ROWS_I if r for v in r if v is not None})
    assert sch["li"].cardinality == 3 + n_li
    single, multi = tp.get_embedding_sizes(wf, multihot=True)
    assert set(multi) == {"li", "ls", "li_h"} and single == {}
    assert multi["li"][0] == 3 + n_li and multi["li_h"][0] == 13
    assert tp.get_embedding_sizes(wf) == (single, multi)   # multi-hot outputs: NVTabular's pair by default
    assert set(tp.get_embedding_sizes(wf, multihot=False)) == {"li", "ls", "li_h"}


def test_parquet_output_keeps_lists(parquet_path, tmp_path):
    ds = tp.Dataset(parquet_path, cpu=True, part_size=1)
    wf = list_workflow()
    wf.fit(ds)
    expected = to_pandas(wf.transform(ds))
    for kw in ({}, {"output_files": 1}):
        out_dir = tmp_path / f"out{len(kw)}"
        wf.transform(ds).to_parquet(str(out_dir), **kw)
        files = sorted(out_dir.glob("*.parquet"))
        arrow_schema = pq.read_schema(files[0])
        for c in ("li", "ls", "li_h", "lf", "li_f", "lf_x2"):
            assert pa.types.is_list(arrow_schema.field(c).type), (c, arrow_schema.field(c).type)
        assert arrow_schema.field("li").type.value_type == pa.int64()
        assert arrow_schema.field("lf").type.value_type == pa.float32()
        back = tp.Dataset(str(out_dir), cpu=True)
        assert back.schema["li"].is_list and back.schema["li"].is_categorical
        got = to_pandas(back)
        assert got["x"].tolist() == expected["x"].tolist()
        for c in ("li", "ls", "li_h", "lf", "li_f", "lf_x2"):
            assert pylists(got[c]) == pylists(expected[c]), c


def test_save_load_round_trip(parquet_path, tmp_path):
    ds = tp.Dataset(parquet_path, cpu=True, part_size=1)
    wf = list_workflow()
    wf.fit(ds)
    before = to_pandas(wf.transform(ds))
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    assert loaded.output_schema == wf.output_schema
    pd.testing.assert_frame_equal(to_pandas(loaded.transform(ds)), before)


def test_lambda_two_arguments_gets_whole_lists():
    df = frame()
    wf = tp.Workflow(["li"] >> ops.LambdaOp(lambda col, df: col.list.len(), dtype="float64"))
    out = wf.fit(df).transform(df)
    assert [None if pd.isna(v) else int(v) for v in out["li"]] == [None if r is None else len(r) for r in ROWS_I]


def test_lambda_element_count_mismatch_is_explained():
    df = frame()
    wf = tp.Workflow(["li"] >> ops.LambdaOp(lambda s: s.iloc[:1]))
    with pytest.raises(ValueError, match="element-wise"):
        wf.fit(df).transform(df)


# -- frames holding Python lists / numpy arrays (issue #14: NVTabular users' in-memory frames) ----------
def _ref_ids(rows):
    """Categorify ids of list rows: by descending count, ties by value; null 1, OOV 2, vocabulary from 3."""
    from collections import Counter

    counts = Counter(v for r in rows for v in r)
    order = sorted(counts, key=lambda v: (-counts[v], v))
    ids = {v: 3 + i for i, v in enumerate(order)}
    return [[ids[v] for v in r] for r in rows]


def test_eager_fit_transform_of_a_frame_with_python_list_cells():
    rows = [["a", "b"], ["b"], [], ["c", "a"], ["b", "d", "d"]]
    df = pd.DataFrame({"genres": rows, "label": [0, 1, 0, 1, 1]})
    wf = tp.Workflow((["genres"] >> ops.Categorify()) + ["label"])
    out = wf.fit(df).transform(df)
    assert [list(r) for r in out["genres"]] == _ref_ids(rows)
    # the same through a Dataset gives the same ids
    assert [list(r) for r in wf.transform(tp.Dataset(df)).compute()["genres"]] == _ref_ids(rows)


def test_join_external_side_table_with_numpy_array_cells():
    side = pd.DataFrame({"user": [1, 2, 3], "tags": [np.array([7, 8]), np.array([9]), np.array([], dtype="int64")]})
    df = pd.DataFrame({"user": [1, 2, 3, 1, 4]})
    wf = tp.Workflow((["user"] >> ops.JoinExternal(side, on="user")) >> ops.Categorify())
    out = wf.fit(df).transform(df)
    joined = [[7, 8], [9], [], [7, 8], None]
    ref = _ref_ids([r for r in joined if r is not None])
    got = out["tags"].tolist()
    assert [list(g) for g in got[:4]] == ref
    assert got[4] is None or (not isinstance(got[4], (list, np.ndarray)) and pd.isna(got[4]))


def test_nested_list_columns_are_refused_by_ops_without_nested_support_naming_the_column(tmp_path):
    # the SOK notebook writes samples.tolist() of a 2-d array per row: list<list<int64>>; ops
    # element-wise on the leaves take it since issue #31 (tests/test_nested_ops.py), others refuse it
    table = pa.table({"x": pa.array([[[1, 2], [3]], [[4]], [], None], type=pa.list_(pa.list_(pa.int64()))),
                      "y": pa.array([1, 2, 3, 4])})
    pq.write_table(table, tmp_path / "n.parquet")
    ds = tp.Dataset(str(tmp_path / "n.parquet"))
    assert ds.schema["x"].is_list and ds.schema["x"].dtype == "list<int64>"
    with pytest.raises(TypeError, match=r"(?s)Bucketize.*'x'.*nested"):
        tp.Workflow(["x"] >> ops.Bucketize([1, 2])).fit(ds)
    # selected without ops it passes through, and its schema says what it is
    wf = tp.Workflow(["x"] + (["y"] >> ops.Normalize()))
    wf.fit(ds)
    wf.transform(ds).to_parquet(str(tmp_path / "out"))
    assert pq.read_table(tmp_path / "out").column("x").to_pylist() == [[[1, 2], [3]], [[4]], [], None]
    import json
    saved = {c["name"]: c for c in json.loads((tmp_path / "out" / "_schema.json").read_text())["columns"]}
    assert saved["x"]["dtype"] == "list<int64>" and saved["x"]["is_list"]


@pytest.mark.parametrize("rows", [ROWS_I, [[1, 2], [3], [], [4, None, 6], [7]], [[], []], [[5, 6, 7]]])
@pytest.mark.parametrize("window", [(0, None), (1, 4), (2, None), (3, 3), (0, 1)])
def test_list_leaves_of_a_row_window(rows, window, backend):
    # the loader's chunks are row windows of a read frame: leaves and offsets of the window only
    from tabprep.backend import list_leaves, to_numpy

    s = list_series(rows, pa.int64())
    if not is_cpu(backend):
        import cudf

        s = cudf.from_pandas(s)
    lo, hi = window
    part = s.iloc[lo:hi]
    want_rows = [r or [] for r in rows[lo:hi]]   # a null row reads as an empty list
    leaves, offsets = list_leaves(part)
    got_offsets = to_numpy(offsets)
    assert got_offsets.dtype == np.int64
    assert got_offsets.tolist() == [0] + np.cumsum([len(r) for r in want_rows]).tolist()
    host = leaves.to_pandas() if hasattr(leaves, "to_pandas") else leaves   # cuDF -> pandas
    want = [v for r in want_rows for v in r]
    assert [None if pd.isna(v) else int(v) for v in host.tolist()] == want
    assert list(host.index) == list(range(len(want)))   # leaves numbered from 0, whatever the window
