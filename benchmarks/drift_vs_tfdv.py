"""Drift anchors against TensorFlow Data Validation (issue #35): tabprep's L-infinity distance
(category frequencies) and Jensen-Shannon divergence (numeric columns) beside TFDV's, on the same
data with planted shifts.

Data: synthetic Criteo; the reference is one file's rows, the current data another file's rows
as they are ("same": a second sample of the same distribution) and with the planted shifts of
``benchmarks/data_profile.py`` ("shifted": I2 scaled x3, 30% of C5's values moved to unseen ids,
I7's nulls 2% -> 40%). Controls: I1 and C1 (not shifted).

TFDV runs in its own virtual environment (it pins TensorFlow 2.16 and pandas 1.5, not tabprep's):
``--tfdv-python`` names its interpreter. Its side reads the parquet files into pandas (the id
columns as strings, so that TFDV counts them as categories: its L-infinity reads the string
statistics' rank histogram), runs ``generate_statistics_from_dataframe`` on each, infers the
schema from the reference, sets a ``drift_comparator`` on every column (``infinity_norm`` for the
id columns, ``jensen_shannon_divergence`` for the numeric ones) with a threshold of 1e-12 so that
every value is reported (TFDV reports a value only with an anomaly), and runs
``validate_statistics(current, schema, previous_statistics=reference)``; it hands back, as JSON,
the ``drift_skew_info`` values and the statistics they were computed from (standard histograms,
rank histograms, missing counts).

This side profiles the same files exactly (``sample_every=1``), runs ``tp.drift`` and computes
what is comparable (see ``docs/guide/data-quality.md``, "Against TFDV"):

* L-infinity. TFDV: ``max |a(v)/A - b(v)/B|`` over the values of the rank histograms (the top
  ``num_rank_histogram_buckets`` = 1000 values of each side), ``A``/``B`` the sums of the counts in
  each histogram. tabprep: the same maximum with ``A``/``B`` the number of non-null values. They
  are the same number when each histogram lists every value of its side; where one is cut (more
  than 1000 distinct values), TFDV's shares are of the listed values only. Checked: tabprep's
  ``linf_distance`` on TFDV's rank histograms (TFDV's normalization) and on exact value counts
  cut TFDV's way equal TFDV's value; tabprep's value equals the exact one from value counts.
* Jensen-Shannon. TFDV: on its STANDARD histograms (10 equal-width buckets between each side's
  min and max), aligned on the union of both sides' bucket boundaries (mass spread uniformly
  within a bucket), base 2. tabprep: on the reference's 20 quantile bins plus two outer bins,
  masses from the KLL sketches' CDFs. Different bins give different numbers (not comparable);
  checked: tabprep's ``js_divergence`` on TFDV's aligned histograms equals TFDV's value, tabprep's
  value equals scipy's ``jensenshannon(p, q, base=2) ** 2`` on its bins, and the exact masses of
  the data on those bins give the value within the KLL sketch's rank error.

    python3 benchmarks/drift_vs_tfdv.py --tfdv-python /tmp/tfdv-venv/bin/python --rows 500000
"""
from __future__ import annotations

import argparse
import atexit
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Dict, List, Tuple

import numpy as np
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data_profile import planted  # noqa: E402

import tabprep as tp  # noqa: E402
from tabprep.io.synthetic import generate_criteo  # noqa: E402
from tabprep.quality.drift import js_divergence, linf_distance  # noqa: E402

NUMERIC = ["I1", "I2", "I7"]
CATEGORICAL = ["C1", "C5"]
#: TFDV's StatsOptions default (values listed in a string column's rank histogram)
RANK_BUCKETS = 1000  # (noted in the results; TFDV applies it)

