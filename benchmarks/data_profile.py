"""Data profiles and drift (issue #35): time and anchors.

* ``tp.profile`` of synthetic Criteo (CPU) vs one pyarrow read pass of the same files (all
  columns), best of ``--repeat`` runs, interleaved;
* (both: wall time and this process's CPU time, the steadier figure on a shared machine)
* the training profile's share of ``Workflow.fit`` (the Criteo workflow fitted with
  ``profile=False`` and ``profile=True``, interleaved, best of ``--repeat``; with ``--fit-pairs N``
  also the median of N interleaved pairs' ratios);
* (``--profile-share N``) the training profile's own CPU time in a fit, instrumented (scheduler
  ``sync``), and its share of a ``profile=False`` fit's CPU time (the steadier figure);
* ydata-profiling (minimal mode), Evidently (DataSummaryPreset) and TFDV
  (``generate_statistics_from_dataframe``) on the first ``--baseline-rows`` rows as one pandas
  frame (read before their clock starts), each in a child process, beside ``tp.profile`` of the
  same rows as a parquet file; a Markdown table of the ratios. They are not tabprep dependencies
  and pin other numpy/pandas/pyarrow versions: install each in its own virtual environment and
  name its interpreter with ``--tool-python MODULE=PYTHON``; an absent one is reported as
  ``not run`` with the reason;
* drift anchors: a second sample of the same distribution flags nothing; planted shifts (I2
  scaled x3, 30% of C5's values moved to unseen ids, I7's nulls 2% -> 40%) flag exactly I2, C5, I7.

    python3 benchmarks/data_profile.py --rows 2000000 --files 8 --repeat 2 --baseline-rows 100000
    python3 benchmarks/data_profile.py --rows 10000000 --files 8 --skip-fit --skip-drift --skip-profile \
        --baseline-rows 1000000 --tool-python evidently=/tmp/venv-ev/bin/python \
        --tool-python ydata_profiling=/tmp/venv-yd/bin/python
"""
from __future__ import annotations

import argparse
import atexit
import glob
import json
import os
import shutil
import tempfile
import time
from typing import Any, Dict, List

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import tabprep as tp
from tabprep import ops
from tabprep.io.synthetic import criteo_columns, generate_criteo


def best(fn: Any, repeat: int, cpu: Any = None) -> float:
    """The fastest wall time of ``repeat`` runs; ``cpu`` (a list) gets each run's CPU seconds of
    this process (all threads: steadier than wall time on a shared machine)."""
    times = []
    for _ in range(repeat):
        s, c = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - s)
        if cpu is not None:
            cpu.append(time.process_time() - c)
    return min(times)


def criteo_workflow() -> tp.Workflow:
    c = criteo_columns()
    return tp.Workflow((c["categorical"] >> ops.Categorify())
                       + (c["continuous"] >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize(out_dtype="float32"))
                       + c["label"])


def profile_share(data: str, fits: int) -> Dict[str, Any]:
    """The training profile's own CPU time in ``fits`` fits (dask's ``sync`` scheduler, one thread:
    the process's CPU time is the work's): the time spent in the profile's partials (fusion's
    hook and ``fit_partial``), merges, finalize and the fit's exact counts added at the end, by
    wrapping them; with the CPU time of as many ``profile=False`` fits, interleaved. Steadier than
    the difference of two fits' times on a shared machine: it counts only the profile's work."""
    import statistics

    import dask

    from tabprep.stats import profile as prof
    from tabprep.workflow import workflow as wfmod

    spent = [0.0]

    def timed(fn: Any) -> Any:
        def run(*a: Any, **k: Any) -> Any:
            start = time.process_time()
            try:
                return fn(*a, **k)
            finally:
                spent[0] += time.process_time() - start
        return run

    saved = {n: getattr(prof.ProfileStat, n) for n in ("fit_partial", "fit_combine", "fit_finalize", "column_hook")}
    saved_complete = getattr(wfmod, "complete_profile", None)
    try:
        for n in ("fit_partial", "fit_combine", "fit_finalize"):
            setattr(prof.ProfileStat, n, timed(saved[n]))
        prof.ProfileStat.column_hook = lambda self, done: timed(saved["column_hook"](self, done))
        if saved_complete is not None:
            wfmod.complete_profile = timed(saved_complete)
        own, off = [], []
        with dask.config.set(scheduler="sync"):
            criteo_workflow().fit(data, profile=True)  # (warm)
            for _ in range(fits):
                spent[0] = 0.0
                criteo_workflow().fit(data, profile=True)
                own.append(spent[0])
                c = time.process_time()
                criteo_workflow().fit(data, profile=False)
                off.append(time.process_time() - c)
    finally:
        for n, fn in saved.items():
            setattr(prof.ProfileStat, n, fn)
        if saved_complete is not None:
            wfmod.complete_profile = saved_complete
    return {"profile_own_cpu_s": statistics.median(own), "fit_cpu_s_sync": statistics.median(off),
            "profile_own_share": statistics.median(own) / statistics.median(off)}


