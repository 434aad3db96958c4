"""The loader with a multi-hot column next to the same data without it (issue 33's goal: multi-hot
columns and shuffling on, no worse than 0.8x the flat-column rate).

    python benchmarks/multihot_loader.py                                   # CPU, 2M rows
    python benchmarks/multihot_loader.py --gpu --rows 20000000 --dir /dev/shm/mh

Data (made once per ``--dir``): ``--rows`` rows of 26 int32 ids, 13 float32 values and a label (the
transformed Criteo layout), plus ``genres``, a MovieLens-like multi-hot list of 1 to ``--max-len``
int32 ids (lengths skewed to short lists, about 1.9 on average as MovieLens' genres), in ``--files``
parquet files of ``--row-group`` rows. Each pipeline is one shuffled epoch of the core
``DataLoader``, the best of ``--passes``:

* ``flat``: the 40 scalar columns only;
* ``multi-hot, ragged``: plus ``genres`` as ``(values, lengths)``;
* ``multi-hot, dense``: plus ``genres`` padded to ``(batch, max_len)`` (``sparse_as_dense``).

Prints rows/s and each multi-hot pipeline's rate over the flat one's. ``--loader`` times a framework
adapter instead of the core loader: ``keras`` (``KerasSequenceLoader`` on ``KERAS_BACKEND``), ``jax``
(``JaxLoader``) or ``torch`` (``TorchAsyncItr``), per column.

    KERAS_BACKEND=jax python benchmarks/multihot_loader.py --gpu --rows 20000000 --dir /dev/shm/mh --loader keras
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CATS = [f"C{i}" for i in range(1, 27)]
CONTS = [f"I{i}" for i in range(1, 14)]


def write(folder: str, rows: int, files: int, row_group: int, max_len: int) -> list:
    import pyarrow as pa
    import pyarrow.parquet as pq

    done = os.path.join(folder, "_DONE")
    if not os.path.exists(done):
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        rng = np.random.default_rng(0)
        per = -(-rows // files)
        for f in range(files):
            n = min(per, rows - f * per)
            cols = {c: pa.array(rng.integers(0, 100_000, n, dtype=np.int32)) for c in CATS}
            cols.update({c: pa.array(rng.normal(size=n).astype(np.float32)) for c in CONTS})
            cols["label"] = pa.array(rng.integers(0, 2, n).astype(np.float32))
            # lengths 1..max_len, geometric-like (MovieLens genres: mostly 1-3)
            lengths = np.minimum(rng.geometric(0.55, n), max_len).astype(np.int32)
            offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
            values = rng.integers(0, 20, int(offsets[-1]), dtype=np.int32)
            cols["genres"] = pa.ListArray.from_arrays(pa.array(offsets), pa.array(values))
            pq.write_table(pa.table(cols), os.path.join(folder, f"part-{f:03d}.parquet"), row_group_size=row_group)
        open(done, "w").close()
    return sorted(os.path.join(folder, p) for p in os.listdir(folder) if p.endswith(".parquet"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--row-group", type=int, default=100_000)
    ap.add_argument("--max-len", type=int, default=10)
    ap.add_argument("--batch", type=int, default=65536)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--dir", default="/tmp/tabprep-multihot")
    ap.add_argument("--loader", default="core", choices=["core", "keras", "jax", "torch"],
                    help="the loader timed (a framework adapter: per-column batches)")
    args = ap.parse_args()

    from tabprep.loader import DataLoader

    files = write(os.path.join(args.dir, f"mh_{args.rows}"), args.rows, args.files, args.row_group, args.max_len)

    def sync() -> None:
        if args.gpu:
            import cupy
            cupy.cuda.Device().synchronize()

    def epoch(seed: int, multi: bool, dense: bool) -> None:
        cats = CATS + (["genres"] if multi else [])
        kw = {"sparse_names": ["genres"], "sparse_max": {"genres": args.max_len}, "sparse_as_dense": True} \
            if multi and dense else {}
        device = 0 if args.gpu else "cpu"
        if args.loader == "core":
            ld = DataLoader(files, args.batch, cat_names=cats, cont_names=CONTS, label_names=["label"], shuffle=True,
                            seed=seed, device=device, **kw)
        elif args.loader == "keras":
            from tabprep.loader.keras import KerasSequenceLoader

            ld = iter(KerasSequenceLoader(files, args.batch, label_names=["label"], cat_names=cats, cont_names=CONTS,
                                          shuffle=True, seed=seed, device=device, **kw))
        elif args.loader == "jax":
            from tabprep.loader.jax import JaxLoader

            ld = JaxLoader(files, batch_size=args.batch, cats=cats, conts=CONTS, labels=["label"], shuffle=True,
                           seed=seed, device=device, **kw)
        else:
            from tabprep.loader.torch import TorchAsyncItr

            ld = TorchAsyncItr(files, batch_size=args.batch, cats=cats, conts=CONTS, labels=["label"], shuffle=True,
                               seed=seed, device=device, **kw)
        for _ in ld:
            pass

    def best(multi: bool, dense: bool) -> float:
        out = []
        for p in range(args.passes):
            sync()
            t = time.perf_counter()
            epoch(p, multi, dense)
            sync()
            out.append(time.perf_counter() - t)
        return min(out)

    epoch(99, True, False)   # warm-up
    print(f"{'GPU' if args.gpu else 'CPU'}, {args.rows:,} rows, batch {args.batch:,}, shuffled, {args.loader} loader",
          flush=True)
    flat = best(False, False)
    print(f"  {'flat':22s} {flat:7.3f} s  {args.rows / flat / 1e6:8.2f} M rows/s", flush=True)
    for label, dense in (("multi-hot, ragged", False), ("multi-hot, dense", True)):
        s = best(True, dense)
        print(f"  {label:22s} {s:7.3f} s  {args.rows / s / 1e6:8.2f} M rows/s  {flat / s:.2f}x flat (goal >= 0.8x)",
              flush=True)


if __name__ == "__main__":
    main()
