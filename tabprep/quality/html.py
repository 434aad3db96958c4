"""Self-contained HTML reports of profiles and drift results: inline SVG charts drawn here, no
script, no network (opens offline, in a notebook through ``_repr_html_``)."""
from __future__ import annotations

import html
import math
import os
import re
from typing import Any, Dict, List, Optional, Sequence

REF_COLOR = "#3b6fb6"
CUR_COLOR = "#e0702b"
W, H = 340, 130

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:16px;color:#222;background:#fff}
h1{font-size:20px;margin:0 0 6px} h2{font-size:16px;margin:10px 0 4px}
.meta{color:#555;font-size:13px;margin-bottom:10px}
table.summary{border-collapse:collapse;font-size:12px;margin:8px 0 16px}
table.summary td,table.summary th{border:1px solid #ddd;padding:3px 6px;text-align:right}
table.summary th{background:#f3f3f3} table.summary td:first-child{text-align:left}
tr.drift td{background:#fde8e4} .ok{color:#2a7d2a} .bad{color:#c0321f;font-weight:600}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{border:1px solid #ddd;border-radius:6px;padding:8px;width:720px}
.card.drift{border-color:#c0321f}
.charts{display:flex;flex-wrap:wrap;gap:8px} .legend{font-size:11px;color:#555}
.sw{display:inline-block;width:10px;height:10px;margin:0 3px 0 8px;vertical-align:middle}
svg.chart{background:#fafafa;border:1px solid #eee}
"""


#: characters a page's text may not hold (the HTML standard's parse errors, which browsers drop
#: or replace, and lone surrogates, which UTF-8 cannot encode): NUL, the C0 controls but ASCII
#: whitespace, DEL, the C1 controls, surrogates and the noncharacters
_NOT_IN_HTML = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufdd0-\ufdef"
                          + "".join(f"{chr(p + 0xfffe)}{chr(p + 0xffff)}" for p in range(0, 0x110000, 0x10000)) + "]")


def _char_escape(c: str) -> str:
    """Python's escape of one character (``\\x00``, ``\\ud800``, ``\\U0001fffe``)."""
    o = ord(c)
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"


def _e(v: Any) -> str:
    """``v`` as page text: HTML-escaped, the characters a page may not hold (NUL...) shown as
    Python's escapes (``a\\x00b`` for ``"a\\x00b"``; the JSON next to the page keeps the value)."""
    return html.escape(_NOT_IN_HTML.sub(lambda m: _char_escape(m.group()), str(v)))


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return str(v)
        if v != 0 and (abs(v) >= 1e6 or abs(v) < 1e-3):
            return f"{v:.3g}"
        return f"{v:.4g}"
    return _e(v)


def _svg(kind: str, body: List[str], title: str, w: int = W, h: int = H) -> str:
    return (f'<svg class="chart" data-chart="{kind}" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
            f'role="img"><title>{_e(title)}</title>'
            f'<text x="6" y="13" font-size="11" fill="#333">{_e(title)}</text>' + "".join(body) + "</svg>")


def bars_chart(series: Sequence[Optional[Sequence[float]]], labels: Sequence[str], title: str, kind: str = "hist") -> str:
    """Overlaid vertical bars (reference blue, current orange), each series as shares of its sum."""
    body: List[str] = []
    live = [s for s in series if s]
    if not live:
        return _svg(kind, ['<text x="10" y="60" font-size="11" fill="#888">no values</text>'], title)
    shares = [[v / (sum(s) or 1) for v in s] if s else None for s in series]
    top = max(max(s) for s in shares if s) or 1.0
    n = len(live[0])
    x0, y0, pw, ph = 30, 20, W - 40, H - 40
    bw = pw / max(n, 1)
    for s, color in zip(shares, (REF_COLOR, CUR_COLOR)):
        if not s:
            continue
        for i, v in enumerate(s):
            bh = ph * v / top
            body.append(f'<rect x="{x0 + i * bw + 0.5:.1f}" y="{y0 + ph - bh:.1f}" width="{max(bw - 1, 0.8):.1f}" '
                        f'height="{bh:.1f}" fill="{color}" fill-opacity="0.55"/>')
    body.append(f'<line x1="{x0}" y1="{y0 + ph}" x2="{x0 + pw}" y2="{y0 + ph}" stroke="#999"/>')
    body.append(f'<text x="{x0 - 4}" y="{y0 + 8}" font-size="9" text-anchor="end" fill="#666">{top:.0%}</text>')
    if labels:
        body.append(f'<text x="{x0}" y="{H - 6}" font-size="9" fill="#666">{_e(labels[0])}</text>')
        body.append(f'<text x="{x0 + pw}" y="{H - 6}" font-size="9" text-anchor="end" fill="#666">{_e(labels[-1])}</text>')
    return _svg(kind, body, title)


def topk_chart(ref: Optional[List[Dict[str, Any]]], ref_n: float, cur: Optional[List[Dict[str, Any]]], cur_n: float,
               k: int = 10) -> str:
    """Horizontal bars of the top-k values' shares (reference's order; current beside it)."""
    base = ref if ref else cur or []
    values = [t["value"] for t in base[:k]]
    rs = {str(t["value"]): t["count"] / ref_n for t in (ref or [])} if ref_n else {}
    cs = {str(t["value"]): t["count"] / cur_n for t in (cur or [])} if cur_n else {}
    h = 24 + 14 * max(len(values), 1)
    body: List[str] = []
    top = max([*rs.values(), *cs.values(), 1e-9])
    x0, pw = 90, W - 140
    for i, v in enumerate(values):
        y = 20 + i * 14
        body.append(f'<text x="{x0 - 4}" y="{y + 9}" font-size="9" text-anchor="end" fill="#333">{_e(str(v)[:14])}</text>')
        for j, (m, color) in enumerate(((rs, REF_COLOR), (cs, CUR_COLOR))):
            share = m.get(str(v))
            if share is None:
                continue
            body.append(f'<rect x="{x0}" y="{y + j * 6:.1f}" width="{max(pw * share / top, 0.8):.1f}" height="5" '
                        f'fill="{color}"/>')
        share = rs.get(str(v), cs.get(str(v), 0.0))
        body.append(f'<text x="{x0 + pw + 4}" y="{y + 9}" font-size="9" fill="#666">{share:.1%}</text>')
    if not values:
        body.append('<text x="10" y="40" font-size="11" fill="#888">no values</text>')
    return _svg("topk", body, f"top {len(values)} values (share)", h=max(h, 60))


def rank_chart(ref_counts: Optional[Sequence[float]], cur_counts: Optional[Sequence[float]]) -> str:
    """The rank/frequency curve of the frequent values (log-log), reference and current."""
    body: List[str] = []
    series = [s for s in (ref_counts, cur_counts) if s]
    if not series:
        return _svg("rank", ['<text x="10" y="60" font-size="11" fill="#888">no values</text>'], "rank / frequency")
    x0, y0, pw, ph = 30, 20, W - 40, H - 40
    hi = math.log10(max(max(s) for s in series) or 1) + 1e-9
    lo = math.log10(max(min(min(v for v in s if v > 0) for s in series), 1e-12))
    span = max(hi - lo, 1e-9)
    rmax = math.log10(max(len(s) for s in series)) or 1.0
    for s, color in ((ref_counts, REF_COLOR), (cur_counts, CUR_COLOR)):
        if not s:
            continue
        pts = [(x0 + pw * (math.log10(i + 1) / rmax if rmax else 0), y0 + ph * (1 - (math.log10(c) - lo) / span))
               for i, c in enumerate(s) if c > 0]
        if len(pts) == 1:
            pts.append((pts[0][0] + 2, pts[0][1]))
        body.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="'
                    + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts) + '"/>')
    body.append(f'<line x1="{x0}" y1="{y0 + ph}" x2="{x0 + pw}" y2="{y0 + ph}" stroke="#999"/>')
    body.append(f'<text x="{x0 + pw}" y="{H - 6}" font-size="9" text-anchor="end" fill="#666">rank (log)</text>')
    return _svg("rank", body, "rank / frequency (log-log)")


def rates_chart(rates: Dict[str, Sequence[Optional[float]]]) -> str:
    """Null / OOV rates, reference vs current, as horizontal bars on [0, 1]."""
    body: List[str] = []
    x0, pw = 70, W - 150
    for i, (name, pair) in enumerate(rates.items()):
        y = 22 + i * 22
        body.append(f'<text x="{x0 - 4}" y="{y + 10}" font-size="10" text-anchor="end" fill="#333">{_e(name)}</text>')
        body.append(f'<rect x="{x0}" y="{y}" width="{pw}" height="14" fill="#eee"/>')
        for j, (v, color) in enumerate(zip(pair, (REF_COLOR, CUR_COLOR))):
            if v is None:
                continue
            body.append(f'<rect x="{x0}" y="{y + j * 7}" width="{max(pw * min(v, 1.0), 1):.1f}" height="7" fill="{color}"/>')
        label = " / ".join(f"{v:.1%}" for v in pair if v is not None)
        body.append(f'<text x="{x0 + pw + 4}" y="{y + 10}" font-size="9" fill="#666">{_e(label)}</text>')
    return _svg("rates", body, "null / OOV rate", h=30 + 22 * max(len(rates), 1))


def _legend(two: bool) -> str:
    out = f'<span class="legend"><span class="sw" style="background:{REF_COLOR}"></span>reference'
    if two:
        out += f'<span class="sw" style="background:{CUR_COLOR}"></span>current'
    return out + "</span>"


def _shown(c: Dict[str, Any], key: str) -> str:
    """A profile entry's min / mean / max: an ISO time for a timestamp column, microseconds
    (unit stated) for a duration column, else the number."""
    if c.get(key + "_time"):
        return _e(c[key + "_time"])
    if c.get("time_unit") and c.get(key) is not None:
        return f"{_fmt(c[key])} {_e(c['time_unit'])}"
    return _fmt(c.get(key))


#: the ``<title>`` of each kind of page (:func:`_page`), which tells whose an ``index.html`` is
PAGE_TITLES = {"profile": "tabprep profile", "drift": "tabprep drift"}
HTML_FILE = "index.html"


def check_page(folder: str, kind: str, fix: str = "save it into another folder") -> str:
    """The path of the ``index.html`` a report of ``kind`` (``"profile"`` or ``"drift"``) writes in
    ``folder``, after checking that writing it replaces no page but one of the same kind (a
    re-run): a profile folder's page is never replaced by a drift report (nor the reverse), and a
    page tabprep did not write is never replaced. Raises ``FileExistsError`` naming the file and
    ``fix`` (the caller's way out: the CLI's ``--out``). Reads the first 4 KB of an existing page."""
    path = os.path.join(folder, HTML_FILE)
    if not os.path.lexists(path):
        return path
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        head = b""
    owner = next((k for k, t in PAGE_TITLES.items() if f"<title>{t}</title>".encode() in head), None)
    if owner == kind:
        return path
    what = {"profile": "the page of a tabprep profile (profile.json)",
            "drift": "the page of a tabprep drift report (drift.json)"}.get(owner or "", "a file tabprep did not write")
    report = "drift report" if kind == "drift" else "profile"
    raise FileExistsError(f"{path} is {what}: writing the {report} into {folder} would replace it; {fix} "
                          f"(or remove {path} first)")


def _page(title: str, body: str, fragment: bool) -> str:
    inner = f"<style>{_CSS}</style><div class=\"tabprep-report\">{body}</div>"
    if fragment:
        return inner
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{_e(title)}</title></head>"
            f"<body>{inner}</body></html>")


def profile_html(prof: Any, fragment: bool = False) -> str:
    """The report of a :class:`~tabprep.quality.profile.Profile`."""
    cols = prof.columns
    rows = ["<tr><th>column</th><th>dtype</th><th>nulls</th><th>distinct</th><th>min</th><th>mean</th>"
            "<th>max</th><th>top share</th></tr>"]
    for name, c in cols.items():
        rows.append(f"<tr><td>{_e(name)}</td><td>{_e(c['dtype'])}</td><td>{c['null_rate']:.2%}</td>"
                    f"<td>{_fmt(c.get('distinct'))}</td><td>{_shown(c, 'min')}</td><td>{_shown(c, 'mean')}</td>"
                    f"<td>{_shown(c, 'max')}</td><td>{_fmt(c.get('top_share'))}</td></tr>")
    cards = []
    for name, c in cols.items():
        charts = _column_charts(c, None)
        cards.append(f'<div class="card"><h2>{_e(name)} <small>{_e(c["dtype"])}, {_e(c["kind"])}</small></h2>'
                     f'<div class="charts">{charts}</div></div>')
    body = (f"<h1>Data profile</h1><div class=\"meta\">{prof.rows:,} rows, {len(cols)} columns"
            f"{' - ' + _e(prof.source) if prof.source else ''}"
            f"{'; quantiles from every ' + str(prof.doc.get('sample_every')) + 'th value' if prof.doc.get('sample_every', 1) > 1 else ''}"
            f"</div><table class=\"summary\">{''.join(rows)}</table>{_legend(False)}<div class=\"cards\">{''.join(cards)}</div>")
    return _page(PAGE_TITLES["profile"], body, fragment)


def _column_charts(ref: Dict[str, Any], cur: Optional[Dict[str, Any]], bins: Optional[Dict[str, Any]] = None) -> str:
    out = []
    if bins:
        edges = bins["edges"]
        labels = [_fmt(edges[0]), _fmt(edges[-1])] if edges else []
        out.append(bars_chart([bins["reference"], bins["current"]], labels, "histogram on the reference's quantile bins"))
    elif ref.get("histogram") or (cur or {}).get("histogram"):
        h = ref.get("histogram") or cur["histogram"]
        labels = [_fmt(h["edges"][0]), _fmt(h["edges"][-1])]
        second = (cur or {}).get("histogram") if ref.get("histogram") else None
        out.append(bars_chart([h["counts"], second["counts"] if second and len(second["counts"]) == len(h["counts"]) else None],
                              labels, "histogram"))
    if ref.get("top") or (cur or {}).get("top"):
        rn = ref.get("frequent_n") or (ref.get("count", 0) - ref.get("nulls", 0))
        cn = (cur or {}).get("frequent_n") or ((cur or {}).get("count", 0) - (cur or {}).get("nulls", 0))
        out.append(topk_chart(ref.get("top"), rn, (cur or {}).get("top"), cn))
        out.append(rank_chart(ref.get("rank_counts") or [c for _, c in ref.get("frequent", [])],
                              (cur or {}).get("rank_counts") or [c for _, c in (cur or {}).get("frequent", [])]))
    rates = {"null": [ref.get("null_rate"), (cur or {}).get("null_rate") if cur is not None else None]}
    if "oov_rate" in ref or "oov_rate" in (cur or {}):
        rates["OOV"] = [ref.get("oov_rate"), (cur or {}).get("oov_rate")]
    if "out_of_range_rate" in (cur or {}):
        rates["out of range"] = [None, cur["out_of_range_rate"]]
    out.append(rates_chart(rates))
    return "".join(out)


def drift_html(report: Any, fragment: bool = False) -> str:
    """The report of a :class:`~tabprep.quality.drift.DriftReport` (columns sorted by drift)."""
    doc = report.doc
    metric_names = ["js", "psi", "linf", "oov_rate", "null_rate", "list_length_psi"]
    head = "".join(f"<th>{m}</th>" for m in metric_names)
    rows = [f"<tr><th>column</th><th>status</th>{head}</tr>"]
    cards = []
    for name, e in doc["columns"].items():
        cells = []
        for m in metric_names:
            v = e["metrics"].get(m)
            bad = m in e["exceeded"]
            cells.append(f'<td class="{"bad" if bad else ""}">{_fmt(v)}</td>')
        status = f'<span class="{"bad" if e["drift"] else "ok"}">{_e(e["status"])}</span>'
        rows.append(f'<tr class="{"drift" if e["drift"] else ""}"><td>{_e(name)}</td><td>{status}</td>{"".join(cells)}</tr>')
        ref, cur = e.get("reference") or {}, e.get("current") or {}
        charts = _column_charts(ref, cur, e.get("bins")) if ref and cur else ""
        why = ", ".join(f"{m} {_fmt(e['metrics'].get(m))} > {_fmt(e['thresholds'].get(m))}" if m not in ("schema", "empty") \
                        else e.get("reason", m)
                        for m in e["exceeded"]) or (e.get("reason") or "")
        cards.append(f'<div class="card{" drift" if e["drift"] else ""}"><h2>{_e(name)} {status}'
                     f'{" <small>" + _e(why) + "</small>" if why else ""}</h2><div class="charts">{charts}</div></div>')
    verdict = (f'<span class="bad">no data: the {_e(" and the ".join(doc["empty"]))} has 0 rows '
               f'(every column counts as drifted)</span>' if doc.get("empty") else
               f'<span class="bad">drift in {len(doc["drifted"])} column(s): {_e(", ".join(doc["drifted"]))}</span>'
               if doc["drift"] else '<span class="ok">no drift</span>')
    if doc.get("unchecked"):
        verdict += f'<br><span class="bad">new values unchecked in: {_e(", ".join(doc["unchecked"]))}</span>'
    body = (f"<h1>Drift report</h1><div class=\"meta\">reference: {_e(doc.get('reference'))} "
            f"({doc['rows']['reference']:,} rows); current: {_e(doc.get('current'))} ({doc['rows']['current']:,} rows)"
            f"<br>{verdict}</div><table class=\"summary\">{''.join(rows)}</table>{_legend(True)}"
            f"<div class=\"cards\">{''.join(cards)}</div>")
    return _page(PAGE_TITLES["drift"], body, fragment)
