"""Categorify(encode_type="combo"): ties in the vocabulary are ordered by the group's tuple of
values, as NVTabular orders them (it sorts the unique combinations by the group's columns, nulls
first, then by descending count, a stable sort on the GPU): numbers by value, strings by code
point, a null part before any value of its column.

tabprep counts combinations as one string key per row (``"<len>:<value>\\x1f..."``); before this
fix the ties followed that string, so a shorter string sorted before a longer one ("b" before
"aa"), and -5 after 3, 10.0 before 2.25: silently other ids than NVTabular's. The reference
here is written in the test: ``collections.Counter`` over Python tuples, sorted by
(-count, tuple) with None first.
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

from conftest import make_dataset, to_pandas


def _tuple_key(t):
    return tuple((0, 0) if v is None else (1, v) for v in t)


def _ref_ids(rows, max_entries=None, threshold=0):
    """NVTabular's combo ids: 0 pad, 1 all-null row, 2 OOV, then descending count, ties by tuple."""
    counts = Counter(r for r in rows if any(v is not None for v in r))
    order = sorted((r for r in counts if counts[r] >= max(threshold, 1)), key=lambda r: (-counts[r], _tuple_key(r)))
    if max_entries is not None:
        order = order[:max_entries]
    ids = {r: 3 + i for i, r in enumerate(order)}
    return [1 if all(v is None for v in r) else ids.get(r, 2) for r in rows]


def _py(v):
    if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
        return None
    return v.item() if hasattr(v, "item") else v


def _fit(df, cols, backend="cpu", nparts=3, **kw):
    wf = tp.Workflow([cols] >> ops.Categorify(encode_type="combo", **kw))
    ds = make_dataset(df, backend, nparts=nparts)
    wf.fit(ds)
    return to_pandas(wf.transform(ds))["_".join(cols)].tolist()


def test_string_parts_of_different_lengths(backend):
    df = pd.DataFrame({"a": ["b", "aa", "c"], "b": ["x", "x", "x"]})
    # all tie: ("aa", "x") < ("b", "x") < ("c", "x")
    assert _fit(df, ["a", "b"], backend, nparts=1) == [4, 3, 5]


def test_negative_ints_and_floats_by_value(backend):
    df = pd.DataFrame({"i": [-5, 3, 10, -5], "f": [2.25, 10.0, 1.5, -0.5], "s": ["x", "x", "x", "y"]})
    # (i, s): (-5, x), (-5, y), (3, x), (10, x), each once
    assert _fit(df, ["i", "s"], backend, nparts=1) == [3, 5, 6, 4]
    # (f, s): (-0.5, y) < (1.5, x) < (2.25, x) < (10.0, x)
    assert _fit(df, ["f", "s"], backend, nparts=1) == [5, 6, 4, 3]


@pytest.mark.parametrize("nparts", [1, 4])
def test_ids_match_the_reference_with_nulls_ties_and_max_size(backend, nparts):
    rng = np.random.default_rng(5)
    n = 2000
    words = np.array(["", "a", "b", "aa", "ab", "ba", "zz", "é", "Z", "10", "9"], dtype=object)
    i = rng.integers(-12, 12, n).astype("float64")
    i[rng.random(n) < 0.07] = np.nan
    f = np.round(rng.normal(0, 20, n), 1)
    f[rng.random(n) < 0.07] = np.nan
    s = words[rng.integers(0, len(words), n)].astype(object)
    s[rng.random(n) < 0.07] = None
    df = pd.DataFrame({"i": pd.array([None if np.isnan(v) else int(v) for v in i], dtype="Int64"),
                       "f": f, "s": pd.Series(s, dtype=object)})
    rows_is = [(_py(a), _py(b)) for a, b in zip(df["i"], df["s"])]
    rows_fs = [(_py(a), _py(b)) for a, b in zip(df["f"], df["s"])]
    assert _fit(df, ["i", "s"], backend, nparts=nparts) == _ref_ids(rows_is)
    assert _fit(df, ["f", "s"], backend, nparts=nparts) == _ref_ids(rows_fs)
    # max_size: pad, null and one OOV id, then the first 20 combinations of that order
    assert _fit(df, ["i", "s"], backend, nparts=nparts, max_size=23) == _ref_ids(rows_is, max_entries=20)
    assert _fit(df, ["f", "s"], backend, nparts=nparts, freq_threshold=3) == _ref_ids(rows_fs, threshold=3)


