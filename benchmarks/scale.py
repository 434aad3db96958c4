"""Scaling benchmark: the canonical Criteo job in-process and on 1, 2, ... N dask workers.

    python benchmarks/scale.py --rows 2000000 --workers 1,2                  # CPU: LocalCluster of processes
    python benchmarks/scale.py --gpu --rows 200000000 --workers 1,2 --gen-procs 16   # GPU: LocalCUDACluster
    python benchmarks/scale.py --gpu --rows 400000000 --workers 1,2,4,8 --gen-procs 16
    python benchmarks/scale.py --gpu --rows 200000000 --workers 1,2 --gen-procs 16 --generate-only  # data first

The job (as ``benchmarks/criteo.py``): C1..C26 >> Categorify; I1..I13 >> FillMissing >> Clip(0) >>
LogOp >> Normalize; + label; fit, transform, write parquet. The data comes from
``tabprep.io.synthetic`` (generated once, cached under ``--data-root``).

Each configuration runs in its own process: the cluster is started first (its start time is
reported apart), the job runs once to warm up (page cache, kernel caches, imports on the workers)
and is then timed. Columns of the table:

* ``wall``: the timed job (fit + transform + write), ``fit`` and ``xform+write`` its two steps;
* ``x 1 worker`` / ``x in-proc``: speed-up against the 1-worker run and the in-process run
  (above 1: faster);
* ``x floor``: wall / the storage floor at the same process count (``floor N``: N processes
  reading and writing their share of the same input files at once, no ops, the same reader and
  writer as the job: pyarrow, or cuDF with ``--gpu``); near 1 means the disk caps the job;
* the phase breakdown, in task-seconds summed over all workers (so it can exceed the wall).
  A parquet partition is read, computed and written inside one task (so it never moves between
  workers), which records its read and write seconds: ``read`` (reading partitions, in the fit
  and in the transform), ``fit partials`` (per-partition statistics, read excluded), ``combine``
  (merging partials and finalizing), ``transform`` (op time measured by ``Workflow.op_timer``
  inside the tasks), ``write`` (writing the transformed partitions), ``transfer`` (moving data
  between workers, from the distributed task stream; 0 in-process). ``--timeline DIR`` keeps
  each worker run's task stream as JSON, and the progress line names the tasks that waited
  for transfers. The progress line's ``fit tail`` is the time from the fit's last task to the
  end of ``fit`` (the client receiving and applying the statistics): it does not shrink with
  more workers. ``scatter`` is the time the client spent sending the workflow (statistics
  included) to every worker, in the fit's passes and at the transform's start (0 in-process):
  it grows with the number of workers.

``--rounds K`` runs the whole list of configurations K times, one after the other (in-process, 1
worker, 2 workers, in-process, ...), each in a fresh process: on a shared machine whose speed drifts,
interleaved runs compare configurations fairly. The table shows each configuration's median round;
``runs`` lists every timed run.

Every run's output is read back as frames and hashed (row hashes of all part files in order):
the runs must all give the same hash, else the script fails.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from criteo import CATS, CONTS, ensure_data  # noqa: E402 - the same cached data as criteo.py

PHASES = ["read", "fit partials", "combine", "transform", "write", "transfer"]


# -- the job, inside one configuration's process --------------------------------------------
class TaskTimes:
    """Task seconds by dask key name: dask's local-scheduler callbacks, or the distributed task stream."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.seconds: Dict[str, float] = {}
        self.transfer = 0.0
        self.transfer_by: Dict[str, float] = {}  # transfer seconds by the key name of the task that waited
        self.timeline: List[Dict[str, Any]] = []
        self.last_stop = self.ended = 0.0  # time.time() of the last task's end and of the block's end

    @property
    def tail(self) -> float:
        """Seconds from the last task's end to the end of the block (for the fit: the client
        receiving and applying the statistics, nothing of which runs in parallel)."""
        return max(0.0, self.ended - self.last_stop) if self.last_stop else 0.0

    def __enter__(self) -> "TaskTimes":
        if self.client is not None:
            from distributed import get_task_stream

            self._ts = get_task_stream(self.client)
            self._ts.__enter__()
        else:
            from dask.callbacks import Callback

            starts: Dict[Any, float] = {}
            seconds = self.seconds

            def pretask(key, dsk, state):
                starts[key] = time.perf_counter()

            def posttask(key, result, dsk, state, worker_id):
                from dask.utils import key_split

                name = key_split(key)
                seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - starts.pop(key, time.perf_counter())
                self.last_stop = max(self.last_stop, time.time())

            self._cb = Callback(pretask=pretask, posttask=posttask)
            self._cb.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.ended = time.time()
        if self.client is None:
            self._cb.__exit__(*exc)
            return
        self._ts.__exit__(*exc)
        from dask.utils import key_split

        for t in self._ts.data:
            for ss in t.get("startstops", ()):
                dt = ss["stop"] - ss["start"]
                if ss["action"] == "compute":
                    name = key_split(t["key"])
                    self.seconds[name] = self.seconds.get(name, 0.0) + dt
                    self.last_stop = max(self.last_stop, ss["stop"])
                elif ss["action"] == "transfer":
                    self.transfer += dt
                    name = key_split(t["key"])
                    self.transfer_by[name] = self.transfer_by.get(name, 0.0) + dt
                self.timeline.append({"key": str(t["key"]), "worker": t.get("worker"), "action": ss["action"],
                                      "start": ss["start"], "stop": ss["stop"], "nbytes": t.get("nbytes")})