def read_pass(files: List[str]) -> None:
    for f in files:
        pq.read_table(f)


#: each tool's profile of a pandas frame (the frame read before the clock starts); run in a child
#: process (``--tool-python TOOL=PYTHON``: each may live in its own virtual environment, since
#: they pin other numpy/pandas/pyarrow versions than tabprep's)
TOOLS = {
    "ydata-profiling (minimal)": ("ydata_profiling",
                                  "from ydata_profiling import ProfileReport\n"
                                  "run = lambda f: ProfileReport(f, minimal=True, progress_bar=False).to_json()"),
    "evidently DataSummaryPreset": ("evidently",
                                    "from evidently import Report\nfrom evidently.presets import DataSummaryPreset\n"
                                    "run = lambda f: Report([DataSummaryPreset()]).run(f, None)"),
    "tfdv generate_statistics_from_dataframe": ("tensorflow_data_validation",
                                                "import tensorflow_data_validation as tfdv\n"
                                                "run = lambda f: tfdv.generate_statistics_from_dataframe(f)"),
}

_CHILD = """
import json, sys, time, importlib, importlib.metadata as md
import pyarrow.parquet as pq
module, setup, path = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    exec(setup)
    frame = pq.read_table(path).to_pandas()
    s, c = time.perf_counter(), time.process_time()
    run(frame)
    wall, cpu = time.perf_counter() - s, time.process_time() - c
    dist = {"ydata_profiling": "ydata-profiling", "tensorflow_data_validation": "tensorflow-data-validation"}.get(module, module)
    print(json.dumps({"wall_s": wall, "cpu_s": cpu, "version": md.version(dist), "rows": len(frame)}))
except BaseException as exc:
    print(json.dumps({"error": f"{type(exc).__name__}: {str(exc)[:300]}"}))
"""


def baselines(path: str, pythons: Dict[str, str]) -> Dict[str, Any]:
    """Each tool of :data:`TOOLS` on the parquet file ``path`` (read into pandas before the clock
    starts), in a child process of the python ``pythons[module]`` (default: this one). A tool that
    is absent, fails or runs out of memory is reported as ``not run: <why>``."""
    import subprocess
    import sys

    out: Dict[str, Any] = {}
    for name, (module, setup) in TOOLS.items():
        py = pythons.get(module, sys.executable)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # (the child's own site-packages)
        try:
            proc = subprocess.run([py, "-c", _CHILD, module, setup, path], capture_output=True, text=True, env=env,
                                  timeout=3600)
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
            last = [ln for ln in proc.stderr.splitlines() if ln.strip()][-1:] or [""]  # (the exception's line)
            res = json.loads(lines[-1]) if lines else {"error": f"exit {proc.returncode}: {last[0][-300:]}"}
        except Exception as exc:  # noqa: BLE001 - reported, not fatal
            res = {"error": f"{type(exc).__name__}: {exc}"}
        out[name] = res if "error" not in res else f"not run ({py}): {res['error']}"
    return out


