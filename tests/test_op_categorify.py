"""Categorify: NVTabular 23.08 ids (0 pad, 1 null, 2..1+B OOV, vocabulary by descending
frequency then ascending value), checked against hand-computed ids and a Counter reference."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tabprep as tp
from tabprep import ops

from conftest import (is_cpu, make_dataset, ref_murmur3, py_values, random_frame, to_pandas)
from test_conformance import ref_categorify, ref_categorify_cardinality

HYP = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def fit_cat(df, backend="cpu", nparts=3, cols=None, **kwargs):
    cols = cols or list(df.columns)
    wf = tp.Workflow(cols >> ops.Categorify(**kwargs))
    ds = make_dataset(df, backend, nparts=nparts)
    wf.fit(ds)
    return wf, to_pandas(wf.transform(ds))


def test_hand_computed_ids_strings_and_ints(backend):
    df = pd.DataFrame({
        "s": pd.Series(["b", "a", "b", "c", None, "a", "b"], dtype="str"),
        "i": pd.array([5, -1, 5, 3, -1, 7, None], dtype="Int64"),
    })
    wf, out = fit_cat(df, backend)
    # s: b x3 -> 3, a x2 -> 4, c x1 -> 5 ; null -> 1
    assert out["s"].tolist() == [3, 4, 3, 5, 1, 4, 3]
    # i: -1 and 5 tie at 2 -> ascending value: -1 -> 3, 5 -> 4 ; 3, 7 tie at 1 -> 3 -> 5, 7 -> 6
    assert out["i"].tolist() == [4, 3, 4, 5, 3, 6, 1]
    assert wf.output_schema["s"].cardinality == 2 + 1 + 3
    assert wf.output_schema["i"].cardinality == 2 + 1 + 4
    assert tp.get_embedding_sizes(wf)["s"][0] == 6
    assert str(out["s"].dtype) == "int64"


def test_ties_by_ascending_value():
    df = pd.DataFrame({"s": pd.Series(["zeta", "alpha", "mu", "Beta", "alpha", "zeta"], dtype="str"),
                       "i": np.array([30, -2, 10, 10, 30, -2], dtype="int32")})
    _, out = fit_cat(df)
    # counts: alpha 2, zeta 2 (tie -> alpha first), then Beta, mu 1 ("B" < "m": code point order)
    assert out["s"].tolist() == [4, 3, 6, 5, 3, 4]
    # all three ints appear twice -> ascending: -2 -> 3, 10 -> 4, 30 -> 5
    assert out["i"].tolist() == [5, 3, 4, 4, 5, 3]


def test_unseen_values_at_transform_are_oov(backend):
    train = pd.DataFrame({"s": pd.Series(["a", "b", "a"], dtype="str"), "i": np.array([1, 2, 1], dtype="int64")})
    test = pd.DataFrame({"s": pd.Series(["z", "a", None, "b"], dtype="str"),
                         "i": np.array([99, 1, 2, -5], dtype="int64")})
    wf = tp.Workflow(["s", "i"] >> ops.Categorify())
    wf.fit(make_dataset(train, backend, nparts=2))
    out = to_pandas(wf.transform(make_dataset(test, backend, nparts=2)))
    assert out["s"].tolist() == [2, 3, 1, 4]
    assert out["i"].tolist() == [2, 3, 4, 2]


def test_freq_threshold_and_max_size_send_rare_values_to_oov(backend):
    vals = ["a"] * 5 + ["b"] * 4 + ["c"] * 3 + ["d"] * 2 + ["e"]
    df = pd.DataFrame({"s": pd.Series(vals, dtype="str"), "t": pd.Series(vals, dtype="str")})
    wf, out = fit_cat(df, backend, freq_threshold={"s": 3}, max_size={"t": 5})
    # s: a, b, c kept (>= 3), d, e -> OOV 2
    assert out["s"].tolist() == [3] * 5 + [4] * 4 + [5] * 3 + [2] * 2 + [2]
    assert wf.output_schema["s"].cardinality == 2 + 1 + 3
    # t: max_size 5 ids (NVTabular): 0, 1, 2 reserved, the 2 most frequent (a, b)
    assert out["t"].tolist() == [3] * 5 + [4] * 4 + [2] * 6
    assert wf.output_schema["t"].cardinality == 2 + 1 + 2


def test_num_oov_buckets_hash_unseen_values(backend):
    train = pd.DataFrame({"s": pd.Series(["a", "a", "b", "rare"], dtype="str"),
                          "i": np.array([10, 10, 20, 30], dtype="int64")})
    test = pd.DataFrame({"s": pd.Series(["a", "b", "rare", "x", "yy", "zzz", None], dtype="str"),
                         "i": np.array([10, 20, 30, 40, -7, 123456789, 10], dtype="int64")})
    B = 4
    wf = tp.Workflow(["s", "i"] >> ops.Categorify(num_oov_buckets=B, freq_threshold=2))
    wf.fit(make_dataset(train, backend, nparts=2))
    out = to_pandas(wf.transform(make_dataset(test, backend, nparts=2)))
    first = 2 + B  # vocabulary starts after the OOV ids
    expected_s = [first, 2 + ref_murmur3("b") % B, 2 + ref_murmur3("rare") % B, 2 + ref_murmur3("x") % B,
                  2 + ref_murmur3("yy") % B, 2 + ref_murmur3("zzz") % B, 1]
    assert out["s"].tolist() == expected_s
    expected_i = [first] + [2 + ref_murmur3(v) % B for v in (20, 30, 40, -7, 123456789)] + [first]
    assert out["i"].tolist() == expected_i
    assert wf.output_schema["s"].cardinality == 2 + B + 1
    assert all(2 <= x < 2 + B for x in expected_s[1:-1]) and len(set(expected_s[1:-1])) > 1


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint32", "Int32", "Int64", "UInt16"])
def test_int_widths_give_the_same_ids(dtype):
    base = np.array([3, 1, 3, 2, 2, 3, 7, 1, 3], dtype="int64")
    ref = pd.DataFrame({"c": base})
    other = pd.DataFrame({"c": pd.Series(base).astype(dtype)})
    _, a = fit_cat(ref)
    wf, b = fit_cat(other)
    assert a["c"].tolist() == b["c"].tolist() == ref_categorify(ref["c"], ref["c"])


def test_bool_and_nullable_bool_columns():
    df = pd.DataFrame({"b": [True, False, True, True],
                       "nb": pd.array([True, None, False, False], dtype="boolean")})
    wf, out = fit_cat(df, nparts=2)
    assert out["b"].tolist() == [3, 4, 3, 3]
    assert out["nb"].tolist() == [4, 1, 3, 3]
    assert wf.output_schema["nb"].cardinality == 5


def test_all_null_column_round_trips(tmp_path, backend):
    df = pd.DataFrame({"s": pd.Series([None, None, None], dtype="str"),
                       "i": pd.array([None, None, None], dtype="Int64")})
    wf, out = fit_cat(df, backend, nparts=2)
    assert out["s"].tolist() == [1, 1, 1] and out["i"].tolist() == [1, 1, 1]
    assert wf.output_schema["s"].cardinality == 3
    wf.save(str(tmp_path / "wf"))
    new = pd.DataFrame({"s": pd.Series(["a", None], dtype="str"), "i": pd.array([4, None], dtype="Int64")})
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    out2 = to_pandas(loaded.transform(make_dataset(new, backend, nparts=1)))
    assert out2["s"].tolist() == [2, 1] and out2["i"].tolist() == [2, 1]


def test_output_dtype_option():
    df = random_frame(seed=3, n=50)
    wf, out = fit_cat(df, cols=["s", "i32"], dtype="int32")
    assert str(out["s"].dtype) == "int32" and wf.output_schema["s"].dtype == "int32"
    assert out["s"].tolist() == ref_categorify(df["s"], df["s"])


def test_invalid_parameters():
    with pytest.raises(ValueError, match="num_oov_buckets"):
        ops.Categorify(num_oov_buckets=0)
    with pytest.raises(ValueError, match="integer"):
        ops.Categorify(dtype="float32")
    with pytest.raises(ValueError, match="encode_type"):
        ops.Categorify(encode_type="nope")


def test_list_column_ids_and_padding_free():
    arr = pa.array([[1, 2], [2], None, [], [3, None, 2], [9]], type=pa.list_(pa.int64()))
    df = pd.DataFrame({"l": pd.Series(pd.arrays.ArrowExtensionArray(arr))})
    wf = tp.Workflow(["l"] >> ops.Categorify())
    wf.fit(df)
    out = wf.transform(df)["l"].tolist()
    # element counts: 2 x3 -> 3, then 1, 3, 9 x1 -> 4, 5, 6 ; null element -> 2 (out of vocabulary, as
    # NVTabular 23.08) ; null row stays null
    assert [None if v is None or v is pd.NA else list(v) for v in out] == [[4, 3], [3], None, [], [5, 2, 3], [6]]
    assert wf.output_schema["l"].is_list and wf.output_schema["l"].cardinality == 7


def test_joint_group_shares_one_vocabulary():
    df = pd.DataFrame({"a": pd.Series(["x", "y", "x", None], dtype="str"),
                       "b": pd.Series(["y", "y", "z", "x"], dtype="str")})
    wf = tp.Workflow([["a", "b"]] >> ops.Categorify())
    wf.fit(df)
    out = wf.transform(df)
    # joint counts: x 3, y 3 (tie -> x first), z 1
    assert out["a"].tolist() == [3, 4, 3, 1]
    assert out["b"].tolist() == [4, 4, 5, 3]
    assert wf.output_schema["a"].cardinality == wf.output_schema["b"].cardinality == 6


def test_combo_encodes_combinations():
    df = pd.DataFrame({"a": pd.Series(["x", "y", "x", None, "x"], dtype="str"),
                       "b": np.array([1, 1, 1, 2, 2], dtype="int64")})
    wf = tp.Workflow([["a", "b"]] >> ops.Categorify(encode_type="combo"))
    wf.fit(df)
    out = wf.transform(df)
    assert list(out.columns) == ["a_b"]
    # (x,1) x2 -> 3 ; (x,2), (y,1), (None,2) x1 -> 4, 5, 6 by ascending key: a null part is a
    # combination of its own (NVTabular: only all-null rows get the null id 1)
    ids = out["a_b"].tolist()
    assert ids[0] == ids[2] == 3
    assert sorted([ids[1], ids[3], ids[4]]) == [4, 5, 6]


# -- property-based ------------------------------------------------------------------
int_vals = st.lists(st.one_of(st.none(), st.integers(-(2 ** 40), 2 ** 40), st.integers(-3, 3)), min_size=0, max_size=40)
str_vals = st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "c", "", "é", "日本"]), st.text(max_size=4)),
                    min_size=0, max_size=40)


@HYP
@given(ints=int_vals, strs=str_vals, B=st.integers(1, 4), thr=st.integers(0, 3), max_size=st.integers(0, 4),
       nparts=st.integers(1, 4))
def test_ids_match_reference(ints, strs, B, thr, max_size, nparts):
    n = min(len(ints), len(strs))
    df = pd.DataFrame({"i": pd.array(ints[:n], dtype="Int64"), "s": pd.Series(strs[:n], dtype="str")})
    max_size = max_size and max_size + 2 + B  # NVTabular's max_size counts the pad, null and OOV ids
    wf, out = fit_cat(df, nparts=nparts, num_oov_buckets=B, freq_threshold=thr, max_size=max_size)
    for c in ("i", "s"):
        assert out[c].tolist() == ref_categorify(df[c], df[c], B, thr, max_size), c
        card = ref_categorify_cardinality(df[c], B, thr, max_size)
        assert wf.output_schema[c].cardinality == card
        assert all(0 < x < card for x in out[c].tolist())
    # every vocabulary id is used by at least one training value (no holes)
    for c in ("i", "s"):
        vocab_ids = {x for x in out[c].tolist() if x >= 2 + B}
        assert vocab_ids == set(range(2 + B, wf.output_schema[c].cardinality))


def test_lazy_transform_meta_builds_no_lookup_tables(tmp_path):
    """The lazy transform's meta (an empty frame, computed in the client) needs no vocabulary lookup
    structure: on a cluster the client would build every hash table for nothing (the workers build
    their own). Empty input still gives empty int64 ids, and computing the transform still works."""
    import tabprep as tp
    from tabprep import ops

    df = pd.DataFrame({"a": [3, 1, 3, None, 7], "b": ["x", "y", None, "x", "z"]})
    df["a"] = df["a"].astype("Int64")
    path = tmp_path / "d.parquet"
    df.to_parquet(path, index=False)
    cat = ops.Categorify()
    wf = tp.Workflow(["a", "b"] >> cat).fit(tp.Dataset(str(path)))
    lazy = wf.transform(tp.Dataset(str(path)))
    assert cat._index_cache == {}
    empty = wf.transform_frame(df.iloc[:0])
    assert len(empty) == 0 and str(empty["a"].dtype) == "int64" and str(empty["b"].dtype) == "int64"
    assert cat._index_cache == {}
    got = lazy.compute()
    # reference: null 1, unseen 2, ids from 3 by descending count then ascending value
    assert got["a"].tolist() == [3, 4, 3, 1, 5]
    assert got["b"].tolist() == [3, 4, 1, 3, 5]


def test_lookup_structure_built_once_when_threads_start_together(monkeypatch, backend):
    """The partition tasks of a process's threads share one lookup structure per vocabulary: when
    they all start at once, one builds it and the others wait (each used to build its own copy:
    on GPU workers of 4 threads that was most of the transform's extra task-seconds). Ids are
    the same as a one-thread run's."""
    import threading
    import time

    import dask

    from tabprep.stats import vocab as V

    rng = np.random.default_rng(3)
    df = pd.DataFrame({"a": rng.integers(0, 50, 4000), "b": rng.integers(0, 9, 4000)})
    cat = ops.Categorify()
    wf = tp.Workflow(["a", "b"] >> cat).fit(make_dataset(df, backend, nparts=4, empties=False))
    with dask.config.set(scheduler="synchronous"):
        expected = to_pandas(wf.transform(make_dataset(df, backend, nparts=4, empties=False)).compute())
    builds = []
    real = V.vocab_index

    def slow_build(values, like):
        builds.append(threading.current_thread().name)
        time.sleep(0.2)  # every thread reaches the cache before the first build is done
        return real(values, like)

    monkeypatch.setattr(V, "vocab_index", slow_build)
    cat._index_cache = {}
    with dask.config.set(scheduler="threads", num_workers=4):
        got = to_pandas(wf.transform(make_dataset(df, backend, nparts=4, empties=False)).compute())
    assert len(builds) == 2  # one per vocabulary (a, b), not one per thread
    pd.testing.assert_frame_equal(got.reset_index(drop=True), expected.reset_index(drop=True))


def test_lookup_structures_of_different_columns_build_at_once():
    """Threads needing different vocabularies build them side by side (a lock per vocabulary):
    one process-wide lock made each column's build wait for every other column's (on the CPU the
    hash tables of 1M values take ~60 ms each)."""
    import threading
    import time

    from tabprep.stats import vocab as V

    df = pd.DataFrame({"a": np.arange(40) % 7, "b": np.arange(40) % 5})
    cat = ops.Categorify()
    tp.Workflow(["a", "b"] >> cat).fit(make_dataset(df, "cpu", nparts=2, empties=False))
    real = V.vocab_index
    active, peak, guard = [0], [0], threading.Lock()

    def slow_build(values, like):
        with guard:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.3)
        with guard:
            active[0] -= 1
        return real(values, like)

    cat._index_cache = {}
    barrier = threading.Barrier(4)
    got = {}

    def run(i, key):
        barrier.wait()
        got[i] = cat._index(key, df[key])

    mp = pytest.MonkeyPatch()
    mp.setattr(V, "vocab_index", slow_build)
    try:
        threads = [threading.Thread(target=run, args=(i, key)) for i, key in enumerate(["a", "b", "a", "b"])]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        mp.undo()
    assert peak[0] == 2  # a and b at once; each built once (the same object for its two threads)
    assert got[0] is got[2] and got[1] is got[3] and got[0] is not got[1]
