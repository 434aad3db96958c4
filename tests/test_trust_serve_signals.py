"""`tabprep serve` under SIGTERM finishes the requests in flight (issue #30): 32 requests fully
sent on their own connections before the signal all get their complete 200 answer. Real server
process on 127.0.0.1; raw sockets, so "sent" means the bytes left the client."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys


from serving_helpers import fitted_workflow, train_frame
from test_serving_http import _py, start_server

N = 32


def _request(row_count: int) -> bytes:
    row = {c: _py(v) for c, v in train_frame(1, seed=13).iloc[0].items() if c != "label"}
    body = json.dumps({"rows": [row] * row_count}).encode()
    return (b"POST /transform HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)


def _read_all(sock: socket.socket, limit_s: float = 60.0) -> bytes:
    sock.settimeout(limit_s)
    chunks = []
    try:
        while True:
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    except (ConnectionResetError, socket.timeout) as exc:
        chunks.append(f"<{type(exc).__name__}>".encode())
    return b"".join(chunks)


def test_sigterm_finishes_every_request_in_flight(tmp_path):
    wf_dir = str(tmp_path / "wf")
    fitted_workflow().save(wf_dir)
    proc, url = start_server(wf_dir, "--exclude", "label")
    port = int(url.rsplit(":", 1)[1])
    try:
        payload = _request(200)  # some ms of work each: the server is busy when the signal comes
        socks = []
        for _ in range(N):
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            s.sendall(payload)
            socks.append(s)
        proc.send_signal(signal.SIGTERM)
        answers = [_read_all(s) for s in socks]
        for s in socks:
            s.close()
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    bad = [a[:80] for a in answers if not (a.startswith(b"HTTP/1.1 200") and a.rstrip().endswith(b"]}"))]
    assert not bad, f"{len(bad)} of {N} in-flight requests were not answered: {bad[:3]}"
    assert code in (0, -signal.SIGTERM), code
