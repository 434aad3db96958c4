"""Where the Criteo job's time goes: per-op totals and a cProfile of fit and transform+write.

    python benchmarks/profile_job.py --data /tmp/tabprep-bench/criteo_10000000_4          # CPU
    python benchmarks/profile_job.py --data /tmp/tb/criteo_50000000_16 --gpu               # cuDF

Runs the job of ``benchmarks/criteo.py`` once with dask's synchronous scheduler (so cProfile,
which follows one thread, sees every task), prints the seconds per op and kind (fit partial /
transform) from ``Workflow.op_timer``, then the top functions by own time and by cumulative
time for the fit and for the transform+write. On the GPU each op's time is taken after a
device synchronize, so kernels are charged to the op that launched them.

After the cProfile tables, a summary groups each phase's time into parquet read (pyarrow
decode), Arrow -> pandas, the ops (from ``op_timer``, both on pandas and on the Arrow path of
``tabprep.workflow.fusion``), pandas -> Arrow, Arrow <-> host columns (the Arrow path), parquet
write (pyarrow encode + file write), memory release and the rest (dask, Python glue). cProfile
inflates Python-heavy code (pandas glue) more than C code: compare phases of one run, or use
``--scheduler threads`` / ``criteo.py`` for totals. ``--scheduler threads``
runs the job without cProfile on dask's threaded scheduler (what ``criteo.py`` runs) and prints
only the wall times and the per-op seconds summed over threads. For GIL-held time, sample the
threaded run with py-spy, once with ``--gil`` (only samples of a thread holding the GIL)::

    py-spy record -r 200 -f raw -o all.txt -- python benchmarks/profile_job.py --data D --scheduler threads
    py-spy record -r 200 -f raw --gil -o gil.txt -- python benchmarks/profile_job.py --data D --scheduler threads
"""
from __future__ import annotations

import argparse
import atexit
import cProfile
import io
import os
import pstats
import shutil
import tempfile
import time
from collections import defaultdict

