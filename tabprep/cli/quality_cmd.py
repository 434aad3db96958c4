"""``tabprep profile`` and ``tabprep drift``: data profiles, drift and skew reports (profile.json /
drift.json + a self-contained index.html). Heavy imports stay inside the commands."""
from __future__ import annotations

import os
from typing import Any, Dict, Optional, Tuple

import click

from .runtime import handle_errors, setup_logging

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def _split(value: Optional[str]) -> Optional[list]:
    return [c.strip() for c in value.split(",") if c.strip()] if value else None


def _dataset(data: Tuple[str, ...], cpu: Optional[bool]) -> Any:
    from .runtime import make_dataset

    return make_dataset(list(data), None, None, None, None, cpu)


@click.command("profile", context_settings=CONTEXT, short_help="Profile DATA: profile.json + index.html in DIR.")
@click.argument("data", nargs=-1, required=True, metavar="DATA...")
@click.option("-o", "--out", "out", required=True, metavar="DIR", help="Folder for profile.json and index.html.")
@click.option("--columns", metavar="A,B", default=None, help="Columns to profile (default all).")
@click.option("--categorical", metavar="A,B", default=None,
              help="Int columns holding ids: counted, no quantiles or histogram.")
@click.option("--sample-every", type=click.IntRange(min=1), default=None,
              help="The sketches see every k-th row (default: about 1M rows; 1: all). Counts, nulls, "
                   "min/max/mean/std see all.")
@click.option("--kll-every", type=click.IntRange(min=1), default=None,
              help="The quantile sketches get every f-th sorted sampled value, each standing for f (default: "
                   "by the sample size, 16 at 1M rows; 1: all). profile.json records the added rank error.")
@click.option("--cpu/--gpu", "cpu", default=None, help="Backend (default: GPU when cuDF is installed).")
@click.option("-q", "--quiet", is_flag=True, help="Only errors.")
@click.option("-v", "--verbose", is_flag=True, help="More logging.")
@click.option("--debug", is_flag=True, help="Tracebacks on errors.")
@handle_errors
def profile_cmd(data: Tuple[str, ...], out: str, columns: Optional[str], categorical: Optional[str], sample_every: Optional[int],
                kll_every: Optional[int], cpu: Optional[bool], quiet: bool, verbose: bool, debug: bool) -> None:  # noqa: D401
    """Profile DATA in one streaming pass: per column count, nulls, NaN/inf, min/max/mean/std,
    quantiles and histogram (KLL sketch), distinct count (HLL), top values and long-tail share,
    list lengths. Writes DIR/profile.json and DIR/index.html (opens offline).

    \b
    Example:
      tabprep profile data/ --out report/ --categorical C1,C2
    """
    import time

    from ..quality import profile
    from ..quality.html import check_page

    setup_logging(verbose, quiet)
    check_page(out, "profile", "pass another --out folder")  # (before the pass: its page is never replaced)
    start = time.perf_counter()
    prof = profile(_dataset(data, cpu), columns=_split(columns), categorical=_split(categorical) or (),
                   sample_every=sample_every, kll_every=kll_every)
    html = prof.save(out)
    if not quiet:
        click.echo(f"profile: {prof.rows:,} rows, {len(prof.columns)} columns in {time.perf_counter() - start:.2f}s "
                   f"-> {os.path.join(out, 'profile.json')}, {html}", err=True)


def parse_thresholds(items: Tuple[str, ...], path: Optional[str]) -> Dict[str, Any]:
    """``--thresholds FILE`` (YAML/JSON; its ``drift:`` section when it has one, e.g. a spec file)
    then ``--threshold metric=value`` / ``COLUMN.metric=value`` (later ones win)."""
    out: Dict[str, Any] = {}
    if path:
        import yaml

        with open(path) as fh:
            doc = yaml.safe_load(fh) or {}
        if not isinstance(doc, dict):
            raise click.UsageError(f"{path}: expected a mapping of drift thresholds")
        doc = doc.get("drift", doc) if "drift" in doc else doc
        section = doc.get("thresholds", doc) if isinstance(doc, dict) else doc
        if not isinstance(section, dict):
            raise click.UsageError(f"{path}: the drift thresholds must be a mapping")
        out.update({k: v for k, v in section.items() if k != "columns"})
        out["columns"] = dict(section.get("columns") or {})
    for item in items:
        key, sep, value = item.partition("=")
        try:
            number = float(value)
        except ValueError:
            number = None
        if not sep or number is None:
            raise click.UsageError(f"--threshold {item!r}: expected METRIC=NUMBER or COLUMN.METRIC=NUMBER "
                                   "(e.g. psi=0.3, I1.js=0.1)")
        col, dot, metric = key.rpartition(".")
        if dot:
            out.setdefault("columns", {}).setdefault(col, {})[metric] = number
        else:
            out[metric] = number
    return out


