"""stacked=True on the framework loaders (issue 33): batches as a few 2-D arrays
({"cats": (B, n), "conts": (B, n)}, labels), equal to numpy stacking of the per-column batches of
the same loader and seed, and to the rows pandas reads from the parquet files."""
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
pytestmark = [pytest.mark.jax, pytest.mark.filterwarnings("ignore:loader. continuous column 'z' is float64")]

import tabprep as tp  # noqa: E402
from tabprep import ops  # noqa: E402
from tabprep.loader import jax_stacked  # noqa: E402
from tabprep.loader.jax import JaxLoader  # noqa: E402

N = 1000
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CATS = ["c64", "row", "c32"]            # int64, int64, int32: stacked as int64 (int32 with x64 off)
CONTS = ["x", "z", "n"]                 # float32, float64 (float32 in batches), int64: float64 (float32)
CPU_DEVICE = dict(device="cpu")


def _canon(dtype):
    return np.dtype(jax.dtypes.canonicalize_dtype(np.dtype(dtype)))


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("stacked"))
    rng = np.random.default_rng(5)
    df = pd.DataFrame({
        "row": np.arange(N, dtype="int64"),
        "c64": rng.integers(0, 50_000, N).astype("int64"),
        "c32": rng.integers(-5, 9, N).astype("int32"),
        "x": rng.normal(size=N).astype("float32"),
        "z": rng.normal(size=N) * 1e3,
        "n": rng.integers(0, 1000, N).astype("int64"),
        "tags": [list(rng.integers(0, 9, rng.integers(0, 4))) for _ in range(N)],
        "label": (rng.random(N) < 0.4).astype("float32"),
        "label2": rng.integers(0, 5, N).astype("int64"),
    })
    for i, part in enumerate(np.array_split(np.arange(N), 3)):   # 3 files of uneven row groups
        pq.write_table(pa.Table.from_pandas(df.iloc[part], preserve_index=False),
                       os.path.join(d, f"part{i}.parquet"), row_group_size=120)
    return d, pd.read_parquet(d).set_index("row", drop=False)   # the reference rows: pandas reading the files


def _pair(cls, d, **kw):
    args = dict(batch_size=96, cats=CATS, conts=CONTS, labels=["label"], shuffle=True, seed=3, buffer_size=150,
                parts_per_chunk=2, **CPU_DEVICE)
    args.update(kw)
    return cls(d, stacked=False, **args), cls(d, stacked=True, **args)


def _np(a):
    return np.asarray(a)


def _stack(x, names, dtype):
    """The reference: numpy stacking of per-column batch arrays, cast to their result type."""
    return np.stack([_np(x[n]).reshape(-1).astype(dtype) for n in names], axis=1)   # Keras: (B, 1) columns


