"""Categorify on uint64 columns with values at and above 2**63 (hashed 64-bit ids are stored so).

The sorted vocabulary layout counts integers as int64; a uint64 value of 2**63 or more wrapped
to a negative number there, so (before the fix) ties were ordered as if those values were the
smallest (NVTabular, and tabprep's documented rule, order ties by ascending value: the unsigned
value) and the saved vocabulary and ``op.categories`` files showed negative numbers. References
here are written in the test: counts from ``collections.Counter`` of Python ints, ties by
ascending Python int.
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import tabprep as tp
from tabprep import ops

from conftest import make_dataset, to_pandas

BIG = 2 ** 63


def _ref_ids(train, col, max_entries=None):
    """NVTabular ids: 0 pad, 1 null, 2 OOV, then descending count, ties by ascending value."""
    counts = Counter(int(v) for v in train if v is not None)
    order = sorted(counts, key=lambda v: (-counts[v], v))
    if max_entries is not None:
        order = order[:max_entries]
    ids = {v: 3 + i for i, v in enumerate(order)}
    return [1 if v is None else ids.get(int(v), 2) for v in col]


def _values(seed=0, n=3000):
    rng = np.random.default_rng(seed)
    pool = [0, 1, 5, 2 ** 62, BIG - 1, BIG, BIG + 5, 2 ** 64 - 2, 2 ** 64 - 1] + \
        [int(x) for x in rng.integers(0, 2 ** 63, 20, dtype=np.uint64)] + \
        [int(x) + BIG for x in rng.integers(0, 2 ** 63, 20, dtype=np.uint64)]
    # few distinct counts: many ties, across the 2**63 boundary
    return [pool[i] for i in rng.integers(0, len(pool), n)]


def test_ties_across_two_to_the_63_in_ascending_unsigned_order(backend):
    df = pd.DataFrame({"u": np.array([BIG + 5, 1, 2 ** 64 - 1, BIG + 5, 7, BIG], dtype="uint64")})
    wf = tp.Workflow(["u"] >> ops.Categorify())
    ds = make_dataset(df, backend, nparts=2)
    wf.fit(ds)
    out = to_pandas(wf.transform(ds))
    # BIG + 5 twice -> 3; then 1, 7, BIG, 2**64 - 1 once each, in that (unsigned) order
    assert out["u"].tolist() == [3, 4, 7, 3, 5, 6]


@pytest.mark.parametrize("nparts", [1, 4])
def test_ids_match_the_reference_with_nulls_and_max_size(backend, nparts):
    vals = _values()
    col = pd.array([None if i % 17 == 0 else v for i, v in enumerate(vals)], dtype="UInt64")
    df = pd.DataFrame({"u": col, "w": np.array(vals, dtype="uint64")})
    wf = tp.Workflow((["u"] >> ops.Categorify()) + (["w"] >> ops.Categorify(max_size=20)))
    ds = make_dataset(df, backend, nparts=nparts)
    wf.fit(ds)
    out = to_pandas(wf.transform(ds))
    pyu = [None if v is pd.NA else int(v) for v in col]
    assert out["u"].tolist() == _ref_ids(pyu, pyu)
    # max_size=20 ids: pad, null, one OOV, then the 17 first values of the vocabulary's order
    assert out["w"].tolist() == _ref_ids(vals, vals, max_entries=17)


def test_saved_vocabulary_and_categories_hold_the_unsigned_values(tmp_path):
    vals = _values(1)
    df = pd.DataFrame({"u": np.array(vals, dtype="uint64")})
    wf = tp.Workflow(["u"] >> ops.Categorify())
    wf.fit(tp.Dataset(df))
    before = wf.transform(df)["u"].tolist()
    counts = Counter(vals)
    order = sorted(counts, key=lambda v: (-counts[v], v))

    op = wf.stat_nodes[0].op
    unique = pd.read_parquet(op.categories["u"])
    assert unique["u"].tolist() == order and str(unique["u"].dtype) == "uint64"
    assert unique["u_size"].tolist() == [counts[v] for v in order]

    wf.save(str(tmp_path / "wf"))
    files = sorted((tmp_path / "wf" / "stats").rglob("*.parquet"))
    table = pq.read_table(files[0])
    assert str(table.schema.field("value").type) == "uint64"
    assert table.column("value").to_pylist() == order

    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    assert loaded.transform(df)["u"].tolist() == before == _ref_ids(vals, vals)
    again = pd.read_parquet(loaded.stat_nodes[0].op.categories["u"])
    assert again["u"].tolist() == order


def test_a_folder_saved_before_the_fix_loads_with_its_own_ids(tmp_path):
    """Folders written by earlier versions hold the wrapped int64 values in their saved order: they
    load and give the ids they were saved with (the saved order is the id order)."""
    df = pd.DataFrame({"u": np.array([BIG + 5, 1, 2 ** 64 - 1, BIG + 5], dtype="uint64")})
    wf = tp.Workflow(["u"] >> ops.Categorify())
    wf.fit(tp.Dataset(df))
    wf.save(str(tmp_path / "wf"))
    path = sorted((tmp_path / "wf" / "stats").rglob("*.parquet"))[0]
    # rewrite the vocabulary as an old version saved it: int64 values (wrapped), old tie order
    old = pd.DataFrame({"value": np.array([BIG + 5, 2 ** 64 - 1, 1], dtype="uint64").view("int64"),
                        "count": np.array([2, 1, 1], dtype="int64")})
    old.to_parquet(path, index=False)
    import json

    from tabprep.workflow.serialize import stats_manifest

    spec_path = tmp_path / "wf" / "workflow.json"
    spec = json.loads(spec_path.read_text())
    spec["stats_files"] = stats_manifest(tmp_path / "wf")   # as that version recorded them
    spec_path.write_text(json.dumps(spec))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    assert loaded.transform(df)["u"].tolist() == [3, 5, 4, 3]


def test_drift_counts_no_oov_for_the_training_values_and_inspect_shows_them(tmp_path):
    vals = _values(2, 2000)
    df = pd.DataFrame({"u": np.array(vals, dtype="uint64")})
    wf = tp.Workflow(["u"] >> ops.Categorify())
    wf.fit(tp.Dataset(df), profile=True)
    rep = tp.drift(wf, tp.Dataset(df))
    # every current value is in the vocabulary (before the fix, the values from 2**63 on were not)
    assert rep.columns["u"]["current"]["oov_rate"] == 0.0
    unseen = pd.DataFrame({"u": np.array([BIG + 12345, vals[0]], dtype="uint64")})
    assert tp.drift(wf, tp.Dataset(unseen)).columns["u"]["current"]["oov_rate"] == 0.5

    from tabprep.cli.inspect_cmd import summarize_stats

    counts = Counter(vals)
    top = max(counts, key=lambda v: (counts[v], -v))
    summary = summarize_stats(wf.stat_nodes[0].op)
    assert summary["u"]["top"][0]["value"] == top


def test_given_vocabularies_of_uint64_values(backend, tmp_path):
    """``vocabs=`` holding values from 2**63 on (Python ints): those values were silently out of
    vocabulary on the CPU. Ids are the given order from 3 on, on both backends, saved and loaded."""
    df = pd.DataFrame({"u": np.array([BIG + 5, 1, 2 ** 64 - 1, BIG + 5, 7], dtype="uint64")})
    wf = tp.Workflow(["u"] >> ops.Categorify(vocabs={"u": [2 ** 64 - 1, BIG + 5, 1]}))
    ds = make_dataset(df, backend, nparts=2)
    wf.fit(ds)
    assert to_pandas(wf.transform(ds))["u"].tolist() == [4, 5, 3, 4, 2]
    if backend != "cpu":
        return
    wf.save(str(tmp_path / "wf"))
    assert tp.Workflow.load(str(tmp_path / "wf")).transform(df)["u"].tolist() == [4, 5, 3, 4, 2]
    unique = pd.read_parquet(wf.stat_nodes[0].op.categories["u"])
    assert unique["u"].tolist() == [2 ** 64 - 1, BIG + 5, 1]


def test_given_vocabularies_keep_every_digit_and_refuse_mixed_signs():
    """numpy makes floats of Python ints that fit neither int64 nor uint64 alone ([1, 2**64 - 1]
    became float64, 2**64 - 1 read back as 1.8446744073709552e19): the values are kept as uint64
    here. Ints from below 0 and from 2**63 on fit no 64-bit column together: refused when the op
    is built, naming the column."""
    df = pd.DataFrame({"u": np.array([2 ** 64 - 1, 1, 2 ** 64 - 2], dtype="uint64")})
    wf = tp.Workflow(["u"] >> ops.Categorify(vocabs={"u": [1, 2 ** 64 - 1]}))
    wf.fit(tp.Dataset(df))
    assert wf.transform(df)["u"].tolist() == [4, 3, 2]
    assert pd.read_parquet(wf.stat_nodes[0].op.categories["u"])["u"].tolist() == [1, 2 ** 64 - 1]
    with pytest.raises(ValueError, match=r"Categorify vocabs\['u'\] holds integers from -1 to 18446744073709551615"):
        ops.Categorify(vocabs={"u": [-1, 2 ** 64 - 1]})
