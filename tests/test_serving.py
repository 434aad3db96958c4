"""ServingTransform: the offline transform's outputs for one row or a batch, the input contract, refusals."""
from __future__ import annotations

import struct
import threading

import mmh3
import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from serving_helpers import (DTYPES, LIST_TYPES, assert_same, fitted_workflow, frame_of, offline_columns,
                             train_frame)
from tabprep import ops
from tabprep.serving import ServingBuildError, ServingInputError, ServingTransform

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@pytest.fixture(scope="module")
def wf():
    return fitted_workflow()


@pytest.fixture(scope="module")
def st(wf):
    return ServingTransform(wf)


def _py(v):
    if isinstance(v, (list, np.ndarray)):
        return [None if x is None or (isinstance(x, float) and x != x) else x for x in list(v)]
    if v is None or v is pd.NA or (isinstance(v, float) and v != v):
        return None
    return v.item() if hasattr(v, "item") else v


def _row_slice(want, i):
    out = {}
    for k, w in want.items():
        if k.endswith("__values"):
            base = k[:-len("__values")]
            offs = np.concatenate([[0], np.cumsum(want[base + "__nnzs"])])
            out[k] = w[offs[i]:offs[i + 1]]
        else:
            out[k] = w[i:i + 1]
    return out


def test_batch_frame_dict_and_rows_equal_offline(wf, st):
    frame = train_frame(300, seed=3)
    frame.loc[5, "cat_i"] = 10 ** 12          # unseen int -> hashed OOV bucket
    frame.loc[6, "cat_s"] = "never seen"      # unseen string
    frame.loc[7, "hash_f"] = np.inf
    frame.loc[8, "cont_f"] = -np.inf
    frame.loc[9, "cont_f"] = np.inf
    frame.loc[10, "bkt"] = np.inf
    want = offline_columns(wf, frame)
    assert_same(st.transform_batch(frame), want, "frame")
    as_lists = {c: [_py(v) for v in frame[c]] for c in frame.columns}
    assert_same(st(as_lists), want, "dict of lists")
    for i in range(len(frame)):
        row = {c: _py(frame[c].iloc[i]) for c in frame.columns}
        assert_same(st(row), _row_slice(want, i), f"row {i}")


def test_outputs_are_what_offline_promises_independently(wf, st):
    """Spot checks against references written here: mmh3 buckets, Categorify's null/OOV ids."""
    row = {c: None for c in DTYPES}
    row.update({"hash_i": 123, "hash_s": "héllo", "hash_f": -0.0, "cross_a": 1, "cross_b": "a", "label": 1,
                "tags": ["x", None], "tags_i": [], "u_b": "c"})
    out = st(row)
    assert out["hash_i"][0] == mmh3.hash(struct.pack("<q", 123), 0, signed=False) % 97
    assert out["hash_s"][0] == mmh3.hash("héllo".encode(), 0, signed=False) % 50
    assert out["hash_f"][0] == mmh3.hash(struct.pack("<d", 0.0), 0, signed=False) % 31
    assert out["cat_i"][0] == 1 and out["cat_s"][0] == 1 and out["u_a"][0] == 1       # null -> 1
    # a null element of a list column -> the OOV id 2 (NVTabular 23.08: its vocabulary holds no null)
    assert out["tags__values"][1] == 2 and list(out["tags__nnzs"]) == [2] and len(out["tags_i__values"]) == 0
    assert out["cont_i_filled_fm"][0] and out["cont_i_fm"][0] == 7
    assert out["cont_i"].dtype == np.float32 and out["cat_i"].dtype == np.int64
    assert np.ma.is_masked(out["bkt_b"]) and out["label"][0] == 1


def test_int_widths_and_json_numbers_give_identical_ids(st):
    base = train_frame(50, seed=4)
    want = st.transform_batch(base)
    cols = {c: base[c] for c in base.columns}
    cols["hash_i"] = base["hash_i"].to_numpy().astype(np.int64)          # int32 fitted, int64 given
    cols["cross_a"] = base["cross_a"].to_numpy().astype(np.int16)         # int64 fitted, int16 given
    assert_same(st.transform_batch(cols), want, "widths")
    row = {c: _py(base[c].iloc[0]) for c in base.columns}
    row_json = dict(row, hash_i=float(row["hash_i"]), cross_a=float(row["cross_a"]))  # JSON "3.0"
    assert_same(st(row_json), st(row), "integral floats")