def _check_epoch(plain, stacked, cats, conts, labels, frame, squeeze=True, canon=None):
    """Every stacked batch equals the per-column batch stacked with numpy and the parquet rows
    (``canon``: the framework's dtype of a numpy one; JAX's by default)."""
    _canon = canon or globals()["_canon"]
    cat_dt = _canon(np.result_type(*[frame[c].dtype for c in cats])) if cats else None
    cont_dt = _canon(np.result_type(*[np.float32 if frame[c].dtype == np.float64 else frame[c].dtype
                                      for c in conts])) if conts else None
    lab_dt = _canon(np.result_type(*[frame[c].dtype for c in labels]))
    pairs = list(zip(plain, stacked))
    assert len(pairs) == len(plain) == len(stacked)
    rows = []
    for (xp_, yp), (xs, ys) in pairs:
        listed = set(xp_) - set(cats) - set(conts)   # list columns' entries: per column in both layouts
        assert set(xs) == {k for k, v in (("cats", cats), ("conts", conts)) if v} | listed
        n = len(_np(yp if len(labels) == 1 else yp[labels[0]]))
        ref_rows = None
        if cats:
            assert xs["cats"].shape == (n, len(cats)) and xs["cats"].dtype == cat_dt
            np.testing.assert_array_equal(_np(xs["cats"]), _stack(xp_, cats, cat_dt))
            if "row" in cats:
                ref_rows = _np(xs["cats"])[:, cats.index("row")]
                rows += ref_rows.tolist()
                ref = frame.loc[ref_rows]
                np.testing.assert_array_equal(_np(xs["cats"]), ref[cats].to_numpy().astype(cat_dt))
        if conts:
            assert xs["conts"].shape == (n, len(conts)) and xs["conts"].dtype == cont_dt
            np.testing.assert_array_equal(_np(xs["conts"]), _stack(xp_, conts, cont_dt))
            if ref_rows is not None:   # pandas: float64 columns narrowed to float32 as the loader does
                ref = np.stack([frame.loc[ref_rows, c].to_numpy().astype(np.float32 if frame[c].dtype == np.float64
                                                                          else frame[c].dtype).astype(cont_dt)
                                for c in conts], axis=1)
                np.testing.assert_array_equal(_np(xs["conts"]), ref)
        if len(labels) == 1 and squeeze:
            assert ys.shape == (n,) and ys.dtype == lab_dt
            np.testing.assert_array_equal(_np(ys), _np(yp).astype(lab_dt))
        else:
            assert ys.shape == (n, len(labels)) and ys.dtype == lab_dt
            ref = _np(yp) if len(labels) == 1 else _stack(yp, labels, lab_dt)
            np.testing.assert_array_equal(_np(ys), ref.reshape(n, -1).astype(lab_dt))
        if ref_rows is not None:
            np.testing.assert_array_equal(_np(ys).reshape(n, -1), frame.loc[ref_rows, labels].to_numpy()
                                          .astype(lab_dt).reshape(n, -1))
        for key in listed:   # a list column stays per column, as unstacked
            a, b = xs[key], xp_[key]
            for u, v in zip(a if isinstance(a, tuple) else [a], b if isinstance(b, tuple) else [b]):
                np.testing.assert_array_equal(_np(u), _np(v))
    return rows


@pytest.mark.parametrize("shuffle", [True, False])
@pytest.mark.parametrize("batch_size,buffer_size", [(96, 150), (64, 1000), (1000, 300)])
def test_stacked_equals_per_column_and_parquet(data, shuffle, batch_size, buffer_size):
    d, frame = data
    plain, stacked = _pair(JaxLoader, d, shuffle=shuffle, batch_size=batch_size, buffer_size=buffer_size)
    rows = _check_epoch(list(plain), list(stacked), CATS, CONTS, ["label"], frame)
    assert sorted(rows) == list(range(N))   # every row once, short last batch included
    if not shuffle:
        assert rows == list(range(N))


def test_stacked_chunks_take_one_call_per_group_of_batches(data, monkeypatch):
    # the fast path: a chunk's full batches come from one jitted call per group per up to
    # GROUP_BATCHES batches, not one per batch (joined and short batches take one each)
    d, frame = data
    calls = []
    original = jax_stacked._run
    monkeypatch.setattr(jax_stacked, "_run", lambda *a, **k: calls.append(len(a[3])) or original(*a, **k))
    monkeypatch.setattr(jax_stacked, "GROUP_BATCHES", 4)
    monkeypatch.setattr(jax_stacked, "CPU_GROUP_BATCHES", 4)   # the GPU path's calls, here on the CPU
    plain, stacked = _pair(JaxLoader, d, batch_size=25, buffer_size=500, parts_per_chunk=1)
    batches = list(stacked)
    _check_epoch(list(plain), batches, CATS, CONTS, ["label"], frame)
    assert len(batches) == N // 25 and max(calls) == 4 and len(calls) < len(batches) / 2, calls


