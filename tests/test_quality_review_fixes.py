"""Data-quality defects from an adversarial review (profiles, drift, HTML reports), each checked
from the user's side (the saved folder, the CLI's exit status and message, the page's text)
against references computed here with plain Python ints, numpy, pandas and pyarrow."""
from __future__ import annotations

import datetime
import json
import re
from fractions import Fraction

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import tabprep as tp
from tabprep.cli.main import cli

from conftest import make_dataset


def _cli(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


# -- 1. ints beyond 2**53: exact min / max -----------------------------------------------------

BIG = [2**62 + 1, 2**62 + 3, -(2**62) - 5, 7, 2**53 + 1, -(2**53) - 1]


def _big_frame() -> pd.DataFrame:
    n = 40
    vals = (BIG * (n // len(BIG) + 1))[:n]
    nullable = pd.array([v if i % 3 else None for i, v in enumerate(vals)], dtype="Int64")
    return pd.DataFrame({"i": np.array(vals, dtype=np.int64), "n": nullable,
                         "u": np.array([2**64 - 1, 2**63 + 1, 5] * 13 + [2**63 + 3], dtype=np.uint64),
                         "small": np.arange(n, dtype=np.int64) - 7})


def _exact_expectations(df: pd.DataFrame):
    out = {}
    for c in df:
        vals = [int(v) for v in df[c] if not pd.isna(v)]  # Python ints: exact
        mean = Fraction(sum(vals), len(vals))
        var = sum((v - mean) ** 2 for v in vals) / len(vals)
        out[c] = (min(vals), max(vals), mean, float(var) ** 0.5, len(vals) * max(abs(v) for v in vals))
    return out


def _check_exact(columns, expected):
    for c, (lo, hi, mean, std, scale) in expected.items():
        got = columns[c]
        assert type(got["min"]) is int and type(got["max"]) is int, (c, got["min"], got["max"])
        assert (got["min"], got["max"]) == (lo, hi), c
        # the mean and std are float64 (documented): within a float64 sum's rounding of the values
        assert abs(got["mean"] - mean) <= scale * 2.0**-52, (c, got["mean"], float(mean))
        assert got["std"] == pytest.approx(std, rel=1e-9), c


def test_int_min_max_beyond_2_53_are_exact_ints_in_memory_and_on_disk(tmp_path, backend):
    df = _big_frame()
    expected = _exact_expectations(df)
    assert float(expected["i"][1]) == float(expected["i"][1] + 2)  # (float64 cannot tell them apart)
    prof = tp.profile(make_dataset(df, backend, nparts=3))
    _check_exact(prof.columns, expected)
    prof.save(tmp_path / "p")
    text = (tmp_path / "p" / "profile.json").read_text()
    assert f'"max": {2**62 + 3}' in text and f'"min": {-(2**62) - 5}' in text
    _check_exact(json.loads(text)["columns"], expected)
    # read back through the API: still the exact ints
    loaded = tp.quality.load_profile(str(tmp_path / "p"))
    assert loaded["i"]["min"] == -(2**62) - 5 and loaded["i"]["max"] == 2**62 + 3


def test_int_min_max_exact_from_parquet_cli_and_fit(tmp_path):
    df = _big_frame()
    expected = _exact_expectations(df)
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "d.parquet", row_group_size=16)
    r = _cli("profile", tmp_path / "d.parquet", "--out", tmp_path / "p", "-q")
    assert r.exit_code == 0, r.output
    _check_exact(json.loads((tmp_path / "p" / "profile.json").read_text())["columns"], expected)
    # training profiles: a fit with ops (its int columns profiled where the fit reads them) and without
    for wf in (tp.Workflow(["i", "n", "u", "small"] >> tp.ops.FillMissing(fill_val=0)), tp.Workflow(["i", "n", "u", "small"])):
        wf.fit(tp.Dataset(str(tmp_path / "d.parquet"), cpu=True), profile=True)
        _check_exact(wf.profile_["columns"], expected)
        wf.save(str(tmp_path / "wf"))
        _check_exact(json.loads((tmp_path / "wf" / "stats" / "profile.json").read_text())["columns"], expected)


# -- 2. date32 / date64: numeric metrics in days ----------------------------------------------

def _dates(n=500, seed=3, shift=0):
    r = np.random.default_rng(seed)
    days = r.integers(-800, 20000, n) + shift   # (dates before 1970 too)
    d = [datetime.date(1970, 1, 1) + datetime.timedelta(days=int(x)) if i % 7 else None for i, x in enumerate(days)]
    return pa.table({"d32": pa.array(d, pa.date32()), "d64": pa.array(d, pa.date64())})


def test_date_columns_get_min_max_mean_std_quantiles_in_days(tmp_path):
    t = _dates()
    pq.write_table(t, tmp_path / "d.parquet")
    prof = tp.profile(str(tmp_path / "d.parquet"))
    epoch = datetime.date(1970, 1, 1)
    for c in ("d32", "d64"):
        col = t.column(c)
        mm = pc.min_max(col).as_py()   # pyarrow's reference: datetime.date objects
        days = pd.Series([(v - epoch).days for v in col.to_pylist() if v is not None], dtype="int64")
        e = prof[c]
        assert e["time_unit"] == "D", e
        assert (e["min"], e["max"]) == ((mm["min"] - epoch).days, (mm["max"] - epoch).days)
        assert e["numeric_count"] == days.size == len(col) - col.null_count
        assert e["mean"] == pytest.approx(days.mean(), rel=1e-12)
        assert e["std"] == pytest.approx(days.std(ddof=0), rel=1e-9)
        assert (e["min_time"], e["max_time"]) == (mm["min"].isoformat(), mm["max"].isoformat())
        assert sum(e["histogram"]["counts"]) == pytest.approx(days.size)
        s = np.sort(days.to_numpy())
        for q, v in e["quantiles"].items():  # within the KLL sketch's rank bound
            assert abs(np.searchsorted(s, v, side="right") / s.size - float(q)) <= 0.02 + 1 / s.size, (c, q, v)
    # a date column shifted by 5,000 days (a quarter of its range) is a drift (js / psi see it), the same dates are not
    shifted = tp.profile(_dates(shift=5000).to_pandas(types_mapper=pd.ArrowDtype))
    same = tp.profile(_dates().to_pandas(types_mapper=pd.ArrowDtype))
    ref = tp.profile(t.to_pandas(types_mapper=pd.ArrowDtype))   # (parquet stores a date64 as date32: a retype)
    assert {k: ref["d32"][k] for k in ("min", "max", "mean")} == {k: prof["d32"][k] for k in ("min", "max", "mean")}
    rep = tp.drift(ref, shifted)
    assert set(rep.drifted) == {"d32", "d64"}
    assert {"js", "psi"} <= set(rep.columns["d32"]["exceeded"]) and {"js", "psi"} <= set(rep.columns["d64"]["exceeded"])
    assert not tp.drift(ref, same).drift


# -- 3. a drift report written into a profile folder ------------------------------------------

def _two_frames():
    r = np.random.default_rng(5)
    return (pd.DataFrame({"x": r.normal(size=400), "s": np.array(["a", "b"])[r.integers(0, 2, 400)]}),
            pd.DataFrame({"x": r.normal(3, 1, size=400), "s": np.array(["a", "b"])[r.integers(0, 2, 400)]}))


def test_drift_into_a_profile_folder_keeps_the_profile_page_cli(tmp_path):
    a, b = _two_frames()
    a.to_parquet(tmp_path / "a.parquet")
    b.to_parquet(tmp_path / "b.parquet")
    out = tmp_path / "prof"
    assert _cli("profile", tmp_path / "a.parquet", "--out", out, "-q").exit_code == 0
    page = (out / "index.html").read_bytes()
    before = sorted(p.name for p in out.iterdir())
    r = _cli("drift", out, tmp_path / "b.parquet", "--out", out)
    assert r.exit_code == 1, r.output
    assert str(out / "index.html") in r.output and "--out" in r.output and "profile" in r.output, r.output
    assert (out / "index.html").read_bytes() == page
    assert sorted(p.name for p in out.iterdir()) == before   # no drift.json either: nothing half-written
    # another folder works, and the profile folder is still a profile
    assert _cli("drift", out, tmp_path / "b.parquet", "--out", tmp_path / "drift", "-q").exit_code == 0
    assert "Drift report" in (tmp_path / "drift" / "index.html").read_text()
    # a profile written into a drift report's folder is refused alike; a re-run into its own folder is not
    r = _cli("profile", tmp_path / "b.parquet", "--out", tmp_path / "drift")
    assert r.exit_code == 1 and str(tmp_path / "drift" / "index.html") in r.output, r.output
    assert "Drift report" in (tmp_path / "drift" / "index.html").read_text()
    assert _cli("profile", tmp_path / "b.parquet", "--out", out, "-q").exit_code == 0
    assert _cli("drift", out, tmp_path / "a.parquet", "--out", tmp_path / "drift", "-q").exit_code == 0


def test_drift_save_into_a_profile_folder_python_api(tmp_path):
    a, b = _two_frames()
    prof = tp.profile(a)
    prof.save(tmp_path / "p")
    page = (tmp_path / "p" / "index.html").read_bytes()
    rep = tp.drift(prof, tp.profile(b))
    with pytest.raises(FileExistsError, match=re.escape(str(tmp_path / "p" / "index.html"))):
        rep.save(tmp_path / "p")
    assert (tmp_path / "p" / "index.html").read_bytes() == page
    assert not (tmp_path / "p" / "drift.json").exists()
    # a page tabprep did not write is never replaced either
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "index.html").write_text("<html>my own page</html>")
    with pytest.raises(FileExistsError, match="index.html"):
        prof.save(tmp_path / "site")
    assert (tmp_path / "site" / "index.html").read_text() == "<html>my own page</html>"
    assert not (tmp_path / "site" / "profile.json").exists()
    rep.save(tmp_path / "d")
    rep.save(tmp_path / "d")   # (its own page: replaced)
    assert json.loads((tmp_path / "d" / "drift.json").read_text())["format"] == "tabprep-drift"


# -- 4. tp.profile of a pyarrow Table ----------------------------------------------------------

def test_profile_accepts_a_pyarrow_table_like_its_pandas_frame():
    r = np.random.default_rng(7)
    x = r.normal(size=3000)
    x[::11] = np.nan
    df = pd.DataFrame({"x": x, "i": r.integers(-50, 50, 3000), "s": np.array(["u", "v", "w"])[r.integers(0, 3, 3000)]})
    table = pa.Table.from_pandas(df, preserve_index=False)
    got, want = tp.profile(table), tp.profile(df)
    assert got.rows == want.rows == 3000
    keys = ("dtype", "kind", "count", "nulls", "nan", "min", "max", "mean", "std", "distinct", "top", "frequent")
    for c in df:
        assert {k: got[c].get(k) for k in keys} == {k: want[c].get(k) for k in keys}, c
    # and the pandas-independent references
    assert got["x"]["nulls"] == int(np.isnan(x).sum()) and got["x"]["mean"] == pytest.approx(np.nanmean(x))
    assert got["i"]["min"] == int(df["i"].min())
    # columns / categorical work as for a frame; a RecordBatch too
    sub = tp.profile(table, columns=["i"], categorical=["i"])
    assert list(sub.columns) == ["i"] and sub["i"]["kind"] == "category"
    assert tp.profile(table.to_batches()[0])["s"]["top"] == want["s"]["top"]
    # a table with an int column holding nulls: exact ints (no float64 detour through pandas)
    t2 = pa.table({"n": pa.array([2**62 + 1, None, 2**62 + 3], pa.int64())})
    assert (tp.profile(t2)["n"]["min"], tp.profile(t2)["n"]["max"]) == (2**62 + 1, 2**62 + 3)
    with pytest.raises(KeyError, match="nope"):
        tp.profile(table, columns=["nope"])
    # drift takes a Table as its current data too
    assert not tp.drift(want, table).drift


# -- 5. NUL (and other control characters) in the HTML report ---------------------------------

_BAD_HTML_CHARS = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")


def test_html_report_escapes_nul_in_values_and_column_names(tmp_path):
    df = pd.DataFrame({"s": ["a\x00b", "a\x00b", "c\x1fd", "e"], "n\x00m": [1, 2, 3, 4]})
    prof = tp.profile(df)
    prof.save(tmp_path / "p")
    page = (tmp_path / "p" / "index.html").read_text(encoding="utf-8")
    assert "\x00" not in page and not _BAD_HTML_CHARS.search(page)
    assert "a\\x00b" in page and "n\\x00m" in page and "c\\x1fd" in page   # shown as Python's \xNN escapes
    # the data keeps the real value
    assert json.loads((tmp_path / "p" / "profile.json").read_text())["columns"]["s"]["top"][0]["value"] == "a\x00b"
    rep = tp.drift(prof, tp.profile(df.iloc[::-1]))
    rep.save(tmp_path / "d")
    page = (tmp_path / "d" / "index.html").read_text(encoding="utf-8")
    assert not _BAD_HTML_CHARS.search(page) and "n\\x00m" in page
    assert not _BAD_HTML_CHARS.search(prof._repr_html_())
