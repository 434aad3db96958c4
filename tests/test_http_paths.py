"""http(s) URLs (fsspec's HTTPFileSystem, which keeps the whole URL as its path) read through a real
local HTTP server: the path normalization made ``http://127.0.0.1:PORT/x.parquet`` into
``http://http:/127.0.0.1:PORT/x.parquet``, a host named "http" (adversarial review, 2026-11-29)."""
from __future__ import annotations

import functools
import http.server
import socketserver
import threading

import pandas as pd
import pytest

import tabprep as tp


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # noqa: D401 - no request lines in the test output
        pass


@pytest.fixture
def served(tmp_path):
    df = pd.DataFrame({"a": [1, 2, 3], "b": [0.5, 1.5, 2.5]})
    df.to_parquet(tmp_path / "x.parquet")
    srv = socketserver.TCPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(tmp_path)))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}", df
    srv.shutdown()
    srv.server_close()


def test_a_parquet_file_over_http_is_read(served):
    base, df = served
    got = tp.Dataset(f"{base}/x.parquet").compute()
    pd.testing.assert_frame_equal(got.reset_index(drop=True), df)


def test_http_urls_keep_their_host():
    from tabprep.io.fs import get_fs

    fs, url = get_fs("http://127.0.0.1:9/a/./b/../x.parquet")
    assert url == "http://127.0.0.1:9/a/x.parquet"
