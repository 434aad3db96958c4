"""The CLI keeps the library's promises: no label leak, no lost data, no incomplete output read (issue #11).

Values are compared with references written here in plain numpy/pandas.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import tabprep as tp
from tabprep.cli.main import cli

from cli_helpers import cardinalities as _state, run

TE_SPEC = """\
features:
  - columns: [C1]
    ops: [{TargetEncoding: {target: label, kfold: 5, p_smooth: 20, fold_seed: 42}}]
  - columns: [label]
"""
CAT_SPEC = """\
features:
  - columns: [C1]
    ops: [{Categorify: {freq_threshold: %d}}]
  - columns: [label]
"""



def _data(folder: Path, rows: int = 3000, seed: int = 0, files: int = 1) -> Path:
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        c = pd.Series(rng.integers(0, 30, rows)).astype("Int64")
        c[rng.random(rows) < 0.05] = pd.NA
        # the label depends on the category, so an in-sample encoding visibly leaks
        label = ((c.fillna(0).to_numpy() % 3 == 0) ^ (rng.random(rows) < 0.2)).astype("int64")
        pd.DataFrame({"C1": c, "label": label}).to_parquet(folder / f"part{f}.parquet", row_group_size=rows)
    return folder


def _splitmix64(x: np.ndarray, seed: int) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64) + np.uint64((seed * 0x9E3779B97F4A7C15) % 2**64)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _oof_reference(df: pd.DataFrame, k: int = 5, p: float = 20.0, seed: int = 42) -> np.ndarray:
    """Out-of-fold target encoding, written from the documented definition."""
    fold = (_splitmix64(np.arange(len(df)), seed) % np.uint64(k)).astype(int)
    y = df["label"].to_numpy(dtype=float)
    cat = df["C1"]
    out = np.empty(len(df))
    for f in range(k):
        other = fold != f
        gm = y[other].mean()
        stats = pd.DataFrame({"c": cat[other], "y": y[other]}).dropna().groupby("c")["y"].agg(["sum", "count"])
        rows = np.flatnonzero(fold == f)
        for r in rows:
            v = cat.iloc[r]
            if pd.isna(v) or v not in stats.index:
                out[r] = gm
            else:
                s, n = stats.loc[v, "sum"], stats.loc[v, "count"]
                out[r] = (s + p * gm) / (n + p)
    return out.astype("float32")


def test_fit_transform_target_encoding_is_out_of_fold(tmp_path):
    data = _data(tmp_path / "data")
    (tmp_path / "spec.yaml").write_text(TE_SPEC)
    run("fit-transform", tmp_path / "spec.yaml", data, "--out", tmp_path / "out", "-q")
    got = pd.read_parquet(tmp_path / "out")["TE_C1_label"].to_numpy()
    ref = _oof_reference(pd.read_parquet(data / "part0.parquet"))
    np.testing.assert_allclose(got, ref, rtol=1e-6)


def test_fit_refuses_to_overwrite_its_input(tmp_path):
    data = _data(tmp_path / "data")
    (tmp_path / "spec.yaml").write_text(CAT_SPEC % 0)
    before = sorted(p.name for p in data.iterdir())
    result = run("fit", tmp_path / "spec.yaml", data, "--out", data, "--overwrite", code=2)
    assert "input" in result.output.lower()
    assert sorted(p.name for p in data.iterdir()) == before
    pd.read_parquet(data / "part0.parquet")  # still readable


@pytest.mark.parametrize("cmd", ["fit-transform", "transform", "convert"])
def test_output_inside_or_equal_to_input_is_refused(tmp_path, cmd):
    data = _data(tmp_path / "data")
    (tmp_path / "spec.yaml").write_text(CAT_SPEC % 0)
    run("fit", tmp_path / "spec.yaml", data, "--out", tmp_path / "wf", "-q")
    args = {"fit-transform": ["fit-transform", tmp_path / "spec.yaml", data],
            "transform": ["transform", tmp_path / "wf", data],
            "convert": ["convert", data]}[cmd]
    run(*args, "--out", data, "--overwrite", code=2)
    assert (data / "part0.parquet").exists()
    if cmd == "fit-transform":
        run(*args, "--out", tmp_path / "o2", "--workflow-out", data, "--overwrite", code=2)
        assert (data / "part0.parquet").exists()


def _incomplete_output(tmp_path: Path) -> Path:
    data = _data(tmp_path / "data", files=3)
    (tmp_path / "spec.yaml").write_text(CAT_SPEC % 0)
    run("fit-transform", tmp_path / "spec.yaml", data, "--out", tmp_path / "out", "--output-files", "3", "-q")
    out = tmp_path / "out"
    (out / "_SUCCESS").unlink()
    sorted(out.glob("part-*.parquet"))[-1].unlink()
    return out


def test_dataset_refuses_an_incomplete_output_folder(tmp_path):
    out = _incomplete_output(tmp_path)
    with pytest.raises(Exception, match=r"(?i)(incomplete|_SUCCESS)"):
        tp.Dataset(str(out)).to_ddf().compute()


def test_convert_refuses_an_incomplete_output_folder(tmp_path):
    out = _incomplete_output(tmp_path)
    result = CliRunner().invoke(cli, ["convert", str(out), "--to", "tfrecord", "--out", str(tmp_path / "tfr")])
    assert result.exit_code != 0
    assert "_SUCCESS" in result.output or "incomplete" in result.output.lower()
    assert not (tmp_path / "tfr" / "_SUCCESS").exists()


def test_a_missing_part_with_success_present_is_refused(tmp_path):
    data = _data(tmp_path / "data", files=3)
    (tmp_path / "spec.yaml").write_text(CAT_SPEC % 0)
    run("fit-transform", tmp_path / "spec.yaml", data, "--out", tmp_path / "out", "--output-files", "3", "-q")
    part = sorted((tmp_path / "out").glob("part-*.parquet"))[1]
    part.unlink()
    with pytest.raises(Exception, match=part.name):
        tp.Dataset(str(tmp_path / "out")).to_ddf().compute()


def test_stale_temporaries_are_cleaned_on_the_next_run(tmp_path):
    data = _data(tmp_path / "data")
    (tmp_path / "spec.yaml").write_text(CAT_SPEC % 0)
    stale = tmp_path / ".out.tabprep-tmp-deadbeef"
    stale.mkdir()
    (stale / "part-00000.parquet").write_bytes(b"half")
    run("fit-transform", tmp_path / "spec.yaml", data, "--out", tmp_path / "out", "-q")
    leftovers = [p.name for p in tmp_path.iterdir() if "tabprep-tmp" in p.name or "-old-" in p.name]
    assert leftovers == []


# -- fit-transform commits output and workflow together ------------------------------------------------
_KILL_SCRIPT = """
import sys
from tabprep.cli.main import main
sys.exit(main(sys.argv[1:]))
"""




def _timed_run(cmd, cwd: Path, out: Path):
    """Run ``cmd`` to the end; return (seconds until a temporary appeared next to ``out``, seconds
    until the last one was gone), polling every few milliseconds: the window the kills aim at."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd)
    first = last = None
    while proc.poll() is None:
        hidden = [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.tabprep-")]
        now = time.monotonic() - start
        if hidden:
            first = now if first is None else first
            last = now
        time.sleep(0.005)
    assert proc.returncode == 0
    return first, last


@pytest.mark.slow
def test_fit_transform_overwrite_killed_at_random_points_keeps_output_and_workflow_consistent(tmp_path):
    data = _data(tmp_path / "data", rows=20000, files=4)
    out, wf = tmp_path / "out", tmp_path / "wf"
    # two specs whose states differ (the cardinality of C1), so a mix of old and new is visible
    # (the first version used freq_threshold 0 / 150, which both keep all 30 categories)
    specs = [tmp_path / "spec_all.yaml", tmp_path / "spec_max.yaml"]
    specs[0].write_text(CAT_SPEC % 0)
    specs[1].write_text(CAT_SPEC.replace("freq_threshold: %d", "max_size: 12"))
    run("fit-transform", specs[1], data, "--out", out, "--workflow-out", wf, "-q")
    small = _state(out, wf)
    run("fit-transform", specs[0], data, "--out", out, "--workflow-out", wf, "--overwrite", "-q")
    old = _state(out, wf)
    assert old[0] == old[1] and small[0] == small[1] and old != small
    script = tmp_path / "run.py"
    script.write_text(_KILL_SCRIPT)

    def command(spec):
        return [sys.executable, str(script), "fit-transform", str(spec), str(data), "--out", str(out),
                "--workflow-out", str(wf), "--overwrite", "-q"]

    # aim at the write and commit (a small part of a run that mostly imports and fits): kill
    # times spread around the window a complete run shows on this machine
    first, last = _timed_run(command(specs[1]), tmp_path, out)
    lo, hi = max(0.2, (first or 1.0) - 0.5), (last or 3.0) + 0.3
    rng = np.random.default_rng(0)
    for i in range(6):
        spec = specs[i % 2]
        proc = subprocess.Popen(command(spec), cwd=tmp_path)
        time.sleep(float(rng.uniform(lo, hi)))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait()
        state = _state(out, wf)
        if state is None:
            # allowed only if a reader refuses it; the next run must restore a complete state
            run("fit-transform", specs[0], data, "--out", out, "--workflow-out", wf, "--overwrite", "-q")
            state = _state(out, wf)
        assert state[0] == state[1], f"output and workflow disagree after a kill (run {i}): {state}"
        assert (out / "_SUCCESS").exists()
        tp.Workflow.load(wf)
    assert sorted(os.listdir(data)) == [f"part{f}.parquet" for f in range(4)]
