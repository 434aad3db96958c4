"""Criteo click prediction with a small DLRM in Keras, data prepared online by tabprep.

    python examples/criteo_dlrm.py                       # 200k generated rows, CPU or GPU
    python examples/criteo_dlrm.py --rows 2000000 --epochs 2 --batch 65536
    KERAS_BACKEND=jax python examples/criteo_dlrm.py --stacked    # stacked batches, StackedDLRM

Steps:

1. generate raw Criteo-like parquet (``tabprep.io.synthetic.generate_criteo``): ``label``,
   ``I1..I13`` (counts with nulls), ``C1..C26`` (hashed ids with nulls); a train and a
   validation folder;
2. build and fit the workflow once (only ``Normalize`` learns statistics; ``HashBucket`` needs
   none), save it and load it back, as a training job would;
3. attach the workflow to ``KerasSequenceLoader`` with ``map``: each parquet chunk is hashed,
   filled, log-transformed and normalized online (cuDF on the GPU, pandas on the CPU) by the
   loader's background thread, and batches go straight into ``model.fit``;
4. DLRM in the NVTabular notebook's own layer structure: a custom embedding layer
   (``DLRMEmbedding``) that holds the categorical embeddings (``layers.EmbeddingFeatures``,
   stacked) and, inside its ``call``, ``layers.ContinuousFeatures`` followed by the bottom MLP;
   ``layers.DotProductInteraction`` on the stack; a top MLP. ``KerasSequenceValidater`` adds
   ``val_loss`` / ``val_auc`` at each epoch end.

``--stacked``: the loaders hand batches over as ``{"cats": (batch, 26), "conts": (batch, 13)}``
(``stacked=True``) and :class:`StackedDLRM` takes them: the same model on that layout,
the fast layout on JAX.

Runs on any Keras 3 backend: ``KERAS_BACKEND=jax`` (or ``torch``) trains the same model without
TensorFlow, e.g. on a GPU machine that has JAX or PyTorch but no TensorFlow.
"""
from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
from typing import Any, Dict, List, Tuple

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_MEMORY_ALLOCATION", "0.5")   # read when tabprep.loader.tensorflow is imported

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tabprep as tp  # noqa: E402
from tabprep import ops  # noqa: E402
# on the TensorFlow backend this configures TensorFlow's GPU memory (TF_MEMORY_ALLOCATION)
# before TensorFlow claims the GPU; on JAX / torch it imports no TensorFlow
from tabprep.loader.keras import BACKEND, KerasSequenceLoader, KerasSequenceValidater, layers  # noqa: E402

import keras  # noqa: E402
from keras import ops as kops  # noqa: E402

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
    conts = CONTS >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize(out_dtype="float32")
    return tp.Workflow(cats + conts + ["label"])


