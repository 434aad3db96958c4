"""``tp.profile`` on cuDF next to one cuDF read pass of the same files (issue #35's GPU goal:
50M Criteo rows profiled in <= 1.5x the read).

    python benchmarks/scale.py --gpu --rows 50000000 --generate-only --gen-procs 32 --data-root /dev/shm/tb
    python benchmarks/profile_gpu.py --data /dev/shm/tb/criteo_50000000_8 --repeat 2 [--kll-every 1] [--host-sample] [--one-by-one]

Prints the median seconds of each and the ratio. Both run in the same process after one
warm-up of each (cuDF's first read and the profile's first pass compile and allocate).
"""
from __future__ import annotations

import argparse
import glob
import os
import statistics
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="folder of parquet files")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--kll-every", type=int, default=None,
                    help="tp.profile's kll_every (default: tabprep's rule from the sample size; 1: no thinning)")
    ap.add_argument("--host-sample", action="store_true",
                    help="also time tp.profile with the sample copied to the host and sorted there (the path "
                         "before the device sort: backend.reductions.profile_sample answering None)")
    ap.add_argument("--one-by-one", action="store_true",
                    help="also time tp.profile with each column's device sample sorted by itself (a sort, a "
                         "group-by and three copies per column: the path before backend.sorted_samples)")
    ap.add_argument("--part-sizes", default="",
                    help="comma-separated Dataset part_size values (e.g. 1GB,500MB): tp.profile also timed with "
                         "partitions of each size (smaller partitions let one thread's read overlap the other's "
                         "profile work)")
    ap.add_argument("--cprofile", type=int, default=0,
                    help="then one more tp.profile under cProfile: print its N most expensive functions "
                         "(own time, then cumulative): where the profile's time goes")
    args = ap.parse_args()

    import cudf

    import tabprep as tp

    files = sorted(glob.glob(os.path.join(args.data, "*.parquet")))
    rows = sum(len(cudf.read_parquet(f, columns=["label"])) for f in files)

    def read() -> None:
        for f in files:
            df = cudf.read_parquet(f)
            del df

    def prof(part_size=None) -> None:
        kw = {} if part_size is None else {"part_size": part_size}
        tp.profile(tp.Dataset(files, cpu=False, **kw), kll_every=args.kll_every)

    def prof_host_sample() -> None:
        import tabprep.stats.profile as prof_mod

        device = prof_mod.profile_sample
        prof_mod.profile_sample = lambda *a: None
        try:
            prof()
        finally:
            prof_mod.profile_sample = device

    def prof_one_by_one() -> None:
        import tabprep.stats.profile as prof_mod

        together = prof_mod.sorted_samples
        prof_mod.sorted_samples = lambda frame, samples, everies: {
            c: prof_mod.sorted_sample(v, everies[c]) for c, v in samples.items()}
        try:
            prof()
        finally:
            prof_mod.sorted_samples = together

    times = {}
    runs_of = [("cuDF read", read), ("tp.profile", prof)]
    if args.host_sample:
        runs_of.append(("host sample", prof_host_sample))
    if args.one_by_one:
        runs_of.append(("one by one", prof_one_by_one))
    for size in [x for x in args.part_sizes.split(",") if x]:
        runs_of.append((f"part {size}", lambda size=size: prof(size)))
    for name, fn in runs_of:
        fn()   # warm-up
        runs = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            fn()
            runs.append(time.perf_counter() - t)
        times[name] = statistics.median(runs)
        print(f"  {name:<14} {times[name]:8.2f} s  (runs {', '.join(f'{r:.2f}' for r in runs)})", flush=True)
    print(f"{rows:,} rows, {len(files)} files: profile / read = {times['tp.profile'] / times['cuDF read']:.2f}x "
          f"(goal <= 1.5x)")
    if args.host_sample:
        print(f"  with the sample sorted on the host: {times['host sample'] / times['cuDF read']:.2f}x")
    if args.one_by_one:
        print(f"  with each column's sample sorted by itself: {times['one by one'] / times['cuDF read']:.2f}x")
    for size in [x for x in args.part_sizes.split(",") if x]:
        n = tp.Dataset(files, cpu=False, part_size=size).npartitions
        print(f"  partitions of {size} ({n} partitions): {times[f'part {size}'] / times['cuDF read']:.2f}x")
    if args.cprofile:
        import cProfile
        import pstats

        import dask

        pr = cProfile.Profile()
        with dask.config.set(scheduler="synchronous"):  # the tasks in this thread, where cProfile sees them
            t = time.perf_counter()
            pr.enable()
            prof()
            pr.disable()
        print(f"tp.profile under cProfile, one thread: {time.perf_counter() - t:.2f} s", flush=True)
        for key in ("tottime", "cumulative"):
            pstats.Stats(pr).sort_stats(key).print_stats(args.cprofile)


if __name__ == "__main__":
    main()
