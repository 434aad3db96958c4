"""A symbolic link as the output path (``--out`` on another disk): with ``--overwrite`` the link
is kept, the data lands where it points, nothing is left behind and no write stalls (issue #30)."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pandas as pd
from click.testing import CliRunner

import tabprep as tp
from tabprep import ops
from tabprep.cli.main import cli


def _hidden(*folders: Path) -> list:
    return sorted(n for f in folders for n in os.listdir(f) if ".tabprep-" in n)


def _read(folder: Path) -> list:
    return sorted(pd.concat([pd.read_parquet(p) for p in sorted(folder.glob("*.parquet"))])["x"].tolist())


def test_library_write_through_a_link_keeps_it(tmp_path):
    disk2 = tmp_path / "disk2"
    (disk2 / "real_out").mkdir(parents=True)
    here = tmp_path / "here"
    here.mkdir()
    link = here / "out_link"
    link.symlink_to(disk2 / "real_out")
    tp.Dataset(pd.DataFrame({"x": [0]})).to_parquet(str(tmp_path / "warm"))  # imports, first-use costs
    for version in (1, 2, 3):
        start = time.monotonic()
        tp.Dataset(pd.DataFrame({"x": [version * 10 + i for i in range(5)]})).to_parquet(str(link), overwrite=True)
        assert time.monotonic() - start < 3.0, "a write through a link stalled"
        assert link.is_symlink() and os.readlink(link) == str(disk2 / "real_out")
        assert _read(disk2 / "real_out") == [version * 10 + i for i in range(5)]
        assert _hidden(here, disk2) == []


def test_cli_transform_overwrite_through_a_link(tmp_path):
    df = pd.DataFrame({"c": ["a", "b", "a"], "x": [1, 2, 3]})
    tp.Workflow((["c"] >> ops.Categorify()) + ["x"]).fit(tp.Dataset(df)).save(str(tmp_path / "wf"))
    df.to_parquet(tmp_path / "d.parquet")
    (tmp_path / "disk2" / "real").mkdir(parents=True)
    link = tmp_path / "out_link"
    link.symlink_to(tmp_path / "disk2" / "real")
    for _ in range(2):
        r = CliRunner().invoke(cli, ["transform", str(tmp_path / "wf"), str(tmp_path / "d.parquet"),
                                     "--out", str(link), "--overwrite", "-q"])
        assert r.exit_code == 0, r.output
        assert link.is_symlink() and _read(tmp_path / "disk2" / "real") == [1, 2, 3]
        assert _hidden(tmp_path, tmp_path / "disk2") == []


def test_saved_workflow_through_a_link(tmp_path):
    (tmp_path / "real_wf").mkdir()
    link = tmp_path / "wf_link"
    link.symlink_to(tmp_path / "real_wf")
    for v in (1.0, 5.0):
        wf = tp.Workflow(["x"] >> ops.Normalize()).fit(tp.Dataset(pd.DataFrame({"x": [v, v + 2.0, v + 4.0]})))
        wf.save(str(link))
        assert link.is_symlink() and (tmp_path / "real_wf" / "workflow.json").exists()
        got = tp.Workflow.load(str(link)).transform(pd.DataFrame({"x": [v]}))["x"].tolist()
        assert got == [-1.0]  # (v - mean) / sample std = -2 / 2
        assert _hidden(tmp_path) == []
