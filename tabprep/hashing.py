"""MurmurHash3 (x86, 32-bit), vectorized in numpy, bit-compatible with cuDF.

tabprep's ``HashBucket`` op maps a value to ``hash(value) % num_buckets``. The ids
must be identical whether a partition is a pandas frame (this module, on the CPU)
or a cuDF frame (``cudf.Series.hash_values(method="murmur3")`` on the GPU). This
module therefore reproduces exactly what libcudf hashes, byte for byte.

:func:`murmur3_32`
    The plain MurmurHash3_x86_32 of each value's canonical bytes (defined below).
    Equal to ``mmh3.hash(value_bytes, seed, signed=False)`` and to the reference
    C++ ``MurmurHash3_x86_32`` of Austin Appleby's SMHasher. **This is what
    ``cudf.Series.hash_values(method="murmur3")`` returns** (checked on an H100 with
    cuDF 26.10 by ``benchmarks/gpu_check.py`` and the GPU parity tests), so HashBucket,
    HashedCross and Categorify's hashed OOV buckets use it on the CPU.

Several columns are folded into one hash by Boost's ``hash_combine`` in
:func:`tabprep.ops.hashed_cross.hash_combine` (the same numpy/cupy code on both backends).

Canonical bytes per type (what libcudf feeds to the hash; little-endian):

* integers (any width, signed or unsigned, numpy or pandas nullable): cast to
  ``int64`` and hashed as its 8 two's-complement bytes. libcudf would hash an
  ``int32`` column as 4 bytes, so tabprep casts every integer column to ``int64``
  before hashing on *both* backends; int32 and int64 columns then give the same ids.
* floats (any width): cast to ``float64``; ``-0.0`` becomes ``0.0`` and every NaN
  becomes the canonical quiet NaN ``0x7FF8000000000000`` (libcudf's
  ``normalize_nans_and_zeros``); then the 8 IEEE-754 bytes are hashed.
* bool: one byte, ``0x00`` or ``0x01``.
* strings (``object`` holding ``str``, pandas ``string``/``str`` dtype, numpy
  ``U``): the UTF-8 bytes, any length (0 included), standard MurmurHash3 tail.
  ``bytes`` values (numpy ``S`` or ``object`` holding ``bytes``) are hashed as is.
* datetime64 / timedelta64: the underlying ``int64`` count in the array's unit.
* categorical: the hash of each row's category value.

Nulls: ``None``/``pd.NA``/``NaT`` and the masked entries of pandas nullable arrays
are nulls. :func:`murmur3_32` returns ``0`` for them; callers are expected to handle nulls
themselves (HashBucket maps them to its own null bucket). A ``NaN`` inside a plain
``float64`` array is *not* a null here: it is hashed as the canonical NaN. (Note
that cuDF turns NaN into null when it builds a column from pandas by default.)

Speed: the fixed-width path is pure uint32 numpy arithmetic (no Python loop over
rows), processed in cache-sized chunks. Strings are first factorized so each
distinct value is hashed once; the distinct values are laid out as one UTF-8
buffer (through pyarrow) and hashed block by block over all strings at once,
shortest strings dropping out as the block index passes their length.
"""
from __future__ import annotations

import logging
import struct
from typing import Any, Tuple, Union

import numpy as np
import pandas as pd
import pyarrow as pa

logger = logging.getLogger(__name__)

__all__ = ["murmur3_32", "mod_uint32"]

ArrayLike = Union[np.ndarray, pd.Series, pd.Index, pd.api.extensions.ExtensionArray, list, tuple]

_C1 = np.uint32(0xCC9E2D51)
_C2 = np.uint32(0x1B873593)
_N1 = np.uint32(0xE6546B64)
_F1 = np.uint32(0x85EBCA6B)
_F2 = np.uint32(0xC2B2AE35)
_FIVE = np.uint32(5)
_MASK32 = 0xFFFFFFFF
_CANONICAL_NAN_BITS = np.uint64(0x7FF8000000000000)

#: Rows per chunk in the fixed-width path: 8 uint32 temporaries of 256 KiB each.
_CHUNK = 1 << 16

#: Distinct strings per chunk in the string path.
_STR_CHUNK = 1 << 14

#: Mean UTF-8 bytes per row above which strings are dictionary-encoded and only the
#: distinct values hashed (below it, hashing every row is cheaper than finding them).
_DEDUP_MIN_MEAN_BYTES = 32

#: In the string path, once this few strings are still longer than the current
#: block, the rest of their blocks are hashed one string at a time in plain Python
#: (about 1 us a block) instead of with numpy calls over a handful of rows.
_SCALAR_TAIL_ROWS = 8