@pytest.fixture(scope="module")
def uneven(tmp_path_factory):
    """Files of 8 different lengths: pieces of them make chunks of many lengths, different ones
    each epoch when shuffled."""
    d = str(tmp_path_factory.mktemp("uneven"))
    rng, start, frames = np.random.default_rng(11), 0, []
    for i, n in enumerate([230, 310, 170, 400, 260, 350, 190, 287]):
        df = pd.DataFrame({"row": np.arange(start, start + n, dtype="int64"),
                           "c": rng.integers(0, 1000, n).astype("int64"),
                           "x": rng.normal(size=n).astype("float32"),
                           "label": (rng.random(n) < 0.5).astype("float32")})
        pq.write_table(pa.Table.from_pandas(df, preserve_index=False), os.path.join(d, f"p{i}.parquet"))
        start += n
        frames.append(df)
    return d, pd.concat(frames).set_index("row", drop=False)


@pytest.mark.parametrize("group_batches,window", [(4, 16), (1, 16), (1, 2)])
def test_compiles_do_not_follow_chunk_lengths(uneven, monkeypatch, group_batches, window):
    # issue 33: the jitted stacking took the whole chunk block, so it compiled again for every chunk
    # length, and shuffled chunks have new lengths each epoch (15 compiles an epoch, ~0.2 s each on
    # an H200: most of JaxLoader's time with a workflow online). Windows of one shape: a second
    # epoch with another seed compiles nothing, and the first compiles a few shapes, not one per chunk
    from conftest import jax_compiles

    monkeypatch.setattr(jax_stacked, "CPU_GROUP_BATCHES", group_batches)   # 4: calls of several batches, as on a GPU
    monkeypatch.setattr(jax_stacked, "WINDOW_BATCHES", window)   # 2: several windows per chunk
    d, frame = uneven
    kw = dict(batch_size=32, cats=["row", "c"], conts=["x"], labels=["label"], shuffle=True, buffer_size=400,
              parts_per_chunk=2, **CPU_DEVICE)
    for seed, limit in ((1, 12), (2, 0)):
        plain, stacked = (JaxLoader(d, stacked=s, seed=seed, **kw) for s in (False, True))
        reference = list(plain)
        with jax_compiles() as compiled:
            batches = list(stacked)
        assert len(compiled) <= limit, (seed, len(compiled), compiled[:3])
        rows = _check_epoch(reference, batches, ["row", "c"], ["x"], ["label"], frame)
        assert sorted(rows) == frame["row"].tolist()


def test_several_labels_list_column_and_workflow(data, monkeypatch):
    monkeypatch.setattr(jax_stacked, "CPU_GROUP_BATCHES", 16)   # several batches per call, as on a GPU
    d, frame = data
    wf = tp.Workflow((["tags"] >> ops.Categorify()) + CATS + CONTS + ["label", "label2"])
    wf.fit(tp.Dataset(d, cpu=True))
    plain, stacked = (loader.map(wf) for loader in _pair(JaxLoader, d, cats=CATS + ["tags"],
                                                         labels=["label", "label2"]))
    tags = wf.transform(tp.Dataset(d, cpu=True)).compute().set_index("row")["tags"]
    pb, sb = list(plain), list(stacked)
    rows = _check_epoch(pb, sb, CATS, CONTS, ["label", "label2"], frame)
    assert sorted(rows) == list(range(N))
    x, _ = sb[0]
    values, offsets = (_np(a) for a in x["tags"])   # (values, offsets), as the per-column layout
    ends = np.append(offsets[1:], len(values))
    ids = _np(x["cats"])[:, CATS.index("row")]
    assert [values[a:b].tolist() for a, b in zip(offsets, ends)] == [list(v) for v in tags.loc[ids]]


@pytest.mark.parametrize("empty", ["cats", "conts"])
def test_an_empty_group_has_no_key(data, empty):
    d, frame = data
    names = {"cats": [] if empty == "cats" else CATS, "conts": [] if empty == "conts" else CONTS}
    plain, stacked = _pair(JaxLoader, d, **names)
    _check_epoch(list(plain), list(stacked), names["cats"], names["conts"], ["label"], frame)


