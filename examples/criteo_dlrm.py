"""Criteo click prediction with a small DLRM in Keras, data prepared online by tabprep.

    python examples/criteo_dlrm.py                       # 200k generated rows, CPU or GPU
    python examples/criteo_dlrm.py --rows 2000000 --epochs 2 --batch 65536

Steps:

1. generate raw Criteo-like parquet (``tabprep.io.synthetic.generate_criteo``): ``label``,
   ``I1..I13`` (counts with nulls), ``C1..C26`` (hashed ids with nulls); a train and a
   validation folder;
2. build and fit the workflow once (only ``Normalize`` learns statistics; ``HashBucket`` needs
   none), save it and load it back, as a training job would;
3. attach the workflow to ``KerasSequenceLoader`` with ``map``: each parquet chunk is hashed,
   filled, log-transformed and normalized online (cuDF on the GPU, pandas on the CPU) by the
   loader's background thread, and batches go straight into ``model.fit``;
4. DLRM: a bottom MLP on the 13 continuous features, one embedding per categorical feature
   (``layers.EmbeddingFeatures``, stacked), pairwise dot-product interactions, a top MLP.
   ``KerasSequenceValidater`` adds ``val_loss`` / ``val_auc`` at each epoch end.
"""
from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
from typing import Any, Dict, List

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_MEMORY_ALLOCATION", "0.5")   # read when tabprep.loader.tensorflow is imported

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tabprep as tp  # noqa: E402
from tabprep import ops  # noqa: E402
# configures TensorFlow's GPU memory (TF_MEMORY_ALLOCATION) before TensorFlow claims the GPU
from tabprep.loader.tensorflow import KerasSequenceLoader, KerasSequenceValidater, layers  # noqa: E402

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

CATS = [f"C{i}" for i in range(1, 27)]
CONTS = [f"I{i}" for i in range(1, 14)]


def generate(rows: int, folder: str, files: int, seed: int) -> None:
    """Raw Criteo-like parquet files (synthetic generator, or a small stand-in without it)."""
    try:
        from tabprep.io.synthetic import generate_criteo
    except ImportError:  # pragma: no cover - the stand-in keeps the example runnable on its own
        generate_criteo = None
    if generate_criteo is not None:
        generate_criteo(rows, folder, files=files, seed=seed, row_group_size=max(rows // (4 * files), 1000))
        return
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"label": np.zeros(rows, dtype=np.int64)})
    for c in CONTS:
        df[c] = pd.array(np.floor(rng.lognormal(1.0, 1.5, rows)).astype(np.int64), dtype="Int64")
    for i, c in enumerate(CATS):
        df[c] = (rng.random(rows) ** 3 * 10 ** (1 + i % 6)).astype(np.int64) * 2654435761 % (1 << 32)
    df["label"] = ((df["C1"] % 7 == 0) | (df["I1"].fillna(0) > 8)).astype(np.int64)
    for f, part in enumerate(np.array_split(np.arange(rows), files)):
        pq.write_table(pa.Table.from_pandas(df.iloc[part], preserve_index=False),
                       os.path.join(folder, f"part-{f:05d}.parquet"))


def criteo_workflow(num_buckets: int) -> tp.Workflow:
    """HashBucket on the categoricals (no vocabulary to fit), log-normalize the counts."""
    cats = CATS >> ops.HashBucket(num_buckets=num_buckets)
    conts = CONTS >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize()
    return tp.Workflow(cats + conts + ["label"])


