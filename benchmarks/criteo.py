"""Criteo benchmark: the canonical workflow with tabprep vs the same job by hand in pandas and
Polars, and the I/O floor (or, with --gpu, cuDF read + write).

Each job runs in its own subprocess (so peak RSS is per job), on the same generated files,
in the same invocation; the parent prints seconds, rows/s, peak memory and the ratios.

    python benchmarks/criteo.py --rows 10000000            # CPU: tabprep, I/O floor, idiomatic pandas, Polars
    python benchmarks/criteo.py --check                    # 200k rows; asserts baselines' output == tabprep's
    python benchmarks/criteo.py --rows 2000000,5000000,10000000 --skip-baseline   # memory vs size
    python benchmarks/criteo.py --rows 50000000 --gpu      # GPU: tabprep(cuDF) vs cuDF read+write only

The job: C1..C26 >> Categorify; I1..I13 >> FillMissing >> Clip(0) >> LogOp >> Normalize(out_dtype="float32")
(float32, as the figures since the start; Normalize's default is NVTabular's float64); + label;
fit, transform, write parquet. Jobs (``--jobs``):

* ``tabprep``: the Workflow above on a tabprep Dataset (dask threads by default);
* ``floor``: pyarrow ``read_table`` + ``write_table`` of each file in turn, no ops (the least any
  job that reads and writes the data once must spend);
* ``pandas``: idiomatic pandas, file by file (issue 12): ``read_parquet``; ``value_counts`` per
  column combined over files; ``Index.get_indexer``; ``fillna``/``clip``/``np.log``/normalize;
  ``to_parquet``. The ratio ``tabprep vs idiomatic pandas`` is against this one;
* ``polars``: Polars by hand (lazy ``scan_parquet``, streaming ``collect_all`` for the fit,
  the same steps as expressions, ``sink_parquet``); needs the ``bench`` extra;
* ``pandas-concat``: the earlier baseline (all files concatenated in memory, ``Series.map``),
  slower than idiomatic pandas; not run by default, and not checked (its tie order and float
  rounding differ from tabprep's).

``--check`` (default 200,000 rows) asserts that the pandas and Polars outputs equal tabprep's,
row for row: identical Categorify ids (null 1, unseen 2, vocabulary from 3 by descending count,
ties by ascending value) and labels, floats at most 1 float32 ulp apart.
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

    client = cluster = None
    if scheduler.startswith("distributed"):
        # a local dask.distributed cluster as `tabprep ... --workers N` starts it (its arguments and
        # dask settings): one single-threaded worker process per core by default
        from distributed import Client, LocalCluster

        from tabprep.cli.cluster import LOCAL_CLUSTER_CONFIG, cpu_cluster_kwargs

        n = int(scheduler.split(":")[1]) if ":" in scheduler else "auto"
        with dask.config.set(LOCAL_CLUSTER_CONFIG):
            cluster = LocalCluster(**cpu_cluster_kwargs(n))
        client = Client(cluster)
    elif scheduler != "threads":
        dask.config.set(scheduler=scheduler)
    if not cpu:
        from tabprep.backend import use_rmm_pool

        use_rmm_pool()
    t_start = time.perf_counter()  # after imports, like the baselines
    ds = tp.Dataset(os.path.join(data, "*.parquet"), cpu=cpu, part_size=part_size)
    cats = CATS >> ops.Categorify()
    conts = CONTS >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize(out_dtype="float32")
    wf = tp.Workflow(cats + conts + ["label"])
    t0 = time.perf_counter()
    wf.fit(ds)
    t1 = time.perf_counter()
    meta = wf.transform(ds).to_parquet(out, overwrite=True)
    t2 = time.perf_counter()
    if client is not None:
        client.close()
        cluster.close()
    return {"total_s": t2 - t_start, "fit_s": t1 - t0, "transform_write_s": t2 - t1, "rows": meta["rows"],
            "npartitions": ds.npartitions,
            "cardinality_C3": wf.output_schema["C3"].cardinality}


def _input_files(data: str) -> list:
    import glob

    return sorted(glob.glob(os.path.join(data, "*.parquet")))


def job_floor(data: str, out: str) -> dict:
    """The I/O floor: pyarrow reads each file and writes it back (default writer: snappy), no ops,
    one file after the other. Any job must at least read and write the data once."""
    import pyarrow.parquet as pq

    files = _input_files(data)
    t0 = time.perf_counter()
    os.makedirs(out, exist_ok=True)
    rows = 0
    for i, f in enumerate(files):
        table = pq.read_table(f)
        rows += table.num_rows
        pq.write_table(table, os.path.join(out, f"part-{i:05d}.parquet"))
        del table
    return {"total_s": time.perf_counter() - t0, "rows": rows}


def job_pandas(data: str, out: str) -> dict:
    """The job as a pandas user writes it, file by file (memory bounded by one file):

    fit: per file ``read_parquet``; ``value_counts`` of each categorical column, combined over
    files (``concat`` + ``groupby(level=0).sum()``), sorted by count (ties: ascending value) into
    an ``Index``; per continuous column the count, sum and sum of squares of
    ``log(float32(clip(fillna(x, 0), 0)) + 1)`` (LogOp's). transform: per file ``read_parquet`` again;
    ``Index.get_indexer`` + 3 (null 1, unseen 2); ``fillna``/``clip``/``np.log``/normalize;
    ``to_parquet``. Ids and floats are tabprep's (checked by ``--check``).
    """
    import numpy as np
    import pandas as pd
    import pyarrow.parquet  # noqa: F401 - pandas' parquet engine: an import, not job time (as for the others)

    files = _input_files(data)
    t0 = time.perf_counter()

    def logs(s):  # FillMissing(0) >> Clip(0) >> LogOp: log(float32(x) + 1), the sum in float32 (NVTabular's)
        x32 = s.fillna(0).clip(lower=0).astype("float32")
        return np.log((x32 + np.float32(1)).astype("float64")).astype("float32")

    counts = {c: [] for c in CATS}
    n = {c: 0 for c in CONTS}
    s1 = {c: 0.0 for c in CONTS}
    s2 = {c: 0.0 for c in CONTS}
    for f in files:
        df = pd.read_parquet(f)
        for c in CATS:
            counts[c].append(df[c].value_counts())
        for c in CONTS:
            x = logs(df[c]).astype("float64")
            n[c] += len(x)
            s1[c] += float(x.sum())
            s2[c] += float((x * x).sum())
        del df
    vocab = {}
    for c in CATS:
        vc = pd.concat(counts[c]).groupby(level=0).sum()
        vocab[c] = vc.sort_index().sort_values(ascending=False, kind="stable").index
    del counts
    mean = {c: s1[c] / n[c] for c in CONTS}
    # the sample std (ddof=1), as Normalize (NVTabular's); this baseline used ddof=0, 42 float32 ulps
    # from tabprep at 200k rows, so --check failed (found 2026-11-29)
    std = {c: float(np.sqrt(max((s2[c] - n[c] * mean[c] ** 2) / (n[c] - 1), 0.0))) for c in CONTS}

    os.makedirs(out, exist_ok=True)
    rows = 0
    for i, f in enumerate(files):
        df = pd.read_parquet(f)
        res = {}
        for c in CATS:
            pos = vocab[c].get_indexer(df[c])
            ids = np.where(pos >= 0, pos + 3, 2)
            ids[df[c].isna().to_numpy()] = 1
            res[c] = ids
        for c in CONTS:
            res[c] = ((logs(df[c]).astype("float64") - mean[c]) / std[c]).astype("float32")
        res["label"] = df["label"]
        rows += len(df)
        pd.DataFrame(res).to_parquet(os.path.join(out, f"part-{i:05d}.parquet"), index=False)
        del df, res
    return {"total_s": time.perf_counter() - t0, "rows": rows}


def job_pandas_concat(data: str, out: str) -> dict:
    """The earlier baseline (issue 12: slower than an idiomatic script): all files concatenated
    in memory, ``Series.map`` of a value->id Series. Kept for comparison with old figures;
    its ids are not tabprep's (ties) and its logs are not rounded to float32 in between."""
    import numpy as np
    import pandas as pd

    files = _input_files(data)
    t0 = time.perf_counter()
    df = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    for c in CATS:
        vc = df[c].value_counts()
        mapping = pd.Series(np.arange(3, 3 + len(vc)), index=vc.index)
        df[c] = df[c].map(mapping).fillna(1).astype("int64")
    for c in CONTS:
        x = np.log((df[c].fillna(0).clip(lower=0).astype("float32") + np.float32(1)).astype("float64"))
        df[c] = ((x - x.mean()) / x.std(ddof=1)).astype("float32")
    os.makedirs(out, exist_ok=True)
    df.to_parquet(os.path.join(out, "part.parquet"), index=False)
    return {"total_s": time.perf_counter() - t0, "rows": len(df)}


def job_polars(data: str, out: str) -> dict:
    """The job in Polars (lazy, streaming engine): fit = one ``collect_all`` of a ``group_by().len()``
    per categorical column and the mean/std (ddof=1, as NVTabular and tabprep) of each continuous column's
    ``log(float32(clip(fill_null(x, 0), 0)) + 1)`` (LogOp's); vocabularies sorted by count (ties: ascending
    value); transform = ``replace_strict`` to ids from 3 (unseen 2, null 1) and the normalize
    expressions, ``sink_parquet`` to one file."""
    import polars as pl

    files = _input_files(data)
    t0 = time.perf_counter()
    lf = pl.scan_parquet(files)

    def logs(c):
        x32 = pl.col(c).fill_null(0).clip(lower_bound=0).cast(pl.Float32) + pl.lit(1.0, dtype=pl.Float32)
        return x32.cast(pl.Float64).log().cast(pl.Float32).cast(pl.Float64)

    plans = [lf.select(pl.col(c)).drop_nulls().group_by(c).len() for c in CATS]
    plans.append(lf.select([logs(c).mean().alias(f"{c}_mean") for c in CONTS]
                           + [logs(c).std(ddof=1).alias(f"{c}_std") for c in CONTS]))
    results = pl.collect_all(plans, engine="streaming")
    moments = results[-1].row(0, named=True)
    exprs = []
    for c, vc in zip(CATS, results[:-1]):
        values = vc.sort(["len", c], descending=[True, False])[c]
        ids = pl.int_range(3, 3 + len(values), dtype=pl.Int64, eager=True)
        exprs.append(pl.when(pl.col(c).is_null()).then(pl.lit(1, pl.Int64))
                     .otherwise(pl.col(c).replace_strict(values, ids, default=2, return_dtype=pl.Int64)).alias(c))
    for c in CONTS:
        exprs.append(((logs(c) - moments[f"{c}_mean"]) / moments[f"{c}_std"]).cast(pl.Float32).alias(c))
    exprs.append(pl.col("label"))
    os.makedirs(out, exist_ok=True)
    lf.select(exprs).sink_parquet(os.path.join(out, "part.parquet"))
    rows = pl.scan_parquet(os.path.join(out, "part.parquet")).select(pl.len()).collect().item()
    return {"total_s": time.perf_counter() - t0, "rows": rows}


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


JOBS = {"floor": job_floor, "pandas": job_pandas, "pandas-concat": job_pandas_concat, "polars": job_polars,
        "cudf-io": job_cudf_io}
LABELS = {"tabprep": "tabprep", "floor": "I/O floor (pyarrow read+write)", "pandas": "idiomatic pandas",
          "pandas-concat": "pandas, concat (old)", "polars": "Polars", "cudf-io": "cuDF read+write"}


def _cpu_s() -> float:
    """User + system CPU seconds of this process (all threads) and its waited-for children."""
    import resource

    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def run_phase(args: argparse.Namespace) -> None:
    with PeakRSS() as mem:
        t = time.perf_counter()
        c = _cpu_s()  # includes the imports inside the job functions (small next to the job)
        if args.phase == "tabprep":
            res = job_tabprep(args.data, args.out, not args.gpu, args.part_size, args.scheduler)
        else:
            res = JOBS[args.phase](args.data, args.out)
        res["wall_s"] = time.perf_counter() - t
        res["cpu_s"] = _cpu_s() - c
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


def _print_row(rows: int, job: str, r: dict, ours: dict, gpu: bool, tag: str = "") -> None:
    """One job's line: seconds, rows/s, peak RSS, seconds against tabprep's ``ours``, CPU seconds."""
    note = ""
    if job == "tabprep":
        note = f"fit {r['fit_s']:.1f}s + transform/write {r['transform_write_s']:.1f}s, {r['npartitions']} partitions"
    label = tag + LABELS[job] + ("-gpu" if job == "tabprep" and gpu else "")
    print(f"{rows:>12,} {label:>44} {r['total_s']:>8.2f} {rows / r['total_s']:>12,.0f} "
          f"{r['peak_rss_gib']:>9.2f} {r['total_s'] / ours['total_s']:>9.2f} {r['cpu_s']:>7.1f}  {note}", flush=True)


def _median_run(results: list) -> dict:
    """A job's median over rounds: each number separately (seconds, CPU, peak, phases)."""
    import statistics

    out = dict(results[0])
    for key, val in results[0].items():
        if isinstance(val, float):
            out[key] = statistics.median(r[key] for r in results)
    return out


def _read_output(folder: str) -> "pd.DataFrame":  # noqa: F821
    """All ``*.parquet`` files of an output folder, in name order, as one pandas frame."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = sorted(f for f in os.listdir(folder) if f.endswith(".parquet"))
    return pa.concat_tables([pq.read_table(os.path.join(folder, f)) for f in files]).to_pandas()


def check_outputs(out_dir: str, jobs: list) -> None:
    """Assert every baseline's output equals tabprep's: same row order, identical ids and
    labels, floats equal to float32 rounding (at most 1 ulp apart). Raises AssertionError."""
    import numpy as np

    ref = _read_output(os.path.join(out_dir, "tabprep"))
    assert sorted(ref.columns) == sorted(CATS + CONTS + ["label"]), list(ref.columns)
    for job in jobs:
        if job in ("tabprep", "floor", "pandas-concat", "cudf-io"):
            continue
        got = _read_output(os.path.join(out_dir, job))
        assert sorted(got.columns) == sorted(ref.columns), (job, list(got.columns))
        assert len(got) == len(ref), (job, len(got), len(ref))
        worst_ulp = 0
        for c in CATS + ["label"]:
            a, b = ref[c].to_numpy(), got[c].to_numpy()
            assert a.dtype.kind in "iu" and b.dtype.kind in "iu", (job, c, a.dtype, b.dtype)
            bad = np.flatnonzero(a != b)
            assert bad.size == 0, f"{job}: {c} differs in {bad.size} rows, e.g. row {bad[0]}: tabprep {a[bad[0]]} vs {b[bad[0]]}"
        for c in CONTS:
            a, b = ref[c].to_numpy(), got[c].to_numpy()
            assert a.dtype == np.float32 and b.dtype == np.float32, (job, c, a.dtype, b.dtype)
            assert np.isfinite(a).all() and np.isfinite(b).all(), (job, c)
            # ulp distance of float32s: order-preserving integer view
            ia, ib = a.view(np.int32).astype(np.int64), b.view(np.int32).astype(np.int64)
            ia = np.where(ia < 0, -(ia & 0x7FFFFFFF), ia)
            ib = np.where(ib < 0, -(ib & 0x7FFFFFFF), ib)
            ulp = int(np.abs(ia - ib).max())
            worst_ulp = max(worst_ulp, ulp)
            assert ulp <= 1, f"{job}: {c} differs by up to {ulp} float32 ulps from tabprep"
        print(f"  check: {LABELS[job]} output == tabprep output ({len(ref):,} rows; ids/labels identical, "
              f"floats within {worst_ulp} float32 ulp)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", default=None, help="row count, or a comma list for a memory-vs-size table "
                                                 "(default 10,000,000; 200,000 with --check)")
    ap.add_argument("--files", type=int, default=0, help="input files (default: one per 1M rows, at least 2)")
    ap.add_argument("--gpu", action="store_true", help="tabprep on cuDF; baseline = cuDF read + write only")
    ap.add_argument("--jobs", default=None,
                    help="comma list of jobs: tabprep,floor,pandas,polars (CPU default), pandas-concat (the old "
                         "in-memory baseline), cudf-io (GPU default: tabprep,cudf-io)")
    ap.add_argument("--check", action="store_true",
                    help="also assert that each baseline's output values equal tabprep's (ids, floats to float32 rounding)")
    ap.add_argument("--part-size", default=None)
    ap.add_argument("--scheduler", default="threads",
                    help="dask scheduler for tabprep: threads|sync|distributed[:N] (LocalCluster, N worker processes)")
    ap.add_argument("--skip-baseline", action="store_true", help="tabprep only (same as --jobs tabprep)")
    ap.add_argument("--gen-procs", type=int, default=1, help="processes generating the data (once, cached)")
    ap.add_argument("--warmup", action="store_true",
                    help="run every job once on the data first (page cache, kernel/JIT caches); time the second run")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run every job this many times, interleaved (round k starts k jobs further down the "
                         "list); prints each round, then each job's median and the ratios of the medians")
    ap.add_argument("--data-root", default=os.path.join(tempfile.gettempdir(), "tabprep-bench"))
    ap.add_argument("--phase", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase:
        run_phase(args)
        return
    if args.skip_baseline:
        jobs = ["tabprep"]
    elif args.jobs:
        jobs = [j.strip() for j in args.jobs.split(",") if j.strip()]
    else:
        jobs = ["tabprep", "cudf-io"] if args.gpu else ["tabprep", "floor", "pandas", "polars"]
    unknown = [j for j in jobs if j != "tabprep" and j not in JOBS]
    if unknown or "tabprep" not in jobs:
        raise SystemExit(f"--jobs: unknown {unknown} or no tabprep; choose from tabprep,{','.join(JOBS)}")
    jobs = ["tabprep"] + [j for j in jobs if j != "tabprep"]  # first: the ratios need its time
    rows_arg = args.rows or ("200000" if args.check else "10000000")
    rows_list = [int(float(r)) for r in rows_arg.split(",")]
    print("seconds = the job after imports (read, fit, transform, write); peak = the job process's peak RSS "
          "(with its children); x tabprep = that job's seconds / tabprep's (above 1: tabprep is faster); "
          "CPU s = the job process's user+system seconds, all threads (steadier than seconds on a busy machine)")
    print(f"{'rows':>12} {'job':>44} {'seconds':>8} {'rows/s':>12} {'peak GiB':>9} {'x tabprep':>9} {'CPU s':>7}  notes")
    for rows in rows_list:
        files = args.files or max(2, rows // 1_000_000)
        data = ensure_data(rows, args.data_root, files, args.gen_procs)
        out_dir = tempfile.mkdtemp(prefix="tabprep-bench-out-")
        try:
            if args.warmup:
                for job in jobs:
                    spawn(job, data, os.path.join(out_dir, "warm-" + job), args)
                    shutil.rmtree(os.path.join(out_dir, "warm-" + job), ignore_errors=True)
            rounds = max(1, args.rounds)
            runs = {job: [] for job in jobs}
            for k in range(rounds):
                # a busy machine's speed drifts over minutes: round k starts k jobs further down, so no
                # job always runs right after the same one
                for job in jobs[k % len(jobs):] + jobs[:k % len(jobs)]:
                    runs[job].append(spawn(job, data, os.path.join(out_dir, job), args))
                    if not (args.check and k == rounds - 1):
                        shutil.rmtree(os.path.join(out_dir, job), ignore_errors=True)
                tag = f"round {k + 1}: " if rounds > 1 else ""
                for job in jobs:
                    _print_row(rows, job, runs[job][k], runs["tabprep"][k], args.gpu, tag)
            goals = {"pandas": ("tabprep vs idiomatic pandas", "goal >= 3x"),
                     "polars": ("tabprep vs Polars", "goal >= 2x"),
                     "floor": ("tabprep vs I/O floor", "goal ~1x: the sequential read+write time"),
                     "pandas-concat": ("tabprep vs pandas, concat (old)", ""),
                     "cudf-io": ("tabprep vs cuDF read+write", "goal: time ratio < 2x")}
            if rounds == 1:
                t = runs["tabprep"][0]["total_s"]
                for job in jobs[1:]:
                    name, goal = goals[job]
                    print(f"{'':>12} {name:>32}: {runs[job][0]['total_s'] / t:.2f}x throughput   ({goal})")
            else:
                med = {job: _median_run(runs[job]) for job in jobs}
                for job in jobs:
                    _print_row(rows, job, med[job], med["tabprep"], args.gpu, f"median of {rounds}: ")
                t = med["tabprep"]["total_s"]
                for job in jobs[1:]:
                    name, goal = goals[job]
                    per = [a["total_s"] / b["total_s"] for a, b in zip(runs[job], runs["tabprep"])]
                    print(f"{'':>12} {name:>32}: {med[job]['total_s'] / t:.2f}x throughput, medians   "
                          f"(per round {min(per):.2f}-{max(per):.2f}x; {goal})")
            if args.check:
                check_outputs(out_dir, jobs)
        finally:
            shutil.rmtree(out_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