_TAIL_MASKS = np.array([0x0, 0xFF, 0xFFFF, 0xFFFFFF], dtype=np.uint32)


def mod_uint32(h: np.ndarray, divisor: int) -> np.ndarray:
    """``h % divisor`` as int64, for uint32 hashes ``h`` and an int ``divisor >= 1``; exact.

    numpy divides an integer array by one scalar with libdivide's multiply-and-shift (vectorized)
    since 1.22: on 1.7M hashes and 10**6 buckets (numpy 2.4, one core of the development machine)
    ``%`` in uint32 took 5.1 ms, the float64 floor path this function used before 17.4 ms, ``%`` in
    int64 10.0 ms; alternated 15 times on the machine loaded by a test run, medians 18.0 ms against
    44.0 ms. A divisor of 2**32 or more leaves every uint32 as it is.
    """
    d = int(divisor)
    if d < 1:
        raise ValueError(f"divisor must be >= 1, got {divisor}")
    h = np.asarray(h, dtype=np.uint32)
    if d > _MASK32:
        return h.astype(np.int64)
    return np.remainder(h, np.uint32(d)).astype(np.int64)


def _check_seed(seed: int) -> int:
    seed = int(seed)
    if not 0 <= seed <= _MASK32:
        raise ValueError(f"seed must be in [0, 2**32), got {seed}")
    return seed


# ---------------------------------------------------------------------------
# uint32 building blocks (all in place, wrapping modulo 2**32)
# ---------------------------------------------------------------------------

def _rotl(x: np.ndarray, r: int, tmp: np.ndarray) -> None:
    np.left_shift(x, r, out=tmp)
    np.right_shift(x, 32 - r, out=x)
    np.bitwise_or(x, tmp, out=x)


def _mix_block(h: np.ndarray, k: np.ndarray, tmp: np.ndarray) -> None:
    """One MurmurHash3 body step: mixes block ``k`` (clobbered) into ``h``."""
    _mix_tail(h, k, tmp)  # the body step begins with exactly the tail's mixing
    _rotl(h, 13, tmp)
    np.multiply(h, _FIVE, out=h)
    np.add(h, _N1, out=h)


def _mix_tail(h: np.ndarray, k: np.ndarray, tmp: np.ndarray) -> None:
    """MurmurHash3 tail step (1-3 trailing bytes in ``k``; a zero ``k`` is a no-op)."""
    np.multiply(k, _C1, out=k)
    _rotl(k, 15, tmp)
    np.multiply(k, _C2, out=k)
    np.bitwise_xor(h, k, out=h)


def _fmix(h: np.ndarray, length: Union[int, np.ndarray], tmp: np.ndarray) -> None:
    """Length xor and the final avalanche (``fmix32``)."""
    if isinstance(length, np.ndarray):
        np.bitwise_xor(h, length.astype(np.uint32, copy=False), out=h)
    else:
        np.bitwise_xor(h, np.uint32(length), out=h)
    for shift, mult in ((16, _F1), (13, _F2)):
        np.right_shift(h, shift, out=tmp)
        np.bitwise_xor(h, tmp, out=h)
        np.multiply(h, mult, out=h)
    np.right_shift(h, 16, out=tmp)
    np.bitwise_xor(h, tmp, out=h)


def _hash_u64(words: np.ndarray, seed: int) -> np.ndarray:
    """MurmurHash3_x86_32 of each 8-byte little-endian value (given as ``(n, 2)`` uint32)."""
    n = words.shape[0]
    out = np.empty(n, dtype=np.uint32)
    size = min(n, _CHUNK)
    h = np.empty(size, dtype=np.uint32)
    k = np.empty(size, dtype=np.uint32)
    tmp = np.empty(size, dtype=np.uint32)
    for start in range(0, n, _CHUNK):
        stop = min(start + _CHUNK, n)
        m = stop - start
        hv, kv, tv = h[:m], k[:m], tmp[:m]
        hv.fill(seed)
        kv[...] = words[start:stop, 0]
        _mix_block(hv, kv, tv)
        kv[...] = words[start:stop, 1]
        _mix_block(hv, kv, tv)
        _fmix(hv, 8, tv)
        out[start:stop] = hv
    return out


def _hash_u8(values: np.ndarray, seed: int) -> np.ndarray:
    """MurmurHash3_x86_32 of each single byte (the bool path)."""
    k = values.astype(np.uint32)
    h = np.full(k.shape[0], seed, dtype=np.uint32)
    tmp = np.empty_like(h)
    _mix_tail(h, k, tmp)
    _fmix(h, 1, tmp)
    return h


