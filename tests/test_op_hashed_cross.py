"""HashedCross: id = boost_hash_combine(h(a), h(b), ...) % num_buckets; null parts hash to 0.

h is the per-value hash of HashBucket (cuDF's hash_values(murmur3), seed 0: conftest.ref_murmur3).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

from conftest import make_dataset, py_values, random_frame, ref_murmur3, to_pandas
from list_helpers import frame_to_backend

M = 0xFFFFFFFF


def ref_cross(df, cols, nb):
    """Plain-Python reference: h = 0; h ^= k + 0x9E3779B9 + (h << 6) + (h >> 2) (mod 2**32) per column."""
    out = []
    for row in zip(*[py_values(df[c]) for c in cols]):
        h = 0
        for v in row:
            k = 0 if v is None else ref_murmur3(v)
            h = (h ^ ((k + 0x9E3779B9 + ((h << 6) & M) + (h >> 2)) & M)) & M
        out.append(h % nb)
    return out


def run(df, op, backend="cpu", nparts=4, select=None):
    wf = tp.Workflow((select if select is not None else list(df.columns)) >> op)
    ds = make_dataset(df, backend, nparts=nparts)
    wf.fit(ds)
    return wf, to_pandas(wf.transform(ds))


@pytest.mark.parametrize("cols", [["s", "I64"], ["i8", "f32", "b"], ["u32", "s", "i32", "f64"]])
def test_matches_reference(cols, backend):
    df = random_frame(seed=4, n=160)
    wf, out = run(df, ops.HashedCross(cols, num_buckets=1000), backend, select=cols)
    name = "_X_".join(cols)  # NVTabular's cross name
    assert list(out.columns) == [name]
    assert out[name].tolist() == ref_cross(df, cols, 1000)
    col = wf.output_schema[name]
    assert col.cardinality == 1000 and col.is_categorical and "hashed" in col.tags
    assert col.properties["crossed_columns"] == cols


def test_known_values_and_nulls():
    df = pd.DataFrame({"a": pd.Series(["x", None, "x", "y"], dtype="str"), "b": pd.array([1, 1, None, 2], dtype="Int64")})
    _, out = run(df, ops.HashedCross(["a", "b"], num_buckets=2 ** 31 - 1), nparts=2)
    import mmh3

    def h(*keys):
        acc = 0
        for k in keys:
            acc = (acc ^ ((k + 0x9E3779B9 + ((acc << 6) & M) + (acc >> 2)) & M)) & M
        return acc % (2 ** 31 - 1)

    def cudf_hash(b):  # cuDF hash_values(murmur3), seed 0: plain MurmurHash3_x86_32 (checked on an H100)
        return mmh3.hash(b, 0, signed=False)

    x = cudf_hash(b"x")
    y = cudf_hash(b"y")
    one = cudf_hash((1).to_bytes(8, "little", signed=True))
    two = cudf_hash((2).to_bytes(8, "little", signed=True))
    assert out["a_X_b"].tolist() == [h(x, one), h(0, one), h(x, 0), h(y, two)]
    assert out["a_X_b"].notna().all()


def test_order_matters_and_differs_from_single_hash():
    df = random_frame(seed=5, n=50)
    _, ab = run(df, ops.HashedCross(["s", "i8"], num_buckets=10 ** 6), select=["s", "i8"])
    _, ba = run(df, ops.HashedCross(["i8", "s"], num_buckets=10 ** 6), select=["s", "i8"])
    assert ab["s_X_i8"].tolist() != ba["i8_X_s"].tolist()


def test_groups_from_selection_and_dict_buckets(backend):
    df = random_frame(seed=6, n=120)
    op = ops.HashedCross(None, num_buckets={"s_X_I64": 50, "s_X_i8": 7})
    wf, out = run(df, op, backend, select=[["s", "I64"], ["s", "i8"]])
    assert list(out.columns) == ["s_X_I64", "s_X_i8"]
    assert out["s_X_I64"].tolist() == ref_cross(df, ["s", "I64"], 50)
    assert out["s_X_i8"].tolist() == ref_cross(df, ["s", "i8"], 7)
    assert wf.output_schema["s_X_i8"].cardinality == 7


def test_several_groups_from_columns_param():
    df = random_frame(seed=7, n=80)
    _, out = run(df, ops.HashedCross([["i8", "u16"], ["s", "b"]], num_buckets=33), select=["i8", "u16", "s", "b"])
    assert out["i8_X_u16"].tolist() == ref_cross(df, ["i8", "u16"], 33)
    assert out["s_X_b"].tolist() == ref_cross(df, ["s", "b"], 33)


def test_none_crosses_all_inputs():
    df = random_frame(seed=8, n=40)
    _, out = run(df, ops.HashedCross(None, num_buckets=100), select=["i32", "s"])
    assert out["i32_X_s"].tolist() == ref_cross(df, ["i32", "s"], 100)


def test_int_widths_agree():
    vals = [0, 3, 7, 100]
    df = pd.DataFrame({"a8": np.array(vals, dtype="int8"), "a64": np.array(vals, dtype="int64"),
                       "b": pd.Series(["p", "q", "r", "s"], dtype="str")})
    _, out8 = run(df, ops.HashedCross(["a8", "b"], 97), select=["a8", "b"], nparts=1)
    _, out64 = run(df, ops.HashedCross(["a64", "b"], 97), select=["a64", "b"], nparts=1)
    assert out8["a8_X_b"].tolist() == out64["a64_X_b"].tolist()


def test_errors():
    with pytest.raises(ValueError, match="at least 2"):
        ops.HashedCross(["a"], 10)
    with pytest.raises(ValueError, match="num_buckets"):
        ops.HashedCross(["a", "b"], 0)
    with pytest.raises(TypeError):
        ops.HashedCross("a_b", 10)
    df = pd.DataFrame({"a": [1], "b": [2]})
    with pytest.raises(KeyError, match="not among its input columns"):
        tp.Workflow(["a"] >> ops.HashedCross(["a", "b"], 10)).fit(df)


def test_empty_partitions_and_online_path(backend):
    df = random_frame(seed=9, n=70)
    wf, out = run(df, ops.HashedCross(["s", "f64"], 64), backend, nparts=5, select=["s", "f64"])
    online = to_pandas(wf.transform(frame_to_backend(df, backend)))
    assert online["s_X_f64"].tolist() == out["s_X_f64"].tolist() == ref_cross(df, ["s", "f64"], 64)
    empty = to_pandas(wf.transform(frame_to_backend(df.iloc[:0], backend)))
    assert len(empty) == 0 and list(empty.columns) == ["s_X_f64"] and str(empty["s_X_f64"].dtype) == "int32"


def test_save_load_round_trip(tmp_path, backend):
    df = random_frame(seed=10, n=90)
    wf, out = run(df, ops.HashedCross(None, num_buckets=500, dtype="int32"), backend,
                  select=[["s", "I64"], ["b", "u32"]])
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    assert loaded.output_columns == ["s_X_I64", "b_X_u32"]
    assert loaded.output_schema == wf.output_schema
    pd.testing.assert_frame_equal(to_pandas(loaded.transform(make_dataset(df, backend, nparts=2))), out)


def test_hash_combine_numpy_formula():
    from tabprep.ops.hashed_cross import hash_combine

    rng = np.random.default_rng(0)
    a = rng.integers(0, 2 ** 32, 1000, dtype="uint64").astype("uint32")
    b = rng.integers(0, 2 ** 32, 1000, dtype="uint64").astype("uint32")
    got = hash_combine([a, b])
    assert got.dtype == np.uint32
    expected = []
    for x, y in zip(a.tolist(), b.tolist()):
        h = 0
        for k in (x, y):
            h = (h ^ ((k + 0x9E3779B9 + ((h << 6) & M) + (h >> 2)) & M)) & M
        expected.append(h)
    assert got.tolist() == expected
