"""Benchmark Categorify's fit (and optionally transform) on one high-cardinality int64 column.

Usage::

    python benchmarks/categorify_scale.py [--rows 50000000] [--distinct 20000000] [--files 10]
                                          [--dir /tmp/tabprep_catscale] [--gpu] [--on-host]
                                          [--part-size 128MB] [--transform] [--no-baseline]

Steps, each in its own Python process so that one step's memory never counts for another:

1. generate (only when ``--dir`` holds no data of this size yet): ``--rows`` int64 ids with
   exactly ``--distinct`` distinct values (random-looking 64-bit ids, every id at least once,
   the rest drawn with a heavy skew towards a few ids, rows shuffled), written as ``--files``
   parquet files of 1M-row row groups;
2. fit ``["C"] >> Categorify()`` with a tabprep Workflow (CPU by default, cuDF with ``--gpu``);
   with ``--transform`` the fitted workflow then also encodes every partition (the ids are
   counted, not written);
3. baseline: ``pandas.read_parquet(dir, columns=["C"])["C"].value_counts()`` (CPU only).

Printed per step: wall time, rows/s, distinct values found, and the peak RSS of the step's
process (the larger of ``ru_maxrss`` and a 20 ms psutil poll; GPU runs also print the
device memory high-water mark of the RMM/cupy pool where it can be read).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

GIB = 1024 ** 3


# -- peak memory of the current process ---------------------------------------------------
class PeakRSS:
    """Peak resident set size of this process: a 20 ms poll plus getrusage's ru_maxrss."""

    def __init__(self) -> None:
        import psutil

        self._proc = psutil.Process()
        self.peak = self._proc.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._proc.memory_info().rss)
            time.sleep(0.02)

    def __enter__(self) -> "PeakRSS":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        import resource

        self.peak = max(self.peak, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)


# -- step 1: data ---------------------------------------------------------------------------
def _ids(n: int, seed: int):
    """n distinct random-looking int64 ids (splitmix64 of 0..n-1 is a bijection)."""
    import numpy as np

    x = np.arange(n, dtype=np.uint64) + np.uint64(seed * 0x9E3779B97F4A7C15 % (1 << 64))
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    x = x ^ (x >> np.uint64(31))
    return x.view(np.int64)


