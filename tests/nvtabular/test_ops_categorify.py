"""Categorify as NVTabular 23.08's (nvtabular/ops/categorify.py): the id layout of the class
docstring ("Encoding Convention"), ``max_size`` bounding the ids (``_save_encodings``'s
``first_n`` counts the pad, null and OOV ids), combinations with a null part (``_encode``: only
a row whose parts are all null is encoded 1; ``_top_level_groupby`` groups with dropna=False)."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops
from tabprep.testing import check_op

from conftest import make_dataset, to_pandas


def _fit_transform(sel, op, df, backend="cpu"):
    wf = tp.Workflow(sel >> op)
    out = to_pandas(wf.fit_transform(make_dataset(df, backend, nparts=3)).to_ddf().compute())
    return wf, out


def _ref_ids(train, max_size, num_buckets=1):
    """Ids of NVTabular's convention: 0 pad, 1 null, 2..1+B OOV, then values by descending count
    (ties: ascending value), at most max_size ids in all."""
    counts = Counter(v for v in train if v is not None and v == v)
    items = sorted(counts.items(), key=lambda vc: (-vc[1], vc[0]))[:max_size - 2 - num_buckets]
    vocab = {v: 2 + num_buckets + i for i, (v, _) in enumerate(items)}
    return [1 if v is None or v != v else vocab.get(v, 2) for v in train]


@pytest.mark.parametrize("max_size", [3, 4, 6, 100])
def test_max_size_bounds_ids_and_embedding_table(backend, max_size):
    """max_size=1000 keeps the 997 most frequent values (Categorify docstring): ids < max_size
    and the schema's cardinality (embedding rows) <= max_size."""
    vals = ["a"] * 6 + ["b"] * 5 + ["c"] * 4 + ["d"] * 3 + [None] * 2 + ["e"]
    df = pd.DataFrame({"x": vals})
    wf, out = _fit_transform(["x"], ops.Categorify(max_size=max_size), df, backend)
    assert out["x"].tolist() == _ref_ids(vals, max_size)
    card = wf.output_schema["x"].properties["cardinality"]
    assert out["x"].max() < max_size and card <= max_size
    assert card == min(max_size, 2 + 1 + 5)
    emb = ops.get_embedding_sizes(wf)
    assert emb["x"][0] == card


def test_max_size_below_reserved_ids_is_an_error():
    """max_size can never be less than num_buckets + 2 (_save_encodings sanity check)."""
    with pytest.raises(ValueError, match="max_size"):
        ops.Categorify(max_size=2)
    with pytest.raises(ValueError, match="max_size.*'x'"):
        ops.Categorify(max_size={"x": 3}, num_oov_buckets=4)


def test_combo_with_a_null_part_gets_its_own_id(backend):
    """(NaN, "User_C") is a combination of its own (groupby dropna=False); only a row whose parts
    are all null gets the null id 1 (_encode: nulls = isna(a) & isna(b))."""
    df = pd.DataFrame({"a": [None, None, 1.0, 1.0, None, 2.0],
                       "b": ["User_C", "User_C", "User_C", None, None, "User_D"]})
    wf, out = _fit_transform([["a", "b"]], ops.Categorify(encode_type="combo"), df, backend)
    ids = out["a_b"].tolist()
    assert ids[4] == 1  # (NaN, None): all parts null
    assert ids[0] == ids[1] >= 3  # (NaN, "User_C"): a vocabulary entry, seen twice: the most frequent
    assert len({ids[0], ids[2], ids[3], ids[5]}) == 4 and min(ids[2], ids[3], ids[5]) >= 3


def test_combo_with_a_null_part_ids_are_nvtabulars_numbers(backend):
    """The ids nvtabular 23.8.0 gives on this frame (run side by side): the vocabulary of
    combinations by descending count, ties by ascending value with a null part first:
    (NaN, "User_C") 3, (1.0, None) 4, (1.0, "User_C") 5, (2.0, "User_D") 6; all-null 1."""
    df = pd.DataFrame({"a": [None, None, 1.0, 1.0, None, 2.0],
                       "b": ["User_C", "User_C", "User_C", None, None, "User_D"]})
    wf, out = _fit_transform([["a", "b"]], ops.Categorify(encode_type="combo"), df, backend)
    assert out["a_b"].tolist() == [3, 3, 5, 4, 1, 6]
    assert wf.output_schema["a_b"].properties["cardinality"] == 7


