"""NVTabular 23.08's loaders (``nvtabular.loader.tensorflow.KerasSequenceLoader``,
``nvtabular.loader.torch.TorchAsyncItr``, merlin-dataloader's JAX ``Loader``) as ported scripts
call them. Expected values are computed with pandas / numpy in the test."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep.loader import DataLoader


@pytest.fixture
def data(tmp_path):
    df = pd.DataFrame({"c": np.arange(40) % 5, "x": np.linspace(0, 1, 40), "y": (np.arange(40) % 2).astype("int64")})
    path = tmp_path / "d.parquet"
    df.to_parquet(path, row_group_size=10)
    return str(path), df


def _keras():
    pytest.importorskip("keras")
    from tabprep.loader.keras import KerasSequenceLoader

    return KerasSequenceLoader


def _torch():
    pytest.importorskip("torch")
    from tabprep.loader.torch import TorchAsyncItr

    return TorchAsyncItr


def _jax():
    pytest.importorskip("jax")
    from tabprep.loader.jax import JaxLoader

    return JaxLoader


def test_core_reader_kwargs_cpu(data):
    """NVTabular loaders forward reader_kwargs to Dataset; {"cpu": True} reads on the host
    (it raised "Dataset() got multiple values for keyword argument 'cpu'")."""
    path, df = data
    loader = DataLoader(path, batch_size=40, label_names=["y"], cat_names=["c"], cont_names=["x"], shuffle=False,
                        reader_kwargs={"cpu": True})
    assert loader.cpu
    batch = next(iter(loader))
    np.testing.assert_array_equal(np.asarray(batch["c"]).ravel(), df["c"].to_numpy())
    with pytest.raises(ValueError, match="cpu"):
        DataLoader(path, batch_size=4, device=0, reader_kwargs={"cpu": True})


@pytest.mark.tf
def test_keras_reader_kwargs_cpu(data):
    """KerasSequenceLoader(paths, batch_size, label_names, cat_names=, cont_names=, reader_kwargs={"cpu": True})."""
    KerasSequenceLoader = _keras()
    path, df = data
    loader = KerasSequenceLoader(path, batch_size=40, label_names=["y"], cat_names=["c"], cont_names=["x"],
                                 shuffle=False, reader_kwargs={"cpu": True})
    x, y = loader[0]
    np.testing.assert_array_equal(np.asarray(x["c"]).ravel(), df["c"].to_numpy())
    np.testing.assert_array_equal(np.asarray(y).ravel(), df["y"].to_numpy())


@pytest.mark.torch
def test_torch_reader_kwargs_cpu(data):
    """TorchAsyncItr(dataset, cats=, conts=, labels=, reader_kwargs={"cpu": True})."""
    TorchAsyncItr = _torch()
    path, df = data
    itr = TorchAsyncItr(path, batch_size=40, cats=["c"], conts=["x"], labels=["y"], reader_kwargs={"cpu": True})
    x, y = next(iter(itr))
    np.testing.assert_array_equal(x["c"].numpy().ravel(), df["c"].to_numpy())


@pytest.mark.jax
def test_jax_reader_kwargs_cpu(data):
    JaxLoader = _jax()
    path, df = data
    loader = JaxLoader(path, batch_size=40, cats=["c"], conts=["x"], labels=["y"], reader_kwargs={"cpu": True})
    x, y = next(iter(loader))
    np.testing.assert_array_equal(np.asarray(x["c"]).ravel(), df["c"].to_numpy())


def _weights(x, y):
    """A per-batch map as NVTabular documents it: (X, y) -> (X, y, sample_weights)."""
    return x, y, np.asarray(y).astype("float32").ravel() * 2 + 1


@pytest.mark.tf
def test_keras_map_plain_function_per_batch_sample_weights(data):
    """NVTabular's KerasSequenceLoader.map(fn) applies fn(X, y) to every batch; returning
    (X, y, w) gives Keras sample weights (model.fit takes the 3-tuple)."""
    KerasSequenceLoader = _keras()
    import keras

    path, df = data
    loader = KerasSequenceLoader(path, batch_size=8, label_names=["y"], cat_names=["c"], cont_names=["x"],
                                 shuffle=False, reader_kwargs={"cpu": True}).map(_weights)
    x, y, w = loader[0]
    np.testing.assert_array_equal(np.asarray(w), df["y"].to_numpy()[:8] * 2 + 1)
    inp = {"c": keras.Input((1,), name="c", dtype="int64"), "x": keras.Input((1,), name="x")}
    model = keras.Model(inp, keras.layers.Dense(1)(inp["x"]))
    model.compile("sgd", "mse")
    model.fit(loader, epochs=1, verbose=0)


def test_keras_loader_is_an_iterator_and_stop(data):
    """KerasSequenceLoader is an iterator as NVTabular's (next(loader) walks the epoch, then
    StopIteration) and stop() ends the epoch in progress: the next batch is the epoch's first."""
    KerasSequenceLoader = _keras()
    path, df = data
    loader = KerasSequenceLoader(path, batch_size=10, label_names=["y"], cat_names=["c"], cont_names=["x"],
                                 shuffle=False, reader_kwargs={"cpu": True})
    got = [np.asarray(next(loader)[0]["x"]).ravel() for _ in range(4)]
    np.testing.assert_allclose(np.concatenate(got), df["x"].to_numpy(), rtol=1e-6)
    with pytest.raises(StopIteration):
        next(loader)
    next(loader)  # a new epoch
    next(loader)
    loader.stop()
    np.testing.assert_allclose(np.asarray(next(loader)[0]["x"]).ravel(), df["x"].to_numpy()[:10], rtol=1e-6)


