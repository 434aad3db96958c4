"""The JAX adapter (tabprep.loader.jax): batches equal to the offline transform, one compile
per shape with dense lists, sharding across (fake CPU) devices, errors for unsplittable input."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

jax = pytest.importorskip("jax")
pytestmark = pytest.mark.jax

import tabprep as tp  # noqa: E402
from tabprep import ops  # noqa: E402
from tabprep.loader.jax import JaxLoader, Loader  # noqa: E402

N = 2000
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _write(d, n=N):
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"row": np.arange(n, dtype="int64"), "C1": rng.integers(0, 30, n),
                       "x": rng.normal(size=n), "tags": [list(rng.integers(0, 9, rng.integers(0, 4))) for _ in range(n)],
                       "label": (rng.random(n) < 0.3).astype("float32")})
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), os.path.join(d, "part0.parquet"),
                   row_group_size=400)
    return df


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("jax_loader"))
    _write(d)
    wf = tp.Workflow((["C1", "tags"] >> ops.Categorify() >> ops.ValueCount()) + (["x"] >> ops.Normalize())
                     + ["row", "label"])
    wf.fit(tp.Dataset(d, cpu=True))
    offline = wf.transform(tp.Dataset(d, cpu=True)).compute().set_index("row")
    return d, wf, offline


def _loader(d, wf, **kw):
    args = dict(batch_size=250, cats=["C1", "tags", "row"], conts=["x"], labels=["label"], shuffle=True, seed=1,
                buffer_size=600, device="cpu")
    args.update(kw)
    return JaxLoader(d, **args).map(wf)


def test_epoch_matches_offline_and_dense_lists(data):
    d, wf, offline = data
    loader = _loader(d, wf, sparse_as_dense=True, drop_last=True)
    width = wf.output_schema["tags"].value_count["max"]
    rows = []
    for x, y in loader:
        assert isinstance(x["C1"], jax.Array) and x["x"].dtype == np.float32 and x["tags"].shape == (250, width)
        r = np.asarray(x["row"])
        rows += r.tolist()
        ref = offline.loc[r]
        np.testing.assert_array_equal(np.asarray(x["C1"]), ref["C1"].to_numpy())
        np.testing.assert_allclose(np.asarray(x["x"]), ref["x"].to_numpy().astype("float32"), rtol=1e-6)
        np.testing.assert_array_equal(np.asarray(y), ref["label"].to_numpy())
        assert np.asarray(x["tags"]).tolist() == [list(v) + [0] * (width - len(v)) for v in ref["tags"]]
    assert sorted(rows) == list(range(N))
    assert Loader is JaxLoader


def test_ragged_offsets_layout(data):
    d, wf, offline = data
    x, _ = next(iter(_loader(d, wf)))
    values, offsets = (np.asarray(a) for a in x["tags"])
    ends = np.append(offsets[1:], len(values))
    ref = offline.loc[np.asarray(x["row"])]["tags"]
    assert [values[a:b].tolist() for a, b in zip(offsets, ends)] == [list(v) for v in ref]


def test_jit_compiles_once_with_dense_lists(data):
    d, wf, _ = data
    traces = []

    @jax.jit
    def f(x):
        traces.append(1)
        return x["tags"].sum() + x["C1"].sum()

    for x, _ in _loader(d, wf, sparse_as_dense=True, drop_last=True):
        f(x)
    assert len(traces) == 1


def test_sharding_needs_even_dense_batches(data):
    d, wf, _ = data
    loader = _loader(d, wf, devices="local", drop_last=True, sparse_as_dense=True)
    x, _ = next(iter(loader))
    assert x["C1"].sharding == loader.sharding
    with pytest.raises(ValueError, match="drop_last=True"):
        _loader(d, wf, devices="local")
    with pytest.raises(ValueError, match="sparse_as_dense"):
        next(iter(_loader(d, wf, devices="local", drop_last=True)))


def test_sharding_refuses_a_list_column_left_ragged_by_sparse_names(data):
    # with sparse_names, the list columns not named stay ragged; their flat values were split across
    # the devices (silently when their count was even) once the core did the padding (review, 2026-11-29)
    d, wf, _ = data
    with pytest.raises(ValueError, match="list column 'tags' is ragged and cannot be split across devices"):
        next(iter(_loader(d, wf, devices="local", drop_last=True, sparse_as_dense=True, sparse_names=[])))


def test_sharding_across_two_cpu_devices(data, tmp_path):
    d, wf, _ = data
    wf.save(str(tmp_path / "wf"))
    script = textwrap.dedent(f"""
        import numpy as np, jax, tabprep as tp
        from tabprep.loader.jax import JaxLoader
        assert len(jax.local_devices()) == 2
        wf = tp.Workflow.load({str(tmp_path / 'wf')!r})
        loader = JaxLoader({d!r}, batch_size=250, cats=["C1", "tags", "row"], labels="label", devices="local",
                           drop_last=True, sparse_as_dense=True, device="cpu").map(wf)
        rows = []
        for x, y in loader:
            shards = x["row"].addressable_shards
            assert len(shards) == 2 and {{s.data.shape for s in shards}} == {{(125,)}}
            rows += np.asarray(x["row"]).tolist()
        assert sorted(rows) == list(range({N})), len(rows)
        print("ok")
    """)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "ok" in res.stdout, res.stderr[-3000:]


@pytest.mark.gpu
@pytest.mark.skipif(not tp.backend.has_cudf() or not any(dv.platform == "gpu" for dv in jax.devices()),
                    reason="cuDF and a CUDA build of JAX are needed")
def test_gpu_arrays_stay_on_device_and_equal_cpu(data):
    d, wf, _ = data
    kw = dict(sparse_as_dense=True, drop_last=True, seed=4)
    cpu = list(_loader(d, wf, **kw))
    gpu = list(_loader(d, wf, **{**kw, "device": 0}))
    assert len(cpu) == len(gpu)
    for (xc, _), (xg, _) in zip(cpu, gpu):
        assert {dv.platform for dv in xg["C1"].devices()} == {"gpu"}
        for name in ["row", "C1", "tags"]:
            np.testing.assert_array_equal(np.asarray(xg[name]), np.asarray(xc[name]), err_msg=name)


def test_importing_the_loader_keeps_jax_from_preallocating_the_gpu():
    env = {k: v for k, v in os.environ.items() if not k.startswith("XLA_PYTHON_CLIENT")}
    env["PYTHONPATH"] = ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")
    code = "import os, tabprep.loader.jax; print(os.environ.get('XLA_PYTHON_CLIENT_PREALLOCATE'))"
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert res.stdout.strip() == "false", res.stderr[-2000:]
    env["XLA_PYTHON_CLIENT_MEM_FRACTION"] = ".3"                 # the user's own setting wins
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert res.stdout.strip() == "None", res.stderr[-2000:]


@pytest.mark.gpu
@pytest.mark.skipif(not tp.backend.has_cudf(), reason="cuDF is needed")
def test_gpu_loader_in_a_jax_process_gets_a_pool_and_cudf_copies_still_work(tmp_path):
    # the failure this guards against (4x H200, cuDF 26.10, jax 0.11.2): in a process that had
    # imported JAX, the loader's switch to CudaAsyncMemoryResource made every later cuDF
    # device-to-host copy fail (cudaErrorInvalidValue); there the loader now takes RMM's
    # PoolMemoryResource. A fresh process: JAX first, a GPU loader epoch with a workflow online,
    # then a GPU fit and to_pandas, checked against pandas
    _write(str(tmp_path))
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("TABPREP_RMM_ASYNC", None)
    code = textwrap.dedent(f"""
        import numpy as np, pandas as pd, rmm
        import tabprep.loader.jax                     # JAX in the process first, as a JAX user's
        import tabprep as tp
        from tabprep import ops
        from tabprep.loader import DataLoader
        d = {str(tmp_path)!r}
        wf = tp.Workflow((["C1"] >> ops.HashBucket(num_buckets=7)) + ["row", "x", "label"])
        wf.fit(tp.Dataset(d, cpu=False))
        rows = sum(len(b["label"]) for b in DataLoader(d, 300, label_names=["label"], cat_names=["C1", "row"],
                                                        cont_names=["x"], device=0, buffer_size=700).map(wf))
        print("resource", type(rmm.mr.get_current_device_resource()).__name__)
        bucket = tp.Workflow(["x"] >> ops.Bucketize([-1.0, 0.0, 1.0]))
        got = bucket.fit_transform(tp.Dataset(d, cpu=False)).compute().to_pandas()["x"]
        x = pd.read_parquet(d)["x"].to_numpy()
        assert rows == len(x) and (got.to_numpy() == np.searchsorted([-1.0, 0.0, 1.0], x, side="right")).all()
        print("ok")
    """)
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and "ok" in res.stdout, res.stderr[-3000:]
    assert "resource PoolMemoryResource" in res.stdout, res.stdout


@pytest.mark.gpu
@pytest.mark.skipif(not tp.backend.has_cudf() or not any(dv.platform == "gpu" for dv in jax.devices()),
                    reason="cuDF and a CUDA build of JAX are needed")
@pytest.mark.parametrize("handoff,window", [("1", 16), ("1", 2), ("0", 16)])
def test_gpu_batches_from_chunk_blocks_equal_cpu_across_chunk_ends(data, monkeypatch, handoff, window):
    # batches sliced from windows of chunk blocks imported once (TABPREP_JAX_CHUNK_HANDOFF=1, the
    # default; windows of 16 batches hold these whole chunks, of 2 batches not: windows near a
    # chunk's end start earlier) and copied per batch (0): every column of every batch equals the
    # CPU's, with batches that span two chunks (joined), a short last batch, and several block
    # dtypes (ids, floats, labels)
    from tabprep.loader import jax_stacked

    monkeypatch.setenv("TABPREP_JAX_CHUNK_HANDOFF", handoff)
    monkeypatch.setattr(jax_stacked, "WINDOW_BATCHES", window)
    d, wf, _ = data
    kw = dict(seed=9, buffer_size=700, batch_size=300, shuffle=True)
    cpu = list(JaxLoader(d, cats=["row", "C1"], conts=["x"], labels=["label"], device="cpu", **kw))
    gpu = list(JaxLoader(d, cats=["row", "C1"], conts=["x"], labels=["label"], device=0, **kw))
    assert len(cpu) == len(gpu) == -(-N // 300)
    for (xc, yc), (xg, yg) in zip(cpu, gpu):
        for name in ["row", "C1", "x"]:
            assert {dv.platform for dv in xg[name].devices()} == {"gpu"}
            np.testing.assert_array_equal(np.asarray(xg[name]), np.asarray(xc[name]), err_msg=name)
        np.testing.assert_array_equal(np.asarray(yg), np.asarray(yc))
    rows = np.concatenate([np.asarray(x["row"]) for x, _ in gpu])
    np.testing.assert_array_equal(np.sort(rows), np.arange(N))


@pytest.mark.gpu
@pytest.mark.skipif(not tp.backend.has_cudf() or not any(dv.platform == "gpu" for dv in jax.devices()),
                    reason="cuDF and a CUDA build of JAX are needed")
@pytest.mark.parametrize("stacked", [False, True])
def test_gpu_compiles_do_not_follow_chunk_lengths(tmp_path, monkeypatch, stacked):
    # issue 33: chunk blocks went whole into the jitted slices, which compiled again for every chunk
    # length (shuffled chunks have new lengths each epoch): 15-36 compiles an epoch of 20M rows on an
    # H200, ~0.2 s each. Windows of one shape: a second epoch with another seed compiles nothing
    from conftest import jax_compiles

    from tabprep.loader import jax_stacked

    # windows and calls of 2 batches (powers of 2), so that the chunks here span several windows
    monkeypatch.setattr(jax_stacked, "WINDOW_BATCHES", 2, raising=False)   # (raising=False: runs on the code before windows too)
    monkeypatch.setattr(jax_stacked, "GROUP_BATCHES", 2)
    rng, start, frames = np.random.default_rng(4), 0, []
    for i, n in enumerate([230, 310, 170, 400, 260, 350, 190, 287]):
        df = pd.DataFrame({"row": np.arange(start, start + n, dtype="int64"), "c": rng.integers(0, 99, n),
                           "x": rng.normal(size=n).astype("float32"), "label": rng.random(n).astype("float32")})
        pq.write_table(pa.Table.from_pandas(df, preserve_index=False), str(tmp_path / f"p{i}.parquet"))
        start, frames = start + n, frames + [df]
    frame = pd.concat(frames).set_index("row")
    kw = dict(batch_size=32, cats=["row", "c"], conts=["x"], labels=["label"], shuffle=True, buffer_size=400,
              parts_per_chunk=2, device=0, stacked=stacked)
    for seed, limit in ((1, 20), (2, 0)):
        with jax_compiles() as compiled:
            batches = list(JaxLoader(str(tmp_path), seed=seed, **kw))
        assert len(compiled) <= limit, (seed, len(compiled), compiled[:3])
        if stacked:
            rows = np.concatenate([np.asarray(x["cats"])[:, 0] for x, _ in batches])
            xs = np.concatenate([np.asarray(x["conts"])[:, 0] for x, _ in batches])
        else:
            rows = np.concatenate([np.asarray(x["row"]) for x, _ in batches])
            xs = np.concatenate([np.asarray(x["x"]) for x, _ in batches])
        np.testing.assert_array_equal(np.sort(rows), np.arange(start))
        np.testing.assert_array_equal(xs, frame.loc[rows, "x"].to_numpy())


@pytest.mark.gpu
@pytest.mark.parametrize("start", [0, 1, 3])
def test_gpu_views_starting_inside_their_buffer_reach_xla_usable(start):
    """A cupy view at an element offset (a batch's list values) handed to JAX: XLA's GPU ops refuse
    buffers not aligned to 16 bytes, so the hand-off copies such a view; values unchanged."""
    cupy = pytest.importorskip("cupy")
    import jax.numpy as jnp

    from tabprep.loader.jax import _to_jax

    base = cupy.arange(101, dtype=cupy.int64)
    got = _to_jax(base[start:start + 50])
    np.testing.assert_array_equal(np.asarray(got.astype(jnp.int32) + 1), np.arange(start, start + 50) + 1)
    f = cupy.linspace(0, 1, 77, dtype=cupy.float32)[start:]
    np.testing.assert_allclose(np.asarray(_to_jax(f) * 2), cupy.asnumpy(f) * 2)


def test_the_columns_of_several_chunk_blocks_from_one_call_equal_their_slices():
    """``ChunkBlocks.columns_many`` (the GPU path's one jitted call for all of a batch's blocks,
    run here on numpy chunk blocks): every block's rows of the batch's span, in order, for batches
    across a chunk, windows refreshed past their end, a short last batch and a new chunk."""
    from tabprep.loader.jax import ChunkBlocks

    r = np.random.default_rng(3)
    held = ChunkBlocks()
    for rows in (1000, 777):   # two chunks: new block objects, new windows
        ids = r.integers(0, 1 << 30, (3, rows)).astype(np.int32)
        floats = r.normal(size=(2, rows)).astype(np.float32)
        label = r.random((1, rows)).astype(np.float32)
        for a in range(0, rows, 64):
            b = min(a + 64, rows)
            got = held.columns_many([(0, (ids, a, b)), (1, (floats, a, b)), (2, (label, a, b))], keep_dims=False)
            assert [len(g) for g in got] == [3, 2, 1]
            for block, cols in zip((ids, floats, label), got):
                for j, col in enumerate(cols):
                    np.testing.assert_array_equal(np.asarray(col), block[j, a:b])
                    assert np.asarray(col).dtype == block.dtype
