"""The data path of HugeCTR's "Sparse Operation Kit with NVTabular data reader" notebook, on tabprep.

    python examples/sok_split.py                     # 1,024 rows of 100 slots x 10 keys, 2 ranks

The notebook stores each sample as ``samples.tolist()``: a nested ``list<list<int64>>`` column
``feature`` of ``slot_num`` lists of ``nnz_per_slot`` keys per row. Here, as written there:

1. ``samples`` of shape ``(rows, slot_num, nnz_per_slot)`` to a pandas frame with
   ``{"feature": samples.tolist(), "label": ...}``, saved as parquet;
2. a passthrough :class:`tabprep.Workflow` (no op) fitted and applied with
   ``to_parquet(out_files_per_proc=gpu_num)``; also with ``split_per_worker=gpu_num`` (one
   folder per rank);
3. per rank, a ``KerasSequenceLoader(files, batch_size, cont_names=["feature"], shuffle=False,
   global_size=gpu_num, global_rank=rank, ...)`` and the notebook's loop::

       for feats, labels in loader:
           input_vals, input_nnzs = feats["feature"]      # NVTabular's (leaf values, leaves per row)
           input_vals = tf.reshape(input_vals, [-1, slot_num, nnz_per_slot])

   ``sparse_format="tuple"`` gives that ``(values, nnzs)`` pair (tabprep's default is two entries,
   ``feature__values`` / ``feature__nnzs``). The notebook also passes ``sparse_as_dense=True``,
   which NVTabular ignores without ``sparse_names``; tabprep pads every list column then, so the
   run reads a second loader with ``sparse_as_dense=True`` and checks its ``(batch, slot_num,
   nnz_per_slot)`` tensor (the shape comes from the data: every row has the same shape).

The run asserts that each rank yields exactly its rows' keys, in order (the rows of a rank are
a contiguous range, in file order, of the split), for both splits and both layouts.
"""
from __future__ import annotations

import argparse
import glob
import logging
import os
import shutil
import sys
import tempfile
from typing import Dict, List

import numpy as np
import pandas as pd

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import tabprep as tp  # noqa: E402


def read_rank(files: List[str], rank: int, gpu_num: int, batch: int, slot_num: int, nnz_per_slot: int,
              dense: bool) -> np.ndarray:
    """All keys rank ``rank`` reads in one epoch, as ``(rows, slot_num, nnz_per_slot)``."""
    import tensorflow as tf

    from tabprep.loader.tensorflow import KerasSequenceLoader

    layout = dict(sparse_as_dense=True) if dense else dict(sparse_format="tuple")
    loader = KerasSequenceLoader(files, batch_size=batch, label_names=["label"], cont_names=["feature"],
                                 shuffle=False, global_size=gpu_num, global_rank=rank, device="cpu", **layout)
    out = []
    for feats, labels in loader:
        if dense:
            input_vals = feats["feature"]                       # (batch, slot_num, nnz_per_slot)
        else:
            input_vals, input_nnzs = feats["feature"]           # as in the notebook
            assert input_nnzs.shape == (int(labels.shape[0]), 1)
            assert bool(tf.reduce_all(input_nnzs == slot_num * nnz_per_slot))
        input_vals = tf.reshape(input_vals, [-1, slot_num, nnz_per_slot])
        out.append(input_vals.numpy())
    loader.close()
    return np.concatenate(out)


def main(argv: List[str] | None = None) -> Dict[str, object]:
    ap = argparse.ArgumentParser(description="the SOK notebook's nested-list data path on tabprep")
    ap.add_argument("--rows", type=int, default=1024)
    ap.add_argument("--slot-num", type=int, default=100)
    ap.add_argument("--nnz-per-slot", type=int, default=10)
    ap.add_argument("--gpu-num", type=int, default=2, help="ranks (files per process / worker folders)")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--dir", default=None, help="work folder (default: temporary)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    rows, slot_num, nnz_per_slot, gpu_num = args.rows, args.slot_num, args.nnz_per_slot, args.gpu_num
    if rows % gpu_num:
        raise SystemExit("--rows must be a multiple of --gpu-num (equal ranks)")

    work = args.dir or tempfile.mkdtemp(prefix="tabprep-sok-")
    try:
        # 1. the notebook's data: a list<list<int64>> column from samples.tolist()
        samples = np.random.default_rng(0).integers(0, 2 ** 40, size=(rows, slot_num, nnz_per_slot), dtype=np.int64)
        df = pd.DataFrame({"feature": samples.tolist(), "label": np.arange(rows) % 2})
        raw = os.path.join(work, "raw.parquet")
        df.to_parquet(raw)

        # 2. the passthrough workflow and the split
        ds = tp.Dataset(raw)
        wf = tp.Workflow(["feature", "label"])
        wf.fit(ds)
        per_proc = os.path.join(work, "per_proc")
        wf.transform(ds).to_parquet(per_proc, out_files_per_proc=gpu_num)
        per_worker = os.path.join(work, "per_worker")
        wf.transform(ds).to_parquet(per_worker, split_per_worker=gpu_num)
        splits = {
            "out_files_per_proc": sorted(glob.glob(os.path.join(per_proc, "*.parquet"))),
            "split_per_worker": [f for d in sorted(glob.glob(os.path.join(per_worker, "worker_*")),
                                                   key=lambda p: int(p.rsplit("_", 1)[1]))
                                 for f in sorted(glob.glob(os.path.join(d, "*.parquet")))],
        }

        # 3. one loader per rank; each rank's keys are its contiguous range of rows, in order
        per = rows // gpu_num
        for split, files in splits.items():
            assert len(files) >= gpu_num, files
            for rank in range(gpu_num):
                want = samples[rank * per:(rank + 1) * per]
                for dense in (False, True):
                    got = read_rank(files, rank, gpu_num, args.batch, slot_num, nnz_per_slot, dense)
                    assert got.shape == want.shape, (split, rank, dense, got.shape)
                    assert np.array_equal(got, want), f"{split}: rank {rank} read other keys (dense={dense})"
        print(f"sok_split: {rows:,} rows of {slot_num} x {nnz_per_slot} keys, {gpu_num} ranks; every rank read "
              f"exactly its rows' keys in order (out_files_per_proc and split_per_worker; (values, nnzs) and dense)")
        return {"rows": rows, "ranks": gpu_num, "files": {k: len(v) for k, v in splits.items()}}
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
