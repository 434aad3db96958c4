"""`tabprep serve`: the real server process on 127.0.0.1, queried with httpx (the serve extra)."""
from __future__ import annotations

import json
import math
import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import numpy as np
import pytest

from serving_helpers import fitted_workflow, offline_columns, train_frame

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(wf_dir: str, *args: str):
    port = free_port()
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "tabprep.cli", "serve", wf_dir, "--port", str(port), *args],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while True:
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            out, err = proc.communicate()
            raise RuntimeError(f"server did not start: {err.decode()[-2000:]}")
        time.sleep(0.1)


def stop(proc) -> bool:
    """SIGTERM; True when the server stopped by itself, cleanly (uvicorn re-raises the signal after its
    graceful shutdown so a supervisor sees it: -SIGTERM; its multi-worker supervisor exits 0)."""
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = proc.stderr.read().decode()
    return code in (0, -signal.SIGTERM) and "Traceback" not in err


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    wf = fitted_workflow()
    wf_dir = str(tmp_path_factory.mktemp("serve") / "wf")
    wf.save(wf_dir)
    proc, url = start_server(wf_dir, "--exclude", "label", "--max-body-size", "65536")
    yield wf, url, wf_dir
    assert stop(proc)


def _py(v):
    if isinstance(v, (list, np.ndarray)):
        return [None if x is None or (isinstance(x, float) and x != x) else x for x in list(v)]
    if v is None or (isinstance(v, float) and v != v) or type(v).__name__ == "NAType":
        return None
    return v.item() if hasattr(v, "item") else v


def _same(got, want) -> bool:
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(_same(g, w) for g, w in zip(got, want))
    if isinstance(want, float):
        if math.isnan(want):
            return got is None or (isinstance(got, float) and math.isnan(got))
        return isinstance(got, float) and np.float32(got) == np.float32(want)
    return got == want


def _expected_rows(wf, frame):
    want = offline_columns(wf, frame)
    names = [c for c in wf.output_columns if c != "label"]
    rows = []
    for i in range(len(frame)):
        r = {}
        for c in names:
            if c + "__values" in want:
                offs = np.concatenate([[0], np.cumsum(want[c + "__nnzs"])])
                r[c] = want[c + "__values"][offs[i]:offs[i + 1]].tolist()
            else:
                v = want[c][i]
                r[c] = None if np.ma.is_masked(v) else v.item()
        rows.append(r)
    return rows


def test_health_and_schema(served):
    wf, url, _ = served
    assert httpx.get(url + "/health").json() == {"status": "ok"}
    schema = httpx.get(url + "/schema").json()
    names = [c["name"] for c in schema["input_schema"]["columns"]]
    assert "label" not in names and "cat_i" in names and "tags" in names
    assert [c["name"] for c in schema["output_schema"]["columns"]] == [c for c in wf.output_columns if c != "label"]
    assert schema["embedding_sizes"]["cat_i"][0] == wf.output_schema["cat_i"].cardinality


def test_one_row_rows_and_columns_equal_offline(served):
    wf, url, _ = served
    frame = train_frame(40, seed=11)
    frame.loc[3, "cont_f"] = np.inf
    frame.loc[4, "cat_s"] = "unseen"
    want = _expected_rows(wf, frame)
    rows = [{c: _py(frame[c].iloc[i]) for c in frame.columns if c != "label"} for i in range(len(frame))]
    with httpx.Client(base_url=url) as client:
        for i in (0, 3, 4, 7):
            r = client.post("/transform", content=json.dumps(rows[i]))
            assert r.status_code == 200, r.text
            got = r.json()
            assert all(_same(got[k], want[i][k]) for k in want[i]), (i, got, want[i])
        got = client.post("/transform", content=json.dumps({"rows": rows})).json()["rows"]
        assert all(_same(g[k], w[k]) for g, w in zip(got, want) for k in w)
        bare = client.post("/transform", content=json.dumps(rows[:5])).json()
        assert bare == got[:5]
        cols = {c: [r[c] for r in rows] for c in rows[0]}
        got = client.post("/transform", content=json.dumps({"columns": cols})).json()["columns"]
        assert all(_same(got[k][i], want[i][k]) for i in range(len(rows)) for k in want[i])


