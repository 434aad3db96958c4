"""Where the Criteo job's time goes: per-op totals and a cProfile of fit and transform+write.

    python benchmarks/profile_job.py --data /tmp/tabprep-bench/criteo_10000000_4          # CPU
    python benchmarks/profile_job.py --data /tmp/tb/criteo_50000000_16 --gpu               # cuDF

Runs the job of ``benchmarks/criteo.py`` once with dask's synchronous scheduler (so cProfile,
which follows one thread, sees every task), prints the seconds per op and kind (fit partial /
transform) from ``Workflow.op_timer``, then the top functions by own time and by cumulative
time for the fit and for the transform+write. On the GPU each op's time is taken after a
device synchronize, so kernels are charged to the op that launched them.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import tempfile
import time
from collections import defaultdict

CATS = [f"C{i}" for i in range(1, 27)]
CONTS = [f"I{i}" for i in range(1, 14)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="folder of parquet files (criteo.py's cache)")
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--part-size", default=None)
    args = ap.parse_args()

    import dask

    import tabprep as tp
    from tabprep import ops

    dask.config.set(scheduler="sync")
    sync = lambda: None  # noqa: E731
    if args.gpu:
        import cupy

        from tabprep.backend import use_rmm_pool

        use_rmm_pool()
        sync = cupy.cuda.Device().synchronize
    totals: dict = defaultdict(float)

    def timer(nid: str, label: str, kind: str, seconds: float, rows: int) -> None:
        t = time.perf_counter()
        sync()
        totals[(label, kind)] += seconds + time.perf_counter() - t

    ds = tp.Dataset(os.path.join(args.data, "*.parquet"), cpu=not args.gpu, part_size=args.part_size)
    cats = CATS >> ops.Categorify()
    conts = CONTS >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize()
    wf = tp.Workflow(cats + conts + ["label"])
    wf.op_timer = timer
    out = tempfile.mkdtemp(prefix="tabprep-profile-")
    for name, job in (("fit", lambda: wf.fit(ds)),
                      ("transform+write", lambda: wf.transform(ds).to_parquet(out, overwrite=True))):
        prof = cProfile.Profile()
        t = time.perf_counter()
        prof.enable()
        job()
        sync()
        prof.disable()
        print(f"\n===== {name}: {time.perf_counter() - t:.2f}s ({ds.npartitions} partitions, sync scheduler)")
        for sort in ("tottime", "cumulative"):
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).sort_stats(sort).print_stats(args.top)
            lines = buf.getvalue().splitlines()
            start = next((i for i, ln in enumerate(lines) if ln.strip().startswith("ncalls")), 0)
            print(f"--- by {sort}")
            print("\n".join(ln[:200] for ln in lines[start:] if ln.strip()))
    print("\n===== seconds per op (device-synchronized on the GPU)")
    for (label, kind), s in sorted(totals.items(), key=lambda kv: -kv[1]):
        print(f"{s:8.2f}  {kind:9s}  {label}")


if __name__ == "__main__":
    main()
