"""Profile/drift leftovers from an adversarial review: a column all null in one file (Arrow
``null`` type) merges as nulls; datetime / duration columns get numeric profiles (microseconds)
so that a shifted time column drifts. Expected values recomputed with numpy / pandas."""
from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tabprep as tp


def _files(tmp_path, frames):
    paths = []
    for i, df in enumerate(frames):
        p = str(tmp_path / f"part{i}.parquet")
        df.to_parquet(p)
        paths.append(p)
    return paths


@pytest.mark.parametrize("order", ["null_last", "null_first", "all_null"])
def test_all_null_file_merges_as_nulls(tmp_path, order):
    full = pd.DataFrame({"s": ["a", "b", "a"], "x": [1, 2, 3]})
    empty = pd.DataFrame({"s": [None, None], "x": [4, 5]})
    frames = {"null_last": [full, empty], "null_first": [empty, full], "all_null": [empty, empty]}[order]
    paths = _files(tmp_path, frames)
    k = next(i for i, f in enumerate(frames) if f is empty)
    assert pq.read_schema(paths[k]).field("s").type == pa.null()
    prof = tp.profile(paths)
    whole = pd.concat(frames, ignore_index=True)
    c = prof.columns["s"]
    assert c["count"] == len(whole) and c["nulls"] == int(whole["s"].isna().sum())
    assert c["null_rate"] == pytest.approx(whole["s"].isna().mean())
    nonnull = whole["s"].dropna()
    assert c["distinct"] == nonnull.nunique()
    if len(nonnull):
        assert c["dtype"] in ("string", "large_string")
        vc = nonnull.value_counts()
        assert {d["value"]: d["count"] for d in c["top"]} == vc.to_dict()
    assert prof.columns["x"]["count"] == len(whole)


def test_all_null_object_frame_partitions_merge():
    dd = pytest.importorskip("dask.dataframe")
    df = pd.DataFrame({"s": pd.Series(["a", "b", None, None], dtype=object)})
    prof = tp.profile(dd.from_pandas(df, npartitions=2, sort=False))
    assert prof.columns["s"]["count"] == 4 and prof.columns["s"]["nulls"] == 2


def test_real_type_change_names_the_files(tmp_path):
    paths = _files(tmp_path, [pd.DataFrame({"v": [1, 2]}), pd.DataFrame({"v": ["a", "b"]})])
    try:
        tp.profile(paths)
    except Exception as exc:  # (the reader may refuse it first: then it must name the files too)
        msg = str(exc)
    else:
        pytest.fail("a column int in one file and string in another profiled silently")
    assert "'v'" in msg or "v" in msg
    assert os.path.basename(paths[0]) in msg and os.path.basename(paths[1]) in msg


def _times(n=20000, seed=0, unit="ns", tz=None, shift=pd.Timedelta(0)):
    r = np.random.default_rng(seed)
    t = pd.Timestamp("2022-01-01") + pd.to_timedelta(r.integers(0, 365 * 86400, n), unit="s") + shift
    t = pd.Series(t).astype(f"datetime64[{unit}]")
    if tz:
        t = t.dt.tz_localize(tz, ambiguous="NaT", nonexistent="NaT")
    return t


@pytest.mark.parametrize("unit,tz", [("ns", None), ("us", None), ("ms", None), ("s", None), ("ns", "UTC"),
                                     ("us", "Europe/Berlin")])
def test_datetime_numeric_profile_and_year_shift(unit, tz):
    t = _times(unit=unit, tz=tz)
    t[::97] = pd.NaT
    prof = tp.profile(pd.DataFrame({"t": t}))
    c = prof.columns["t"]
    valid = t.dropna()
    us = (valid.dt.tz_convert("UTC").dt.tz_localize(None) if tz else valid).astype("datetime64[us]").astype("int64")
    us = us.to_numpy()
    assert c["nulls"] == int(t.isna().sum()) and c["numeric_count"] == len(valid)
    assert c["time_unit"] == "us"
    assert c["min"] == us.min() and c["max"] == us.max()
    assert c["mean"] == pytest.approx(us.mean(), rel=1e-12)
    assert c["std"] == pytest.approx(us.std(ddof=1), rel=1e-6) or c["std"] == pytest.approx(us.std(), rel=1e-6)
    q50 = c["quantiles"]["0.5"]
    assert abs(np.mean(us <= q50) - 0.5) < 0.03
    zone = "UTC" if tz else None   # (a zoned column's times are UTC, written with +00:00)
    assert pd.Timestamp(c["min_time"]) == pd.Timestamp(int(us.min()), unit="us", tz=zone)
    assert pd.Timestamp(c["max_time"]) == pd.Timestamp(int(us.max()), unit="us", tz=zone)
    assert sum(c["histogram"]["counts"]) == pytest.approx(len(valid))
    same = tp.drift(prof, tp.profile(pd.DataFrame({"t": _times(seed=1, unit=unit, tz=tz)})))
    assert not same.drift, same.columns["t"]
    shifted = tp.drift(prof, tp.profile(pd.DataFrame({"t": _times(seed=1, unit=unit, tz=tz,
                                                                  shift=pd.Timedelta(days=365))})))
    e = shifted.columns["t"]
    assert shifted.drift and "js" in e["exceeded"] and "psi" in e["exceeded"]
    # independent JS on the reference's 20 quantile bins (+2 outer): about half the mass moved out
    assert e["metrics"]["js"] > 0.3


def test_duration_numeric_profile_and_shift():
    r = np.random.default_rng(2)
    d = pd.Series(pd.to_timedelta(r.integers(0, 3600, 10000), unit="s"))
    prof = tp.profile(pd.DataFrame({"d": d}))
    c = prof.columns["d"]
    us = d.astype("timedelta64[us]").astype("int64").to_numpy()
    assert c["time_unit"] == "us" and c["min"] == us.min() and c["max"] == us.max()
    assert c["mean"] == pytest.approx(us.mean(), rel=1e-12)
    rep = tp.drift(prof, tp.profile(pd.DataFrame({"d": d + pd.Timedelta(hours=2)})))
    assert rep.drift and "js" in rep.columns["d"]["exceeded"]


def test_old_profile_without_time_metrics_still_compares(tmp_path):
    t = _times()
    doc = tp.profile(pd.DataFrame({"t": t})).doc
    old = json.loads(json.dumps(doc))
    for k in ("numeric_count", "min", "max", "mean", "std", "kll", "kll_every", "quantile_thinning_error",
              "quantiles", "histogram", "time_unit", "min_time", "max_time", "mean_time"):
        old["columns"]["t"].pop(k, None)
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(old))
    for ref, cur in [(str(path), tp.profile(pd.DataFrame({"t": t}))), (tp.profile(pd.DataFrame({"t": t})), str(path))]:
        rep = tp.drift(ref, cur)
        assert "js" not in rep.columns["t"]["metrics"] and rep.columns["t"]["status"] in ("ok", "unchecked")
        rep.save(str(tmp_path / "out"))


def test_time_profile_html_shows_iso_times(tmp_path):
    prof = tp.profile(pd.DataFrame({"t": _times()}))
    html = prof._repr_html_() if hasattr(prof, "_repr_html_") else None
    if html is None:
        from tabprep.quality.html import profile_html
        html = profile_html(prof)
    assert prof.columns["t"]["min_time"][:10] in html