@pytest.mark.parametrize("column,value,given", [
    ("cat_i", "12", "string"), ("hash_i", 1.5, "float"), ("cross_a", True, "bool"), ("cat_s", 5, "int"),
    ("cont_f", "x", "string"),
])
def test_kind_changes_are_refused_naming_column_dtypes_and_fix(st, column, value, given):
    row = {c: _py(v) for c, v in train_frame(1, seed=2).iloc[0].items()}
    row[column] = value
    with pytest.raises(ServingInputError) as exc:
        st(row)
    msg = str(exc.value)
    assert exc.value.column == column and repr(column) in msg and DTYPES[column].lower() in msg and given in msg
    assert "cast=True" in msg


def test_float_array_for_int_column_refused_then_cast(st):
    frame = train_frame(20, seed=6)
    cols = {c: frame[c] for c in frame.columns}
    cols["cat_i"] = frame["cat_i"].to_numpy(dtype="float64", na_value=np.nan)   # e.g. read from csv
    with pytest.raises(ServingInputError, match=r"'cat_i'.*int64.*float64.*cast=True"):
        st.transform_batch(cols)
    assert_same(st.transform_batch(cols, cast=True), st.transform_batch(frame), "cast floats")
    cols["cat_i"] = cols["cat_i"] + 0.5
    with pytest.raises(ServingInputError, match="lossy"):
        st.transform_batch(cols, cast=True)
    strings = dict(cols, cat_i=[None if pd.isna(v) else str(int(v)) for v in frame["cat_i"]])
    assert_same(st.transform_batch(strings, cast=True), st.transform_batch(frame), "cast strings")


def test_missing_column_and_ragged_batch_named(st):
    row = {c: _py(v) for c, v in train_frame(1, seed=2).iloc[0].items()}
    del row["cont_f"]
    row["cont_ff"] = 1.0
    with pytest.raises(ServingInputError, match=r"'cont_f' is missing.*cont_ff"):
        st(row)
    frame = train_frame(5, seed=2)
    cols = {c: list(frame[c]) for c in frame.columns}
    cols["bkt"] = cols["bkt"][:3]
    with pytest.raises(ServingInputError, match="'bkt' has 3 rows"):
        st.transform_batch(cols)
    with pytest.raises(ServingInputError, match="'tags' is a list"):
        st.transform_row(dict({c: _py(v) for c, v in frame.iloc[0].items()}, tags="x"))


def test_exclude_label_and_saved_workflow(wf, tmp_path):
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    st = ServingTransform(loaded, exclude=["label"])
    assert "label" not in st.input_names and "label" not in st.output_names
    frame = train_frame(100, seed=8)
    want = offline_columns(wf, frame)
    del want["label"]
    assert_same(st.transform_batch(frame.drop(columns=["label"])), want, "loaded")
    schema = st.describe()
    assert schema["embedding_sizes"]["cat_i"][0] == wf.output_schema["cat_i"].cardinality
    assert [c["name"] for c in schema["input_schema"]["columns"]] == st.input_names


@pytest.mark.parametrize("graph,match", [
    (lambda: ["a", "b"] >> ops.Groupby(groupby_cols=["a"], aggs={"b": ["sum"]}), "Groupby.*whole dataset"),
    (lambda: ["b"] >> ops.DifferenceLag(partition_cols=["a"]), "DifferenceLag.*previous rows"),
    (lambda: (["a", "b"] >> ops.Filter(f=lambda df: df["a"] > 0)), "Filter.*drops rows"),
])
def test_ops_needing_the_whole_dataset_are_refused_at_build(graph, match):
    df = pd.DataFrame({"a": [1, 2, 2, 3], "b": [1.0, 2.0, 3.0, 4.0]})
    wf = tp.Workflow(graph())
    wf.fit(df)
    with pytest.raises(ServingBuildError, match=match):
        ServingTransform(wf)


