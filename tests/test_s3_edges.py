"""Object storage from a user's side, the cases tests/test_s3.py and tests/test_s3_cli.py do not
cover (issue #16): a write killed in its last steps read through one of its worker folders, the
empty "folder" the S3 console creates (a ``prefix/`` key), wrong credentials on every command, a
data folder or file given where a saved workflow is expected, and ``demo --workdir`` with a URL.

Same local S3 server (the ``s3`` fixture of conftest.py). Expected values are plain pandas or the
test's own s3fs client; nothing here asks tabprep what the answer should be.
"""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import tabprep as tp
from s3_helpers import (N, assert_matches, credentials_checked, make_workflow, put_raw, raw_frame, read_output,
                        reference)
from tabprep.backend import to_numpy
from tabprep.cli.main import cli
from tabprep.loader import DataLoader

SPEC = "features:\n  - columns: [cat]\n    ops: [Categorify]\n  - columns: [num, row]\n"


def run(*args, code: int = 0):
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result


# -- a killed write is refused through its worker folders too -------------------------------------------
def test_worker_folder_of_a_killed_split_write_is_refused(s3, monkeypatch):
    """``split_per_worker``: each training process reads its own ``out/worker_K``. A write killed
    after the data files but before the side files (no ``_schema.json`` anywhere yet) must not be
    readable through those folders: the output root holds the incomplete marker."""
    from tabprep.io import objectstore, writer

    frame = raw_frame(seed=71)
    put_raw(s3, "raw", frame)

    def killed(*args, **kwargs):
        raise SystemExit(9)

    with monkeypatch.context() as m, pytest.raises(SystemExit):
        m.setattr(writer, "_write_json", killed)  # dies before the first side file
        m.setattr(objectstore.RemoteStage, "abort", lambda self: None)  # a killed process cleans nothing
        tp.Dataset(s3.url("raw"), cpu=True).to_parquet(s3.url("out"), split_per_worker=2)
    keys = s3.keys("out")
    assert keys == [".tabprep-incomplete", "worker_0/part-00000.parquet", "worker_1/part-00000.parquet"], keys
    # what was written is real data: a reader that trusted it would get half the rows, silently
    assert len(s3.read_frame("out/worker_0/part-00000.parquet")) + len(
        s3.read_frame("out/worker_1/part-00000.parquet")) == N
    readers = {
        "worker folder": lambda: tp.Dataset(s3.url("out/worker_0"), cpu=True),
        "worker file": lambda: tp.Dataset(s3.url("out/worker_1/part-00000.parquet"), cpu=True),
        "glob": lambda: tp.Dataset(s3.url("out/worker_*/*.parquet"), cpu=True),
        "loader": lambda: DataLoader(s3.url("out/worker_0"), batch_size=8, cont_names=["num"], device="cpu"),
    }
    for what, read in readers.items():
        with pytest.raises(ValueError, match="half-written") as err:
            read()
        assert s3.url("out") + "'" in str(err.value) and "overwrite" in str(err.value), what
    # the next write with overwrite replaces it; the worker folders then read, all rows once
    tp.Dataset(s3.url("raw"), cpu=True).to_parquet(s3.url("out"), split_per_worker=2, overwrite=True)
    parts = [tp.Dataset(s3.url(f"out/worker_{w}"), cpu=True).compute() for w in range(2)]
    assert sorted(pd.concat(parts)["row"].tolist()) == list(range(N))


# -- the S3 console's empty folder -----------------------------------------------------------------------
def _console_folder(s3, key: str) -> None:
    """What "Create folder" in the S3 console makes: a zero-byte object named ``key/``."""
    s3.fs.call_s3("put_object", Bucket=s3.bucket, Key=key.rstrip("/") + "/", Body=b"")