def test_target_encoding_group_with_null_part():
    """TargetEncoding groups with dropna=False as well: (NaN, "x") has its own mean."""
    df = pd.DataFrame({"a": [None, None, 1.0, 1.0], "b": ["x", "x", "x", "x"], "t": [1.0, 3.0, 10.0, 20.0]})
    wf = tp.Workflow([["a", "b"]] >> ops.TargetEncoding("t", kfold=1, p_smooth=0))
    # NVTabular 23.08 fits (NaN, "x") with a count of 0 (inf here): the difference is loud
    with pytest.warns(UserWarning, match=r"TargetEncoding: the column group 'a_b' \(\['a', 'b'\]\) has rows "
                                         r"with a null part.*NVTabular 23.08 fits it with a count of 0") as rec:
        wf.fit(tp.Dataset(df, npartitions=2))
    assert sum("TargetEncoding" in str(w.message) for w in rec) == 1  # once per op, not per partition
    out = wf.transform(tp.Dataset(df)).to_ddf().compute()
    assert out["TE_a_b_t"].tolist() == [2.0, 2.0, 15.0, 15.0]


def test_combo_save_load_keeps_null_part_ids(tmp_path):
    """Saved and loaded, the combination ids are unchanged (the key format is saved with the op)."""
    df = pd.DataFrame({"a": [None, 1.0, 1.0, None], "b": ["u", None, "v", "u"]})
    wf, out = _fit_transform([["a", "b"]], ops.Categorify(encode_type="combo"), df)
    wf.save(str(tmp_path / "wf"))
    again = tp.Workflow.load(str(tmp_path / "wf")).transform(tp.Dataset(df)).to_ddf().compute()
    assert again["a_b"].tolist() == out["a_b"].tolist()


def test_check_op_max_size():
    """The conformance battery with max_size."""
    check_op(ops.Categorify(max_size=6), columns=["i", "s"])


def test_serving_combo_with_null_part_matches_offline():
    """The serving kernels give a null-part combination the same id as the offline transform."""
    from tabprep.serving import ServingTransform

    a, b = ["u", None, "u", None], ["x", "x", None, None]
    df = pd.DataFrame({"a": pd.Series(a, dtype=object), "b": pd.Series(b, dtype=object)})
    wf = tp.Workflow([["a", "b"]] >> ops.Categorify(encode_type="combo")).fit(df)
    offline = wf.transform(df)["a_b"].tolist()
    assert offline[3] == 1 and len(set(offline[:3])) == 3 and min(offline[:3]) >= 3
    st = ServingTransform(wf)
    batch = st.transform_batch({"a": a, "b": b})
    assert np.asarray(batch["a_b"]).ravel().tolist() == offline
    rows = [np.asarray(st.transform_row({"a": x, "b": y})["a_b"]).ravel().tolist()[0] for x, y in zip(a, b)]
    assert rows == offline


def test_combo_ids_do_not_depend_on_nulls_elsewhere_in_the_partition():
    """One combination, one id (NVTabular's groupby): ("u", "x") in a partition holding a null and
    in one holding none get the same id, and the vocabulary holds it once."""
    import dask.dataframe as dd

    p1 = pd.DataFrame({"a": pd.Series(["u", None], dtype=object), "b": pd.Series(["x", "x"], dtype=object)})
    p2 = pd.DataFrame({"a": pd.Series(["u", "u"], dtype=object), "b": pd.Series(["x", "x"], dtype=object)})
    p2.index = [2, 3]
    ddf = dd.from_pandas(pd.concat([p1, p2]), npartitions=2, sort=False)
    assert len(ddf.partitions[0].compute()) == 2
    op = ops.Categorify(encode_type="combo")
    wf = tp.Workflow([["a", "b"]] >> op).fit(tp.Dataset(ddf))
    out = wf.transform(tp.Dataset(ddf)).to_ddf().compute()["a_b"].tolist()
    assert out[0] == out[2] == out[3] and out[1] != out[0]
    assert len(op.stats_["a_b"]["values"]) == 2


