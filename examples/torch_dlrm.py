"""Criteo click prediction with a small DLRM in PyTorch, data prepared online by tabprep's
``TorchAsyncItr`` (NVTabular's name).

    python examples/torch_dlrm.py                         # 100k generated rows, CPU or GPU
    python examples/torch_dlrm.py --rows 2000000 --batch 65536 --epochs 2

Steps: generate raw Criteo-like parquet; fit the workflow (HashBucket on the 26 categoricals,
log-normalized counts; only Normalize learns statistics); ``TorchAsyncItr(...).map(wf)``
transforms each chunk online (cuDF on the GPU, pandas on the CPU) in a background thread and
hands batches over as tensors through DLPack (CUDA tensors on the GPU, no host copy);
``DLDataLoader`` wraps it as a ``torch.utils.data.DataLoader``. DLRM: bottom MLP, one embedding
per categorical, pairwise dot products (upper triangle), top MLP, BCE loss. The run asserts
that the mean training loss falls from the first epoch to the last.

For data-parallel training (DDP), create the iterator after ``torch.distributed`` is
initialized: ``global_size`` / ``global_rank`` default to its world size and rank.
"""
from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
import time
from typing import Dict, List

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tabprep as tp  # noqa: E402
from tabprep import ops  # noqa: E402
from tabprep.io.synthetic import generate_criteo  # noqa: E402
from tabprep.loader.torch import DLDataLoader, TorchAsyncItr  # noqa: E402

CATS = [f"C{i}" for i in range(1, 27)]
CONTS = [f"I{i}" for i in range(1, 14)]


def criteo_workflow(num_buckets: int) -> tp.Workflow:
    cats = CATS >> ops.HashBucket(num_buckets=num_buckets)
    conts = CONTS >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize(out_dtype="float32")
    return tp.Workflow(cats + conts + ["label"])


class DLRM(nn.Module):
    """DLRM (Naumov et al. 2019), small."""

    def __init__(self, cardinalities: List[int], num_cont: int, dim: int) -> None:
        super().__init__()
        self.embeddings = nn.ModuleList(nn.Embedding(card, dim) for card in cardinalities)
        self.bottom = nn.Sequential(nn.Linear(num_cont, 64), nn.ReLU(), nn.Linear(64, dim), nn.ReLU())
        n = len(cardinalities) + 1
        rows, cols = np.triu_indices(n, k=1)
        self.register_buffer("pairs", torch.as_tensor(rows * n + cols))
        self.top = nn.Sequential(nn.Linear(dim + len(rows), 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                                 nn.Linear(64, 1))

    def forward(self, x: Dict[str, torch.Tensor]) -> torch.Tensor:
        dense = self.bottom(torch.stack([x[c] for c in CONTS], dim=1))                 # (b, dim)
        feats = torch.stack([dense] + [emb(x[c]) for emb, c in zip(self.embeddings, CATS)], dim=1)
        dots = torch.bmm(feats, feats.transpose(1, 2)).flatten(1)[:, self.pairs]      # (b, n(n-1)/2)
        return self.top(torch.cat([dense, dots], dim=1))[:, 0]                         # logits


def main(argv: List[str] | None = None) -> Dict[str, float]:
    ap = argparse.ArgumentParser(description="Criteo DLRM in PyTorch with tabprep's TorchAsyncItr")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--buckets", type=int, default=10_000, help="HashBucket buckets per column")
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--cpu", action="store_true", help="force the CPU even when cuDF / CUDA are present")
    ap.add_argument("--dir", default=None, help="work folder (default: temporary)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    torch.manual_seed(0)

    work = args.dir or tempfile.mkdtemp(prefix="tabprep-torch-dlrm-")
    try:
        raw = os.path.join(work, "train")
        generate_criteo(args.rows, raw, files=2, seed=0, row_group_size=max(args.rows // 8, 1000))
        wf = criteo_workflow(args.buckets)
        wf.fit(tp.Dataset(raw, cpu=True if args.cpu else None))
        itr = TorchAsyncItr(tp.Dataset(raw, cpu=True if args.cpu else None), batch_size=args.batch, cats=CATS,
                            conts=CONTS, labels=["label"], shuffle=True, seed=0, parts_per_chunk=2,
                            buffer_size=max(args.rows // 8, 1000), device="cpu" if args.cpu else None).map(wf)
        device = itr.device
        model = DLRM([wf.output_schema[c].cardinality for c in CATS], len(CONTS), args.dim).to(device)
        opt = torch.optim.Adam(model.parameters(), lr=2e-3)
        losses, rows, start = [], 0, time.perf_counter()
        for _ in range(args.epochs):
            total, batches = 0.0, 0
            for x, y in DLDataLoader(itr):
                loss = nn.functional.binary_cross_entropy_with_logits(model(x), y.float())
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += float(loss.detach())
                batches += 1
                rows += len(y)
            losses.append(total / batches)
        seconds = time.perf_counter() - start
        print(f"torch_dlrm: {args.rows:,} rows, {len(itr)} batches/epoch on {device}; mean loss per epoch "
              f"{[round(v, 4) for v in losses]}; {rows / seconds:,.0f} rows/s (loader + training)")
        if len(losses) > 1:
            assert losses[-1] < losses[0], f"the training loss did not fall: {losses}"
        return {"losses": losses, "rows_per_s": rows / seconds}
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