def test_an_empty_console_folder_is_an_empty_folder(s3):
    """A prefix holding only the console's ``prefix/`` placeholder is empty, as an empty local folder
    is: every writer writes there without --overwrite, and the placeholder (the user's) stays."""
    frame = raw_frame(seed=73)
    put_raw(s3, "raw", frame)
    for key in ("out", "wf", "tfr", "gen"):
        _console_folder(s3, key)
    wf = make_workflow()
    ds = tp.Dataset(s3.url("raw"), cpu=True)
    wf.fit(ds).transform(ds).to_parquet(s3.url("out"))
    wf.save(s3.url("wf"))
    tp.Dataset(s3.url("out"), cpu=True).to_tfrecord(s3.url("tfr"))
    run("generate", "criteo", "--rows", "50", "--out", s3.url("gen"), "-q")
    for key in ("out", "wf", "tfr", "gen"):
        keys = s3.keys(key)
        assert "" in keys and "_SUCCESS" in keys, (key, keys)  # "" is the placeholder itself
    assert_matches(read_output(s3, "out"), reference(frame))
    assert_matches(tp.Dataset(s3.url("out"), cpu=True).compute(), reference(frame))
    assert_matches(tp.Workflow.load(s3.url("wf")).transform(tp.Dataset(frame, cpu=True)).compute(), reference(frame))
    # replacing them works, and still keeps the placeholder
    wf.transform(ds).to_parquet(s3.url("out"), overwrite=True, output_files=2)
    assert s3.keys("out") == ["", "_SUCCESS", "_metadata", "_metadata.json", "_schema.json", "part-00000.parquet",
                              "part-00001.parquet"]
    # a console folder with a user's file in it is still the user's
    _console_folder(s3, "user")
    s3.fs.pipe_file(f"{s3.bucket}/user/notes.txt", b"mine")
    with pytest.raises(FileExistsError, match="tabprep did not write it"):
        ds.to_parquet(s3.url("user"), overwrite=True)
    assert s3.keys("user") == ["", "notes.txt"]
    # a console folder as input: its data files, nothing else
    _console_folder(s3, "in")
    s3.put_frame("in/a.parquet", frame.iloc[:10])
    assert tp.Dataset(s3.url("in"), cpu=True).files == [s3.url("in/a.parquet")]


# -- wrong credentials --------------------------------------------------------------------------------------
def test_wrong_credentials_fail_every_command_clearly(s3, tmp_path, monkeypatch):
    """Every command, given a URL the credentials cannot read or write: a one-line error naming the
    URL and what to check, at once (no retry loop, no traceback)."""
    import uvicorn

    frame = raw_frame(seed=79)
    put_raw(s3, "raw", frame)
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    run("fit-transform", spec, s3.url("raw"), "--out", s3.url("out"), "--workflow-out", s3.url("wf"), "-q")
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: None)
    local = tmp_path / "local"
    local.mkdir()
    pd.DataFrame({"cat": ["a"], "num": [1.0], "row": [0]}).to_parquet(local / "a.parquet")
    commands = {
        "fit": ["fit", spec, s3.url("raw"), "--out", tmp_path / "wf"],
        "fit to s3": ["fit", spec, local, "--out", s3.url("wf2")],
        "transform": ["transform", s3.url("wf"), local, "--out", tmp_path / "o1"],
        "transform data": ["transform", tmp_path / "wf-local", s3.url("raw"), "--out", tmp_path / "o2"],
        "fit-transform": ["fit-transform", spec, local, "--out", s3.url("o3")],
        "convert": ["convert", s3.url("out"), "--out", tmp_path / "o4"],
        "check": ["check", spec, s3.url("raw")],
        "inspect workflow": ["inspect", s3.url("wf")],
        "inspect output": ["inspect", s3.url("out")],
        "generate": ["generate", "criteo", "--rows", "10", "--out", s3.url("gen")],
        "serve": ["serve", s3.url("wf")],
    }
    run("fit", spec, local, "--out", tmp_path / "wf-local", "-q")
    with credentials_checked(s3.endpoint):
        for what, args in commands.items():
            result = CliRunner().invoke(cli, [str(a) for a in args] + ["-q"], catch_exceptions=False)
            out = result.output
            assert result.exit_code in (1, 2), (what, result.exit_code, out)
            assert "credentials" in out and "AWS_ACCESS_KEY_ID" in out, (what, out)
            assert f"{s3.bucket}/" in out and "Traceback" not in out, (what, out)
    # nothing was written by the refused commands
    assert s3.keys("wf2") == [] and s3.keys("o3") == [] and s3.keys("gen") == []
    assert not any((tmp_path / n).exists() for n in ("o1", "o2", "o4"))