def test_num_buckets_hashes_rare_values():
    """num_buckets=int: OOV (and rare, under freq_threshold) values go to ids [2, 2 + num_buckets)
    by hash (Categorify docstring "Encoding Convention"; _encode's _hash_bucket), vocabulary after."""
    from conftest import ref_murmur3

    vals = ["a"] * 3 + ["b"] * 3 + ["r1", "r2", "r3"]
    df = pd.DataFrame({"x": vals})
    wf = tp.Workflow(["x"] >> ops.Categorify(num_buckets=4, freq_threshold=2))
    out = wf.fit_transform(tp.Dataset(df)).to_ddf().compute()["x"].tolist()
    assert out[:6] == [6, 6, 6, 7, 7, 7]
    assert out[6:] == [2 + ref_murmur3(v) % 4 for v in ["r1", "r2", "r3"]]
    assert wf.output_schema["x"].properties["cardinality"] == 2 + 4 + 2


def test_num_buckets_dict_per_column(tmp_path):
    """num_buckets={col: n} (Categorify docstring: "A dictionary may be used if the desired
    num_buckets behavior varies by column"; _encode: a column not in the dict has 1 OOV id):
    each column's OOV ids are [2, 2 + n) and its vocabulary starts at 2 + n; across save/load."""
    from conftest import ref_murmur3

    vals = ["a"] * 3 + ["b"] * 3 + ["r1", "r2", "r3"]
    df = pd.DataFrame({"x": vals, "y": vals, "z": vals})
    op = ops.Categorify(num_buckets={"x": 4, "y": 3}, freq_threshold=2)
    wf = tp.Workflow(["x", "y", "z"] >> op)
    out = wf.fit_transform(tp.Dataset(df)).to_ddf().compute()
    for col, n in (("x", 4), ("y", 3)):
        assert out[col].tolist()[:6] == [2 + n] * 3 + [3 + n] * 3
        assert out[col].tolist()[6:] == [2 + ref_murmur3(v) % n for v in ["r1", "r2", "r3"]]
        assert wf.output_schema[col].properties["cardinality"] == 2 + n + 2
    assert out["z"].tolist() == [3] * 3 + [4] * 3 + [2] * 3
    assert wf.output_schema["z"].properties["cardinality"] == 5
    assert op.category_frame("x").index[0] == 6
    wf.save(tmp_path / "wf")
    again = tp.Workflow.load(tmp_path / "wf").transform(tp.Dataset(df)).to_ddf().compute()
    pd.testing.assert_frame_equal(again, out)


def test_num_buckets_dict_errors():
    """A dict keyed by a column the op does not encode, or a count below 1, is an error naming it."""
    df = pd.DataFrame({"x": ["a"]})
    with pytest.raises(ValueError, match="'nope'"):
        tp.Workflow(["x"] >> ops.Categorify(num_buckets={"nope": 3})).fit(tp.Dataset(df))
    with pytest.raises(ValueError, match="'x'"):
        ops.Categorify(num_buckets={"x": 0})


def test_num_buckets_conflicts_are_errors():
    """num_buckets and num_oov_buckets disagreeing is an error; num_buckets alone warns as
    NVTabular does."""
    with pytest.raises(ValueError, match="num_oov_buckets"):
        ops.Categorify(num_buckets=3, num_oov_buckets=5)
    with pytest.warns(UserWarning, match="num_buckets"):
        ops.Categorify(num_buckets=3)


def test_dtype_none_is_int64():
    """dtype=None (NVTabular's default) gives int64 ids."""
    out = tp.Workflow(["x"] >> ops.Categorify(dtype=None)).fit_transform(tp.Dataset(pd.DataFrame({"x": [1, 2]})))
    assert str(out.to_ddf().compute()["x"].dtype) == "int64"


def test_given_vocabs():
    """vocabs={col: values} (Categorify.process_vocabs): ids in the given order from
    2 + num_buckets, unseen values OOV (2), nulls 1; also from a DataFrame."""
    df = pd.DataFrame({"x": ["b", "a", "z", None, "b"], "n": [5, 7, 9, 5, 1]})
    wf = tp.Workflow(["x", "n"] >> ops.Categorify(vocabs={"x": pd.Series(["a", "b"]), "n": [7, 5]}))
    out = wf.fit_transform(tp.Dataset(df)).to_ddf().compute()
    assert out["x"].tolist() == [4, 3, 2, 1, 4]
    assert out["n"].tolist() == [4, 3, 2, 4, 2]
    assert wf.output_schema["x"].properties["cardinality"] == 5
    wf = tp.Workflow(["x"] >> ops.Categorify(vocabs=pd.DataFrame({"x": ["b", "a"]})))
    assert wf.fit_transform(tp.Dataset(df)).to_ddf().compute()["x"].tolist() == [3, 4, 2, 1, 3]


