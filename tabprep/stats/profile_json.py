"""The finalize of a data profile (:mod:`tabprep.stats.profile`): merged column partials to the
JSON-able ``profile.json`` document (its layout is described in ``docs/guide/data-quality.md``)."""
from __future__ import annotations

from typing import Any, Dict, Sequence

import numpy as np

#: the quantiles a profile reports
QUANTILES = (0.0, 0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99, 1.0)
#: equal-width histogram bins of a numeric column (between its min and max)
HIST_BINS = 30
#: frequent values a profile lists
TOP_K = 20


# -- finalize -------------------------------------------------------------------------------------
#: version of the profile.json layout (docs/guide/data-quality.md describes it)
PROFILE_VERSION = 1
#: frequent values kept per column in profile.json (for drift's L-infinity distance); TOP_K shown
FREQ_KEPT = 256


def _num(v: Any) -> Any:
    """A JSON number (None for NaN / inf / missing)."""
    if v is None:
        return None
    v = float(v)
    return v if np.isfinite(v) else None


def _extreme(v: Any) -> Any:
    """A min / max as a JSON number: an int stays an int (exact beyond 2**53: int64 / uint64 ids,
    microsecond times), a float is :func:`_num` (None for NaN / inf / missing)."""
    from .profile_numeric import extreme

    v = extreme(v)
    return v if isinstance(v, int) else _num(v)


