"""Cold start of a fresh GPU worker: the Criteo job with empty kernel caches versus warm ones (issue 16).

    python benchmarks/cold_start.py --rows 50000000 --gen-procs 16      # GPU machine

A new cloud node, container or CI runner starts with an empty CuPy kernel cache
(``CUPY_CACHE_DIR``, default ``~/.cupy/kernel_cache``) and an empty libcudf JIT cache
(``LIBCUDF_KERNEL_CACHE_PATH``). Every CuPy element-wise/reduction kernel that the job touches is
then compiled by NVRTC on first use (0.2-1 s each), while libcudf's precompiled operations cost
nothing extra. This script runs the canonical Criteo job (as ``criteo.py --gpu``) in fresh
processes:

* ``cold``: each run gets new, empty cache folders (``--cold-runs``, default 2);
* ``warm``: the same job again, reusing the last cold run's caches (``--warm-runs``, default 2).

It prints fit, transform+write and total seconds for each, the cold/warm ratio (goal <= 1.3) and,
for the cold runs, every kernel compiled at run time: the count, the seconds spent compiling and
the tabprep call sites (the innermost tabprep frame of the stack that asked CuPy to compile),
which is where to replace a CuPy kernel by a libcudf operation.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from criteo import CATS, CONTS, ensure_data  # noqa: E402 - the same cached data as criteo.py


def _track_compiles() -> dict:
    """Wrap CuPy's compile-with-cache entry points; record time and tabprep call site of each miss."""
    import cupy.cuda.compiler as comp

    record: dict = {"n": 0, "seconds": 0.0, "sites": collections.Counter(), "site_s": collections.Counter()}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

    def wrap(name: str) -> None:
        fn = getattr(comp, name, None)
        if fn is None:
            return

        def wrapped(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                dt = time.perf_counter() - t
                if dt > 0.02:  # a cache hit on disk takes ~1 ms; an NVRTC compile 100+ ms
                    stack = traceback.extract_stack()
                    site = "?"
                    if threading.current_thread().name.startswith("tabprep-cupy-warmup"):
                        stack = []  # compiled ahead by tabprep.backend.gpu_warmup, off the job's threads
                        site = "(background warm-up thread: tabprep/backend/gpu_warmup.py)"
                    for fr in reversed(stack):
                        if fr.filename.startswith(root) and "cold_start" not in fr.filename:
                            site = f"{os.path.relpath(fr.filename, root)}:{fr.lineno} {fr.name}"
                            break
                    else:
                        for fr in reversed(stack):
                            if "cudf" in fr.filename or "dask" in fr.filename:
                                site = f"{fr.filename.split('site-packages/')[-1]}:{fr.lineno} {fr.name}"
                                break
                    record["n"] += 1
                    record["seconds"] += dt
                    record["sites"][site] += 1
                    record["site_s"][site] += dt

        setattr(comp, name, wrapped)

    for name in ("_compile_module_with_cache", "compile_with_cache"):
        wrap(name)
    return record


def run_job(data: str, out: str) -> dict:
    t_import = time.perf_counter()
    import cupy  # noqa: F401

    record = _track_compiles()
    import tabprep as tp
    from tabprep import ops
    from tabprep.backend import use_rmm_pool

    use_rmm_pool()
    t0 = time.perf_counter()
    ds = tp.Dataset(os.path.join(data, "*.parquet"), cpu=False)
    cats = CATS >> ops.Categorify()
    conts = CONTS >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize(out_dtype="float32")
    wf = tp.Workflow(cats + conts + ["label"])
    wf.fit(ds)
    t1 = time.perf_counter()
    meta = wf.transform(ds).to_parquet(out, overwrite=True)
    t2 = time.perf_counter()
    return {"import_s": t0 - t_import, "fit_s": t1 - t0, "transform_write_s": t2 - t1, "total_s": t2 - t0,
            "rows": meta["rows"], "compiles": record["n"], "compile_s": record["seconds"],
            "sites": sorted(((s, n, record["site_s"][s]) for s, n in record["sites"].items()),
                            key=lambda x: -x[2])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=float, default=5e7)
    ap.add_argument("--files", type=int, default=0)
    ap.add_argument("--gen-procs", type=int, default=1)
    ap.add_argument("--cold-runs", type=int, default=2)
    ap.add_argument("--warm-runs", type=int, default=2)
    ap.add_argument("--data-root", default=os.path.join(tempfile.gettempdir(), "tabprep-bench"))
    ap.add_argument("--phase", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase == "job":
        print("RESULT " + json.dumps(run_job(args.data, args.out)), flush=True)
        return

    rows = int(args.rows)
    files = args.files or max(2, rows // 1_000_000)
    data = ensure_data(rows, args.data_root, files, args.gen_procs)
    work = tempfile.mkdtemp(prefix="tabprep-cold-")
    out = os.path.join(work, "out")
    results = []
    caches = None
    try:
        for kind, n in (("cold", args.cold_runs), ("warm", args.warm_runs)):
            for i in range(n):
                if kind == "cold":
                    caches = {v: tempfile.mkdtemp(prefix=v.lower() + "-", dir=work)
                              for v in ("CUPY_CACHE_DIR", "LIBCUDF_KERNEL_CACHE_PATH", "NUMBA_CACHE_DIR")}
                env = dict(os.environ, **caches)
                t = time.perf_counter()
                p = subprocess.run([sys.executable, os.path.abspath(__file__), "--phase", "job", "--data", data,
                                    "--out", out], env=env, capture_output=True, text=True)
                wall = time.perf_counter() - t
                line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
                if p.returncode or not line:
                    sys.stderr.write(p.stdout[-4000:] + p.stderr[-4000:])
                    raise SystemExit(f"{kind} run {i} failed (exit {p.returncode})")
                r = json.loads(line[0][7:])
                r.update(kind=kind, process_s=wall)
                results.append(r)
                print(f"{kind} {i}: fit {r['fit_s']:.2f} s  transform+write {r['transform_write_s']:.2f} s  "
                      f"job {r['total_s']:.2f} s  (process {wall:.1f} s, imports {r['import_s']:.1f} s)  "
                      f"kernels compiled {r['compiles']} in {r['compile_s']:.1f} s", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    cold = [r for r in results if r["kind"] == "cold"]
    warm = [r for r in results if r["kind"] == "warm"]
    best = lambda rs, k: min(r[k] for r in rs)  # noqa: E731
    print(f"\n{rows:,} rows, {files} files")
    print(f"{'':6s} {'fit s':>8s} {'xform+write s':>14s} {'job s':>8s} {'compiled':>9s}")
    for name, rs in (("cold", cold), ("warm", warm)):
        if rs:
            print(f"{name:6s} {best(rs, 'fit_s'):8.2f} {best(rs, 'transform_write_s'):14.2f} "
                  f"{best(rs, 'total_s'):8.2f} {min(r['compiles'] for r in rs):9d}")
    if cold and warm:
        print(f"cold / warm job: {best(cold, 'total_s') / best(warm, 'total_s'):.2f}x (goal <= 1.3x)")
    if cold:
        print("\nkernels compiled in the first cold run, by tabprep call site (count, seconds):")
        for site, n, s in cold[0]["sites"]:
            print(f"  {n:3d} {s:6.2f} s  {site}")


if __name__ == "__main__":
    main()