def test_given_vocabs_errors():
    """combo + vocabs (NVTabular: ValueError), nulls or duplicates in a vocabulary are errors."""
    with pytest.raises(ValueError, match="combo"):
        ops.Categorify(encode_type="combo", vocabs={"x": ["a"]})
    with pytest.raises(ValueError, match="duplicate"):
        ops.Categorify(vocabs={"x": ["a", "a"]})
    with pytest.raises(ValueError, match="null"):
        ops.Categorify(vocabs={"x": ["a", None]})


def test_check_op_vocabs():
    """The conformance battery with given vocabularies."""
    check_op(ops.Categorify(vocabs={"s": ["a", "bb"], "i": [1, 2, 3]}), columns=["s", "i"])


def test_given_vocabs_from_files(tmp_path):
    """vocabs={col: path} (Categorify.process_vocabs' dict of paths; _encode shifts a file's
    labels from 0 to 2 + num_buckets): the file's values, in file order, are the vocabulary; the
    column named like the input column, or the file's only column; parquet, or csv by suffix.
    The values are read when the op is built, so a saved workflow keeps them."""
    df = pd.DataFrame({"x": ["b", "a", "z", None, "b"], "n": [5, 7, 9, 5, 1]})
    pd.DataFrame({"x": ["a", "b"], "other": [0, 0]}).to_parquet(tmp_path / "x.parquet")
    pd.DataFrame({"values": [7, 5]}).to_csv(tmp_path / "n.csv", index=False)
    op = ops.Categorify(vocabs={"x": str(tmp_path / "x.parquet"), "n": tmp_path / "n.csv"})
    (tmp_path / "x.parquet").unlink()
    wf = tp.Workflow(["x", "n"] >> op)
    out = wf.fit_transform(tp.Dataset(df)).to_ddf().compute()
    assert out["x"].tolist() == [4, 3, 2, 1, 4]
    assert out["n"].tolist() == [4, 3, 2, 4, 2]
    wf.save(tmp_path / "wf")
    again = tp.Workflow.load(tmp_path / "wf").transform(tp.Dataset(df)).to_ddf().compute()
    assert again["x"].tolist() == [4, 3, 2, 1, 4]


def test_given_vocab_file_errors(tmp_path):
    """A missing file, an unknown suffix, or a file without a column of that name (and more than
    one column) is an error naming the file."""
    with pytest.raises(FileNotFoundError, match="nope.parquet"):
        ops.Categorify(vocabs={"x": str(tmp_path / "nope.parquet")})
    pd.DataFrame({"a": [1], "b": [2]}).to_parquet(tmp_path / "two.parquet")
    with pytest.raises(ValueError, match=r"two\.parquet.*'x'"):
        ops.Categorify(vocabs={"x": str(tmp_path / "two.parquet")})
    (tmp_path / "v.json").write_text("[]")
    with pytest.raises(ValueError, match=r"\.json"):
        ops.Categorify(vocabs={"x": str(tmp_path / "v.json")})


def test_num_buckets_dict_at_serving_time():
    """Online serving gives the offline ids of a per-column num_buckets; one op mixing counts
    across the columns it serves is refused by name (one Categorify per count serves)."""
    from tabprep.serving import ServingBuildError, ServingTransform

    df = pd.DataFrame({"x": ["a", "a", "r1", "r2"], "y": ["a", "a", "r1", "r2"]})
    wf = tp.Workflow((["x"] >> ops.Categorify(num_buckets={"x": 4}, freq_threshold=2))
                     + (["y"] >> ops.Categorify(num_buckets={"y": 3}, freq_threshold=2)))
    offline = wf.fit_transform(tp.Dataset(df)).to_ddf().compute()
    online = ServingTransform(wf).transform_batch({"x": df["x"].to_numpy(), "y": df["y"].to_numpy()})
    assert online["x"].tolist() == offline["x"].tolist() and online["y"].tolist() == offline["y"].tolist()
    mixed = tp.Workflow(["x", "y"] >> ops.Categorify(num_buckets={"x": 4, "y": 3}, freq_threshold=2))
    mixed.fit(tp.Dataset(df))
    with pytest.raises(ServingBuildError, match="num_buckets"):
        ServingTransform(mixed)