_CHILD = r"""
import json, sys, warnings
warnings.filterwarnings("ignore")
import pandas as pd, pyarrow.parquet as pq
import tensorflow_data_validation as tfdv
import importlib.metadata as md
ref_path, cur_path, numeric, categorical = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])

def frame(path):
    df = pq.read_table(path, columns=numeric + categorical).to_pandas()
    for c in categorical:  # ids as strings: TFDV's categorical statistics (rank histogram)
        df[c] = [None if v != v else str(int(v)) for v in df[c]]
    return df

ref, cur = (tfdv.generate_statistics_from_dataframe(frame(p)) for p in (ref_path, cur_path))
schema = tfdv.infer_schema(ref)
for c in categorical:
    tfdv.get_feature(schema, c).drift_comparator.infinity_norm.threshold = 1e-12
for c in numeric:
    tfdv.get_feature(schema, c).drift_comparator.jensen_shannon_divergence.threshold = 1e-12
anomalies = tfdv.validate_statistics(cur, schema, previous_statistics=ref)
out = {"version": md.version("tensorflow-data-validation"), "drift": {}, "ref": {}, "cur": {}}
for info in anomalies.drift_skew_info:
    for m in info.drift_measurements:
        out["drift"][info.path.step[0]] = {"type": type(m).Type.Name(m.type), "value": m.value}

def stats(s):
    res = {}
    for f in s.datasets[0].features:
        name = f.path.step[0]
        if f.HasField("num_stats"):
            h = [h for h in f.num_stats.histograms if h.type == h.STANDARD][0]
            res[name] = {"missing": f.num_stats.common_stats.num_missing,
                         "present": f.num_stats.common_stats.num_non_missing,
                         "histogram": [[b.low_value, b.high_value, b.sample_count] for b in h.buckets],
                         "num_nan": h.num_nan}
        else:
            res[name] = {"missing": f.string_stats.common_stats.num_missing,
                         "present": f.string_stats.common_stats.num_non_missing,
                         "unique": f.string_stats.unique,
                         "rank_histogram": [[b.label, b.sample_count] for b in f.string_stats.rank_histogram.buckets]}
    return res

out["ref"], out["cur"] = stats(ref), stats(cur)
print(json.dumps(out))
"""


def run_tfdv(python: str, ref: str, cur: str) -> Dict[str, Any]:
    """TFDV's side (module docstring) in the interpreter ``python``; its JSON answer."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([python, "-c", _CHILD, ref, cur, json.dumps(NUMERIC), json.dumps(CATEGORICAL)],
                          capture_output=True, text=True, env=env, timeout=3600)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"TFDV's side failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(lines[-1])


# -- TFDV's numbers recomputed here ------------------------------------------------------------
def _shares(counts: Dict[Any, float], total: float) -> Dict[Any, float]:
    return {k: v / total for k, v in counts.items()}


def linf_tfdv_way(ref: Dict[str, float], cur: Dict[str, float]) -> float:
    """L-infinity of two value -> count maps, each normalized by its own sum (TFDV's
    ``kSeparateTotal``), with tabprep's ``linf_distance``."""
    return linf_distance(_shares(ref, sum(ref.values())), _shares(cur, sum(cur.values())))


def top_counts(values: np.ndarray, k: int) -> Dict[str, float]:
    """The ``k`` most frequent values (as strings, as TFDV labels them) with their exact counts."""
    uniq, counts = np.unique(values, return_counts=True)
    order = np.argsort(-counts, kind="stable")[:k]
    return {str(int(uniq[i])): float(counts[i]) for i in order}


def _count_error(listed: Dict[str, float], values: np.ndarray) -> float:
    """The largest ``|listed count - exact count|`` over the values a rank histogram lists."""
    exact = top_counts(values, values.size)
    return max((abs(c - exact.get(k, 0.0)) for k, c in listed.items()), default=0.0)


