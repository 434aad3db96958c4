"""Where the GPU profile's exact part spends its time (issue 35: ``tp.profile`` of 50M Criteo rows at
1.55x a cuDF read, the exact part the largest piece after the reads, which cProfile cannot split).

    python benchmarks/profile_exact.py --data /dev/shm/tb/criteo_50000000_8 --files 4

Reads ``--files`` files of ``--data`` as one cuDF frame (one partition of ``tp.profile``), then
times, each the median of ``--repeat`` after a warm-up:

* ``backend.profile_exact`` of every column (moments for the int and float ones), device synchronized;
* the same while another thread reads the other files in a loop (what a profile partition meets:
  the other partition's read on the shared default stream);
* one column's calls one by one, the device synchronized after each: the float64 cast, the mean,
  the deviation, the sum of squares, the extrema and the copy of a result to the host.
"""
from __future__ import annotations

import argparse
import glob
import os
import statistics
import sys
import threading
import time
from typing import Any, Callable, List

HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__":
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
sys.path.insert(0, os.path.dirname(HERE))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="folder of parquet files")
    ap.add_argument("--files", type=int, default=4, help="files read as the partition")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--column", default="I5", help="the column timed call by call")
    args = ap.parse_args()

    import cudf
    import cupy
    import pylibcudf as plc

    from tabprep import backend
    from tabprep.backend import gpu_reductions as G

    files = sorted(glob.glob(os.path.join(args.data, "*.parquet")))
    part, others = files[:args.files], files[args.files:] or files[:1]
    df = cudf.read_parquet(part)
    cols = list(df.columns)
    numeric = [c for c in cols if df[c].dtype.kind in "iuf"]
    sync = cupy.cuda.Device().synchronize
    print(f"{len(df):,} rows, {len(cols)} columns ({len(numeric)} with moments)", flush=True)

    def median(fn: Callable[[], Any]) -> float:
        fn()
        sync()
        runs: List[float] = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            fn()
            sync()
            runs.append(time.perf_counter() - t)
        return statistics.median(runs)

    exact = median(lambda: backend.profile_exact(df, cols, numeric))
    print(f"  profile_exact, alone                 {exact * 1000:8.1f} ms", flush=True)

    stop = threading.Event()
    reads = [0]

    def reader() -> None:
        while not stop.is_set():
            cudf.read_parquet(others)
            reads[0] += 1

    t = threading.Thread(target=reader)
    t.start()
    time.sleep(0.5)
    busy = median(lambda: backend.profile_exact(df, cols, numeric))
    stop.set()
    t.join()
    print(f"  profile_exact, beside a reading thread {busy * 1000:8.1f} ms ({reads[0]} reads meanwhile)", flush=True)

    col = G._plc_column(df[args.column])
    steps = {}
    f64 = plc.unary.cast(col, G._F64)
    steps["cast to float64"] = lambda: plc.unary.cast(col, G._F64)
    steps["mean"] = lambda: plc.reduce.reduce(f64, plc.aggregation.mean(), G._F64)
    mean = plc.reduce.reduce(f64, plc.aggregation.mean(), G._F64)
    steps["x - mean"] = lambda: plc.binaryop.binary_operation(f64, mean, plc.binaryop.BinaryOperator.SUB, G._F64)
    dev = plc.binaryop.binary_operation(f64, mean, plc.binaryop.BinaryOperator.SUB, G._F64)
    steps["sum of squares"] = lambda: plc.reduce.reduce(dev, plc.aggregation.sum_of_squares(), G._F64)
    steps["minmax"] = lambda: plc.reduce.minmax(f64)
    steps["min + max (two reduces)"] = lambda: (plc.reduce.reduce(f64, plc.aggregation.min(), G._F64),
                                               plc.reduce.reduce(f64, plc.aggregation.max(), G._F64))
    steps["to_py of a result"] = lambda: mean.to_py()
    steps["null_count of the series"] = lambda: int(df[args.column].null_count)
    print(f"  column {args.column}, call by call (synchronized after each):")
    for name, fn in steps.items():
        print(f"    {name:<28} {median(fn) * 1000:8.3f} ms", flush=True)
    read = median(lambda: cudf.read_parquet(part))
    print(f"  the partition's cuDF read            {read * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
