"""Issue 33: how the online loader forms and reads its chunks.

* A chunk holds up to ``parts_per_chunk`` pieces' worth of rows (``buffer_size`` each): where the
  files are smaller than a piece (a piece never spans files), it gathers several files' pieces.
* On the GPU a chunk's pieces are read in one cuDF call, and its batches stay those of the CPU
  (which reads piece by piece), also where the files' schemas differ or pieces are trimmed by a shard.
* On the GPU the loader gives the device RMM's async allocator unless the user chose one.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tabprep as tp
from tabprep.backend import to_numpy
from tabprep.loader import DataLoader


def _write(path, rows: int, start: int, row_group: int, int_type: str = "int64") -> None:
    rng = np.random.default_rng(start)
    df = pd.DataFrame({
        "row": np.arange(start, start + rows, dtype="int64"),
        "c": rng.integers(0, 1000, rows).astype(int_type),
        "f": rng.normal(size=rows),
        "y": rng.integers(0, 2, rows).astype("int64"),
    })
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), str(path), row_group_size=row_group)


def _rows_of_chunks(loader: DataLoader) -> list:
    plan = loader.plan(0)
    return [plan.offsets[k + 1] - plan.offsets[k] for k in range(len(plan.chunks))]


def _epoch(loader: DataLoader) -> dict:
    batches = list(loader)
    return {k: np.concatenate([to_numpy(b[k]) for b in batches]) for k in ("row", "c", "f", "y")}


def test_small_files_are_gathered_into_chunks_of_parts_per_chunk_pieces_of_rows(tmp_path):
    # 8 files of 300 rows, pieces of at most 1000 rows: a piece is a whole file (300 rows). With
    # parts_per_chunk=2 a chunk may hold 2000 rows: 6 files, then the 2 left (before: 4 chunks of 600)
    for i in range(8):
        _write(tmp_path / f"p{i}.parquet", 300, i * 300, 300)
    loader = DataLoader(str(tmp_path), 128, label_names=["y"], cat_names=["row", "c"], cont_names=["f"],
                        buffer_size=1000, parts_per_chunk=2, seed=3, device="cpu")
    assert _rows_of_chunks(loader) == [1800, 600]
    got = _epoch(loader)
    np.testing.assert_array_equal(np.sort(got["row"]), np.arange(2400))
    # every row once, and a chunk's rows are shuffled together: the first 1800 rows of the epoch
    # come from 6 files, i.e. 6 distinct blocks of 300 row ids
    assert len(np.unique(got["row"][:1800] // 300)) == 6



def test_cpu_with_a_fractional_buffer_keeps_parts_per_chunk_files_per_chunk(tmp_path):
    # buffer_size=0.1 (the default, a share of memory) makes pieces of millions of rows on the host:
    # gathering small files up to parts_per_chunk of them put every file of a dataset in one chunk,
    # 2x slower per row on the CPU (cache) and 2x the memory (docs/benchmarks.md). On the CPU a
    # fractional buffer keeps parts_per_chunk files a chunk, as before the gathering
    for i in range(8):
        _write(tmp_path / f"p{i}.parquet", 300, i * 300, 300)
    loader = DataLoader(str(tmp_path), 128, label_names=["y"], cat_names=["row", "c"], cont_names=["f"],
                        buffer_size=0.1, parts_per_chunk=2, seed=3, device="cpu")
    assert _rows_of_chunks(loader) == [600, 600, 600, 600]
    np.testing.assert_array_equal(np.sort(_epoch(loader)["row"]), np.arange(2400))

def test_big_files_keep_parts_per_chunk_pieces_per_chunk(tmp_path):
    # files larger than a piece: pieces of 1000 rows (two 500-row groups), 2 per chunk, as before
    for i in range(2):
        _write(tmp_path / f"p{i}.parquet", 3000, i * 3000, 500)
    loader = DataLoader(str(tmp_path), 256, label_names=["y"], cat_names=["row", "c"], cont_names=["f"],
                        buffer_size=1000, parts_per_chunk=2, seed=5, device="cpu")
    assert _rows_of_chunks(loader) == [2000, 2000, 2000]
    assert [len(c) for c in loader.plan(0).chunks] == [2, 2, 2]
    np.testing.assert_array_equal(np.sort(_epoch(loader)["row"]), np.arange(6000))


def test_a_piece_bigger_than_the_chunk_target_is_a_chunk_alone(tmp_path):
    _write(tmp_path / "a.parquet", 100, 0, 100)
    _write(tmp_path / "b.parquet", 5000, 100, 5000)   # one row group: one piece of 5000 rows
    _write(tmp_path / "c.parquet", 100, 5100, 100)
    loader = DataLoader(str(tmp_path), 64, label_names=["y"], cat_names=["row", "c"], cont_names=["f"],
                        buffer_size=200, parts_per_chunk=1, shuffle=False, device="cpu")
    assert _rows_of_chunks(loader) == [100, 5000, 100]
    np.testing.assert_array_equal(_epoch(loader)["row"], np.arange(5200))


GPU = pytest.mark.skipif(not tp.backend.has_cudf(), reason="cuDF / a CUDA device is not available")


@pytest.mark.gpu
@GPU
@pytest.mark.parametrize("global_size", [1, 2])
def test_gpu_chunks_read_in_one_call_give_the_cpu_batches(tmp_path, global_size):
    # files of different sizes and row groups, one of them with an int32 column where the others
    # have int64 (cuDF refuses to read those together: that chunk is read piece by piece); with two
    # ranks, pieces are trimmed at the shard boundary
    sizes = [(700, 200, "int64"), (300, 300, "int64"), (1200, 250, "int32"), (500, 100, "int64"),
             (900, 300, "int64")]
    start = 0
    for i, (rows, rg, it) in enumerate(sizes):
        _write(tmp_path / f"p{i}.parquet", rows, start, rg, it)
        start += rows
    for rank in range(global_size):
        kw = dict(batch_size=256, label_names=["y"], cat_names=["row", "c"], cont_names=["f"], buffer_size=600,
                  parts_per_chunk=3, seed=17, global_size=global_size, global_rank=rank)
        cpu = _epoch(DataLoader(str(tmp_path), device="cpu", **kw))
        gpu = _epoch(DataLoader(str(tmp_path), device=0, **kw))
        for name in ("row", "c", "y"):
            np.testing.assert_array_equal(gpu[name], cpu[name], err_msg=name)
        np.testing.assert_array_equal(gpu["f"], cpu["f"])


@pytest.mark.gpu
@GPU
def test_gpu_loader_gives_the_device_rmm_async_allocator_unless_one_was_chosen(tmp_path, monkeypatch):
    import rmm

    _write(tmp_path / "a.parquet", 100, 0, 100)
    # JAX imported by another test module of this process would keep the switch from being made
    # (test_async_allocator_is_not_switched_in_a_process_that_imported_jax)
    monkeypatch.delitem(__import__("sys").modules, "jax", raising=False)
    saved = rmm.mr.get_per_device_resource(0)
    make = lambda: DataLoader(str(tmp_path), 10, label_names=["y"], cat_names=["c"], cont_names=["f"], device=0)  # noqa: E731
    try:
        rmm.mr.set_per_device_resource(0, rmm.mr.CudaMemoryResource())   # RMM's default
        make()
        assert isinstance(rmm.mr.get_per_device_resource(0), rmm.mr.CudaAsyncMemoryResource)
        chosen = rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(), initial_pool_size=2 ** 24)
        rmm.mr.set_per_device_resource(0, chosen)
        make()
        assert rmm.mr.get_per_device_resource(0) is chosen     # the user's choice is kept
        rmm.mr.set_per_device_resource(0, rmm.mr.CudaMemoryResource())
        monkeypatch.setenv("TABPREP_RMM_ASYNC", "0")
        make()
        assert type(rmm.mr.get_per_device_resource(0)) is rmm.mr.CudaMemoryResource
    finally:
        rmm.mr.set_per_device_resource(0, saved)


class _FakeRmm:
    """Stands in for RMM's ``mr`` module: records which resource each device is given (the
    decision is tabprep's; what RMM does with the resource is RMM's)."""

    class CudaMemoryResource:
        pass

    class CudaAsyncMemoryResource:
        pass

    class PoolMemoryResource:
        def __init__(self, upstream, initial_pool_size=None):
            self.upstream, self.initial_pool_size = upstream, initial_pool_size

    def __init__(self):
        self.resources = {0: self.CudaMemoryResource()}
        self.mr = self

    def get_per_device_resource(self, index):
        return self.resources[index]

    def set_per_device_resource(self, index, resource):
        self.resources[index] = resource


def test_a_process_that_imported_jax_gets_a_pool_not_the_async_allocator(monkeypatch, caplog):
    """On a 4x H200 host (cuDF 26.10, jax 0.11.2 with jax-cuda13-plugin) a GPU DataLoader's switch
    of RMM to CudaAsyncMemoryResource, in a process that had imported JAX, made later cuDF
    device-to-host copies fail (``to_arrow_host.cu: cudaErrorInvalidValue``) in every test after it;
    TABPREP_RMM_ASYNC=0 or JAX_PLATFORMS=cpu avoided it. Leaving RMM's default there made a JAX
    user's loader 1.7x slower (a cudaMalloc and a device-wide cudaFree per temporary), so with JAX
    in the process the loader takes RMM's PoolMemoryResource over plain cudaMalloc blocks instead,
    and the log says why and how to force the async one."""
    import logging
    import sys
    import types

    from tabprep.backend import core

    fake = _FakeRmm()
    monkeypatch.setitem(sys.modules, "rmm", fake)
    monkeypatch.setattr(core, "has_cudf", lambda: True)
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(
        cuda=types.SimpleNamespace(Device=lambda i: __import__("contextlib").nullcontext())))
    monkeypatch.delenv("TABPREP_RMM_ASYNC", raising=False)

    monkeypatch.delitem(sys.modules, "jax", raising=False)
    assert core.use_pooled_allocator(0) is True                  # no JAX: switched, as before
    assert isinstance(fake.resources[0], fake.CudaAsyncMemoryResource)

    fake.resources[0] = fake.CudaMemoryResource()
    monkeypatch.setitem(sys.modules, "jax", types.ModuleType("jax"))
    with caplog.at_level(logging.INFO, logger="tabprep.backend"):
        assert core.use_pooled_allocator(0) is True
    pool = fake.resources[0]
    assert type(pool) is fake.PoolMemoryResource and type(pool.upstream) is fake.CudaMemoryResource
    assert pool.initial_pool_size == core.JAX_POOL_INITIAL
    assert "JAX" in caplog.text and "TABPREP_RMM_ASYNC=1" in caplog.text
    assert core.use_pooled_allocator(0) is False                 # a resource already chosen is kept

    fake.resources[0] = fake.CudaMemoryResource()
    monkeypatch.setenv("TABPREP_RMM_ASYNC", "1")                # the user forces the async one
    assert core.use_pooled_allocator(0) is True
    assert isinstance(fake.resources[0], fake.CudaAsyncMemoryResource)

    fake.resources[0] = fake.CudaMemoryResource()
    monkeypatch.setenv("TABPREP_RMM_ASYNC", "0")                # or keeps RMM's default
    assert core.use_pooled_allocator(0) is False
    assert type(fake.resources[0]) is fake.CudaMemoryResource


@pytest.mark.parametrize("longest", [3, 4, 7])
def test_the_truncation_note_names_the_longest_row_of_the_chunk_that_cuts(tmp_path, backend, longest):
    # sparse_max=4: a row of 7 values is cut (the note names 7, found in the second chunk, after
    # a chunk of null and empty rows); rows of 3 or 4 values are not cut and give no note
    import warnings

    from conftest import is_cpu

    rows = [[1], None, [], [2, 3]] * 50 + [[5] * longest] + [[1, 2]] * 99
    table = pa.table({"lst": pa.array(rows, pa.list_(pa.int64())), "y": pa.array(np.arange(len(rows)) % 2)})
    pq.write_table(table, str(tmp_path / "a.parquet"), row_group_size=200)
    loader = DataLoader(str(tmp_path), 50, label_names=["y"], cat_names=["lst"], sparse_as_dense=True,
                        sparse_max={"lst": 4}, buffer_size=200, parts_per_chunk=1, shuffle=False,
                        device="cpu" if is_cpu(backend) else 0)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        batches = list(loader)
    notes = [str(w.message) for w in seen if "more than its sparse_max" in str(w.message)]
    if longest > 4:
        assert len(notes) == 1 and f"rows of up to {longest} values" in notes[0], notes
    else:
        assert notes == []
    got = np.concatenate([to_numpy(b[0]["lst"] if isinstance(b, tuple) else b["lst"]) for b in batches])
    want = np.array([(r or [])[:4] + [0] * (4 - len((r or [])[:4])) for r in rows])
    np.testing.assert_array_equal(got, want)