def phases(fit_tasks: TaskTimes, write_tasks: TaskTimes, fit_ops: List[tuple], write_ops: List[tuple]) -> Dict[str, float]:
    """Attribute task seconds to the phases (see the module docstring). ``fit_ops`` / ``write_ops``:
    the ``op_timer`` rows of the fit and of the transform + write step. A parquet partition is read
    (and, in the transform, written) inside its one task, which records its read and write seconds
    as ``(io)`` rows; the ops feeding a stat op run inside ``_fit_partition`` and stay in "fit partials"."""
    out = dict.fromkeys(PHASES, 0.0)
    fit_read = sum(t[4] for t in fit_ops if t[2] == "read")
    for name, s in fit_tasks.seconds.items():
        # (dask's key_split drops the leading underscore of the task functions' names)
        key = {"fit_partition": "fit partials", "combine_group": "combine", "combine_pieces": "combine",
               "split_partials": "combine", "getitem": "combine", "finalize_stats": "combine"}.get(name.strip("_"), "read")
        out[key] += s
    out["read"] += fit_read
    out["fit partials"] = max(0.0, out["fit partials"] - fit_read)
    for name, s in write_tasks.seconds.items():
        if name.strip("_") in ("write_indexed", "write_output"):  # other sources, and phase 2 of a split
            out["write"] += s
    out["read"] += sum(t[4] for t in write_ops if t[2] == "read")
    out["transform"] = sum(t[4] for t in write_ops if t[2] == "transform")
    out["write"] += sum(t[4] for t in write_ops if t[2] == "write")
    out["transfer"] = fit_tasks.transfer + write_tasks.transfer
    return out


def output_hash(folder: str, gpu: bool = False) -> Dict[str, Any]:
    """Rows and a hash of the row hashes of every part file, read back as frames, in name order.

    With ``gpu`` the files are read and row-hashed with cuDF (murmur3 of each row): on 200M rows
    the pandas path takes minutes of CPU per run. Hashes are compared only within one run (all
    configurations use the same path)."""
    import pyarrow.parquet as pq

    h = hashlib.sha256()
    rows = 0
    files = sorted(f for f in os.listdir(folder) if f.endswith(".parquet"))
    for f in files:
        path = os.path.join(folder, f)
        if gpu:
            import cudf

            df = cudf.read_parquet(path)
            df = df[sorted(df.columns)]
            h.update(df.hash_values().to_numpy().tobytes())
        else:
            import pandas as pd

            df = pq.read_table(path).to_pandas()
            df = df[sorted(df.columns)]
            h.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
        rows += len(df)
    return {"rows": rows, "hash": h.hexdigest()[:16], "files": len(files)}


