"""The framework-neutral online loader (tabprep.loader.core): parity with the offline transform,
shuffling, sharding, batching, random access, prefetch-thread errors. No TensorFlow here."""
from __future__ import annotations

import gc
import threading
import time
from typing import Dict, List

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tabprep as tp
from tabprep import ops
from tabprep.backend import to_numpy
from tabprep.loader import DataLoader, RaggedBatch
from tabprep.loader.core import PAD_ID, _RaggedColumn, pad_ragged, plan_pieces, shard_rows, take_ragged, _Unit

ROWS_PER_FILE = 1500
NFILES = 3
N = ROWS_PER_FILE * NFILES


def _frame(seed: int, n: int, start: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    c1 = pd.array(rng.integers(0, 40, n), dtype="Int64")
    c1[rng.random(n) < 0.1] = pd.NA
    i1 = rng.normal(size=n)
    i1[rng.random(n) < 0.1] = np.nan
    return pd.DataFrame({
        "row": np.arange(start, start + n, dtype="int64"),           # to follow rows around
        "C1": c1,
        "C2": pd.Series(rng.choice(["a", "b", "c", "d"], n), dtype="str"),
        "C3": rng.integers(0, 10_000, n),
        "I1": i1,
        "tags": [list(rng.integers(0, 30, rng.integers(0, 5))) for _ in range(n)],
        "label": rng.integers(0, 2, n).astype("int64"),
    })


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> str:
    d = tmp_path_factory.mktemp("loader_data")
    for f in range(NFILES):
        df = _frame(f, ROWS_PER_FILE, f * ROWS_PER_FILE)
        pq.write_table(pa.Table.from_pandas(df, preserve_index=False), str(d / f"part{f}.parquet"),
                       row_group_size=400)
    return str(d)


def _workflow(cpu: bool = True) -> tp.Workflow:
    cats = ["C1", "C2", "tags"] >> ops.Categorify()
    hashed = ["C3"] >> ops.HashBucket(num_buckets=97)
    conts = ["I1"] >> ops.FillMissing() >> ops.Normalize()
    return tp.Workflow(cats + hashed + conts + ["label", "row"])


@pytest.fixture(scope="module")
def fitted(data_dir):
    wf = _workflow()
    ds = tp.Dataset(data_dir, cpu=True)
    wf.fit(ds)
    offline = wf.transform(ds).compute()
    return wf, offline


def _loader(path, **kw) -> DataLoader:
    args = dict(batch_size=256, label_names=["label"], cat_names=["C1", "C2", "C3", "tags", "row"],
                cont_names=["I1"], buffer_size=700, parts_per_chunk=2, seed=7, device="cpu")
    args.update(kw)
    return DataLoader(path, **args)


def _collect(batches: List[Dict]) -> Dict[str, object]:
    """Concatenate an epoch's batches: scalars as arrays, lists as python lists per row."""
    out: Dict[str, object] = {}
    for name, first in batches[0].items():
        if isinstance(first, RaggedBatch):
            rows = []
            for b in batches:
                vals, lens = to_numpy(b[name].values), to_numpy(b[name].lengths)
                offs = np.concatenate([[0], np.cumsum(lens)])
                rows += [vals[offs[i]:offs[i + 1]].tolist() for i in range(len(lens))]
            out[name] = rows
        else:
            out[name] = np.concatenate([to_numpy(b[name]) for b in batches])
    return out


def _offline_lists(offline: pd.DataFrame, name: str) -> List[list]:
    return [list(v) for v in pa.array(offline[name]).to_pylist()]


# ---------------------------------------------------------------------------------------
# planning
# ---------------------------------------------------------------------------------------
def test_shard_rows_equal_counts_and_cover():
    for n in (1, 7, 10, 11, 12, 1000):
        for size in (1, 2, 3, 4):
            for drop_last in (False, True):
                ranges = [shard_rows(n, size, r, drop_last) for r in range(size)]
                counts = {sum(b - a for a, b in rs) for rs in ranges}
                assert len(counts) == 1, (n, size, drop_last, ranges)
                rows = [i for rs in ranges for a, b in rs for i in range(a, b)]
                if drop_last:
                    assert len(rows) == len(set(rows)) and len(rows) >= n - (size - 1)
                else:
                    assert set(rows) == set(range(n)) and len(rows) - n <= size - 1
    with pytest.raises(ValueError):
        shard_rows(10, 2, 2, False)


def test_plan_pieces_keeps_groups_and_row_groups():
    units = [_Unit(0, 0, 100), _Unit(0, 1, 100), _Unit(0, 2, 500), _Unit(1, 0, 50), _Unit(1, 1, 50)]
    pieces = plan_pieces(units, 250)
    assert [p.units for p in pieces] == [(0, 1), (2,), (3, 4)]
    assert [p.num_rows for p in pieces] == [200, 500, 100]


def test_ragged_helpers():
    col = _RaggedColumn(np.array([1, 2, 3, 4, 5, 6]), np.array([0, 2, 2, 5, 6]))
    perm = np.array([3, 0, 2, 1])
    out = take_ragged(col, perm)
    assert out.offsets.tolist() == [0, 1, 3, 6, 6]
    assert out.values.tolist() == [6, 1, 2, 3, 4, 5]
    dense = pad_ragged(col, 2)
    assert dense.tolist() == [[1, 2], [PAD_ID, PAD_ID], [3, 4], [6, PAD_ID]]


# ---------------------------------------------------------------------------------------
# parity with the offline transform
# ---------------------------------------------------------------------------------------
def test_map_workflow_matches_offline_transform(data_dir, fitted, backend):
    wf, offline = fitted       # the offline reference: the CPU transform (ids and floats are backend-independent)
    loader = _loader(data_dir, shuffle=False, device="cpu" if backend == "cpu" else 0).map(wf)
    batches = list(loader)
    assert len(batches) == len(loader) == -(-N // 256)
    assert all(len(to_numpy(b["row"])) == 256 for b in batches[:-1])
    got = _collect(batches)
    for name in ["C1", "C2", "C3", "row", "label"]:
        np.testing.assert_array_equal(got[name], offline[name].to_numpy(), err_msg=name)
    np.testing.assert_allclose(got["I1"], offline["I1"].to_numpy(), rtol=1e-6, atol=1e-6)
    assert got["I1"].dtype == np.float32 and got["C1"].dtype == np.int64
    assert got["tags"] == _offline_lists(offline, "tags")
    assert loader.sparse_names == ["tags"]


def test_shuffle_same_multiset_per_epoch_and_deterministic(data_dir, fitted):
    wf, offline = fitted
    loader = _loader(data_dir, shuffle=True).map(wf)
    e0 = _collect(list(loader))
    e1 = _collect(list(loader))
    assert loader.epoch == 1
    ref = offline.set_index("row")
    for ep in (e0, e1):
        order = ep["row"]
        assert sorted(order.tolist()) == list(range(N))
        np.testing.assert_array_equal(ep["C2"], ref.loc[order, "C2"].to_numpy())
        np.testing.assert_array_equal(ep["label"], ref.loc[order, "label"].to_numpy())
        expected_tags = [list(v) for v in pa.array(ref.loc[order, "tags"]).to_pylist()]
        assert ep["tags"] == expected_tags
    assert not np.array_equal(e0["row"], e1["row"])                 # a new shuffle each epoch
    assert not np.array_equal(e0["row"], np.arange(N))
    # the same seed replays the same batches; another seed does not
    again = _collect(list(_loader(data_dir, shuffle=True).map(wf)))
    np.testing.assert_array_equal(again["row"], e0["row"])
    other = _collect(list(_loader(data_dir, shuffle=True, seed=8).map(wf)))
    assert not np.array_equal(other["row"], e0["row"])


@pytest.mark.parametrize("size,drop_last", [(3, False), (4, False), (4, True)])
def test_sharded_ranks_disjoint_complete_equal_batches(data_dir, fitted, size, drop_last):
    wf, _ = fitted
    per_rank = []
    lens = set()
    for rank in range(size):
        loader = _loader(data_dir, shuffle=True, global_size=size, global_rank=rank, drop_last=drop_last,
                         batch_size=100).map(wf)
        batches = list(loader)
        assert len(batches) == len(loader)
        lens.add(len(loader))
        per_rank.append(_collect(batches)["row"].tolist())
    assert len(lens) == 1
    allrows = [r for rows in per_rank for r in rows]
    if N % size == 0 and not drop_last:                      # 4500 rows: 3 ranks divide, 4 do not
        assert sorted(allrows) == list(range(N))
    elif drop_last:
        assert len(allrows) == len(set(allrows))                 # disjoint
        assert len(allrows) >= N - (size - 1) - size * 99        # leftover rows + partial batches only
    else:
        assert set(allrows) == set(range(N))                     # complete
        assert len(allrows) - N <= size - 1                      # a few rows wrap around


def test_drop_last_and_batch_counts(data_dir, fitted):
    wf, _ = fitted
    loader = _loader(data_dir, shuffle=False, drop_last=True, batch_size=1000).map(wf)
    batches = list(loader)
    assert len(batches) == len(loader) == N // 1000
    assert {len(b["row"]) for b in batches} == {1000}
    loader = _loader(data_dir, shuffle=False, batch_size=1000, buffer_size=10_000).map(wf)
    sizes = [len(b["row"]) for b in loader]
    assert sizes == [1000] * 4 + [500]


def test_random_access_matches_sequential(data_dir, fitted):
    wf, _ = fitted
    loader = _loader(data_dir, shuffle=True).map(wf)
    seq = [loader.batch_at(i)["row"].copy() for i in range(len(loader))]
    assert loader.epoch == 0
    # jumps (re-read chunks) give the same batches of the same epoch
    for i in (5, 2, 11, len(loader) - 1, 3):
        np.testing.assert_array_equal(loader.batch_at(i)["row"], seq[i])
    assert loader.batch_at(-1)["row"].tolist() == seq[-1].tolist()
    # batch 0 after the last batch starts the next epoch
    first = loader.batch_at(0)["row"]
    assert loader.epoch == 1 and not np.array_equal(first, seq[0])
    with pytest.raises(IndexError):
        loader.batch_at(len(loader))


def test_sparse_as_dense_pads_and_truncates(data_dir, fitted):
    wf, offline = fitted
    loader = _loader(data_dir, shuffle=False, sparse_as_dense=True, sparse_max={"tags": 3}).map(wf)
    dense = np.concatenate([b["tags"] for b in loader])
    assert dense.shape == (N, 3)
    for i, row in enumerate(_offline_lists(offline, "tags")[:300]):
        expected = (row + [PAD_ID] * 3)[:3]
        assert dense[i].tolist() == expected
    with pytest.raises(ValueError, match="sparse_max"):
        _ = _loader(data_dir, sparse_as_dense=True).map(wf).sparse_max


def test_names_from_workflow_schema_and_label_passthrough(data_dir):
    cats = ["C1", "C2"] >> ops.Categorify()
    conts = ["I1"] >> ops.FillMissing() >> ops.Normalize()
    wf = tp.Workflow(cats + conts)                     # the label is not an output of the workflow
    wf.fit(tp.Dataset(data_dir, cpu=True))
    loader = DataLoader(data_dir, batch_size=500, label_names=["label"], shuffle=False, device="cpu").map(wf)
    assert loader.cat_names == ["C1", "C2"] and loader.cont_names == ["I1"]
    got = _collect(list(loader))
    raw = pd.concat([_frame(f, ROWS_PER_FILE, f * ROWS_PER_FILE) for f in range(NFILES)], ignore_index=True)
    np.testing.assert_array_equal(got["label"], raw["label"].to_numpy())


def test_transformed_dataset_without_map(data_dir, fitted, tmp_path):
    wf, offline = fitted
    ds = wf.transform(tp.Dataset(data_dir, cpu=True))
    loader = DataLoader(ds, batch_size=333, label_names=["label"], shuffle=False, device="cpu")
    assert set(loader.cat_names) == {"C1", "C2", "C3", "tags"} and loader.cont_names == ["I1"]
    got = _collect(list(loader))
    np.testing.assert_array_equal(got["C3"], offline["C3"].to_numpy())
    assert got["tags"] == _offline_lists(offline, "tags")
    # written to parquet (_schema.json beside it): the tags come back from the stored schema
    ds.to_parquet(str(tmp_path / "out"))
    loader = DataLoader(str(tmp_path / "out"), batch_size=512, label_names=["label"], shuffle=True, seed=1,
                        device="cpu")
    got = _collect(list(loader))
    assert sorted(got["C3"].tolist()) == sorted(offline["C3"].tolist())


def test_in_memory_frame_and_null_fill(caplog):
    df = pd.DataFrame({"a": pd.array([1, None, 3, 4], dtype="Int64"), "x": [0.5, np.nan, 1.5, 2.0],
                       "y": [0, 1, 0, 1]})
    loader = DataLoader(df, batch_size=3, cat_names=["a"], cont_names=["x"], label_names=["y"], shuffle=False)
    with caplog.at_level("WARNING"):
        batches = list(loader)
    assert [len(b["a"]) for b in batches] == [3, 1]
    assert batches[0]["a"].tolist() == [1, 0, 3]
    assert np.isnan(batches[0]["x"][1]) and batches[0]["x"].dtype == np.float32
    assert "nulls" in caplog.text


def test_strings_are_refused_with_advice():
    df = pd.DataFrame({"s": pd.Series(["a", "b"], dtype="str"), "y": [0, 1]})
    loader = DataLoader(df, batch_size=2, cat_names=["s"], label_names=["y"], shuffle=False)
    with pytest.raises(TypeError, match="Categorify"):
        list(loader)


def test_missing_columns_are_named():
    df = pd.DataFrame({"abc": [1, 2], "y": [0, 1]})
    with pytest.raises(KeyError, match="Did you mean 'abc'"):
        len(DataLoader(df, batch_size=2, cat_names=["abd"], label_names=["y"]))
    with pytest.raises(ValueError, match="no feature columns"):
        len(DataLoader(df, batch_size=2, label_names=["y"]))


# ---------------------------------------------------------------------------------------
# the background thread
# ---------------------------------------------------------------------------------------
class Boom(RuntimeError):
    pass


def test_error_in_prefetch_thread_reaches_consumer(data_dir):
    calls = []

    def transform(df):
        calls.append(len(df))
        if len(calls) == 2:
            raise Boom("chunk 2 is broken")
        return df

    loader = _loader(data_dir, cat_names=["C3", "row"], shuffle=False).map(transform)
    start = time.perf_counter()
    with pytest.raises(Boom, match="chunk 2 is broken"):
        for _ in loader:
            pass
    assert time.perf_counter() - start < 30
    # the loader is usable again afterwards
    calls.append("reset")
    assert sum(len(b["row"]) for b in loader) == N


def test_transform_that_drops_rows_is_refused_unless_workflow_filter(data_dir):
    loader = _loader(data_dir, cat_names=["C3", "row"], shuffle=False).map(lambda df: df.iloc[:10])
    with pytest.raises(ValueError, match="row-preserving"):
        list(loader)
    wf = tp.Workflow(["C3", "row", "label", "I1"] >> ops.Filter(lambda df: df["row"] % 2 == 0))
    wf.fit(tp.Dataset(data_dir, cpu=True))
    loader = DataLoader(data_dir, batch_size=256, cat_names=["C3", "row"], cont_names=["I1"], label_names=["label"],
                        shuffle=True, seed=0, buffer_size=700, device="cpu").map(wf)
    rows = sorted(_collect(list(loader))["row"].tolist())
    assert rows == list(range(0, N, 2))
    assert len(loader) >= -(-len(rows) // 256)


def test_threads_do_not_leak(data_dir, fitted):
    wf, _ = fitted

    def prefetch_threads():
        return [t for t in threading.enumerate() if t.name == "tabprep-loader-prefetch"]

    before = len(prefetch_threads())
    for _ in range(3):
        loader = _loader(data_dir, shuffle=True).map(wf)
        it = iter(loader)
        next(it)                      # abandon mid-epoch
        loader.batch_at(0)
        del it, loader
    gc.collect()
    deadline = time.time() + 10
    while len(prefetch_threads()) > before and time.time() < deadline:
        time.sleep(0.05)
    assert len(prefetch_threads()) <= before


def test_buffer_size_fraction_and_no_prefetch(data_dir, fitted):
    wf, offline = fitted
    loader = _loader(data_dir, shuffle=False, buffer_size=0.01, prefetch=0).map(wf)
    assert loader.piece_rows > N                       # 1% of RAM holds the whole tiny dataset
    got = _collect(list(loader))
    np.testing.assert_array_equal(got["row"], offline["row"].to_numpy())
    with pytest.raises(ValueError):
        DataLoader(data_dir, batch_size=0)


# ---------------------------------------------------------------------------------------
# GPU (cuDF chunks, cupy batches)
# ---------------------------------------------------------------------------------------
GPU = pytest.mark.skipif(not tp.backend.has_cudf(), reason="cuDF / a CUDA device is not available")


@pytest.mark.gpu
@GPU
def test_gpu_batches_equal_cpu_batches(data_dir, fitted):
    import cupy

    wf, _ = fitted
    kw = dict(shuffle=True, seed=11, sparse_as_dense=False, batch_size=300)
    cpu = list(_loader(data_dir, device="cpu", **kw).map(wf))
    gpu = list(_loader(data_dir, device=0, **kw).map(wf))
    assert len(cpu) == len(gpu)
    for a, b in zip(cpu, gpu):
        assert isinstance(b["C1"], cupy.ndarray) and isinstance(b["tags"].values, cupy.ndarray)
        for name in ["row", "C1", "C2", "label"]:
            np.testing.assert_array_equal(to_numpy(b[name]), a[name], err_msg=name)
        np.testing.assert_allclose(to_numpy(b["I1"]), a["I1"], rtol=1e-5, atol=1e-6)
        # HashBucket ids: equal only when tabprep.hashing reproduces cuDF's hash_values exactly
        np.testing.assert_array_equal(to_numpy(b["C3"]), a["C3"], err_msg=(
            "HashBucket ids differ between CPU and GPU: a core hashing-parity problem (tabprep.hashing "
            "vs cuDF hash_values), not the loader's: the rows above matched"))
        np.testing.assert_array_equal(to_numpy(b["tags"].values), a["tags"].values)
        np.testing.assert_array_equal(to_numpy(b["tags"].lengths), a["tags"].lengths)
    dense = next(iter(_loader(data_dir, device=0, sparse_as_dense=True, sparse_max={"tags": 3}, **{
        k: v for k, v in kw.items() if k != "sparse_as_dense"}).map(wf)))
    assert dense["tags"].shape == (300, 3) and isinstance(dense["tags"], cupy.ndarray)


@pytest.mark.gpu
@GPU
def test_gpu_ragged_helpers():
    import cupy

    col = _RaggedColumn(cupy.array([1, 2, 3, 4, 5, 6]), cupy.array([0, 2, 2, 5, 6]))
    out = take_ragged(col, cupy.array([3, 0, 2, 1]))
    assert out.offsets.tolist() == [0, 1, 3, 6, 6] and out.values.tolist() == [6, 1, 2, 3, 4, 5]
    assert pad_ragged(col, 2).tolist() == [[1, 2], [PAD_ID, PAD_ID], [3, 4], [6, PAD_ID]]


def test_batches_join_chunks_whose_column_dtypes_differ(tmp_path):
    # issue 33's blocks: a chunk's columns of one dtype are one 2-D block; where a column's dtype
    # changes from one file to the next, the batch that straddles the two chunks is joined column
    # by column (values and order as in pandas), and each batch's columns stay aligned and 1-D
    a = pd.DataFrame({"x": np.arange(0, 500, dtype="int32"), "f": np.arange(500) / 3.0, "y": np.arange(500)})
    b = pd.DataFrame({"x": np.arange(500, 1000, dtype="int64"), "f": np.arange(500, 1000) / 3.0,
                      "y": np.arange(500, 1000)})
    a.to_parquet(tmp_path / "a.parquet", index=False)
    b.to_parquet(tmp_path / "b.parquet", index=False)
    ref = pd.concat([a, b], ignore_index=True)
    loader = DataLoader(str(tmp_path), 300, label_names=["y"], cat_names=["x"], cont_names=["f"], shuffle=False,
                        device="cpu", buffer_size=500)
    batches = list(loader)
    assert [len(bt["y"]) for bt in batches] == [300, 300, 300, 100]
    got = {k: np.concatenate([bt[k] for bt in batches]) for k in ("x", "f", "y")}
    np.testing.assert_array_equal(got["x"], ref["x"].to_numpy())
    np.testing.assert_array_equal(got["y"], ref["y"].to_numpy())
    np.testing.assert_array_equal(got["f"], ref["f"].to_numpy().astype("float32"))
    assert batches[1]["x"].dtype == np.int64 and batches[0]["x"].dtype == np.int32
    for bt in batches:
        assert all(v.ndim == 1 and v.flags.c_contiguous for v in bt.values())
    # batches that start on a multiple of the batch size inside a chunk are 64-byte aligned (TF's
    # CPU kernels need it to take them without a copy)
    assert batches[0]["f"].ctypes.data % 64 == 0 and batches[0]["y"].ctypes.data % 64 == 0


def test_take_block_rows_are_the_gathered_columns():
    from tabprep.backend import take_block

    rng = np.random.default_rng(5)
    cols = [rng.integers(-50, 50, 1001) for _ in range(3)]
    perm = rng.permutation(1001)
    for first in (0, 1, 7):
        block = take_block(cols[0], cols, perm, first)
        assert block.shape == (3, 1001)
        for j, c in enumerate(cols):
            np.testing.assert_array_equal(block[j], c[perm])
            assert block[j, first:].ctypes.data % 64 == 0
    np.testing.assert_array_equal(take_block(cols[0], cols, None, 0)[2], cols[2])


def test_take_block_gathers_arrow_chunks_and_numpy_alike():
    # issue 33 (CPU): the no-workflow chunk's columns reach take_block as Arrow chunked arrays (one chunk
    # per row group, sliced ones too), mixed with numpy columns; every dtype's rows are numpy's gather
    from tabprep.backend import take_block

    rng = np.random.default_rng(9)
    n = 1003
    cases = {
        "int8": rng.integers(-128, 128, n).astype("int8"),
        "uint64": rng.integers(0, 2**63, n, dtype="uint64") * 2 + 1,
        "float64": np.where(rng.random(n) < 0.1, np.nan, rng.normal(size=n) * 1e300),
        "bool": rng.random(n) < 0.5,
    }
    cases["float64"][::7] = np.inf
    cases["float64"][::11] = -np.inf
    perm = rng.permutation(n)
    for dtype, values in cases.items():
        other = rng.permutation(values)
        # chunks of uneven length, the middle one a slice of a bigger array (a non-zero offset)
        chunked = pa.chunked_array([pa.array(values[:100]), pa.array(np.concatenate([values[:5], values[100:700]]))
                                    .slice(5), pa.array(values[700:])]) if dtype != "bool" else values
        for p in (perm, None):
            for first in (0, 3):
                block = take_block(chunked, [chunked, other], p, first)
                expect = [values, other] if p is None else [values[p], other[p]]
                assert block.dtype == values.dtype and block.shape == (2, n), dtype
                for j in range(2):
                    np.testing.assert_array_equal(block[j], expect[j], err_msg=dtype)
                    assert block[j, first:].ctypes.data % 64 == 0


def test_no_workflow_parquet_columns_read_without_pandas_keep_values_dtypes_and_nulls(tmp_path, caplog):
    # issue 33 (CPU): with no workflow, null-free numeric columns go from Arrow to the blocks without a
    # pandas frame; dtypes, values, nulls (0 / NaN with a warning) and row order are as pandas reads them
    rng = np.random.default_rng(3)
    frames = []
    for f in range(3):
        n = 700 + 150 * f
        nullable = pd.array(rng.integers(0, 9, n), dtype="Int64")
        nullable[rng.random(n) < 0.2] = pd.NA
        df = pd.DataFrame({
            "i8": rng.integers(-100, 100, n).astype("int8"), "u16": rng.integers(0, 60000, n).astype("uint16"),
            "i32": rng.integers(-2**31, 2**31 - 1, n).astype("int32"), "i64": rng.integers(-2**62, 2**62, n),
            "nul": nullable, "f64": rng.normal(size=n) * 1e3, "f32": rng.normal(size=n).astype("float32"),
            "y": rng.integers(0, 2, n)})
        df.loc[df.index[::17], "f64"] = np.inf
        df.loc[df.index[::13], "f32"] = np.nan
        pq.write_table(pa.Table.from_pandas(df, preserve_index=False), str(tmp_path / f"p{f}.parquet"),
                       row_group_size=250)
        frames.append(df)
    ref = pd.concat(frames, ignore_index=True)
    kw = dict(label_names=["y"], cat_names=["i8", "u16", "i32", "i64", "nul"], cont_names=["f64", "f32"],
              buffer_size=500, parts_per_chunk=2, device="cpu")
    with caplog.at_level("WARNING"):
        got = _collect(list(DataLoader(str(tmp_path), 256, shuffle=False, **kw)))
    assert "'nul' has nulls" in caplog.text
    for name in ("i8", "u16", "i32", "i64", "y"):
        assert got[name].dtype == ref[name].dtype, name
        np.testing.assert_array_equal(got[name], ref[name].to_numpy())
    np.testing.assert_array_equal(got["nul"], ref["nul"].fillna(0).to_numpy("int64"))
    for name in ("f64", "f32"):
        assert got[name].dtype == np.float32
        np.testing.assert_array_equal(got[name], ref[name].to_numpy().astype("float32"))
    # shuffled: the same batches as through the pandas path (an identity transform), every row once
    shuffled = list(DataLoader(str(tmp_path), 256, shuffle=True, seed=11, **kw))
    via_pandas = list(DataLoader(str(tmp_path), 256, shuffle=True, seed=11, **kw).map(lambda df: df))
    assert len(shuffled) == len(via_pandas) == -(-len(ref) // 256)
    for a, b in zip(shuffled, via_pandas):
        for name in a:
            assert a[name].dtype == b[name].dtype
            np.testing.assert_array_equal(a[name], b[name])
    assert sorted(_collect(shuffled)["i64"].tolist()) == sorted(ref["i64"].tolist())


def test_cpu_batches_outlive_their_loader_writable_and_unchanged(tmp_path):
    # issue 33 (CPU): a chunk's blocks come from Arrow's memory pool, which recycles freed memory:
    # batches kept by the caller must keep their memory (values unchanged while later epochs and
    # loaders allocate), stay writable numpy arrays, and 64-byte aligned where a batch starts a block
    import gc

    rng = np.random.default_rng(21)
    n = 5000
    df = pd.DataFrame({"a": rng.integers(-2**40, 2**40, n), "b": rng.integers(0, 9, n).astype("int32"),
                       "f": rng.normal(size=n).astype("float32"), "y": rng.integers(0, 2, n)})
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), str(tmp_path / "d.parquet"), row_group_size=700)
    kw = dict(label_names=["y"], cat_names=["a", "b"], cont_names=["f"], buffer_size=1500, device="cpu")
    loader = DataLoader(str(tmp_path), 512, shuffle=False, **kw)
    kept = list(loader)
    del loader
    gc.collect()
    for seed in range(3):   # more chunks allocated (and freed) from the same pool
        for bt in DataLoader(str(tmp_path), 512, shuffle=True, seed=seed, **kw):
            for v in bt.values():
                v[:] = 0
    got = _collect(kept)
    for name in ("a", "b", "f", "y"):
        np.testing.assert_array_equal(got[name], df[name].to_numpy())
    assert all(isinstance(v, np.ndarray) and v.flags.writeable for bt in kept for v in bt.values())
    assert kept[0]["a"].ctypes.data % 64 == 0 and kept[0]["f"].ctypes.data % 64 == 0


def test_buffer_pool_reuses_only_buffers_no_array_holds():
    # issue 33 (CPU): chunk memory is reused once no array made from it is alive, never before
    from tabprep.backend.batch_arrays import ALIGN, BufferPool, _aligned_empty, block_buffers

    pool = BufferPool(max_buffers=2)
    with block_buffers(pool):
        a = _aligned_empty((3, 1000), np.dtype("int32"), 0)
        view = a[1, 10:20]
        del a
        b = _aligned_empty((3, 1000), np.dtype("int32"), 0)   # a's memory is still held by `view`
        assert not np.shares_memory(b, view)
        addr = b.ctypes.data
        del b
        c = _aligned_empty((3, 1000), np.dtype("int32"), 4)   # b's buffer, free again: reused
        assert abs(c.ctypes.data - addr) < ALIGN and (c.ctypes.data + 4) % ALIGN == 0
        big = _aligned_empty((3, 5000), np.dtype("int32"), 0)   # another size: a new buffer
        assert not np.shares_memory(big, c) and not np.shares_memory(big, view)
    assert len(pool._bufs) == 2
    d = _aligned_empty((3, 1000), np.dtype("int32"), 0)   # outside block_buffers: not from the pool
    assert all(not np.shares_memory(d, np.frombuffer(buf, np.uint8)) for buf in pool._bufs)


def test_kept_batches_of_one_epoch_are_not_overwritten_by_its_later_chunks(tmp_path):
    # issue 33 (CPU): an epoch of many chunks reuses the memory of chunks whose batches are gone;
    # batches the caller keeps (and DLPack-style views of them) keep their values to the end
    rng = np.random.default_rng(23)
    n = 6000
    df = pd.DataFrame({"a": rng.integers(0, 2**40, n), "f": rng.normal(size=n).astype("float32"),
                       "y": rng.integers(0, 2, n)})
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), str(tmp_path / "d.parquet"), row_group_size=500)
    loader = DataLoader(str(tmp_path), 256, label_names=["y"], cat_names=["a"], cont_names=["f"], buffer_size=500,
                        shuffle=True, seed=4, device="cpu")
    kept, copies = [], []
    for i, bt in enumerate(loader):
        if i % 3 == 0:
            kept.append(bt["a"][::2])          # a view only: the rest of the chunk may be reused
            copies.append(bt["a"][::2].copy())
    assert len(kept) == -(-len(loader) // 3) and len(loader) > 3 * 500 // 256   # 12 chunks, 24 batches
    for k, c in zip(kept, copies):
        np.testing.assert_array_equal(k, c)


@pytest.mark.parametrize("cores,want", [(1, 1), (2, 2), (3, 2), (64, 2), (None, 1)])
def test_cpu_loader_prepares_chunks_in_two_threads_from_two_cores(data_dir, monkeypatch, cores, want):
    """The CPU default is two preparing threads wherever there are two cores (one thread on 2 cores
    left the second idle: 0.32x pyarrow's read without a workflow, 0.58x with two); one core, or an
    unknown count, one thread; ``threads=`` given is kept. Batches are the same rows either way."""
    from tabprep.backend import core as backend_core

    monkeypatch.setattr(backend_core.os, "cpu_count", lambda: cores)
    dl = DataLoader(data_dir, 50, label_names=["label"], cat_names=["row"], shuffle=False)
    assert dl.threads == want
    assert DataLoader(data_dir, 50, label_names=["label"], cat_names=["row"], threads=3).threads == 3
    one = DataLoader(data_dir, 50, label_names=["label"], cat_names=["row"], threads=1, shuffle=True, seed_fn=lambda: 5)
    many = DataLoader(data_dir, 50, label_names=["label"], cat_names=["row"], shuffle=True, seed_fn=lambda: 5)
    rows = [_collect(list(dl_))["row"] for dl_ in (one, many)]
    assert rows[0].tolist() == rows[1].tolist()

