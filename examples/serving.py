"""Serving a fitted workflow: fit, save, then transform live requests in process and over HTTP.

    python examples/serving.py                   # 200k generated Criteo rows
    python examples/serving.py --rows 50000 --out /tmp/serving

Generates Criteo-like data, fits the canonical workflow (26 Categorify; 13 FillMissing >>
Clip(0) >> LogOp >> Normalize), saves it, then:

1. transforms one request row in process with ``tabprep.serving.ServingTransform`` and checks
   it against the offline ``wf.transform`` of the same row;
2. starts ``tabprep serve WF_DIR`` (Starlette + uvicorn) on a free port of 127.0.0.1, queries
   ``/health``, ``/schema`` and ``POST /transform`` with httpx, and stops the server.

Needs the serve extra: ``pip install "tabprep[serve]"``.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

import httpx
import numpy as np

import tabprep as tp
from tabprep import ops
from tabprep.io.synthetic import generate_criteo
from tabprep.serving import ServingTransform

CATS = [f"C{i}" for i in range(1, 27)]
CONTS = [f"I{i}" for i in range(1, 14)]


def build_workflow() -> tp.Workflow:
    cats = CATS >> ops.Categorify()
    conts = CONTS >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize(out_dtype="float32")
    return tp.Workflow(cats + conts + ["label"])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv: Optional[List[str]] = None) -> Dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--out", default=None, help="work folder (default: a temporary one)")
    args = ap.parse_args(argv)
    work = args.out or tempfile.mkdtemp(prefix="tabprep-serving-")
    raw, wf_dir = os.path.join(work, "raw"), os.path.join(work, "workflow")

    # 1. fit and save (offline, once)
    generate_criteo(args.rows, raw, seed=0)
    wf = build_workflow()
    wf.fit(tp.Dataset(raw))
    wf.save(wf_dir)

    # 2. in process: built once, then called per request (a label is not part of a request)
    st = ServingTransform(tp.Workflow.load(wf_dir), exclude=["label"])
    seen = int(tp.Dataset(raw).compute()["C1"].dropna().iloc[0])      # an id of the training data
    request = {"C1": seen, "C2": None, "I1": 3, "I2": -2, "I5": 1500}
    request.update({c: 12345 for c in CATS if c not in request})   # ids never seen: out-of-vocabulary
    request.update({c: None for c in CONTS if c not in request})   # missing counts: filled with 0
    out = st(request)
    offline = wf.transform(_frame(request))
    for name, values in out.items():
        assert np.array_equal(values, offline[name].to_numpy()), name
    print("in process:", {k: v.tolist() for k, v in list(out.items())[:3]}, "... (equal to wf.transform)")

    # 3. over HTTP: the real server process
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "tabprep.cli", "serve", wf_dir, "--port", str(port),
                               "--exclude", "label"])
    url = f"http://127.0.0.1:{port}"
    try:
        _wait(url, server)
        with httpx.Client(base_url=url, timeout=30) as client:
            schema = client.get("/schema").json()
            one = client.post("/transform", content=json.dumps(request)).json()
            many = client.post("/transform", content=json.dumps({"rows": [request, dict(request, C1=None)]})).json()
            bad = client.post("/transform", content=json.dumps(dict(request, C1=str(seen))))  # a string id
    finally:
        server.send_signal(signal.SIGINT)   # graceful: in-flight requests finish first
        server.wait(timeout=30)
    print("HTTP /transform:", {k: one[k] for k in ("C1", "C2", "I1")}, "...")
    print("HTTP rows:", [r["C1"] for r in many["rows"]], "| refused:", bad.status_code, bad.json()["error"][:60], "...")
    print("embedding sizes:", {k: schema["embedding_sizes"][k] for k in ("C1", "C2")}, "...")
    return {"in_process": out, "http_one": one, "http_rows": many["rows"], "refused": (bad.status_code, bad.json()),
            "schema": schema}


def _frame(row: Dict[str, Any]) -> Any:
    import pandas as pd

    # the offline transform reads every input, the label too (any value: it passes through)
    return pd.DataFrame({**{c: pd.array([row[c]], dtype="Int64") for c in CATS + CONTS}, "label": [0]})


def _wait(url: str, server: subprocess.Popen) -> None:
    deadline = time.time() + 60
    while time.time() < deadline and server.poll() is None:
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError("the server did not start")


if __name__ == "__main__":
    main()