def align_tfdv_way(h1: Dict[str, Any], h2: Dict[str, Any]) -> Tuple[np.ndarray, np.ndarray]:
    """Two STANDARD histograms (``[[low, high, count], ...]`` and ``num_nan``) as bucket masses on
    common buckets, as TFDV's Jensen-Shannon aligns them (its documented behaviour, written here
    from scratch): buckets with an infinite bound and zero-width (point) buckets are set aside;
    the others are split on the union of both sides' boundaries, a bucket's count spread over
    the new buckets in proportion to their widths; then one bucket per point value, one per
    side's infinite mass (the other side 0 there) and, when either has NaN, two NaN buckets that
    never match (``[0, nan1]`` against ``[nan2, 0]``)."""
    def split(h: Dict[str, Any]):
        regular, points, inf = [], {}, 0.0
        for lo, hi, c in h["histogram"]:
            if not (np.isfinite(lo) and np.isfinite(hi)):
                inf += c
            elif lo == hi:
                points[lo] = points.get(lo, 0.0) + c
            else:
                regular.append((lo, hi, c))
        return regular, points, inf

    r1, p1, inf1 = split(h1)
    r2, p2, inf2 = split(h2)
    bounds = sorted({b for lo, hi, _ in r1 + r2 for b in (lo, hi)})

    def rebucket(regular):
        out = np.zeros(max(len(bounds) - 1, 0))
        for lo, hi, c in regular:
            for i in range(len(bounds) - 1):
                a, b = max(lo, bounds[i]), min(hi, bounds[i + 1])
                if b > a:
                    out[i] += c * (b - a) / (hi - lo)
        return out

    m1, m2 = list(rebucket(r1)), list(rebucket(r2))
    for v in sorted(set(p1) | set(p2)):
        m1.append(p1.get(v, 0.0))
        m2.append(p2.get(v, 0.0))
    if inf1:
        m1.append(inf1)
        m2.append(0.0)
    if inf2:
        m1.append(0.0)
        m2.append(inf2)
    if h1["num_nan"] > 0 or h2["num_nan"] > 0:
        m1 += [0.0, h1["num_nan"]]
        m2 += [h2["num_nan"], 0.0]
    return np.asarray(m1), np.asarray(m2)


def exact_bin_masses(values: np.ndarray, edges: List[float]) -> np.ndarray:
    """Masses of ``values`` in ``(-inf, e0], (e0, e1], ..., (ek, inf)`` (tabprep's bins), exactly."""
    idx = np.searchsorted(np.asarray(edges), values, side="left")
    return np.bincount(idx, minlength=len(edges) + 1) / values.size


def column_values(path: str, column: str) -> np.ndarray:
    return pq.read_table(path, columns=[column]).column(column).drop_null().to_numpy()


def compare(name: str, ref_path: str, cur_path: str, python: str) -> Dict[str, Any]:
    """Both sides on one pair of files; a dict per column."""
    from scipy.spatial.distance import jensenshannon

    tf = run_tfdv(python, ref_path, cur_path)
    cols = NUMERIC + CATEGORICAL
    pr = tp.profile(ref_path, columns=cols, categorical=CATEGORICAL, sample_every=1)
    pc_ = tp.profile(cur_path, columns=cols, categorical=CATEGORICAL, sample_every=1)
    rep = tp.drift(pr, pc_)
    out: Dict[str, Any] = {"tfdv_version": tf["version"], "flagged_by_tabprep": sorted(rep.drifted), "columns": {}}
    for c in cols:
        m = rep.columns[c]["metrics"]
        row: Dict[str, Any] = {"tabprep_null_rate_change": m.get("null_rate"),
                               "tfdv_null_rate_change": abs(tf["cur"][c]["missing"] / (tf["cur"][c]["missing"] + tf["cur"][c]["present"])
                                                            - tf["ref"][c]["missing"] / (tf["ref"][c]["missing"] + tf["ref"][c]["present"]))}
        tv = tf["drift"].get(c, {}).get("value", 0.0)  # (absent: 0, not above 1e-12)
        ref_v, cur_v = column_values(ref_path, c), column_values(cur_path, c)
        if c in CATEGORICAL:
            rh = {lab: cnt for lab, cnt in tf["ref"][c]["rank_histogram"]}
            ch = {lab: cnt for lab, cnt in tf["cur"][c]["rank_histogram"]}
            exact = linf_distance(_shares(top_counts(ref_v, ref_v.size), ref_v.size),
                                  _shares(top_counts(cur_v, cur_v.size), cur_v.size))
            row.update({
                "tfdv_linf": tv, "tabprep_linf": m.get("linf"), "difference": (m.get("linf") or 0.0) - tv,
                "tabprep_linf_on_tfdv_rank_histograms": linf_tfdv_way(rh, ch),
                "exact_linf_tabprep_normalization": exact,
                # TFDV's counts are its top-k sketch's: estimates once a side has more distinct values
                # than its sketch holds, and the histogram lists the first RANK_BUCKETS values only
                "tfdv_rank_histogram_sums_vs_present": [[sum(rh.values()), tf["ref"][c]["present"]],
                                                        [sum(ch.values()), tf["cur"][c]["present"]]],
                "tfdv_count_error_max": max(_count_error(rh, ref_v), _count_error(ch, cur_v)),
                "tabprep_count_error_bound": [pr[c]["frequent_error"], pc_[c]["frequent_error"]],
                "distinct_ref": int(np.unique(ref_v).size), "distinct_cur": int(np.unique(cur_v).size),
                "rank_histogram_sizes": [len(rh), len(ch)]})
            row["tfdv_check"] = row["tabprep_linf_on_tfdv_rank_histograms"] - tv
            row["tabprep_check"] = (m.get("linf") or 0.0) - exact
        else:
            p, q = align_tfdv_way({"histogram": tf["ref"][c]["histogram"], "num_nan": tf["ref"][c]["num_nan"]},
                                  {"histogram": tf["cur"][c]["histogram"], "num_nan": tf["cur"][c]["num_nan"]})
            on_tfdv = min(js_divergence(p, q), 1.0)  # (TFDV caps at 1)
            bins = rep.columns[c].get("bins", {})
            edges = bins.get("edges")
            row.update({"tfdv_js": tv, "tabprep_js": m.get("js"), "difference": (m.get("js") or 0.0) - tv,
                        "tabprep_js_on_tfdv_histograms": on_tfdv,
                        "scipy_js_on_tfdv_histograms": float(jensenshannon(p, q, base=2) ** 2),
                        "tfdv_check": on_tfdv - tv})
            if edges:
                pb, qb = np.asarray(bins["reference"]), np.asarray(bins["current"])
                ex = js_divergence(exact_bin_masses(ref_v, edges), exact_bin_masses(cur_v, edges))
                row.update({"scipy_js_on_tabprep_bins": float(jensenshannon(pb, qb, base=2) ** 2),
                            "exact_js_on_tabprep_bins": ex,
                            "tabprep_check": (m.get("js") or 0.0) - float(jensenshannon(pb, qb, base=2) ** 2),
                            "kll_effect": (m.get("js") or 0.0) - ex})
        out["columns"][c] = row
    return out