def generate(args) -> dict:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    ids = _ids(args.distinct, seed=1)
    extra = args.rows - args.distinct
    if extra < 0:
        raise SystemExit("--rows must be >= --distinct")
    # every id once, then skewed draws (a few ids are very frequent, as in Criteo)
    idx = np.empty(args.rows, dtype=np.int64)
    idx[: args.distinct] = np.arange(args.distinct)
    idx[args.distinct:] = (args.distinct * rng.random(extra) ** 4).astype(np.int64)
    rng.shuffle(idx)
    values = ids[idx]
    del idx
    os.makedirs(args.dir, exist_ok=True)
    per_file = -(-args.rows // args.files)
    for i in range(args.files):
        chunk = values[i * per_file:(i + 1) * per_file]
        pq.write_table(pa.table({"C": chunk}), os.path.join(args.dir, f"part_{i:03d}.parquet"),
                       row_group_size=1_000_000, compression="snappy")
    with open(os.path.join(args.dir, "_meta.json"), "w") as fh:
        json.dump({"rows": args.rows, "distinct": args.distinct, "files": args.files}, fh)
    return {"rows": args.rows, "distinct": args.distinct}


# -- step 2: tabprep -------------------------------------------------------------------------
def fit_tabprep(args) -> dict:
    import tabprep as tp
    from tabprep import ops

    cpu = not args.gpu
    result = {}
    with PeakRSS() as mem:
        start = time.perf_counter()
        ds = tp.Dataset(args.dir, cpu=cpu, part_size=args.part_size)
        op = ops.Categorify(on_host=args.on_host)
        wf = tp.Workflow(["C"] >> op)
        wf.fit(ds)
        fit_s = time.perf_counter() - start
        result.update(fit_s=fit_s, rows_per_s=args.rows / fit_s, distinct=len(op.stats_["C"]["values"]),
                      npartitions=ds.npartitions, cardinality=wf.output_schema["C"].cardinality)
        if args.transform:
            import dask

            start = time.perf_counter()
            out = wf.transform(ds).to_ddf()
            sizes = dask.compute(*[dask.delayed(_count_encoded)(p) for p in out.to_delayed()])
            tr_s = time.perf_counter() - start
            result.update(transform_s=tr_s, transform_rows_per_s=sum(s[0] for s in sizes) / tr_s,
                          transform_max_id=max(s[1] for s in sizes))
    result["peak_rss_gib"] = mem.peak / GIB
    if not cpu:
        result.update(_gpu_memory())
    return result


def _count_encoded(df):
    n = len(df)
    return n, int(df["C"].max()) if n else -1


def _gpu_memory() -> dict:
    try:
        import cupy

        free, total = cupy.cuda.runtime.memGetInfo()
        return {"gpu_used_now_gib": (total - free) / GIB}
    except Exception:  # noqa: BLE001 - reporting only
        return {}


# -- step 3: pandas baseline --------------------------------------------------------------------
def baseline(args) -> dict:
    import pandas as pd

    with PeakRSS() as mem:
        start = time.perf_counter()
        s = pd.read_parquet(args.dir, columns=["C"])["C"]
        counts = s.value_counts()
        secs = time.perf_counter() - start
    return {"fit_s": secs, "rows_per_s": args.rows / secs, "distinct": len(counts), "peak_rss_gib": mem.peak / GIB}


# -- driver ------------------------------------------------------------------------------------------
STEPS = {"generate": generate, "tabprep": fit_tabprep, "baseline": baseline}


def _child(step: str, argv) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--step", step] + argv
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"step {step} failed (exit {proc.returncode})")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=50_000_000)
    p.add_argument("--distinct", type=int, default=20_000_000)
    p.add_argument("--files", type=int, default=10)
    p.add_argument("--dir", default="/tmp/tabprep_catscale")
    p.add_argument("--gpu", action="store_true", help="fit with cuDF (cpu=False)")
    p.add_argument("--on-host", action="store_true", help="Categorify(on_host=True)")
    p.add_argument("--part-size", default=None, help="Dataset part_size (default: tabprep's)")
    p.add_argument("--transform", action="store_true", help="also time the transform of every partition")
    p.add_argument("--no-baseline", action="store_true")
    p.add_argument("--step", choices=sorted(STEPS), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.step:
        print(json.dumps(STEPS[args.step](args)))
        return
    argv = [a for a in sys.argv[1:]]
    meta_path = os.path.join(args.dir, "_meta.json")
    want = {"rows": args.rows, "distinct": args.distinct, "files": args.files}
    have = json.load(open(meta_path)) if os.path.exists(meta_path) else None
    if have != want:
        if os.path.isdir(args.dir):
            import shutil

            shutil.rmtree(args.dir)
        t = time.perf_counter()
        _child("generate", argv)
        print(f"generated {args.rows:,} rows / {args.distinct:,} distinct in {time.perf_counter() - t:.1f}s -> {args.dir}")
    backend = "cuDF (cpu=False)" if args.gpu else "pandas (cpu=True)"
    r = _child("tabprep", argv)
    line = (f"tabprep Categorify fit [{backend}{', on_host' if args.on_host else ''}]: {r['fit_s']:.2f}s, "
            f"{r['rows_per_s'] / 1e6:.2f}M rows/s, {r['distinct']:,} distinct, {r['npartitions']} partitions, "
            f"peak RSS {r['peak_rss_gib']:.2f} GiB")
    print(line)
    if "transform_s" in r:
        print(f"tabprep Categorify transform: {r['transform_s']:.2f}s, {r['transform_rows_per_s'] / 1e6:.2f}M rows/s, "
              f"max id {r['transform_max_id']:,}")
    if not args.no_baseline:
        b = _child("baseline", argv)
        print(f"pandas read_parquet + value_counts baseline: {b['fit_s']:.2f}s, {b['rows_per_s'] / 1e6:.2f}M rows/s, "
              f"{b['distinct']:,} distinct, peak RSS {b['peak_rss_gib']:.2f} GiB")
    if r["distinct"] != args.distinct:
        raise SystemExit(f"expected {args.distinct:,} distinct values, found {r['distinct']:,}")


if __name__ == "__main__":
    main()
