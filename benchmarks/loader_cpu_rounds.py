"""The CPU core loader (no workflow) against pyarrow's raw read in alternating rounds of one process.

On a shared machine the best pass of ``framework_loaders.py`` compares a raw read and a loader epoch
timed at different moments; here every round times the raw read and then one loader epoch right
after it, and the medians of the per-round ratios are printed (wall clock and rows per CPU-second
of the process, all threads).

    python benchmarks/framework_loaders.py --rows 2000000 --no-workflow --dir /dev/shm/fl   # writes the data
    PYTHONPATH=$PWD python benchmarks/loader_cpu_rounds.py /dev/shm/fl/criteo_2000000_transformed --rounds 8
"""
from __future__ import annotations

import argparse
import glob
import os
import statistics
import sys
import time
from typing import Any, Iterable, Tuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CATS = [f"C{i}" for i in range(1, 27)]
CONTS = [f"I{i}" for i in range(1, 14)]


def timed(batches: Iterable[Any]) -> Tuple[float, float]:
    """(rows per second, rows per CPU-second of the process) of one pass over ``batches``."""
    t, c = time.perf_counter(), time.process_time()
    rows = 0
    for b in batches:
        rows += b["label"].shape[0] if isinstance(b, dict) else b.num_rows
    return rows / (time.perf_counter() - t), rows / (time.process_time() - c)


def main() -> None:
    import pyarrow.parquet as pq

    from tabprep.loader import DataLoader

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", help="folder of transformed Criteo-like parquet files (framework_loaders.py --no-workflow)")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--batch", type=int, default=65536)
    ap.add_argument("--buffer-size", type=float, default=250_000)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()
    files = sorted(glob.glob(os.path.join(args.data, "*.parquet")))
    raw, core = [], []
    for r in range(args.rounds):
        raw.append(timed(pq.read_table(f) for f in files))
        core.append(timed(DataLoader(files, args.batch, label_names=["label"], cat_names=CATS, cont_names=CONTS,
                                     seed=r, shuffle=True, buffer_size=args.buffer_size, parts_per_chunk=2,
                                     device="cpu", threads=args.threads)))
    for name, v in (("raw read", raw), ("core", core)):
        print(f"{name:8s} rows/s median {statistics.median(x[0] for x in v):>11,.0f} | rows per CPU s median "
              f"{statistics.median(x[1] for x in v):>11,.0f}")
    print(f"core / raw read, median of the rounds: wall {statistics.median(c[0] / w[0] for c, w in zip(core, raw)):.2f}"
          f", rows per CPU s {statistics.median(c[1] / w[1] for c, w in zip(core, raw)):.2f}")


if __name__ == "__main__":
    main()