def test_global_rank_shards_and_drop_last(data, monkeypatch):
    monkeypatch.setattr(jax_stacked, "CPU_GROUP_BATCHES", 16)   # several batches per call, as on a GPU
    d, frame = data
    for rank in (0, 1):
        plain, stacked = _pair(JaxLoader, d, global_size=2, global_rank=rank, drop_last=True, batch_size=70)
        sb = list(stacked)
        assert all(x["cats"].shape[0] == 70 for x, _ in sb)
        _check_epoch(list(plain), sb, CATS, CONTS, ["label"], frame)


def test_torch_stacked_equals_per_column(data):
    torch = pytest.importorskip("torch")
    from tabprep.loader.torch import TorchAsyncItr

    d, frame = data
    plain, stacked = _pair(TorchAsyncItr, d, cats=CATS + ["tags"], labels=["label", "label2"])
    pb = [({k: (tuple(t.numpy() for t in v) if isinstance(v, tuple) else v.numpy()) for k, v in x.items()},
           {k: v.numpy() for k, v in y.items()}) for x, y in plain]
    sb = list(stacked)
    assert all(isinstance(x["cats"], torch.Tensor) for x, _ in sb)
    sb = [({k: (tuple(t.numpy() for t in v) if isinstance(v, tuple) else v.numpy()) for k, v in x.items()},
           y.numpy()) for x, y in sb]
    rows = _check_epoch(pb, sb, CATS, CONTS, ["label", "label2"], frame, canon=np.dtype)   # torch keeps 64 bits
    assert sorted(rows) == list(range(N))


def test_int64_beyond_int32_is_refused_and_odd_groups(tmp_path):
    big = 2**40 + 3
    df = pd.DataFrame({"user": np.array([1, big, 7, 9], dtype="int64"), "u": np.arange(4, dtype="uint64"),
                       "cats": [[1], [2], [], [3]], "y": np.array([0, 1, 0, 1], dtype="float32")})
    with pytest.raises(OverflowError, match="'user'.*jax_enable_x64"):
        next(iter(JaxLoader(tp.Dataset(df), batch_size=4, cats=["user"], labels=["y"], stacked=True)))
    with pytest.raises(TypeError, match=r"user \(int64\), u \(uint64\) have no common integer dtype"):   # uint64 with int64: float64
        next(iter(JaxLoader(tp.Dataset(df.assign(user=3)), batch_size=4, cats=["user", "u"], labels=["y"],
                            stacked=True)))
    with pytest.raises(ValueError, match=r"list column\(s\) \['cats'\]"):
        next(iter(JaxLoader(tp.Dataset(df.assign(user=3)), batch_size=4, cats=["user", "cats"], labels=["y"],
                            stacked=True)))


def test_batch_joined_from_files_of_other_dtypes(tmp_path):
    # a column int32 in one file and int64 in the next: the batch joining them has no blocks, and its
    # groups are stacked from its columns (the same result types)
    for i, dtype in enumerate(["int32", "int64"]):
        pd.DataFrame({"row": np.arange(i * 50, i * 50 + 50, dtype="int64"), "c": np.arange(50).astype(dtype),
                      "x": np.linspace(0, 1, 50, dtype="float32"), "label": np.zeros(50, "float32")}
                     ).to_parquet(tmp_path / f"p{i}.parquet")
    plain, stacked = _pair(JaxLoader, str(tmp_path), cats=["row", "c"], conts=["x"], batch_size=30, buffer_size=50,
                           parts_per_chunk=1, shuffle=False)
    frame = pd.read_parquet(tmp_path).set_index("row", drop=False)
    rows = _check_epoch(list(plain), list(stacked), ["row", "c"], ["x"], ["label"], frame)
    assert rows == list(range(100))


def _run_script(script, gpu=False, **env_extra):
    cpu_only = {} if gpu else dict(JAX_PLATFORMS="cpu", CUDA_VISIBLE_DEVICES="")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), **cpu_only, **env_extra)
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env, capture_output=True, text=True,
                         timeout=180)
    assert res.returncode == 0 and "ok" in res.stdout, (res.stdout[-2000:], res.stderr[-4000:])