def _single_table_reference(train: pd.DataFrame, frame: pd.DataFrame, groups, B: int = 1) -> dict:
    """Categorify(single_table=True), as NVTabular 23.08's fit_finalize lays it out
    (_reset_df_index: each vocabulary's ids continue after the previous one's) with the id
    convention NVTabular documents: 0 pad, 1 null, 2..1+B OOV, shared by all columns. ``groups``:
    the vocabularies in column order, each a list of the columns sharing it (joint groups)."""
    out, start = {}, 2 + B
    for cols in groups:
        counts = Counter(v for c in cols for v in train[c] if v is not None and v == v)
        order = sorted(counts, key=lambda v: (-counts[v], v))
        ids = {v: start + i for i, v in enumerate(order)}
        start += len(order)
        for c in cols:
            out[c] = [1 if v is None or v != v else ids.get(v, 2) for v in frame[c]]
    out["_size"] = start
    return out


def test_single_table_one_id_range_for_all_columns(tmp_path, backend):
    """NVTabular 23.08 Categorify(single_table=True) (fit_finalize's _reset_df_index, checked by its
    test_categorify_single_table: a later column's ids lie above the earlier columns'): one id range
    for all the op's vocabularies, null 1 and OOV 2 (NVTabular's documented convention), every
    column's embedding table the shared one; save/load and serving give the same ids."""
    train = pd.DataFrame({"Authors": [None, "User_A", "User_A", "User_E", "User_B", "User_C", "User_A"],
                          "Engaging_User": [None, "User_B", "User_B", "User_A", "User_D", "User_D", "User_B"],
                          "p": [10, 20, 20, 30, 10, 20, 40]})
    valid = pd.DataFrame({"Authors": ["User_B", "User_Z", None], "Engaging_User": ["User_A", "User_D", "User_Q"],
                          "p": [40, 50, 10]})
    with pytest.warns(UserWarning, match=r"single_table=True.*null.*id 1.*NVTabular 23.08.*migration"):
        node = ["Authors", "Engaging_User", "p"] >> ops.Categorify(single_table=True)
    wf = tp.Workflow(node)
    got = to_pandas(wf.fit_transform(make_dataset(train, backend, nparts=3)).compute())
    got_v = to_pandas(wf.transform(make_dataset(valid, backend, nparts=2)).compute())
    cols = ["Authors", "Engaging_User", "p"]
    groups = [[c] for c in cols]
    want, want_v = _single_table_reference(train, train, groups), _single_table_reference(train, valid, groups)
    for c in cols:
        assert got[c].tolist() == want[c], c
        assert got_v[c].tolist() == want_v[c], c
    # NVTabular's own check: each column's vocabulary ids lie above the previous column's
    assert min(v for v in got["Engaging_User"] if v > 2) > max(got["Authors"])
    size = want["_size"]
    assert all(tp.get_embedding_sizes(wf)[c][0] == size for c in cols)
    assert all(wf.output_schema[c].properties["domain"]["max"] == size - 1 for c in cols)
    # the vocabulary files as NVTabular's op.categories: the index is the id
    frame = node.op.category_frame("Engaging_User")
    assert frame.index[0] == 3 + 4 and frame["Engaging_User"].tolist()[0] == "User_B"
    wf.save(tmp_path / "wf")
    loaded = tp.Workflow.load(tmp_path / "wf")
    assert to_pandas(loaded.transform(tp.Dataset(valid)).compute()).equals(got_v)
    served = tp.ServingTransform(loaded)(valid)
    for c in cols:
        assert np.asarray(served[c]).ravel().tolist() == want_v[c], c
    row = tp.ServingTransform(loaded).transform_row(valid.iloc[1].to_dict())
    assert [int(np.asarray(row[c]).ravel()[0]) for c in cols] == [want_v[c][1] for c in cols]


