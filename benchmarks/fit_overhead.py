"""The fit's fixed cost per partition, apart from the data: the task graph and dask's scheduling.

    python benchmarks/fit_overhead.py                      # 200 partitions of 50 rows, sync scheduler
    python benchmarks/fit_overhead.py --partitions 1000 --scheduler threads

A dataset of ``--partitions`` tiny parquet files (50 rows: the statistics cost next to nothing) is
fitted ``--fits`` times with Categorify on two int columns and Normalize on a float column; the
script prints the median fit in ms per partition and, of that, the building of the fit's task
graph (``reduction.fit_graph``, in the client), next to a baseline run in the same process: dask
computing the same number of trivial delayed tasks (a partial, one combine per 8, a final: the
shape of the fit's tree). At Criteo-1TB scale (~330 GPU partitions of 12M rows) every ms per
partition is a third of a second of each fit pass, paid in the client whatever the number of GPUs.

Compare two versions of tabprep with ``PYTHONPATH`` pointing at the other checkout.
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--partitions", type=int, default=200)
    ap.add_argument("--fits", type=int, default=7, help="fits; the first is a warm-up (default 7)")
    ap.add_argument("--scheduler", default="sync", choices=["sync", "threads"])
    args = ap.parse_args()

    import dask
    import numpy as np
    import pandas as pd

    import tabprep as tp
    from tabprep import ops
    from tabprep.workflow import workflow as workflow_module

    folder = os.path.join(tempfile.gettempdir(), f"tabprep-fit-overhead-{args.partitions}")
    if not os.path.exists(os.path.join(folder, "_DONE")):
        os.makedirs(folder, exist_ok=True)
        rng = np.random.default_rng(0)
        for i in range(args.partitions):
            pd.DataFrame({"a": rng.integers(0, 100, 50), "b": rng.integers(0, 9, 50),
                          "x": rng.random(50)}).to_parquet(os.path.join(folder, f"p{i:05d}.parquet"))
        open(os.path.join(folder, "_DONE"), "w").close()

    built = []
    original = workflow_module.fit_graph  # the name Workflow.fit calls

    def timed_fit_graph(*a, **k):
        t = time.perf_counter()
        try:
            return original(*a, **k)
        finally:
            built.append(time.perf_counter() - t)

    workflow_module.fit_graph = timed_fit_graph
    fits, graphs, floors = [], [], []
    with dask.config.set(scheduler=args.scheduler):
        for i in range(args.fits):
            wf = tp.Workflow((["a", "b"] >> ops.Categorify()) + (["x"] >> ops.Normalize()))
            ds = tp.Dataset(folder, part_size="1KB")
            t = time.perf_counter()
            wf.fit(ds)
            fits.append(time.perf_counter() - t)
            graphs.append(built[-1])
            t = time.perf_counter()
            leaves = [dask.delayed(lambda j: j, pure=True)(j) for j in range(ds.npartitions)]
            level = [dask.delayed(sum, pure=True)(leaves[j:j + 8]) for j in range(0, len(leaves), 8)]
            while len(level) > 1:
                level = [dask.delayed(sum, pure=True)(level[j:j + 8]) for j in range(0, len(level), 8)]
            dask.compute(*level)
            floors.append(time.perf_counter() - t)
    n = ds.npartitions
    fit, graph, floor = (1000 * statistics.median(v[1:]) / n for v in (fits, graphs, floors))
    print(f"tabprep from {os.path.dirname(tp.__file__)}; {n} partitions, {args.scheduler} scheduler, "
          f"median of {args.fits - 1} fits")
    print(f"fit {fit:.2f} ms/partition (task graph {graph:.2f}); dask tree of trivial tasks {floor:.2f} "
          f"ms/partition; fit / dask tree {fit / floor:.2f}x")


if __name__ == "__main__":
    main()
