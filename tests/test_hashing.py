"""Tests for tabprep.hashing: vectorized MurmurHash3_x86_32 against the mmh3 reference."""
from __future__ import annotations

import struct

import numpy as np
import pandas as pd
import pytest

mmh3 = pytest.importorskip("mmh3")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import tabprep.hashing as hashing  # noqa: E402
from tabprep.backend import murmur3 as backend_murmur3  # noqa: E402
from tabprep.hashing import murmur3_32  # noqa: E402
from tabprep.ops.hashed_cross import hash_combine  # noqa: E402

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


def ref(data: bytes, seed: int = 0) -> int:
    return mmh3.hash(data, seed, signed=False)


def ref_int(v: int, seed: int = 0) -> int:
    return ref(struct.pack("<q", v), seed)


def ref_float(v: float, seed: int = 0) -> int:
    if v != v:  # any NaN -> the canonical quiet NaN
        data = struct.pack("<Q", 0x7FF8000000000000)
    elif v == 0.0:  # -0.0 -> +0.0
        data = struct.pack("<d", 0.0)
    else:
        data = struct.pack("<d", v)
    return ref(data, seed)


def ref_combine(lhs: int, rhs: int) -> int:
    m = 0xFFFFFFFF
    return (lhs ^ ((rhs + 0x9E3779B9 + ((lhs << 6) & m) + (lhs >> 2)) & m)) & m


# --- hard-coded values -------------------------------------------------------

@pytest.mark.parametrize(
    "data, seed, expected",
    [
        # Published MurmurHash3_x86_32 test vectors (SMHasher / Wikipedia).
        (b"", 0, 0),
        (b"", 1, 0x514E28B7),
        (b"", 0xFFFFFFFF, 0x81F16F39),
        (b"\x00\x00\x00\x00", 0, 0x2362F9DE),
        (b"aaaa", 0x9747B28C, 0x5A97808A),
        (b"Hello, world!", 0x9747B28C, 0x24884CBA),
        (b"The quick brown fox jumps over the lazy dog", 0x9747B28C, 0x2FA826CD),
    ],
)
def test_published_vectors(data, seed, expected):
    assert ref(data, seed) == expected  # the reference itself
    got = murmur3_32(np.array([data], dtype=object), seed)
    assert got.dtype == np.uint32
    assert int(got[0]) == expected
    got_str = murmur3_32(np.array([data.decode()], dtype=object), seed)
    assert int(got_str[0]) == expected


def test_known_int64_values():
    # Element hashes of 10, 120, 30 as 8 little-endian bytes, seed 0.
    got = murmur3_32(np.array([10, 120, 30], dtype=np.int64))
    assert got.tolist() == [4004982076, 2063150778, 699010651]


def test_cudf_docstring_values():
    # cudf.Series([10, 120, 30]).hash_values(method="murmur3") from cuDF's own docstring
    # (printed there as int32 by older releases) is libcudf's row hasher: the element hash
    # folded into seed 0 with hash_combine, which is what HashedCross computes for one column.
    got = hash_combine([backend_murmur3(pd.Series([10, 120, 30]))])
    assert got.dtype == np.uint32
    assert got.view(np.int32).tolist() == [-1930516747, 422619251, -941520876]


@pytest.mark.parametrize(
    "values, to_bytes",
    [
        ([1, 2, 3], lambda v: struct.pack("<q", v)),
        ([1.0, 2.0, 3.0], lambda v: struct.pack("<d", v)),
        (["a", "b", "c"], lambda v: v.encode()),
        ([True, True, False], lambda v: bytes([int(v)])),
    ],
)
def test_row_hash_matches_pylibcudf_reference(values, to_bytes):
    # pylibcudf's tests define the expected single-column murmurhash3_x86_32 row hash as
    # hash_combine_32(seed, mmh3(scalar_to_binary(x), seed)) with seed 0.
    got = hash_combine([murmur3_32(np.array(values))])
    assert got.tolist() == [ref_combine(0, ref(to_bytes(v))) for v in values]


def test_nulls_hash_to_zero_and_cross_as_a_value():
    # tabprep's element hash of a null is 0 (HashBucket maps nulls to its own bucket;
    # HashedCross crosses a null like any value): hash_combine(0, 0) for a one-column row
    got = backend_murmur3(pd.Series([5, None], dtype="Int64"))
    assert got.tolist() == [ref_int(5), 0]
    assert hash_combine([got]).tolist() == [ref_combine(0, ref_int(5)), ref_combine(0, 0)]
    got = backend_murmur3(pd.Series(["x", None]))
    assert got.tolist() == [ref(b"x"), 0]


def test_hash_combine_folds_columns_in_order():
    cols = [np.array([0, 1, 0xFFFFFFFF, 12345], dtype=np.uint32),
            np.array([0xFFFFFFFF, 0, 7, 0x9E3779B9], dtype=np.uint32),
            np.array([3, 0x80000000, 0, 1], dtype=np.uint32)]
    got = hash_combine(cols)
    assert got.dtype == np.uint32
    expected = []
    for row in zip(*(c.tolist() for c in cols)):
        h = 0
        for k in row:
            h = ref_combine(h, k)
        expected.append(h)
    assert got.tolist() == expected
    assert hash_combine(cols[::-1]).tolist() != expected  # order matters