def test_sharded_across_two_cpu_devices_with_x64(data):
    # devices=: axis 0 (the batch) split across 2 fake CPU devices; with 64-bit types on, the groups
    # keep numpy's result types (int64 ids, float64 for float32 beside int64)
    d, _ = data
    _run_script(f"""
        import jax, numpy as np
        from tabprep.loader.jax import JaxLoader
        assert len(jax.local_devices()) == 2 and jax.config.jax_enable_x64
        kw = dict(batch_size=96, cats={CATS!r}, conts={CONTS!r}, labels=["label"], shuffle=True, seed=2,
                  buffer_size=150, device="cpu", drop_last=True)
        plain = list(JaxLoader({d!r}, **kw))
        stacked = list(JaxLoader({d!r}, devices="local", stacked=True, **kw))
        assert len(plain) == len(stacked) == {N} // 96
        for (xp, yp), (xs, ys) in zip(plain, stacked):
            assert xs["cats"].dtype == np.int64 and xs["conts"].dtype == np.float64, (xs["cats"].dtype, xs["conts"].dtype)
            for key, names in (("cats", {CATS!r}), ("conts", {CONTS!r})):
                shards = xs[key].addressable_shards
                assert len(shards) == 2 and {{s.data.shape for s in shards}} == {{(48, len(names))}}
                ref = np.stack([np.asarray(xp[n]).astype(xs[key].dtype) for n in names], axis=1)
                np.testing.assert_array_equal(np.asarray(xs[key]), ref)
            assert {{s.data.shape for s in ys.addressable_shards}} == {{(48,)}}
            np.testing.assert_array_equal(np.asarray(ys), np.asarray(yp))
        print("ok")
    """, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_ENABLE_X64="1")


def test_keras_jax_backend_fits_stacked_batches(data):
    pytest.importorskip("keras")
    d, _ = data
    _run_script(f"""
        import keras, numpy as np
        from tabprep.loader.keras import KerasSequenceLoader
        kw = dict(label_names=["label", "label2"], cat_names={CATS!r} + ["tags"], cont_names={CONTS!r}, seed=1,
                  buffer_size=150, device="cpu", sparse_as_dense=True, sparse_names=["tags"], sparse_max={{"tags": 3}})
        plain, train = KerasSequenceLoader({d!r}, 96, **kw), KerasSequenceLoader({d!r}, 96, stacked=True, **kw)
        for (xp, yp), (xs, ys) in zip(plain, train):
            assert sorted(xs) == ["cats", "conts", "tags"] and ys.shape == (xp["row"].shape[0], 2)
            np.testing.assert_array_equal(np.asarray(xs["cats"]), np.concatenate([np.asarray(xp[n]) for n in {CATS!r}], 1))
            np.testing.assert_array_equal(np.asarray(xs["tags"]), np.asarray(xp["tags"]))
        inputs = train.keras_inputs()
        assert inputs["cats"].shape == (None, 3) and inputs["cats"].dtype == "int32", inputs
        assert inputs["conts"].shape == (None, 3) and inputs["conts"].dtype == "float32", inputs
        h = keras.layers.Concatenate()([keras.ops.cast(inputs["cats"] % 100, "float32") / 100.0, inputs["conts"] / 1000.0,
                                        keras.ops.cast(inputs["tags"], "float32")])
        model = keras.Model(inputs, keras.layers.Dense(2)(h))
        model.compile(keras.optimizers.Adam(0.01), "mse")
        hist = model.fit(train, epochs=1, verbose=0)
        assert np.isfinite(hist.history["loss"][-1]) and train._count == len(train)
        print("ok")
    """, KERAS_BACKEND="jax")


@pytest.mark.gpu
@pytest.mark.skipif(not tp.backend.has_cudf() or not any(dv.platform == "gpu" for dv in jax.devices()),
                    reason="cuDF and a CUDA build of JAX are needed")
