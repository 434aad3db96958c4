"""The fit's data movement between dask workers: fit wall and transfer seconds on a cluster (issue 16).

    python benchmarks/fit_transfers.py --rows 10000000 --workers 2              # CPU LocalCluster
    python benchmarks/fit_transfers.py --gpu --rows 100000000 --workers 2 --share-gpu   # 2 workers on GPU 0
    python benchmarks/fit_transfers.py --gpu --rows 100000000 --workers 1              # 1 LocalCUDACluster worker

The canonical Criteo workflow (as ``criteo.py``) is fitted ``--fits`` times on a cluster of
``--workers`` processes (the first fit is a warm-up); for each timed fit the script prints the
wall, the seconds tasks spent waiting for data from other workers (``transfer`` in dask's task
stream), how many partitions each worker fitted, and the fit's phases (to the first task, the
partials, the combine and finalize after them, the tail back to the client). With ``--gpu`` the workers are a
``LocalCUDACluster`` (one GPU each), or with ``--share-gpu`` plain dask workers that all use
GPU 0: a check of the reduction's data movement on a machine with one GPU, not a scaling figure
(the workers share the device).

``--compare-shards`` alternates, on the same cluster, fits with the partitioned finalize of the
vocabularies (``TABPREP_VOCAB_SHARDS=auto``: each worker's merged counts of a vocabulary cut
by a hash of the value into one part per worker, each part reduced on a worker, the final task
merging the reduced parts) and fits without (``TABPREP_VOCAB_SHARDS=0``), and prints the median of
each and, per fit, the seconds from the last partial to the last task (the last step).

``--compare-exchange`` alternates, on the same cluster, timed fits with the statistics exchange of
issue 34 (dask sizes the fit's statistics as what they hold, ``tabprep.workflow.sizes``; integer
arrays cross between processes narrowed, ``tabprep.stats.vocab.narrow_ints``) and fits without
(dask's default size for unknown objects, ``sys.getsizeof``: 56 bytes for any vocabulary's
counts; int64 arrays sent as they are), and prints the medians of each: an interleaved
before/after of that change in one run.

To compare two versions of tabprep, run the script once per checkout, alternating, with
``PYTHONPATH`` pointing at the other checkout (the script imports ``tabprep`` from there):
``PYTHONPATH=/path/to/old python benchmarks/fit_transfers.py ...``. It prints the location of the
tabprep it ran.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from criteo import CATS, CONTS, ensure_data  # noqa: E402 - the same cached data as criteo.py


def start_cluster(args: argparse.Namespace) -> Any:
    import dask
    from distributed import LocalCluster

    from tabprep.cli.cluster import LOCAL_CLUSTER_CONFIG, cpu_cluster_kwargs, cuda_cluster_kwargs

    with dask.config.set(LOCAL_CLUSTER_CONFIG):
        if not args.gpu:
            return LocalCluster(**cpu_cluster_kwargs(args.workers))
        if args.share_gpu:  # dask-cuda places one worker per device; these all see GPU 0
            os.environ["CUDA_VISIBLE_DEVICES"] = "0"
            return LocalCluster(n_workers=args.workers, threads_per_worker=args.threads, processes=True,
                                dashboard_address=None)
        from dask_cuda import LocalCUDACluster

        return LocalCUDACluster(**cuda_cluster_kwargs(args.workers, None, None, None, None))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=float, default=10e6, help="rows of synthetic Criteo data (default 10M)")
    ap.add_argument("--files", type=int, default=10, help="parquet files (default 10)")
    ap.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--gpu", action="store_true", help="cuDF workers (LocalCUDACluster)")
    ap.add_argument("--share-gpu", action="store_true", help="with --gpu: plain dask workers, all on GPU 0")
    ap.add_argument("--threads", type=int, default=2, help="threads per worker with --share-gpu (default 2)")
    ap.add_argument("--fits", type=int, default=3, help="fits, the first a warm-up (default 3)")
    ap.add_argument("--gen-procs", type=int, default=1, help="processes generating the data (once, cached)")
    ap.add_argument("--compare-exchange", action="store_true",
                    help="alternate timed fits with and without issue 34's statistics exchange (sizes, narrowed arrays)")
    ap.add_argument("--compare-shards", action="store_true",
                    help="alternate timed fits with the partitioned finalize of the vocabularies (one part per "
                         "worker, TABPREP_VOCAB_SHARDS=auto) and without (TABPREP_VOCAB_SHARDS=0, the default: "
                         "each vocabulary's counts merged whole in its final task)")
    ap.add_argument("--detail", action="store_true",
                    help="per task name: compute and transfer task-s, the bytes moved between workers "
                         "(by the name of the moved result), and the bytes of statistics the client receives")
    ap.add_argument("--data-root", default=os.path.join(tempfile.gettempdir(), "tabprep-bench"),
                    help="where the generated data is cached")
    args = ap.parse_args()

    import tabprep as tp
    from distributed import Client, get_task_stream
    from tabprep import ops

    data = ensure_data(int(args.rows), args.data_root, args.files, args.gen_procs)
    cluster = start_cluster(args)
    client = Client(cluster)
    client.wait_for_workers(args.workers)
    print(f"tabprep from {os.path.dirname(tp.__file__)}; {int(args.rows):,} rows in {data}; "
          f"{args.workers} workers ({'GPU 0 shared' if args.share_gpu else 'GPU' if args.gpu else 'CPU'})")
    walls: List[float] = []
    moved: List[float] = []
    by_mode: Dict[str, List[float]] = {}
    received: List[int] = []
    if args.detail:
        _count_received(received)
    for i in range(args.fits):
        ds = tp.Dataset(os.path.join(data, "*.parquet"), cpu=not args.gpu)
        wf = tp.Workflow((CATS >> ops.Categorify())
                         + (CONTS >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize(out_dtype="float32"))
                         + ["label"])
        mode = ""
        if args.compare_exchange:
            new = i % 2 == 1  # the warm-up and even fits without: each timed pair is (with, without)
            client.run(_exchange, new)
            _exchange(new)
            mode = " issue-34 exchange" if new else " before issue 34"
        if args.compare_shards:  # read by the client when it builds the fit's graph
            new = i % 2 == 1
            os.environ["TABPREP_VOCAB_SHARDS"] = "auto" if new else "0"
            mode += " partitioned finalize" if new else " whole finalize"
        if args.detail:
            client.run(_clear_transfer_log)
            received.clear()
        with get_task_stream(client) as ts:
            start, t0 = time.perf_counter(), time.time()  # the task stream's times are time.time()
            wf.fit(ds)
            wall = time.perf_counter() - start
        transfer = sum(s["stop"] - s["start"] for t in ts.data for s in t.get("startstops", ())
                       if s["action"] == "transfer")
        per_worker: Dict[str, int] = {}
        for t in ts.data:
            if "fit_partition" in str(t["key"]):
                per_worker[t["worker"]] = per_worker.get(t["worker"], 0) + 1
        label = ("warm-up" if i == 0 else f"fit {i}") + mode
        print(f"  {label}: {wall:.2f} s, transfer {transfer:.2f} task-s, partitions per worker "
              f"{sorted(per_worker.values())} of {ds.npartitions}; {_phases(ts.data, t0, wall)}", flush=True)
        if args.detail:
            _print_detail(ts.data, client.run(_transfer_log), received)
        if i:
            walls.append(wall)
            moved.append(transfer)
            by_mode.setdefault(mode.strip(), []).append((wall, _last_step(ts.data), transfer))
    if walls:
        print(f"median fit {statistics.median(walls):.2f} s, median transfer {statistics.median(moved):.2f} task-s")
    if args.compare_exchange or args.compare_shards:
        for mode, ws in sorted(by_mode.items()):
            print(f"  {mode}: median fit {statistics.median(w[0] for w in ws):.2f} s, last step "
                  f"{statistics.median(w[1] for w in ws):.2f} s, transfer {statistics.median(w[2] for w in ws):.2f} "
                  f"task-s over {len(ws)} fits")
    client.close()
    cluster.close()


def _exchange(new: bool, dask_worker: Any = None) -> None:
    """The statistics exchange of issue 34 (``new``) or the one before, in this process (a worker
    with ``client.run``): dask's sizes of the fit's statistics objects, tabprep's or dask's default
    for an unknown object (``sys.getsizeof``); integer arrays narrowed to travel, or not."""
    import dataclasses

    from dask.sizeof import sizeof

    from tabprep.stats import vocab
    from tabprep.workflow import sizes

    vocab.NARROW_MIN = 1 << 12 if new else 1 << 62
    sized = new
    for cls in (sizes.Counts, sizes.Moments, sizes.MinMax, sizes.Sketch, sizes.HLL, sizes.Frequent, sizes.ColumnPartial):
        if not sized:
            sizeof.register(cls)(sys.getsizeof)
        elif dataclasses.is_dataclass(cls):
            sizeof.register(cls)(sizes._sizeof_dataclass)
        else:
            sizeof.register(cls)(sizes._sizeof_counts)


def _clear_transfer_log(dask_worker: Any) -> None:
    dask_worker.transfer_incoming_log.clear()


def _transfer_log(dask_worker: Any) -> List[Dict[str, Any]]:
    return [{"keys": dict(e["keys"]), "duration": e["duration"], "who": e["who"]}
            for e in dask_worker.transfer_incoming_log]


def _count_received(received: List[int]) -> None:
    """Record the bytes of the final tasks' results the client receives (wraps ``adopt_fitted``)."""
    from tabprep.workflow import workflow as wmod

    adopt = wmod.adopt_fitted

    def counting(nodes: Any, fitted: Any, packed: bool) -> None:
        received.append(sum(_nbytes(state) for group in fitted for state in group.values()))
        adopt(nodes, fitted, packed)

    wmod.adopt_fitted = counting