def comparison_table(tabprep_s: Dict[str, float], tools: Dict[str, Any], rows: int) -> str:
    """The comparison as a Markdown table: each tool's time and its ratio to tabprep's (wall and
    CPU), and the fastest tool's ratio (the issue's goal: >= 5x)."""
    lines = [f"| tool ({rows} rows) | version | wall s | CPU s | wall / tabprep | CPU / tabprep |", "|---|---|---|---|---|---|",
             f"| tabprep tp.profile (reads the parquet file too) | | {tabprep_s['wall_s']:.2f} | {tabprep_s['cpu_s']:.2f} | 1 | 1 |"]
    ran = {n: r for n, r in tools.items() if isinstance(r, dict)}
    for name, r in tools.items():
        if isinstance(r, dict):
            lines.append(f"| {name} | {r['version']} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | "
                         f"{r['wall_s'] / tabprep_s['wall_s']:.1f}x | {r['cpu_s'] / tabprep_s['cpu_s']:.1f}x |")
        else:
            lines.append(f"| {name} | absent | {r} | | | |")
    if ran:
        for clock in ("wall_s", "cpu_s"):
            fastest = min(ran, key=lambda n: ran[n][clock])
            lines.append(f"{'' if clock == 'cpu_s' else chr(10)}fastest other tool by {clock[:-2]} time: {fastest}, "
                         f"{ran[fastest][clock] / tabprep_s[clock]:.1f}x tabprep's (goal: >= 5x)")
    else:
        lines.append("\nno other tool ran: no ratio")
    return "\n".join(lines)