# --- integers ---------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=INT64_MIN, max_value=INT64_MAX), max_size=50), SEEDS)
def test_int64_matches_mmh3(values, seed):
    got = murmur3_32(np.array(values, dtype=np.int64), seed)
    assert got.tolist() == [ref_int(v, seed) for v in values]


def test_int64_extremes_and_chunk_boundaries():
    rng = np.random.default_rng(1)
    n = hashing._CHUNK * 2 + 17  # spans several chunks, ragged end
    values = rng.integers(INT64_MIN, INT64_MAX, size=n, dtype=np.int64, endpoint=True)
    values[:6] = [0, -1, 1, INT64_MIN, INT64_MAX, INT64_MIN + 1]
    got = murmur3_32(values, seed=42)
    idx = np.r_[0:6, rng.integers(0, n, 300), n - 1]
    assert [int(got[i]) for i in idx] == [ref_int(int(values[i]), 42) for i in idx]


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "uint8", "uint16", "uint32", "Int32", "Int64"])
def test_all_integer_widths_hash_as_int64(dtype):
    values = [0, 1, 7, 100, 127]
    got = murmur3_32(pd.Series(values, dtype=dtype))
    assert got.tolist() == murmur3_32(np.array(values, dtype=np.int64)).tolist()


def test_uint64_wraps_to_int64_bits():
    got = murmur3_32(np.array([2**64 - 1, 2**63], dtype=np.uint64))
    assert got.tolist() == [ref_int(-1), ref_int(INT64_MIN)]


def test_non_contiguous_and_big_endian_input():
    values = np.arange(-50, 50, dtype=np.int64)
    expected = [ref_int(int(v)) for v in values[::3]]
    assert murmur3_32(values[::3]).tolist() == expected
    assert murmur3_32(values.astype(">i8")[::3]).tolist() == expected


# --- floats -----------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=50), SEEDS)
def test_float64_matches_mmh3_with_normalization(values, seed):
    got = murmur3_32(np.array(values, dtype=np.float64), seed)
    assert got.tolist() == [ref_float(v, seed) for v in values]


def test_float_special_values():
    nan_payloads = np.array([0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001,
                             0x7FFFFFFFFFFFFFFF], dtype=np.uint64).view(np.float64)
    got = murmur3_32(nan_payloads)
    assert len(set(got.tolist())) == 1
    assert int(got[0]) == ref(struct.pack("<Q", 0x7FF8000000000000))
    zeros = murmur3_32(np.array([0.0, -0.0]))
    assert zeros[0] == zeros[1] == ref(b"\x00" * 8)
    inf = murmur3_32(np.array([np.inf, -np.inf]))
    assert inf.tolist() == [ref(struct.pack("<d", np.inf)), ref(struct.pack("<d", -np.inf))]


def test_float32_hashes_as_float64():
    values = np.array([0.5, -2.25, 1e10], dtype=np.float32)
    assert murmur3_32(values).tolist() == [ref_float(float(v)) for v in values]


def test_float_nan_is_value_but_masked_na_is_null():
    plain = murmur3_32(pd.Series([np.nan, 1.0]))
    assert int(plain[0]) == ref_float(float("nan"))
    masked = murmur3_32(pd.Series([None, 1.0], dtype="Float64"))
    assert masked.tolist() == [0, ref_float(1.0)]


# --- bool -------------------------------------------------------------------

def test_bool_is_one_byte():
    got = murmur3_32(np.array([True, False, True]), seed=3)
    assert got.tolist() == [ref(b"\x01", 3), ref(b"\x00", 3), ref(b"\x01", 3)]
    nullable = murmur3_32(pd.Series([True, None, False], dtype="boolean"))
    assert nullable.tolist() == [ref(b"\x01"), 0, ref(b"\x00")]


# --- strings ----------------------------------------------------------------

@settings(max_examples=80, deadline=None)
@given(st.lists(st.text(max_size=40), max_size=40), SEEDS)
def test_strings_match_mmh3(values, seed):
    got = murmur3_32(np.array(values, dtype=object), seed)
    assert got.tolist() == [ref(v.encode("utf-8"), seed) for v in values]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(["", "a", "ab", "abc", "abcd", "é", "日本語", "x" * 37]), max_size=60))
def test_strings_with_duplicates(values):
    got = murmur3_32(pd.Series(values, dtype=object))
    assert got.tolist() == [ref(v.encode()) for v in values]


def test_every_length_0_to_40_unicode():
    alphabet = "aé日𝄞"  # 1-, 2-, 3- and 4-byte UTF-8 characters
    values = ["".join(alphabet[(i * 7 + j) % 4] for j in range(n)) for n in range(41) for i in range(3)]
    got = murmur3_32(np.array(values, dtype=object), seed=99)
    assert got.tolist() == [ref(v.encode(), 99) for v in values]


