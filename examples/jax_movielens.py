"""MovieLens rating regression in plain JAX, data prepared online by tabprep's ``JaxLoader``.

    python examples/jax_movielens.py                      # 100k generated ratings, CPU or GPU
    python examples/jax_movielens.py --rows 1000000 --devices local   # split batches over local devices

Workflow: ``userId`` / ``movieId`` / ``genres`` >> ``Categorify`` (genres element-wise: a
multi-hot id list) >> ``ValueCount`` (records the longest list, the padded width),
``rating`` passes through as the label. The loader pads ``genres`` to ``(batch, max_len)``
(``sparse_as_dense``, 0 = padding) and drops the last partial batch, so every batch has the same
shapes and the jitted train step compiles once. Model: user + movie embeddings, the mean of the
genre embeddings (padding masked), an MLP, MSE; Adam written out in a few lines (no optax
needed). The run asserts that the mean training loss falls from the first epoch to the last.
"""
from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
import time
from typing import Any, Dict, List

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tabprep as tp  # noqa: E402
from tabprep import ops  # noqa: E402
from tabprep.io.synthetic import generate_movielens  # noqa: E402
from tabprep.loader.jax import JaxLoader  # noqa: E402


def movielens_workflow() -> tp.Workflow:
    ids = ["userId", "movieId"] >> ops.Categorify()
    genres = ["genres"] >> ops.Categorify() >> ops.ValueCount()
    return tp.Workflow(ids + genres + ["rating"])


def init_params(key: Any, schema: tp.Schema, dim: int) -> Dict[str, Any]:
    k = jax.random.split(key, 5)
    emb = lambda kk, col: jax.random.normal(kk, (schema[col].cardinality, dim)) * 0.05  # noqa: E731
    return {"user": emb(k[0], "userId"), "movie": emb(k[1], "movieId"), "genre": emb(k[2], "genres"),
            "w1": jax.random.normal(k[3], (3 * dim, 32)) * (1 / np.sqrt(3 * dim)), "b1": jnp.zeros(32),
            "w2": jax.random.normal(k[4], (32, 1)) * (1 / np.sqrt(32)), "b2": jnp.full((1,), 3.5, dtype=jnp.float32)}


def predict(p: Dict[str, Any], x: Dict[str, Any]) -> Any:
    genres = x["genres"]                                                   # (batch, max_len), 0 = padding
    mask = (genres != 0)[..., None]
    g = (p["genre"][genres] * mask).sum(1) / jnp.maximum(mask.sum(1), 1)
    h = jnp.concatenate([p["user"][x["userId"]], p["movie"][x["movieId"]], g], axis=1)
    h = jax.nn.relu(h @ p["w1"] + p["b1"])
    return (h @ p["w2"] + p["b2"])[:, 0]


def loss_fn(p: Dict[str, Any], x: Dict[str, Any], y: Any) -> Any:
    return jnp.mean((predict(p, x) - y) ** 2)


@jax.jit
def train_step(p: Dict[str, Any], state: Dict[str, Any], x: Dict[str, Any], y: Any, lr: float = 5e-3):
    """One Adam step (beta1 0.9, beta2 0.999)."""
    loss, grads = jax.value_and_grad(loss_fn)(p, x, y)
    t = state["t"] + 1
    m = jax.tree_util.tree_map(lambda m, g: 0.9 * m + 0.1 * g, state["m"], grads)
    v = jax.tree_util.tree_map(lambda v, g: 0.999 * v + 0.001 * g * g, state["v"], grads)
    scale = lr * jnp.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
    p = jax.tree_util.tree_map(lambda w, m, v: w - scale * m / (jnp.sqrt(v) + 1e-8), p, m, v)
    return p, {"t": t, "m": m, "v": v}, loss


def main(argv: List[str] | None = None) -> Dict[str, Any]:
    ap = argparse.ArgumentParser(description="MovieLens in JAX with tabprep's JaxLoader")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--devices", default=None, help="'local': split each batch across jax.local_devices()")
    ap.add_argument("--cpu", action="store_true", help="force the CPU (pandas) even when cuDF is present")
    ap.add_argument("--dir", default=None, help="work folder (default: temporary)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    work = args.dir or tempfile.mkdtemp(prefix="tabprep-jax-")
    try:
        raw = os.path.join(work, "train")
        generate_movielens(args.rows, raw, files=2, seed=0, n_users=2000, n_movies=1000,
                           row_group_size=max(args.rows // 8, 1000))
        wf = movielens_workflow()
        wf.fit(tp.Dataset(raw, cpu=True if args.cpu else None))
        loader = JaxLoader(raw, batch_size=args.batch, cats=["userId", "movieId", "genres"], labels=["rating"],
                           shuffle=True, seed=0, parts_per_chunk=2, buffer_size=max(args.rows // 8, 1000),
                           sparse_as_dense=True, drop_last=True, devices=args.devices,
                           device="cpu" if args.cpu else None).map(wf)
        params = init_params(jax.random.PRNGKey(0), wf.output_schema, args.dim)
        state = {"t": jnp.zeros((), jnp.int32), "m": jax.tree_util.tree_map(jnp.zeros_like, params),
                 "v": jax.tree_util.tree_map(jnp.zeros_like, params)}
        losses, rows, start = [], 0, time.perf_counter()
        for _ in range(args.epochs):
            total, batches = 0.0, 0
            for x, y in loader:
                params, state, loss = train_step(params, state, x, y)
                total += float(loss)
                batches += 1
                rows += args.batch
            losses.append(total / batches)
        seconds = time.perf_counter() - start
        print(f"jax_movielens: {args.rows:,} ratings, {len(loader)} batches/epoch on {jax.devices()[0].platform}; "
              f"mean MSE per epoch {[round(v, 4) for v in losses]}; {rows / seconds:,.0f} rows/s "
              f"(loader + training); compiled {train_step._cache_size()} time(s)")
        if len(losses) > 1:
            assert losses[-1] < losses[0], f"the training loss did not fall: {losses}"
        return {"losses": losses, "compiles": train_step._cache_size(), "rows_per_s": rows / seconds}
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