def run_job(args: argparse.Namespace) -> None:
    import tabprep as tp
    from tabprep import backend, ops
    from tabprep.cli import progress as P

    cpu = not args.gpu
    client = cluster = None
    scattered = [0.0]  # seconds in Workflow._graph_handle (the workflow scattered to every worker)
    handle = tp.Workflow._graph_handle

    def timed_handle(self: Any) -> Any:
        start = time.perf_counter()
        try:
            return handle(self)
        finally:
            scattered[0] += time.perf_counter() - start

    tp.Workflow._graph_handle = timed_handle
    t0 = time.perf_counter()
    if args.n_workers:
        import dask
        from distributed import Client

        # the clusters `tabprep ... --workers N` starts: the same arguments and dask settings
        from tabprep.cli.cluster import LOCAL_CLUSTER_CONFIG, cpu_cluster_kwargs, cuda_cluster_kwargs

        if cpu:
            from distributed import LocalCluster as cluster_class

            kw = cpu_cluster_kwargs(args.n_workers)
        else:
            from dask_cuda import LocalCUDACluster as cluster_class

            kw = cuda_cluster_kwargs(args.n_workers, None, args.rmm_pool_size, None, args.protocol)
        if args.threads_per_worker:
            kw["threads_per_worker"] = args.threads_per_worker
        with dask.config.set(LOCAL_CLUSTER_CONFIG):
            cluster = cluster_class(**kw)
        client = Client(cluster)
        client.wait_for_workers(args.n_workers)
    elif not cpu:
        backend.use_rmm_pool()
    cluster_s = time.perf_counter() - t0

    def once(out: str, measure: bool) -> Dict[str, Any]:
        ds = tp.Dataset(os.path.join(args.data, "*.parquet"), cpu=cpu, part_size=args.part_size)
        cats = CATS >> ops.Categorify()
        conts = CONTS >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize(out_dtype="float32")
        wf = tp.Workflow(cats + conts + ["label"])
        if measure:
            wf.op_timer = P.record
            P.gather_times(client)
        fit_tasks, write_tasks = TaskTimes(client if measure else None), TaskTimes(client if measure else None)
        scattered[0] = 0.0
        start = time.perf_counter()
        if measure:
            with fit_tasks:
                wf.fit(ds)
        else:
            wf.fit(ds)
        fitted = time.perf_counter()
        fit_ops = P.gather_times(client) if measure else []  # the fit's op (and read) times
        if measure:
            with write_tasks:
                wf.transform(ds).to_parquet(out, overwrite=True)
        else:
            wf.transform(ds).to_parquet(out, overwrite=True)
        done = time.perf_counter()
        res: Dict[str, Any] = {"wall_s": done - start, "fit_s": fitted - start, "transform_write_s": done - fitted,
                               "partitions": ds.npartitions}
        if measure:
            res["phases"] = phases(fit_tasks, write_tasks, fit_ops, P.gather_times(client))
            res["fit_tail_s"] = fit_tasks.tail
            res["scatter_s"] = scattered[0]
            res["transfer_by"] = {f"{step}:{k}": round(v, 2) for step, tt in (("fit", fit_tasks), ("write", write_tasks))
                                  for k, v in tt.transfer_by.items()}
            if args.timeline:
                os.makedirs(args.timeline, exist_ok=True)
                with open(os.path.join(args.timeline, f"workers{args.n_workers}.json"), "w") as f:
                    json.dump({"fit": fit_tasks.timeline, "write": write_tasks.timeline,
                               "fit_wall": [start, fitted], "write_wall": [fitted, done]}, f)
        return res

    if not args.no_warmup:
        once(args.out + "-warm", measure=False)
        shutil.rmtree(args.out + "-warm", ignore_errors=True)
    runs = []
    for i in range(max(1, args.repeat)):
        if i:
            shutil.rmtree(args.out, ignore_errors=True)
        runs.append(once(args.out, measure=True))
    # the median run by wall time (its phases with it); every wall is kept
    res = sorted(runs, key=lambda r: r["wall_s"])[len(runs) // 2]
    res["walls"] = [round(r["wall_s"], 2) for r in runs]
    res["cluster_start_s"] = cluster_s
    if client is not None:
        client.close()
        cluster.close()
    res["output"] = output_hash(args.out, gpu=args.gpu)
    print("RESULT " + json.dumps(res))


def run_floor(args: argparse.Namespace) -> None:
    """One floor process: its share of the input files (every ``--n-workers``-th from
    ``--device``), read and written back with no ops, started when the parent says go."""
    import glob

    if args.gpu:
        import cudf
        import rmm

        rmm.reinitialize(pool_allocator=True)  # the job's allocator
    import pyarrow.parquet as pq

    files = sorted(glob.glob(os.path.join(args.data, "*.parquet")))[args.device::max(1, args.n_workers)]
    os.makedirs(args.out, exist_ok=True)
    print("READY", flush=True)
    while not os.path.exists(args.out + ".go"):
        time.sleep(0.01)
    start = time.time()
    for f in files:
        target = os.path.join(args.out, os.path.basename(f))
        if args.gpu:
            cudf.read_parquet(f).to_parquet(target, index=False)
        else:
            pq.write_table(pq.read_table(f), target)
    print("RESULT " + json.dumps({"start": start, "stop": time.time()}), flush=True)


def storage_floor(n: int, data: str, out: str, args: argparse.Namespace) -> float:
    """Wall seconds for ``n`` processes (GPU: one per device) reading and writing their share of
    the same files at once, no ops; the processes import first, then start together."""
    procs = []
    for i in range(n):
        env = dict(os.environ, **({"CUDA_VISIBLE_DEVICES": str(i)} if args.gpu else {}))
        cmd = [sys.executable, os.path.abspath(__file__), "--phase", "floor", "--n-workers", str(n),
               "--device", str(i), "--data", data, "--out", out] + (["--gpu"] if args.gpu else [])
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env))
    try:
        for p in procs:
            line = p.stdout.readline()
            if not line.startswith("READY"):
                raise SystemExit(f"a storage-floor process failed to start: {line!r}")
        open(out + ".go", "w").close()
        spans = []
        for p in procs:
            text, _ = p.communicate(timeout=3600)
            if p.returncode != 0:
                raise SystemExit("a storage-floor process failed")
            spans.append(json.loads([ln for ln in text.splitlines() if ln.startswith("RESULT ")][-1][7:]))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        if os.path.exists(out + ".go"):
            os.remove(out + ".go")
        shutil.rmtree(out, ignore_errors=True)
    return max(s["stop"] for s in spans) - min(s["start"] for s in spans)


