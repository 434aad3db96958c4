"""Remote keys never leave the local download folder (issue #30).

An object key ``wf/stats/../../../<dir>/x.pth`` planted in a saved workflow's bucket must not be
written outside the temporary folder ``Workflow.load("s3://...")`` (also ``tabprep serve s3://``
and ``tabprep inspect s3://``) downloads into: the load fails naming the key and nothing is
written anywhere else. Real local S3 server (the ``s3`` fixture of conftest.py); the planted key
is put with boto3 directly (s3fs would normalise the ``..`` away).
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pandas as pd
import pytest
import uvicorn
from click.testing import CliRunner

import tabprep as tp
from tabprep import ops
from tabprep.cli.main import cli


def _put_raw_key(s3, key: str, body: bytes) -> None:
    import boto3

    client = boto3.client("s3", endpoint_url=s3.endpoint)
    client.put_object(Bucket=s3.bucket, Key=key, Body=body)
    listed = [o["Key"] for o in client.list_objects_v2(Bucket=s3.bucket, Prefix="wf/")["Contents"]]
    assert key in listed, listed  # the server kept the key as written


def _saved_workflow(s3) -> None:
    df = pd.DataFrame({"c": ["a", "b", None, "a"], "x": [1.0, 2.0, None, 4.0]})
    tp.Workflow((["c"] >> ops.Categorify()) + ["x"]).fit(tp.Dataset(df, cpu=True)).save(s3.url("wf"))


# every way a remote key can point out of the folder it is downloaded into
ESCAPES = [
    "wf/stats/../../../{name}",                  # climbs out of the download folder
    "wf/../{name}",                             # climbs at the first level
    "wf/stats/a/../../../../{name}",           # deeper
    "wf/stats/./../../../{name}",              # with a no-op part
]


@pytest.fixture
def target_dir(tmp_path, monkeypatch):
    """A folder next to the temporary download folders: where an escaping key would land."""
    # the downloaded copy goes to tempfile.gettempdir()/tabprep-fetch-XXXX: "../" of it is gettempdir().
    # This test's own temporary folder (tempfile.tempdir) so that _no_escape's look for leftover
    # download folders sees only this test's: pytest-xdist workers load from S3 at the same time
    own_tmp = tmp_path / "tmp"
    own_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(own_tmp))
    name = f"tabprep-escape-probe-{os.getpid()}.pth"
    path = Path(tempfile.gettempdir()) / name
    path.unlink(missing_ok=True)
    yield name, path
    path.unlink(missing_ok=True)


def _no_escape(path: Path) -> None:
    assert not path.exists(), f"a remote key was written outside the download folder: {path}"
    leftovers = [p for p in Path(tempfile.gettempdir()).glob("tabprep-fetch-*")
                 if p.is_dir() and any(p.rglob("*"))]
    assert not leftovers, leftovers


@pytest.mark.parametrize("pattern", ESCAPES)
def test_load_refuses_a_key_outside_the_folder(s3, target_dir, pattern):
    name, path = target_dir
    _saved_workflow(s3)
    key = pattern.format(name=name)
    _put_raw_key(s3, key, b"import os; os.system('echo pwned')\n")
    with pytest.raises(ValueError) as err:
        tp.Workflow.load(s3.url("wf"))
    assert key in str(err.value) and "outside" in str(err.value)
    _no_escape(path)


def test_absolute_looking_key_is_refused(s3, target_dir):
    name, path = target_dir
    _saved_workflow(s3)
    key = f"wf//{path}"  # "wf/" + "/tmp/..." : an empty part, then an absolute-looking path
    _put_raw_key(s3, key, b"x")
    with pytest.raises(ValueError, match="outside"):
        tp.Workflow.load(s3.url("wf"))
    _no_escape(path)


def test_cli_inspect_and_serve_refuse_the_key(s3, target_dir, monkeypatch):
    name, path = target_dir
    _saved_workflow(s3)
    key = f"wf/stats/../../../{name}"
    _put_raw_key(s3, key, b"x")
    r = CliRunner().invoke(cli, ["inspect", s3.url("wf")])
    assert r.exit_code != 0 and key in r.output, r.output
    _no_escape(path)
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: pytest.fail("served a workflow holding an escaping key"))
    r = CliRunner().invoke(cli, ["serve", s3.url("wf"), "-q"])
    assert r.exit_code != 0 and key in r.output, r.output
    _no_escape(path)


def test_a_clean_workflow_still_loads(s3):
    _saved_workflow(s3)
    out = tp.Workflow.load(s3.url("wf")).transform(pd.DataFrame({"c": ["a", "z"], "x": [1.0, 2.0]}))
    assert list(out["c"]) == [3, 2]  # "a" most frequent -> 3; unseen -> 2
