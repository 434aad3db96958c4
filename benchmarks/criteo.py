"""Criteo benchmark: the canonical workflow with tabprep vs the same job in plain pandas (or cuDF).

Each job runs in its own subprocess (so peak RSS is per job), on the same generated files,
in the same invocation; the parent prints rows/s, peak memory and the ratios.

    python benchmarks/criteo.py --rows 10000000            # CPU: tabprep vs plain pandas
    python benchmarks/criteo.py --rows 2000000,5000000,10000000 --skip-baseline   # memory vs size
    python benchmarks/criteo.py --rows 50000000 --gpu      # GPU: tabprep(cuDF) vs cuDF read+write only

The job: C1..C26 >> Categorify; I1..I13 >> FillMissing >> Clip(0) >> LogOp >> Normalize; + label;
fit, transform, write parquet.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

CATS = [f"C{i}" for i in range(1, 27)]
CONTS = [f"I{i}" for i in range(1, 14)]


class PeakRSS:
    """Polls the process's RSS every 20 ms; ``peak`` in bytes."""

    def __init__(self) -> None:
        import psutil

        self.proc = psutil.Process()
        self.peak = self.proc.memory_info().rss
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            rss = self.proc.memory_info().rss
            for child in self.proc.children(recursive=True):
                try:
                    rss += child.memory_info().rss
                except Exception:  # noqa: BLE001 - a child may exit between listing and reading
                    pass
            self.peak = max(self.peak, rss)
            time.sleep(0.02)

    def __enter__(self) -> "PeakRSS":
        self._t.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._t.join()


def _generate_group(args: tuple) -> None:
    from tabprep.io.synthetic import generate_criteo

    rows, out, files, seed = args
    generate_criteo(rows, out, files=files, seed=seed)


def ensure_data(rows: int, data_root: str, files: int, procs: int = 1) -> str:
    """Generate (once, cached by size) ``rows`` Criteo-like rows as ``files`` parquet files.

    With ``procs > 1`` groups of files are generated in parallel processes (different seeds,
    so rows differ between groups; the data is the same for every run of the same arguments).
    """
    path = os.path.join(data_root, f"criteo_{rows}_{files}")
    if not os.path.exists(os.path.join(path, "_DONE")):
        shutil.rmtree(path, ignore_errors=True)
        t = time.perf_counter()
        groups = max(1, min(procs, files))
        jobs = []
        for g in range(groups):
            g_files = files * (g + 1) // groups - files * g // groups
            g_rows = rows * (g + 1) // groups - rows * g // groups
            jobs.append((g_rows, os.path.join(path, f"g{g:02d}"), g_files, g))
        if groups == 1:
            _generate_group(jobs[0])
        else:
            from multiprocessing import get_context

            with get_context("spawn").Pool(groups) as pool:
                pool.map(_generate_group, jobs)
        for _, gdir, _, g in jobs:  # flatten: data/gNN-part-XXXXX.parquet
            for name in sorted(os.listdir(gdir)):
                os.rename(os.path.join(gdir, name), os.path.join(path, f"g{g:02d}-{name}"))
            os.rmdir(gdir)
        open(os.path.join(path, "_DONE"), "w").close()
        print(f"  generated {rows:,} rows in {time.perf_counter() - t:.1f}s -> {path}", file=sys.stderr)
    return path


# -- jobs (each run in a subprocess) -----------------------------------------------------
def job_tabprep(data: str, out: str, cpu: bool, part_size: str | None, scheduler: str) -> dict:
    import dask

    try:  # dask imports distributed (when installed) at the first compute: an import, not job time
        import distributed  # noqa: F401
    except ImportError:
        pass

    import tabprep as tp
    from tabprep import ops

    client = None
    if scheduler.startswith("distributed"):
        # a local dask.distributed cluster: one single-threaded worker process per core
        from distributed import Client, LocalCluster

        n = int(scheduler.split(":")[1]) if ":" in scheduler else os.cpu_count()
        client = Client(LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None))
    elif scheduler != "threads":
        dask.config.set(scheduler=scheduler)
    if not cpu:
        from tabprep.backend import use_rmm_pool

        use_rmm_pool()
    t_start = time.perf_counter()  # after imports, like the baselines
    ds = tp.Dataset(os.path.join(data, "*.parquet"), cpu=cpu, part_size=part_size)
    cats = CATS >> ops.Categorify()
    conts = CONTS >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize()
    wf = tp.Workflow(cats + conts + ["label"])
    t0 = time.perf_counter()
    wf.fit(ds)
    t1 = time.perf_counter()
    meta = wf.transform(ds).to_parquet(out, overwrite=True)
    t2 = time.perf_counter()
    if client is not None:
        client.close()
    return {"total_s": t2 - t_start, "fit_s": t1 - t0, "transform_write_s": t2 - t1, "rows": meta["rows"],
            "npartitions": ds.npartitions,
            "cardinality_C3": wf.output_schema["C3"].cardinality}


