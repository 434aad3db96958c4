"""The host work of the GPU profile's partial, measured on the CPU (issue #35): best-of-N seconds of
``tabprep.stats.profile.partial_with_exact`` (the exact part given, as the device computes it;
the sketches from every ``--every``-th row, copied to the host) on one pandas frame of Criteo-like
columns: ``label``, 13 continuous columns and 26 hashed id columns.

    python3 benchmarks/profile_sample_host.py --rows 5000000 --every 10 --repeat 5
    python3 benchmarks/profile_sample_host.py --rows 5000000 --every 10 --repeat 5 --arrow

``--kll-every F[,F2...]``: the KLL sketches' thinning factor(s), alternating run by run in this
process when several (default 16: what ``tp.profile``'s 1M-row sample gets, ``kll_every_for``;
1: no thinning, the code path of before the option); ``--kll-share`` adds, per factor, the CPU
seconds of the KLL sketching alone (``kll_of`` of the thinned picks timed inside the calls).

    python3 benchmarks/profile_sample_host.py --rows 5000000 --every 10 --repeat 7 --kll-every 1,16 --kll-share

``--every 10`` samples 500k rows, what one 25M-row partition of the GPU benchmark's 50M rows samples
(``PROFILE_SAMPLE_ROWS``). Default frame: numpy columns as pandas reads the parquet files (the
continuous columns float64 with NaN for their nulls, the id columns int64, nulls as 0); ``--arrow``:
``pd.ArrowDtype`` columns, int64 with null masks, as cuDF hands them to Arrow. Compare two
versions of tabprep by alternating runs with ``PYTHONPATH`` naming each checkout; ``--split`` then
times the sample's partials alone with and without their exact part (``exact=True`` / ``False``,
alternating in this process); ``--cprofile N`` prints the N most expensive functions of one more call.
"""
from __future__ import annotations

import argparse
import glob
import os
import sys
import time

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from criteo import ensure_data  # noqa: E402


def frame(rows: int, arrow: bool, cache: str) -> pd.DataFrame:
    path = ensure_data(rows, cache, 1)   # the benchmarks' cached Criteo-like data (seed 0, one file)
    table = pq.read_table(glob.glob(os.path.join(path, "*.parquet"))[0])
    if arrow:
        return table.to_pandas(types_mapper=pd.ArrowDtype)
    df = table.to_pandas()
    for c in df.columns:
        if c.startswith("C"):
            df[c] = df[c].fillna(0).astype(np.int64)
        elif c.startswith("I"):
            df[c] = df[c].astype(np.float64)
    return df


def exact_of(df: pd.DataFrame) -> dict:
    """The exact part of each column's partial with numpy (what the device would compute)."""
    out = {}
    for c in df.columns:
        v = df[c].to_numpy(dtype=np.float64, na_value=np.nan)
        fin = v[np.isfinite(v)]
        nulls = int(np.isnan(v).sum())
        mom = (fin.size, float(fin.mean()), float(((fin - fin.mean()) ** 2).sum())) if fin.size else (0, 0.0, 0.0)
        out[c] = (len(v), nulls, 0, int(np.isinf(v).sum()), mom,
                  (float(fin.min()), float(fin.max())) if fin.size else (None, None))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--arrow", action="store_true", help="pd.ArrowDtype columns (int64 with null masks)")
    ap.add_argument("--cache", default="/tmp/tabprep_profile_sample_host")
    ap.add_argument("--cprofile", type=int, default=0)
    ap.add_argument("--kll-every", default="16", help="thinning factor(s) of the KLL sketches, comma-separated: alternated")
    ap.add_argument("--kll-share", action="store_true", help="also the CPU seconds inside kll_of, per factor")
    ap.add_argument("--split", action="store_true",
                    help="then the sample's partials alone, with and without their exact part, alternating")
    args = ap.parse_args()

    import tabprep
    from tabprep.stats.profile import partial_with_exact

    df = frame(args.rows, args.arrow, args.cache)
    exact = exact_of(df)
    cols = list(df.columns)
    cats = [c for c in cols if c.startswith("C")]
    factors = [int(f) for f in args.kll_every.split(",")]
    kll_cpu = {f: [] for f in factors}
    if args.kll_share:  # (the KLL sketching's own CPU seconds, timed inside the calls)
        import tabprep.stats.profile as prof_mod

        inner = prof_mod.kll_of  # (the KLL sketch of the thinned picks of each sorted sample)
        spent = [0.0]

        def timed(values):
            c = time.process_time()
            try:
                return inner(values)
            finally:
                spent[0] += time.process_time() - c
        prof_mod.kll_of = timed

    def call(f):
        return partial_with_exact(df, cols, exact, args.every, None, (), kll_every=f)

    for f in factors:
        call(f)  # warm-up
    runs = {f: [] for f in factors}
    cpu = {f: [] for f in factors}
    for _ in range(args.repeat):
        for f in factors:  # (alternating: the machine's load hits every factor alike)
            if args.kll_share:
                spent[0] = 0.0
            t, c = time.perf_counter(), time.process_time()
            call(f)
            runs[f].append(time.perf_counter() - t)
            cpu[f].append(time.process_time() - c)  # (this process's CPU: steadier on a shared machine)
            if args.kll_share:
                kll_cpu[f].append(spent[0])
    kind = "arrow" if args.arrow else "numpy"
    for f in factors:
        share = (f"; KLL sketching median {np.median(kll_cpu[f]):.3f} s CPU" if args.kll_share else "")
        print(f"partial_with_exact {args.rows:,} rows x {len(cols)} columns ({kind}, {len(cats)} id), every "
              f"{args.every}, kll_every {f}: best {min(runs[f]):.3f} s wall, {min(cpu[f]):.3f} s CPU, median "
              f"{np.median(cpu[f]):.3f} s CPU{share} (wall runs {', '.join(f'{r:.3f}' for r in runs[f])}) "
              f"[{os.path.dirname(os.path.dirname(tabprep.__file__))}]", flush=True)
    if args.split:
        # the sample's partials alone (the sample taken and turned into Arrow once, before the
        # clock), computed the way partial_with_exact did before (exact=True: NaN/inf counts,
        # moments and extrema of the sample, then replaced) and does now (exact=False), alternating
        from tabprep.stats.profile import as_table, partial_table

        table = as_table(df.iloc[::args.every], cols)
        best = {True: [], False: []}
        for _ in range(args.repeat):
            for ex in (True, False):
                t = time.process_time()
                partial_table(table, 1, None, (), exact=ex)
                best[ex].append(time.process_time() - t)
        print(f"  the sample's partials ({table.num_rows:,} rows), best CPU s: with the sample's exact part "
              f"{min(best[True]):.3f}, sketches only {min(best[False]):.3f}", flush=True)
    if args.cprofile:
        import cProfile
        import pstats

        pr = cProfile.Profile()
        pr.enable()
        call(factors[-1])
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(args.cprofile)


if __name__ == "__main__":
    main()
