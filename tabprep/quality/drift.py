"""``tp.drift(reference, current)``: per-column drift and training/serving skew between two
profiles, with thresholds and a verdict per column (``drift.json`` + ``index.html``).

Metrics (each compared with its threshold; a column drifts when any metric exceeds it):

* ``js``: Jensen-Shannon divergence (base 2, in [0, 1]) of a numeric column's mass on the
  reference's bins: ``BINS`` quantile bins of the reference (edges its quantiles 0, 1/BINS, ...,
  1 from its KLL sketch, the exact min and max outermost; equal edges merged) plus the two outer
  bins below its min and above its max (22 bins); both sides' masses from their KLL sketches' CDFs.
* ``psi``: population stability index on the same bins (empty bins count as 1e-4).
* ``linf``: L-infinity distance of the value frequencies (TFDV's drift metric): the largest
  ``|p_ref(v) - p_cur(v)|`` over the values of both sides' frequent-value lists (non-null values).
* ``oov_rate``: the share of the current non-null values outside the fitted vocabulary (a saved
  workflow's Categorify) or the reference's complete value list, minus the share a fresh sample
  of the reference distribution is expected to show (Good-Turing: values seen once / values).
* ``null_rate``: the absolute change of the null share.
* ``inf_rate``: the absolute change of the share of +-inf among the rows (numeric columns; the
  bins above see finite values only, so values that became +-inf are caught here).
* ``list_length_psi``: PSI of the list lengths (list columns).
* unchecked: where the reference's frequent-value list is incomplete and no vocabulary gives
  ``oov_rate``, values new in the current cannot be told from two profiles: the column's status
  is ``unchecked`` (not ``ok``, not a drift) with the ``reason``.
* empty: a side with no rows (``empty`` in drift.json names it) gives every column the status
  ``empty``, a drift: nothing compared is never reported as "no drift".
* schema: a column missing from the current data or with another type is a drift; a new column
  is reported (status ``new``) but is not one.
"""
from __future__ import annotations

import json
import math
import os
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .._util import is_number
from .profile import Profile, as_profile, complete_values, profile, reference_of

#: version of the drift.json layout
DRIFT_VERSION = 1
#: quantile bins of the reference for JS / PSI
BINS = 20
#: default thresholds (a metric above its threshold is a drift); documented in docs/guide/data-quality.md
DEFAULT_THRESHOLDS: Dict[str, float] = {"js": 0.05, "psi": 0.2, "linf": 0.1, "oov_rate": 0.05, "null_rate": 0.05,
                                        "inf_rate": 0.05, "list_length_psi": 0.2}
#: what an empty bin counts as in PSI (log of zero otherwise)
PSI_EPS = 1e-4


def js_divergence(p: np.ndarray, q: np.ndarray) -> float:
    """Jensen-Shannon divergence of two distributions (normalized here), base 2 (0..1):
    ``scipy.spatial.distance.jensenshannon(p, q, base=2) ** 2``."""
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    p, q = p / p.sum(), q / q.sum()
    m = (p + q) / 2

    def kl(a: np.ndarray) -> float:
        nz = a > 0
        return float(np.sum(a[nz] * np.log2(a[nz] / m[nz])))

    return max(0.0, (kl(p) + kl(q)) / 2)


def psi(p: np.ndarray, q: np.ndarray, eps: float = PSI_EPS) -> float:
    """Population stability index ``sum((q - p) * ln(q / p))`` of the reference masses ``p`` and
    current masses ``q`` (normalized), empty bins counted as ``eps``."""
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    p = np.maximum(p / p.sum(), eps)
    q = np.maximum(q / q.sum(), eps)
    return float(np.sum((q - p) * np.log(q / p)))


def linf_distance(ref: Dict[Any, float], cur: Dict[Any, float]) -> float:
    """``max |ref[v] - cur[v]|`` over the values of both (a value absent from one is 0 there)."""
    keys = set(ref) | set(cur)
    return max((abs(ref.get(k, 0.0) - cur.get(k, 0.0)) for k in keys), default=0.0)


