"""Wire-level helpers shared by the TFRecord encoders: protobuf varints, TFRecord's masked
crc32c, and the per-record crc step of a block of framed records."""
from __future__ import annotations

import array
from typing import Any, Tuple, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from crc32c import crc32c

_CRC_MASK_DELTA = np.uint32(0xA282EAD8)
_U64 = np.uint64
# Lengths tables (:func:`_length_crcs`) are built over the range of a block's record
# lengths when it spans at most this many values; wider ranges use np.unique.
_LENGTH_RANGE_MAX = 4096
# below this many bytes numpy's boolean indexing beats pyarrow.compute.filter (call cost)
_ARROW_FILTER_MIN = 1 << 16
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


def _varint_matrix(values: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Varints of uint64 ``values`` as a ``(n, w)`` uint8 matrix (w = longest) + lengths.

    Row ``i`` holds the varint of ``values[i]`` in its first ``lens[i]`` bytes; bytes
    past that are zero-payload padding to be masked out.
    """
    lens = _varint_len(values)
    width = int(lens.max()) if values.size else 1
    mat = np.empty((values.size, width), dtype=np.uint8)
    for k in range(width):
        byte = (values >> _U64(7 * k)) if k else values
        mat[:, k] = (byte & _U64(0x7F)).astype(np.uint8)
        if k < width - 1:
            mat[:, k] |= (lens > k + 1).view(np.uint8) << 7
    return mat, lens


def _small_varint_tables() -> Tuple[np.ndarray, np.ndarray]:
    """Varints of values < 2**28 (at most 4 bytes) as ``low[v & 0x3FFF] | high[v >> 14]``
    (uint32, continuation bits included): byte 0 continues iff low >= 2**7 or high > 0,
    byte 1 iff high > 0, byte 2 iff high >= 2**7."""
    x = np.arange(1 << 14, dtype=np.uint32)
    spread = (x & 0x7F) | ((x & 0x3F80) << 1)
    low = spread | np.where(x >= 0x80, 0x80, 0).astype(np.uint32)
    high = ((spread << 16) | np.where(x > 0, 0x8080, 0).astype(np.uint32)
            | np.where(x >= 0x80, 0x800000, 0).astype(np.uint32))
    return low, high


_SMALL_LOW, _SMALL_HIGH = _small_varint_tables()
_SMALL_MAX = 1 << 28


def _small_varints(values: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Varints of uint64 ``values`` < 2**28 as uint32 words (continuation bits set) and
    their lengths (uint8): two table lookups and a count of continuation bits."""
    words = np.take(_SMALL_LOW, (values & _U64(0x3FFF)).view(np.int64))
    words |= np.take(_SMALL_HIGH, (values >> _U64(14)).view(np.int64))
    cont = words & np.uint32(0x808080)
    if hasattr(np, "bitwise_count"):
        lens = np.bitwise_count(cont)
    else:  # numpy < 2: continuation bits are set from byte 0 up
        lens = (cont != 0).astype(np.uint8) + ((cont & np.uint32(0x8080)) == 0x8080) + (cont == 0x808080)
    lens += 1
    return words, lens


def _compact_rows(mat: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """The first ``lens[i]`` bytes of each row of a C-contiguous ``(n, w)`` uint8 matrix,
    concatenated; ``w`` in 1, 2, 4, 8, 16 unless the matrix is small (numpy's mask).

    pyarrow.compute.filter with a packed mask: ~8 ns per 4-byte row here against ~25 ns
    for numpy's ``mat[arange(w) < lens[:, None]]`` (building that mask alone ~12 ns).
    """
    n, width = mat.shape
    if n == 0 or width == 1 or int(lens.min()) == width:
        return mat.reshape(-1)
    if mat.size < _ARROW_FILTER_MIN:
        return mat[np.arange(width) < lens[:, None]]
    field = (np.int64(1) << lens.astype(np.int64)) - 1  # row i's mask bits
    if width == 16:
        bits = field.astype("<u2").view(np.uint8)
    elif width == 8:
        bits = field.astype(np.uint8)
    else:  # 8 // width rows per mask byte
        per = 8 // width
        padded = np.zeros(-(-n // per) * per, dtype=np.uint8)
        padded[:n] = field
        parts = padded.reshape(-1, per)
        bits = parts[:, 0].copy()
        for k in range(1, per):
            bits |= parts[:, k] << np.uint8(width * k)
    return _filter_bytes(mat, bits)


def _filter_bytes(data: np.ndarray, bits: np.ndarray) -> np.ndarray:
    """The bytes of C-contiguous uint8 ``data`` whose bit is set in ``bits`` (packed,
    little-endian bit order: ``np.packbits(mask, bitorder="little")``), in order, by
    ``pyarrow.compute.filter`` (it copies whole runs of set bits; numpy's boolean indexing
    measured 2-3x slower on record-shaped masks). The result is writable."""
    size = data.size
    if size < _ARROW_FILTER_MIN:  # arrow's per-call cost (~30 us) outweighs its speed
        return data.reshape(-1)[np.unpackbits(bits, count=size, bitorder="little").view(np.bool_)]
    values = pa.Array.from_buffers(pa.uint8(), size, [None, pa.py_buffer(data)])
    mask = pa.Array.from_buffers(pa.bool_(), size, [None, pa.py_buffer(bits)])
    kept = pc.filter(values, mask)
    out = np.frombuffer(kept.buffers()[1], dtype=np.uint8, count=len(kept), offset=kept.offset)
    return out if out.flags.writeable else out.copy()


def _varint_stream(values: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Concatenated varints of int64/uint64 ``values`` (two's complement for negatives)
    and their lengths (int64)."""
    u = values.view(_U64) if values.dtype == np.int64 else values.astype(_U64, copy=False)
    n = u.size
    if n == 0:
        return np.zeros(0, dtype=np.uint8), np.zeros(0, dtype=np.int64)
    vmax = int(u.max())
    if vmax < 0x80:
        return u.astype(np.uint8), np.ones(n, dtype=np.int64)
    if vmax < _SMALL_MAX:
        words, lens = _small_varints(u)
        return _compact_rows(words.view(np.uint8).reshape(n, 4), lens), lens.astype(np.int64)
    mat, lens = _varint_matrix(u)
    if mat.size < _ARROW_FILTER_MIN:  # numpy's mask on the unpadded matrix
        return _compact_rows(mat, lens), lens
    width = 8 if mat.shape[1] <= 8 else 16
    if mat.shape[1] != width:
        wide = np.zeros((n, width), dtype=np.uint8)
        wide[:, :mat.shape[1]] = mat
        mat = wide
    return _compact_rows(mat, lens), lens


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
    narrow against the count (records of one layout differ by a few varint bytes),
    np.unique otherwise.
    """
    if lengths.size == 0:
        return np.zeros(0, dtype="<u4")
    lo, hi = int(lengths.min()), int(lengths.max())
    if hi - lo < min(_LENGTH_RANGE_MAX, lengths.size // 4):
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
