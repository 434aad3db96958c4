"""Ops on nested list columns (issue #31): element-wise on the leaves, structure kept; nulls at
each level (null row stays null, null inner list stays null, null leaf as the op treats a null in
a flat list). References are plain Python on the nested lists (mmh3 for the hashes)."""
from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tabprep as tp
from tabprep import ops

from conftest import ref_murmur3

INTS = [[[1, 2], [3]], [[4]], [], None, [[5, 1, 7], [], None], [[2, None]], [[9], [10, 11], [3]]]
FLOATS = [[[1.5, None], [4.0]], [[-2.0]], [], None, [[3.0], [], None], [[0.0, 8.0]], [[100.0], [2.5]]]


@pytest.fixture
def data(tmp_path):
    path = str(tmp_path / "d.parquet")
    pq.write_table(pa.table({"x": pa.array(INTS, type=pa.list_(pa.list_(pa.int64()))),
                             "f": pa.array(FLOATS, type=pa.list_(pa.list_(pa.float64()))),
                             "row": np.arange(len(INTS))}), path, row_group_size=4)
    return path


def _run(path, selection, backend_name, save_dir=None):
    ds = tp.Dataset(path, cpu=backend_name == "cpu")
    wf = tp.Workflow(selection + ["row"])
    wf.fit(ds)
    if save_dir is not None:
        wf.save(save_dir)
        wf = tp.Workflow.load(save_dir)
    out = wf.transform(ds)._to_ddf().compute()  # Arrow list cells (compute() and to_ddf() give numpy cells)
    order = np.argsort(np.asarray(out["row"].to_numpy() if hasattr(out["row"], "to_numpy") else out["row"]))
    col = out[selection.output_columns[0] if hasattr(selection, "output_columns") else "x"]
    values = col.to_arrow().to_pylist() if hasattr(col, "to_arrow") else col.array._pa_array.to_pylist()
    return wf, [values[i] for i in order]


def _map(rows, fn):
    """Plain Python: ``fn`` on every leaf, nulls at the row and inner-list level kept."""
    return [None if r is None else [None if inner is None else [fn(v) for v in inner] for inner in r] for r in rows]


def test_hash_bucket_on_leaves_matches_mmh3(data, backend):
    _, got = _run(data, ["x"] >> ops.HashBucket(num_buckets=7), backend)
    assert got == _map(INTS, lambda v: 0 if v is None else ref_murmur3(v) % 7)   # null leaf -> 0


def test_categorify_ids_consistent_with_flat_list_vocabulary(data, backend, tmp_path):
    wf, got = _run(data, ["x"] >> ops.Categorify(), backend, save_dir=str(tmp_path / "wf"))
    leaves = [v for r in INTS if r for inner in r if inner for v in inner]
    # the ids of a flat list column holding the same leaves (the flat-list path, fitted alone)
    flat_path = str(tmp_path / "flat.parquet")
    pq.write_table(pa.table({"x": pa.array([leaves], type=pa.list_(pa.int64()))}), flat_path)
    flat_wf = tp.Workflow(["x"] >> ops.Categorify())
    flat_wf.fit(tp.Dataset(flat_path))
    flat_col = flat_wf.transform(tp.Dataset(flat_path))._to_ddf().compute()["x"]
    flat_ids = (flat_col.to_arrow() if hasattr(flat_col, "to_arrow") else flat_col.array._pa_array).to_pylist()[0]
    ids = dict(zip(leaves, flat_ids))
    assert got == _map(INTS, lambda v: ids[v])   # null leaf -> 2 (out of vocabulary) in both
    assert ids[None] == 2 and len(set(ids.values())) == len(ids)
    sch = wf.output_schema["x"]
    assert sch.depth == 2 and sch.leaf_dtype == "int64" and sch.cardinality == len(set(leaves) - {None}) + 3


