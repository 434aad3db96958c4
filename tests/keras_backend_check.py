"""Run in a subprocess with KERAS_BACKEND set (see test_keras_backends.py): KerasSequenceLoader
batches are the backend's arrays, the layers train a small DLRM-like model whose loss falls,
KerasSequenceValidater adds val_loss, and the saved .keras model reloads without custom_objects."""
import os
import sys
import tempfile

import numpy as np
import pandas as pd

import tabprep as tp
from tabprep import ops
from tabprep.loader.keras import BACKEND, KerasSequenceLoader, KerasSequenceValidater, layers

import keras


def main() -> None:
    expected = os.environ["KERAS_BACKEND"]
    assert BACKEND == expected == keras.backend.backend(), (BACKEND, expected)
    assert ("tensorflow" in sys.modules) == (expected == "tensorflow"), "TensorFlow imported on another backend"
    work = tempfile.mkdtemp()
    rng = np.random.default_rng(0)
    n = 4000
    user = rng.integers(0, 20, n)
    tags = [list(rng.integers(0, 9, rng.integers(0, 4))) for _ in range(n)]
    a = rng.normal(size=n)
    label = ((user % 3 == 0) ^ np.array([3 in t for t in tags]) | (a > 1.0)).astype("float32")
    pd.DataFrame({"user": user, "tags": tags, "a": a, "label": label}).to_parquet(os.path.join(work, "d.parquet"),
                                                                                 row_group_size=1000)
    wf = tp.Workflow((["user", "tags"] >> ops.Categorify()) + (["a"] >> ops.Normalize()) + ["label"])
    wf.fit(tp.Dataset(os.path.join(work, "d.parquet"), cpu=True))
    expected_users = np.sort(wf.transform(tp.Dataset(os.path.join(work, "d.parquet"), cpu=True)).compute()["user"].to_numpy())
    # jit compiles once per input shape: ragged lists (values change length every batch) would
    # recompile per batch on JAX, so there the list column is padded (per column: sparse_names)
    fmt = {"jax": "dense", "torch": "tuple"}.get(expected, "flat")
    layout = dict(sparse_names=["tags"], sparse_as_dense=True, sparse_max={"tags": 3}) if fmt == "dense" else \
        dict(sparse_format=fmt)
    train = KerasSequenceLoader(os.path.join(work, "d.parquet"), batch_size=500, label_names=["label"],
                                cat_names=["user", "tags"], cont_names=["a"], shuffle=True, seed=0, device="cpu",
                                drop_last=True, **layout).map(wf)
    valid = KerasSequenceLoader(os.path.join(work, "d.parquet"), batch_size=1000, label_names=["label"],
                                cat_names=["user", "tags"], cont_names=["a"], shuffle=False, device="cpu",
                                **layout).map(wf)
    x, y = train.peek()
    kind = {"jax": "ArrayImpl", "torch": "Tensor", "tensorflow": "EagerTensor"}[expected]
    assert type(x["user"]).__name__ == kind and type(y).__name__ == kind, (type(x["user"]), type(y))
    if fmt == "dense":
        assert tuple(x["tags"].shape) == (500, 3)
    else:
        values, nnzs = x["tags"] if fmt == "tuple" else (x["tags__values"], x["tags__nnzs"])
        assert str(nnzs.dtype).endswith("int32") and tuple(nnzs.shape) == (500, 1)

    # the first validation batch (no shuffle) against the workflow's own output, column by column:
    # the per-column layout is (batch, 1) per column, whether made one column at a time or as rows
    # of one block per dtype (JAX, torch)
    xv, yv = valid.peek()
    out = wf.transform(tp.Dataset(os.path.join(work, "d.parquet"), cpu=True)).compute().iloc[:1000]
    for name, ref in (("user", out["user"].to_numpy()), ("a", out["a"].to_numpy().astype("float32"))):
        got = keras.ops.convert_to_numpy(xv[name])
        assert got.shape == (1000, 1), (name, got.shape)
        np.testing.assert_array_equal(got[:, 0], ref, err_msg=name)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(yv).reshape(-1), out["label"].to_numpy())
    assert tuple(yv.shape) == (1000, 1), yv.shape

    inputs = train.keras_inputs()
    keras.utils.set_random_seed(0)  # the weights' initialisation: the loss check below is then deterministic
    emb = layers.EmbeddingFeatures.from_schema(wf, dim=4, aggregation="stack")(inputs)
    dense = keras.layers.Dense(4, activation="relu")(layers.ContinuousFeatures(["a"])(inputs))
    stacked = keras.layers.Concatenate(axis=1)([keras.layers.Reshape((1, 4))(dense), emb])
    z = keras.layers.Concatenate()([dense, layers.DotProductInteraction()(stacked)])
    z = keras.layers.Dense(16, activation="relu")(z)
    model = keras.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(z))
    model.compile(keras.optimizers.Adam(0.02), "binary_crossentropy")
    core, seen, peeking = train.loader, {}, []
    original, original_peek = core.batch_at, core.peek

    def spy(i, views=True):                          # the batches Keras trains on, per loader epoch
        from tabprep.loader.blocks import with_views

        batch = original(i, views=views)
        if not peeking:   # (made whole if cut without its block columns' views: jax, torch)
            seen.setdefault(core.epoch, []).append(np.asarray(with_views(batch)["user"]).copy())
        return batch

    def peek():
        peeking.append(1)
        try:
            return original_peek()
        finally:
            peeking.pop()

    core.batch_at, core.peek = spy, peek
    hist = model.fit(train, epochs=4, verbose=0, callbacks=[KerasSequenceValidater(valid)])
    # each Keras epoch is one loader epoch: every row once (the batch Keras reads to build the
    # model is served without consuming the epoch)
    assert train._count == 4 * len(train), (train._count, len(train))
    for e in sorted(seen)[:4]:
        np.testing.assert_array_equal(np.sort(np.concatenate(seen[e])), expected_users)
    loss = hist.history["loss"]
    assert loss[-1] < 0.8 * loss[0], loss
    assert np.isfinite(hist.history["val_loss"][-1])
    path = os.path.join(work, "m.keras")
    model.save(path)
    again = keras.saving.load_model(path)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(again(x)), keras.ops.convert_to_numpy(model(x)),
                               rtol=1e-5)
    nested_check(work)
    stacked_check(work, wf, layout)
    if keras.backend.backend() == "jax":
        x64_check()
    print("ok", expected, [round(v, 4) for v in loss])