def job_pandas(data: str, out: str) -> dict:
    """The same job written plainly in pandas: read, value counts, map, write."""
    import glob

    import numpy as np
    import pandas as pd

    files = sorted(glob.glob(os.path.join(data, "*.parquet")))
    t0 = time.perf_counter()
    df = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    for c in CATS:
        vc = df[c].value_counts()
        mapping = pd.Series(np.arange(3, 3 + len(vc)), index=vc.index)
        df[c] = df[c].map(mapping).fillna(1).astype("int64")
    for c in CONTS:
        x = np.log1p(df[c].fillna(0).clip(lower=0).astype("float64"))
        df[c] = ((x - x.mean()) / x.std(ddof=0)).astype("float32")
    os.makedirs(out, exist_ok=True)
    df.to_parquet(os.path.join(out, "part.parquet"), index=False)
    return {"total_s": time.perf_counter() - t0, "rows": len(df)}


def job_cudf_io(data: str, out: str) -> dict:
    """cuDF alone: read the input and write it back (the floor for a GPU job)."""
    import glob

    import cudf

    import rmm

    rmm.reinitialize(pool_allocator=True)  # same allocator as the tabprep GPU job
    files = sorted(glob.glob(os.path.join(data, "*.parquet")))
    t0 = time.perf_counter()
    os.makedirs(out, exist_ok=True)
    rows = 0
    for i, f in enumerate(files):
        df = cudf.read_parquet(f)
        rows += len(df)
        df.to_parquet(os.path.join(out, f"part-{i}.parquet"), index=False)
    return {"total_s": time.perf_counter() - t0, "rows": rows}


def run_phase(args: argparse.Namespace) -> None:
    with PeakRSS() as mem:
        t = time.perf_counter()
        if args.phase == "tabprep":
            res = job_tabprep(args.data, args.out, not args.gpu, args.part_size, args.scheduler)
        elif args.phase == "pandas":
            res = job_pandas(args.data, args.out)
        else:
            res = job_cudf_io(args.data, args.out)
        res["wall_s"] = time.perf_counter() - t
    res["peak_rss_gib"] = mem.peak / 1024 ** 3
    print("RESULT " + json.dumps(res))


def spawn(phase: str, data: str, out: str, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, __file__, "--phase", phase, "--data", data, "--out", out, "--scheduler", args.scheduler]
    if args.gpu:
        cmd.append("--gpu")
    if args.part_size:
        cmd += ["--part-size", args.part_size]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"{phase} job failed")
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", default="10000000", help="row count, or a comma list for a memory-vs-size table")
    ap.add_argument("--files", type=int, default=0, help="input files (default: one per 2.5M rows)")
    ap.add_argument("--gpu", action="store_true", help="tabprep on cuDF; baseline = cuDF read + write only")
    ap.add_argument("--part-size", default=None)
    ap.add_argument("--scheduler", default="threads",
                    help="dask scheduler for tabprep: threads|sync|distributed[:N] (LocalCluster, N worker processes)")
    ap.add_argument("--skip-baseline", action="store_true")
    ap.add_argument("--gen-procs", type=int, default=1, help="processes generating the data (once, cached)")
    ap.add_argument("--warmup", action="store_true",
                    help="run both jobs once on the data first (fills kernel/JIT caches, page cache); time the second run")
    ap.add_argument("--data-root", default=os.path.join(tempfile.gettempdir(), "tabprep-bench"))
    ap.add_argument("--phase", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase:
        run_phase(args)
        return
    rows_list = [int(float(r)) for r in args.rows.split(",")]
    print("seconds = the job after imports (read, fit, transform, write); peak = the job process's peak RSS")
    print(f"{'rows':>12} {'job':>16} {'seconds':>8} {'rows/s':>12} {'peak GiB':>9}  notes")
    for rows in rows_list:
        files = args.files or max(1, rows // 2_500_000)
        data = ensure_data(rows, args.data_root, files, args.gen_procs)
        out_dir = tempfile.mkdtemp(prefix="tabprep-bench-out-")
        try:
            if args.warmup:
                spawn("tabprep", data, os.path.join(out_dir, "warm"), args)
                if not args.skip_baseline:
                    spawn("cudf-io" if args.gpu else "pandas", data, os.path.join(out_dir, "warm-base"), args)
                shutil.rmtree(os.path.join(out_dir, "warm"), ignore_errors=True)
                shutil.rmtree(os.path.join(out_dir, "warm-base"), ignore_errors=True)
            ours = spawn("tabprep", data, os.path.join(out_dir, "tabprep"), args)
            note = f"fit {ours['fit_s']:.1f}s + transform/write {ours['transform_write_s']:.1f}s, {ours['npartitions']} partitions"
            print(f"{rows:>12,} {'tabprep' + ('-gpu' if args.gpu else ''):>16} {ours['total_s']:>8.2f} "
                  f"{rows / ours['total_s']:>12,.0f} {ours['peak_rss_gib']:>9.2f}  {note}")
            if not args.skip_baseline:
                phase = "cudf-io" if args.gpu else "pandas"
                base = spawn(phase, data, os.path.join(out_dir, phase), args)
                label = "cudf read+write" if args.gpu else "plain pandas"
                print(f"{rows:>12,} {label:>16} {base['total_s']:>8.2f} {rows / base['total_s']:>12,.0f} "
                      f"{base['peak_rss_gib']:>9.2f}")
                if args.gpu:
                    print(f"{'':>12} {'ratio':>16} tabprep time / cuDF read+write time = {ours['total_s'] / base['total_s']:.2f}x "
                          f"(target < 2x)")
                else:
                    print(f"{'':>12} {'ratio':>16} tabprep throughput / plain pandas = {base['total_s'] / ours['total_s']:.2f}x "
                          f"(target >= 2x)")
        finally:
            shutil.rmtree(out_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
