"""A batch's conversion to PyTorch tensors by ``TorchAsyncItr`` or ``KerasSequenceLoader`` on Keras'
torch backend (the consumer's side of issue 33),
microseconds per batch, with a cProfile of the conversion.

    python benchmarks/torch_convert.py                    # CPU: numpy blocks, tensors sharing them
    python benchmarks/torch_convert.py --gpu              # GPU 0: cupy blocks through DLPack
    KERAS_BACKEND=torch python benchmarks/torch_convert.py --keras   # KerasSequenceLoader on Keras' torch backend

One batch of the Criteo-like data of ``framework_loaders.py`` (13 continuous and 26 categorical
columns and a label, shuffled, 65,536 rows) is taken from the core loader once and converted
``--repeat`` times, as the training loop's thread converts every batch: one DLPack hand-off per
block (features by dtype, labels), the columns as rows of each tensor. The consumer's time is
time the preparing threads cannot hold the GIL.
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__":
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(1, HERE)


def main() -> None:
    from framework_loaders import CATS, CONTS, add_data_args, raw_data

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_args(ap, 500_000, "/tmp/tabprep-bench-torch-convert")
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--batch", type=int, default=65536)
    ap.add_argument("--repeat", type=int, default=2000)
    ap.add_argument("--profile", type=int, default=12, help="functions of the cProfile shown (0: none)")
    ap.add_argument("--keras", action="store_true",
                    help="KerasSequenceLoader instead (on Keras' backend: set KERAS_BACKEND=torch)")
    args = ap.parse_args()

    files = raw_data(args.dir, args.rows, args.files, args.row_group)
    device = 0 if args.gpu else "cpu"
    if args.keras:
        from tabprep.loader.keras import KerasSequenceLoader

        itr = KerasSequenceLoader(files, args.batch, label_names=["label"], cat_names=CATS, cont_names=CONTS,
                                  device=device, shuffle=True, seed=0)
    else:
        from tabprep.loader.torch import TorchAsyncItr

        itr = TorchAsyncItr(files, batch_size=args.batch, cats=CATS, conts=CONTS, labels=["label"],
                            device=device, shuffle=True, seed=0)
    try:
        batch = itr.loader.peek()
        itr._convert(batch)   # warm-up
        t = time.perf_counter()
        for _ in range(args.repeat):
            itr._convert(batch)
        us = (time.perf_counter() - t) / args.repeat * 1e6
        print(f"{'GPU' if args.gpu else 'CPU'}, {type(itr).__name__}: {len(CATS) + len(CONTS)} feature columns + label, batch "
              f"{args.batch:,}: {us:.1f} us per batch converted", flush=True)
        if args.profile:
            pr = cProfile.Profile()
            pr.enable()
            for _ in range(args.repeat):
                itr._convert(batch)
            pr.disable()
            pstats.Stats(pr).sort_stats("tottime").print_stats(args.profile)
    finally:
        itr.close()


if __name__ == "__main__":
    main()
