"""Data profiles and drift (issue #35): time and anchors.

* ``tp.profile`` of synthetic Criteo (CPU) vs one pyarrow read pass of the same files (all
  columns), best of ``--repeat`` runs, interleaved;
* (both: wall time and this process's CPU time, the steadier figure on a shared machine)
* the training profile's share of ``Workflow.fit`` (the Criteo workflow fitted with
  ``profile=False`` and ``profile=True``, interleaved, best of ``--repeat``);
* ydata-profiling (minimal mode), Evidently and TFDV on a pandas frame of ``--baseline-rows``
  rows, where importable (they are not tabprep dependencies; an absent one is reported);
* drift anchors: a second sample of the same distribution flags nothing; planted shifts (I2
  scaled x3, 30% of C5's values moved to unseen ids, I7's nulls 2% -> 40%) flag exactly I2, C5, I7.

    python3 benchmarks/data_profile.py --rows 2000000 --files 8 --repeat 2 --baseline-rows 100000
"""
from __future__ import annotations

import argparse
import glob
import json
import os
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
                       + (c["continuous"] >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize())
                       + c["label"])


def read_pass(files: List[str]) -> None:
    for f in files:
        pq.read_table(f)


def baselines(frame: Any) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    try:
        from ydata_profiling import ProfileReport

        s = time.perf_counter()
        ProfileReport(frame, minimal=True, progress_bar=False).to_json()
        out["ydata-profiling (minimal)"] = time.perf_counter() - s
    except Exception as exc:  # noqa: BLE001 - reported, not fatal
        out["ydata-profiling (minimal)"] = f"not run: {type(exc).__name__}: {str(exc)[:120]}"
    try:
        from evidently import Report
        from evidently.presets import DataSummaryPreset

        s = time.perf_counter()
        Report([DataSummaryPreset()]).run(frame, None)
        out["evidently DataSummaryPreset"] = time.perf_counter() - s
    except Exception as exc:  # noqa: BLE001
        out["evidently DataSummaryPreset"] = f"not run: {type(exc).__name__}: {str(exc)[:120]}"
    try:
        import tensorflow_data_validation as tfdv

        s = time.perf_counter()
        tfdv.generate_statistics_from_dataframe(frame)
        out["tfdv generate_statistics_from_dataframe"] = time.perf_counter() - s
    except Exception as exc:  # noqa: BLE001
        out["tfdv generate_statistics_from_dataframe"] = f"not run: {type(exc).__name__}: {str(exc)[:120]}"
    return out


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
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--skip-fit", action="store_true")
    args = ap.parse_args()
    work = args.workdir or tempfile.mkdtemp(prefix="tabprep-profile-bench-")
    data = os.path.join(work, "criteo")
    if not os.path.exists(os.path.join(data, "_SUCCESS")):
        generate_criteo(args.rows, data, files=args.files, seed=0)
    files = sorted(glob.glob(os.path.join(data, "*.parquet")))
    cats = criteo_columns()["categorical"]
    res: Dict[str, Any] = {"rows": args.rows, "cpus": os.cpu_count(), "load": os.getloadavg()}
    read_t, prof_t, read_c, prof_c = [], [], [], []
    for _ in range(args.repeat):  # interleaved: the shared machine's load drifts
        read_t.append(best(lambda: read_pass(files), 1, read_c))
        prof_t.append(best(lambda: tp.profile(data, categorical=cats), 1, prof_c))
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
    frame = pq.read_table(files[0]).to_pandas()
    if len(frame) > args.baseline_rows:
        frame = frame.iloc[:args.baseline_rows]
    res["baseline_rows"] = len(frame)
    small = os.path.join(work, "small.parquet")
    frame.to_parquet(small)
    res["tabprep_profile_baseline_rows_s"] = best(lambda: tp.profile(small, categorical=cats), args.repeat)
    res["baselines_s"] = baselines(frame)
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


if __name__ == "__main__":
    main()
