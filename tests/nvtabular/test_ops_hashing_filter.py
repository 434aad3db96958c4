"""HashBucket, HashedCross and Filter as NVTabular 23.08's: HashBucket.output_dtype and
HashedCross.output_dtype are int32 (nvtabular/ops/hash_bucket.py, hashed_cross.py);
``HashedCross(num_buckets)`` is positional and names a cross ``"_X_".join(cross)``
(HashedCross.column_mapping); Filter.transform accepts ``f`` returning a boolean Series or the
filtered DataFrame (nvtabular/ops/filter.py)."""
from __future__ import annotations

import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops
from tabprep.testing import check_op

from conftest import make_dataset, mmh3_u32, to_pandas


def _df():
    return pd.DataFrame({"a": ["x", "y", None, "x"], "b": [1, 2, 3, 1], "label": [0, 1, 1, 0]})


def test_hash_bucket_ids_are_int32(backend):
    """HashBucket.output_dtype is numpy.int32; ids are murmur3(value) % num_buckets (tabprep's hash)."""
    wf = tp.Workflow(["a"] >> ops.HashBucket(10))
    out = to_pandas(wf.fit_transform(make_dataset(_df(), backend, nparts=2)).to_ddf().compute())
    assert str(out["a"].dtype) == "int32" and wf.output_schema["a"].dtype == "int32"
    assert out["a"].tolist() == [0 if pd.isna(v) else mmh3_u32(v) % 10 for v in _df()["a"]]


def test_hashed_cross_positional_num_buckets_and_name(backend):
    """HashedCross(10) crosses the selection into "a_X_b" (int32, ids in [0, 10))."""
    wf = tp.Workflow(["a", "b"] >> ops.HashedCross(10))
    out = to_pandas(wf.fit_transform(make_dataset(_df(), backend, nparts=2)).to_ddf().compute())
    assert list(out.columns) == ["a_X_b"] and str(out["a_X_b"].dtype) == "int32"
    assert out["a_X_b"].between(0, 9).all()
    assert out["a_X_b"].iloc[0] == out["a_X_b"].iloc[3]  # the same (a, b) pair
    assert wf.output_schema["a_X_b"].properties["num_buckets"] == 10


def test_hashed_cross_groups_and_dict_keys():
    """[["a", "b"]] >> HashedCross({"a_X_b": 7}); the older key "a_b" still works, with a warning."""
    out = tp.Workflow([["a", "b"]] >> ops.HashedCross({"a_X_b": 7})).fit_transform(tp.Dataset(_df()))
    assert out.to_ddf().compute()["a_X_b"].between(0, 6).all()
    with pytest.warns(UserWarning, match="a_X_b"):
        tp.Workflow([["a", "b"]] >> ops.HashedCross(num_buckets={"a_b": 7})).fit_transform(tp.Dataset(_df()))


def test_filter_function_returning_the_frame(backend):
    """Filter(f) where f returns the filtered frame (is_dataframe_object branch)."""
    wf = tp.Workflow(["a", "label"] >> ops.Filter(lambda df: df[df["label"] > 0]))
    out = to_pandas(wf.fit_transform(make_dataset(_df(), backend, nparts=2)).to_ddf().compute())
    assert out["label"].tolist() == [1, 1] and [None if pd.isna(v) else v for v in out["a"]] == ["y", None]


def test_filter_frame_with_new_rows_is_an_error():
    """A frame that is not a subset of the input's rows cannot be a filter result: error."""
    op = ops.Filter(lambda df: pd.concat([df, df]))
    with pytest.raises(ValueError, match="subset"):
        op.transform(["a"], _df())


def test_check_op_hash_ops():
    """The conformance battery on the int32 and X-named ops."""
    check_op(ops.HashBucket(17))
    check_op(ops.HashedCross(11), columns=["i", "s"])


def test_hash_bucket_schema_domain_and_embedding_sizes(tmp_path):
    """HashBucket._compute_properties writes ``domain = {min: 0, max: num_buckets}`` and embedding
    sizes ``(num_buckets, _emb_sz_rule(num_buckets))``; ``get_embedding_sizes`` returns those. The
    same metadata here (an int and a per-column dict of num_buckets), also after save/load."""
    def rule(n):  # NVTabular's _emb_sz_rule, written out
        return min(max(16, round(1.6 * n ** 0.56)), 512)

    wf = tp.Workflow((["a"] >> ops.HashBucket(10))
                     + (["b", "label"] >> ops.HashBucket({"b": 7, "label": 100_000})))
    wf.fit(tp.Dataset(_df()))
    wf.save(str(tmp_path / "wf"))
    for w in (wf, tp.Workflow.load(str(tmp_path / "wf"))):
        for col, nb in (("a", 10), ("b", 7), ("label", 100_000)):
            assert w.output_schema[col].properties["domain"] == {"min": 0, "max": nb}, col
        assert tp.get_embedding_sizes(w) == {"a": (10, rule(10)), "b": (7, rule(7)), "label": (100_000, rule(100_000))}