def table(name: str, res: Dict[str, Any]) -> str:
    lines = [f"\n{name} (TFDV {res['tfdv_version']}; tabprep flags {res['flagged_by_tabprep']})",
             "| column | metric | TFDV | tabprep | tabprep - TFDV | tabprep's formula on TFDV's statistics - TFDV | "
             "tabprep - scipy / exact counts (same bins) | tabprep - exact data masses (same bins) |",
             "|---|---|---|---|---|---|---|---|"]
    for c, r in res["columns"].items():
        metric = "L-inf" if "tfdv_linf" in r else "JS"
        t, mine = (r["tfdv_linf"], r["tabprep_linf"]) if metric == "L-inf" else (r["tfdv_js"], r["tabprep_js"])
        lines.append(f"| {c} | {metric} | {t:.9f} | {(mine or 0.0):.9f} | {r['difference']:+.2e} | "
                     f"{r['tfdv_check']:+.2e} | {r.get('tabprep_check', float('nan')):+.2e} | "
                     f"{r.get('kll_effect', r.get('tabprep_check', float('nan'))):+.2e} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tfdv-python", required=True, help="the interpreter of a virtual environment with TFDV")
    ap.add_argument("--rows", type=int, default=500_000, help="Criteo rows generated (2 files: reference, current)")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--json", default=None, help="write the full results here")
    args = ap.parse_args()
    work = args.workdir or tempfile.mkdtemp(prefix="tabprep-drift-tfdv-")
    if not args.workdir:   # (its own temporary folder: gone at exit, where it stayed with the data)
        atexit.register(shutil.rmtree, work, True)
    data = os.path.join(work, "criteo")
    if not glob.glob(os.path.join(data, "*.parquet")):
        generate_criteo(args.rows, data, files=2, seed=0)
    files = sorted(glob.glob(os.path.join(data, "*.parquet")))
    ref, same, shifted = (os.path.join(work, d) for d in ("ref", "same", "shifted"))
    planted(files[0], ref, 1, False)
    planted(files[1], same, 2, False)
    planted(files[1], shifted, 3, True)
    results = {}
    for name, cur in (("same distribution", same), ("planted shifts (I2 x3, C5 30% unseen ids, I7 nulls 2% -> 40%)", shifted)):
        results[name] = compare(name, os.path.join(ref, "part-0.parquet"), os.path.join(cur, "part-0.parquet"),
                                args.tfdv_python)
        print(table(name, results[name]))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1, default=float)
    print(json.dumps(results, indent=1, default=float))


if __name__ == "__main__":
    main()
