"""How a GPU loader's chunk read compares with one ``cudf.read_parquet`` of every file (issue 33).

    python benchmarks/gpu_read.py --rows 20000000 --dir /dev/shm/fl [--profile]

On the framework benchmark's data (``framework_loaders.py``: Criteo-like rows, ``--files`` files,
row groups of ``--row-group`` rows), the loader's chunks of the first shuffled epoch
(``buffer_size`` rows per piece, 2 pieces per chunk) read in each of these ways, one pass each,
alternated over ``--rounds`` rounds (medians):

* ``all``: ``cudf.read_parquet`` of every file at once (the benchmark's raw read);
* ``loader``: the loader's own read of each chunk (``_ParquetSource.read_pieces`` / stack);
* ``cudf``: ``cudf.read_parquet(paths, row_groups=...)`` per chunk (what the loader called before);
* ``plc``: pylibcudf's ``read_parquet`` per chunk, footers parsed once and passed in, no pandas
  metadata (the loader's column list is explicit): ``tabprep.backend.gpu_parquet.read_local``, the
  loader's direct read;
* ``plc_files``: the same over whole files, no row-group selection, one file per call;
* ``plc_threads``: ``plc`` from 2 threads, chunks side by side.

``--profile`` adds a cProfile of the ``loader`` pass (own time, top 20).
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from framework_loaders import CATS, CONTS, add_data_args, raw_data  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    add_data_args(ap, 20_000_000, "/dev/shm/fl")
    ap.add_argument("--buffer-size", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    import cudf
    import cupy

    files = raw_data(args.dir, args.rows, args.files, args.row_group)
    columns = ["label"] + CATS + CONTS

    from tabprep.loader import DataLoader
    ld = DataLoader(files, 65536, label_names=["label"], cat_names=CATS, cont_names=CONTS, shuffle=True,
                    buffer_size=args.buffer_size, parts_per_chunk=2, device=0, seed=0)
    ld._ensure_ready()
    plan = ld.plan(0)
    src = ld._source
    chunks = []
    for pieces in plan.chunks:
        paths, groups = [], []
        for p in pieces:
            units = [src.units[i] for i in p.units]
            paths.append(src._where[units[0].group][0])
            groups.append([u.key for u in units])
        chunks.append((pieces, paths, groups))
    print(f"{len(files)} files, {args.rows:,} rows, {len(chunks)} chunks of about "
          f"{args.rows // max(len(chunks), 1):,} rows; cuDF {cudf.__version__}", flush=True)

    from tabprep.backend import gpu_parquet

    t = time.perf_counter()
    for f in files:   # (parsed once, then cached: the loader's direct read)
        gpu_parquet.footer(f)
    print(f"footers parsed in {1e3 * (time.perf_counter() - t):.1f} ms", flush=True)

    def plc_read(paths, groups):
        return gpu_parquet.read_local(paths, groups, columns)

    def sync():
        cupy.cuda.Device().synchronize()

    def p_all():
        cudf.read_parquet(files, columns=columns)

    def p_loader():
        for pieces, _, _ in chunks:
            raw = src.read_pieces(pieces, ld._read_columns)
            if raw is None:
                raw = src.stack([ld._read_piece(p) for p in pieces])

    def p_cudf():
        for _, paths, groups in chunks:
            cudf.read_parquet(paths, columns=columns, row_groups=groups)

    def p_plc():
        for _, paths, groups in chunks:
            plc_read(paths, groups)

    def p_plc_files():
        for f in files:
            plc_read([f], None)

    def p_plc_threads():
        with ThreadPoolExecutor(2) as ex:
            list(ex.map(lambda c: plc_read(c[1], c[2]), chunks))

    passes = dict(all=p_all, loader=p_loader, cudf=p_cudf, plc=p_plc, plc_files=p_plc_files,
                  plc_threads=p_plc_threads)
    # equal frames: the direct read gives the loader's columns with the same values
    a = plc_read(chunks[0][1], chunks[0][2])
    b = cudf.read_parquet(chunks[0][1], columns=columns, row_groups=chunks[0][2])
    assert a.reset_index(drop=True).equals(b.reset_index(drop=True)), "plc read differs from cudf.read_parquet"
    for fn in passes.values():  # warm-up
        fn()
    sync()
    times = {k: [] for k in passes}
    for _ in range(args.rounds):
        for k, fn in passes.items():
            sync()
            t = time.perf_counter()
            fn()
            sync()
            times[k].append(time.perf_counter() - t)
    base = statistics.median(times["all"])
    print(f"{'read':12s} {'median s':>9s} {'M rows/s':>9s} {'x all':>6s}  (runs)")
    for k, v in times.items():
        m = statistics.median(v)
        print(f"{k:12s} {m:9.3f} {args.rows / m / 1e6:9.1f} {base / m:6.2f}  ({', '.join(f'{x:.3f}' for x in v)})",
              flush=True)
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        p_loader()
        sync()
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(20)


if __name__ == "__main__":
    main()