def nested_check(work: str) -> None:
    """A nested list column (issue #31) on this backend: dense (batch, 4, 3) without sparse_max (fixed
    shape from the data) and NVTabular's (values, nnzs) with sparse_format="tuple"."""
    keys = np.arange(6 * 4 * 3).reshape(6, 4, 3)
    path = os.path.join(work, "nested.parquet")
    pd.DataFrame({"x": keys.tolist(), "y": np.arange(6)}).to_parquet(path)
    common = dict(batch_size=6, cont_names=["x"], label_names=["y"], shuffle=False, device="cpu")
    x, _ = next(iter(KerasSequenceLoader(path, sparse_as_dense=True, **common)))
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(x["x"]), keys)
    x, _ = next(iter(KerasSequenceLoader(path, sparse_format="tuple", **common)))
    values, nnzs = (keras.ops.convert_to_numpy(t) for t in x["x"])
    np.testing.assert_array_equal(values.ravel(), keys.ravel())
    assert nnzs.ravel().tolist() == [12] * 6


def stacked_check(work: str, wf, layout) -> None:
    """stacked=True on this backend: {"cats": (B, 1), "conts": (B, 1), list column as unstacked} and
    labels (B, 1), equal to the per-column batches of the same loader and seed."""
    kw = dict(batch_size=700, label_names=["label"], cat_names=["user", "tags"], cont_names=["a"], shuffle=True,
              seed=5, device="cpu", buffer_size=900, **layout)
    path = os.path.join(work, "d.parquet")
    plain = list(KerasSequenceLoader(path, **kw).map(wf))
    stacked = list(KerasSequenceLoader(path, stacked=True, **kw).map(wf))
    assert len(plain) == len(stacked) > 1
    np_ = keras.ops.convert_to_numpy
    for (xp, yp), (xs, ys) in zip(plain, stacked):
        assert {"cats", "conts"} <= set(xs) and "user" not in xs and "a" not in xs, sorted(xs)
        np.testing.assert_array_equal(np_(xs["cats"]), np_(xp["user"]))
        np.testing.assert_array_equal(np_(xs["conts"]), np_(xp["a"]))
        np.testing.assert_array_equal(np_(ys), np_(yp))
        for key in [k for k in xp if k.startswith("tags")]:
            a, b = (xp[key], xs[key])
            for u, v in zip(a if isinstance(a, tuple) else [a], b if isinstance(b, tuple) else [b]):
                np.testing.assert_array_equal(np_(u), np_(v))


def x64_check() -> None:
    """Keras on JAX with 64-bit types off (JAX's default) would drop int64's high bits: refused by
    name (tests/test_loader_jax_x64.py covers the JAX loader in process)."""
    import tabprep as tp

    big = 2**40 + 3
    df = pd.DataFrame({"user": np.array([1, big], dtype="int64"), "y": np.array([0.0, 1.0], dtype="float32")})
    loader = KerasSequenceLoader(tp.Dataset(df), batch_size=2, cat_names=["user"], cont_names=[],
                                 label_names=["y"], device="cpu")
    try:
        loader[0]
    except OverflowError as exc:
        assert "'user'" in str(exc) and "jax_enable_x64" in str(exc) and str(big) in str(exc), exc
    else:
        raise AssertionError("an int64 beyond int32 passed to Keras on JAX without an error")


if __name__ == "__main__":
    main()
