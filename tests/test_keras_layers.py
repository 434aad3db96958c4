"""Keras layers (tabprep.loader.layers) and the NVTabular-compatibility options of
KerasSequenceLoader, on Keras' TensorFlow backend (the other backends: test_keras_backends.py)."""
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
from tabprep.loader import layers  # noqa: E402
from tabprep.loader.tensorflow import KerasSequenceLoader  # noqa: E402

pytestmark = pytest.mark.tf
N = 2000


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("layers")
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"row": np.arange(N), "user": rng.integers(0, 20, N), "a": rng.normal(size=N),
                       "b": rng.normal(size=N), "c": rng.normal(size=N), "item": rng.integers(0, 10**6, N),
                       "tags": [list(rng.integers(0, 9, rng.integers(0, 4))) for _ in range(N)],
                       "label": (rng.random(N) < 0.4).astype("float32")})
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), str(d / "part.parquet"), row_group_size=500)
    wf = tp.Workflow((["user", "tags"] >> ops.Categorify() >> ops.ValueCount()) + (["a", "b", "c"] >> ops.Normalize())
                     + ["row", "label"])
    wf.fit(tp.Dataset(str(d), cpu=True))
    offline = wf.transform(tp.Dataset(str(d), cpu=True)).compute().set_index("row")
    return str(d / "part.parquet"), wf, offline


def _loader(path, wf, **kw):
    args = dict(batch_size=250, label_names=["label"], cat_names=["user", "tags", "row"], cont_names=["a", "b", "c"],
                shuffle=True, seed=0, device="cpu")
    args.update(kw)
    return KerasSequenceLoader(path, **args).map(wf)


def test_continuous_features_inside_custom_layer_keeps_width(data):
    """The DLRM notebook's pattern: ContinuousFeatures called inside another layer's call()."""
    path, wf, _ = data
    train = _loader(path, wf)
    widths = []

    class Bottom(keras.layers.Layer):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.cont = layers.ContinuousFeatures(["a", "b", "c"])
            self.dense = keras.layers.Dense(4)

        def call(self, inputs):
            x = self.cont(inputs)
            widths.append(x.shape[-1])
            return self.dense(x)                    # Dense needs the static last dim to build

    class Model(keras.Model):
        def __init__(self):
            super().__init__()
            self.bottom = Bottom()
            self.out = keras.layers.Dense(1, activation="sigmoid")

        def call(self, inputs):
            return self.out(self.bottom(inputs))

    model = Model()
    model.compile("adam", "binary_crossentropy")
    model.fit(train, epochs=1, verbose=0)
    assert widths and set(widths) == {3}


def test_continuous_features_shapes():
    layer = layers.ContinuousFeatures(["a", "b"])
    out = layer({"a": np.ones((4,), "float64"), "b": np.arange(8, dtype="float32").reshape(4, 2, 1)})
    assert tuple(out.shape) == (4, 3) and out.dtype == "float32"
    np.testing.assert_array_equal(np.asarray(out)[:, 1:], np.arange(8).reshape(4, 2))


def test_dot_product_interaction_matches_numpy():
    rng = np.random.default_rng(0)
    v = rng.normal(size=(5, 4, 3)).astype("float32")
    out = np.asarray(layers.DotProductInteraction()(v))
    ref = [[v[b, i] @ v[b, j] for i in range(4) for j in range(i + 1, 4)] for b in range(5)]
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    out = np.asarray(layers.DotProductInteraction(self_interaction=True)(v))
    ref = [[v[b, i] @ v[b, j] for i in range(4) for j in range(i, 4)] for b in range(5)]
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    lay = layers.DotProductInteraction("field_all")
    out = np.asarray(lay(v))
    w = np.asarray(lay.kernel)
    ref = [[(v[b, i] @ w) @ v[b, j] for i in range(4) for j in range(i + 1, 4)] for b in range(5)]
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    lay = layers.DotProductInteraction("field_each")
    out = np.asarray(lay(v))
    w = np.asarray(lay.kernel)
    ref = [[(v[b, i] @ w[i]) @ v[b, j] for i in range(4) for j in range(i + 1, 4)] for b in range(5)]
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="interaction_type"):
        layers.DotProductInteraction("field_interaction")