def test_minus_zero_and_zero_are_one_combination(backend, tmp_path):
    """-0.0 == 0.0: NVTabular's group-by counts them as one value, as tabprep's single-column
    vocabularies do; the combined keys wrote "-0.0" and "0.0", two combinations (format 3). Format 4
    writes both as "0.0"; a folder saved with format 3 keeps its format (and ids) when loaded."""
    df = pd.DataFrame({"f": [0.0, -0.0, 1.5, -0.0, np.nan], "s": ["x", "x", "x", "x", "x"]})
    # (0.0, x) three times: 3; then the ties (NaN, x) 4 (a null part first) and (1.5, x) 5
    assert _fit(df, ["f", "s"], backend, nparts=2) == [3, 3, 5, 3, 4]
    if backend != "cpu":
        return
    import json

    wf = tp.Workflow([["f", "s"]] >> ops.Categorify(encode_type="combo"))
    wf.fit(tp.Dataset(df))
    wf.save(str(tmp_path / "wf"))
    spec = json.loads((tmp_path / "wf" / "workflow.json").read_text())
    assert '"combo_key_format": 4' in json.dumps(spec)
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    assert loaded.transform(df)["f_s"].tolist() == [3, 3, 5, 3, 4]


def test_the_partitioned_finalize_keeps_the_tuple_order():
    """On a cluster a vocabulary's counts are cut into parts by a hash of the key, each part reduced
    to its first values (max_size) and the parts merged (tabprep.workflow.reduction): the kinds of
    the parts travel with the counts, so the reduced parts keep the combinations NVTabular keeps."""
    from tabprep.stats import vocab as V

    rng = np.random.default_rng(11)
    words = np.array(["b", "aa", "c", "ab", "", "Z"], dtype=object)
    frames = [pd.DataFrame({"i": rng.integers(-20, 20, 300), "s": words[rng.integers(0, len(words), 300)]})
              for _ in range(4)]
    op = ops.Categorify(encode_type="combo")
    wf = tp.Workflow([["i", "s"]] >> op)   # binds the op's column group
    del wf
    workers = [[op.fit_partial(["i", "s"], f)["i_s"] for f in frames[:2]],
               [op.fit_partial(["i", "s"], f)["i_s"] for f in frames[2:]]]
    assert all(p.combo == ("int", "str") for w in workers for p in w)
    keep = 15
    cuts = [V.split_counts(V.combine_counts(w), 3) for w in workers]
    reduced = [V.reduce_counts(V.combine_counts([c[j] for c in cuts]), 0, keep) for j in range(3)]
    values, freqs = V.finalize_vocab(V.combine_counts(reduced), 0, keep)
    from tabprep.stats.combo_order import combo_parts

    got = [(int(a), b) for a, b in (combo_parts(v) for v in values)]
    rows = [(int(a), b) for f in frames for a, b in zip(f["i"], f["s"])]
    counts = Counter(rows)
    want = sorted(counts, key=lambda r: (-counts[r], r))[:keep]
    assert got == want and list(freqs) == [counts[r] for r in want]


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_cells = {
    "int": st.one_of(st.none(), st.integers(-(2 ** 63), 2 ** 63 - 1), st.integers(-3, 3)),
    "uint": st.one_of(st.none(), st.integers(0, 2 ** 64 - 1), st.integers(2 ** 63 - 2, 2 ** 63 + 2)),
    "float": st.one_of(st.none(), st.floats(allow_nan=False),
                       st.sampled_from([0.0, -1.5, 2.25, 10.0, 16777216.0, 16777217.0])),
    "str": st.one_of(st.none(), st.text(max_size=5), st.sampled_from(["", "a", "aa", "b", ":", "1:", "é", "Z"])),
    "sep": st.one_of(st.none(), st.sampled_from(["a\x1fb", "a", "\x1e", "\x1e\x1f"])),
}
_dtypes = {"int": "Int64", "uint": "UInt64", "float": "float64", "str": object, "sep": object}