@keras.saving.register_keras_serializable(package="criteo_dlrm")
class DLRMEmbedding(keras.layers.Layer):
    """The notebook's embedding layer: ``(batch, 1 + categoricals, dim)``, the bottom MLP's
    output of the continuous features stacked on top of the categorical embeddings."""

    def __init__(self, embedding_sizes: Dict[str, Any], cont_names: List[str], dim: int,
                 bottom_units: Tuple[int, ...] = (64,), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.embedding_sizes = {k: tuple(v) for k, v in embedding_sizes.items()}
        self.cont_names, self.dim, self.bottom_units = list(cont_names), int(dim), tuple(bottom_units)
        self.embeddings = layers.EmbeddingFeatures(self.embedding_sizes, aggregation="stack")
        self.continuous = layers.ContinuousFeatures(self.cont_names)
        self.bottom = [keras.layers.Dense(u, activation="relu") for u in self.bottom_units + (self.dim,)]

    def call(self, inputs: Dict[str, Any]) -> Any:
        dense = self.continuous(inputs)                    # (batch, 13): a static width, so Dense can build
        for layer in self.bottom:
            dense = layer(dense)                           # bottom MLP -> (batch, dim)
        return kops.concatenate([kops.expand_dims(dense, 1), self.embeddings(inputs)], axis=1)

    def get_config(self) -> Dict[str, Any]:
        cfg = super().get_config()
        cfg.update(embedding_sizes={k: list(v) for k, v in self.embedding_sizes.items()},
                   cont_names=self.cont_names, dim=self.dim, bottom_units=list(self.bottom_units))
        return cfg


@keras.saving.register_keras_serializable(package="criteo_dlrm")
class DLRM(keras.Model):
    """DLRM (Naumov et al. 2019), small: DLRMEmbedding, pairwise dot products, top MLP."""

    def __init__(self, embedding_sizes: Dict[str, Any], cont_names: List[str], dim: int,
                 top_units: Tuple[int, ...] = (128, 64), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.embedding_layer = DLRMEmbedding(embedding_sizes, cont_names, dim)
        self.interaction = layers.DotProductInteraction()
        self.top = [keras.layers.Dense(u, activation="relu") for u in top_units]
        self.click = keras.layers.Dense(1, activation="sigmoid", name="click")

    def call(self, inputs: Dict[str, Any]) -> Any:
        stacked = self.embedding_layer(inputs)                                  # (batch, 1 + 26, dim)
        x = kops.concatenate([stacked[:, 0, :], self.interaction(stacked)], axis=1)
        for layer in self.top:
            x = layer(x)
        return self.click(x)


@keras.saving.register_keras_serializable(package="criteo_dlrm")
class StackedDLRM(keras.Model):
    """The same DLRM on stacked batches (``KerasSequenceLoader(stacked=True)``): ``x["cats"]``
    ``(batch, 26)`` ids, ``x["conts"]`` ``(batch, 13)``; one embedding table per column (column
    ``k`` of ``x["cats"]`` into table ``k``), the bottom MLP, the pairwise dot products and the top
    MLP as in :class:`DLRM`: the same computation on the other input layout, so that a training
    ratio measures the layout, not a different model. The fast layout on JAX, where each array a
    batch hands over costs Python time."""

    def __init__(self, cardinalities: List[int], dim: int, bottom_units: Tuple[int, ...] = (64,),
                 top_units: Tuple[int, ...] = (128, 64), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cardinalities, self.dim = [int(c) for c in cardinalities], int(dim)
        self.bottom_units, self.top_units = tuple(bottom_units), tuple(top_units)
        self.tables = [keras.layers.Embedding(c, self.dim, name=f"table_{k}") for k, c in enumerate(self.cardinalities)]
        self.bottom = [keras.layers.Dense(u, activation="relu") for u in self.bottom_units + (self.dim,)]
        self.interaction = layers.DotProductInteraction()
        self.top = [keras.layers.Dense(u, activation="relu") for u in self.top_units]
        self.click = keras.layers.Dense(1, activation="sigmoid", name="click")

    def call(self, inputs: Dict[str, Any]) -> Any:
        ids = inputs["cats"]                                                    # (batch, 26)
        dense = kops.cast(inputs["conts"], "float32")
        for layer in self.bottom:
            dense = layer(dense)                                                # (batch, dim)
        emb = [kops.expand_dims(table(ids[:, k]), 1) for k, table in enumerate(self.tables)]
        stacked = kops.concatenate([kops.expand_dims(dense, 1)] + emb, axis=1)  # (batch, 27, dim)
        x = kops.concatenate([dense, self.interaction(stacked)], axis=1)
        for layer in self.top:
            x = layer(x)
        return self.click(x)

    def get_config(self) -> Dict[str, Any]:
        cfg = super().get_config()
        cfg.update(cardinalities=self.cardinalities, dim=self.dim, bottom_units=list(self.bottom_units),
                   top_units=list(self.top_units))
        return cfg


def build_dlrm(schema: tp.Schema, dim: int, jit: Any = False, stacked: bool = False) -> keras.Model:
    """The compiled DLRM: per-column inputs (:class:`DLRM`), or stacked ones (:class:`StackedDLRM`,
    for ``KerasSequenceLoader(stacked=True)``)."""
    if stacked:
        model: keras.Model = StackedDLRM([schema[c].cardinality for c in CATS], dim)
    else:
        model = DLRM({c: (schema[c].cardinality, dim) for c in CATS}, CONTS, dim)
    # XLA compilation of this graph costs more than it saves on small CPU runs (Keras' "auto"
    # compiles on the CPU too); on the GPU pass --jit
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="binary_crossentropy",
                  metrics=[keras.metrics.AUC(name="auc")], jit_compile=jit)
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
    ap.add_argument("--jit", action="store_true", help="let Keras XLA-compile the train step (jit_compile='auto')")
    ap.add_argument("--dir", default=None, help="work folder (default: temporary)")
    ap.add_argument("--stacked", action="store_true",
                    help="stacked batches ({cats: (batch, 26), conts: (batch, 13)}) and StackedDLRM: the fast layout on JAX")
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
                                    buffer_size=args.buffer_size, parts_per_chunk=2, device=device,
                                    stacked=args.stacked).map(wf)
        valid = KerasSequenceLoader(os.path.join(valid_dir, "*.parquet"), batch_size=args.batch,
                                    label_names=["label"], cat_names=CATS, cont_names=CONTS, shuffle=False,
                                    buffer_size=args.buffer_size, device=device, stacked=args.stacked).map(wf)
        model = build_dlrm(wf.output_schema, args.dim, jit="auto" if args.jit else False, stacked=args.stacked)
        hist = model.fit(train, epochs=args.epochs, callbacks=[KerasSequenceValidater(valid)], verbose=2)
        result = {k: float(v[-1]) for k, v in hist.history.items()}
        losses = hist.history["loss"]
        print(f"criteo_dlrm (Keras on {BACKEND}{', stacked' if args.stacked else ''}): {args.rows:,} rows, {len(train)} batches/epoch on "
              f"{'CPU' if train.loader.cpu else 'GPU'}; loss per epoch {[round(v, 4) for v in losses]}; "
              f"final {result}")
        if len(losses) > 1:
            assert losses[-1] < losses[0], f"the training loss did not fall: {losses}"
        return result
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)

if __name__ == "__main__":
    main()