# ---------------------------------------------------------------------------
# Fixed-width inputs
# ---------------------------------------------------------------------------

def _hash_int64(values: np.ndarray, seed: int) -> np.ndarray:
    arr = np.ascontiguousarray(values, dtype="<i8")
    return _hash_u64(arr.view("<u4").reshape(-1, 2), seed)


def _hash_float64(values: np.ndarray, seed: int) -> np.ndarray:
    arr = np.array(values, dtype="<f8", copy=True)
    arr[arr == 0.0] = 0.0  # -0.0 -> +0.0
    bits = arr.view("<u8")
    bits[np.isnan(arr)] = _CANONICAL_NAN_BITS
    return _hash_u64(bits.view("<u4").reshape(-1, 2), seed)


# ---------------------------------------------------------------------------
# Variable-width inputs (strings / bytes)
# ---------------------------------------------------------------------------

def _scalar_blocks(h: int, data: memoryview, pos: int, nblocks: int) -> int:
    """Plain-Python body loop for a few very long strings (``nblocks`` 4-byte blocks)."""
    c1, c2, n1 = int(_C1), int(_C2), int(_N1)
    for (k,) in struct.iter_unpack("<I", data[pos:pos + 4 * nblocks]):
        k = (k * c1) & _MASK32
        k = ((k << 15) | (k >> 17)) & _MASK32
        k = (k * c2) & _MASK32
        h ^= k
        h = ((h << 13) | (h >> 19)) & _MASK32
        h = (h * 5 + n1) & _MASK32
    return h


def _hash_varwidth(offsets: np.ndarray, data: np.ndarray, seed: int) -> np.ndarray:
    """MurmurHash3_x86_32 of each ``data[offsets[i]:offsets[i+1]]`` (Arrow layout)."""
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.uint32)
    if n == 0:
        return out
    starts = offsets[:-1].astype(np.int64)
    lengths = (offsets[1:] - offsets[:-1]).astype(np.int64)
    # Pad with 4 zero bytes so an unaligned 4-byte read at any byte offset up to
    # the end is in bounds; ``words[p]`` is the little-endian uint32 at byte ``p``.
    padded = np.zeros(data.shape[0] + 4, dtype=np.uint8)
    padded[: data.shape[0]] = data
    words = np.ndarray(shape=(data.shape[0] + 1,), dtype="<u4", buffer=padded, strides=(1,))
    size = min(n, _STR_CHUNK)
    h_buf = np.empty(size, dtype=np.uint32)
    k_buf = np.empty(size, dtype=np.uint32)
    t_buf = np.empty(size, dtype=np.uint32)
    i_buf = np.empty(size, dtype=np.int64)
    # Rows are taken in their storage order, chunk by chunk, so the gathers of a
    # chunk stay within one stretch of ``data`` and the temporaries stay in cache.
    for lo in range(0, n, _STR_CHUNK):
        hi = min(lo + _STR_CHUNK, n)
        m_all = hi - lo
        c_len = lengths[lo:hi]
        c_blocks = c_len >> 2
        # Longest first: the rows still active at block j are then a prefix. (A
        # uint16 key lets numpy use its radix sort.)
        top = int(c_blocks.max())
        key = top - c_blocks
        order = np.argsort(key.astype(np.uint16) if top < 65536 else key, kind="stable")
        s_starts = starts[lo:hi][order]
        s_blocks = c_blocks[order]
        h = h_buf[:m_all]
        h.fill(seed)
        max_blocks = int(s_blocks[0])
        # active[j] = number of rows with more than j blocks (non-increasing in j).
        active = m_all - np.cumsum(np.bincount(s_blocks, minlength=max_blocks + 1))
        j = 0
        while j < max_blocks:
            m = int(active[j])
            if m <= _SCALAR_TAIL_ROWS and max_blocks - j > 4:
                buf = memoryview(padded)
                for r in range(m):
                    h[r] = _scalar_blocks(int(h[r]), buf, int(s_starts[r]) + 4 * j,
                                          int(s_blocks[r]) - j)
                break
            idx, kv, tv = i_buf[:m], k_buf[:m], t_buf[:m]
            np.add(s_starts[:m], 4 * j, out=idx)
            kv[...] = words[idx]  # fancy indexing: np.take would copy all of ``words``
            _mix_block(h[:m], kv, tv)
            j += 1
        # Tails: 0-3 bytes (a zero-length tail mixes a zero block: a no-op).
        s_len = c_len[order]
        kv, tv, idx = k_buf[:m_all], t_buf[:m_all], i_buf[:m_all]
        np.add(s_starts, s_blocks * 4, out=idx)
        kv[...] = words[idx]
        np.bitwise_and(kv, _TAIL_MASKS[s_len & 3], out=kv)
        _mix_tail(h, kv, tv)
        _fmix(h, s_len, tv)
        out[lo + order] = h
    return out


