"""Folders on disk keep their promises at every step (issue #11): CLI commits, crashes at each step of
a joint commit, generated data, and readers refusing what is incomplete or inconsistent.

Complements tests/test_trust_cli.py (random kill times) with kills at each step of the commit
protocol, and tests/test_trust_read.py with the cases where files must still be read.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import tabprep as tp
from tabprep import ops
from tabprep.cli.main import cli

from cli_helpers import cardinalities as _state, run
from tabprep.io import commit

SPEC = """\
features:
  - columns: [C1]
    ops: [{Categorify: {%s}}]
  - columns: [label]
"""



def _data(folder: Path, rows: int = 2000, files: int = 2, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        pd.DataFrame({"C1": rng.integers(0, 30, rows), "label": rng.integers(0, 2, rows)}).to_parquet(
            folder / f"part{f}.parquet")
    return folder


def _hidden(folder: Path):
    return sorted(p.name for p in folder.iterdir() if ".tabprep-" in p.name)




# -- a joint commit killed at each step --------------------------------------------------------------------
_KILL_AT = """
import os, signal, sys
from tabprep.io import commit

point, nth = sys.argv[1], int(sys.argv[2])
calls = [0]
original = commit.Transaction.__dict__[point]
func = original.__func__ if isinstance(original, staticmethod) else original

def patched(*args, **kwargs):
    result = func(*args, **kwargs)
    calls[0] += 1
    if calls[0] == nth:  # right after this step: what a power-cut-free crash leaves
        os.kill(os.getpid(), signal.SIGKILL)
    return result