def test_string_dtypes_agree():
    values = ["apple", "", "日本", None, "apple", "z" * 21]
    expected = [ref(v.encode()) if v is not None else 0 for v in values]
    variants = [
        np.array(values, dtype=object),
        pd.Series(values, dtype=object),
        pd.Series(values, dtype="string[python]"),
        pd.Series(values, dtype="string[pyarrow]"),
        pd.Series(values, dtype="str"),
        pd.Series(values, dtype="category"),
        pd.Index(values, dtype=object),
    ]
    for v in variants:
        assert murmur3_32(v).tolist() == expected, type(v)
    no_null = [v for v in values if v is not None]
    assert murmur3_32(np.array(no_null)).tolist() == [ref(v.encode()) for v in no_null]
    assert murmur3_32(np.array([v.encode() for v in no_null])).tolist() == [ref(v.encode()) for v in no_null]


def test_long_strings_and_string_chunks(monkeypatch):
    monkeypatch.setattr(hashing, "_STR_CHUNK", 64)
    rng = np.random.default_rng(5)
    lengths = list(rng.integers(0, 60, 500)) + [1000, 4097, 20001, 3]
    values = ["".join(chr(97 + (i + j) % 26) for j in range(n)) + str(i) for i, n in enumerate(lengths)]
    got = murmur3_32(np.array(values, dtype=object), seed=7)
    assert got.tolist() == [ref(v.encode(), 7) for v in values]


@pytest.mark.parametrize("dedup_threshold", [0, 10**9])
def test_string_paths_dedup_and_rowwise_agree(monkeypatch, dedup_threshold):
    # 0: always dictionary-encode and hash distinct values; 1e9: always hash every row.
    monkeypatch.setattr(hashing, "_DEDUP_MIN_MEAN_BYTES", dedup_threshold)
    rng = np.random.default_rng(11)
    vocab = ["", "a", "日本語テキスト", "long " * 30, "x" * 7, None]
    values = [vocab[i] for i in rng.integers(0, len(vocab), 400)]
    expected = [ref(v.encode(), 5) if v is not None else 0 for v in values]
    assert murmur3_32(np.array(values, dtype=object), seed=5).tolist() == expected
    assert murmur3_32(pd.Series(values, dtype="str"), seed=5).tolist() == expected
    sliced = pd.Series(values, dtype="string[pyarrow]").iloc[100:]
    assert murmur3_32(sliced, seed=5).tolist() == expected[100:]


def test_object_numbers_are_hashed_by_value():
    assert murmur3_32(np.array([1, None, 3], dtype=object)).tolist() == [ref_int(1), 0, ref_int(3)]
    assert murmur3_32(np.array([1.5, None], dtype=object)).tolist() == [ref_float(1.5), 0]


# --- misc -------------------------------------------------------------------

def test_nulls_hash_to_zero():
    assert murmur3_32(pd.Series([1, None, 3], dtype="Int64")).tolist() == [ref_int(1), 0, ref_int(3)]
    assert murmur3_32(pd.Series(["a", None, pd.NA], dtype=object)).tolist() == [ref(b"a"), 0, 0]
    assert murmur3_32(pd.Series([None, None], dtype=object)).tolist() == [0, 0]
    ts = np.array(["2021-03-04", "NaT"], dtype="datetime64[s]")
    assert murmur3_32(ts).tolist() == [ref_int(int(ts[0].astype(np.int64))), 0]


def test_empty_inputs():
    for v in (np.array([], dtype=np.int64), np.array([], dtype=np.float64),
              np.array([], dtype=object), pd.Series([], dtype="str"), np.array([], dtype=bool)):
        out = murmur3_32(v)
        assert out.dtype == np.uint32 and out.shape == (0,)


def test_bad_inputs():
    with pytest.raises(ValueError):
        murmur3_32(np.array([1]), seed=-1)
    with pytest.raises(ValueError):
        murmur3_32(np.array([1]), seed=2**32)
    with pytest.raises(TypeError):
        murmur3_32(np.array(["a", 1], dtype=object))
    with pytest.raises(TypeError):
        murmur3_32(np.array([1 + 2j]))


@settings(max_examples=200, deadline=None)
@given(h=st.lists(st.integers(0, 2 ** 32 - 1), min_size=0, max_size=50),
       d=st.one_of(st.integers(1, 70), st.integers(1, 2 ** 32 + 5), st.sampled_from([1, 2, 3, 2 ** 31 - 1, 2 ** 32 - 1])))
def test_mod_uint32_is_exact(h, d):
    """HashBucket's modulo equals Python's integer %, for every uint32 and divisor (2**32 and over
    included); a divisor below 1 is refused."""
    arr = np.array(h + [0, 2 ** 32 - 1, 2 ** 32 - 2, d - 1 if d <= 2 ** 32 else 0], dtype=np.uint32)
    got = hashing.mod_uint32(arr, d)
    assert got.dtype == np.int64
    assert got.tolist() == [int(v) % d for v in arr.tolist()]
    with pytest.raises(ValueError, match="divisor"):
        hashing.mod_uint32(arr, 0)
