"""The CPU loaders against pyarrow's raw read in alternating rounds, optionally against another checkout.

On a shared machine the best pass of ``framework_loaders.py`` compares a raw read and a loader epoch
timed at different moments; here every round times the raw read and then one loader epoch right
after it, and the medians of the per-round ratios are printed (wall clock and rows per CPU-second
of the process, all threads).

    python benchmarks/framework_loaders.py --rows 2000000 --no-workflow --dir /dev/shm/fl   # writes the data
    PYTHONPATH=$PWD python benchmarks/loader_cpu_rounds.py /dev/shm/fl/criteo_2000000_transformed --rounds 8

Pipelines (``--pipelines``, default ``core``): ``core`` and ``torch`` (``TorchAsyncItr``) with no
workflow on DIR; ``core_wf`` and ``torch_wf`` with the Criteo workflow attached online (``map(wf)``,
fitted on the first raw file, not timed) on the raw files of ``--raw`` (default: DIR without its
``_transformed`` suffix); ``core_ordered``: ``core`` with ``shuffle=False`` (rows in file order, no
gather). Each is timed right after a raw read of the files it reads.

``--against TREE`` (a checkout or ``git archive`` export of another commit) compares two versions of
the code in the same run: every round runs one fresh interpreter per code tree (this checkout and
TREE, their order alternating from round to round), and the medians of each tree's ratios to the
raw read are printed beside the median of the per-round ratios after / before:

    git archive 88a5d00 | tar -x -C /tmp/base88
    python benchmarks/loader_cpu_rounds.py /dev/shm/fl/criteo_2000000_transformed --rounds 4 \\
        --pipelines core,core_wf,torch,torch_wf --against /tmp/base88
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, Iterable, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CATS = [f"C{i}" for i in range(1, 27)]
CONTS = [f"I{i}" for i in range(1, 14)]
PIPELINES = ("core", "core_wf", "torch", "torch_wf", "core_ordered")


def timed(batches: Iterable[Any]) -> Tuple[float, float]:
    """(rows per second, rows per CPU-second of the process) of one pass over ``batches``."""
    t, c = time.perf_counter(), time.process_time()
    rows = 0
    for b in batches:
        if isinstance(b, dict):
            rows += b["label"].shape[0]
        elif isinstance(b, tuple):   # TorchAsyncItr: (features, labels)
            rows += len(b[1])
        else:
            rows += b.num_rows
    return rows / (time.perf_counter() - t), rows / (time.process_time() - c)


def criteo_workflow(raw_file: str) -> Any:
    """The Criteo workflow of ``framework_loaders.py``, fitted on one raw file (its statistics do not
    change the loader's work). Normalize's ``out_dtype`` is absent from older checkouts, whose
    default was float32."""
    import tabprep as tp
    from tabprep import ops

    try:
        norm = ops.Normalize(out_dtype="float32")
    except TypeError:
        norm = ops.Normalize()
    cats = CATS >> ops.HashBucket(num_buckets=1_000_000)
    conts = CONTS >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> norm
    wf = tp.Workflow(cats + conts + ["label"])
    return wf.fit(tp.Dataset([raw_file]))


def one_round(args: argparse.Namespace, r: int) -> Dict[str, Any]:
    """One round: for each pipeline, a raw read of its files then one loader epoch (seed ``r``)."""
    import pyarrow.parquet as pq

    from tabprep.loader import DataLoader

    files = sorted(glob.glob(os.path.join(args.data, "*.parquet")))
    raw_files = sorted(glob.glob(os.path.join(args.raw, "*.parquet")))
    wf = criteo_workflow(raw_files[0]) if any(p.endswith("_wf") for p in args.pipelines) else None
    common = dict(seed=r, shuffle=True, buffer_size=args.buffer_size, parts_per_chunk=2, device="cpu",
                  threads=args.threads)

    def make(name: str, src: List[str]) -> Any:
        if name.startswith("core"):
            opts = dict(common, shuffle=name != "core_ordered")
            loader = DataLoader(src, args.batch, label_names=["label"], cat_names=CATS, cont_names=CONTS, **opts)
        else:
            from tabprep.loader.torch import TorchAsyncItr

            loader = TorchAsyncItr(src, batch_size=args.batch, cats=CATS, conts=CONTS, labels=["label"], **common)
        return loader.map(wf) if name.endswith("_wf") else loader

    out: Dict[str, Any] = {}
    for name in args.pipelines:
        src = raw_files if name.endswith("_wf") else files
        if args.warmup:   # an untimed epoch first: the process's allocator and caches as in a later epoch
            timed(make(name, src))
            timed(pq.read_table(f) for f in src)
        loader = make(name, src)
        raw = timed(pq.read_table(f) for f in src)
        out[name] = {"raw": raw, "loader": timed(loader)}
    return out


def child(args: argparse.Namespace) -> None:
    """One round in this interpreter, code from ``--code``; prints one JSON line."""
    sys.path.insert(0, args.code)
    import tabprep

    if not os.path.abspath(tabprep.__file__).startswith(os.path.abspath(args.code)):
        raise SystemExit(f"tabprep imported from {tabprep.__file__}, not from {args.code}")
    load = os.getloadavg()[0]
    result = one_round(args, args.child)
    print(json.dumps({"load": [load, os.getloadavg()[0]], "results": result}))


def med(xs: Iterable[float]) -> float:
    return statistics.median(list(xs))


def report(name: str, rounds: List[Dict[str, Any]]) -> None:
    """Medians over the rounds of one code tree's rows/s and ratios to the raw read."""
    for p in rounds[0]:
        raw = [x[p]["raw"] for x in rounds]
        ld = [x[p]["loader"] for x in rounds]
        wall = med(a[0] / b[0] for a, b in zip(ld, raw))
        cpu = med(a[1] / b[1] for a, b in zip(ld, raw))
        print(f"{name:7s} {p:9s} raw read {med(w for w, _ in raw):>11,.0f} rows/s | loader "
              f"{med(w for w, _ in ld):>11,.0f} rows/s | loader / raw read: wall {wall:.2f}, rows per CPU s {cpu:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", help="folder of transformed Criteo-like parquet files (framework_loaders.py --no-workflow)")
    ap.add_argument("--raw", default=None, help="folder of the raw files for the *_wf pipelines "
                                                "(default: DATA without its '_transformed' suffix)")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--batch", type=int, default=65536)
    ap.add_argument("--buffer-size", type=float, default=250_000)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--pipelines", default="core", help=f"comma-separated, of {', '.join(PIPELINES)}")
    ap.add_argument("--against", default=None, help="another code tree to compare, round by round")
    ap.add_argument("--warmup", action="store_true",
                    help="one untimed epoch of each pipeline (and raw read) before it is timed, as in a later epoch")
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--code", default=ROOT, help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.pipelines = [p for p in args.pipelines.split(",") if p]
    bad = [p for p in args.pipelines if p not in PIPELINES]
    if bad:
        ap.error(f"unknown pipelines {bad}; choose from {PIPELINES}")
    args.raw = args.raw or args.data.rstrip("/").removesuffix("_transformed")
    if args.child is not None:
        return child(args)
    if args.against is None:
        sys.path.insert(0, ROOT)
        report("this", [one_round(args, r) for r in range(args.rounds)])
        return
    trees = {"after": ROOT, "before": os.path.abspath(args.against)}
    runs: Dict[str, List[Dict[str, Any]]] = {k: [] for k in trees}
    loads: List[float] = []
    for r in range(args.rounds):
        for k in (("after", "before") if r % 2 else ("before", "after")):
            cmd = [sys.executable, os.path.abspath(__file__), args.data, "--raw", args.raw, "--batch", str(args.batch),
                   "--buffer-size", str(args.buffer_size), "--pipelines", ",".join(args.pipelines),
                   "--child", str(r), "--code", trees[k]] + (["--threads", str(args.threads)] if args.threads else []) \
                + (["--warmup"] if args.warmup else [])
            env = {key: v for key, v in os.environ.items() if key != "PYTHONPATH"}
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if proc.returncode:
                raise SystemExit(f"round {r} of {trees[k]} failed:\n{proc.stderr[-4000:]}")
            res = json.loads(proc.stdout.strip().splitlines()[-1])
            runs[k].append(res["results"])
            loads.extend(res["load"])
            print(f"round {r} {k}: " + ", ".join(f"{p} {v['loader'][0] / v['raw'][0]:.2f}x"
                                                 for p, v in res["results"].items()), file=sys.stderr, flush=True)
    print(f"{args.rounds} rounds; 1-minute load average {min(loads):.1f}-{max(loads):.1f}")
    for k in ("before", "after"):
        report(k, runs[k])
    for p in args.pipelines:
        ratios = [a[p]["loader"][0] / a[p]["raw"][0] / (b[p]["loader"][0] / b[p]["raw"][0])
                  for a, b in zip(runs["after"], runs["before"])]
        cpu = [a[p]["loader"][1] / a[p]["raw"][1] / (b[p]["loader"][1] / b[p]["raw"][1])
               for a, b in zip(runs["after"], runs["before"])]
        print(f"after / before {p:9s} (each to its raw read), median of the rounds: wall {med(ratios):.2f}, "
              f"rows per CPU s {med(cpu):.2f}")


if __name__ == "__main__":
    main()
