"""Bucket counts of HashBucket, HashedCross and Categorify(num_buckets=) are whole numbers >= 1.

``HashBucket(num_buckets=2.5)`` hashed into 2 buckets and ``HashBucket(num_buckets=True)`` into 1,
silently (NVTabular 23.08 raises a TypeError on 2.5); a numpy int or a float such as 1000.0 is that
count, alone or in a per-column dict."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

BAD = [2.5, True, 0, -1, "10", float("nan")]


@pytest.mark.parametrize("bad", BAD)
def test_hash_bucket_counts(bad):
    with pytest.raises((ValueError, TypeError), match=r"num_buckets.*must be an int >= 1, got"):
        ops.HashBucket(num_buckets=bad)
    with pytest.raises((ValueError, TypeError), match=r"num_buckets\['b'\] must be an int >= 1, got"):
        ops.HashBucket(num_buckets={"a": 10, "b": bad})


@pytest.mark.parametrize("bad", BAD)
def test_hashed_cross_counts(bad):
    with pytest.raises((ValueError, TypeError), match=r"num_buckets.*must be an int >= 1, got"):
        ops.HashedCross(num_buckets=bad)


@pytest.mark.parametrize("bad", BAD)
def test_categorify_hash_counts(bad):
    with pytest.raises((ValueError, TypeError), match=r"num_buckets.*must be an int >= 1"):
        ops.Categorify(num_buckets=bad)


def test_whole_counts_of_other_types_are_those_counts():
    df = pd.DataFrame({"a": np.arange(50), "b": np.arange(50) * 7})
    got = tp.Workflow(["a", "b"] >> ops.HashBucket(num_buckets={"a": np.int64(10), "b": 7.0})).fit_transform(
        tp.Dataset(df)).compute()
    want = tp.Workflow(["a", "b"] >> ops.HashBucket(num_buckets={"a": 10, "b": 7})).fit_transform(
        tp.Dataset(df)).compute()
    pd.testing.assert_frame_equal(got, want)
    assert got["b"].max() < 7