def planted(src: str, dst: str, seed: int, shift: bool) -> None:
    """A copy of ``src``'s rows (resampled with ``seed``) with the planted shifts when ``shift``."""
    t = pq.read_table(src)
    rng = np.random.default_rng(seed)
    n = t.num_rows
    if shift:
        import pyarrow.compute as pc

        def put(table: pa.Table, name: str, col: Any) -> pa.Table:
            return table.set_column(table.schema.get_field_index(name), name, col)

        t = put(t, "I2", pc.multiply(t.column("I2"), 3))
        moved = pa.array(rng.random(n) < 0.3)
        t = put(t, "C5", pc.if_else(moved, pa.array(10**12 + rng.integers(0, 10**6, n)), t.column("C5")))
        t = put(t, "I7", pc.if_else(pa.array(rng.random(n) < 0.4), pa.scalar(None, pa.int64()), t.column("I7")))
    os.makedirs(dst, exist_ok=True)
    pq.write_table(t, os.path.join(dst, "part-0.parquet"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=2_000_000, help="Criteo rows profiled (and fitted)")
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline-rows", type=int, default=200_000, help="rows given to ydata-profiling/Evidently/TFDV")
    ap.add_argument("--tool-python", action="append", default=[], metavar="MODULE=PYTHON",
                    help="run a tool with another interpreter (its own virtual environment), e.g. "
                         "evidently=/tmp/venv-ev/bin/python; modules: ydata_profiling, evidently, tensorflow_data_validation")
    ap.add_argument("--skip-profile", action="store_true", help="skip the tp.profile / read timing")
    ap.add_argument("--skip-drift", action="store_true", help="skip the drift anchors")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--skip-fit", action="store_true")
    ap.add_argument("--profile-share", type=int, default=0, metavar="N",
                    help="also time the training profile's own CPU work in N fits (scheduler sync, instrumented) "
                         "against N profile=False fits: its share of a fit, without the noise of the whole fits")
    ap.add_argument("--fit-pairs", type=int, default=0, metavar="N",
                    help="also time N interleaved (profile=False, profile=True) fit pairs, alternating which goes "
                         "first, and report the median of the pairs' ratios (steadier than best-of on a shared machine)")
    args = ap.parse_args()
    work = args.workdir or tempfile.mkdtemp(prefix="tabprep-profile-bench-")
    if not args.workdir:   # (its own temporary folder: gone at exit, where it stayed with the data)
        atexit.register(shutil.rmtree, work, True)
    data = os.path.join(work, "criteo")
    if not glob.glob(os.path.join(data, "*.parquet")):
        generate_criteo(args.rows, data, files=args.files, seed=0)
    files = sorted(glob.glob(os.path.join(data, "*.parquet")))
    cats = criteo_columns()["categorical"]
    res: Dict[str, Any] = {"rows": args.rows, "cpus": os.cpu_count(), "load": os.getloadavg()}
    read_t, prof_t, read_c, prof_c = [], [], [], []
    for _ in range(0 if args.skip_profile else args.repeat):  # interleaved: the shared machine's load drifts
        read_t.append(best(lambda: read_pass(files), 1, read_c))
        prof_t.append(best(lambda: tp.profile(data, categorical=cats), 1, prof_c))
    if read_t:
        res["pyarrow_read_s"], res["profile_s"] = min(read_t), min(prof_t)
        res["profile_over_read"] = res["profile_s"] / res["pyarrow_read_s"]
        res["pyarrow_read_cpu_s"], res["profile_cpu_s"] = min(read_c), min(prof_c)
        res["profile_over_read_cpu"] = res["profile_cpu_s"] / res["pyarrow_read_cpu_s"]
    if not args.skip_fit:
        off, on, off_c, on_c = [], [], [], []
        for _ in range(args.repeat):
            off.append(best(lambda: criteo_workflow().fit(data, profile=False), 1, off_c))
            on.append(best(lambda: criteo_workflow().fit(data, profile=True), 1, on_c))
        res["fit_s"], res["fit_with_profile_s"] = min(off), min(on)
        res["fit_profile_overhead"] = res["fit_with_profile_s"] / res["fit_s"] - 1
        res["fit_cpu_s"], res["fit_with_profile_cpu_s"] = min(off_c), min(on_c)
        res["fit_profile_overhead_cpu"] = res["fit_with_profile_cpu_s"] / res["fit_cpu_s"] - 1
    if args.fit_pairs:
        import statistics

        wall: Dict[bool, List[float]] = {False: [], True: []}
        cpu: Dict[bool, List[float]] = {False: [], True: []}
        for i in range(args.fit_pairs):
            for prof in ((False, True) if i % 2 == 0 else (True, False)):
                c: List[float] = []
                wall[prof].append(best(lambda: criteo_workflow().fit(data, profile=prof), 1, c))
                cpu[prof].append(c[0])
        res["fit_profile_overhead_median_pair"] = statistics.median(b / a - 1 for a, b in zip(wall[False], wall[True]))
        res["fit_profile_overhead_cpu_median_pair"] = statistics.median(b / a - 1 for a, b in zip(cpu[False], cpu[True]))
    if args.profile_share:
        res.update(profile_share(data, args.profile_share))
    if args.baseline_rows:
        # the first --baseline-rows rows (across files), one parquet file: every tool profiles the same rows
        tables, n = [], 0
        for f in files:
            if n >= args.baseline_rows:
                break
            tables.append(pq.read_table(f))
            n += tables[-1].num_rows
        head = pa.concat_tables(tables).slice(0, args.baseline_rows)
        del tables
        res["baseline_rows"] = head.num_rows
        small = os.path.join(work, f"head-{head.num_rows}.parquet")
        pq.write_table(head, small)
        del head
        tab_c: List[float] = []
        wall = best(lambda: tp.profile(small, categorical=cats), args.repeat, tab_c)
        res["tabprep_profile_baseline_rows_s"] = {"wall_s": wall, "cpu_s": min(tab_c)}
        pythons = dict(kv.split("=", 1) for kv in args.tool_python)
        res["baselines_s"] = baselines(small, pythons)
        table = comparison_table(res["tabprep_profile_baseline_rows_s"], res["baselines_s"], res["baseline_rows"])
    else:
        table = ""
    if not args.skip_drift:
        # drift anchors: reference = the first file's workflow fit; current = another file, as is / shifted
        ref_dir = os.path.join(work, "ref")
        planted(files[0], ref_dir, 1, False)
        wf = criteo_workflow().fit(ref_dir, profile=True)
        same, shifted = os.path.join(work, "same"), os.path.join(work, "shifted")
        planted(files[1], same, 2, False)
        planted(files[1], shifted, 3, True)
        res["drift_same_flagged"] = tp.drift(wf, same).drifted
        rep = tp.drift(wf, shifted)
        res["drift_planted_flagged"] = sorted(rep.drifted)
        res["drift_planted_metrics"] = {c: rep.columns[c]["metrics"] for c in ("I2", "C5", "I7")}
    print(json.dumps(res, indent=1, default=str))
    if table:
        print(table)


if __name__ == "__main__":
    main()