@click.command("drift", context_settings=CONTEXT, short_help="Compare DATA with REF: drift.json + index.html in DIR.")
@click.argument("ref", metavar="REF")
@click.argument("data", nargs=-1, required=True, metavar="DATA...")
@click.option("-o", "--out", "out", required=True, metavar="DIR", help="Folder for drift.json and index.html.")
@click.option("--threshold", "threshold", multiple=True, metavar="[COL.]METRIC=X",
              help="A threshold, global (psi=0.3) or for one column (I1.js=0.1); repeatable.")
@click.option("--thresholds", "thresholds_file", metavar="FILE", default=None,
              help="YAML/JSON thresholds ({psi: 0.3, columns: {I1: {js: 0.1}}}; a spec file's `drift:` section).")
@click.option("--fail-on-drift", is_flag=True, help="Exit with status 1 when any column drifts (for CI).")
@click.option("--cpu/--gpu", "cpu", default=None, help="Backend (default: GPU when cuDF is installed).")
@click.option("-q", "--quiet", is_flag=True, help="Only errors.")
@click.option("-v", "--verbose", is_flag=True, help="More logging.")
@click.option("--debug", is_flag=True, help="Tracebacks on errors.")
@handle_errors
def drift_cmd(ref: str, data: Tuple[str, ...], out: str, threshold: Tuple[str, ...], thresholds_file: Optional[str],
              fail_on_drift: bool, cpu: Optional[bool], quiet: bool, verbose: bool, debug: bool) -> None:
    """Compare DATA with REF column by column: JS divergence and PSI of numeric columns (on REF's
    quantile bins), L-infinity distance of value frequencies, OOV share against the fitted
    vocabulary, null-rate and list-length changes, schema changes. REF: a saved workflow (its
    training profile) or a `tabprep profile` folder. DATA: data files/folders, a profile
    folder, or a saved `GET /stats` JSON of `tabprep serve`.

    \b
    Example:
      tabprep drift wf/ new_data/ --out drift/ --threshold psi=0.3 --fail-on-drift
    """
    from ..quality import drift
    from ..quality.html import check_page

    setup_logging(verbose, quiet)
    check_page(out, "drift", "pass another --out folder")  # (before the pass: a profile's page is never replaced)
    th = parse_thresholds(threshold, thresholds_file)
    current: Any
    if len(data) == 1 and (data[0].endswith(".json") or os.path.isfile(os.path.join(data[0], "profile.json"))):
        current = data[0]
    else:
        current = _dataset(data, cpu)
    report = drift(ref, current, thresholds=th)
    html = report.save(out)
    if not quiet:
        verdict = f"no data: the {' and the '.join(report.doc['empty'])} has 0 rows (a drift)" \
            if report.doc.get("empty") else f"drift in {len(report.drifted)} of {len(report.columns)} columns: {', '.join(report.drifted)}" \
            if report.drift else f"no drift in {len(report.columns)} columns"
        if report.doc.get("unchecked"):
            verdict += f"; new values unchecked in {', '.join(report.doc['unchecked'])} (see drift.json's reason)"
        click.echo(f"{verdict} -> {os.path.join(out, 'drift.json')}, {html}", err=True)
    if fail_on_drift and report.drift:
        raise click.exceptions.Exit(1)


def describe_profile(profile: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The short form of a training profile that ``tabprep inspect`` shows."""
    if not profile:
        return None
    cols = {}
    for name, c in profile.get("columns", {}).items():
        cols[name] = {k: c[k] for k in ("dtype", "kind", "null_rate", "distinct", "min", "mean", "max", "time_unit", "min_time",
                                                 "max_time", "top_share")
                      if k in c}
    return {"rows": profile.get("rows"), "columns": cols}


def _dump(doc: Any) -> str:
    import json   # here: `tabprep --help` imports this module for the command's short help

    return json.dumps(doc, indent=1)
