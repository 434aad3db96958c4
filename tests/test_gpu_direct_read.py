"""The GPU loader's direct parquet reads (tabprep.backend.gpu_parquet) against cudf.read_parquet of
the same row groups and columns: equal frames (values, nulls, dtypes, column order) for every column
kind a loader reads, footers re-parsed when a file changes, and cuDF's reader where it does not apply."""
from __future__ import annotations

import os
import time

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.gpu


def _table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    ints = pa.array(rng.integers(-9, 9, n), mask=rng.random(n) < 0.2)
    lists = pa.array([None if i % 7 == 0 else list(range(i % 4)) for i in range(n)], pa.list_(pa.int64()))
    nested = pa.array([[[i, i + 1], []] if i % 5 else None for i in range(n)], pa.list_(pa.list_(pa.int32())))
    return pa.table({
        "i": ints, "f": pa.array(rng.normal(size=n).astype(np.float32)), "b": pa.array(rng.random(n) < 0.5),
        "u8": pa.array(rng.integers(0, 255, n).astype(np.uint8)), "s": pa.array([f"v{i % 3}" for i in range(n)]),
        "d": pa.array([f"k{i % 4}" for i in range(n)]).dictionary_encode(), "l": lists, "nested": nested,
        "y": pa.array(rng.integers(0, 2, n).astype(np.float64)),
    })


def test_direct_reads_equal_cudf_read_parquet(tmp_path):
    cudf = pytest.importorskip("cudf")
    from tabprep.backend import gpu, gpu_parquet

    paths = []
    for k in range(2):
        p = str(tmp_path / f"p{k}.parquet")
        pq.write_table(_table(1000 + k, k), p, row_group_size=300)
        # a pandas index column too: the direct read leaves it out (default index), as the loader's columns do
        paths.append(p)
    cols = ["y", "nested", "i", "l", "f", "b", "u8", "s", "d"]   # not the file's order
    for groups in ([[0, 2], [1, 3]], [[3], [0]], None):
        want = cudf.read_parquet(paths, columns=cols, row_groups=groups)
        got = gpu_parquet.read_local(paths, groups, cols)
        assert list(got.columns) == cols
        pd.testing.assert_frame_equal(got.to_pandas(), want.reset_index(drop=True).to_pandas())
        for c in cols:
            assert got[c].dtype == want[c].dtype, c
    one = gpu.read_parquet_piece(paths[1], [2], cols, direct=True)
    pd.testing.assert_frame_equal(one.to_pandas(), cudf.read_parquet(paths[1], columns=cols, row_groups=[[2]]).to_pandas())


def test_direct_read_sees_a_rewritten_file_and_falls_back_where_it_does_not_apply(tmp_path, caplog):
    pytest.importorskip("cudf")
    from tabprep.backend import gpu, gpu_parquet

    p = str(tmp_path / "a.parquet")
    pq.write_table(pa.table({"x": np.arange(10)}), p)
    assert gpu_parquet.read_local([p], None, ["x"])["x"].to_pandas().tolist() == list(range(10))
    time.sleep(0.01)
    pq.write_table(pa.table({"x": np.arange(5, 25)}), p, row_group_size=4)
    os.utime(p, ns=(time.time_ns(), time.time_ns()))
    assert gpu_parquet.read_local([p], [[1, 2]], ["x"])["x"].to_pandas().tolist() == list(range(9, 17))
    # no column list, or TABPREP_GPU_DIRECT_READ=0: cuDF's reader (same values)
    assert gpu_parquet.read([p], None, None, None) is None
    os.environ["TABPREP_GPU_DIRECT_READ"] = "0"
    try:
        assert gpu_parquet.read([p], None, ["x"], None) is None
        assert gpu.read_parquet_piece(p, [0], ["x"], direct=True)["x"].to_pandas().tolist() == [5, 6, 7, 8]
    finally:
        del os.environ["TABPREP_GPU_DIRECT_READ"]
    # a file the direct path cannot read: cuDF's reader raises as before
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet at all")
    with pytest.raises(Exception):
        gpu.read_parquet_piece(str(bad), None, ["x"], direct=True)


