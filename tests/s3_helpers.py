"""Helpers of the object storage tests (tests/test_s3.py, tests/test_s3_cli.py): data with nulls, inf
and an empty file, the workflow they run, and its reference computed with plain pandas from the
documented op semantics. Nothing here calls tabprep to compute an expected value."""
from __future__ import annotations

import contextlib
import json
import os
import socket
import urllib.request
import uuid
from typing import Dict, Iterator
from urllib.parse import quote, unquote

import numpy as np
import pandas as pd

import tabprep as tp
from tabprep import ops

N = 300


def raw_frame(n: int = N, seed: int = 3) -> pd.DataFrame:
    """Strings and ints with nulls, floats with NaN and +inf, a row number."""
    rng = np.random.default_rng(seed)
    cat = rng.choice(["a", "b", "c", "d", "héllo", ""], n).astype(object)
    cat[rng.random(n) < 0.15] = None
    num = rng.normal(5.0, 2.0, n)
    num[rng.random(n) < 0.2] = np.nan
    num[7] = np.inf
    ival = pd.array(rng.integers(0, 50, n), dtype="Int64")
    ival[rng.random(n) < 0.1] = pd.NA
    return pd.DataFrame({"row": np.arange(n, dtype="int64"), "cat": pd.Series(cat, dtype=object), "num": num,
                         "ival": ival, "label": rng.integers(0, 2, n).astype("int64")})


def parts_of(frame: pd.DataFrame):
    """Three files: the first 120 rows, an empty file (an empty partition), the rest."""
    return [frame.iloc[:120], frame.iloc[0:0], frame.iloc[120:]]


def make_workflow() -> tp.Workflow:
    return tp.Workflow((["cat"] >> ops.Categorify()) + (["num"] >> ops.FillMissing() >> ops.Normalize())
                       + (["ival"] >> ops.FillMissing()) + ["row", "label"])


def reference(frame: pd.DataFrame) -> pd.DataFrame:
    """The workflow's output by its documented rules: Categorify ids 1 for null, 3.. for the
    vocabulary (most frequent first, ties by value; 2 is the one OOV id); FillMissing 0;
    Normalize (x - mean) / std (ddof 1, as NVTabular) over the finite values, float32."""
    counts = frame["cat"].dropna().value_counts()
    vocab = sorted(counts.index, key=lambda v: (-counts[v], v))
    ids = {v: 3 + i for i, v in enumerate(vocab)}
    cat = frame["cat"].map(lambda v: 1 if v is None else ids[v]).astype("int64")
    filled = frame["num"].fillna(0.0)
    finite = filled[np.isfinite(filled)]
    num = ((filled - finite.mean()) / finite.std(ddof=1)).astype("float32")
    ival = frame["ival"].fillna(0).astype("int64")
    return pd.DataFrame({"cat": cat, "num": num, "ival": ival, "row": frame["row"], "label": frame["label"]})


def assert_matches(got: pd.DataFrame, want: pd.DataFrame) -> None:
    got = got.sort_values("row").reset_index(drop=True)
    want = want.sort_values("row").reset_index(drop=True)
    assert sorted(got.columns) == sorted(want.columns)
    for c in want.columns:
        if c == "num":
            np.testing.assert_allclose(got[c].to_numpy(np.float64), want[c].to_numpy(np.float64), rtol=1e-6)
        else:
            np.testing.assert_array_equal(got[c].to_numpy(), want[c].to_numpy(), err_msg=c)


def put_raw(s3, prefix: str, frame: pd.DataFrame) -> None:
    for i, part in enumerate(parts_of(frame)):
        s3.put_frame(f"{prefix}/part-{i}.parquet", part)


def write_local_raw(folder, frame: pd.DataFrame) -> str:
    os.makedirs(folder, exist_ok=True)
    for i, part in enumerate(parts_of(frame)):
        part.to_parquet(os.path.join(folder, f"part-{i}.parquet"), index=False)
    return str(folder)


def read_output(s3, prefix: str) -> pd.DataFrame:
    """The parquet files of an output, read with the test's own client (not tabprep)."""
    keys = [k for k in s3.keys(prefix) if k.endswith(".parquet") and not k.startswith("_")]
    return pd.concat([s3.read_frame(f"{prefix}/{k}") for k in keys], ignore_index=True)


def dead_endpoint() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


# -- credential checking on the test server ---------------------------------------------------------
def _reset_auth(endpoint: str, value: str) -> str:
    req = urllib.request.Request(f"{endpoint}/moto-api/reset-auth", data=value.encode(), method="POST",
                                 headers={"Content-Type": "text/plain"})  # not a form: moto reads the body
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())["PREVIOUS_INITIAL_NO_AUTH_ACTION_COUNT"]


@contextlib.contextmanager
def credentials_checked(endpoint: str) -> Iterator[None]:
    """The test server checks credentials from now on (moto's IAM: the fixture's fake key is
    unknown, so every request signed with it is refused with 403), until the block ends."""
    previous = _reset_auth(endpoint, "0")
    try:
        yield
    finally:
        _reset_auth(endpoint, previous)


def iam_credentials(endpoint: str) -> Dict[str, str]:
    """A new IAM user of the test server allowed ``s3:*``: ``{"key", "secret"}`` of its access key
    (call it while credentials are not checked yet)."""
    import boto3

    iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="setup",
                       aws_secret_access_key="setup")
    user = f"tabprep-{uuid.uuid4().hex[:8]}"
    iam.create_user(UserName=user)
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
    iam.put_user_policy(UserName=user, PolicyName="s3", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName=user)["AccessKey"]
    return {"key": key["AccessKeyId"], "secret": key["SecretAccessKey"]}


def _canonical(path: str) -> str:
    """``path?query`` percent-encoded as the client signed it (SigV4: RFC 3986 unreserved kept)."""
    base, sep, query = path.partition("?")
    base = quote(unquote(base), safe="/~")
    if sep:
        pairs = [p.partition("=") for p in query.split("&")]
        query = "&".join(quote(unquote(k), safe="-_.~") + eq + quote(unquote(v), safe="-_.~") for k, eq, v in pairs)
        return base + "?" + query
    return base


@contextlib.contextmanager
def only_storage_options_credentials(s3, monkeypatch) -> Iterator[Dict[str, str]]:
    """Yields storage_options holding the only valid credentials and endpoint: the server checks
    credentials (signatures included), the environment's key is unknown to it and the
    environment's endpoint is dead. Put test data on the server before entering.

    The in-process server is patched for one moto bug (getmoto/moto#5948): it checks the signature
    of a request whose URL it has percent-decoded (``prefix=d/`` instead of ``prefix=d%2F``), so
    any listing signed correctly is refused; the patch re-encodes the URL as the client signed it."""
    from moto.iam import access_control

    creds = iam_credentials(s3.endpoint)
    init = access_control.S3IAMRequest.__init__

    def patched(self, *args, path, **kwargs):
        init(self, *args, path=_canonical(path), **kwargs)

    monkeypatch.setattr(access_control.S3IAMRequest, "__init__", patched)
    monkeypatch.setenv("AWS_ENDPOINT_URL", dead_endpoint())
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    so = {"key": creds["key"], "secret": creds["secret"], "endpoint_url": s3.endpoint,
          "config_kwargs": {"retries": {"max_attempts": 1}}}
    with credentials_checked(s3.endpoint):
        yield so