def test_wrong_credentials_in_python(s3):
    frame = raw_frame(seed=83)
    put_raw(s3, "raw", frame)
    ds = tp.Dataset(s3.url("raw"), cpu=True)
    wf = make_workflow().fit(ds)
    wf.save(s3.url("wf"))
    mem = tp.Dataset(frame.fillna({"cat": "x", "num": 0.0, "ival": 0}), cpu=True)
    calls = {
        "Dataset": lambda: tp.Dataset(s3.url("raw"), cpu=True),
        "to_parquet": lambda: mem.to_parquet(s3.url("o")),
        "to_tfrecord": lambda: mem.to_tfrecord(s3.url("t")),
        "save": lambda: wf.save(s3.url("wf2")),
        "load": lambda: tp.Workflow.load(s3.url("wf")),
        "loader": lambda: DataLoader(s3.url("raw"), batch_size=8, cont_names=["num"], device="cpu"),
    }
    with credentials_checked(s3.endpoint):
        for what, call in calls.items():
            with pytest.raises(OSError, match="credentials") as err:
                call()
            assert s3.url("") in str(err.value), what
    assert s3.keys("o") == [] and s3.keys("t") == [] and s3.keys("wf2") == []


# -- a URL that is not a saved workflow -----------------------------------------------------------------------
def test_a_data_folder_or_file_is_not_a_half_written_workflow(s3, tmp_path):
    """A data folder (or file) given as WF_DIR is "not a saved workflow", as locally, not a
    half-written one (that advice, "save it there again", would be wrong)."""
    frame = raw_frame(seed=89)
    put_raw(s3, "raw", frame)
    for url in (s3.url("raw"), s3.url("raw/part-0.parquet")):
        with pytest.raises(FileNotFoundError, match="not a saved tabprep workflow") as err:
            tp.Workflow.load(url)
        assert url + "'" in str(err.value) and "half-written" not in str(err.value)
        for args in (["inspect", url], ["transform", url, s3.url("raw"), "--out", tmp_path / "o"]):
            r = run(*args, code=2)
            assert "not a saved" in r.output and "half-written" not in r.output, r.output
    # a saved workflow that lost its _SUCCESS still is half-written
    make_workflow().fit(tp.Dataset(frame, cpu=True)).save(s3.url("wf"))
    s3.fs.rm_file(f"{s3.bucket}/wf/_SUCCESS")
    with pytest.raises(ValueError, match="half-written"):
        tp.Workflow.load(s3.url("wf"))


# -- demo --------------------------------------------------------------------------------------------------------
def test_demo_workdir_url(s3, tmp_path, monkeypatch):
    """``demo --workdir`` is a local folder: an s3:// URL is refused naming what to run instead (no
    local folder named "s3:" appears), a file:// URL is that local folder."""
    monkeypatch.chdir(tmp_path)
    r = run("demo", "--rows", "200", "--cpu", "--workdir", s3.url("demo"), "-q", code=2)
    assert "--workdir" in r.output and "local" in r.output and "tabprep generate" in r.output, r.output
    assert os.listdir(tmp_path) == [] and s3.keys("demo") == []
    run("demo", "--rows", "200", "--files", "1", "--cpu", "--workdir", "file://" + str(tmp_path / "d é"), "-q")
    out = tp.Dataset(str(tmp_path / "d é" / "out"), cpu=True).compute()
    raw = pd.read_parquet(tmp_path / "d é" / "raw" / "part-00000.parquet")
    assert len(out) == 200
    np.testing.assert_array_equal(out["label"].to_numpy(), raw["label"].to_numpy())
    assert not os.path.exists(tmp_path / "file:")
