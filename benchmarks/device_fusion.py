"""The online Criteo transform of one chunk, with and without fused element-wise chains.

    python benchmarks/device_fusion.py --gpu --rows 2000000 --chunks 65536,1000000   # cuDF chunks (H100)
    python benchmarks/device_fusion.py --rows 1000000 --chunks 4096,65536            # pandas chunks (CPU)

Fits the Criteo workflow of the GPU loader benchmarks (26 HashBucket; 13 ``FillMissing >> Clip
>> LogOp >> Normalize``) on the data, then times ``Workflow.transform_frame`` on chunks of each
size, fused (today's path: the chains run as column kernels, on CuPy for cuDF chunks) and
unfused (``backend.host_columns_supported`` answering False: every op's ``transform``, as before
device fusion), alternating the two, and the 13-column chain alone. Prints the median ms per
chunk of each and checks that both give the same frame.
"""
from __future__ import annotations

import argparse
import glob
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from criteo import ensure_data  # noqa: E402
from framework_loaders import CONTS, criteo_workflow  # noqa: E402

import tabprep as tp  # noqa: E402
import tabprep.backend as tb  # noqa: E402
from tabprep import ops  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--chunks", default="65536,1000000", help="chunk sizes (rows), comma-separated")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--data-root", default="/tmp/tabprep-bench")
    args = ap.parse_args()
    files = sorted(glob.glob(os.path.join(ensure_data(args.rows, args.data_root, args.files), "*.parquet")))
    if args.gpu:
        import cudf
        import cupy

        from tabprep.backend import gpu_warmup

        frame = cudf.read_parquet(files)
        sync = cupy.cuda.Device().synchronize
        gpu_warmup.start()  # the GPU backend fuses chains once the warm-up has built their kernels
        t = time.perf_counter()
        gpu_warmup.READY.wait(300)
        print(f"kernel warm-up done after {time.perf_counter() - t:.1f}s more "
              f"(fusion on: {tb.host_columns_supported(frame)})", flush=True)
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        # as tabprep reads parquet (ints with nulls as Int64, not float64)
        frame = tb.arrow_to_frame(pa.concat_tables([pq.read_table(f) for f in files]))
        sync = lambda: None  # noqa: E731
    full = criteo_workflow(1_000_000).fit(tp.Dataset(files, cpu=not args.gpu))
    chain = CONTS >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize(out_dtype="float32")
    conts = tp.Workflow(chain).fit(tp.Dataset(files, cpu=not args.gpu))
    print(f"device: {'GPU (cuDF)' if args.gpu else 'CPU (pandas)'}; {len(frame):,} rows", flush=True)

    fused_support = tb.host_columns_supported

    def run(wf, chunk, fused: bool):
        tb.host_columns_supported = fused_support if fused else (lambda f: False)
        try:
            sync()
            t = time.perf_counter()
            out = wf.transform_frame(chunk)
            sync()
            return time.perf_counter() - t, out
        finally:
            tb.host_columns_supported = fused_support

    for size in [int(s) for s in args.chunks.split(",")]:
        chunk = frame.iloc[:size].reset_index(drop=True)
        for label, wf in (("criteo workflow", full), ("13-column chain", conts)):
            for fused in (True, False):  # warm-up: kernels compiled, schema checked
                run(wf, chunk, fused)
            times = {True: [], False: []}
            for _ in range(args.reps):
                for fused in (False, True):
                    times[fused].append(run(wf, chunk, fused)[0])
            a, b = run(wf, chunk, True)[1], run(wf, chunk, False)[1]
            same = _same(a, b)
            before, after = statistics.median(times[False]) * 1e3, statistics.median(times[True]) * 1e3
            print(f"{label:16s} chunk {size:>9,} rows: unfused {before:8.2f} ms  fused {after:8.2f} ms  "
                  f"({before / after:5.2f}x)  outputs equal: {same}", flush=True)


def _same(a, b) -> bool:
    a = a.to_pandas() if hasattr(a, "to_pandas") else a
    b = b.to_pandas() if hasattr(b, "to_pandas") else b
    try:
        import pandas as pd

        pd.testing.assert_frame_equal(a, b, check_exact=True)
        return True
    except AssertionError as exc:
        print(f"  outputs differ: {exc}", flush=True)
        return False


if __name__ == "__main__":
    main()
