"""Categorify of list columns holding a null ELEMENT (the row itself is not null): NVTabular 23.08
gives the null element the out-of-vocabulary id 2, not the null id 1 (nvtabular/ops/categorify.py
``_encode``: the vocabulary file holds no null row, so the null leaf finds no match in the merge
and is filled with the OOV id; the null id 1 is only written at the positions of null *rows*).
Checked on nvtabular 23.8.0 (CPU): ``[["a", None], ["b"], [], [None, None], ["a"]]`` gives
``[[3, 2], [4], [], [2, 2], [3]]``. Strings, ints and floats (NaN is null); scalar nulls keep id 1.
References are plain Python (0 pad, 1 null, 2 OOV, then values by descending count, ties by
ascending value)."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

OOV = 2


def _isnull(v):
    return v is None or (isinstance(v, float) and v != v)


def _vocab(rows, freq_threshold=0, keep=None):
    counts = Counter(v for row in rows for v in row if not _isnull(v))
    order = [v for v in sorted(counts, key=lambda v: (-counts[v], v)) if counts[v] >= max(freq_threshold, 1)]
    if keep is not None:
        order = order[:keep]
    return order


def _expect(rows, order, base=3):
    ids = {v: base + i for i, v in enumerate(order)}
    return [[OOV if _isnull(v) else ids.get(v, OOV) for v in row] for row in rows]


def _frame():
    return pd.DataFrame({
        "ls": [["a", None], ["b"], [], [None, None], ["a"], ["c", "a", None], ["b"]],
        "li": [[1, None], [2], [], [None], [1], [3, 1, None], [2]],
        "lf": [[1.5, np.nan], [2.0], [], [np.nan], [1.5], [0.5, 1.5, np.nan], [2.0]],
        "s": ["x", None, "y", "x", None, "x", "y"],
    })


def _lists(series):
    return [[None if _isnull(v) else (int(v) if isinstance(v, (int, np.integer)) else v) for v in row]
            for row in series]


def _as_lists(out, c):
    return [[int(v) for v in row] for row in out[c]]


@pytest.mark.parametrize("source", ["frame", "parquet"])
@pytest.mark.parametrize("kw, keep, threshold", [({}, None, 0), ({"freq_threshold": 2}, None, 2),
                                                 ({"max_size": 5}, 2, 0)])
def test_null_element_gets_the_oov_id(source, kw, keep, threshold, tmp_path):
    df = _frame()
    if source == "parquet":
        df.to_parquet(tmp_path / "d.parquet", index=False)
        ds = tp.Dataset(str(tmp_path / "d.parquet"), engine="parquet")
    else:
        ds = tp.Dataset(df, npartitions=2)
    wf = tp.Workflow(["ls", "li", "lf", "s"] >> ops.Categorify(**kw))
    wf.fit(ds)
    out = wf.transform(ds).to_ddf().compute()
    sizes = tp.get_embedding_sizes(wf, multihot=False)
    for c in ["ls", "li", "lf"]:
        rows = _lists(df[c])
        order = _vocab(rows, threshold, keep)
        assert _as_lists(out, c) == _expect(rows, order), c
        # the vocabulary (and the table) holds the non-null values only: null elements add no row
        assert sizes[c][0] == 3 + len(order), c
        assert wf.output_schema[c].properties["cardinality"] == 3 + len(order), c
    # a scalar column's nulls keep id 1
    s_order = _vocab([[v] for v in df["s"]], threshold, keep)
    s_ids = {v: 3 + i for i, v in enumerate(s_order)}
    assert out["s"].tolist() == [1 if _isnull(v) else s_ids.get(v, OOV) for v in df["s"]]
    # saved and loaded: the same ids
    wf.save(str(tmp_path / "wf"))
    back = tp.Workflow.load(str(tmp_path / "wf"))
    again = back.transform(ds).to_ddf().compute()
    for c in ["ls", "li", "lf"]:
        assert _as_lists(again, c) == _as_lists(out, c), c


def test_null_element_with_oov_buckets_is_the_first_oov_id():
    """With num_buckets=3 (OOV ids 2, 3, 4; vocabulary from 5) a null element gets id 2, the OOV id
    of a null (tabprep's murmur3 of a null is 0; NVTabular 23.08's CPU raises on list columns with
    num_buckets); the values keep their vocabulary ids."""
    df = _frame()
    wf = tp.Workflow(["ls", "li", "lf"] >> ops.Categorify(num_buckets=3))
    ds = tp.Dataset(df, npartitions=2)
    wf.fit(ds)
    out = wf.transform(ds).to_ddf().compute()
    for c in ["ls", "li", "lf"]:
        rows = _lists(df[c])
        assert _as_lists(out, c) == _expect(rows, _vocab(rows), base=5), c


def test_null_element_of_unseen_data_and_null_rows():
    """Transform of new data: a null element is 2 as an unseen value is; a null row stays a null row."""
    df = _frame()
    wf = tp.Workflow(["ls"] >> ops.Categorify())
    wf.fit(tp.Dataset(df, npartitions=2))
    order = _vocab(_lists(df["ls"]))
    new = pd.DataFrame({"ls": [[None], ["zz", None, "a"], ["b"]]})
    out = wf.transform(new)
    assert _as_lists(out, "ls") == _expect(_lists(new["ls"]), order)


def test_rows_of_null_elements_only():
    """Rows whose elements are all null: every element 2 (a string row keeps the column a list of strings)."""
    df = pd.DataFrame({"ls": [["a"], ["b"], ["a"]]})
    wf = tp.Workflow(["ls"] >> ops.Categorify())
    wf.fit(tp.Dataset(df))
    new = pd.DataFrame({"ls": [[None, None], [None], ["a"]]})
    assert _as_lists(wf.transform(new), "ls") == [[2, 2], [2], [3]]


@pytest.mark.parametrize("col", ["ls", "li", "lf"])
def test_null_element_gets_the_oov_id_on_either_backend(backend, col):
    """Frames of the backend (cuDF lists on the GPU: its leaves' null mask), strings, ints, floats."""
    from conftest import frame_on, to_pandas

    df = _frame()[[col]]
    wf = tp.Workflow([col] >> ops.Categorify())
    wf.fit(tp.Dataset(frame_on(df, backend)))
    out = to_pandas(wf.transform(frame_on(df, backend)))
    rows = _lists(df[col])
    assert _as_lists(out, col) == _expect(rows, _vocab(rows))
