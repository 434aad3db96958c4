"""The Keras adapter (tabprep.loader.tensorflow): batch layout, model.fit / evaluate / predict
end to end with single- and multi-hot columns, validation metrics, Keras epochs, layers."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import tabprep as tp  # noqa: E402
from tabprep import ops  # noqa: E402
from tabprep.loader.tensorflow import (KerasSequenceLoader, KerasSequenceValidater, configure_tensorflow,  # noqa: E402
                                       layers, names_from_feature_columns)

pytestmark = pytest.mark.tf

N_TRAIN = 6000
N_VALID = 2000


def _frame(seed: int, n: int) -> pd.DataFrame:
    """A learnable problem: the label depends on a single-hot id, a multi-hot list and a float."""
    rng = np.random.default_rng(seed)
    user = rng.integers(0, 50, n)
    genres = [list(rng.choice(12, rng.integers(1, 4), replace=False)) for _ in range(n)]
    x = rng.normal(size=n)
    score = (user % 2) * 1.5 + np.array([1.5 if 3 in g else 0.0 for g in genres]) + x - 1.2
    label = (score + rng.normal(scale=0.3, size=n) > 0).astype("float32")
    return pd.DataFrame({"user": user, "item": rng.integers(0, 1000, n), "genres": genres, "x": x,
                         "label": label})


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("tf_loader")
    train = _frame(0, N_TRAIN)
    for i in range(2):
        part = train.iloc[i * N_TRAIN // 2:(i + 1) * N_TRAIN // 2]
        pq.write_table(pa.Table.from_pandas(part, preserve_index=False), str(d / f"train{i}.parquet"),
                       row_group_size=1000)
    pq.write_table(pa.Table.from_pandas(_frame(1, N_VALID), preserve_index=False), str(d / "valid.parquet"))
    cats = ["user", "genres"] >> ops.Categorify()
    hashed = ["item"] >> ops.HashBucket(num_buckets=64)
    conts = ["x"] >> ops.Normalize()
    wf = tp.Workflow(cats + hashed + conts + ["label"])
    wf.fit(tp.Dataset(str(d / "train*.parquet"), cpu=True))
    wf.save(str(d / "wf"))
    return str(d), tp.Workflow.load(str(d / "wf"))


def _loaders(d, wf, **kw):
    train = KerasSequenceLoader(os.path.join(d, "train*.parquet"), batch_size=500, label_names=["label"],
                                shuffle=True, seed=0, buffer_size=1500, parts_per_chunk=2, device="cpu", **kw).map(wf)
    valid = KerasSequenceLoader(os.path.join(d, "valid.parquet"), batch_size=1000, label_names=["label"],
                                shuffle=False, device="cpu", **kw).map(wf)
    return train, valid


def _model(train, wf, combiner="mean"):
    inputs = train.keras_inputs()
    emb = layers.EmbeddingFeatures.from_schema(wf, dim=8, combiner=combiner)(inputs)
    cont = layers.ContinuousFeatures(train.cont_names)(inputs)
    x = keras.layers.Concatenate()([emb, cont])
    x = keras.layers.Dense(16, activation="relu")(x)
    out = keras.layers.Dense(1, activation="sigmoid")(x)
    model = keras.Model(inputs, out)
    model.compile(keras.optimizers.Adam(0.02), "binary_crossentropy", metrics=[keras.metrics.AUC(name="auc")])
    return model


def test_batch_layout(data):
    d, wf = data
    train, _ = _loaders(d, wf)
    assert len(train) == N_TRAIN // 500
    assert train.cat_names == ["user", "genres", "item"] and train.cont_names == ["x"]
    x, y = train[0]
    assert set(x) == {"user", "item", "x", "genres__values", "genres__nnzs"}
    assert x["user"].shape == (500, 1) and x["user"].dtype == tf.int64
    assert x["x"].shape == (500, 1) and x["x"].dtype == tf.float32
    assert y.shape == (500, 1)
    nnz = int(tf.reduce_sum(x["genres__nnzs"]))
    assert x["genres__values"].shape == (nnz, 1) and x["genres__nnzs"].shape == (500, 1)
    # ragged / dense layouts of the same rows
    rag, _ = _loaders(d, wf, ragged=True)
    xr, _ = rag[0]
    assert isinstance(xr["genres"], tf.RaggedTensor)
    np.testing.assert_array_equal(xr["genres"].row_lengths().numpy(), x["genres__nnzs"].numpy().ravel())
    np.testing.assert_array_equal(xr["genres"].flat_values.numpy(), x["genres__values"].numpy().ravel())
    dense, _ = _loaders(d, wf, sparse_as_dense=True, sparse_max={"genres": 4})
    xd, _ = dense[0]
    assert xd["genres"].shape == (500, 4)
    np.testing.assert_array_equal(tf.reduce_sum(tf.cast(xd["genres"] > 0, tf.int64), axis=1).numpy(),
                                  x["genres__nnzs"].numpy().ravel())
    # several labels: a dict; no labels: features only (predict)
    two = KerasSequenceLoader(os.path.join(d, "valid.parquet"), batch_size=100, label_names=["label", "user"],
                              cat_names=["item"], shuffle=False, device="cpu")
    _, ys = next(iter(two))
    assert set(ys) == {"label", "user"}
    none = KerasSequenceLoader(os.path.join(d, "valid.parquet"), batch_size=100, cat_names=["item"], shuffle=False,
                               device="cpu")
    assert set(next(iter(none))) == {"item"}


def test_fit_with_validation_single_and_multi_hot(data):
    d, wf = data
    train, valid = _loaders(d, wf)
    model = _model(train, wf)
    hist = model.fit(train, epochs=3, callbacks=[KerasSequenceValidater(valid)], verbose=0)
    assert {"loss", "auc", "val_loss", "val_auc"} <= set(hist.history)
    assert len(hist.history["val_auc"]) == 3
    assert hist.history["val_auc"][-1] > 0.85, hist.history
    # the callback's metrics are model.evaluate's on the same data
    ev = model.evaluate(valid, verbose=0, return_dict=True)
    assert abs(ev["auc"] - hist.history["val_auc"][-1]) < 1e-4
    pred = model.predict(valid, verbose=0)
    assert pred.shape == (N_VALID, 1)


@pytest.mark.parametrize("layout", [dict(ragged=True), dict(sparse_as_dense=True, sparse_max={"genres": 3})])
def test_fit_ragged_and_dense_layouts(data, layout):
    d, wf = data
    train, valid = _loaders(d, wf, **layout)
    model = _model(train, wf, combiner="sum")
    hist = model.fit(train, epochs=2, validation_data=valid, verbose=0)
    assert hist.history["val_auc"][-1] > 0.8, hist.history


def test_each_keras_epoch_sees_every_row_once(data):
    d, wf = data
    loader = KerasSequenceLoader(os.path.join(d, "train*.parquet"), batch_size=512, label_names=["label"],
                                 cat_names=["item", "user"], shuffle=True, seed=3, buffer_size=1000, device="cpu")
    core = loader.loader
    seen = {}
    original, original_peek = core.batch_at, core.peek
    peeking = []

    def spy(i, views=True):
        from tabprep.loader.blocks import with_views

        batch = original(i, views=views)
        if not peeking:   # (the batch made whole if cut without its block columns: the conversion reads the blocks)
            seen.setdefault(core.epoch, []).append(np.asarray(with_views(batch)["user"]).copy())
        return batch

    def peek():
        peeking.append(1)
        try:
            return original_peek()
        finally:
            peeking.pop()

    core.batch_at, core.peek = spy, peek
    inputs = {"item": keras.Input((1,), dtype="int64", name="item"), "user": keras.Input((1,), dtype="int64",
                                                                                         name="user")}
    out = keras.layers.Dense(1, activation="sigmoid")(keras.layers.Concatenate()(
        [keras.ops.cast(inputs["item"], "float32"), keras.ops.cast(inputs["user"], "float32")]))
    model = keras.Model(inputs, out)
    model.compile("sgd", "binary_crossentropy")
    model.fit(loader, epochs=3, verbose=0)              # Keras asks for indices in a random order
    raw = pd.concat([pd.read_parquet(os.path.join(d, f"train{i}.parquet")) for i in range(2)])
    expected = np.sort(raw["user"].to_numpy())
    epochs = sorted(seen)
    assert len(epochs) >= 3
    for e in epochs[:3]:
        got = np.sort(np.concatenate(seen[e]))
        np.testing.assert_array_equal(got, expected)          # each epoch: every row exactly once
    assert loader._count == 3 * len(loader)


def test_plain_iteration_and_index_semantics(data):
    d, wf = data
    train, _ = _loaders(d, wf)
    batches = list(train)
    assert len(batches) == len(train)
    assert all(isinstance(b[0]["user"], tf.Tensor) for b in batches)
    with pytest.raises(IndexError):
        train[len(train)]
    # indices are served in the loader's order (as NVTabular): any index gives the next batch
    a = train[7][0]["user"].numpy()
    b = train[7][0]["user"].numpy()
    assert not np.array_equal(a, b)


def test_feature_columns_give_names():
    fc = tf.feature_column
    cols = [fc.numeric_column("x"), fc.embedding_column(fc.categorical_column_with_identity("user", 50), 4),
            fc.indicator_column(fc.categorical_column_with_identity("item", 64))]
    assert names_from_feature_columns(cols) == (["user", "item"], ["x"])
    with pytest.raises(ValueError, match="HashBucket"):
        names_from_feature_columns([fc.categorical_column_with_hash_bucket("item", 10, dtype=tf.int64)])


def test_feature_columns_loader(data):
    d, wf = data
    fc = tf.feature_column
    cols = [fc.numeric_column("x"), fc.embedding_column(fc.categorical_column_with_identity("user", 52), 4)]
    loader = KerasSequenceLoader(os.path.join(d, "valid.parquet"), batch_size=256, label_names=["label"],
                                 feature_columns=cols, shuffle=False, device="cpu").map(wf)
    x, _ = loader[0]
    assert set(x) == {"user", "x"}


def test_embedding_layer_combiners_match_manual():
    sizes = {"a": (10, 3), "m": (20, 3)}
    layer = layers.EmbeddingFeatures(sizes, multi_hot=["m"], combiner={"m": "sum"}, aggregation="stack")
    a = tf.constant([[1], [2]], dtype=tf.int64)
    values = tf.constant([[3], [4], [5]], dtype=tf.int64)
    nnzs = tf.constant([[2], [1]], dtype=tf.int64)
    out = layer({"a": a, "m__values": values, "m__nnzs": nnzs})
    assert out.shape == (2, 2, 3)
    ta, tm = layer.tables["a"].embeddings.numpy(), layer.tables["m"].embeddings.numpy()
    np.testing.assert_allclose(out[:, 0].numpy(), ta[[1, 2]], rtol=1e-6)
    np.testing.assert_allclose(out[0, 1].numpy(), tm[3] + tm[4], rtol=1e-6)
    np.testing.assert_allclose(out[1, 1].numpy(), tm[5], rtol=1e-6)
    # ragged and padded-dense layouts give the same result; mean divides by the row count
    mean = layers.EmbeddingFeatures({"m": (20, 3)}, multi_hot=["m"], combiner="mean")
    mean.build()
    mean.tables["m"].embeddings.assign(tm)
    rag = tf.RaggedTensor.from_row_lengths(tf.constant([3, 4, 5], dtype=tf.int64), [2, 1])
    dense = tf.constant([[3, 4, 0], [5, 0, 0]], dtype=tf.int64)
    flat = mean({"m__values": values, "m__nnzs": nnzs})
    np.testing.assert_allclose(flat[0].numpy(), (tm[3] + tm[4]) / 2, rtol=1e-6)
    np.testing.assert_allclose(mean({"m": rag}).numpy(), flat.numpy(), rtol=1e-6)
    np.testing.assert_allclose(mean({"m": dense}).numpy(), flat.numpy(), rtol=1e-6)
    # config round trip; stacking needs equal dims
    again = layers.EmbeddingFeatures.from_config(layer.get_config())
    assert again.embedding_sizes == layer.embedding_sizes and again.multi_hot == ["m"]
    with pytest.raises(ValueError, match="stack"):
        layers.EmbeddingFeatures({"a": (10, 3), "b": (10, 4)}, aggregation="stack")


def test_configure_tensorflow_is_a_noop_without_gpu(monkeypatch):
    monkeypatch.setenv("TF_MEMORY_ALLOCATION", "0.3")
    if tf.config.list_physical_devices("GPU"):
        pytest.skip("a GPU is visible")
    assert configure_tensorflow() is None


def _example(name):
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_example_criteo_dlrm_runs(tmp_path):
    # the example asserts itself that the training loss falls from epoch 1 to epoch 2
    result = _example("criteo_dlrm").main(["--rows", "20000", "--batch", "2048", "--epochs", "2", "--buckets", "1000",
                                           "--dim", "8", "--dir", str(tmp_path)])
    assert {"loss", "auc", "val_loss", "val_auc"} <= set(result)
    assert np.isfinite(result["val_loss"])


def test_example_criteo_dlrm_runs_on_stacked_batches(tmp_path):
    """``--stacked``: the loaders' stacked batches into StackedDLRM (one table for the 26 columns);
    the example asserts that the training loss falls."""
    ex = _example("criteo_dlrm")
    result = ex.main(["--rows", "20000", "--batch", "2048", "--epochs", "2", "--buckets", "1000", "--dim", "8",
                      "--dir", str(tmp_path), "--stacked"])
    assert {"loss", "auc", "val_loss", "val_auc"} <= set(result)
    assert np.isfinite(result["val_loss"])


def test_example_stacked_dlrm_computes_what_the_per_column_dlrm_does():
    """StackedDLRM on ``{"cats": (B, 26), "conts": (B, 13)}`` with DLRM's weights gives DLRM's
    predictions on the same rows as per-column inputs (the reference: the example's per-column
    model), so a training ratio on stacked batches measures the layout, not another model."""
    ex = _example("criteo_dlrm")
    rng = np.random.default_rng(0)
    cards, dim, rows = [int(c) for c in rng.integers(5, 40, len(ex.CATS))], 4, 32
    per_col = ex.DLRM({c: (n, dim) for c, n in zip(ex.CATS, cards)}, ex.CONTS, dim)
    stacked = ex.StackedDLRM(cards, dim)
    ids = np.stack([rng.integers(0, n, rows) for n in cards], axis=1).astype("int64")
    conts = rng.normal(size=(rows, len(ex.CONTS))).astype("float32")
    x_col = {c: ids[:, [k]] for k, c in enumerate(ex.CATS)}
    x_col.update({c: conts[:, [k]] for k, c in enumerate(ex.CONTS)})
    ref = np.asarray(per_col(x_col))
    stacked({"cats": ids, "conts": conts})   # (built)
    emb = per_col.embedding_layer
    for k, c in enumerate(ex.CATS):
        stacked.tables[k].set_weights(emb.embeddings.tables[c].get_weights())
    for mine, theirs in zip(stacked.bottom + stacked.top + [stacked.click], emb.bottom + per_col.top + [per_col.click]):
        mine.set_weights(theirs.get_weights())
    got = np.asarray(stacked({"cats": ids, "conts": conts}))
    assert got.shape == ref.shape == (rows, 1)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_example_movielens_multihot_runs(tmp_path):
    result = _example("movielens_multihot").main(["--rows", "20000", "--epochs", "1", "--layout", "dense",
                                                  "--dir", str(tmp_path)])
    assert {"loss", "rmse", "val_loss", "val_rmse"} <= set(result)
    assert result["val_rmse"] < 2.0


def test_to_tensor_shares_aligned_arrays_and_copies_others():
    from tabprep.loader.core import _take_aligned
    from tabprep.loader.tensorflow import _to_tensor

    a = _take_aligned(np.arange(1000, dtype=np.int64), None, 0)
    shared = _to_tensor(a[:64].reshape(-1, 1))
    a[0] = 7
    assert int(shared[0, 0]) == 7                               # DLPack: no copy
    misaligned = np.arange(1001, dtype=np.int64)[1:]
    if misaligned.ctypes.data % 64 == 0:                        # pragma: no cover - allocator dependent
        misaligned = np.arange(1002, dtype=np.int64)[1:-1]
    t = _to_tensor(misaligned.reshape(-1, 1))
    assert int(tf.reduce_sum(t)) == sum(range(1, 1001))          # copied: safe in TF kernels
    readonly = np.arange(10)
    readonly.flags.writeable = False
    assert int(tf.reduce_sum(_to_tensor(readonly))) == 45



def test_example_movielens_multihot_values_nnzs_tuples(tmp_path, capsys):
    # NVTabular's layout: genres as a (values, nnzs) tuple; the example asserts the loss falls
    result = _example("movielens_multihot").main(["--rows", "20000", "--epochs", "2", "--layout", "tuple",
                                                  "--dir", str(tmp_path)])
    assert "nnzs (4096, 1) <dtype: 'int32'>" in capsys.readouterr().out
    assert result["val_rmse"] < 2.0
