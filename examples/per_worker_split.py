"""Per-worker output for data-parallel training, read back by ``global_rank`` readers.

    python examples/per_worker_split.py                   # 12k rows, 3 workers

The NVTabular SOK / Horovod notebooks write one folder of files per training process and give
each process a reader with ``global_size`` / ``global_rank``. Here:

1. raw parquet with a ``row`` id (to follow rows), a categorical and a label;
2. ``tabprep fit`` (a spec file) and ``tabprep transform ... --split-per-worker W``: the output
   has ``worker_0`` .. ``worker_{W-1}`` folders whose row counts differ by at most one;
3. each rank reads it back two ways, both with the framework-neutral
   :class:`tabprep.loader.DataLoader` (``KerasSequenceLoader`` / ``TorchAsyncItr`` /
   ``JaxLoader`` take the same arguments):

   a. its own folder ``worker_{rank}`` (``global_size=1``);
   b. all the folders with ``global_size=W, global_rank=rank`` (the loader cuts the rows, in
      file order, into W equal contiguous ranges: rank ``r``'s range is exactly folder
      ``worker_r`` when the row count is a multiple of W);

   and the run asserts, over two shuffled epochs, that the ranks are disjoint and complete,
   that every row is seen exactly once per epoch, and that both ways give each rank the same
   rows. (When the row count is not a multiple of W, way b gives every rank the same number
   of rows by repeating at most ``W - 1`` rows per epoch, or skipping them with
   ``drop_last=True``; way a gives ranks counts that differ by one, which a synchronous
   all-reduce must handle.)
"""
from __future__ import annotations

import argparse
import glob
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Dict, List

import numpy as np
import pandas as pd

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tabprep.loader import DataLoader  # noqa: E402

SPEC = """\
version: 1
features:
  - columns: [item]
    ops: [{HashBucket: {num_buckets: 1000}}]
  - columns: [x]
    ops: [FillMissing, Normalize]
  - columns: [row, label]
"""


def tabprep(*args: str) -> None:
    """Runs the ``tabprep`` command line (this checkout's, through ``python -m tabprep.cli``)."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    subprocess.run([sys.executable, "-m", "tabprep.cli", args[0], "-q", *args[1:]], check=True, env=env)


def epoch_rows(loader: DataLoader) -> List[int]:
    return [int(r) for batch in loader for r in batch["row"]]


def main(argv: List[str] | None = None) -> Dict[str, object]:
    ap = argparse.ArgumentParser(description="per-worker split read back by global_rank readers")
    ap.add_argument("--rows", type=int, default=12_000)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--dir", default=None, help="work folder (default: temporary)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    if args.rows % args.workers:
        raise SystemExit("--rows must be a multiple of --workers for disjoint and complete ranks (see the doc)")

    work = args.dir or tempfile.mkdtemp(prefix="tabprep-split-")
    try:
        raw, out = os.path.join(work, "raw"), os.path.join(work, "out")
        os.makedirs(raw, exist_ok=True)
        rng = np.random.default_rng(0)
        n = args.rows
        x = rng.normal(size=n)
        x[rng.random(n) < 0.05] = np.nan
        df = pd.DataFrame({"row": np.arange(n), "item": rng.integers(0, 10**6, n), "x": x,
                           "label": rng.integers(0, 2, n)})
        for i, part in enumerate(np.array_split(np.arange(n), 2)):
            df.iloc[part].to_parquet(os.path.join(raw, f"part{i}.parquet"), row_group_size=1000)
        with open(os.path.join(work, "spec.yaml"), "w") as f:
            f.write(SPEC)

        tabprep("fit", os.path.join(work, "spec.yaml"), raw, "--out", os.path.join(work, "wf"), "--cpu")
        tabprep("transform", os.path.join(work, "wf"), raw, "--out", out, "--cpu",
                "--split-per-worker", str(args.workers), "--shuffle", "full", "--seed", "0")
        folders = sorted(glob.glob(os.path.join(out, "worker_*")), key=lambda p: int(p.rsplit("_", 1)[1]))
        assert len(folders) == args.workers, folders
        all_files = [f for d in folders for f in sorted(glob.glob(os.path.join(d, "*.parquet")))]

        common = dict(batch_size=args.batch, cat_names=["item", "row"], cont_names=["x"], label_names=["label"],
                      shuffle=True, seed=1, device="cpu")
        per_rank: Dict[int, set] = {}
        batches = set()
        for rank in range(args.workers):
            own = DataLoader(folders[rank], **common)                                   # way a
            shard = DataLoader(all_files, global_size=args.workers, global_rank=rank, **common)   # way b
            batches.add(len(shard))
            seen = []
            for epoch in range(2):
                rows_a, rows_b = epoch_rows(own), epoch_rows(shard)
                assert len(rows_b) == len(set(rows_b)), f"rank {rank} epoch {epoch}: a row seen twice"
                assert set(rows_a) == set(rows_b), f"rank {rank}: its folder and its global_rank shard differ"
                seen.append(rows_b)
            assert seen[0] != seen[1] and set(seen[0]) == set(seen[1]), "epochs are reshuffles of the same rows"
            per_rank[rank] = set(seen[0])
        union = set().union(*per_rank.values())
        assert union == set(range(n)), f"{n - len(union)} rows missing"
        assert sum(len(s) for s in per_rank.values()) == n, "ranks overlap"
        assert len(batches) == 1, "ranks have different numbers of batches"
        sizes = [len(per_rank[r]) for r in range(args.workers)]
        print(f"per_worker_split: {n:,} rows in {args.workers} worker folders {sizes}; every rank {batches.pop()} "
              f"batches/epoch; ranks disjoint and complete, every row once per epoch (2 epochs)")
        return {"sizes": sizes}
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
