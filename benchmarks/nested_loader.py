"""Loader rows/s on a nested list column (the SOK notebook's 100 x 10 keys per row) next to the
same keys as one flat list column (issue 31; goal: nested within 1.2x of flat).

    python benchmarks/nested_loader.py                          # CPU, 50k rows
    python benchmarks/nested_loader.py --gpu --rows 500000      # GPU: cuDF read, cupy batches

Data: ``--rows`` rows of ``--slots`` x ``--nnz`` int64 keys, written twice as parquet: a
``list<list<int64>>`` column (``samples.tolist()``) and a ``list<int64>`` column of the same
keys, row by row. Each pipeline is one shuffled epoch of the framework-neutral core
``DataLoader`` (``--batch`` rows), the fastest of ``--passes``:

* **ragged**: flat lists as ``(values, lengths)``; nested as leaves + leaves per row + the inner
  level's lengths (:class:`tabprep.loader.nested.NestedBatch`);
* **dense** (``sparse_as_dense``): flat ``(batch, slots * nnz)``; nested ``(batch, slots, nnz)``.

Prints rows/s per pipeline and the flat / nested time ratio. The checks compare the keys of the
first batch of both columns (same seed: same rows).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from typing import Any, Dict

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tabprep.loader import DataLoader  # noqa: E402


def write(work: str, rows: int, slots: int, nnz: int, row_group: int) -> Dict[str, str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    keys = np.random.default_rng(0).integers(0, 2 ** 40, size=(rows, slots, nnz), dtype=np.int64)
    flat_values = pa.array(keys.reshape(-1))
    inner = pa.ListArray.from_arrays(pa.array(np.arange(0, rows * slots * nnz + 1, nnz, dtype=np.int32)), flat_values)
    nested = pa.ListArray.from_arrays(pa.array(np.arange(0, rows * slots + 1, slots, dtype=np.int32)), inner)
    flat = pa.ListArray.from_arrays(pa.array(np.arange(0, rows * slots * nnz + 1, slots * nnz, dtype=np.int32)),
                                    flat_values)
    paths = {"nested": os.path.join(work, "nested.parquet"), "flat": os.path.join(work, "flat.parquet")}
    pq.write_table(pa.table({"x": nested}), paths["nested"], row_group_size=row_group)
    pq.write_table(pa.table({"x": flat}), paths["flat"], row_group_size=row_group)
    return paths


def epoch_seconds(path: str, args: argparse.Namespace, dense: Any, passes: int) -> float:
    kw: Dict[str, Any] = dict(batch_size=args.batch, cat_names=["x"], shuffle=True, seed=0,
                              device=0 if args.gpu else "cpu", buffer_size=args.piece_rows)
    if dense is not None:
        kw.update(sparse_as_dense=True, sparse_max={"x": dense})
    best = float("inf")
    loader = DataLoader(path, **kw)
    for _ in range(passes):
        start = time.perf_counter()
        for batch in loader:
            pass
        loader._device.synchronize()
        best = min(best, time.perf_counter() - start)
    loader.close()
    return best


def first_batch_keys(path: str, args: argparse.Namespace) -> np.ndarray:
    loader = DataLoader(path, batch_size=args.batch, cat_names=["x"], shuffle=True, seed=0,
                        device=0 if args.gpu else "cpu", buffer_size=args.piece_rows)
    values = next(iter(loader))["x"].values
    loader.close()
    return values.get() if hasattr(values, "get") else np.asarray(values)


def main(argv: Any = None) -> Dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--slots", type=int, default=100)
    ap.add_argument("--nnz", type=int, default=10)
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--piece-rows", type=int, default=25_000, help="rows per loader piece (buffer_size)")
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    work = tempfile.mkdtemp(prefix="tabprep-nested-bench-")
    try:
        paths = write(work, args.rows, args.slots, args.nnz, row_group=min(args.piece_rows, args.rows))
        assert np.array_equal(first_batch_keys(paths["nested"], args), first_batch_keys(paths["flat"], args))
        res: Dict[str, Any] = {"rows": args.rows, "shape": [args.slots, args.nnz],
                               "device": "gpu" if args.gpu else "cpu"}
        for layout, sizes in (("ragged", (None, None)), ("dense", ((args.slots, args.nnz), args.slots * args.nnz))):
            nested = epoch_seconds(paths["nested"], args, sizes[0], args.passes)
            flat = epoch_seconds(paths["flat"], args, sizes[1], args.passes)
            res[layout] = {"nested_rows_s": round(args.rows / nested), "flat_rows_s": round(args.rows / flat),
                           "nested_over_flat_time": round(nested / flat, 3)}
        if args.json:
            print(json.dumps(res))
        else:
            print(f"{args.rows:,} rows of {args.slots} x {args.nnz} int64 keys, batch {args.batch}, {res['device']}")
            for layout in ("ragged", "dense"):
                r = res[layout]
                print(f"  {layout:6s}  nested {r['nested_rows_s']:>10,} rows/s   flat {r['flat_rows_s']:>10,} rows/s"
                      f"   nested/flat time {r['nested_over_flat_time']:.2f}x")
        return res
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