@pytest.mark.torch
def test_torch_map_per_batch_and_workflow_map_kept(data):
    """TorchAsyncItr.map(fn) per batch; map(workflow) keeps transforming chunks with the workflow."""
    TorchAsyncItr = _torch()
    from tabprep import ops

    path, df = data
    wf = tp.Workflow((["c"] >> ops.HashBucket(num_buckets=3)) + ["x", "y"])
    itr = TorchAsyncItr(path, batch_size=40, cats=["c"], conts=["x"], labels=["y"], device="cpu")
    itr.map(wf).map(lambda x, y: ({**x, "x": x["x"] * 10}, y))
    x, y = next(iter(itr))
    np.testing.assert_allclose(x["x"].numpy().ravel(), df["x"].to_numpy() * 10, rtol=1e-6)
    assert x["c"].numpy().max() < 3  # the workflow's hashing ran


@pytest.mark.torch
def test_torch_loader_is_an_iterator_stop_and_batch_size(data):
    """NVTabular's loaders are iterators (next(loader)), stop() ends the epoch, and
    TorchAsyncItr.batch_size is settable."""
    TorchAsyncItr = _torch()
    path, df = data
    itr = TorchAsyncItr(path, batch_size=10, cats=["c"], conts=["x"], labels=["y"], device="cpu")
    first = [next(itr)[0]["c"].numpy().ravel() for _ in range(4)]
    np.testing.assert_array_equal(np.concatenate(first), df["c"].to_numpy())
    with pytest.raises(StopIteration):
        next(itr)
    next(itr)  # a new epoch
    itr.stop()
    np.testing.assert_array_equal(next(itr)[0]["c"].numpy().ravel(), df["c"].to_numpy()[:10])
    itr.batch_size = 25
    assert itr.batch_size == 25 and len(itr) == 2
    assert [len(b[1]) for b in itr] == [25, 15]


@pytest.mark.jax
def test_jax_loader_next_and_map(data):
    JaxLoader = _jax()
    path, df = data
    loader = JaxLoader(path, batch_size=20, cats=["c"], conts=["x"], labels=["y"], device="cpu")
    loader.map(lambda x, y: (x, y + 1))
    x, y = next(loader)
    np.testing.assert_array_equal(np.asarray(y).ravel(), df["y"].to_numpy()[:20] + 1)


# ---------------------------------------------------------------------------------------
# dtypes of continuous columns
# ---------------------------------------------------------------------------------------
BIG = 2**24 + 1   # the first integer float32 cannot hold


