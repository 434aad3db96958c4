"""Why a GPU loader's two preparing threads barely overlap (issue 33): does the parquet read hold the
GIL, and does the online transform wait on the other thread's read through device synchronisations?

    python benchmarks/gpu_overlap.py --dir /dev/shm/fl --rows 20000000

On ``framework_loaders.py``'s raw data (made if absent), per chunk of ``--chunk-rows`` rows:

* ``spin``: a pure-Python counting loop on a second thread, alone and while this thread reads every
  chunk (``gpu_parquet.read_local``, as the loader reads): the share of the read that holds the GIL;
* ``read || transform``: one thread reads chunk k+1 while another transforms chunk k with the Criteo
  workflow, against the two done one after the other; the read on the default stream and on a
  non-blocking stream of its own (``TABPREP_GPU_READ_STREAM=1``).
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from framework_loaders import add_data_args, criteo_workflow, raw_data  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    add_data_args(ap, 20_000_000, "/dev/shm/fl")
    ap.add_argument("--passes", type=int, default=3)
    args = ap.parse_args()

    import cupy
    import pyarrow.parquet as pq

    import tabprep as tp
    from tabprep.backend import gpu_parquet

    from tabprep.backend.core import use_pooled_allocator

    use_pooled_allocator(0)   # as the GPU loader does
    files = raw_data(args.dir, args.rows, args.files, args.row_group)
    columns = pq.read_schema(files[0]).names
    # chunks of whole files (the loader's default buffer holds about as many rows)
    chunks = [([f], [list(range(pq.ParquetFile(f).num_row_groups))]) for f in files]
    wf = criteo_workflow(1_000_000)
    wf.fit(tp.Dataset(files, cpu=False))

    def read(k):
        return gpu_parquet.read_local(chunks[k][0], chunks[k][1], columns)

    def sync():
        cupy.cuda.Device().synchronize()

    for k in range(len(chunks)):   # warm-up
        wf.transform_frame(read(k))
    sync()

    def best(fn):
        out = []
        for _ in range(args.passes):
            sync()
            t = time.perf_counter()
            fn()
            sync()
            out.append(time.perf_counter() - t)
        return min(out)

    # 1. the GIL: a Python loop's rate alone and while reads run on this thread
    def spin_rate(seconds, busy=None):
        stop = threading.Event()
        count = [0]

        def spin():
            n = 0
            while not stop.is_set():
                n += 1
            count[0] = n

        th = threading.Thread(target=spin)
        t = time.perf_counter()
        th.start()
        if busy is None:
            time.sleep(seconds)
        else:
            busy()
            sync()
        stop.set()
        th.join()
        return count[0] / (time.perf_counter() - t)

    alone = spin_rate(0.5)
    during_read = spin_rate(0, lambda: [read(k) for k in range(len(chunks))])
    frames = [read(k) for k in range(len(chunks))]
    during_xf = spin_rate(0, lambda: [wf.transform_frame(f) for f in frames])
    print(f"spin loop: alone {alone / 1e6:.2f}M/s, during reads {during_read / 1e6:.2f}M/s "
          f"({during_read / alone:.2f}x), during transforms {during_xf / 1e6:.2f}M/s ({during_xf / alone:.2f}x)")

    # 2. read k+1 || transform k, against serial; read on the default stream / its own stream
    def serial():
        for k in range(len(chunks)):
            wf.transform_frame(read(k))

    def overlapped():
        got = {}

        def reader():
            for k in range(len(chunks)):
                got[k] = read(k)
                ready[k].set()

        ready = [threading.Event() for _ in chunks]
        th = threading.Thread(target=reader)
        th.start()
        for k in range(len(chunks)):
            ready[k].wait()
            wf.transform_frame(got.pop(k))
        th.join()

    reads = best(lambda: [read(k) for k in range(len(chunks))])
    xfs = best(lambda: [wf.transform_frame(f) for f in frames])
    print(f"{len(chunks)} chunks: reads {reads:.3f} s, transforms {xfs:.3f} s")
    for label, env in (("default stream", "0"), ("read on its own stream", "1")):
        os.environ["TABPREP_GPU_READ_STREAM"] = env
        s, o = best(serial), best(overlapped)
        print(f"  {label:<24} serial {s:.3f} s, read || transform {o:.3f} s "
              f"(overlap {s / o:.2f}x; ideal {s / max(reads, xfs):.2f}x)")


if __name__ == "__main__":
    main()
