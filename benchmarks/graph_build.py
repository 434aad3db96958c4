"""Building a workflow graph: microseconds per node where one node has N children (one branch
per column, ``base >> Rename(postfix=...)`` N times) against a chain of N nodes, in one process.

    python benchmarks/graph_build.py [--sizes 1000,4000,16000] [--repeat 3]

Each node records itself as its parents' child (merlin's ``node.children``, ops/node_merlin.py);
the per-node cost must stay flat as N grows: the ratio fan-out / chain should not grow with N
(it did, quadratically, while the children were a list scanned for duplicates: 8,000 children
took 7.7 s against 0.15 s before children were recorded).
"""
from __future__ import annotations

import argparse
import time


def fan_out(n: int) -> float:
    from tabprep import ops

    start = time.perf_counter()
    base = ["a"] >> ops.FillMissing()
    kids = [base >> ops.Rename(postfix=f"_{i}") for i in range(n)]
    took = time.perf_counter() - start
    assert len(getattr(base, "children", kids)) == len(kids)  # (a checkout before node.children: no check)
    return took


def chain(n: int) -> float:
    from tabprep import ops

    start = time.perf_counter()
    node = ["a"] >> ops.FillMissing()
    for i in range(n):
        node = node >> ops.Rename(postfix="_x" if i % 2 else "_y")
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,4000,16000")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    import tabprep  # noqa: F401 - imported before timing

    print(f"{'N':>7} {'fan-out us/node':>16} {'chain us/node':>14} {'ratio':>6}")
    for n in (int(s) for s in args.sizes.split(",")):
        fan = min(fan_out(n) for _ in range(args.repeat)) / n * 1e6
        ch = min(chain(n) for _ in range(args.repeat)) / n * 1e6
        print(f"{n:>7} {fan:>16.1f} {ch:>14.1f} {fan / ch:>6.2f}")


if __name__ == "__main__":
    main()