@settings(max_examples=40, deadline=None)
@given(data=st.data(), kinds=st.lists(st.sampled_from(sorted(_cells)), min_size=2, max_size=3))
def test_the_fast_order_equals_the_tuple_order(data, kinds):
    """combo_order (Arrow's kernels; parts holding the separator fall back to Python) sorts the
    distinct keys of random groups (nulls, ints across int64 / uint64, floats with inf and -0.0,
    strings with ':' and non-ASCII) as Python sorts their tuples, nulls first."""
    from tabprep.ops._combo import _combo_series, part_kind
    from tabprep.stats.combo_order import arrow_order, combo_order

    rows = data.draw(st.lists(st.tuples(*[_cells[k] for k in kinds]), min_size=1, max_size=30))
    df = pd.DataFrame({f"c{j}": pd.Series([r[j] for r in rows], dtype=_dtypes[k]) for j, k in enumerate(kinds)})
    cols = list(df.columns)
    keys = _combo_series(df, cols)
    distinct = {}
    for key, row in zip(keys, rows):
        if isinstance(key, str):
            # (-0.0 and 0.0 are one key in format 4: the tuple keeps the first seen)
            distinct.setdefault(key, tuple(None if v is None else (0.0 if v == 0 and isinstance(v, float) else v)
                                           for v in row))
    values = np.array(list(distinct), dtype=object)
    kinds_ = tuple(part_kind(df[c]) for c in cols)
    want = sorted(distinct.values(), key=_tuple_key)
    assert [distinct[values[i]] for i in combo_order(values, kinds_)] == want
    if "sep" not in kinds:   # no part holds the separator: Arrow's path itself, not its fallback
        assert [distinct[values[i]] for i in arrow_order(values, kinds_)] == want


def test_the_fast_order_reads_floats_and_ints_exactly():
    """Parts that a narrower type would make equal stay apart: 2**24 + 1 and 2**24 as floats
    (equal in float32), 2**63 + 1 and 2**63 as uint64 (equal in float64)."""
    from tabprep.ops._combo import _combo_series
    from tabprep.stats.combo_order import arrow_order

    df = pd.DataFrame({"f": [16777217.0, 16777216.0], "u": np.array([2 ** 63 + 1, 2 ** 63], dtype="uint64"),
                       "s": ["a", "b"]})
    for col in ("f", "u"):
        keys = _combo_series(df, [col, "s"]).to_numpy(dtype=object)
        kind = "float" if col == "f" else "int"
        assert arrow_order(keys, (kind, "str")).tolist() == [1, 0]


def test_an_int_part_written_as_a_float_is_ordered_by_value():
    """An int column read as floats in one partition ("5.0") falls back to Python's order, by value."""
    from tabprep.stats.combo_order import combo_order

    keys = np.array(["3:5.0\x1f1:x\x1f", "2:-7\x1f1:x\x1f", "4:True\x1f1:x\x1f", "1:3\x1f1:x\x1f"], dtype=object)
    assert combo_order(keys, ("int", "str")).tolist() == [1, 2, 3, 0]


@pytest.mark.parametrize("dtype", ["float32", "float64", "Float64"])
def test_format_4_changes_only_minus_zero(dtype):
    """The -0.0 rewrite keeps the column's dtype: every other float part is written with the same
    digits as in format 3 (0.1 in float32 is not widened to float64's 0.10000000149011612)."""
    from tabprep.ops._combo import _combo_series

    df = pd.DataFrame({"f": pd.Series([0.1, -0.0, 1e20, np.nan, 2.5, 0.0], dtype=dtype), "s": list("abcdef")})
    k3, k4 = _combo_series(df, ["f", "s"], 3).tolist(), _combo_series(df, ["f", "s"], 4).tolist()
    assert [a == b for a, b in zip(k3, k4)] == [True, False, True, True, True, True]
    assert k4[1] == "3:0.0\x1f1:b\x1f" and k3[1] == "4:-0.0\x1f1:b\x1f"