def reference_edges(col: Dict[str, Any], bins: int = BINS) -> Optional[List[float]]:
    """The bin edges of a numeric column: its reference quantiles ``0, 1 / bins, ..., 1`` (the
    exact min and max outermost; equal edges merged)."""
    from ..stats.sketches import kll_load

    if not col.get("kll"):
        return None
    sk = kll_load(_b64(col["kll"]))
    if sk.is_empty():
        return None
    qs = [float(v) for v in sk.get_quantiles([i / bins for i in range(bins + 1)])]
    # the profile's min / max saw every row (the sketch may have seen a sample)
    lo = col.get("min") if is_number(col.get("min")) else qs[0]
    hi = col.get("max") if is_number(col.get("max")) else qs[-1]
    return sorted({float(lo), float(hi)} | {q for q in qs[1:-1] if lo < q < hi})


def bin_masses(col: Dict[str, Any], edges: List[float]) -> Optional[np.ndarray]:
    """The mass of a numeric column in the bins ``(-inf, e0)`` (below the reference's min),
    ``[e0, e1], (e1, e2], ..., (e(k-1), ek]`` and ``(ek, inf)`` (above its max): ``len(edges) + 1``
    bins (3 for a single edge)."""
    from ..stats.sketches import kll_load

    if not col.get("kll"):
        return None
    sk = kll_load(_b64(col["kll"]))
    if sk.is_empty():
        return None
    below = float(sk.get_cdf([edges[0]], False)[0])  # P(X < e0)
    upto = np.asarray(sk.get_cdf(list(edges[1:] if len(edges) > 1 else edges), True), dtype=np.float64)  # P(X <= e) ..., 1
    return np.maximum(np.diff(np.concatenate([[0.0, below], upto])), 0.0)


def _b64(s: str) -> bytes:
    import base64

    return base64.b64decode(s)


def _freqs(col: Dict[str, Any]) -> Optional[Dict[Any, float]]:
    n = col.get("frequent_n")
    if not n or "frequent" not in col:
        return None
    return {_key(v): c / n for v, c in col["frequent"]}


def _key(v: Any) -> Any:
    # JSON turns tuples into lists and keeps ints and strings apart: a hashable, comparable key
    return tuple(v) if isinstance(v, list) else v


class DriftReport:
    """The result of :func:`drift`: ``doc`` is the ``drift.json`` document; ``drifted`` the
    columns whose verdict is a drift (most drifted first)."""

    def __init__(self, doc: Dict[str, Any], reference: Optional[Profile] = None, current: Optional[Profile] = None) -> None:
        self.doc = doc
        self.reference = reference
        self.current = current

    @property
    def columns(self) -> Dict[str, Dict[str, Any]]:
        return self.doc["columns"]

    @property
    def drifted(self) -> List[str]:
        return [c for c, v in self.columns.items() if v["drift"]]

    @property
    def drift(self) -> bool:
        return bool(self.doc["drift"])

    def __repr__(self) -> str:
        return f"DriftReport({len(self.drifted)} of {len(self.columns)} columns drifted: {self.drifted})"

    def save(self, folder: str) -> str:
        """Write ``drift.json`` and ``index.html`` into ``folder``; returns the HTML path. A
        ``FileExistsError`` (nothing written) when ``folder`` holds an ``index.html`` that is not a
        drift report's page (a profile folder's, or a file tabprep did not write): it is never
        replaced."""
        from .html import check_page, drift_html

        folder = os.fspath(folder)
        html = check_page(folder, "drift")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "drift.json"), "w") as fh:
            json.dump(self.doc, fh, indent=1)
        with open(html, "w", encoding="utf-8") as fh:
            fh.write(drift_html(self))
        return html

    def _repr_html_(self) -> str:
        from .html import drift_html

        return drift_html(self, fragment=True)


def thresholds_for(column: str, thresholds: Optional[Dict[str, Any]]) -> Dict[str, float]:
    """The thresholds of ``column``: the defaults, the global ones given, then its own
    (``thresholds["columns"][column]``)."""
    out = dict(DEFAULT_THRESHOLDS)
    given = dict(thresholds or {})
    per = given.pop("columns", {}) or {}
    for k, v, own in [(k, v, False) for k, v in given.items()] + [(k, v, True) for k, v in (per.get(column) or {}).items()]:
        where = f"drift threshold {k!r}" + (f" for column {column!r}" if own else "")
        if k not in DEFAULT_THRESHOLDS:
            raise ValueError(f"unknown {where}; the thresholds are {sorted(DEFAULT_THRESHOLDS)}")
        out[k] = _threshold(k, where, v, own)
    return out