def _arrow_binary_buffers(arr: pa.Array) -> Tuple[np.ndarray, np.ndarray]:
    """(offsets, data) numpy views of a string/binary Arrow array without nulls."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if not pa.types.is_large_binary(arr.type):
        arr = arr.cast(pa.large_binary())  # str -> its UTF-8 bytes, offsets -> int64
    _, off_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(off_buf, dtype="<i8")[arr.offset: arr.offset + len(arr) + 1]
    data = (np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None
            else np.zeros(0, dtype=np.uint8))
    return offsets, data


def _to_arrow_binary(values: Any) -> pa.Array:
    """Strings/bytes (object, numpy U/S, pandas string or Arrow-backed) as one Arrow array."""
    try:
        if hasattr(values, "__arrow_array__"):
            arr = pa.array(values)
        else:
            arr = pa.array(np.asarray(values), from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise TypeError("string hashing needs all non-null values to be str (or all bytes)") from exc
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_null(arr.type):  # all null
        arr = arr.cast(pa.large_binary())
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)
            or pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type)
            or getattr(pa.types, "is_string_view", lambda t: False)(arr.type)
            or getattr(pa.types, "is_binary_view", lambda t: False)(arr.type)):
        raise TypeError(f"cannot hash string values inferred as Arrow type {arr.type}")
    return arr


def _hash_strings(values: Any, seed: int) -> Tuple[np.ndarray, np.ndarray]:
    """Hash string/bytes values; returns (hashes with 0 at nulls, null_mask).

    Short strings are hashed row by row straight from the Arrow buffer (cheaper than
    finding the distinct values first); when the mean length passes
    ``_DEDUP_MIN_MEAN_BYTES`` the array is dictionary-encoded and only the distinct
    values are hashed.
    """
    arr = _to_arrow_binary(values)
    n = len(arr)
    null_mask = (np.asarray(arr.is_null(), dtype=bool) if arr.null_count
                 else np.zeros(n, dtype=bool))
    if n == 0:
        return np.zeros(0, dtype=np.uint32), null_mask
    offsets, data = _arrow_binary_buffers(arr)
    if int(offsets[-1] - offsets[0]) > _DEDUP_MIN_MEAN_BYTES * n:
        encoded = arr.dictionary_encode()
        logger.debug("murmur3_32: %d strings, %d distinct hashed", n, len(encoded.dictionary))
        d_offsets, d_data = _arrow_binary_buffers(encoded.dictionary)
        uniq_hashes = _hash_varwidth(d_offsets, d_data, seed)
        out = uniq_hashes[np.asarray(encoded.indices.fill_null(0))]
    else:
        out = _hash_varwidth(offsets, data, seed)
    if arr.null_count:
        out[null_mask] = 0
    return out, null_mask


# ---------------------------------------------------------------------------
# Dispatch
# ---------------------------------------------------------------------------

def _hash_with_mask(values: ArrayLike, seed: int) -> Tuple[np.ndarray, np.ndarray]:
    """Core dispatcher: returns (uint32 hashes with 0 at nulls, bool null mask)."""
    if isinstance(values, (list, tuple)):
        values = np.asarray(values, dtype=object) if any(isinstance(v, (str, bytes)) for v in values) \
            else np.asarray(values)
    if isinstance(values, (pd.Series, pd.Index)):
        values = values.array
    if isinstance(values, pd.arrays.NumpyExtensionArray):
        values = values.to_numpy()
    dtype = values.dtype
    n = len(values)

    if isinstance(dtype, pd.CategoricalDtype):
        cats_hash, _ = _hash_with_mask(pd.Index(dtype.categories), seed)
        codes = np.asarray(values.codes)
        null_mask = codes < 0
        out = cats_hash[np.where(null_mask, 0, codes)]
        out[null_mask] = 0
        return out, null_mask

    if isinstance(dtype, pd.ArrowDtype):
        pa_type = dtype.pyarrow_dtype
        if (pa.types.is_string(pa_type) or pa.types.is_large_string(pa_type)
                or pa.types.is_binary(pa_type) or pa.types.is_large_binary(pa_type)):
            return _hash_strings(values, seed)
        null_mask = np.asarray(values.isna())
        if pa.types.is_boolean(pa_type):
            data = values.to_numpy(dtype=bool, na_value=False)
        elif pa.types.is_integer(pa_type):
            data = values.to_numpy(dtype=np.int64, na_value=0)
        elif pa.types.is_floating(pa_type):
            data = values.to_numpy(dtype=np.float64, na_value=0.0)
        elif pa.types.is_timestamp(pa_type) or pa.types.is_duration(pa_type):
            data = pa.array(values).cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        else:
            raise TypeError(f"murmur3_32 does not support Arrow type {pa_type}")
        out, _ = _hash_with_mask(data, seed)
        out[null_mask] = 0
        return out, null_mask

    if isinstance(dtype, np.dtype) and dtype.kind == "O":
        inferred = pd.api.types.infer_dtype(values, skipna=True)
        if inferred in ("string", "bytes", "empty"):
            return _hash_strings(values, seed)
        target = {"integer": "Int64", "floating": "Float64", "mixed-integer-float": "Float64",
                  "decimal": "Float64", "boolean": "boolean"}.get(inferred)
        if target is None:
            raise TypeError(f"cannot hash object values of inferred type {inferred!r}; "
                            "expected all str, all bytes, or all numbers")
        return _hash_with_mask(pd.array(values, dtype=target), seed)

    if isinstance(dtype, pd.StringDtype) or (isinstance(dtype, np.dtype) and dtype.kind in "US"):
        return _hash_strings(values, seed)

    if isinstance(dtype, pd.api.extensions.ExtensionDtype) and not isinstance(dtype, np.dtype):
        # Masked nullable dtypes (Int64, Float64, boolean, ...) and datetime-tz.
        null_mask = np.asarray(pd.isna(values))
        kind = getattr(dtype, "kind", "O")
        if kind in "iu":
            data = values.to_numpy(dtype=np.int64, na_value=0)
        elif kind == "f":
            data = values.to_numpy(dtype=np.float64, na_value=0.0)
        elif kind == "b":
            data = values.to_numpy(dtype=bool, na_value=False)
        elif kind in "mM":
            data = np.asarray(values.asi8 if hasattr(values, "asi8") else values.view("i8"))
        else:
            raise TypeError(f"murmur3_32 does not support dtype {dtype}")
        out, _ = _hash_with_mask(data, seed)
        out[null_mask] = 0
        return out, null_mask

    arr = np.asarray(values)
    kind = arr.dtype.kind
    if kind in "iu":
        return _hash_int64(arr.astype(np.int64, copy=False), seed), np.zeros(n, dtype=bool)
    if kind == "f":
        return _hash_float64(arr, seed), np.zeros(n, dtype=bool)
    if kind == "b":
        return _hash_u8(arr.view(np.uint8), seed), np.zeros(n, dtype=bool)
    if kind in "mM":
        null_mask = np.isnat(arr)
        out = _hash_int64(arr.view(np.int64), seed)
        out[null_mask] = 0
        return out, null_mask
    raise TypeError(f"murmur3_32 does not support dtype {arr.dtype}")


def murmur3_32(values: ArrayLike, seed: int = 0) -> np.ndarray:
    """MurmurHash3_x86_32 of every value, as libcudf hashes one element.

    Args:
        values: 1-d numpy array, pandas Series/Index/ExtensionArray, or list of
            integers (any width; hashed as int64), floats (hashed as float64 with
            ``-0.0 -> 0.0`` and canonical NaN), bools (1 byte), strings (UTF-8
            bytes; ``object``, pandas ``string``/``str``, or numpy ``U``), bytes,
            datetime64/timedelta64 (int64 count) or categoricals (category value).
        seed: MurmurHash3 seed, an unsigned 32-bit integer (default 0).

    Returns:
        ``np.ndarray`` of ``uint32``, same length as ``values``; equal to
        ``mmh3.hash(canonical_bytes(value), seed, signed=False)``. Nulls (None,
        pd.NA, NaT, masked entries) give ``0``; callers handle nulls themselves.
        An empty input gives an empty array.

    Raises:
        ValueError: ``seed`` outside ``[0, 2**32)``.
        TypeError: unsupported dtype, or an object array mixing strings with
            non-strings.

    Note:
        This is the *element* hash, what a one-column
        ``cudf.Series.hash_values(method="murmur3")`` returns on cuDF 26.10.
    """
    out, _ = _hash_with_mask(values, _check_seed(seed))
    return out