def _model(train, wf):
    inputs = train.keras_inputs()
    emb = layers.EmbeddingFeatures.from_schema(wf, columns=["user", "tags"], dim=4, aggregation="stack")(inputs)
    cont = keras.layers.Dense(4)(layers.ContinuousFeatures(["a", "b", "c"])(inputs))
    stacked = keras.layers.Concatenate(axis=1)([keras.layers.Reshape((1, 4))(cont), emb])
    x = keras.layers.Concatenate()([cont, layers.DotProductInteraction()(stacked)])
    model = keras.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(x))
    model.compile("adam", "binary_crossentropy")
    return model


@pytest.mark.parametrize("fmt", ["flat", "tuple"])
def test_saved_model_reloads_without_custom_objects(data, tmp_path, fmt):
    path, wf, _ = data
    train = _loader(path, wf, sparse_format=fmt)
    model = _model(train, wf)
    model.fit(train, epochs=1, verbose=0)
    x, _ = train.peek()
    model.save(str(tmp_path / "m.keras"))
    again = keras.saving.load_model(str(tmp_path / "m.keras"))           # no custom_objects
    np.testing.assert_allclose(np.asarray(again(x)), np.asarray(model(x)), rtol=1e-6)
    for cls in (layers.EmbeddingFeatures, layers.ContinuousFeatures, layers.DotProductInteraction):
        assert keras.saving.get_registered_object(f"tabprep>{cls.__name__}") is cls


def test_tuple_layout_int32_nnzs_and_same_embedding(data):
    path, wf, offline = data
    x, _ = _loader(path, wf, sparse_format="tuple").peek()
    values, nnzs = x["tags"]
    assert nnzs.dtype == tf.int32 and tuple(nnzs.shape) == (250, 1) and int(tf.reduce_sum(nnzs)) == values.shape[0]
    flat, _ = _loader(path, wf).peek()
    assert flat["tags__nnzs"].dtype == tf.int32
    rows = np.asarray(x["row"])[:, 0]
    offs = np.concatenate([[0], np.cumsum(np.asarray(nnzs)[:, 0])])
    vals = np.asarray(values)[:, 0]
    assert [vals[offs[i]:offs[i + 1]].tolist() for i in range(250)] == [list(v) for v in offline.loc[rows, "tags"]]
    emb = layers.EmbeddingFeatures({"tags": (wf.output_schema["tags"].cardinality, 3)}, multi_hot=["tags"],
                                   combiner="sum")
    np.testing.assert_allclose(np.asarray(emb(x)), np.asarray(emb(flat)), rtol=1e-6)
    table = np.asarray(emb.tables["tags"].embeddings)
    ref = [table[vals[offs[i]:offs[i + 1]]].sum(axis=0) for i in range(250)]
    np.testing.assert_allclose(np.asarray(emb(x)), ref, rtol=1e-5, atol=1e-6)


def test_sparse_as_dense_per_column(data):
    path, wf, offline = data
    x, _ = _loader(path, wf, sparse_names=["tags"], sparse_as_dense=True, sparse_max={"tags": 2}).peek()
    rows = np.asarray(x["row"])[:, 0]
    assert np.asarray(x["tags"]).tolist() == [(list(v)[:2] + [0, 0])[:2] for v in offline.loc[rows, "tags"]]


def test_output_path_gets_a_clear_error(data):
    path, wf, _ = data
    with pytest.raises(TypeError, match=r"output_path.*to_parquet"):
        KerasSequenceLoader(path, batch_size=10, label_names=["label"], cat_names=["user"], output_path="/tmp/x")


def test_stateless_workflow_attaches_without_fit(data):
    path, _, _ = data
    wf = tp.Workflow((["item"] >> ops.HashBucket(num_buckets=100)) + ["row", "label"])
    assert wf.fitted
    x, y = KerasSequenceLoader(path, batch_size=100, label_names=["label"], cat_names=["item", "row"],
                               shuffle=False, device="cpu").map(wf).peek()
    raw = pd.read_parquet(path)
    np.testing.assert_array_equal(np.asarray(x["item"])[:, 0], wf.transform(raw.iloc[:100])["item"].to_numpy())