def _threshold(metric: str, where: str, value: Any, own: bool) -> float:
    """A threshold's value: a number >= 0 (inf: never exceeded). NaN is never exceeded either, so a
    NaN threshold made the report say "no drift" whatever the data; a negative one flagged every column."""
    ok = is_number(value) and not math.isnan(value) and value >= 0
    if not ok:
        hint = (f"; per column: thresholds={{'columns': {{column: {{{metric!r}: value}}}}}}"
                if isinstance(value, dict) and not own else "")
        raise ValueError(f"{where} must be a number >= 0 (inf: never), got {value!r}{hint}")
    return float(value)


def compare_column(ref: Optional[Dict[str, Any]], cur: Optional[Dict[str, Any]], th: Dict[str, float],
                   oov_known: bool = False) -> Dict[str, Any]:
    """The drift entry of one column (``ref`` / ``cur``: profile column dicts; None if absent)."""
    if ref is None:
        return {"status": "new", "drift": False, "metrics": {}, "thresholds": th, "exceeded": [], "score": 0.0,
                "current": _brief(cur)}
    if cur is None:
        return {"status": "missing", "drift": True, "metrics": {}, "thresholds": th, "exceeded": ["schema"],
                "score": math.inf, "reference": _brief(ref)}
    empty = [side for side, col in (("reference", ref), ("current", cur)) if not col.get("count", 0)]
    if empty:  # nothing to compare is not "no drift": its own status, counted as a drift
        return {"status": "empty", "drift": True, "metrics": {}, "thresholds": th, "exceeded": ["empty"],
                "score": math.inf, "reason": f"no data: the {' and the '.join(empty)} has 0 rows",
                "reference": _brief(ref), "current": _brief(cur)}
    metrics: Dict[str, Any] = {}
    out: Dict[str, Any] = {"status": "ok", "reference": _brief(ref), "current": _brief(cur)}
    metrics["null_rate"] = abs(cur["null_rate"] - ref["null_rate"])
    if ref.get("kind") in ("int", "float") or cur.get("kind") in ("int", "float"):
        # +-inf stay out of the KLL sketches (finite values only): their share is its own metric
        metrics["inf_rate"] = abs(cur.get("inf", 0) / cur["count"] - ref.get("inf", 0) / ref["count"])
    edges = reference_edges(ref) if cur.get("kll") else None
    if edges is not None:
        p, q = bin_masses(ref, edges), bin_masses(cur, edges)
        if p is not None and q is not None:
            metrics["js"] = js_divergence(p, q)
            metrics["psi"] = psi(p, q)
            out["bins"] = {"edges": edges, "reference": p.tolist(), "current": q.tolist()}
    # a list column's value frequencies: those of its elements
    vr, vc = (ref.get("values") or {}, cur.get("values") or {}) if ref.get("kind") == "list" else (ref, cur)
    fr, fc = _freqs(vr), _freqs(vc)
    if fr is not None and fc is not None:
        metrics["linf"] = linf_distance(fr, fc)
    if "oov_rate" in cur and (oov_known or "oov_rate" in ref):  # (a column with a vocabulary)
        # beyond what a fresh sample of the training distribution shows (Good-Turing: reference_of)
        metrics["oov_rate"] = max(0.0, cur["oov_rate"] - ref.get("oov_rate_expected", ref.get("oov_rate", 0.0)))
    if "list_length" in ref and "list_length" in cur:
        le = reference_edges(ref["list_length"])
        if le is not None:
            p, q = bin_masses(ref["list_length"], le), bin_masses(cur["list_length"], le)
            if p is not None and q is not None:
                metrics["list_length_psi"] = psi(p, q)
        metrics["list_length_mean_change"] = (cur["list_length"].get("mean") or 0.0) - (ref["list_length"].get("mean") or 0.0)
    exceeded = [k for k, v in metrics.items() if k in th and v > th[k]]
    if fr is not None and fc is not None and "oov_rate" not in metrics and not complete_values(vr):
        # linf over the frequent values cannot see a replaced vocabulary of many rare values (5,000
        # values each once: every share 1/5000); with the reference's complete list oov_rate does
        what = "elements" if vr is not ref else "values"
        out["unchecked"] = ["new_values"]
        out["reason"] = (f"new values unchecked: the reference's frequent-value list holds {len(vr.get('frequent', []))} "
                         f"of ~{vr.get('distinct', '?')} distinct {what}, so {what} the reference never saw cannot be "
                         f"told from two profiles; drift against the fitted workflow (its Categorify vocabulary: oov_rate)")
    retyped = cur.get("dtype") != "unknown" and ref.get("dtype") != cur.get("dtype") and not _same_kind(ref, cur)
    if retyped:
        out["status"] = "retyped"
        exceeded.append("schema")
    out.update({"drift": bool(exceeded), "metrics": metrics, "thresholds": th, "exceeded": exceeded,
                "score": math.inf if retyped else max((metrics[k] / th[k] for k in metrics if th.get(k)), default=0.0)})
    if exceeded and out["status"] == "ok":
        out["status"] = "drift"
    if out["status"] == "ok" and out.get("unchecked"):
        out["status"] = "unchecked"   # (not "ok": a check could not be made; not a drift either)
    return out