@pytest.fixture
def int_conts(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({
        "n": pa.array([BIG, 2**40 + 3, -7, 0, 5, BIG + 2], pa.int64()),
        "l": pa.array([[BIG, 1], [], [2**40 + 3], [BIG + 2, -1, 0], [4], [5, 6]], pa.list_(pa.int64())),
        "l32": pa.array([[1], [2, 3], [], [4], [5], [6]], pa.list_(pa.int32())),
        "f": pa.array([0.1, 1e-9, 3.0, -2.5, 1e10 + 1, 7.0], pa.float64()),
        "y": pa.array([0, 1, 0, 1, 0, 1], pa.int64()),
    })
    path = tmp_path / "ints.parquet"
    pq.write_table(table, path, row_group_size=3)
    return str(path)


def _rows(col) -> list:
    from tabprep.backend import to_numpy

    vals, lens = to_numpy(col.values).ravel(), to_numpy(col.lengths).ravel()
    offs = np.concatenate([[0], np.cumsum(lens)])
    return [vals[offs[i]:offs[i + 1]].tolist() for i in range(len(lens))]


def test_core_integer_continuous_columns_keep_their_dtype(int_conts, backend):
    """merlin-dataloader 23.08 (NVTabular 23.08's loaders) converts every column with its own
    dtype (``_to_tensor`` is ``to_numpy()`` / ``to_cupy()``): integer columns under ``cont_names``,
    scalar or list, stay integers, so ids above 2**24 are not rounded. Float columns are float32
    (a documented tabprep difference, docs/migration.md)."""
    from tabprep.backend import to_numpy

    loader = DataLoader(int_conts, batch_size=6, label_names=["y"], cont_names=["n", "l", "l32", "f"],
                        shuffle=False, device="cpu" if backend == "cpu" else 0)
    b = next(iter(loader))
    n = to_numpy(b["n"]).ravel()
    assert n.dtype == np.int64
    assert n.tolist() == [BIG, 2**40 + 3, -7, 0, 5, BIG + 2]
    assert to_numpy(b["l"].values).dtype == np.int64
    assert _rows(b["l"]) == [[BIG, 1], [], [2**40 + 3], [BIG + 2, -1, 0], [4], [5, 6]]
    assert to_numpy(b["l32"].values).dtype == np.int32
    assert _rows(b["l32"]) == [[1], [2, 3], [], [4], [5], [6]]
    f = to_numpy(b["f"]).ravel()
    assert f.dtype == np.float32
    np.testing.assert_array_equal(f, np.array([0.1, 1e-9, 3.0, -2.5, 1e10 + 1, 7.0], "float32"))


@pytest.mark.torch
def test_torch_integer_continuous_list_keeps_int64(int_conts):
    """TorchAsyncItr(conts=[an int64 list column]): values int64, not float32 (merlin-dataloader 23.08)."""
    TorchAsyncItr = _torch()
    itr = TorchAsyncItr(int_conts, batch_size=6, conts=["n", "l"], labels=["y"], device="cpu")
    x, _ = next(iter(itr))
    values, offsets = x["l"]
    assert values.dtype.is_floating_point is False and str(values.dtype) == "torch.int64"
    assert values.numpy().ravel().tolist() == [BIG, 1, 2**40 + 3, BIG + 2, -1, 0, 4, 5, 6]
    assert str(x["n"].dtype) == "torch.int64" and x["n"].numpy().ravel().tolist()[:2] == [BIG, 2**40 + 3]


@pytest.mark.tf
def test_keras_integer_continuous_list_keeps_int64(int_conts):
    """KerasSequenceLoader(cont_names=[an int64 list column]): the values stay int64."""
    KerasSequenceLoader = _keras()
    loader = KerasSequenceLoader(int_conts, batch_size=6, label_names=["y"], cont_names=["n", "l"], shuffle=False,
                                 reader_kwargs={"cpu": True})
    x, _ = loader[0]
    vals = np.asarray(x["l__values"]).ravel()
    assert vals.dtype == np.int64 and vals.tolist() == [BIG, 1, 2**40 + 3, BIG + 2, -1, 0, 4, 5, 6]
    assert np.asarray(x["n"]).dtype == np.int64


def test_core_loader_reads_a_frame_of_numpy_list_cells():
    """A pandas frame with numpy-array list cells (what NVTabular's Dataset.compute gives) is a
    list column for the loader too (it was refused as a column of strings)."""
    df = pd.DataFrame({"l": [np.array([3, 1, 2]), np.array([], dtype="int64"), np.array([7]), np.array([1, 1])],
                       "y": [0, 1, 0, 1]})
    b = next(iter(DataLoader(df, batch_size=4, cat_names=["l"], label_names=["y"], shuffle=False, device="cpu")))
    assert _rows(b["l"]) == [[3, 1, 2], [], [7], [1, 1]]


def test_float64_continuous_columns_narrowed_to_float32_warn_once_naming_the_column(tmp_path, backend):
    """merlin-dataloader 23.08 keeps a float64 continuous column float64; tabprep's batches hold
    float32 (docs/migration.md): a migrating user is told, once per loader and column."""
    import warnings

    df = pd.DataFrame({"x": np.linspace(0, 1, 60), "f": np.linspace(0, 1, 60).astype("float32"),
                       "y": (np.arange(60) % 2).astype("int64")})
    path = tmp_path / "d.parquet"
    df.to_parquet(path, row_group_size=10)
    device = "cpu" if backend == "cpu" else 0
    with pytest.warns(tp.NVTabularDifferenceWarning, match=r"'x' is float64.*float32.*NVTabular") as rec:
        batches = list(DataLoader(str(path), 16, cont_names=["x", "f"], label_names=["y"], shuffle=False,
                                  buffer_size=20, device=device))
    assert [str(w.message) for w in rec if "float64" in str(w.message)].__len__() == 1
    assert all(str(b["x"].dtype) == "float32" for b in batches)
    np.testing.assert_array_equal(np.concatenate([tp.backend.to_numpy(b["x"]) for b in batches]),
                                  df["x"].to_numpy().astype("float32"))
    # a float32 column is not narrowed: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        list(DataLoader(str(path), 16, cont_names=["f"], label_names=["y"], shuffle=False, device=device))


def test_rows_longer_than_sparse_max_are_cut_with_a_warning_naming_the_column(tmp_path, backend):
    """merlin-dataloader 23.08 raises on a list row longer than ``sparse_max``; tabprep keeps its
    first ``sparse_max`` values (docs/migration.md) and says so once per loader and column."""
    import warnings

    rows = [[1, 2, 3, 4], [5], [], [6, 7]]
    df = pd.DataFrame({"l": [np.array(r, dtype="int64") for r in rows], "y": [0, 1, 0, 1]})
    path = tmp_path / "d.parquet"
    df.to_parquet(path)
    device = "cpu" if backend == "cpu" else 0
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        batches = list(DataLoader(str(path), 2, cat_names=["l"], label_names=["y"], shuffle=False, device=device,
                                  sparse_as_dense=True, sparse_max={"l": 2}))
    notes = [str(w.message) for w in rec if issubclass(w.category, tp.NVTabularDifferenceWarning)
             and "sparse_max" in str(w.message)]
    assert len(notes) == 1 and "'l'" in notes[0] and "up to 4 values" in notes[0], notes
    dense = np.concatenate([tp.backend.to_numpy(b["l"]) for b in batches])
    np.testing.assert_array_equal(dense, [[1, 2], [5, 0], [0, 0], [6, 7]])   # first 2 values, padded with 0
    with warnings.catch_warnings(record=True) as rec:   # every row fits: nothing said
        warnings.simplefilter("always")
        list(DataLoader(str(path), 2, cat_names=["l"], label_names=["y"], shuffle=False, device=device,
                        sparse_as_dense=True, sparse_max={"l": 4}))
    assert not [w for w in rec if "sparse_max" in str(w.message)]


def _adapter_truncation(make, path, device, size):
    """Batches of an adapter padding only ``sparse_names`` columns, and its sparse_max notes."""
    import warnings

    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        batches = list(make(str(path), batch_size=2, sparse_names=["l"], sparse_as_dense=True,
                            sparse_max={"l": size}, device=device))
    notes = [str(w.message) for w in rec if issubclass(w.category, tp.NVTabularDifferenceWarning)
             and "sparse_max" in str(w.message)]
    return batches, notes


def _ragged_frame(tmp_path):
    rows = [[1, 2, 3, 4], [5], [], [6, 7]]
    df = pd.DataFrame({"l": [np.array(r, dtype="int64") for r in rows],
                       "r": [np.array(r[:1], dtype="int64") for r in rows], "y": [0, 1, 0, 1]})
    path = tmp_path / "d.parquet"
    df.to_parquet(path)
    return path


@pytest.mark.torch
def test_torch_adapter_padding_sparse_names_warns_where_it_cuts_rows(tmp_path, backend):
    """An adapter pads only the ``sparse_names`` columns (NVTabular's per-column rule; the core loader
    pads them per chunk); rows longer than ``sparse_max`` are cut to their first values there too, with the core
    loader's warning (once per loader and column). merlin-dataloader 23.08 does not cut them (on the
    CPU it reshapes the values by the first row's length: a ValueError here, checked on 23.8.0)."""
    TorchAsyncItr = _torch()
    path = _ragged_frame(tmp_path)
    device = "cpu" if backend == "cpu" else 0

    def make(p, **kw):
        return TorchAsyncItr(p, cats=["l", "r"], labels=["y"], shuffle=False, **kw)

    batches, notes = _adapter_truncation(make, path, device, 2)
    assert len(notes) == 1 and "'l'" in notes[0] and "up to 4 values" in notes[0] and "sparse_max={'l': 4}" in notes[0]
    assert "ValueError" in notes[0]   # what NVTabular does instead
    dense = np.concatenate([b[0]["l"].cpu().numpy() for b in batches])
    np.testing.assert_array_equal(dense, [[1, 2], [5, 0], [0, 0], [6, 7]])   # first 2 values, padded with 0
    _, notes = _adapter_truncation(make, path, device, 4)
    assert notes == []                                                        # every row fits: nothing said


@pytest.mark.tf
def test_keras_adapter_padding_sparse_names_warns_where_it_cuts_rows(tmp_path):
    """KerasSequenceLoader(sparse_names=, sparse_as_dense=True, sparse_max=): the same note."""
    KerasSequenceLoader = _keras()
    path = _ragged_frame(tmp_path)

    def make(p, batch_size, device, **kw):
        return KerasSequenceLoader(p, batch_size, label_names=["y"], cat_names=["l", "r"], shuffle=False, **kw)

    batches, notes = _adapter_truncation(make, path, "cpu", 2)
    assert len(notes) == 1 and "'l'" in notes[0] and "up to 4 values" in notes[0]
    np.testing.assert_array_equal(np.concatenate([np.asarray(b[0]["l"]) for b in batches]),
                                  [[1, 2], [5, 0], [0, 0], [6, 7]])
    _, notes = _adapter_truncation(make, path, "cpu", 4)
    assert notes == []


def test_sharding_across_ranks_is_announced_once(tmp_path, monkeypatch):
    """merlin-dataloader 23.08 gives each rank whole partitions; tabprep cuts the rows into
    ``global_size`` equal contiguous ranges (docs/migration.md, "Sharding"): the first sharded
    loader of a process says so, naming ``global_size``."""
    import warnings

    from tabprep import _warn

    monkeypatch.setattr(_warn, "_ONCE", set())   # once per process: as in a fresh one
    df = pd.DataFrame({"c": np.arange(10), "y": np.arange(10) % 2})
    path = tmp_path / "d.parquet"
    df.to_parquet(path, row_group_size=3)

    def make(**kw):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            loader = DataLoader(str(path), 2, cat_names=["c"], label_names=["y"], shuffle=False, device="cpu", **kw)
        return loader, [str(w.message) for w in rec if "global_size" in str(w.message)]

    _, notes = make()
    assert notes == []                                            # one rank: nothing to say
    ranks = []
    for rank in (0, 1):
        loader, notes = make(global_size=2, global_rank=rank)
        assert len(notes) == (1 if rank == 0 else 0), notes       # once per process
        assert all("whole partitions" in n and "global_size=2" in n for n in notes)
        ranks.append(np.concatenate([np.asarray(b["c"]).ravel() for b in loader]).tolist())
    assert ranks == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]            # equal contiguous ranges in file order
