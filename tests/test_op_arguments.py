"""Ops' counts are whole numbers and their reals finite, or the op is refused naming the argument.

``HashBucket(num_buckets=2.5)`` hashed into 2 buckets and ``HashBucket(num_buckets=True)`` into 1,
silently (NVTabular 23.08 raises a TypeError on 2.5); ``TargetEncoding(kfold=2.5)``,
``fold_seed=1.5``, ``p_smooth=nan`` and ``Categorify(num_oov_buckets=1.5)`` made other numbers, and
``ListSlice(pad=True, pad_value=nan)`` on int lists raised pandas' own casting error. A numpy int or a
float such as 1000.0 is that count, alone or in a per-column dict."""
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


@pytest.mark.parametrize("kw,match", [
    (dict(kfold=2.5), r"kfold must be an int >= 1, got 2\.5"),
    (dict(kfold=0), r"kfold must be an int >= 1, got 0"),
    (dict(fold_seed=1.5), r"fold_seed must be an int >= 0 \(or None\), got 1\.5"),
    (dict(p_smooth=float("nan")), r"p_smooth must be a finite number >= 0, got nan"),
    (dict(p_smooth=-1), r"p_smooth must be a finite number >= 0, got -1"),
    (dict(p_smooth=float("inf")), r"p_smooth must be a finite number >= 0, got inf"),
])
def test_target_encoding_counts_and_smoothing(kw, match):
    with pytest.raises(ValueError, match=match):
        ops.TargetEncoding(["y"], **kw)


@pytest.mark.parametrize("bad", [1.5, 0, True, float("nan")])
def test_categorify_oov_bucket_count(bad):
    with pytest.raises(ValueError, match=r"num_oov_buckets must be an int >= 1"):
        ops.Categorify(num_oov_buckets=bad)


@pytest.mark.parametrize("pad_value", [float("nan"), float("inf")])
def test_list_slice_pad_value_an_int_list_cannot_hold_is_named(pad_value):
    df = pd.DataFrame({"l": [[1, 2], [3], [], [4, 5, 6]]})
    with pytest.raises(ValueError, match=r"ListSlice: pad_value .* cannot be held by list column 'l' of int64"):
        tp.Workflow(["l"] >> ops.ListSlice(0, 2, pad=True, pad_value=pad_value)).fit_transform(tp.Dataset(df)).compute()
    # a float list takes it
    fl = pd.DataFrame({"l": [[1.0, 2.0], [3.0]]})
    out = tp.Workflow(["l"] >> ops.ListSlice(0, 2, pad=True, pad_value=pad_value)).fit_transform(
        tp.Dataset(fl)).compute()
    assert np.isnan(out["l"][1][1]) or np.isinf(out["l"][1][1])


@pytest.mark.parametrize("fill,exc", [(2.5, (TypeError, ValueError)), (2**70, (OverflowError, TypeError, ValueError))])
def test_fill_missing_names_the_column_it_cannot_fill(fill, exc):
    # the frame library's own error ("Invalid value '2.5' for dtype 'Int64'", "Python int too large to
    # convert to C long") named no column; its type is kept (pandas' fillna raises the same)
    df = pd.DataFrame({"i": pd.array([1, None, 3], dtype="Int64")})
    for node in (["i"] >> ops.FillMissing(fill_val=fill), ["i"] >> ops.FillMissing(fill_val=fill) >> ops.LogOp()):
        with pytest.raises(exc, match=r"FillMissing: fill_val .* cannot fill the nulls of column 'i' \(Int64\)"):
            tp.Workflow(node).fit_transform(tp.Dataset(df)).compute()