def _same_kind(ref: Dict[str, Any], cur: Dict[str, Any]) -> bool:
    # int64 vs int32, or large_string vs string: the same values; kind "other" (timestamps,
    # durations, dates...) lumps types whose values differ (timestamp -> duration, naive -> tz-aware,
    # a unit change): only the same dtype
    return ref.get("kind") == cur.get("kind") and ref.get("kind") not in ("list", "other")


def _brief(col: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    if col is None:
        return {}
    keys = ("dtype", "kind", "count", "nulls", "null_rate", "min", "max", "mean", "std", "time_unit", "min_time", "max_time", "distinct", "oov_rate", "oov_rate_expected",
            "out_of_range_rate", "top", "histogram", "top_share")
    out = {k: col[k] for k in keys if k in col}
    if "frequent" in col:
        out["rank_counts"] = [c for _, c in col["frequent"]]
    if "list_length" in col:
        out["list_length_mean"] = col["list_length"].get("mean")
    return out


def drift(reference: Any, current: Any, thresholds: Optional[Dict[str, Any]] = None,
          columns: Optional[List[str]] = None) -> DriftReport:
    """Compare ``current`` with ``reference`` column by column.

    Args:
        reference: a saved workflow folder or fitted :class:`~tabprep.Workflow` (its training
            profile; its Categorify vocabularies give the OOV share), or a profile (folder,
            ``profile.json``, :class:`Profile`).
        current: data (anything :class:`~tabprep.Dataset` accepts: it is profiled, counting OOV
            against the reference's vocabularies), a :class:`Profile` / profile folder, or the
            ``GET /stats`` document of ``tabprep serve`` (null and OOV rates only).
        thresholds: ``{metric: value, "columns": {column: {metric: value}}}`` over
            :data:`DEFAULT_THRESHOLDS`.
        columns: compare only these (default: every column of either side).
    """
    ref, vocabs = reference_of(reference)
    cur, oov_known = _current(current, ref, vocabs)
    if not oov_known:  # a current profile with complete value lists: its OOV share from them
        for c, v in vocabs.items():
            col = cur.columns.get(c)
            if col is not None and complete_values(col) and "oov_rate" not in col and col.get("frequent_n"):
                known = {_key(x) for x in v}
                col["oov"] = sum(n for x, n in col["frequent"] if _key(x) not in known)
                col["oov_rate"] = col["oov"] / col["frequent_n"]
        oov_known = True
    names = list(ref.columns) + [c for c in cur.columns if c not in ref.columns]
    unknown = [c for c in ((thresholds or {}).get("columns") or {}) if c not in names]
    if unknown:   # (a typo's thresholds were never used, silently)
        raise KeyError(f"thresholds for columns {unknown}, which neither profile has; the columns are {names}")
    if columns is not None:
        unknown = [c for c in columns if c not in names]
        if unknown:   # (a typo gave an empty report: no drift)
            raise KeyError(f"drift(columns=...): {unknown} in neither profile; the columns are {names}")
        names = [c for c in names if c in set(columns)]
    entries = {c: compare_column(ref.columns.get(c), cur.columns.get(c), thresholds_for(c, thresholds),
                                 oov_known=c in vocabs and oov_known)
               for c in names}
    order = sorted(entries, key=lambda c: (-entries[c]["score"], c))
    doc = {"format": "tabprep-drift", "version": DRIFT_VERSION, "reference": ref.source, "current": cur.source,
           "rows": {"reference": ref.rows, "current": cur.rows},
           "thresholds": {k: v for k, v in {**DEFAULT_THRESHOLDS, **(thresholds or {})}.items() if k != "columns"},
           # a side with no rows: every column's status is "empty", a drift (never "no drift")
           "empty": [side for side, p in (("reference", ref), ("current", cur)) if not p.rows],
           "drift": any(e["drift"] for e in entries.values()) or not ref.rows or not cur.rows, "drifted": [c for c in order if entries[c]["drift"]],
           "unchecked": [c for c in order if entries[c].get("unchecked")],
           "columns": {c: _json_safe(entries[c]) for c in order}}
    return DriftReport(doc, ref, cur)


def _json_safe(entry: Dict[str, Any]) -> Dict[str, Any]:
    if isinstance(entry.get("score"), float) and math.isinf(entry["score"]):
        entry = dict(entry, score=None)
    return entry


def _current(current: Any, ref: Profile, vocabs: Dict[str, Any]) -> Tuple[Profile, bool]:
    """The current side as a profile, and whether it counted OOV against ``vocabs``."""
    if isinstance(current, dict) and current.get("format") == "tabprep-serving-stats":
        return serving_profile(current), True
    if isinstance(current, (str, os.PathLike)) and os.fspath(current).endswith(".json"):
        with open(current) as fh:
            doc = json.load(fh)
        if doc.get("format") == "tabprep-serving-stats":
            return serving_profile(doc, os.fspath(current)), True
        return Profile(doc, os.fspath(current)), False
    if isinstance(current, (str, os.PathLike)) and os.path.isfile(os.path.join(os.fspath(current), "profile.json")):
        return as_profile(current), False
    if isinstance(current, (Profile, dict)):
        return as_profile(current), False
    from ..io.dataset import Dataset
    from .profile import arrow_table

    table = arrow_table(current)
    ds = table if table is not None else current if isinstance(current, Dataset) else Dataset(current)
    have = set(table.column_names if table is not None else ds.schema.column_names)
    cats = [c for c, s in ref.columns.items() if s.get("kind") == "category" and c in have]
    return profile(ds, categorical=cats, vocabs={c: v for c, v in vocabs.items() if c in have},
                   sample_every=None), True


def serving_profile(stats: Dict[str, Any], source: Optional[str] = None) -> Profile:
    """A partial profile from a ``tabprep serve`` ``GET /stats`` document: per column count,
    nulls, null rate, OOV rate (Categorify columns) and out-of-range rate."""
    cols = {}
    for name, c in stats.get("columns", {}).items():
        rows = int(c.get("rows", 0))
        nonnull = rows - int(c.get("nulls", 0))
        entry: Dict[str, Any] = {"dtype": c.get("dtype", "unknown"), "kind": c.get("kind", "unknown"), "count": rows,
                                 "nulls": int(c.get("nulls", 0)), "null_rate": c.get("nulls", 0) / rows if rows else 0.0}
        if "oov" in c:
            entry["oov"] = int(c["oov"])
            entry["oov_rate"] = c["oov"] / nonnull if nonnull else 0.0
        if "out_of_range" in c:
            entry["out_of_range_rate"] = c["out_of_range"] / nonnull if nonnull else 0.0
        cols[name] = entry
    doc = {"format": "tabprep-profile", "version": 1, "rows": int(stats.get("rows", 0)), "sample_every": 1,
           "schema": {c: v["dtype"] for c, v in cols.items()}, "columns": cols}
    return Profile(doc, source or "serving stats")
