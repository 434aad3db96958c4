"""MovieLens rating prediction with a multi-hot ``genres`` feature, data prepared online by tabprep.

    python examples/movielens_multihot.py                        # 200k generated ratings
    python examples/movielens_multihot.py --layout ragged        # genres as a tf.RaggedTensor
    python examples/movielens_multihot.py --layout dense         # genres padded to the longest list
    python examples/movielens_multihot.py --layout tuple         # genres as (values, nnzs), NVTabular's layout

Data: ``tabprep.io.synthetic.generate_movielens``: ``userId``, ``movieId``, ``genres`` (a list
of genre names per movie), ``rating`` (0.5-5.0) and ``timestamp``.

Workflow (fitted once, applied online per chunk by the loader): ``userId`` / ``movieId`` /
``genres`` >> ``Categorify`` (genres element-wise: a multi-hot id list), ``genres`` >>
``ValueCount`` (records the longest list in the schema, which ``sparse_as_dense`` uses),
``timestamp`` >> ``Normalize``; the label ``rating`` passes through.

Model: one embedding per categorical column (``layers.EmbeddingFeatures``; the multi-hot genres
averaged with ``combiner="mean"``), concatenated with the normalized timestamp, an MLP, and a
rating regression (MSE). The multi-hot layouts the loader emits (``__values``/``__nnzs``, a
``(values, nnzs)`` tuple per column as NVTabular's loader gives it, ragged, padded dense) feed the
same layer. The run asserts that the training loss falls from the first epoch to the last.
"""
from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
from typing import Dict, List

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tabprep as tp  # noqa: E402
from tabprep import ops  # noqa: E402
from tabprep.loader.keras import KerasSequenceLoader, KerasSequenceValidater, layers  # noqa: E402

import keras  # noqa: E402

GENRES = ["Action", "Adventure", "Animation", "Children", "Comedy", "Crime", "Documentary", "Drama", "Fantasy",
          "Film-Noir", "Horror", "Musical", "Mystery", "Romance", "Sci-Fi", "Thriller", "War", "Western"]


def generate(rows: int, folder: str, files: int, seed: int) -> None:
    """MovieLens-like parquet (synthetic generator, or a small stand-in without it)."""
    try:
        from tabprep.io.synthetic import generate_movielens
    except ImportError:  # pragma: no cover - the stand-in keeps the example runnable on its own
        generate_movielens = None
    if generate_movielens is not None:
        generate_movielens(rows, folder, files=files, seed=seed, n_users=5000, n_movies=2000,
                           row_group_size=max(rows // (4 * files), 1000))
        return
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    movie_genres = [list(rng.choice(GENRES, rng.integers(1, 5), replace=False)) for _ in range(2000)]
    quality = rng.normal(3.5, 0.6, 2000)
    movies = rng.integers(0, 2000, rows)
    ratings = np.clip(np.round((quality[movies] + rng.normal(0, 0.7, rows)) * 2) / 2, 0.5, 5.0)
    df = pd.DataFrame({"userId": rng.integers(1, 5001, rows), "movieId": movies + 1,
                       "genres": [movie_genres[m] for m in movies], "rating": ratings.astype(np.float32),
                       "timestamp": rng.integers(8e8, 1.55e9, rows)})
    for f, part in enumerate(np.array_split(np.arange(rows), files)):
        pq.write_table(pa.Table.from_pandas(df.iloc[part], preserve_index=False),
                       os.path.join(folder, f"part-{f:05d}.parquet"))


def movielens_workflow() -> tp.Workflow:
    ids = ["userId", "movieId"] >> ops.Categorify()
    genres = ["genres"] >> ops.Categorify() >> ops.ValueCount()
    time = ["timestamp"] >> ops.Normalize()
    return tp.Workflow(ids + genres + time + ["rating"])


def build_model(train: KerasSequenceLoader, schema: tp.Schema, dim: int) -> keras.Model:
    inputs = train.keras_inputs()
    emb = layers.EmbeddingFeatures.from_schema(schema, columns=["userId", "movieId", "genres"], dim=dim,
                                               combiner="mean")(inputs)
    x = keras.layers.Concatenate()([emb, layers.ContinuousFeatures(["timestamp"])(inputs)])
    for units in (64, 32):
        x = keras.layers.Dense(units, activation="relu")(x)
    out = keras.layers.Dense(1, name="rating", bias_initializer=keras.initializers.Constant(3.5))(x)  # ~mean rating
    model = keras.Model(inputs, out)
    model.compile(optimizer=keras.optimizers.Adam(2e-3), loss="mse",
                  metrics=[keras.metrics.RootMeanSquaredError(name="rmse")])
    return model


def main(argv: List[str] | None = None) -> Dict[str, float]:
    ap = argparse.ArgumentParser(description="MovieLens multi-hot genres with tabprep's online loader")
    ap.add_argument("--rows", type=int, default=200_000, help="training ratings (validation: a quarter)")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--layout", choices=["values", "tuple", "ragged", "dense"], default="values",
                    help="multi-hot layout: <name>__values/<name>__nnzs, (values, nnzs) under <name>, "
                         "a RaggedTensor (TensorFlow backend), or padded dense")
    ap.add_argument("--cpu", action="store_true", help="force the CPU (pandas) even when cuDF is present")
    ap.add_argument("--dir", default=None, help="work folder (default: temporary)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    work = args.dir or tempfile.mkdtemp(prefix="tabprep-movielens-")
    try:
        train_dir, valid_dir = os.path.join(work, "train"), os.path.join(work, "valid")
        generate(args.rows, train_dir, files=2, seed=0)
        generate(max(args.rows // 4, 1000), valid_dir, files=1, seed=1)
        wf = movielens_workflow()
        wf.fit(tp.Dataset(train_dir, cpu=True if args.cpu else None))
        print(f"genres: cardinality {wf.output_schema['genres'].cardinality}, "
              f"list lengths {wf.output_schema['genres'].value_count}")

        layout = {"values": {}, "tuple": {"sparse_format": "tuple"}, "ragged": {"ragged": True},
                  "dense": {"sparse_as_dense": True}}[args.layout]
        common = dict(batch_size=args.batch, label_names=["rating"], buffer_size=0.06,
                      device="cpu" if args.cpu else None, **layout)
        train = KerasSequenceLoader(os.path.join(train_dir, "*.parquet"), shuffle=True, seed=0, parts_per_chunk=2,
                                    **common).map(wf)
        valid = KerasSequenceLoader(os.path.join(valid_dir, "*.parquet"), shuffle=False, **common).map(wf)
        x, _ = train.peek()
        if args.layout == "tuple":
            values, nnzs = x["genres"]             # as NVTabular users unpack it: flat ids, int32 counts per row
            print(f"genres: {tuple(values.shape)} values, nnzs {tuple(nnzs.shape)} {nnzs.dtype}")
        print("batch features:", {k: tuple(v[0].shape) if isinstance(v, tuple) else tuple(v.shape)
                                  for k, v in x.items()})
        model = build_model(train, wf.output_schema, args.dim)
        hist = model.fit(train, epochs=args.epochs, callbacks=[KerasSequenceValidater(valid)], verbose=2)
        result = {k: float(v[-1]) for k, v in hist.history.items()}
        losses = hist.history["loss"]
        if len(losses) > 1:
            assert losses[-1] < losses[0], f"the training loss did not fall: {losses}"
        print(f"movielens_multihot ({args.layout}): {args.rows:,} ratings, {len(train)} batches/epoch; final {result}")
        return result
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
