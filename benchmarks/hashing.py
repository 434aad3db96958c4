"""Throughput of tabprep.hashing.murmur3_32 vs a plain per-row ``mmh3`` loop.

    python benchmarks/hashing.py                       # 10M int64, 1M strings
    python benchmarks/hashing.py --ints 2000000 --strings 200000 --repeat 1

Prints rows/s for each input and the speed-up over the per-row loop. The loop baseline
runs on at most ``--baseline-rows`` rows (rows/s does not depend on the count), and
every run checks a sample of tabprep's hashes against mmh3.
"""
from __future__ import annotations

import argparse
import struct
import sys
import time
from typing import Callable, List, Tuple

import numpy as np

try:
    import mmh3
except ImportError:  # pragma: no cover
    sys.exit("benchmarks/hashing.py needs mmh3 (pip install mmh3)")

from tabprep.hashing import murmur3_32


def best_of(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def loop_int64(values: np.ndarray) -> List[int]:
    pack = struct.Struct("<q").pack
    return [mmh3.hash(pack(v), 0, signed=False) for v in values.tolist()]


def loop_str(values: np.ndarray) -> List[int]:
    return [mmh3.hash(v, 0, signed=False) for v in values.tolist()]


def datasets(n_ints: int, n_strings: int, seed: int) -> List[Tuple[str, np.ndarray, Callable]]:
    rng = np.random.default_rng(seed)
    ints = rng.integers(-(2**63), 2**63 - 1, size=n_ints, dtype=np.int64)
    ids = rng.integers(0, 2**40, size=n_strings)
    unique = np.array([f"user_{x:010x}" for x in ids], dtype=object)
    vocab = np.array([f"item-{i}-{'x' * (i % 23)}" for i in range(50_000)], dtype=object)
    repeated = vocab[rng.zipf(1.2, size=n_strings) % len(vocab)]
    return [
        (f"int64 x {n_ints:,}", ints, loop_int64),
        (f"str (all distinct, 15 B) x {n_strings:,}", unique, loop_str),
        (f"str (50k distinct, zipf, 7-29 B) x {n_strings:,}", repeated, loop_str),
    ]


def main(argv: List[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ints", type=int, default=10_000_000, help="int64 rows (default 10M)")
    ap.add_argument("--strings", type=int, default=1_000_000, help="string rows (default 1M)")
    ap.add_argument("--baseline-rows", type=int, default=1_000_000,
                    help="rows timed with the per-row mmh3 loop (default 1M)")
    ap.add_argument("--repeat", type=int, default=3, help="best of N runs (default 3)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    print(f"{'input':45s} {'tabprep rows/s':>15s} {'mmh3 loop rows/s':>17s} {'speed-up':>9s}")
    for name, values, loop in datasets(args.ints, args.strings, args.seed):
        seconds = best_of(lambda: murmur3_32(values), args.repeat)
        sample = values[: args.baseline_rows]
        base_seconds = best_of(lambda: loop(sample), 1)
        got = murmur3_32(sample[:10_000])
        assert got.tolist() == loop(sample[:10_000]), f"{name}: hashes differ from mmh3"
        rate = len(values) / seconds
        base_rate = len(sample) / base_seconds
        print(f"{name:45s} {rate:15,.0f} {base_rate:17,.0f} {rate / base_rate:8.1f}x"
              f"   ({seconds * 1e3:.0f} ms)")


if __name__ == "__main__":
    main()
