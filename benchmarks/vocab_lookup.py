"""What a worker's first transform pays to build the Criteo vocabularies' lookup structures
(issue 34: on 4 GPU workers the transform's task-seconds grew 1.4-1.5x, each worker building its
own). Builds ``backend.vocab_lookup`` of 26 vocabularies of the Criteo cardinalities
(``tabprep.io.synthetic.CRITEO_CARDINALITIES``, 33.8M int64 values) in one thread and in two, and
times its parts apart: the host-to-device copies from pageable memory, the argsorts, a copy into
pinned host memory and the copies from there. Two rounds: the first cold (fresh allocations).

    python benchmarks/vocab_lookup.py --gpu          # one GPU (cuDF and CuPy)
    python benchmarks/vocab_lookup.py                # CPU: pandas hash indexes, for comparison
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__":
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
sys.path.insert(0, os.path.dirname(HERE))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the Criteo cardinalities")
    args = ap.parse_args()

    import numpy as np

    from tabprep import backend
    from tabprep.io.synthetic import CRITEO_CARDINALITIES

    rng = np.random.default_rng(0)
    # distinct values in the uint32 range, in a random (frequency-like) order, as fitted vocabularies hold them
    vocabs = [rng.permutation(np.arange(max(1, int(n * args.scale)), dtype=np.int64) * 7919 % (1 << 32))
              for n in CRITEO_CARDINALITIES.values()]
    total = sum(len(v) for v in vocabs)
    print(f"{len(vocabs)} vocabularies, {total:,} values, {total * 8 / 1e6:.0f} MB of int64", flush=True)
    if args.gpu:
        import cudf
        import cupy

        like: Any = cudf.Series(np.arange(10, dtype=np.int64))
        sync: Callable[[], None] = cupy.cuda.Device().synchronize
    else:
        import pandas as pd

        like, sync = pd.Series(np.arange(10, dtype=np.int64)), (lambda: None)
    backend.vocab_lookup(np.arange(1000, dtype=np.int64), like)   # the kernels loaded
    sync()

    def timed(label: str, fn: Callable[[], Any]) -> None:
        t = time.perf_counter()
        fn()
        sync()
        print(f"  {label:<32} {time.perf_counter() - t:7.3f} s", flush=True)

    def two_threads() -> None:
        threads = [threading.Thread(target=lambda part=vocabs[k::2]: [backend.vocab_lookup(v, like) for v in part])
                   for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    for r in range(args.rounds):
        print(f"round {r}{' (cold)' if r == 0 else ''}:")
        timed("build all, one thread", lambda: [backend.vocab_lookup(v, like) for v in vocabs])
        timed("build all, two threads", two_threads)
        if args.gpu:
            timed("host to device (pageable)", lambda: [cupy.asarray(v) for v in vocabs])
            dev = [cupy.asarray(v) for v in vocabs]
            sync()
            timed("argsort on the device", lambda: [cupy.argsort(d) for d in dev])
            pinned = []

            def pin() -> None:
                for v in vocabs:
                    buf = np.frombuffer(cupy.cuda.alloc_pinned_memory(v.nbytes), v.dtype, v.size)
                    buf[...] = v
                    pinned.append(buf)

            timed("copy into pinned host memory", pin)
            timed("host to device (pinned)", lambda: [cupy.asarray(v) for v in pinned])


if __name__ == "__main__":
    main()