def test_gpu_loader_with_direct_reads_equals_the_cpu_loader(tmp_path):
    cupy = pytest.importorskip("cupy")
    from tabprep.loader import DataLoader

    for k in range(3):
        df = pd.DataFrame({"c": np.arange(k * 700, (k + 1) * 700) % 97, "x": np.linspace(0, 1, 700, dtype=np.float32),
                           "y": np.arange(700) % 2})
        df.to_parquet(tmp_path / f"p{k}.parquet", row_group_size=100)

    def batches(device, parts):
        ld = DataLoader(str(tmp_path), 256, cat_names=["c"], cont_names=["x"], label_names=["y"], shuffle=True,
                        seed=2, buffer_size=300, parts_per_chunk=parts, device=device)
        return [{k: cupy.asnumpy(v) if isinstance(v, cupy.ndarray) else np.asarray(v) for k, v in b.items()}
                for b in ld]

    for parts in (1, 3):
        cpu, gpu_b = batches("cpu", parts), batches(0, parts)
        assert len(cpu) == len(gpu_b)
        for a, b in zip(cpu, gpu_b):
            for k in a:
                np.testing.assert_array_equal(a[k], b[k])


def test_reads_on_their_own_stream_equal_cudf_and_the_loader_equals_the_cpu_loader(tmp_path, monkeypatch):
    """``TABPREP_GPU_READ_STREAM=1``: every column kind read on a non-blocking stream equals
    ``cudf.read_parquet``, and a shuffled GPU loader with a workflow online (raw frames held until
    their chunk's event) gives the CPU loader's batches, in 1 and 2 preparing threads."""
    cudf = pytest.importorskip("cudf")
    cupy = pytest.importorskip("cupy")
    import tabprep as tp
    from tabprep import ops
    from tabprep.backend import gpu_parquet
    from tabprep.loader import DataLoader

    monkeypatch.setenv("TABPREP_GPU_READ_STREAM", "1")
    assert gpu_parquet.own_stream_enabled()
    path = str(tmp_path / "t.parquet")
    pq.write_table(_table(3000, 5), path, row_group_size=700)
    cols = ["nested", "i", "f", "b", "u8", "s", "d", "l", "y"]
    got = gpu_parquet.read_local([path], [[0, 2, 3]], cols)
    want = cudf.read_parquet(path, row_groups=[[0, 2, 3]], columns=cols)
    assert list(got.columns) == cols
    pd.testing.assert_frame_equal(got.to_pandas(), want.reset_index(drop=True).to_pandas())

    rng = np.random.default_rng(3)
    for k in range(4):
        n = 900
        df = pd.DataFrame({"c": pd.array(rng.integers(0, 50, n), dtype="Int64"), "x": rng.normal(size=n),
                           "y": np.arange(n) % 2})
        df.loc[rng.random(n) < 0.1, "c"] = pd.NA
        df.loc[rng.random(n) < 0.1, "x"] = np.nan
        df.to_parquet(tmp_path / f"p{k}.parquet", row_group_size=150)
    files = sorted(str(p) for p in tmp_path.glob("p*.parquet"))
    wf = tp.Workflow((["c"] >> ops.HashBucket(100)) + (["x"] >> ops.FillMissing() >> ops.Normalize()) + ["y"])
    wf.fit(tp.Dataset(files, cpu=True))

    def batches(device, threads):
        ld = DataLoader(files, 200, cat_names=["c"], cont_names=["x"], label_names=["y"], shuffle=True, seed=4,
                        buffer_size=600, device=device, threads=threads).map(wf)
        return [{k: cupy.asnumpy(v) if isinstance(v, cupy.ndarray) else np.asarray(v) for k, v in b.items()}
                for b in ld]

    cpu = batches("cpu", 1)
    for threads in (1, 2):
        gpu_b = batches(0, threads)
        assert len(cpu) == len(gpu_b)
        for a, b in zip(cpu, gpu_b):
            np.testing.assert_array_equal(a["c"], b["c"])
            np.testing.assert_array_equal(a["y"], b["y"])
            np.testing.assert_allclose(a["x"], b["x"], rtol=1e-6)


def test_a_held_frame_is_released_after_its_event_and_waited_for_when_dropped():
    cupy = pytest.importorskip("cupy")
    import gc
    import weakref

    from tabprep.backend.core import CudaDevice

    class Held:
        pass

    dev = CudaDevice(0)
    obj = Held()
    ref = weakref.ref(obj)
    token = dev.mark_ready(keep=obj)
    del obj
    assert ref() is not None                  # held by the token
    token.synchronize()
    gc.collect()
    assert ref() is None                      # released once the event is waited on
    obj = Held()
    ref = weakref.ref(obj)
    token = dev.mark_ready(keep=obj)
    del obj, token                            # dropped unwaited: waits, then releases
    gc.collect()
    assert ref() is None
    assert dev.mark_ready() is not None and not hasattr(dev.mark_ready(), "obj")   # no keep: the bare event
    cupy.cuda.Device(0).synchronize()
