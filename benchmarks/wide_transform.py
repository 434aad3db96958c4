"""Eager transform of a wide frame (200 rows; 1,000 / 5,000 / 20,000 float columns through
FillMissing >> Normalize): seconds per column should stay flat as the column count grows (issue
#30: the input contract check was quadratic in columns, 425 s at 5,000).

    python benchmarks/wide_transform.py [--columns 1000,5000,20000] [--rows 200]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

import tabprep as tp
from tabprep import ops


def measure(columns: int, rows: int) -> dict:
    rng = np.random.default_rng(0)
    names = [f"c{i}" for i in range(columns)]
    df = pd.DataFrame(rng.normal(size=(rows, columns)), columns=names)
    wf = tp.Workflow(names >> ops.FillMissing() >> ops.Normalize(out_dtype="float32"))
    start = time.perf_counter()
    wf.fit(tp.Dataset(df))
    fit_s = time.perf_counter() - start
    start = time.perf_counter()
    wf.transform(df)
    first_s = time.perf_counter() - start
    start = time.perf_counter()
    wf.transform(df)  # the input contract is memoized per dtypes: the steady state of a loop
    again_s = time.perf_counter() - start
    return {"columns": columns, "fit_s": fit_s, "transform_s": first_s, "again_s": again_s}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--columns", default="1000,5000,20000")
    ap.add_argument("--rows", type=int, default=200)
    args = ap.parse_args()
    print(f"{'columns':>8} {'fit s':>8} {'transform s':>12} {'ms/column':>10} {'again s':>8} {'ms/column':>10}")
    for n in (int(c) for c in args.columns.split(",")):
        r = measure(n, args.rows)
        print(f"{n:>8} {r['fit_s']:>8.2f} {r['transform_s']:>12.2f} {1000 * r['transform_s'] / n:>10.3f} "
              f"{r['again_s']:>8.2f} {1000 * r['again_s'] / n:>10.3f}", flush=True)


if __name__ == "__main__":
    main()