def test_single_table_with_groups_lists_and_buckets():
    """A joint group is one vocabulary (one block of the shared range); list columns are encoded
    element-wise; with num_buckets=3 the OOV ids 2..4 are shared and the vocabularies start at 5."""
    train = pd.DataFrame({"a": ["x", "y", "x", None], "b": ["y", "z", None, "z"], "n": [1.5, np.nan, 1.5, np.inf],
                          "l": [[1, 2], [2], None, [3, 2]]})
    valid = pd.DataFrame({"a": ["z", "w"], "b": ["x", None], "n": [np.inf, -1.0], "l": [[2, 9], []]})
    with pytest.warns(UserWarning, match="num_buckets"):
        op = ops.Categorify(single_table=True, num_buckets=3)
    wf = tp.Workflow([["a", "b"], "n", "l"] >> op)
    wf.fit(tp.Dataset(train))
    got = wf.transform(tp.Dataset(valid)).compute()
    # the vocabularies in NVTabular's grouped_names order: plain columns, then groups
    nv = {1.5: 5, np.inf: 6}       # n: 1.5 twice, inf once
    lv = {2: 7, 1: 8, 3: 9}        # l's elements: 2 three times, then 1 and 3 once
    ab = {"x": 10, "y": 11, "z": 12}  # a and b together: x, y, z twice each (ties by value)
    assert got["a"].tolist()[0] == ab["z"] and 2 <= got["a"].tolist()[1] <= 4  # w: hashed into the OOV ids
    assert got["b"].tolist() == [ab["x"], 1]
    assert got["n"].tolist()[0] == nv[np.inf] and 2 <= got["n"].tolist()[1] <= 4
    first = list(got["l"].iloc[0])
    assert first[0] == lv[2] and 2 <= first[1] <= 4 and len(got["l"].iloc[1]) == 0
    single, multi = tp.get_embedding_sizes(wf, multihot=True)
    assert {c: s[0] for c, s in {**single, **multi}.items()} == {"a": 13, "b": 13, "n": 13, "l": 13}


def test_single_table_passes_check_op():
    check_op(ops.Categorify(single_table=True))


def test_single_table_refusals_name_the_option():
    """max_size bounds each column's table, which one shared table cannot honour; per-column
    num_buckets would give the columns different OOV ranges in the shared one."""
    with pytest.raises(ValueError, match="single_table.*max_size"):
        ops.Categorify(single_table=True, max_size=10)
    df = pd.DataFrame({"a": ["x"], "b": ["y"]})
    with pytest.raises(ValueError, match="single_table.*num_buckets"):
        tp.Workflow(["a", "b"] >> ops.Categorify(single_table=True, num_buckets={"a": 2, "b": 3},
                                                   freq_threshold=1)).fit(df)
    out = tp.Workflow(["x"] >> ops.Categorify(single_table=False)).fit_transform(
        tp.Dataset(pd.DataFrame({"x": ["a", None]}))).to_ddf().compute()
    assert out["x"].tolist() == [3, 1]


def _null_list_frame():
    # a null row in two partitions, an empty row, a null element
    from conftest import list_series

    return pd.DataFrame({"g": list_series([["a", "b"], None, ["b"], [], ["c", None], None, ["a"], ["b", "b"]],
                                          "string"), "x": np.arange(8)})


def _lists(s):
    return [None if v is None or v is pd.NA or (np.isscalar(v) and pd.isna(v)) else list(v) for v in s]


def test_null_list_row_stays_null_and_warns_once_naming_fill_missing(backend):
    """NVTabular 23.08 raises on a null list row on the CPU (checked on 23.8.0: ``TypeError:
    'NoneType' object is not iterable``) and gives an empty list on the GPU; tabprep keeps the row
    null (docs/migration.md) and the first transform meeting one warns once per column, naming
    ``FillMissing(fill_val=[])``, which gives NVTabular's GPU result; filled first, nothing is said."""
    import warnings

    df = _null_list_frame()
    ds = make_dataset(df, backend, nparts=2)
    wf = tp.Workflow(["g"] >> ops.Categorify())
    wf.fit(ds)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out = to_pandas(wf.transform(ds))
        to_pandas(wf.transform(ds))                     # again: still once
    notes = [str(w.message) for w in rec if issubclass(w.category, tp.NVTabularDifferenceWarning)
             and "null" in str(w.message)]
    assert len(notes) == 1 and "'g'" in notes[0] and "FillMissing(fill_val=[])" in notes[0], notes
    got, rows = _lists(out["g"]), _lists(df["g"])
    assert [r is None for r in got] == [v is None for v in rows] == [False, True, False, False, False, True,
                                                                       False, False]   # null rows stay null
    assert [len(r) for r in got if r is not None] == [len(v) for v in rows if v is not None]
    filled = tp.Workflow(["g"] >> ops.FillMissing(fill_val=[]) >> ops.Categorify())
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        ref = _lists(to_pandas(filled.fit_transform(ds))["g"])
    assert not [w for w in rec if issubclass(w.category, tp.NVTabularDifferenceWarning) and "null" in str(w.message)]
    assert ref == [[] if r is None else r for r in got]                        # same ids; [] for the null rows