def _json_value(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not np.isfinite(v):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        return v.decode("utf-8", "backslashreplace")
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return repr(v)


def histogram_edges(lo: float, hi: float, bins: int = HIST_BINS) -> np.ndarray:
    """``bins`` equal-width edges from ``lo`` to ``hi``, strictly increasing: fewer where ``lo`` and
    ``hi`` are a few ULP apart (``[0.1 + 0.2, 0.3]``, ints beyond 2**53, subnormals), where
    ``np.linspace`` repeats edges; ``lo * (1 - t) + hi * t`` cannot overflow where ``hi - lo`` does."""
    if not hi > lo:
        return np.array([lo, hi])
    t = np.linspace(0.0, 1.0, bins + 1)
    with np.errstate(over="ignore", under="ignore"):
        e = lo * (1.0 - t) + hi * t
    e = e[np.isfinite(e) & (e > lo) & (e < hi)]
    return np.unique(np.concatenate([[lo], e, [hi]]))


def finalize_column(p: Any) -> Dict[str, Any]:
    """The JSON-able summary of a column's merged partial (see ``docs/guide/data-quality.md``)."""
    import base64

    from .sketches import kll_load, thinning_rank_error

    out: Dict[str, Any] = {"dtype": p.dtype, "kind": p.kind, "count": p.rows, "nulls": p.nulls,
                           "null_rate": p.nulls / p.rows if p.rows else 0.0, "nan": p.nan, "inf": p.inf}
    nonnull = p.rows - p.nulls
    if p.moments is not None:
        # an int column's min and max stay JSON ints (exact beyond 2**53, as Python's json reads them)
        out.update({"numeric_count": p.moments.count, "min": _extreme(p.minmax.min), "max": _extreme(p.minmax.max),
                    "mean": _num(p.moments.mean) if p.moments.count else None,
                    "std": _num(p.moments.std) if p.moments.count else None})
    if p.kll is not None:
        sk = kll_load(p.kll)
        out["kll"] = base64.b64encode(p.kll).decode("ascii")
        # the thinning's share of the quantiles' rank error (the KLL sketch adds its own, ~1.3%)
        out["kll_every"] = int(p.kll_every)
        out["quantile_thinning_error"] = thinning_rank_error(p.kll_slack, p.kll_values)
        if not sk.is_empty():
            lo, hi = out["min"], out["max"]
            # the sketch keeps a sample of the extremes: the exact ones replace its 0 and 1 quantiles
            out["quantiles"] = {str(q): lo if q == 0 else hi if q == 1 else float(sk.get_quantile(q)) for q in QUANTILES}
            edges = histogram_edges(float(lo), float(hi))
            cdf = np.asarray(sk.get_cdf(list(edges[1:-1]), True)[:-1]) if edges.size > 2 else np.array([])
            mass = np.diff(np.concatenate([[0.0], cdf, [1.0]]))
            out["histogram"] = {"edges": [float(e) for e in edges],
                                "counts": [float(m * p.moments.count) for m in mass]}
    distinct = None
    # (a ``counted`` column's frequent values and distinct count are the fit's exact value counts,
    # which Workflow.fit adds once its ops are fitted: counted_fields)
    if p.freq is not None and not p.counted:
        exact = p.freq.error == 0 and p.sample_every == 1
        out.update(frequent_fields(p.freq, exact))
        if exact:
            distinct = int(p.freq.keys.size)
    if p.kind != "list" and not p.counted:
        out["distinct"] = distinct if distinct is not None else int(min(round(p.hll.estimate()), nonnull))
        out["distinct_exact"] = distinct is not None
        out["distinct_sampled"] = p.sample_every > 1
    if p.oov is not None:
        n = p.values.rows - p.values.nulls if p.values is not None else nonnull
        out["oov"] = p.oov
        out["oov_rate"] = p.oov / n if n else 0.0
    if p.numeric is not None:  # a timestamp / duration / date column: the summary of its microseconds / days
        num = finalize_column(p.numeric)
        out.update({k: num[k] for k in TIME_NUMERIC if k in num})
        date = p.dtype.startswith("date")
        out["time_unit"] = DATE_UNIT if date else "us"
        if date or p.dtype.startswith("timestamp"):  # readable: ISO 8601 (UTC where the column has a zone)
            iso = _iso_date if date else _iso
            for k in ("min", "max", "mean"):
                if out.get(k) is not None:
                    out[k + "_time"] = iso(out[k], p.dtype)
            if "quantiles" in out:
                out["quantiles_time"] = {q: iso(v, p.dtype) for q, v in out["quantiles"].items()}
    if p.lengths is not None:
        out["list_length"] = finalize_column(p.lengths)
    if p.values is not None:
        out["values"] = finalize_column(p.values)
    return out


#: the ``time_unit`` of a date column's numeric fields (days since 1970-01-01; numpy's spelling,
#: as ``"us"`` is the other time columns')
DATE_UNIT = "D"

#: the numeric fields a timestamp / duration / date column's entry takes from its microseconds' (days') summary
TIME_NUMERIC = ("numeric_count", "min", "max", "mean", "std", "kll", "kll_every", "quantile_thinning_error",
                "quantiles", "histogram")


def _iso(us: Any, dtype: str) -> Any:
    """Microseconds since 1970-01-01 UTC as an ISO 8601 time (with ``+00:00`` for a zoned column)."""
    import datetime

    try:  # (an int exactly: a float64 of microseconds beyond 2**53 would be rounded)
        t = datetime.datetime(1970, 1, 1) + datetime.timedelta(
            microseconds=us if isinstance(us, int) else int(round(float(us))))
    except (OverflowError, ValueError):
        return None
    return t.isoformat() + ("+00:00" if "tz=" in dtype else "")


def _iso_date(days: Any, dtype: str = "date32[day]") -> Any:
    """Days since 1970-01-01 as an ISO 8601 date (``2020-01-31``); a fractional day (a mean) as
    an ISO 8601 time (``2020-01-31T12:00:00``)."""
    import datetime

    try:
        if float(days).is_integer():
            return (datetime.date(1970, 1, 1) + datetime.timedelta(days=int(days))).isoformat()
        return (datetime.datetime(1970, 1, 1) + datetime.timedelta(days=float(days))).isoformat()
    except (OverflowError, ValueError):
        return None


def frequent_fields(f: Any, exact: bool) -> Dict[str, Any]:
    """The frequent-value fields of a column's entry (``frequent``, ``top``, shares...) from its
    :class:`~tabprep.stats.sketches.Frequent` summary; ``exact``: its counts are the data's."""
    kept = f.top(FREQ_KEPT)
    top = kept[:TOP_K]
    top_sum = sum(c for _, c in top)
    return {"frequent": [[_json_value(v), c] for v, c in kept], "frequent_n": f.n,
            "frequent_error": f.error, "frequent_exact": exact,
            "top": [{"value": _json_value(v), "count": c} for v, c in top],
            "top_share": top_sum / f.n if f.n else 0.0,
            "tail_share": 1.0 - top_sum / f.n if f.n else 0.0}


def counted_fields(values: np.ndarray, counts: np.ndarray) -> Dict[str, Any]:
    """The frequent-value and distinct-count fields of an id column's entry from its exact value
    counts (``values`` distinct, most frequent first, ties by ascending value: a fitted
    Categorify's vocabulary): the same fields as :func:`finalize_column` writes from a sketch
    that saw every row and held every value (``frequent_error`` 0, ``distinct_exact``)."""
    from .sketches import Frequent

    values, counts = np.asarray(values), np.asarray(counts, dtype=np.int64)
    head = Frequent(values[:FREQ_KEPT], counts[:FREQ_KEPT], int(counts.sum()), 0)  # (the top of the whole list)
    out = frequent_fields(head, True)
    out.update({"distinct": int(values.size), "distinct_exact": True, "distinct_sampled": False})
    return out


def finalize_profile(combined: Dict[str, Any], columns: Sequence[str], sample_every: int = 1,
                     kll_every: int = 1) -> Dict[str, Any]:
    """The ``profile.json`` document of merged partials (columns in ``columns`` order);
    ``kll_every``: the KLL sketches' thinning factor of the pass (recorded)."""
    cols = {c: finalize_column(combined[c]) for c in columns if c in combined}
    rows = next(iter(cols.values()))["count"] if cols else 0
    return {"format": "tabprep-profile", "version": PROFILE_VERSION, "rows": rows, "sample_every": sample_every,
            "kll_every": kll_every,
            "schema": {c: v["dtype"] for c, v in cols.items()}, "columns": cols}
