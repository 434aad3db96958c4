"""The HTML reports in a real browser (issue #35): Chromium renders a profile and a drift report
headless, offline; the screenshot shows the charts' bars and curves in both series' colours, and
the browser logs no console error. CI installs Chromium (`.ci/run`: Debian's package)."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep.quality.html import CUR_COLOR, REF_COLOR

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
         "--enable-logging=stderr", "--v=0"]


def _browser() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("the report test needs Chromium: apt-get install -y chromium (.ci/run installs it)")


def _frame(seed, shift=False):
    r = np.random.default_rng(seed)
    n = 5000
    x = r.normal(0, 1, n) * (2 if shift else 1)
    y = r.normal(0, 1, n)
    y[r.random(n) < (0.3 if shift else 0.02)] = np.nan
    c = (r.zipf(1.5, n) % 200).astype("int64")
    return pd.DataFrame({"x": x, "y": y, "c": c, "s": np.array(["a", "b", "c"])[r.integers(0, 3, n)]})


def _rgb(color: str):
    return tuple(int(color[i:i + 2], 16) for i in (1, 3, 5))


def _render(html, tmp_path, name):
    from PIL import Image

    png = tmp_path / f"{name}.png"
    proc = subprocess.run([_browser(), *FLAGS, f"--user-data-dir={tmp_path / ('chrome-' + name)}",
                           "--window-size=1200,1200", f"--screenshot={png}", html.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert png.exists(), proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert console == [], console
    pixels = np.asarray(Image.open(png).convert("RGB")).reshape(-1, 3)
    counts = {c: int(np.all(pixels == _rgb(c), axis=1).sum()) for c in (REF_COLOR, CUR_COLOR)}
    return pixels, counts


def test_profile_and_drift_reports_draw_in_chromium(tmp_path):
    ref = tp.profile(_frame(0), categorical=["c"])
    prof_html = tmp_path / "profile"
    ref.save(str(prof_html))
    report = tp.drift(ref, _frame(1, shift=True))
    drift_html = tmp_path / "drift"
    report.save(str(drift_html))
    for folder, two in ((prof_html, False), (drift_html, True)):
        page = (folder / "index.html").read_text()
        assert "http://" not in page and "https://" not in page and "<script" not in page  # offline, self-contained
        assert page.count('data-chart="hist"') == 2 and page.count('data-chart="topk"') == 2
        pixels, counts = _render(folder / "index.html", tmp_path, folder.name)
        non_white = float(np.any(pixels != 255, axis=1).mean())
        assert non_white > 0.03, non_white  # not a blank page
        assert counts[REF_COLOR] > 300, counts  # the reference's bars and curves drew
        if two:
            assert counts[CUR_COLOR] > 300, counts  # and the current data's
