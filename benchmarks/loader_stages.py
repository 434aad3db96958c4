"""Where one epoch of the online loader spends its time, stage by stage (GPU or CPU).

    python benchmarks/loader_stages.py --gpu --rows 20000000 [--data-root /dev/shm/tb]

Times the raw read, the core loader with and without the Criteo workflow, then one epoch with
``prefetch=0`` (everything on the calling thread) stage by stage -- read, transform, columns
to arrays, shuffle -- and a cProfile of that epoch (top functions by own time).
"""
from __future__ import annotations

import argparse
import cProfile
import glob
import os
import pstats
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from criteo import ensure_data  # noqa: E402
from framework_loaders import CATS, CONTS, criteo_workflow  # noqa: E402

import tabprep as tp  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--files", type=int, default=16)
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--batch", type=int, default=65536)
    ap.add_argument("--buffer-size", type=float, default=None)
    ap.add_argument("--data-root", default="/tmp/tabprep-bench")
    ap.add_argument("--gen-procs", type=int, default=1)
    args = ap.parse_args()
    data = ensure_data(args.rows, args.data_root, args.files, args.gen_procs)
    files = sorted(glob.glob(os.path.join(data, "*.parquet")))
    gpu = args.gpu
    bs = args.buffer_size or (2_000_000 if gpu else 250_000)

    def sync() -> None:
        if gpu:
            import cupy
            cupy.cuda.Device().synchronize()

    wf = criteo_workflow(1_000_000)
    wf.fit(tp.Dataset(files, cpu=not gpu))
    from tabprep.loader import DataLoader

    def make(seed, with_wf, **kw):
        ld = DataLoader(files, args.batch, label_names=["label"], cat_names=CATS, cont_names=CONTS, seed=seed,
                        shuffle=True, buffer_size=bs, parts_per_chunk=2, device=0 if gpu else "cpu", **kw)
        return ld.map(wf) if with_wf else ld

    def timed(label, fn, rows):
        sync()
        t = time.perf_counter()
        fn()
        sync()
        s = time.perf_counter() - t
        print(f"{label:28s} {s:7.3f} s  {rows / s / 1e6:8.2f} M rows/s", flush=True)
        return s

    if gpu:
        import cudf
        read = lambda: cudf.read_parquet(files)  # noqa: E731
    else:
        import pyarrow.parquet as pq
        read = lambda: [pq.read_table(f) for f in files]  # noqa: E731
    for p in range(2):
        timed(f"raw read p{p}", read, args.rows)
    for with_wf in (False, True):
        for p in range(2):
            def epoch():
                for b in make(p, with_wf):
                    pass
            timed(f"core wf={with_wf} p{p}", epoch, args.rows)
    # stage by stage, on this thread
    ld = make(0, True, prefetch=0)
    ld._ensure_ready()
    plan = ld.plan(0)
    acc = dict(read=0.0, transform=0.0, columns=0.0, shuffle=0.0)
    import numpy as np
    from tabprep import backend
    for k in range(len(plan.chunks)):
        t = time.perf_counter()
        raw = ld._source.stack([ld._read_piece(p) for p in plan.chunks[k]]); sync()
        t1 = time.perf_counter(); acc["read"] += t1 - t
        df = ld._transform(raw); sync()
        t2 = time.perf_counter(); acc["transform"] += t2 - t1
        cols = ld._to_columns(df, raw); sync()
        t3 = time.perf_counter(); acc["columns"] += t3 - t2
        perm = ld._device.asarray(np.random.default_rng(k).permutation(len(df)))
        cols = {n: backend.take_rows(c, perm, 0) for n, c in cols.items()}; sync()
        acc["shuffle"] += time.perf_counter() - t3
    print("stages (s):", {k: round(v, 3) for k, v in acc.items()}, flush=True)
    prof = cProfile.Profile()
    prof.enable()
    for b in make(1, True, prefetch=0):
        pass
    sync()
    prof.disable()
    st = pstats.Stats(prof)
    st.sort_stats("tottime").print_stats(22)


if __name__ == "__main__":
    main()
