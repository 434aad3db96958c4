"""What ordering a combo vocabulary by its tuples of values costs at the fit's finalize
(``Categorify(encode_type="combo")``, 2026-11-29): ``vocab.finalize_vocab`` of the counts of
``--distinct`` combined keys, ordered by their tuples (Arrow's string kernels,
``tabprep.stats.combo_order.arrow_order``), against the same finalize ordering the key strings
(what tabprep did before, and still does for single-column vocabularies), and against the Python
sort key per value (the fallback). Prints seconds and the ratios, best of ``--rounds``.

    python benchmarks/combo_order.py --distinct 1000000
    python benchmarks/combo_order.py --distinct 1000000 --kinds int,str
"""
from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__":
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
sys.path.insert(0, os.path.dirname(HERE))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--distinct", type=int, default=1_000_000, help="rows (about as many distinct combinations)")
    ap.add_argument("--kinds", default="int,int", help="comma list of part kinds: int, float, str")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    import numpy as np
    import pandas as pd

    from tabprep.ops._combo import _combo_series, part_kind
    from tabprep.stats import vocab as V
    from tabprep.stats.combo_order import combo_sort_key

    rng = np.random.default_rng(0)
    n = args.distinct
    cols = {}
    for j, kind in enumerate(args.kinds.split(",")):
        if kind == "int":
            cols[f"c{j}"] = rng.integers(-10 ** 6, 10 ** 6, n)
        elif kind == "float":
            cols[f"c{j}"] = np.round(rng.normal(0, 1000, n), 2)
        else:
            cols[f"c{j}"] = pd.Series(rng.integers(0, 10 ** 6, n)).astype(str).str.slice(0, 5).to_numpy(dtype=object)
    df = pd.DataFrame(cols)
    names = list(df.columns)
    counts = V.partial_counts([_combo_series(df, names)])
    kinds = tuple(part_kind(df[c]) for c in names)
    values = counts.counts.index.to_numpy(dtype=object)

    def best(fn) -> float:
        times = []
        for _ in range(args.rounds):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        return min(times)

    def finalize(combo):
        def run():
            counts.combo = combo
            V.finalize_vocab(counts)
        return run

    strings = best(finalize(None))
    tuples = best(finalize(kinds))
    python = best(lambda: sorted(range(len(values)), key=[combo_sort_key(v, kinds) for v in values].__getitem__))
    print(f"{len(values):,} distinct combinations of {args.kinds} parts, best of {args.rounds}:")
    print(f"  finalize, key-string order (before):   {strings:7.3f} s")
    print(f"  finalize, tuple order (Arrow kernels): {tuples:7.3f} s   {tuples / strings:5.2f}x the string order")
    print(f"  the Python sort key alone (fallback):  {python:7.3f} s   {python / strings:5.2f}x")


if __name__ == "__main__":
    main()