def test_bad_requests_get_4xx_naming_the_column(served):
    _, url, _ = served
    row = {c: _py(v) for c, v in train_frame(1, seed=12).iloc[0].items() if c != "label"}
    with httpx.Client(base_url=url) as client:
        r = client.post("/transform", content=json.dumps(dict(row, cat_i="12")))
        assert r.status_code == 422 and r.json()["column"] == "cat_i"
        assert "int64" in r.json()["error"] and "cast" in r.json()["error"]
        r = client.post("/transform?cast=true", content=json.dumps(dict(row, cat_i=str(row["cat_i"] or 3))))
        assert r.status_code == 200
        missing = dict(row)
        del missing["hash_s"]
        r = client.post("/transform", content=json.dumps({"rows": [row, missing]}))
        assert r.status_code == 422 and r.json()["column"] == "hash_s" and "row 1" in r.json()["error"]
        r = client.post("/transform", content=b'{"cat_i": 1,')
        assert r.status_code == 400 and "JSON" in r.json()["error"]
        r = client.post("/transform", content=b'"text"')
        assert r.status_code == 400
        r = client.post("/transform", content=json.dumps({"rows": [row] * 400}))  # > 64 KiB
        assert r.status_code == 413 and "limit" in r.json()["error"]
        assert client.get("/transform").status_code == 405
        assert client.get("/health").status_code == 200  # still serving


def test_a_bad_cast_flag_and_ints_beyond_int64_are_said_so(served):
    """?cast=maybe served as cast off (200); an integer beyond int64 (parsed as a float) was called a
    'non-integral float' with cast=True as the fix (adversarial review, 2026-11-29)."""
    _, url, _ = served
    row = {c: _py(v) for c, v in train_frame(1, seed=12).iloc[0].items() if c != "label"}
    with httpx.Client(base_url=url) as client:
        r = client.post("/transform?cast=maybe", content=json.dumps(row))
        assert r.status_code == 400 and "cast" in r.json()["error"] and "maybe" in r.json()["error"]
        for flag in ("true", "false", "1", "0"):
            assert client.post(f"/transform?cast={flag}", content=json.dumps(row)).status_code == 200
        for big in ("99999999999999999999999", "-9223372036854775809"):
            body = json.dumps(dict(row, cat_i=0)).replace('"cat_i": 0', f'"cat_i": {big}')
            r = client.post("/transform", content=body)
            assert r.status_code == 422 and r.json()["column"] == "cat_i", r.text
            assert "does not fit in int64" in r.json()["error"] and "non-integral" not in r.json()["error"]


def test_unservable_workflow_fails_before_binding(tmp_path):
    import pandas as pd

    import tabprep as tp
    from tabprep import ops

    wf = tp.Workflow(["b"] >> ops.DifferenceLag(partition_cols=["a"]))
    wf.fit(pd.DataFrame({"a": [1, 1, 2], "b": [1.0, 2.0, 3.0]}))
    wf.save(str(tmp_path / "wf"))
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, "-m", "tabprep.cli", "serve", str(tmp_path / "wf"), "--port",
                          str(free_port())], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 1 and "DifferenceLag" in res.stderr and "previous rows" in res.stderr


def test_graceful_shutdown_finishes_in_flight_requests(served):
    _, _, wf_dir = served
    proc, url = start_server(wf_dir, "--exclude", "label", "--workers", "2")
    row = {c: _py(v) for c, v in train_frame(1, seed=13).iloc[0].items() if c != "label"}
    with httpx.Client(base_url=url) as client:
        assert client.post("/transform", content=json.dumps({"rows": [row] * 50})).status_code == 200
    assert stop(proc)
    with pytest.raises(httpx.HTTPError):
        httpx.get(url + "/health", timeout=2)
