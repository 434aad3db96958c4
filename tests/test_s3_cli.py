"""Object storage from the command line: every command takes s3:// paths (issue #16).

Credentials and the endpoint come from the environment (``AWS_*``, set by the ``s3`` fixture of
conftest.py for a local moto server) or ``--storage-option``. References: the same commands on
local copies of the data, and plain pandas; outputs are read with the test's own s3fs client.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
from click.testing import CliRunner
from s3fs import S3FileSystem

from tabprep.cli.main import cli
from s3_helpers import N, dead_endpoint, make_workflow, put_raw, raw_frame, read_output, write_local_raw

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEC = """\
features:
  - columns: [cat]
    ops: [Categorify]
  - columns: [num]
    ops: [FillMissing, Normalize]
  - columns: [ival]
    ops: [FillMissing]
  - columns: [row, label]
"""


def run(*args, code: int = 0):
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result


def raw_and_spec(s3, tmp_path, seed: int):
    """The raw frame of ``seed``, put on S3 under ``raw``, and the spec file written in ``tmp_path``."""
    frame = raw_frame(seed=seed)
    put_raw(s3, "raw", frame)
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    return frame, spec


def sorted_rows(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values("row").reset_index(drop=True)


def test_fit_transform_s3_to_s3_with_environment_credentials(s3, tmp_path):
    """The real command in a subprocess: credentials and endpoint only from AWS_* variables."""
    frame, spec = raw_and_spec(s3, tmp_path, seed=43)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    assert "AWS_ENDPOINT_URL" in env and "AWS_ACCESS_KEY_ID" in env
    res = subprocess.run([sys.executable, "-m", "tabprep.cli", "fit-transform", str(spec), s3.url("raw"),
                          "--out", s3.url("out"), "--workflow-out", s3.url("wf"), "--output-files", "2"],
                         env=env, capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr
    assert f"-> 2 parquet files in {s3.url('out')}" in res.stdout
    assert {"_SUCCESS", "part-00000.parquet", "part-00001.parquet"} <= set(s3.keys("out"))
    assert {"_SUCCESS", "workflow.json"} <= set(s3.keys("wf"))
    assert not any("incomplete" in k for k in s3.keys("out") + s3.keys("wf"))
    # the same command on local files: identical values
    local = write_local_raw(tmp_path / "raw", frame)
    run("fit-transform", spec, local, "--out", tmp_path / "out", "--output-files", "2", "-q")
    want = pd.concat([pd.read_parquet(tmp_path / "out" / f"part-0000{i}.parquet") for i in range(2)])
    got = read_output(s3, "out")
    pd.testing.assert_frame_equal(sorted_rows(got), sorted_rows(want))
    # independent check of one column: FillMissing fills the nulls of ival with 0
    np.testing.assert_array_equal(sorted_rows(got)["ival"].to_numpy(), frame["ival"].fillna(0).to_numpy("int64"))


def test_every_command_takes_s3_paths(s3, tmp_path):
    frame, spec = raw_and_spec(s3, tmp_path, seed=47)
    run("check", spec, s3.url("raw"), "-q")
    run("fit", spec, s3.url("raw"), "--out", s3.url("wf"), "-q")
    assert "_SUCCESS" in s3.keys("wf")
    run("transform", s3.url("wf"), s3.url("raw"), "--out", s3.url("tfr"), "--to", "tfrecord", "--batch-size", "32",
        "-q")
    assert {"_SUCCESS", "tfrecord_spec.json", "part-00000.tfrecord"} <= set(s3.keys("tfr"))
    spec_json = json.loads(s3.fs.cat_file(f"{s3.bucket}/tfr/tfrecord_spec.json"))
    assert spec_json["rows"] == N and spec_json["layout"] == "prebatched"
    info = json.loads(run("inspect", s3.url("wf"), "--json").output)
    assert info["embedding_sizes"]["cat"][0] == 3 + frame["cat"].nunique()
    run("transform", s3.url("wf"), s3.url("raw"), "--out", s3.url("out"), "-q")
    out_info = json.loads(run("inspect", s3.url("out"), "--json").output)
    assert out_info["complete"] and out_info["rows"] == N
    run("convert", s3.url("out"), "--out", s3.url("conv"), "-q")
    pd.testing.assert_frame_equal(sorted_rows(read_output(s3, "conv")), sorted_rows(read_output(s3, "out")))
    run("generate", "criteo", "--rows", "500", "--files", "2", "--out", s3.url("gen"), "-q")
    gen = s3.keys("gen")
    assert "_SUCCESS" in gen and "_metadata.json" in gen and sum(k.endswith(".parquet") for k in gen) == 2
    assert len(read_output(s3, "gen")) == 500
    # an output inside the input is refused, as locally
    r = run("convert", s3.url("raw"), "--out", s3.url("raw/sub"), code=2)
    assert "inside the input folder" in r.output


def test_storage_option_flag_gives_the_endpoint(s3, tmp_path, monkeypatch):
    _, spec = raw_and_spec(s3, tmp_path, seed=53)
    monkeypatch.setenv("AWS_ENDPOINT_URL", dead_endpoint())  # the environment's endpoint does not answer
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    run("fit-transform", spec, s3.url("raw"), "--out", s3.url("out"), "--workflow-out", s3.url("wf"),
        "--storage-option", f"endpoint_url={s3.endpoint}", "-q")
    assert len(read_output(s3, "out")) == N
    run("transform", s3.url("wf"), s3.url("raw"), "--out", s3.url("out2"), "--storage-option",
        f"endpoint_url={s3.endpoint}", "-q")
    pd.testing.assert_frame_equal(sorted_rows(read_output(s3, "out2")), sorted_rows(read_output(s3, "out")))
    S3FileSystem.clear_instance_cache()  # as in a new process: the default client reads the (dead) environment
    r = run("transform", s3.url("wf"), s3.url("raw"), "--out", s3.url("out3"), code=1)  # without the option
    assert "credentials and endpoint" in r.output
    r = run("fit", spec, s3.url("raw"), "--out", s3.url("wf2"), "--storage-option", "no-equals-sign", code=2)
    assert "KEY=VALUE" in r.output


def test_half_written_input_and_user_prefix_are_refused(s3, tmp_path, monkeypatch):
    from tabprep.io import objectstore

    frame, spec = raw_and_spec(s3, tmp_path, seed=59)

    def crash(self):
        raise RuntimeError("simulated crash just before the commit")

    with monkeypatch.context() as m:  # the job dies after writing everything but _SUCCESS
        m.setattr(objectstore.RemoteStage, "commit", crash)
        run("fit-transform", spec, s3.url("raw"), "--out", s3.url("out"), "--workflow-out", s3.url("wf"), "-q",
            code=1)
    for prefix in ("out", "wf"):
        keys = s3.keys(prefix)
        assert ".tabprep-incomplete" in keys and "_SUCCESS" not in keys, keys
    r = run("transform", s3.url("wf"), s3.url("raw"), "--out", s3.url("x"), code=2)
    assert "half-written" in r.output and s3.url("wf") in r.output
    run("fit", spec, s3.url("raw"), "--out", s3.url("wf2"), "-q")
    r = run("transform", s3.url("wf2"), s3.url("out"), "--out", s3.url("x"), code=2)
    assert "half-written" in r.output and s3.url("out") in r.output
    assert s3.keys("x") == []
    # --overwrite never deletes a prefix tabprep did not write
    s3.fs.pipe_file(f"{s3.bucket}/user/keep.txt", b"user data")
    s3.put_frame("user/data.parquet", frame.iloc[:5])
    r = run("fit-transform", spec, s3.url("raw"), "--out", s3.url("user"), "--overwrite", code=2)
    assert "tabprep did not write it" in r.output and s3.url("user") in r.output
    assert s3.keys("user") == ["data.parquet", "keep.txt"]
    assert s3.fs.cat_file(f"{s3.bucket}/user/keep.txt") == b"user data"
    # without --overwrite the interrupted output is refused; with it, it is replaced
    r = run("fit-transform", spec, s3.url("raw"), "--out", s3.url("out"), code=2)
    assert "interrupted tabprep write" in r.output and "--overwrite" in r.output
    run("fit-transform", spec, s3.url("raw"), "--out", s3.url("out"), "--workflow-out", s3.url("wf"), "--overwrite",
        "-q")
    assert "_SUCCESS" in s3.keys("out") and ".tabprep-incomplete" not in s3.keys("wf")
    assert len(read_output(s3, "out")) == N


def test_serve_a_workflow_on_s3(s3, monkeypatch):
    """`tabprep serve s3://.../wf --storage-option ...`: the app it would run (uvicorn.run is
    replaced by a capture; the HTTP server itself is tested in test_serving_http.py)."""
    import asyncio

    import httpx
    import uvicorn

    import tabprep as tp

    frame = raw_frame(seed=61)
    make_workflow().fit(tp.Dataset(frame, cpu=True)).save(s3.url("wf"))
    monkeypatch.setenv("AWS_ENDPOINT_URL", dead_endpoint())  # only --storage-option reaches the server
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    apps = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: apps.append(app))
    run("serve", s3.url("wf"), "--exclude", "label", "--storage-option", f"endpoint_url={s3.endpoint}", "-q")

    async def ask():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=apps[0]), base_url="http://tabprep") as client:
            schema = (await client.get("/schema")).json()
            row = {"cat": None, "num": None, "ival": None, "row": 4}
            return schema, (await client.post("/transform", json=row)).json()

    schema, got = asyncio.run(ask())
    assert schema["embedding_sizes"]["cat"][0] == 3 + frame["cat"].nunique()
    assert got["cat"] == 1 and got["ival"] == 0  # null -> Categorify's null id / FillMissing's 0