def test_fill_missing_fills_null_leaves_only(data, backend):
    _, got = _run(data, ["f"] >> ops.FillMissing(fill_val=-1.0), backend)
    assert got == _map(FLOATS, lambda v: -1.0 if v is None else v)   # null row / inner list stay null


def test_clip_and_log_on_leaves(data, backend):
    _, got = _run(data, ["f"] >> ops.FillMissing(fill_val=0.0) >> ops.Clip(min_value=0.5, max_value=10.0), backend)
    assert got == _map(FLOATS, lambda v: min(max(0.0 if v is None else v, 0.5), 10.0))
    _, got = _run(data, ["f"] >> ops.FillMissing(fill_val=0.0) >> ops.LogOp(), backend)
    want = _map(FLOATS, lambda v: float(np.float32(math.log1p(0.0 if v is None else v))) if (v or 0) > -1 else "nan")
    flat_got = [v for r in got if r for i in r if i for v in i]
    flat_want = [v for r in want if r for i in r if i for v in i]
    assert [x is None for x in flat_got] == [x is None for x in flat_want]
    for g, w in zip(flat_got, flat_want):
        assert (math.isnan(g) if w == "nan" else g == pytest.approx(w, rel=1e-6))
    assert [None if r is None else [None if i is None else len(i) for i in r] for r in got] == \
        [None if r is None else [None if i is None else len(i) for i in r] for r in FLOATS]


def test_normalize_uses_every_leaf(data, backend):
    _, got = _run(data, ["f"] >> ops.FillMissing(fill_val=0.0) >> ops.Normalize(), backend)
    leaves = np.array([0.0 if v is None else v for r in FLOATS if r for i in r if i for v in i])
    mean, std = leaves.mean(), leaves.std(ddof=1)
    want = _map(FLOATS, lambda v: float(np.float32(((0.0 if v is None else v) - mean) / std)))
    assert np.allclose([v for r in got if r for i in r if i for v in i],
                       [v for r in want if r for i in r if i for v in i], rtol=1e-5)
    assert [r is None for r in got] == [r is None for r in FLOATS]


def test_list_slice_cuts_the_outer_level(data, backend):
    wf, got = _run(data, ["x"] >> ops.ListSlice(0, 2), backend)
    assert got == [None if r is None else r[:2] for r in INTS]
    assert wf.output_schema["x"].depth == 2


def test_ops_without_nested_support_refuse_by_name(data):
    with pytest.raises(TypeError, match=r"(?s)HashedCross.*'x'.*nested"):
        tp.Workflow(["x", "row"] >> ops.HashedCross(["x", "row"], num_buckets=10)).fit(tp.Dataset(data))


def test_cpu_gpu_identical_ids(data, backend):
    pytest.importorskip("cudf") if backend == "gpu" else None
    _, cpu = _run(data, ["x"] >> ops.Categorify(), "cpu")
    _, other = _run(data, ["x"] >> ops.Categorify(), backend)
    assert cpu == other


# -- the generic mechanism: flatten to one list of leaves per row, rebuild -------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_leaf = st.one_of(st.none(), st.integers(-5, 5))
_inner = st.one_of(st.none(), st.lists(_leaf, max_size=3))
_row = st.one_of(st.none(), st.lists(_inner, max_size=3))


@settings(max_examples=60, deadline=None)
@given(st.lists(_row, max_size=8))
def test_flatten_rebuild_round_trip_against_python(rows):
    import pandas as pd

    from tabprep import backend

    s = pd.Series(pd.arrays.ArrowExtensionArray(pa.array(rows, type=pa.list_(pa.list_(pa.int64())))), name="x")
    flat, structure = backend.nested_flatten(s)
    got = flat.array._pa_array.to_pylist()
    # plain Python: a null row stays null, a null inner list gives no leaf, null leaves are kept
    assert got == [None if r is None else [v for inner in r if inner is not None for v in inner] for r in rows]
    back = backend.nested_rebuild(flat, structure, "x")
    assert back.array._pa_array.to_pylist() == rows
    assert backend.list_depth(back) == 2