def _nbytes(obj: Any) -> int:
    if hasattr(obj, "nbytes"):
        return int(obj.nbytes)
    if isinstance(obj, dict):
        return sum(_nbytes(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(_nbytes(v) for v in obj)
    return 0


def _print_detail(stream: List[Dict[str, Any]], logs: Dict[str, List[Dict[str, Any]]], received: List[int]) -> None:
    """Per task name: tasks, compute task-s, tasks that fetched inputs from another worker and
    their transfer task-s; per name of the results that moved: how many and MB; the MB the
    client received."""
    from dask.utils import key_split

    by_name: Dict[str, List[float]] = {}
    for t in stream:
        row = by_name.setdefault(key_split(t["key"]), [0, 0.0, 0, 0.0])
        row[0] += 1
        fetched = False
        for s in t.get("startstops", ()):
            if s["action"] == "compute":
                row[1] += s["stop"] - s["start"]
            elif s["action"] == "transfer":
                row[3] += s["stop"] - s["start"]
                fetched = True
        row[2] += fetched
    for name, (n, comp, fetched, tr) in sorted(by_name.items()):
        print(f"    task {name}: {n} tasks, compute {comp:.2f} task-s, {fetched} fetched inputs, transfer {tr:.2f} task-s")
    moves: Dict[str, List[float]] = {}
    for entries in logs.values():
        for e in entries:
            for key, nbytes in e["keys"].items():
                row = moves.setdefault(key_split(key), [0, 0.0])
                row[0] += 1
                row[1] += (nbytes or 0) / 1e6
    for name, (n, mb) in sorted(moves.items()):
        print(f"    moved between workers: {n} results of {name}, {mb:.1f} MB")
    if received:
        print(f"    client received {sum(received) / 1e6:.1f} MB of statistics")


def _last_step(stream: List[Dict[str, Any]]) -> float:
    """Seconds from the end of the last partial to the end of the last task (the combine and
    finalize left after the partials)."""
    compute = [(str(t["key"]), s) for t in stream for s in t.get("startstops", ()) if s["action"] == "compute"]
    partials = [s["stop"] for k, s in compute if "fit_partition" in k]
    if not compute or not partials:
        return 0.0
    return max(s["stop"] for _, s in compute) - max(partials)


def _phases(stream: List[Dict[str, Any]], t0: float, wall: float) -> str:
    """Where a fit's wall time went, from the task stream: seconds from ``fit()`` to the first task
    (planning, graph, scatter), to the last partial's end, from there to the last task (the
    combine and finalize left after the partials) and from the last task to the end of ``fit``
    (the statistics reaching the client). With fits of two data sizes, the part that does not grow
    with the data is what adding workers cannot shrink."""
    compute = [(str(t["key"]), s) for t in stream for s in t.get("startstops", ()) if s["action"] == "compute"]
    if not compute:
        return "no task stream"
    first = min(s["start"] for _, s in compute) - t0
    last = max(s["stop"] for _, s in compute) - t0
    partials = [s["stop"] for k, s in compute if "fit_partition" in k]
    last_partial = (max(partials) - t0) if partials else first
    return (f"to the first task {first:.2f} s, partials done at {last_partial:.2f} s, then {last - last_partial:.2f} s "
            f"of combine/finalize, tail {wall - last:.2f} s")


if __name__ == "__main__":
    main()
