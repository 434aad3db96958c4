"""Categorify column groups: shared ("joint") vocabularies and "combo" encodings, plus the
scalable vocabulary machinery (tree merges, split vocabulary files, integer lookups)."""
from __future__ import annotations

from collections import Counter
from typing import Any, Dict, List

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops
from tabprep.stats import vocab as V

from conftest import make_dataset, to_pandas


def _py(v: Any) -> Any:
    if v is None or v is pd.NA or (isinstance(v, (float, np.floating)) and np.isnan(v)):
        return None
    return v.item() if isinstance(v, np.generic) else v


def ref_vocab(values: List[Any], freq_threshold: int = 0, max_size: int = 0) -> Dict[Any, int]:
    """value -> id: most frequent first, ties by ascending value; ids start at 2 + 1 OOV bucket."""
    counts = Counter(v for v in values if v is not None)
    items = sorted(((v, c) for v, c in counts.items() if c >= freq_threshold), key=lambda vc: (-vc[1], vc[0]))
    if max_size:
        items = items[:max_size]
    return {v: 3 + i for i, (v, _) in enumerate(items)}


def encode(values: List[Any], vocab: Dict[Any, int]) -> List[int]:
    return [1 if v is None else vocab.get(v, 2) for v in values]


def _frame(seed: int = 0, n: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = pd.array(rng.integers(0, 15, n), dtype="Int64")
    a[rng.random(n) < 0.1] = pd.NA
    b = rng.integers(5, 25, n).astype("int32")
    s = rng.choice(np.array(["p", "q", "r", "s"], dtype=object), n)
    s[rng.random(n) < 0.1] = None
    return pd.DataFrame({"a": a, "b": b, "s": pd.Series(s, dtype="str"), "flag": rng.random(n) < 0.4,
                         "c": rng.integers(0, 4, n)})


def values(s: pd.Series) -> List[Any]:
    return [_py(v) for v in s.astype(object).tolist()]


# -- joint (shared) vocabularies ------------------------------------------------------------------
def test_joint_group_shares_one_vocabulary_over_partitions():
    train, data = _frame(0), _frame(1, 120)
    data.loc[::5, "b"] = 999  # unseen
    wf = tp.Workflow([["a", "b"], "c"] >> ops.Categorify())
    wf.fit(make_dataset(train, nparts=5))
    out = to_pandas(wf.transform(make_dataset(data, nparts=3)))
    assert list(out.columns) == ["c", "a", "b"]   # NVTabular's order: plain columns first, then the groups
    shared = ref_vocab(values(train["a"]) + values(train["b"]))
    assert out["a"].tolist() == encode(values(data["a"]), shared)
    assert out["b"].tolist() == encode(values(data["b"]), shared)
    assert out["c"].tolist() == encode(values(data["c"]), ref_vocab(values(train["c"])))
    sch = wf.output_schema
    assert sch["a"].cardinality == sch["b"].cardinality == 3 + len(shared)
    assert sch["a"].properties["vocabulary"] == sch["b"].properties["vocabulary"] == "a_b"
    assert sch["c"].properties["vocabulary"] == "c"
    sizes = tp.get_embedding_sizes(wf)
    assert sizes["a"] == sizes["b"]


def test_joint_group_of_a_list_column_and_a_scalar_column():
    lst = pd.Series(pd.arrays.ArrowExtensionArray(
        __import__("pyarrow").array([[1, 2], [2], None, [], [7, 2, None]], type=__import__("pyarrow").list_(
            __import__("pyarrow").int64()))))
    df = pd.DataFrame({"hist": lst, "item": pd.array([2, 7, 5, None, 1], dtype="Int64")})
    wf = tp.Workflow([["hist", "item"]] >> ops.Categorify())
    wf.fit(df)
    out = wf.transform(df)
    elems = [1, 2, 2, 7, 2, None] + [2, 7, 5, None, 1]
    vocab = ref_vocab(elems)  # 2 x4, 1 x2, 7 x2, 5 x1
    assert out["item"].tolist() == encode([2, 7, 5, None, 1], vocab)
    got = [None if v is None or v is pd.NA else list(v) for v in out["hist"].tolist()]
    # a null element of the list is out of vocabulary (2); the null scalar of "item" is 1
    assert got == [encode([1, 2], vocab), encode([2], vocab), None, [], encode([7, 2], vocab) + [2]]


def test_group_thresholds_are_keyed_by_the_group_name():
    train = _frame(2)
    wf = tp.Workflow([["a", "b"]] >> ops.Categorify(freq_threshold={"a_b": 25}, max_size={"a_b": 9}))
    wf.fit(make_dataset(train, nparts=3))
    out = wf.transform(train)
    # NVTabular's max_size counts ids 0, 1 and 2: 9 ids leave 6 vocabulary entries
    vocab = ref_vocab(values(train["a"]) + values(train["b"]), freq_threshold=25, max_size=6)
    assert out["a"].tolist() == encode(values(train["a"]), vocab)
    assert out["b"].tolist() == encode(values(train["b"]), vocab)


# -- combo ---------------------------------------------------------------------------------------------
def combo_keys(df: pd.DataFrame, cols: List[str]) -> List[Any]:
    """The documented combination key: str() of each part written as ``<length>:<part>\\x1f``
    (injective: a part containing \\x1f cannot shift the split), a null part as ``\\x1e\\x1f``;
    null only when every part is null (NVTabular: a combination with a null part is a value)."""
    out = []
    for row in zip(*[values(df[c]) for c in cols]):
        if all(v is None for v in row):
            out.append(None)
            continue
        out.append("".join("\x1e\x1f" if v is None else f"{len(str(v))}:{v}\x1f" for v in row))
    return out


def ref_combo_vocab(df: pd.DataFrame, cols: List[str]) -> Dict[Any, int]:
    """combination key -> id: most frequent first, ties by the tuple of values with a null part first
    (NVTabular sorts the group's columns, nulls first), not by the key string."""
    rows = [r for r in zip(*[values(df[c]) for c in cols]) if not all(v is None for v in r)]
    counts = Counter(rows)
    order = sorted(counts, key=lambda r: (-counts[r], tuple((0, 0) if v is None else (1, v) for v in r)))
    keys = dict(zip(rows, [k for k in combo_keys(df, cols) if k is not None]))
    return {keys[r]: 3 + i for i, r in enumerate(order)}


@pytest.mark.parametrize("cols", [["a", "b"], ["s", "a", "flag"]])
def test_combo_matches_reference(cols):
    train, data = _frame(3), _frame(4, 150)
    data.loc[::4, "b"] = 777  # unseen combinations
    wf = tp.Workflow([cols] >> ops.Categorify(encode_type="combo"))
    wf.fit(make_dataset(train, nparts=4))
    out = to_pandas(wf.transform(make_dataset(data, nparts=2)))
    name = "_".join(cols)
    assert list(out.columns) == [name] == wf.output_columns
    vocab = ref_combo_vocab(train, cols)
    assert out[name].tolist() == encode(combo_keys(data, cols), vocab)
    col = wf.output_schema[name]
    assert col.cardinality == 3 + len(vocab) and col.dtype == "int64" and "categorical" in col.tags
    assert set(tp.get_embedding_sizes(wf)) == {name}


def test_combo_next_to_single_columns_and_oov_buckets():
    train = _frame(5)
    data = train.assign(b=train["b"] + 100)  # every combination unseen
    wf = tp.Workflow(([["a", "b"]] >> ops.Categorify(encode_type="combo", num_oov_buckets=3)) +
                     (["c"] >> ops.Categorify(encode_type="combo")))
    wf.fit(make_dataset(train, nparts=3))
    out = wf.transform(data)
    assert list(out.columns) == ["a_b", "c"]
    nulls = (data["a"].isna() & data["b"].isna()).to_numpy()
    assert (out["a_b"].to_numpy()[nulls] == 1).all()
    assert set(out["a_b"].to_numpy()[~nulls].tolist()) <= {2, 3, 4}
    assert out["c"].tolist() == encode(values(data["c"]), ref_vocab(values(train["c"])))


def test_joint_group_of_strings_and_numbers_is_refused():
    with pytest.raises(TypeError, match="all be strings or all numbers"):
        tp.Workflow([["a", "s"]] >> ops.Categorify()).fit(_frame(0))


def test_combo_rejects_list_columns():
    import pyarrow as pa

    lst = pd.Series(pd.arrays.ArrowExtensionArray(pa.array([[1], [2, 3]], type=pa.list_(pa.int64()))))
    df = pd.DataFrame({"l": lst, "x": [1, 2]})
    with pytest.raises(TypeError, match="combo"):
        tp.Workflow([["l", "x"]] >> ops.Categorify(encode_type="combo")).fit(df)


@pytest.mark.parametrize("encode_type", ["joint", "combo"])
def test_groups_survive_save_and_load(tmp_path, encode_type):
    train, data = _frame(6), _frame(7, 90)
    group = ["a", "b"] if encode_type == "joint" else ["a", "s"]
    wf = tp.Workflow([group, "c"] >> ops.Categorify(encode_type=encode_type))
    wf.fit(make_dataset(train, nparts=3))
    before = to_pandas(wf.transform(make_dataset(data, nparts=2)))
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    assert loaded.output_schema == wf.output_schema
    assert loaded.ops[0].input_groups == [group]
    pd.testing.assert_frame_equal(to_pandas(loaded.transform(make_dataset(data, nparts=1))), before)


# -- vocabularies at scale ---------------------------------------------------------------------------
def test_tree_merge_of_many_partitions_matches_counter():
    rng = np.random.default_rng(8)
    n = 20_000
    x = pd.array((rng.pareto(1.2, n) * 50).astype("int64") - 40, dtype="Int64")
    x[rng.random(n) < 0.05] = pd.NA
    df = pd.DataFrame({"x": x})
    op = ops.Categorify()
    wf = tp.Workflow(["x"] >> op)
    wf.fit(tp.Dataset(df, npartitions=23))  # 23 partials -> two levels of 8-way merges
    vocab = ref_vocab(values(df["x"]))
    assert wf.transform(df)["x"].tolist() == encode(values(df["x"]), vocab)
    assert op.stats_["x"]["nulls"] == int(df["x"].isna().sum())
    counts = Counter(v for v in values(df["x"]) if v is not None)
    assert op.stats_["x"]["freqs"].tolist() == [counts[v] for v in op.stats_["x"]["values"].tolist()]


def test_combine_mixed_layouts_and_host_copies():
    ints = V.partial_counts([pd.Series([3, 1, 3, None], dtype="Int64")])
    strs = V.partial_counts([pd.Series(["a", None, "a"], dtype="str")])
    assert ints.sorted_layout and not strs.sorted_layout
    assert ints.keys.tolist() == [1, 3] and ints.counts.tolist() == [1, 2] and ints.nulls == 1
    merged = V.combine_counts([ints, strs, V.partial_counts([pd.Series([], dtype="int64")])])
    assert merged.nulls == 2
    assert dict(zip(*[a.tolist() for a in (merged.counts.index, merged.counts)])) == {1: 1, 3: 2, "a": 2}
    assert V.to_host(ints) is ints  # already on the host


def test_large_vocabulary_is_saved_in_parts(tmp_path, monkeypatch):
    monkeypatch.setattr(V, "PART_ROWS", 7)
    df = pd.DataFrame({"x": np.arange(50) % 45, "s": pd.Series([f"v{i % 31}" for i in range(50)], dtype="str")})
    wf = tp.Workflow(["x", "s"] >> ops.Categorify())
    wf.fit(df)
    before = wf.transform(df)
    wf.save(str(tmp_path / "wf"))
    parts = sorted(p.name for p in (tmp_path / "wf").rglob("vocab_000.part_*.parquet"))
    assert len(parts) == 7  # 45 values, 7 per part
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    pd.testing.assert_frame_equal(loaded.transform(df), before)


@pytest.mark.parametrize("structure", ["cpu-hash", "sorted"])
def test_integer_lookup_across_widths_and_a_float_column(structure):
    vocab = np.array([40, -3, 7, 2 ** 40], dtype="int64")
    # the CPU uses a hash index; the GPU's sorted search is checked here with numpy arrays
    idx = V.vocab_index(vocab, pd.Series([1])) if structure == "cpu-hash" else V.SortedVocab(vocab, pd.Series([1]))
    for s in (pd.Series([7, 40, 5, -3], dtype="int32"), pd.Series([7, 40, None, -3], dtype="Int64"),
              pd.Series([7, 40, 5, 250], dtype="uint8")):
        got = V.index_of(s, idx).tolist()
        exp = [-1 if _py(v) is None or _py(v) not in vocab.tolist() else vocab.tolist().index(_py(v))
               for v in s.astype(object)]
        assert got == exp
    assert V.index_of(pd.Series([7.0, 2.0 ** 40, np.nan, 0.5]), idx).tolist() == [2, 3, -1, -1]
    empty = V.vocab_index(np.array([], dtype="int64"), pd.Series([1]))
    assert V.index_of(pd.Series([1, 2]), empty).tolist() == [-1, -1]