def test_a_subclass_of_a_served_op_is_not_served_as_its_parent():
    class MyNormalize(ops.Normalize):
        pass

    df = pd.DataFrame({"a": [1.0, 2.0, 4.0]})
    wf = tp.Workflow(["a"] >> MyNormalize()).fit(df)
    with pytest.raises(ServingBuildError, match="MyNormalize.*no serving kernel.*register_kernel"):
        ServingTransform(wf)


def test_threads_share_one_transform(wf, st):
    frame = train_frame(400, seed=9)
    want = offline_columns(wf, frame)
    rows = [{c: _py(frame[c].iloc[i]) for c in frame.columns} for i in range(len(frame))]
    errors = []

    def work(k):
        try:
            for i in range(k, len(rows), 4):
                assert_same(st(rows[i]), _row_slice(want, i), f"thread {k} row {i}")
            assert_same(st.transform_batch(frame), want, f"thread {k} batch")
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_empty_batch_and_all_null_row(wf, st):
    empty = frame_of({c: [] for c in list(DTYPES) + list(LIST_TYPES)})
    out = st.transform_batch(empty)
    assert all(len(v) == 0 for v in out.values()) and out["cat_i"].dtype == np.int64
    nulls = {c: None for c in list(DTYPES) + list(LIST_TYPES)}
    nulls.update(hash_i=0, cross_a=0, label=0)  # numpy int columns (no nulls offline either)
    assert_same(st(nulls), offline_columns(wf, frame_of({c: [v] for c, v in nulls.items()})), "all null")


def test_int_chain_outputs_inside_and_outside_the_one_row_memo_equal_offline():
    # a workflow of per-column element-wise chains runs one row as one flat loop, with an int
    # column's chain precomputed for 0..4095: both sides of the edge, negatives, huge values and
    # nulls must give the offline values
    wf = tp.Workflow((["cont_i"] >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize())
                     + (["cat_i", "cat_s"] >> ops.Categorify()) + ["hash_i"]).fit(train_frame(2000))
    st = ServingTransform(wf)
    assert st._flat_row is not None, "the flat one-row plan is not exercised"
    n = 60
    frame = train_frame(n, seed=21)
    vals = [None, -3, -1, 0, 1, 2, 4094, 4095, 4096, 4097, 65535, 65536, 10 ** 6, 2 ** 62, -(2 ** 63)]
    vals += list(range(0, 4096, 97))
    frame["cont_i"] = pd.Series((vals * n)[:n], dtype="Int64")
    want = offline_columns(wf, frame)
    for i in range(n):
        row = {c: _py(frame[c].iloc[i]) for c in frame.columns}
        assert_same(st(row), _row_slice(want, i), f"row {i} cont_i={row['cont_i']}")
    assert_same(st.transform_batch(frame), want, "batch")


def test_batch_ids_equal_offline_without_the_hash_tables(wf, monkeypatch):
    # int vocabularies are probed in pandas' khash table when it exists, else binary searches:
    # both give the offline ids (unseen, nulls, values of another column's vocabulary)
    import tabprep.serving.lookup as lookup

    frame = train_frame(500, seed=22)
    frame.loc[3, "cat_i"] = 10 ** 12
    frame.loc[4, "cat_i"] = -(2 ** 63)
    frame.loc[5, "cat_i"] = 2 ** 63 - 1
    want = offline_columns(wf, frame)
    hashed = ServingTransform(wf)
    assert any(getattr(t, "hashed", None) is not None for step in hashed._plan if step[0] == "op"
               for t in getattr(step[2][1], "tables", {}).values()), "the khash path is not exercised"
    assert_same(hashed.transform_batch(frame), want, "khash")
    monkeypatch.setattr(lookup, "_Int64HashTable", None)
    searched = ServingTransform(wf)
    assert all(getattr(t, "hashed", None) is None for step in searched._plan if step[0] == "op"
               for t in getattr(step[2][1], "tables", {}).values())
    assert_same(searched.transform_batch(frame), want, "binary search")


