"""A damaged workflow.json and hostile request bodies get clear errors (issue #30): loading names
workflow.json and what is wrong (no raw JSONDecodeError / RecursionError / KeyError); ``tabprep
serve`` answers 400/422, not 500, to a float past float64, a lone surrogate in a string and
50,000-deep JSON."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops
from tabprep.serving.http import make_app
from tabprep.serving.transform import ServingTransform


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("wf") / "wf"
    df = pd.DataFrame({"c": ["a", "b", None, "a"], "x": [1.0, 2.0, None, 4.0]})
    tp.Workflow((["c"] >> ops.Categorify()) + (["x"] >> ops.FillMissing() >> ops.Normalize())).fit(
        tp.Dataset(df)).save(str(path))
    return path


def _damaged(saved: Path, tmp_path: Path, content: bytes) -> Path:
    import shutil

    path = tmp_path / "wf"
    shutil.copytree(saved, path)
    (path / "workflow.json").write_bytes(content)
    return path


def _spec(saved: Path) -> dict:
    return json.loads((saved / "workflow.json").read_text())


CASES = {
    "truncated": lambda spec: json.dumps(spec).encode()[:-40],
    "empty": lambda spec: b"",
    "binary": lambda spec: bytes(range(256)) * 4,
    "deep": lambda spec: b"[" * 100_000 + b"]" * 100_000,
    "long number": lambda spec: json.dumps({**spec, "format_version": 0}).replace(
        '"format_version": 0', '"format_version": ' + "9" * 5000).encode(),
    "missing output node": lambda spec: json.dumps({**spec, "output": "n99"}).encode(),
    "missing input schema": lambda spec: json.dumps({k: v for k, v in spec.items() if k != "input_schema"}).encode(),
}
WHAT = {"truncated": "not valid JSON", "empty": "empty", "binary": "not", "deep": "nested",
        "long number": "number", "missing output node": "n99", "missing input schema": "input_schema"}


@pytest.mark.parametrize("case", sorted(CASES))
def test_damaged_workflow_json_names_the_file_and_the_damage(saved, tmp_path, case):
    path = _damaged(saved, tmp_path, CASES[case](_spec(saved)))
    with pytest.raises(ValueError) as err:
        tp.Workflow.load(str(path))
    msg = str(err.value)
    assert "workflow.json" in msg and WHAT[case] in msg, msg
    assert not isinstance(err.value, json.JSONDecodeError)
    assert "Traceback" not in msg and len(msg) < 2000


def _post(wf: tp.Workflow, body: bytes) -> httpx.Response:
    app = make_app(ServingTransform(wf))

    async def ask():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://tabprep") as client:
            return await client.post("/transform", content=body)

    return asyncio.run(ask())


@pytest.mark.parametrize("body, status, column", [
    (b'{"c": "a", "x": ' + str(2 ** 1100).encode() + b"}", 422, "x"),
    (b'{"c": "\\ud800", "x": 1.0}', 422, "c"),
    (b"[" * 50_000 + b"]" * 50_000, 400, None),
    (b'{"c": ' + b"[" * 50_000 + b"]" * 50_000 + b', "x": 1.0}', 400, None),
], ids=["2**1100", "lone surrogate", "deep list", "deep value"])
def test_serve_answers_hostile_bodies_with_4xx(saved, body, status, column):
    wf = tp.Workflow.load(str(saved))
    r = _post(wf, body)
    assert r.status_code == status, (r.status_code, r.text[:300])
    err = r.json()
    if column is not None:
        assert column in json.dumps(err), err
    ok = _post(wf, b'{"c": "a", "x": 1.0}')  # the server still answers
    assert ok.status_code == 200 and ok.json()["c"] == 3