setattr(commit.Transaction, point, staticmethod(patched) if isinstance(original, staticmethod) else patched)
from tabprep.cli.main import main
sys.exit(main(sys.argv[3:]))
"""

# (step, nth call): before the commit record the old versions stay; from the record on the new ones win
KILL_POINTS = [("stage", 1, "old"), ("stage", 2, "old"), ("_prepare", 2, "old"), ("_write_record", 1, "new"),
               ("_move_aside", 1, "new"), ("_move_aside", 2, "new"), ("_move_in", 1, "new")]


@pytest.mark.parametrize("point,nth,winner", KILL_POINTS, ids=[f"{p}-{n}" for p, n, _ in KILL_POINTS])
def test_fit_transform_killed_at_each_commit_step(tmp_path, point, nth, winner):
    data = _data(tmp_path / "data")
    out, wf = tmp_path / "out", tmp_path / "wf"
    (tmp_path / "all.yaml").write_text(SPEC % "freq_threshold: 0")
    (tmp_path / "small.yaml").write_text(SPEC % "max_size: 12")
    run("fit-transform", tmp_path / "small.yaml", data, "--out", out, "--workflow-out", wf, "-q")
    new = _state(out, wf)
    run("fit-transform", tmp_path / "all.yaml", data, "--out", out, "--workflow-out", wf, "--overwrite", "-q")
    old = _state(out, wf)
    assert old != new and old[0] == old[1] and new[0] == new[1]
    script = tmp_path / "kill.py"
    script.write_text(_KILL_AT)
    proc = subprocess.run([sys.executable, str(script), point, str(nth), "fit-transform", str(tmp_path / "small.yaml"),
                           str(data), "--out", str(out), "--workflow-out", str(wf), "--overwrite", "-q"],
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode == -9, "the kill point was not reached"
    assert _hidden(tmp_path), "the kill left no temporaries: it did not hit the commit"
    state = _state(out, wf)
    assert state is None or state[0] == state[1], state  # never a mix
    if not out.exists():
        # a reader of the missing path completes the interrupted commit, then reads it
        assert tp.Dataset(str(out)).num_rows == 4000
    else:
        tp.Dataset(str(out)).compute()  # what is there is complete
    # the next run at these paths finishes or undoes the commit (as `fit-transform` does before its job)
    commit.recover(wf)
    commit.recover(out)
    assert _hidden(tmp_path) == []
    assert _state(out, wf) == (new if winner == "new" else old)
    assert sorted(os.listdir(data)) == ["part0.parquet", "part1.parquet"]


def test_a_later_cli_run_cleans_a_crashed_commit(tmp_path):
    data = _data(tmp_path / "data")
    out, wf = tmp_path / "out", tmp_path / "wf"
    (tmp_path / "s.yaml").write_text(SPEC % "freq_threshold: 0")
    run("fit-transform", tmp_path / "s.yaml", data, "--out", out, "--workflow-out", wf, "-q")
    script = tmp_path / "kill.py"
    script.write_text(_KILL_AT)
    subprocess.run([sys.executable, str(script), "_move_in", "1", "fit-transform", str(tmp_path / "s.yaml"), str(data),
                    "--out", str(out), "--workflow-out", str(wf), "--overwrite", "-q"], cwd=tmp_path,
                   env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert not wf.exists() and _hidden(tmp_path)
    # `fit` at the workflow path: the check before the job completes the crashed commit first
    run("fit", tmp_path / "s.yaml", data, "--out", wf, "--overwrite", "-q")
    assert _hidden(tmp_path) == [] and (out / "_SUCCESS").exists()
    tp.Workflow.load(str(wf))


# -- refusals happen before any work, naming both paths --------------------------------------------------
def test_workflow_out_inside_out_is_refused_before_fitting(tmp_path):
    data = _data(tmp_path / "data")
    (tmp_path / "s.yaml").write_text(SPEC % "freq_threshold: 0")
    r = run("fit-transform", tmp_path / "s.yaml", data, "--out", tmp_path / "o", "--workflow-out", tmp_path / "o" / "wf",
            code=2)
    assert "--workflow-out" in r.output and "--out" in r.output and "fit:" not in r.output
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("cmd", ["fit", "fit-transform", "convert"])
def test_output_holding_an_input_file_is_refused_before_work(tmp_path, cmd):
    data = _data(tmp_path / "data")
    (tmp_path / "s.yaml").write_text(SPEC % "freq_threshold: 0")
    args = {"fit": ["fit", tmp_path / "s.yaml"], "fit-transform": ["fit-transform", tmp_path / "s.yaml"],
            "convert": ["convert"]}[cmd]
    # the input is a file inside the output folder: replacing the folder would delete it
    r = run(*args, data / "part0.parquet", "--out", data, "--overwrite", code=2)
    assert str(data) in r.output and "part0.parquet" in r.output
    assert "fit:" not in r.output and "convert:" not in r.output
    assert sorted(os.listdir(data)) == ["part0.parquet", "part1.parquet"]


def test_overwrite_never_replaces_a_folder_tabprep_did_not_write_exit_2(tmp_path):
    data = _data(tmp_path / "data")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    (tmp_path / "s.yaml").write_text(SPEC % "freq_threshold: 0")
    for args in (["convert", data], ["fit-transform", tmp_path / "s.yaml", data], ["fit", tmp_path / "s.yaml", data]):
        r = run(*args, "--out", mine, "--overwrite", code=2)
        assert "tabprep did not write it" in r.output and "fit:" not in r.output
    r = run("generate", "criteo", "--rows", "10", "--out", mine, "--overwrite", code=2)
    assert "tabprep did not write it" in r.output
    assert (mine / "notes.txt").read_text() == "keep me" and sorted(os.listdir(mine)) == ["notes.txt"]


def test_stale_temporaries_of_a_workflow_path_are_cleaned_by_fit(tmp_path):
    data = _data(tmp_path / "data")
    (tmp_path / "s.yaml").write_text(SPEC % "freq_threshold: 0")
    stale = tmp_path / ".wf.tabprep-tmp-0123abcd"
    stale.mkdir()
    (stale / "workflow.json").write_text("{")
    run("fit", tmp_path / "s.yaml", data, "--out", tmp_path / "wf", "-q")
    assert _hidden(tmp_path) == []


# -- generate ------------------------------------------------------------------------------------------
def test_generated_data_is_a_verified_output(tmp_path):
    out = tmp_path / "gen"
    run("generate", "movielens", "--rows", "500", "--files", "2", "--out", out, "-q")
    ds = tp.Dataset(str(out))
    assert ds.num_rows == 500
    run("generate", "movielens", "--rows", "300", "--files", "3", "--out", out, "-q", code=2)  # no --overwrite
    run("generate", "movielens", "--rows", "300", "--files", "3", "--out", out, "--overwrite", "-q")
    assert tp.Dataset(str(out)).num_rows == 300 and _hidden(tmp_path) == []
    (out / "part-00001.parquet").unlink()
    with pytest.raises(ValueError, match="part-00001.parquet"):
        tp.Dataset(str(out))


# -- readers: what they refuse, what they still read ---------------------------------------------------------
def _output(tmp_path: Path, **kw) -> Path:
    data = _data(tmp_path / "data", files=3)
    (tmp_path / "s.yaml").write_text(SPEC % "freq_threshold: 0")
    extra = [a for k, v in kw.items() for a in (f"--{k.replace('_', '-')}", v)]
    run("fit-transform", tmp_path / "s.yaml", data, "--out", tmp_path / "out", "-q", *extra)
    return tmp_path / "out"


def test_a_part_whose_row_count_changed_is_refused(tmp_path):
    out = _output(tmp_path, output_files=3)
    part = out / "part-00001.parquet"
    pq.write_table(pq.read_table(part).slice(0, 10), part)
    with pytest.raises(ValueError, match=r"part-00001\.parquet holds 10 rows .* lists 2000"):
        tp.Dataset(str(out)).to_ddf()
    result = CliRunner().invoke(cli, ["convert", str(out), "--out", str(tmp_path / "c")])
    assert result.exit_code != 0 and "part-00001.parquet" in result.output
    assert not (tmp_path / "c").exists()


def test_a_file_added_to_an_output_is_refused(tmp_path):
    out = _output(tmp_path)
    shutil.copy(out / "part-00000.parquet", out / "part-99999.parquet")
    with pytest.raises(ValueError, match=r"part-99999\.parquet .*not in its _metadata\.json"):
        tp.Dataset(str(out))


def test_the_loader_refuses_an_incomplete_output(tmp_path):
    from tabprep.loader.core import DataLoader

    out = _output(tmp_path)
    (out / "_SUCCESS").unlink()
    with pytest.raises(ValueError, match="_SUCCESS"):
        DataLoader(str(out), batch_size=100, device="cpu")


def test_worker_folders_and_single_parts_of_a_complete_output_are_read(tmp_path):
    out = _output(tmp_path, split_per_worker=2)
    whole = pd.read_parquet(tmp_path / "data")
    got = [tp.Dataset(str(out / f"worker_{w}")).compute() for w in range(2)]
    assert sum(len(g) for g in got) == len(whole) == tp.Dataset(str(out)).num_rows
    assert abs(len(got[0]) - len(got[1])) <= 1
    # the worker folder's own _schema.json is used (tags, cardinality)
    assert tp.Dataset(str(out / "worker_0")).schema["C1"].properties.get("cardinality")
    (out / "_SUCCESS").unlink()
    with pytest.raises(ValueError, match="_SUCCESS"):
        tp.Dataset(str(out / "worker_1"))
    with pytest.raises(ValueError, match="_SUCCESS"):
        tp.Dataset(str(out / "worker_1" / "part-00000.parquet"))


def test_schema_json_is_not_inherited_from_folders_above(tmp_path):
    out = _output(tmp_path)
    assert tp.Dataset(str(out)).schema["C1"].properties.get("cardinality")
    other = tmp_path / "a"
    (other / "b" / "c").mkdir(parents=True)
    shutil.copy(out / "_schema.json", other / "_schema.json")
    pd.DataFrame({"C1": [1, 2], "label": [0, 1]}).to_parquet(other / "b" / "c" / "x.parquet")
    schema = tp.Dataset(str(other / "b" / "c" / "x.parquet")).schema
    assert "cardinality" not in schema["C1"].properties and not schema["C1"].tags


def test_int_widths_and_all_null_columns_may_differ_between_files(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    pq.write_table(pa.table({"C1": pa.array([1, 2, 3], pa.int32()), "x": pa.array([None, None, None], pa.null())}),
                   folder / "a.parquet")
    pq.write_table(pa.table({"C1": pa.array([4, 5], pa.int64()), "x": pa.array([1.5, None], pa.float64())}),
                   folder / "b.parquet")
    got = tp.Dataset(str(folder)).compute()
    assert got["C1"].tolist() == [1, 2, 3, 4, 5]


def test_int_and_float_of_one_column_in_two_files_is_refused(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    pd.DataFrame({"C1": [1, 2], "label": [0, 1]}).to_parquet(folder / "a.parquet")
    pd.DataFrame({"C1": [1.0, np.nan], "label": [0, 1]}).to_parquet(folder / "b.parquet")
    with pytest.raises(ValueError, match=r"column 'C1' is double \(float\) in the parquet file .*b\.parquet"):
        tp.Workflow((["C1"] >> ops.Categorify()) + ["label"]).fit(tp.Dataset(str(folder)))


def test_read_errors_chain_the_arrow_error(tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 not really")
    with pytest.raises(ValueError, match="bad.parquet") as info:
        tp.Dataset(str(bad)).schema
    assert isinstance(info.value.__cause__, pa.ArrowException)


@pytest.mark.parametrize("read", [lambda p: tp.Dataset(p).compute(),
                                  lambda p: tp.profile(p)],  # (a profile reads one column at a time)
                         ids=["dataset", "profile"])
def test_a_corrupt_data_page_names_the_file(tmp_path, read):
    path = tmp_path / "x.parquet"
    pd.DataFrame({"a": np.arange(100_000), "b": np.random.default_rng(0).random(100_000)}).to_parquet(path)
    raw = bytearray(path.read_bytes())
    raw[100:5000] = b"\x55" * 4900  # inside the first data pages; the footer stays readable
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"row groups \[0\] of the parquet file .*x\.parquet") as info:
        read(str(path))
    assert isinstance(info.value.__cause__, (pa.ArrowException, OSError))