# -- the parent: one process per configuration, the table ---------------------------------
def spawn(mode: str, n: int, data: str, out: str, args: argparse.Namespace) -> Dict[str, Any]:
    cmd = [sys.executable, os.path.abspath(__file__), "--phase", mode, "--n-workers", str(n), "--data", data,
           "--out", out, "--rmm-pool-size", args.rmm_pool_size]
    for flag, val in (("--gpu", args.gpu), ("--no-warmup", args.no_warmup)):
        if val:
            cmd.append(flag)
    if args.part_size:
        cmd += ["--part-size", args.part_size]
    if args.protocol:
        cmd += ["--protocol", args.protocol]
    if args.threads_per_worker:
        cmd += ["--threads-per-worker", str(args.threads_per_worker)]
    if args.timeline:
        cmd += ["--timeline", args.timeline]
    cmd += ["--repeat", str(args.repeat)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-8000:])
        raise SystemExit(f"{mode} with {n} workers failed")
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=float, default=2e6, help="rows of synthetic Criteo data (default 2M)")
    ap.add_argument("--files", type=int, default=0,
                    help="input files (default: one per 20M rows, at least 8 and 2 per worker of the largest run)")
    ap.add_argument("--workers", default="1,2", help="comma list of worker counts (GPU: one worker per GPU)")
    ap.add_argument("--gpu", action="store_true", help="cuDF; workers are a LocalCUDACluster")
    ap.add_argument("--part-size", default=None, help="Dataset part_size (default: tabprep's)")
    ap.add_argument("--rmm-pool-size", default="0.5", help="GPU workers' RMM pool (as tabprep's --rmm-pool-size)")
    ap.add_argument("--threads-per-worker", type=int, default=0, help="threads per worker (default: tabprep's)")
    ap.add_argument("--protocol", default=None, choices=["tcp", "ucx"], help="GPU workers' transport")
    ap.add_argument("--no-inprocess", action="store_true", help="skip the in-process run")
    ap.add_argument("--no-floor", action="store_true", help="skip the storage floors")
    ap.add_argument("--no-warmup", action="store_true", help="time the first run (no warm-up run)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="timed runs per configuration (after the warm-up); the table shows the median run")
    ap.add_argument("--rounds", type=int, default=1,
                    help="runs of the whole list of configurations, interleaved, each in a fresh process "
                         "(the table shows the median round)")
    ap.add_argument("--gen-procs", type=int, default=1, help="processes generating the data (once, cached)")
    ap.add_argument("--generate-only", action="store_true", help="generate (and cache) the data, run nothing")
    ap.add_argument("--data-root", default=os.path.join(tempfile.gettempdir(), "tabprep-bench"))
    ap.add_argument("--timeline", default=None,
                    help="folder for each worker run's task stream (JSON: key, worker, action, start, stop)")
    ap.add_argument("--phase", help=argparse.SUPPRESS)
    ap.add_argument("--n-workers", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--device", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase == "job":
        run_job(args)
        return
    if args.phase == "floor":
        run_floor(args)
        return
    rows = int(args.rows)
    workers = sorted({int(w) for w in args.workers.split(",") if w.strip()})
    # enough files for every worker count (and the floor's processes), about 20M rows per file
    # at scale (the issue-16 figures: 200M rows in 10 files)
    files = args.files or max(8, rows // 20_000_000, 2 * max(workers))
    data = ensure_data(rows, args.data_root, files, args.gen_procs)
    if args.generate_only:
        print(f"data: {data}")
        return
    out_dir = tempfile.mkdtemp(prefix="tabprep-scale-")
    runs: List[tuple] = ([("in-process", 0)] if not args.no_inprocess else []) + [(f"{n} worker{'s' * (n > 1)}", n)
                                                                                 for n in workers]
    results: Dict[str, Dict[str, Any]] = {}
    floors: Dict[int, float] = {}
    rounds: Dict[str, List[Dict[str, Any]]] = {label: [] for label, _ in runs}
    try:
        for rnd in range(max(1, args.rounds)):
            for label, n in runs:
                r = spawn("job", n, data, os.path.join(out_dir, f"run{n}"), args)
                shutil.rmtree(os.path.join(out_dir, f"run{n}"), ignore_errors=True)
                rounds[label].append(r)
                print(f"  {label}{f' (round {rnd + 1})' if args.rounds > 1 else ''}: {r['wall_s']:.2f}s (runs {r['walls']}; "
                      f"fit {r['fit_s']:.2f}, transform+write {r['transform_write_s']:.2f}, "
                      f"{r['partitions']} partitions; fit tail {r.get('fit_tail_s', 0.0):.2f}, "
                      f"scatter {r.get('scatter_s', 0.0):.2f}) phases " +
                      ", ".join(f"{k} {v:.1f}" for k, v in r.get("phases", {}).items()) +
                      (f"; transfer by waiting task {r['transfer_by']}" if r.get("transfer_by") else ""),
                      file=sys.stderr, flush=True)
                if not args.no_floor and max(n, 1) not in floors:
                    floors[max(n, 1)] = storage_floor(max(n, 1), data, os.path.join(out_dir, f"floor{n}"), args)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    for label, rs in rounds.items():
        # the median round, with every round's timed runs listed
        r = dict(sorted(rs, key=lambda x: x["wall_s"])[len(rs) // 2])
        r["walls"] = [w for x in rs for w in x["walls"]]
        r["output"]["hash_all"] = sorted({x["output"]["hash"] for x in rs})
        results[label] = r
    print_table(rows, files, args, results, floors, runs)
    hashes = {label: r["output"]["hash_all"] for label, r in results.items()}
    if len({h for hs in hashes.values() for h in hs}) != 1:
        raise SystemExit(f"outputs differ between runs: {hashes}")
    first = next(iter(results.values()))["output"]
    print(f"check: all {len(results)} outputs identical ({first['rows']:,} rows, {first['files']} files, "
          f"row-hash {first['hash']})")


def print_table(rows: int, files: int, args: argparse.Namespace, results: Dict[str, Dict[str, Any]],
                floors: Dict[int, float], runs: List[tuple]) -> None:
    dev = "GPU (LocalCUDACluster, one GPU per worker)" if args.gpu else \
        f"CPU (LocalCluster of processes, {os.cpu_count()} cores)"
    parts = next(iter(results.values()))["partitions"]
    print(f"\n{rows:,} Criteo rows, {files} files, {parts} partitions; {dev}; cluster started before timing, "
          f"{'no warm-up' if args.no_warmup else 'after a warm-up run'}; median of {args.repeat} timed run(s) per configuration"
          + (f", median of {args.rounds} interleaved rounds" if args.rounds > 1 else ""))
    one = results.get("1 worker", {}).get("wall_s")
    inproc = results.get("in-process", {}).get("wall_s")
    head = (f"{'run':>12} {'wall s':>7} {'fit':>6} {'xf+wr':>6} {'rows/s':>11} {'x 1 wkr':>7} {'x in-proc':>9} "
            f"{'floor s':>7} {'x floor':>7} {'start s':>7} | " + " ".join(f"{p:>12}" for p in PHASES))
    print(head)
    for label, n in runs:
        r = results[label]
        w = r["wall_s"]
        floor = floors.get(max(n, 1))
        ph = r.get("phases", {})
        print(f"{label:>12} {w:>7.2f} {r['fit_s']:>6.2f} {r['transform_write_s']:>6.2f} {rows / w:>11,.0f} "
              f"{(one / w if one else float('nan')):>7.2f} {(inproc / w if inproc else float('nan')):>9.2f} "
              f"{(floor if floor else float('nan')):>7.2f} {(w / floor if floor else float('nan')):>7.2f} "
              f"{r['cluster_start_s']:>7.2f} | " + " ".join(f"{ph.get(p, 0.0):>12.2f}" for p in PHASES))
    print("x 1 wkr / x in-proc: speed-up (1-worker or in-process wall / this wall); x floor: wall / the storage "
          "floor at the same process count; phases: task-seconds summed over workers")
    print("timed runs (s): " + "; ".join(f"{label} {results[label]['walls']}" for label, _ in runs))


if __name__ == "__main__":
    main()