@pytest.mark.parametrize("shuffle", [True, False])
def test_gpu_stacked_equals_cpu_across_chunk_ends(data, shuffle):
    # cupy chunk blocks imported through DLPack, stacked per chunk on the GPU: the same arrays as the
    # CPU's, with joined batches, a short last batch and several block dtypes
    d, frame = data
    kw = dict(batch_size=96, cats=CATS + ["tags"], conts=CONTS, labels=["label", "label2"], shuffle=shuffle,
              seed=7, buffer_size=150, parts_per_chunk=2, stacked=True)
    cpu = list(JaxLoader(d, device="cpu", **kw))
    gpu = list(JaxLoader(d, device=0, **kw))
    assert len(cpu) == len(gpu) == -(-N // 96)
    for (xc, yc), (xg, yg) in zip(cpu, gpu):
        for key in ("cats", "conts"):
            assert {dv.platform for dv in xg[key].devices()} == {"gpu"} and xg[key].dtype == xc[key].dtype
            np.testing.assert_array_equal(_np(xg[key]), _np(xc[key]), err_msg=key)
        np.testing.assert_array_equal(_np(yg), _np(yc))
        for a, b in zip(xg["tags"], xc["tags"]):
            np.testing.assert_array_equal(_np(a), _np(b))
    plain = list(JaxLoader(d, device=0, **{**kw, "stacked": False}))
    _check_epoch(plain, gpu, CATS, CONTS, ["label", "label2"], frame)


@pytest.mark.gpu
@pytest.mark.skipif(not tp.backend.has_cudf(), reason="cuDF is needed")
def test_gpu_torch_stacked_equals_cpu(data):
    # cupy stacking per batch, handed to torch through DLPack: CUDA tensors equal to the CPU's
    pytest.importorskip("torch")
    from tabprep.loader.torch import TorchAsyncItr

    d, _ = data
    kw = dict(batch_size=96, cats=CATS, conts=CONTS, labels=["label", "label2"], shuffle=True, seed=7,
              buffer_size=150, parts_per_chunk=2, stacked=True)
    cpu = list(TorchAsyncItr(d, device="cpu", **kw))
    gpu = list(TorchAsyncItr(d, device=0, **kw))
    assert len(cpu) == len(gpu) == -(-N // 96)
    for (xc, yc), (xg, yg) in zip(cpu, gpu):
        for key in ("cats", "conts"):
            assert xg[key].is_cuda and xg[key].dtype == xc[key].dtype
            np.testing.assert_array_equal(xg[key].cpu().numpy(), xc[key].numpy(), err_msg=key)
        np.testing.assert_array_equal(yg.cpu().numpy(), yc.numpy())


def test_keras_tensorflow_stacked_equals_per_column(data):
    # Keras' TensorFlow backend (this process's, when KERAS_BACKEND is unset): numpy stacking per batch
    if os.environ.get("KERAS_BACKEND", "tensorflow") != "tensorflow":
        pytest.skip("this process runs Keras on another backend")
    pytest.importorskip("tensorflow")
    from tabprep.loader.tensorflow import KerasSequenceLoader

    d, frame = data
    kw = dict(label_names=["label", "label2"], cat_names=CATS + ["tags"], cont_names=CONTS, seed=4, buffer_size=150,
              device="cpu")
    plain = [(x, y) for x, y in KerasSequenceLoader(d, 96, **kw)]
    stacked = list(KerasSequenceLoader(d, 96, stacked=True, **kw))
    pb = [({k: v.numpy() for k, v in x.items()}, {k: v.numpy() for k, v in y.items()}) for x, y in plain]
    sb = [({k: v.numpy() for k, v in x.items()}, y.numpy()) for x, y in stacked]
    assert set(sb[0][0]) == {"cats", "conts", "tags__values", "tags__nnzs"}
    rows = _check_epoch(pb, sb, CATS, CONTS, ["label", "label2"], frame, squeeze=False, canon=np.dtype)
    assert sorted(rows) == list(range(N))


@pytest.mark.parametrize("stacked", [True, False])
def test_int64_beyond_int32_later_in_a_chunk_is_refused_at_its_first_batch(tmp_path, stacked):
    # both layouts check a chunk's 64-bit columns once, over all its rows (per column, two reductions
    # and copies per column and batch were, on a GPU, two waits for the device each): the value in
    # the chunk's 6th batch is refused before any batch of that chunk is handed out (never narrowed)
    big = -(2**35)
    user = np.arange(1000, dtype="int64")
    user[555] = big
    pd.DataFrame({"user": user, "y": np.zeros(1000, dtype="float32")}).to_parquet(tmp_path / "d.parquet",
                                                                               row_group_size=100)
    loader = JaxLoader(str(tmp_path / "d.parquet"), batch_size=100, cats=["user"], labels=["y"], stacked=stacked,
                       shuffle=False, buffer_size=400, device="cpu")   # chunks of rows 0-399, 400-799, 800-999
    got = []
    with pytest.raises(OverflowError, match=f"'user' holds {big}, beyond int32"):
        for x, _ in loader:
            got.append(_np(x["cats" if stacked else "user"]))
    assert len(got) == 4 and np.concatenate(got).ravel().tolist() == list(range(400))


@pytest.mark.gpu
@pytest.mark.skipif(not tp.backend.has_cudf() or not any(dv.platform == "gpu" for dv in jax.devices()),
                    reason="cuDF and a CUDA build of JAX are needed")
def test_gpu_keras_jax_stacked_equals_cpu(data):
    # Keras on JAX with stacked=True on the GPU (chunks stacked by jitted calls on the device): the
    # same tensors as on the CPU, labels (B, 2)
    d, _ = data
    _run_script(f"""
        import numpy as np
        from tabprep.loader.keras import KerasSequenceLoader
        kw = dict(label_names=["label", "label2"], cat_names={CATS!r}, cont_names={CONTS!r}, seed=6, buffer_size=150,
                  parts_per_chunk=2, stacked=True)
        cpu = list(KerasSequenceLoader({d!r}, 96, device="cpu", **kw))
        gpu = list(KerasSequenceLoader({d!r}, 96, device=0, **kw))
        assert len(cpu) == len(gpu) == -(-{N} // 96)
        for (xc, yc), (xg, yg) in zip(cpu, gpu):
            assert {{dv.platform for dv in xg["cats"].devices()}} == {{"gpu"}}
            for key in ("cats", "conts"):
                np.testing.assert_array_equal(np.asarray(xg[key]), np.asarray(xc[key]), err_msg=key)
            assert yg.shape == (xc["cats"].shape[0], 2)
            np.testing.assert_array_equal(np.asarray(yg), np.asarray(yc))
        print("ok")
    """, gpu=True, KERAS_BACKEND="jax")


def test_windows_hold_their_calls_batches_inside_the_chunk_in_few_shapes():
    # the windows a chunk's calls are made from (jax_stacked.window_batches / window_start): every
    # call's batches (padded with its last start, as _chunk_batches does) lie in its window, the
    # window lies in the chunk, and its length is a power of 2 of batches (a few shapes, so a few
    # compiles) -- over chunk lengths, batch sizes and first rows
    from tabprep.loader.jax_stacked import _group_size, window_batches, window_start

    shapes = set()
    for batch in (1, 3, 7, 32):
        for rows in range(batch, 36 * batch + 5, max(1, batch // 4)):
            for cpu in (False, True):
                count = _group_size(rows, batch, cpu)
                for first in range(0, rows - batch + 1, max(1, batch // 3)):
                    starts = list(range(first, rows - batch + 1, batch))[:count]
                    starts += [starts[-1]] * (count - len(starts))
                    n = window_batches(rows, batch, count)
                    length = n * batch
                    ws = window_start(first, length, rows)
                    assert 0 <= ws and ws + length <= rows, (batch, rows, first)
                    assert all(ws <= s and s + batch <= ws + length for s in starts), (batch, rows, first)
                    assert n & (n - 1) == 0 and count & (count - 1) == 0 and n >= count
                    shapes.add((n, count))
    assert shapes <= {(n, c) for n in (1, 2, 4, 8, 16) for c in (1, 2, 4, 8, 16) if n >= c}
