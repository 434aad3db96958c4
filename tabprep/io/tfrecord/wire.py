"""Wire-level helpers shared by the TFRecord encoders: protobuf varints, TFRecord's masked
crc32c, and the per-record crc step of a block of framed records."""
from __future__ import annotations

import array
from typing import Any, Union

import numpy as np
from crc32c import crc32c

_CRC_MASK_DELTA = np.uint32(0xA282EAD8)
_U64 = np.uint64
# Lengths tables (:func:`_length_crcs`) are built over the range of a block's record
# lengths when it spans at most this many values; wider ranges use np.unique.
_LENGTH_RANGE_MAX = 4096
_U32_CODE = "I" if array.array("I").itemsize == 4 else "L"  # array.array typecode of uint32


def _varint_bytes(value: int) -> bytes:
    """Protobuf varint of one non-negative int (< 2**64)."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _varint_len(values: np.ndarray, dtype: Any = np.int64) -> np.ndarray:
    """Varint byte lengths (1..10, ``dtype``) of uint64 ``values`` (any shape)."""
    lens = np.ones(values.shape, dtype=dtype)
    if values.size == 0:
        return lens
    vmax = int(values.max())
    for k in range(1, 10):
        threshold = 1 << (7 * k)
        if vmax < threshold:
            break
        np.add(lens, values >= _U64(threshold), out=lens, casting="unsafe")
    return lens


def _vlen(value: Union[int, np.ndarray]) -> Union[int, np.ndarray]:
    """Varint length of an int or of each element of an int64 array (non-negative)."""
    if isinstance(value, np.ndarray):
        return _varint_len(value.astype(np.uint64, copy=False))
    return len(_varint_bytes(int(value)))


def _masked_crc(crcs: np.ndarray) -> np.ndarray:
    """TFRecord's masked crc32c of an array of crc32c values (uint32)."""
    crcs = crcs.astype(np.uint32, copy=False)
    return (((crcs >> np.uint32(15)) | (crcs << np.uint32(17))) + _CRC_MASK_DELTA).astype(np.uint32)


def _masked_crc_one(data: Any) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _length_crcs(lengths: np.ndarray) -> np.ndarray:
    """Masked crc32c (uint32) of each record's 8-byte little-endian length.

    One crc32c call per distinct length: a table over ``[min, max]`` when that range is
    narrow (records of one layout differ by a few varint bytes), np.unique otherwise.
    """
    if lengths.size == 0:
        return np.zeros(0, dtype="<u4")
    lo, hi = int(lengths.min()), int(lengths.max())
    if hi - lo < _LENGTH_RANGE_MAX:
        table = np.array([_masked_crc_one(v.to_bytes(8, "little")) for v in range(lo, hi + 1)], dtype="<u4")
        return table[lengths - lo]
    uniq, inverse = np.unique(lengths, return_inverse=True)
    table = np.array([_masked_crc_one(int(v).to_bytes(8, "little")) for v in uniq.tolist()], dtype="<u4")
    return table[inverse.reshape(-1)]


def _fill_data_crcs(flat: np.ndarray, offsets: np.ndarray) -> None:
    """Write each framed record's data crc (its last 4 bytes) in place.

    ``flat`` holds whole records (8-byte length, 4-byte length crc, data, 4 bytes to
    fill), record ``i`` at ``flat[offsets[i]:offsets[i + 1]]``.

    crc32c has no batch API, so this is one call per record: with a list comprehension
    over memoryview slices it costs ~0.3 us per ~700-byte record here (crc32c's own
    hardware crc takes ~0.03 us of that; np.fromiter over a generator ~0.35 us,
    ``map`` over slice objects ~0.34 us). A numpy crc over many records at once
    (slicing-by-N across rows, or GF(2) shifts per segment) needs several numpy ops
    per byte or segment and measured slower.
    """
    n = offsets.size - 1
    if n == 0:
        return
    view = memoryview(flat)
    starts = (offsets[:-1] + 12).tolist()
    ends = (offsets[1:] - 4).tolist()
    # array.array takes a list of ints ~2x faster than np.array(list, dtype=uint32)
    crcs = np.frombuffer(array.array(_U32_CODE, [crc32c(view[a:b]) for a, b in zip(starts, ends)]), dtype=np.uint32)
    view.release()
    # 4-byte windows at every byte position: one fancy assignment writes all trailers
    windows = np.lib.stride_tricks.as_strided(flat, shape=(flat.size - 3, 4), strides=(1, 1))
    windows[offsets[1:] - 4] = _masked_crc(crcs).astype("<u4").view(np.uint8).reshape(n, 4)
