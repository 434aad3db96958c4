"""HashBucket: id = murmur3_32(value) mod num_buckets, null -> 0.

The reference is the ``mmh3`` package on the documented bytes (int64 little-endian, UTF-8,
float64); cuDF's ``hash_values(method="murmur3")`` returns the same plain MurmurHash3
(checked on cuDF 26.10), so GPU ids must equal these too.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tabprep as tp
from tabprep import ops

from conftest import make_dataset, ref_murmur3, to_pandas

HYP = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def hash_ref(values, nb):
    return [0 if v is None else ref_murmur3(v) % nb for v in values]


def run_hash(df, nb, backend="cpu", nparts=2, **kw):
    wf = tp.Workflow(list(df.columns) >> ops.HashBucket(num_buckets=nb, **kw))
    ds = make_dataset(df, backend, nparts=nparts)
    wf.fit(ds)
    return wf, to_pandas(wf.transform(ds))


def test_known_values(backend):
    df = pd.DataFrame({"i": pd.array([0, 1, -1, 2 ** 62, None], dtype="Int64"),
                       "s": pd.Series(["", "a", "héllo", None, "日本"], dtype="str")})
    wf, out = run_hash(df, 1000, backend)
    # reference bytes written out explicitly: int64 little-endian, UTF-8
    import mmh3

    def cudf_hash(b):
        return mmh3.hash(b, 0, signed=False)

    expected_i = [cudf_hash(int(v).to_bytes(8, "little", signed=True)) % 1000 for v in (0, 1, -1, 2 ** 62)] + [0]
    expected_s = [cudf_hash(v.encode("utf-8")) % 1000 for v in ("", "a", "héllo")] + [0] + [
        cudf_hash("日本".encode("utf-8")) % 1000]
    assert out["i"].tolist() == expected_i
    assert out["s"].tolist() == expected_s


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "uint8", "uint16", "uint32", "Int8", "UInt32", "int64"])
def test_int_widths_hash_as_int64(dtype):
    vals = np.array([0, 1, 2, 5, 100, 127], dtype="int64")
    df = pd.DataFrame({"c": pd.Series(vals).astype(dtype)})
    _, out = run_hash(df, 97)
    assert out["c"].tolist() == hash_ref([int(v) for v in vals], 97)


def test_negative_small_ints_sign_extended():
    df = pd.DataFrame({"c": np.array([-1, -128, 3], dtype="int8")})
    _, out = run_hash(df, 50)
    assert out["c"].tolist() == hash_ref([-1, -128, 3], 50)


def test_floats_hash_as_float64_and_nan_is_null():
    df = pd.DataFrame({"f": np.array([0.5, -0.0, 0.0, np.nan, 3.25], dtype="float32")})
    _, out = run_hash(df, 64)
    assert out["f"].tolist() == hash_ref([0.5, 0.0, 0.0, None, 3.25], 64)


def test_schema_and_dict_buckets():
    df = pd.DataFrame({"a": np.arange(10), "b": pd.Series(list("abcdefghij"), dtype="str")})
    wf, out = run_hash(df, {"a": 3, "b": 7}, dtype="int32", embedding_dim={"a": 4})
    sch = wf.output_schema
    assert sch["a"].cardinality == 3 and sch["b"].cardinality == 7
    assert sch["a"].dtype == "int32" and str(out["a"].dtype) == "int32"
    assert "hashed" in sch["a"].tags and "categorical" in sch["a"].tags
    assert tp.get_embedding_sizes(wf)["a"] == (3, 4)
    assert out["a"].tolist() == hash_ref(list(range(10)), 3)
    assert out["b"].tolist() == hash_ref(list("abcdefghij"), 7)


def test_missing_bucket_entry_and_invalid_buckets():
    with pytest.raises(ValueError, match="num_buckets"):
        ops.HashBucket(num_buckets=0)
    with pytest.raises(ValueError):
        ops.HashBucket(num_buckets={"a": 10, "b": -1})
    df = pd.DataFrame({"a": [1, 2], "c": [3, 4]})
    with pytest.raises(KeyError, match="'c'"):
        tp.Workflow(["a", "c"] >> ops.HashBucket(num_buckets={"a": 10})).fit(df)


def test_list_column_hashed_elementwise():
    arr = pa.array([["a", "b"], None, [], ["c", None]], type=pa.list_(pa.string()))
    df = pd.DataFrame({"l": pd.Series(pd.arrays.ArrowExtensionArray(arr))})
    wf = tp.Workflow(["l"] >> ops.HashBucket(num_buckets=11))
    wf.fit(df)
    got = [None if v is None or v is pd.NA else list(v) for v in wf.transform(df)["l"].tolist()]
    assert got == [hash_ref(["a", "b"], 11), None, [], hash_ref(["c", None], 11)]


@HYP
@given(ints=st.lists(st.one_of(st.none(), st.integers(-(2 ** 63), 2 ** 63 - 1)), max_size=30),
       strs=st.lists(st.one_of(st.none(), st.text(max_size=12)), max_size=30),
       nb=st.integers(1, 10 ** 6), nparts=st.integers(1, 3))
def test_property_range_and_reference(ints, strs, nb, nparts):
    n = min(len(ints), len(strs))
    df = pd.DataFrame({"i": pd.array(ints[:n], dtype="Int64"), "s": pd.Series(strs[:n], dtype="str")})
    wf, out = run_hash(df, nb, nparts=nparts)
    for c, vals in (("i", ints[:n]), ("s", strs[:n])):
        got = out[c].tolist()
        assert all(0 <= x < nb for x in got)
        assert got == hash_ref(vals, nb), c
    assert wf.output_schema["i"].properties["domain"] == {"min": 0, "max": nb}  # NVTabular's max


@pytest.mark.parametrize("out_dtype", ["int32", "int64", "int16"])
def test_every_scalar_kind_on_the_backend_equals_mmh3(backend, out_dtype):
    """HashBucket's ids of each scalar kind on the backend against mmh3 of the documented bytes
    (ints, bools and datetimes as int64, floats as float64 with -0.0 as 0.0, strings as UTF-8;
    null and NaN -> 0), in the requested dtype; two partitions, one of them empty. The GPU takes
    libcudf's hash and modulo straight on the columns (one call each, no CuPy kernel)."""
    nb = {"i8": 97, "u32": 1000, "i64": 7, "f32": 1 << 14, "f64": 3, "b": 5, "s": 101, "t": 31}
    df = pd.DataFrame({
        "i8": np.array([-128, -1, 0, 1, 127, 5], dtype="int8"),
        "u32": np.array([0, 1, 2 ** 32 - 1, 7, 2 ** 31, 9], dtype="uint32"),
        "i64": pd.array([None, -(2 ** 63), 2 ** 63 - 1, 0, None, 42], dtype="Int64"),
        "f32": np.array([-0.0, 0.0, np.nan, np.inf, -np.inf, 1.5], dtype="float32"),
        "f64": [1e300, None, -2.5, 0.1, np.nan, -0.0],
        "b": [True, False, True, True, False, False],
        "s": pd.Series(["a", None, "", "héllo", "日本", "a"], dtype="str"),
        "t": pd.to_datetime(["2020-01-01", None, "1969-12-31 23:59:59.999999999", "1970-01-01", "2262-01-01",
                             "2000-02-29"], format="ISO8601"),
    })
    wf = tp.Workflow(list(df.columns) >> ops.HashBucket(num_buckets=nb, dtype=out_dtype))
    ds = make_dataset(df, backend, nparts=2)
    out = to_pandas(wf.fit(ds).transform(ds))

    for c in df.columns:
        # the hashed bytes' values: None where missing (null, NaN, NaT), datetimes as int64 nanoseconds
        vals = [None if pd.isna(v) else v.value if isinstance(v, pd.Timestamp) else v for v in df[c].astype(object)]
        assert str(out[c].dtype) == out_dtype, c
        assert out[c].tolist() == hash_ref(vals, nb[c]), c
