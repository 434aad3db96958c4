"""The value hash of HashBucket / HashedCross / Categorify's OOV buckets, for serving.

Exactly what ``tabprep.backend.murmur3`` hashes offline (see :mod:`tabprep.hashing`):
ints and bools as their int64 little-endian bytes, floats as float64 bytes (``-0.0`` as
``0.0``), strings as UTF-8; nulls (None, and NaN in float columns) hash to 0.

:func:`hash_batch` runs the vectorized :func:`tabprep.hashing.murmur3_32` on a column's
values; :func:`hash_scalar` is a plain-Python MurmurHash3_x86_32 of one value, cheaper than
any numpy call for the one-row path.
"""
from __future__ import annotations

import struct
from typing import Any, Optional

import numpy as np

from ..hashing import murmur3_32

_M = 0xFFFFFFFF
_C1, _C2 = 0xCC9E2D51, 0x1B873593
_PACK_Q = struct.Struct("<q").pack
_PACK_D = struct.Struct("<d").pack
_UNPACK_II = struct.Struct("<II").unpack


def _fmix(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M
    return h ^ (h >> 16)


def _block(h: int, k: int) -> int:
    k = (k * _C1) & _M
    k = ((k << 15) | (k >> 17)) & _M
    k = (k * _C2) & _M
    h ^= k
    h = ((h << 13) | (h >> 19)) & _M
    return (h * 5 + 0xE6546B64) & _M


def murmur3_bytes(data: bytes, seed: int = 0) -> int:
    """MurmurHash3_x86_32 of ``data`` (equal to ``mmh3.hash(data, seed, signed=False)``)."""
    n = len(data)
    h = seed
    nblocks = n >> 2
    for (k,) in struct.iter_unpack("<I", data[:4 * nblocks]):
        h = _block(h, k)
    tail = data[4 * nblocks:]
    if tail:
        k = int.from_bytes(tail, "little")
        k = (k * _C1) & _M
        k = ((k << 15) | (k >> 17)) & _M
        k = (k * _C2) & _M
        h ^= k
    return _fmix(h ^ n)


def _hash8(b: bytes) -> int:
    lo, hi = _UNPACK_II(b)
    return _fmix(_block(_block(0, lo), hi) ^ 8)


def hash_scalar(v: Any, kind: str) -> int:
    """The hash of one value of a column of ``kind`` (``"i"``, ``"b"``, ``"f"``, ``"s"``); 0 for null."""
    if v is None:
        return 0
    if kind in "ib":
        return _hash8(_PACK_Q(int(v)))
    if kind == "f":
        if v != v:  # NaN is null in a float column
            return 0
        return _hash8(_PACK_D(0.0 if v == 0.0 else v))
    return murmur3_bytes(v.encode("utf-8") if isinstance(v, str) else bytes(v))


def hash_batch(values: np.ndarray, mask: Optional[np.ndarray], kind: str) -> np.ndarray:
    """uint32 hashes of a column's values (nulls -> 0)."""
    if kind in "ib":
        h = murmur3_32(values.astype(np.int64, copy=False))
        if mask is not None:
            h[mask] = 0
        return h
    if kind == "f":
        x = values.astype(np.float64, copy=False)
        nan = np.isnan(x)
        h = murmur3_32(x)
        h[nan] = 0
        return h
    nulls = np.fromiter((v is None for v in values.tolist()), dtype=bool, count=len(values))
    h = murmur3_32(np.where(nulls, "", values).astype(object) if nulls.any() else values)
    h[nulls] = 0
    return h


def combine_scalar(hashes: Any) -> int:
    """Boost ``hash_combine`` fold of uint32 hashes, starting from 0 (HashedCross)."""
    h = 0
    for k in hashes:
        h = h ^ ((k + 0x9E3779B9 + ((h << 6) & _M) + (h >> 2)) & _M)
    return h


__all__ = ["murmur3_bytes", "hash_scalar", "hash_batch", "combine_scalar"]
