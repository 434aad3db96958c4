"""pad_ragged, the loader's padding of a chunk's list column (``sparse_as_dense``; the framework
loaders' ``sparse_names`` too): a (rows, max_len) array, right-padded, longer rows cut to their first
max_len values; against a plain-Python reference, and on a GPU without a device wait. Also
take_ragged, the rows of a chunk's list column in the shuffled order."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tabprep as tp
from tabprep.loader.ragged import _RaggedColumn, pad_ragged, take_ragged


def _reference(rows, max_len, pad, dtype):
    out = np.full((len(rows), max_len), pad, dtype=dtype)
    for i, row in enumerate(rows):
        kept = row[:max_len]
        out[i, :len(kept)] = kept
    return out


def _ragged(rows, dtype, xp=np):
    values = xp.asarray(np.array([v for row in rows for v in row], dtype=dtype))
    offsets = xp.asarray(np.cumsum([0] + [len(row) for row in rows]).astype(np.int64))
    return _RaggedColumn(values, offsets)


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.lists(st.integers(-2**31, 2**31 - 1), max_size=7), max_size=12),
       max_len=st.integers(0, 5), pad=st.integers(-3, 3))
def test_matches_a_plain_python_padding(rows, max_len, pad):
    got = pad_ragged(_ragged(rows, "int64"), max_len, pad)
    want = _reference(rows, max_len, pad, "int64")
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert got.flags.c_contiguous   # what DLPack hands to JAX / torch as it is


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_float_and_int32_values_keep_their_dtype(dtype):
    rows = [[1, 2, 3, 4], [], [5], [6, 7]]
    got = pad_ragged(_ragged(rows, dtype), 3)
    np.testing.assert_array_equal(got, _reference(rows, 3, 0, dtype))
    assert got.dtype == np.dtype(dtype)


@pytest.mark.gpu
@pytest.mark.skipif(not tp.backend.has_cudf(), reason="needs cuDF and a CUDA device")
def test_gpu_pads_the_same_without_waiting_for_the_device():
    # a wait here (cupy's boolean mask indexing reads its count back) also waited for the other
    # preparing thread's queued work on the default stream, at every chunk
    import cupy
    import cupyx

    rng = np.random.default_rng(0)
    rows = [list(rng.integers(0, 100, rng.integers(0, 9))) for _ in range(5000)]
    col = _ragged(rows, "int32", cupy)
    cupy.cuda.Device().synchronize()
    with cupyx.allow_synchronize(False):
        got = pad_ragged(col, 4)
    np.testing.assert_array_equal(cupy.asnumpy(got), _reference(rows, 4, 0, "int32"))
    assert got.flags.c_contiguous


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.lists(st.integers(-2**31, 2**31 - 1), max_size=7), max_size=12), data=st.data())
def test_take_matches_the_rows_in_order(rows, data):
    perm = data.draw(st.permutations(range(len(rows)))) if rows else []
    perm = np.asarray(perm, dtype=data.draw(st.sampled_from(["int32", "int64"])))
    got = take_ragged(_ragged(rows, "int64"), perm)
    want = [rows[i] for i in perm]
    assert np.asarray(got.offsets).tolist() == np.cumsum([0] + [len(r) for r in want]).tolist()
    assert np.asarray(got.values).tolist() == [v for r in want for v in r]
