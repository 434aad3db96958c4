"""Categorify of a pandas ``category`` column whose dtype lists levels no row holds.

NVTabular 23.08 on the CPU counts with pandas ``groupby`` (``observed=False`` for categoricals in
pandas 1.5), so unused levels enter its vocabulary with count 0, after the seen values, kept by
``freq_threshold`` (its ``_save_encodings`` keeps ``size == 0`` rows) and cut by ``max_size``; cuDF's
``groupby`` (``observed=True``) drops them, so its GPU path does not, nor does any path once the
column is read as strings. tabprep learns the values rows hold, whatever the dtype, the reader or
the backend (the same ids as the column cast to strings), and says so at fit with an
``NVTabularDifferenceWarning`` naming the column. It also says so when a tie between seen values
is ordered by value here but by the category order in NVTabular (its sort of a categorical column).
References are plain pandas/Python (0 pad, 1 null, 2 OOV, then values by descending count, ties
by ascending value)."""
from __future__ import annotations

import warnings
from collections import Counter

import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

CATS = ["z", "c", "b", "a", "unused"]


def _ids(values, freq_threshold=0, keep=None):
    counts = Counter(v for v in values if v is not None and v == v)
    order = [v for v in sorted(counts, key=lambda v: (-counts[v], v)) if counts[v] >= max(freq_threshold, 1)]
    return {v: 3 + i for i, v in enumerate(order[:keep] if keep is not None else order)}


def _expect(values, ids):
    return [1 if (v is None or v != v) else ids.get(v, 2) for v in values]


def _frame():
    return pd.DataFrame({"c": pd.Categorical(["b", "a", None, "b", "c", "a", "b"], categories=CATS),
                         "s": ["b", "a", None, "b", "c", "a", "b"]})


def _fit(df, nparts=2, **kw):
    wf = tp.Workflow(["c"] >> ops.Categorify(**kw))
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        wf.fit(tp.Dataset(df, npartitions=nparts))
    notes = [str(w.message) for w in rec if issubclass(w.category, tp.NVTabularDifferenceWarning)]
    return wf, notes


@pytest.mark.parametrize("kw, threshold, keep", [({}, 0, None), ({"freq_threshold": 1}, 1, None),
                                                 ({"freq_threshold": 2}, 2, None), ({"max_size": 5}, 0, 2)])
@pytest.mark.parametrize("nparts", [1, 2])
def test_unused_levels_are_not_in_the_vocabulary(kw, threshold, keep, nparts, tmp_path):
    df = _frame()
    wf, notes = _fit(df, nparts, **kw)
    ids = _ids(list(df["s"]), threshold, keep)
    out = wf.transform(tp.Dataset(df, npartitions=nparts)).to_ddf().compute()
    assert out["c"].tolist() == _expect(df["s"], ids)
    assert tp.get_embedding_sizes(wf, multihot=False)["c"][0] == 3 + len(ids)
    assert wf.output_schema["c"].properties["cardinality"] == 3 + len(ids)
    # the unused levels (and unseen values) are out of vocabulary on new data
    new = pd.DataFrame({"c": pd.Categorical(["a", "z", "unused", "q", None], categories=CATS + ["q"])})
    assert wf.transform(new)["c"].tolist() == _expect(["a", "z", "unused", "q", None], ids)
    # said at fit, once, naming the column, the levels and how to silence it
    unused_notes = [n for n in notes if "unused" in n and "'c'" in n]
    assert len(unused_notes) == 1, notes
    assert "'z'" in unused_notes[0] and "remove_unused_categories" in unused_notes[0]
    # the same ids as the column as strings (no note then), and as after a parquet round trip
    wf_s = tp.Workflow(["s"] >> ops.Categorify(**kw))
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        wf_s.fit(tp.Dataset(df, npartitions=nparts))
    assert not [w for w in rec if issubclass(w.category, tp.NVTabularDifferenceWarning)]
    assert wf_s.transform(df)["s"].tolist() == out["c"].tolist()
    df[["c"]].to_parquet(tmp_path / "c.parquet")
    wf_p = tp.Workflow(["c"] >> ops.Categorify(**kw))
    wf_p.fit(tp.Dataset(str(tmp_path / "c.parquet"), engine="parquet"))
    assert wf_p.transform(df[["c"]])["c"].tolist() == out["c"].tolist()
    # saved and loaded: same ids and sizes, no note at load
    wf.save(str(tmp_path / "wf"))
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        back = tp.Workflow.load(str(tmp_path / "wf"))
    assert not [w for w in rec if issubclass(w.category, tp.NVTabularDifferenceWarning) and "unused" in str(w.message)]
    assert back.transform(df)["c"].tolist() == out["c"].tolist()
    assert tp.get_embedding_sizes(back, multihot=False)["c"][0] == 3 + len(ids)


def test_no_note_without_unused_levels_or_reordered_ties():
    df = pd.DataFrame({"c": pd.Categorical(["b", "a", "b", "c", None], categories=["a", "b", "c"])})
    wf, notes = _fit(df)
    assert notes == []
    assert wf.transform(df)["c"].tolist() == _expect(["b", "a", "b", "c", None], _ids(["b", "a", "b", "c"]))


def test_ties_in_another_category_order_are_said():
    """a and b are seen twice each: tabprep orders them by value (a, b), NVTabular 23.08 on the CPU by
    the category order (b before a): a note at fit names the column and the tie."""
    values = ["a", "b", "a", "b", "c"]
    df = pd.DataFrame({"c": pd.Categorical(values, categories=["c", "b", "a"])})
    wf, notes = _fit(df)
    assert wf.transform(df)["c"].tolist() == _expect(values, _ids(values))   # a=3, b=4
    tie_notes = [n for n in notes if "'c'" in n and "tie" in n]
    assert len(tie_notes) == 1, notes
    assert "'a'" in tie_notes[0] and "'b'" in tie_notes[0]


def test_int_categories():
    df = pd.DataFrame({"c": pd.Categorical([1, 2, 1, None, 3], categories=[9, 3, 2, 1, 7])})
    wf, notes = _fit(df)
    ids = _ids([1, 2, 1, 3])
    assert wf.transform(df)["c"].tolist() == _expect([1, 2, 1, None, 3], ids)
    assert tp.get_embedding_sizes(wf, multihot=False)["c"][0] == 3 + len(ids)
    assert any("unused" in n and "9" in n for n in notes), notes
