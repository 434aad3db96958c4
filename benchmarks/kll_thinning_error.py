"""The thinned KLL sketch of data profiles (issue #35): its rank error against numpy's exact ranks
and its CPU time, per thinning factor ``f`` (``kll_every``).

    python3 benchmarks/kll_thinning_error.py --values 1000000 --chunks 8

``--values`` lognormal values rounded to 2 decimals (ties), split in ``--chunks`` chunks, each
sorted and sketched thinned (``kll_of_sorted``), merged; the largest normalized rank error on 400
points against numpy's ranks (median and max of ``--repeat``), the thinning's bound
(``thinning_rank_error``) and the KLL sketch's own (99%), and the CPU seconds of the sorts and
sketches (median).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from tabprep.stats.sketches import kll_load, kll_merge, kll_of_sorted, thinning_rank_error, thinning_slack


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--values", type=int, default=1_000_000)
    ap.add_argument("--chunks", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--factors", default="1,2,4,8,16,32,64")
    args = ap.parse_args()
    r = np.random.default_rng(0)
    x = np.round(r.lognormal(0, 1, args.values), 2)
    chunks = np.array_split(x, args.chunks)
    ref = np.sort(x)
    grid = np.quantile(ref, np.linspace(0.001, 0.999, 400))
    exact = np.searchsorted(ref, grid, side="right") / ref.size
    for f in (int(v) for v in args.factors.split(",")):
        errs, cpu = [], []
        for _ in range(args.repeat):
            c = time.process_time()
            sk = kll_load(kll_merge([kll_of_sorted(np.sort(ch), f) for ch in chunks]))
            cpu.append(time.process_time() - c)
            errs.append(max(abs(sk.get_rank(float(g), True) - e) for g, e in zip(grid, exact)))
        bound = thinning_rank_error(args.chunks * thinning_slack(f), ref.size)
        print(f"f={f:3d}: rank error median {np.median(errs):.4f}, max {max(errs):.4f}; thinning bound {bound:.6f}, "
              f"KLL's own {sk.normalized_rank_error(False):.4f}; sort + sketch CPU median {np.median(cpu) * 1e3:.0f} ms",
              flush=True)


if __name__ == "__main__":
    main()