class DotInteraction(keras.layers.Layer):
    """Pairwise dot products of the bottom-MLP output and every embedding (upper triangle)."""

    def call(self, inputs: List[Any]) -> Any:
        dense, emb = inputs
        feats = tf.concat([dense[:, None, :], emb], axis=1)                    # (b, 1 + n, d)
        dots = tf.matmul(feats, feats, transpose_b=True)                        # (b, 1 + n, 1 + n)
        n = feats.shape[1]
        rows, cols = np.triu_indices(n, k=1)
        return tf.gather(tf.reshape(dots, [-1, n * n]), rows * n + cols, axis=1)

    def compute_output_shape(self, input_shape: Any) -> Any:
        n = input_shape[1][1] + 1
        return (input_shape[0][0], n * (n - 1) // 2)


def build_dlrm(train: KerasSequenceLoader, schema: tp.Schema, dim: int) -> keras.Model:
    """DLRM (Naumov et al. 2019), small: bottom MLP, stacked embeddings, dot interactions, top MLP."""
    inputs = train.keras_inputs()
    dense = layers.ContinuousFeatures(CONTS)(inputs)
    for units in (64, dim):
        dense = keras.layers.Dense(units, activation="relu")(dense)                # bottom MLP -> (b, dim)
    emb = layers.EmbeddingFeatures.from_schema(schema, columns=CATS, dim=dim, aggregation="stack")(inputs)
    x = keras.layers.Concatenate()([dense, DotInteraction()([dense, emb])])
    for units in (128, 64):
        x = keras.layers.Dense(units, activation="relu")(x)                        # top MLP
    out = keras.layers.Dense(1, activation="sigmoid", name="click")(x)
    model = keras.Model(inputs, out)
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="binary_crossentropy",
                  metrics=[keras.metrics.AUC(name="auc")])
    return model


def main(argv: List[str] | None = None) -> Dict[str, float]:
    ap = argparse.ArgumentParser(description="Criteo DLRM with tabprep's online loader")
    ap.add_argument("--rows", type=int, default=200_000, help="training rows (validation: a quarter)")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8192)
    ap.add_argument("--buckets", type=int, default=10_000, help="HashBucket buckets per column")
    ap.add_argument("--dim", type=int, default=16, help="embedding dim")
    ap.add_argument("--buffer-size", type=float, default=0.06, help="loader buffer_size (fraction or rows)")
    ap.add_argument("--cpu", action="store_true", help="force the CPU (pandas) even when cuDF is present")
    ap.add_argument("--dir", default=None, help="work folder (default: temporary)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    work = args.dir or tempfile.mkdtemp(prefix="tabprep-criteo-")
    try:
        train_dir, valid_dir = os.path.join(work, "train"), os.path.join(work, "valid")
        generate(args.rows, train_dir, files=4, seed=0)
        generate(max(args.rows // 4, 1000), valid_dir, files=1, seed=1)

        device = "cpu" if args.cpu else None
        wf = criteo_workflow(args.buckets)
        wf.fit(tp.Dataset(train_dir, cpu=True if args.cpu else None))
        wf.save(os.path.join(work, "wf"))
        wf = tp.Workflow.load(os.path.join(work, "wf"))

        train = KerasSequenceLoader(os.path.join(train_dir, "*.parquet"), batch_size=args.batch, label_names=["label"],
                                    cat_names=CATS, cont_names=CONTS, shuffle=True, seed=0,
                                    buffer_size=args.buffer_size, parts_per_chunk=2, device=device).map(wf)
        valid = KerasSequenceLoader(os.path.join(valid_dir, "*.parquet"), batch_size=args.batch,
                                    label_names=["label"], cat_names=CATS, cont_names=CONTS, shuffle=False,
                                    buffer_size=args.buffer_size, device=device).map(wf)
        model = build_dlrm(train, wf.output_schema, args.dim)
        hist = model.fit(train, epochs=args.epochs, callbacks=[KerasSequenceValidater(valid)], verbose=2)
        result = {k: float(v[-1]) for k, v in hist.history.items()}
        print(f"criteo_dlrm: {args.rows:,} rows, {len(train)} batches/epoch on "
              f"{'CPU' if train.loader.cpu else 'GPU'}; final {result}")
        return result
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)

if __name__ == "__main__":
    main()