def test_many_int_categorify_columns_in_one_batch_equal_offline():
    # several int columns looked up together, each against its own vocabulary (a value of one
    # column's vocabulary is unseen in another), some with nulls, plus an int continuous chain
    rng = np.random.default_rng(5)
    n = 2000
    cols = {f"c{j}": pd.Series([None if rng.random() < 0.05 else int(v) for v in
                                rng.integers(j * 10, j * 10 + 40, n)], dtype="Int64") for j in range(6)}
    cols["x"] = pd.Series(rng.integers(-5, 9000, n), dtype="int64")
    train = pd.DataFrame(cols)
    wf = tp.Workflow(([f"c{j}" for j in range(6)] >> ops.Categorify(freq_threshold=2))
                     + (["x"] >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize())).fit(train)
    test = pd.DataFrame({c: s.sample(frac=1, random_state=1).reset_index(drop=True) for c, s in cols.items()})
    test.loc[0, "c0"] = 55  # in c5's vocabulary, unseen in c0's
    want = wf.transform(test)
    st = ServingTransform(wf)
    got = st.transform_batch(test)
    for c in want.columns:
        w = want[c]
        ref = w.to_numpy(dtype=w.dtype.numpy_dtype, na_value=0) if not isinstance(w.dtype, np.dtype) else w.to_numpy()
        assert got[c].dtype == ref.dtype, c
        assert np.array_equal(np.ma.getdata(got[c]), ref), c
    assert got["c0"][0] == 2  # unseen, one OOV bucket
    for i in range(0, n, 37):
        row = {c: (None if pd.isna(test[c].iloc[i]) else int(test[c].iloc[i])) for c in test.columns}
        one = st(row)
        assert all(one[c][0] == got[c][i] for c in got), i


_FLAT_ROW = None


def _flat_workflow():
    # every output is one input column through element-wise ops: the flat one-row plan
    global _FLAT_ROW
    if _FLAT_ROW is None:
        wf = tp.Workflow((["cont_i"] >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize())
                         + (["cont_f"] >> ops.FillMissing(fill_val=-1.5) >> ops.Clip(min_value=-1, max_value=100)
                            >> ops.LogOp() >> ops.NormalizeMinMax())
                         + (["cat_i", "cat_s"] >> ops.Categorify(freq_threshold=5, num_oov_buckets=3))
                         + (["u_a", "hash_i"] >> ops.Categorify())
                         + (["hash_s"] >> ops.HashBucket(50)) + ["label"]).fit(train_frame(2000))
        _FLAT_ROW = (wf, ServingTransform(wf))
    return _FLAT_ROW


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as hs  # noqa: E402

_I64 = hs.integers(-(2 ** 63), 2 ** 63 - 1)
_FLAT_ROWS = hs.lists(hs.fixed_dictionaries({
    "cont_i": hs.none() | hs.integers(-5, 5000) | _I64,
    "cont_f": hs.none() | hs.floats(allow_subnormal=False, width=32),
    "cat_i": hs.none() | hs.integers(-3, 45) | _I64,
    "cat_s": hs.none() | hs.sampled_from(["a", "b", "c", "dd", "héllo", "", "unseen"]),
    "u_a": hs.none() | hs.sampled_from(["a", "b", "c", "dd", "zz"]),
    "hash_i": hs.integers(-1200, 1200),
    "hash_s": hs.text(max_size=4),
    "label": hs.integers(0, 1),
}), min_size=1, max_size=20)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_FLAT_ROWS)
def test_flat_one_row_plan_and_batch_equal_offline_on_random_rows(rows):
    wf, st = _flat_workflow()
    assert st._flat_row is not None
    frame = frame_of({c: [r[c] for r in rows] for c in rows[0]})
    want = offline_columns(wf, frame)
    assert_same(st.transform_batch(frame), want, "batch")
    for i, r in enumerate(rows):
        assert_same(st(r), _row_slice(want, i), f"row {i} {r}")
