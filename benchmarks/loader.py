"""Online loader benchmark: tabprep's loader with the Criteo workflow attached vs tf.data (issue 5).

    python benchmarks/loader.py [--rows 2000000] [--batch 65536] [--files 8] [--dir DIR]
    python benchmarks/loader.py --gpu --rows 20000000      # GPU machine: cuDF loader only

Data: raw Criteo-like rows from ``tabprep.io.synthetic.generate_criteo`` (``label``, ``I1..I13``
int64 counts, ``C1..C26`` int64 hashed ids, 2% nulls), or where that module is absent the
generator below (the same columns, with ``C*`` as 8-hex-digit strings as in the raw Kaggle files). The same rows are written twice: parquet (row groups of
``--row-group`` rows) for tabprep, and per-example TFRecords (one ``tf.train.Example`` per
row; nulls written as 0 / "" since an Example cannot hold a null) for the baseline.

Pipelines, each iterated for one epoch into TF tensors of ``--batch`` rows, shuffled:

* **tabprep**: ``KerasSequenceLoader(parquet, shuffle=True, buffer_size=--buffer-rows,
  parts_per_chunk=2).map(wf)`` with the Criteo workflow ``C* >> HashBucket(--buckets)``,
  ``I* >> FillMissing >> Clip(0) >> LogOp >> Normalize`` (fitted beforehand, not timed),
  applied online to each chunk in the loader's background thread.
* **tf.data** (what users run today): ``tf.data.experimental.make_batched_features_dataset``
  over the TFRecords (FixedLenFeature parsing, ``shuffle_buffer_size=--shuffle-buffer``,
  AUTOTUNE reader/parser threads), then a ``map`` doing what the feature columns do:
  ``categorical_column_with_hash_bucket`` (``tf.strings.to_hash_bucket_fast``) for C*, and a
  ``numeric_column`` normalizer ``(log(max(x, 0) + 1) - mean) / std`` for I*, prefetched.

Each pipeline runs ``--passes`` times (default 2) and the fastest pass counts (the first tf.data
pass includes graph tracing); files are in the page cache. The loader's transform time (summed
over its chunks and preparing threads, ``--threads``) is reported as a share of those threads'
time.

``--gpu``: reads with cuDF and transforms on the GPU (needs cuDF); TensorFlow is not needed:
the core loader's cupy batches are timed (``DataLoader``), then converted to DLPack capsules
to show the hand-off costs nothing. Prints rows/s and the transform's share.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from typing import Any, Dict, List, Tuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__":
    # this script's folder leaves the import path: a benchmark named like a standard library module
    # shadows it (benchmarks/profile.py did, before it became data_profile.py; cProfile imports it)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
sys.path.insert(0, os.path.dirname(HERE))

import tabprep as tp  # noqa: E402
from tabprep import ops  # noqa: E402

CATS = [f"C{i}" for i in range(1, 27)]
CONTS = [f"I{i}" for i in range(1, 14)]


# ---------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------
def criteo_frame(rows: int, seed: int) -> pd.DataFrame:
    """Raw Criteo-like rows: label, I1..I13 (int counts, ~5% null), C1..C26 (hex strings, ~3% null)."""
    rng = np.random.default_rng(seed)
    data: Dict[str, Any] = {"label": (rng.random(rows) < 0.25).astype(np.int64)}
    for c in CONTS:
        vals = np.floor(rng.lognormal(1.0, 1.5, rows)).astype(np.int64) - 1
        arr = pd.array(vals, dtype="Int64")
        arr[rng.random(rows) < 0.05] = pd.NA
        data[c] = arr
    cards = np.geomspace(10, 2_000_000, len(CATS)).astype(np.int64)
    for c, card in zip(CATS, cards):
        ids = np.minimum((rng.random(rows) ** 3 * card).astype(np.int64), card - 1)
        vocab = np.char.mod("%08x", (np.arange(card, dtype=np.uint64) * 2654435761 % (1 << 32)).astype(np.int64))
        col = pd.Series(vocab[ids], dtype="str")
        col[rng.random(rows) < 0.03] = None
        data[c] = col
    return pd.DataFrame(data)


def generate(rows: int, folder: str, files: int, row_group: int) -> None:
    try:
        from tabprep.io.synthetic import generate_criteo  # type: ignore[import-not-found]
    except ImportError:
        generate_criteo = None
    if generate_criteo is not None:
        generate_criteo(rows, folder, files=files, seed=0, row_group_size=row_group)
        return
    os.makedirs(folder, exist_ok=True)
    per = -(-rows // files)
    for f in range(files):
        n = min(per, rows - f * per)
        if n <= 0:
            break
        df = criteo_frame(n, seed=f)
        pq.write_table(pa.Table.from_pandas(df, preserve_index=False), os.path.join(folder, f"part_{f:03d}.parquet"),
                       row_group_size=row_group)


def write_tfrecords(parquet_dir: str, out_dir: str) -> List[str]:
    """Per-example TFRecords of the same rows (nulls as 0 / "")."""
    from tabprep.io.tfrecord import TFRecordSink
    from tabprep.schema import ColumnSchema, Schema

    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for i, f in enumerate(sorted(p for p in os.listdir(parquet_dir) if p.endswith(".parquet"))):
        table = pq.read_table(os.path.join(parquet_dir, f))
        cols = {}
        for name in table.column_names:
            col = table.column(name)
            if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
                cols[name] = col.fill_null("")
            else:
                cols[name] = col.fill_null(0).cast(pa.int64())
        table = pa.table(cols)
        schema = Schema([ColumnSchema(n, "str" if pa.types.is_string(table.column(n).type)
                                      or pa.types.is_large_string(table.column(n).type) else "int64")
                         for n in table.column_names])
        path = os.path.join(out_dir, f"part_{i:03d}.tfrecord")
        sink = TFRecordSink(path, schema)
        for batch in table.to_batches(max_chunksize=100_000):
            sink.write(pa.Table.from_batches([batch]))
        sink.close()
        paths.append(path)
    return paths


def criteo_workflow(buckets: int) -> tp.Workflow:
    cats = CATS >> ops.HashBucket(num_buckets=buckets)
    conts = CONTS >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize(out_dtype="float32")
    return tp.Workflow(cats + conts + ["label"])


# ---------------------------------------------------------------------------------------
# pipelines
# ---------------------------------------------------------------------------------------
class TimedWorkflow:
    """Wraps ``transform_frame`` to add up the time spent transforming chunks."""

    def __init__(self, wf: tp.Workflow) -> None:
        self.wf = wf
        self.seconds = 0.0
        self.rows = 0

    def __call__(self, df: Any) -> Any:
        start = time.perf_counter()
        out = self.wf.transform_frame(df)
        if hasattr(out, "to_cupy") or type(out).__module__.startswith("cudf"):
            import cupy

            cupy.cuda.get_current_stream().synchronize()
        self.seconds += time.perf_counter() - start
        self.rows += len(df)
        return out


def run_tabprep(parquet_dir: str, wf: tp.Workflow, args: argparse.Namespace, seed: int) -> Dict[str, float]:
    from tabprep.loader.tensorflow import KerasSequenceLoader

    timed = TimedWorkflow(wf)
    loader = KerasSequenceLoader(os.path.join(parquet_dir, "*.parquet"), batch_size=args.batch, label_names=["label"],
                                 cat_names=CATS, cont_names=CONTS, shuffle=True, seed=seed,
                                 buffer_size=args.buffer_rows, parts_per_chunk=2, device="cpu", threads=args.threads)
    loader.loader.map(timed)   # the workflow itself, timed (same work as loader.map(wf))
    start = time.perf_counter()
    batches = rows = 0
    for x, y in loader:
        batches += 1
        rows += int(y.shape[0])
    seconds = time.perf_counter() - start
    loader.close()
    return {"seconds": seconds, "batches": batches, "rows": rows, "transform_s": timed.seconds,
            "threads": loader.loader.threads}


def tf_baseline(paths: List[str], stats: Dict[str, Tuple[float, float]], args: argparse.Namespace,
                string_cats: bool) -> Any:
    import tensorflow as tf

    features = {"label": tf.io.FixedLenFeature([1], tf.int64)}
    for c in CONTS:
        features[c] = tf.io.FixedLenFeature([1], tf.int64, default_value=[0])
    for c in CATS:
        features[c] = tf.io.FixedLenFeature([1], tf.string, default_value=[""]) if string_cats else \
            tf.io.FixedLenFeature([1], tf.int64, default_value=[0])
    ds = tf.data.experimental.make_batched_features_dataset(
        paths, batch_size=args.batch, features=features, reader=tf.data.TFRecordDataset, label_key="label",
        num_epochs=1, shuffle=True, shuffle_buffer_size=args.shuffle_buffer, shuffle_seed=0,
        reader_num_threads=tf.data.AUTOTUNE, parser_num_threads=tf.data.AUTOTUNE, prefetch_buffer_size=tf.data.AUTOTUNE)
    means = {c: tf.constant(stats[c][0], tf.float32) for c in CONTS}
    stds = {c: tf.constant(stats[c][1], tf.float32) for c in CONTS}

    def preprocess(x: Dict[str, Any], y: Any) -> Tuple[Dict[str, Any], Any]:
        out = {}
        for c in CATS:        # tf.feature_column.categorical_column_with_hash_bucket (ints: as_string first)
            v = x[c] if string_cats else tf.strings.as_string(x[c])
            out[c] = tf.strings.to_hash_bucket_fast(v, args.buckets)
        for c in CONTS:       # tf.feature_column.numeric_column(normalizer_fn=...)
            v = tf.math.log(tf.cast(tf.maximum(x[c], 0), tf.float32) + 1.0)
            out[c] = (v - means[c]) / stds[c]
        return out, y

    return ds.map(preprocess, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def run_tf(paths: List[str], stats: Dict[str, Tuple[float, float]], args: argparse.Namespace,
           string_cats: bool) -> Dict[str, float]:
    ds = tf_baseline(paths, stats, args, string_cats)
    start = time.perf_counter()
    batches = rows = 0
    for x, y in ds:
        batches += 1
        rows += int(y.shape[0])
    return {"seconds": time.perf_counter() - start, "batches": batches, "rows": rows}


def run_gpu(parquet_dir: str, wf: tp.Workflow, args: argparse.Namespace) -> Dict[str, float]:
    """The core loader on the GPU: cuDF chunks, cupy batches, each array exported through DLPack
    (to torch when it is installed, a stand-in consumer for TF's ``from_dlpack``)."""
    import cupy

    from tabprep.loader.core import DataLoader, RaggedBatch

    try:
        import torch

        consume = torch.from_dlpack
    except ImportError:
        def consume(a: Any) -> Any:
            return a.toDlpack() if hasattr(a, "toDlpack") else a.__dlpack__()

    best: Dict[str, float] = {}
    for p in range(args.passes):
        timed = TimedWorkflow(wf)
        loader = DataLoader(os.path.join(parquet_dir, "*.parquet"), batch_size=args.batch, label_names=["label"],
                            cat_names=CATS, cont_names=CONTS, shuffle=True, seed=p, buffer_size=args.buffer_size_gpu,
                            parts_per_chunk=2, device=0).map(timed)
        cupy.cuda.Device(0).synchronize()
        start = time.perf_counter()
        batches = rows = 0
        for batch in loader:
            for v in batch.values():
                arrs = [v.values, v.lengths] if isinstance(v, RaggedBatch) else [v.reshape(-1, 1)]
                for a in arrs:
                    consume(a)
            batches += 1
            rows += len(batch["label"])
        cupy.cuda.Device(0).synchronize()
        seconds = time.perf_counter() - start
        res = {"seconds": seconds, "batches": batches, "rows": rows, "transform_s": timed.seconds,
               "piece_rows": loader.piece_rows}
        loader.close()
        print(f"  gpu pass {p}: {rows / seconds:,.0f} rows/s, transform {timed.seconds:.2f}s of {seconds:.2f}s",
              file=sys.stderr)
        if not best or seconds < best["seconds"]:
            best = res
    return best


# ---------------------------------------------------------------------------------------
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--row-group", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=65536)
    ap.add_argument("--buffer-rows", type=int, default=250_000, help="loader buffer_size (rows per piece), CPU")
    ap.add_argument("--buffer-size-gpu", type=float, default=2_000_000,
                    help="loader buffer_size on the GPU (rows per piece, or a fraction of GPU memory)")
    ap.add_argument("--threads", type=int, default=None, help="loader threads preparing chunks (default: its own)")
    ap.add_argument("--buckets", type=int, default=1_000_000)
    ap.add_argument("--shuffle-buffer", type=int, default=10_000, help="tf.data shuffle buffer (examples)")
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--dir", default=None, help="work folder (default: a temporary one, removed)")
    ap.add_argument("--gpu", action="store_true", help="time the cuDF loader only (no TensorFlow needed)")
    ap.add_argument("--no-rmm-pool", action="store_true",
                    help="GPU: keep cuDF's default allocator (default: an RMM pool shared with cupy, as in NVTabular)")
    ap.add_argument("--json", default=None, help="also write the results here")
    args = ap.parse_args()

    if args.gpu and not args.no_rmm_pool:
        import cupy
        import rmm
        from rmm.allocators.cupy import rmm_cupy_allocator

        rmm.reinitialize(pool_allocator=True)
        cupy.cuda.set_allocator(rmm_cupy_allocator)
    work = args.dir or tempfile.mkdtemp(prefix="tabprep-loader-bench-")
    parquet_dir = os.path.join(work, f"criteo_{args.rows}")
    try:
        if not os.path.exists(os.path.join(parquet_dir, "_DONE")):
            shutil.rmtree(parquet_dir, ignore_errors=True)
            t = time.perf_counter()
            generate(args.rows, parquet_dir, args.files, args.row_group)
            open(os.path.join(parquet_dir, "_DONE"), "w").close()
            print(f"generated {args.rows:,} rows in {time.perf_counter() - t:.1f}s", file=sys.stderr)
        wf = criteo_workflow(args.buckets)
        t = time.perf_counter()
        wf.fit(tp.Dataset(parquet_dir, cpu=not args.gpu))
        print(f"fitted the workflow in {time.perf_counter() - t:.1f}s (not timed below)", file=sys.stderr)
        results: Dict[str, Any] = {"rows": args.rows, "batch": args.batch, "cpus": os.cpu_count()}
        if args.gpu:
            g = run_gpu(parquet_dir, wf, args)
            results["gpu"] = g
            print(f"GPU loader (cuDF transform online, cupy batches + DLPack): {g['rows'] / g['seconds']:,.0f} rows/s, "
                  f"{g['batches'] / g['seconds']:.1f} batches/s of {args.batch}; transform {g['transform_s']:.2f}s = "
                  f"{100 * g['transform_s'] / g['seconds']:.0f}% of {g['seconds']:.2f}s "
                  f"(pieces of {g['piece_rows']:,} rows)")
        else:
            tf_dir = os.path.join(work, f"tfrecords_{args.rows}")
            if not os.path.exists(os.path.join(tf_dir, "_DONE")):
                t = time.perf_counter()
                write_tfrecords(parquet_dir, tf_dir)
                open(os.path.join(tf_dir, "_DONE"), "w").close()
                print(f"wrote per-example TFRecords in {time.perf_counter() - t:.1f}s", file=sys.stderr)
            paths = sorted(os.path.join(tf_dir, p) for p in os.listdir(tf_dir) if p.endswith(".tfrecord"))
            # the baseline normalizes with the same statistics the workflow learned
            norm = [op for op in wf.ops if type(op).__name__ == "Normalize"][0]
            stats = {c: (float(norm.stats_[c]["mean"]), float(norm.stats_[c]["std"])) for c in CONTS} \
                if isinstance(norm.stats_, dict) and all(c in norm.stats_ for c in CONTS) else \
                {c: (0.0, 1.0) for c in CONTS}
            first = sorted(p for p in os.listdir(parquet_dir) if p.endswith(".parquet"))[0]
            string_cats = pa.types.is_string(pq.read_schema(os.path.join(parquet_dir, first)).field("C1").type)
            ours, theirs = [], []
            for p in range(args.passes):
                theirs.append(run_tf(paths, stats, args, string_cats))
                print(f"  tf.data pass {p}: {theirs[-1]['rows'] / theirs[-1]['seconds']:,.0f} rows/s", file=sys.stderr)
                ours.append(run_tabprep(parquet_dir, wf, args, seed=p))
                print(f"  tabprep pass {p}: {ours[-1]['rows'] / ours[-1]['seconds']:,.0f} rows/s", file=sys.stderr)
            o = min(ours, key=lambda r: r["seconds"])
            b = min(theirs, key=lambda r: r["seconds"])
            assert o["rows"] == b["rows"] == args.rows, (o, b)
            results.update({"tabprep": o, "tf_data": b, "speedup": b["seconds"] / o["seconds"]})
            print(f"rows={args.rows:,} batch={args.batch} cpus={os.cpu_count()}")
            print(f"tabprep loader + online workflow: {o['batches'] / o['seconds']:.2f} batches/s "
                  f"({o['rows'] / o['seconds']:,.0f} rows/s) with {o['threads']} preparing thread(s); transform "
                  f"{o['transform_s']:.2f}s summed over them = "
                  f"{100 * o['transform_s'] / (o['seconds'] * o['threads']):.0f}% of their time in the "
                  f"{o['seconds']:.2f}s pass")
            print(f"tf.data make_batched_features_dataset + hashing: {b['batches'] / b['seconds']:.2f} batches/s "
                  f"({b['rows'] / b['seconds']:,.0f} rows/s)")
            print(f"speedup: {results['speedup']:.1f}x")
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(results, fh, indent=2, default=float)
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
