"""Helpers of the object storage tests (tests/test_s3.py, tests/test_s3_cli.py): data with nulls, inf
and an empty file, the workflow they run, and its reference computed with plain pandas from the
documented op semantics. Nothing here calls tabprep to compute an expected value."""
from __future__ import annotations

import os
import socket

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
    Normalize (x - mean) / std (ddof 0) over the finite values, float32."""
    counts = frame["cat"].dropna().value_counts()
    vocab = sorted(counts.index, key=lambda v: (-counts[v], v))
    ids = {v: 3 + i for i, v in enumerate(vocab)}
    cat = frame["cat"].map(lambda v: 1 if v is None else ids[v]).astype("int64")
    filled = frame["num"].fillna(0.0)
    finite = filled[np.isfinite(filled)]
    num = ((filled - finite.mean()) / finite.std(ddof=0)).astype("float32")
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