CATS = [f"C{i}" for i in range(1, 27)]
CONTS = [f"I{i}" for i in range(1, 14)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="folder of parquet files (criteo.py's cache)")
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--part-size", default=None)
    ap.add_argument("--scheduler", default="sync", choices=["sync", "threads"],
                    help="sync (default): cProfile sees every task; threads: no cProfile, wall times only")
    ap.add_argument("--clock", default="wall", choices=["wall", "cpu"],
                    help="wall (default): seconds of wall time; cpu: CPU seconds of the process (all its threads; "
                         "steadier than wall time on a shared, busy machine)")
    args = ap.parse_args()

    import dask

    try:  # dask imports distributed at the first compute: an import, not job time
        import distributed  # noqa: F401
    except ImportError:
        pass

    import tabprep as tp
    from tabprep import ops

    dask.config.set(scheduler=args.scheduler)
    sync = lambda: None  # noqa: E731
    if args.gpu:
        import cupy

        from tabprep.backend import use_rmm_pool

        use_rmm_pool()
        sync = cupy.cuda.Device().synchronize
    totals: dict = defaultdict(float)

    def timer(nid: str, label: str, kind: str, seconds: float, rows: int) -> None:
        t = time.perf_counter()
        sync()
        totals[(label, kind)] += seconds + time.perf_counter() - t

    ds = tp.Dataset(os.path.join(args.data, "*.parquet"), cpu=not args.gpu, part_size=args.part_size)
    cats = CATS >> ops.Categorify()
    conts = CONTS >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize(out_dtype="float32")
    wf = tp.Workflow(cats + conts + ["label"])
    wf.op_timer = timer
    if args.clock == "cpu":
        wf.op_clock = time.thread_time  # CPU seconds of the thread running the op
    out = tempfile.mkdtemp(prefix="tabprep-profile-")
    atexit.register(shutil.rmtree, out, True)   # (its own temporary folder: gone at exit)
    phases = {}
    per_phase: dict = {}
    for name, job in (("fit", lambda: wf.fit(ds)),
                      ("transform+write", lambda: wf.transform(ds).to_parquet(out, overwrite=True))):
        before = dict(totals)
        clock = time.process_time if args.clock == "cpu" else time.perf_counter
        prof = cProfile.Profile(clock) if args.scheduler == "sync" else None
        t = clock()
        t_wall = time.perf_counter()
        if prof:
            prof.enable()
        job()
        sync()
        if prof:
            prof.disable()
        wall = clock() - t
        # the ops only: the (io) read / write rows that a partition's task records are the
        # parquet read and write already counted from cProfile below
        ops_s = sum(v - before.get(k, 0.0) for k, v in totals.items() if k[1] not in ("read", "write"))
        phases[name] = (wall, ops_s, prof)
        per_phase[name] = {k: v - before.get(k, 0.0) for k, v in totals.items() if v - before.get(k, 0.0) > 0}
        print(f"\n===== {name}: {wall:.2f}s {args.clock} ({time.perf_counter() - t_wall:.2f}s wall; "
              f"{ds.npartitions} partitions, {args.scheduler} scheduler)")
        if prof is None:
            continue
        for sort in ("tottime", "cumulative"):
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).sort_stats(sort).print_stats(args.top)
            lines = buf.getvalue().splitlines()
            start = next((i for i, ln in enumerate(lines) if ln.strip().startswith("ncalls")), 0)
            print(f"--- by {sort}")
            print("\n".join(ln[:200] for ln in lines[start:] if ln.strip()))
    if args.scheduler == "sync":
        print(f"\n===== where the time goes (cProfile, sync scheduler; cumulative {args.clock} seconds, % of the phase)")
        for name, (wall, ops_s, prof) in phases.items():
            parts = summarize(prof)
            parts["ops (op_timer)"] = ops_s
            rest = wall - sum(parts.values())
            print(f"--- {name}: {wall:.2f}s")
            for label, sec in list(parts.items()) + [("rest: dask, glue between ops, planning", rest)]:
                print(f"{sec:8.2f}s {100 * sec / wall:5.1f}%  {label}")
    print(f"\n===== {args.clock} seconds per op and phase (device-synchronized on the GPU; threads: summed "
          f"over threads; the fit runs the transforms of the ops before a fitted op too)")
    for name, ops_s in per_phase.items():
        for (label, kind), sec in sorted(ops_s.items(), key=lambda kv: -kv[1]):
            print(f"{sec:8.2f}  {name:16s} {kind:9s}  {label}")


#: (file suffix, function name) -> summary label; the outermost call's cumulative time counts
_SUMMARY = [
    ("parquet read (pyarrow decode)", "pyarrow/parquet/core.py", ("read_row_groups", "read_row_group", "read")),
    ("Arrow -> pandas", "tabprep/backend/parquet.py", ("arrow_to_frame",)),
    ("pandas -> Arrow", "tabprep/backend/frames.py", ("_frame_to_arrow_pandas",)),
    ("Arrow -> host columns (Arrow path)", "tabprep/backend/columns.py", ("host_column_from_arrow",)),
    ("host columns -> Arrow (Arrow path)", "tabprep/backend/columns.py", ("host_column_to_arrow",)),
    ("parquet write (pyarrow encode + write)", "pyarrow/parquet/core.py", ("write_table",)),
    ("release_memory (gc/malloc_trim)", "tabprep/backend/core.py", ("release_memory",)),
]


def summarize(prof: cProfile.Profile) -> dict:
    """Seconds per summary label: the largest cumulative time among the matching functions
    (nested matches, e.g. pyarrow's module-level write_table around ParquetWriter.write_table,
    are not added twice; matches in the same label that are not nested are rare here)."""
    stats = pstats.Stats(prof).stats  # (file, line, func) -> (cc, nc, tt, ct, callers)
    out = {}
    for label, suffix, funcs in _SUMMARY:
        cts = [v[3] for (f, _, fn), v in stats.items() if f.endswith(suffix) and fn in funcs]
        out[label] = max(cts, default=0.0)
    return out


if __name__ == "__main__":
    main()
