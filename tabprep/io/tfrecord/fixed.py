"""Per-example records of a fixed layout, encoded a block of rows at a time from one byte
template (numpy + one arrow filter; Python runs per block and per column, not per row).

Applies when every column is a scalar int64 or float32 feature (the Criteo shape: label,
dense floats, categorical ids) on a little-endian machine; anything else (lists,
strings) goes to the generic encoder of :mod:`.encoder`. Such records differ only in
their values and in the lengths of the int varints (and of the lengths that contain
them), so one padded row layout serves every row of a block:

* a ``(n, W)`` uint8 matrix holds the template (all constant bytes: tags, keys, float
  headers), W a multiple of 8. It is kept per thread from block to block (:class:`_Work`)
  so the constant bytes are written once, not per block;
* float values land by one uint32 column write each (their slots are 4-aligned);
* int columns get an 8-byte-aligned varint slot (16 bytes if some value needs more than 8
  varint bytes: negatives, >= 2**56) preceded by their header right-aligned in whole
  words. A header's bytes are ``const + L`` or constant (L = the varint's length; checked
  per key, else the generic encoder is used), so its words depend on L only. Values in
  ``[0, 2**28)`` (ids, labels: the common case) take :func:`_small_run`: varints by two
  lookups on 14-bit halves, L by counting continuation bits, the slot's header words by
  one lookup on (column, L); others take :func:`_write_ints` (7-bit groups spread by
  shifts, header words ``base + L * mult``);
* a packed bit mask (one byte per word: the varint slot's byte is ``(1 << L) - 1``)
  marks the bytes that belong to the record, and ``pyarrow.compute.filter`` compacts the
  matrix into the framed records in one pass;
* record lengths are sums of the varint lengths; crcs as in :mod:`.wire`.

The bytes equal the generic encoder's for every input (tests compare both, and both with
TF's own serialization).

Measured on the 2-core development machine (shared, so minimum CPU time of repeated
runs), 8192-16384 rows of 1 label + 13 float32 + 26 int64 ids (~720 bytes per record),
per row: compacting the padded matrix with a numpy boolean mask 650-700 ns, with
``pyarrow.compute.filter`` ~280 ns (binary_view -> binary cast with one view per segment
~620 ns, list_view flatten ~8.7 us); the int section ~760 ns with the shift/multiply
passes, ~500 ns with the lookups of :func:`_small_run`; writing each header word as
``base + L * mult`` into the slots 2 x ~55 ns against one 16-byte lookup + copy ~70 ns.
Fresh multi-megabyte temporaries cost more than the passes that fill them (page faults,
~0.2-0.6 us per row in all), hence the per-thread work arrays.
"""
from __future__ import annotations

import functools
import sys
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .wire import (_SMALL_HIGH, _SMALL_LOW, _SMALL_MAX, _U64, _fill_data_crcs, _filter_bytes, _length_crcs,
                   _varint_bytes, _varint_len)

if TYPE_CHECKING:  # pragma: no cover
    from .encoder import _Column

_MAX_LEN = 10  # longest varint
# varint word tables indexed by the varint's length L (0..10): continuation bits of the
# low word (bytes 0..7) and the high word (bytes 8..9), and keep-mask bytes of each.
_CONT_LO = np.array([sum(0x80 << (8 * b) for b in range(min(max(L - 1, 0), 8))) for L in range(11)], dtype=_U64)
_CONT_HI = np.array([0x80 if L == 10 else 0 for L in range(11)], dtype=_U64)
_KEEP_LO = np.array([(1 << min(L, 8)) - 1 for L in range(11)], dtype=np.uint8)
_KEEP_HI = np.array([(1 << max(L - 8, 0)) - 1 for L in range(11)], dtype=np.uint8)


# --------------------------------------------------------------------------------------
# per-column headers
# --------------------------------------------------------------------------------------
def _entry_head(key: bytes, feature_len: int) -> bytes:
    """``features`` map-entry bytes before the Feature's content (tag, entry length,
    key field, value tag, feature length)."""
    body = b"\x0a" + _varint_bytes(len(key)) + key + b"\x12" + _varint_bytes(feature_len)
    return b"\x0a" + _varint_bytes(len(body) + feature_len) + body


def _float_header(key: bytes) -> bytes:
    """Bytes of a scalar float entry before its 4 value bytes."""
    return _entry_head(key, 8) + b"\x12\x06\x0a\x04"


def _int_header(key: bytes, length: int) -> bytes:
    """Bytes of a scalar int entry before its varint of ``length`` bytes."""
    inner = b"\x0a" + _varint_bytes(length)
    list_len = len(inner) + length
    content = b"\x1a" + _varint_bytes(list_len) + inner
    return _entry_head(key, len(content) + length) + content


@functools.lru_cache(maxsize=1024)
def _int_header_linear(key: bytes) -> Tuple[int, int, bytes, bytes]:
    """``(max_len, size, base, mult)``: for varint lengths ``1..max_len`` the header has
    ``size`` bytes equal to ``base + L * mult`` (bytewise, mult 0/1); max_len 0 if not
    even for L = 1..2."""
    first = _int_header(key, 1)
    second = _int_header(key, 2)
    if len(second) != len(first):
        return 0, len(first), b"", b""
    mult = bytes(b - a for a, b in zip(first, second))
    if any(m not in (0, 1) for m in mult):
        return 0, len(first), b"", b""
    base = bytes(a - m for a, m in zip(first, mult))
    max_len = 2
    for length in range(3, _MAX_LEN + 1):
        head = _int_header(key, length)
        if len(head) != len(first) or any(h != b + length * m for h, b, m in zip(head, base, mult)):
            break
        max_len = length
    return max_len, len(first), base, mult


# --------------------------------------------------------------------------------------
# the padded row layout
# --------------------------------------------------------------------------------------
@dataclass
class _IntRun:
    """Consecutive int columns ``ints[start:stop]`` laid out as ``(stop - start)`` slots of
    ``slot`` words from word ``word``: ``head`` header words, then the varint word(s)."""

    start: int
    stop: int
    word: int
    slot: int
    head: int
    wide: bool
    base: np.ndarray  # (head, m) int64 (the header words' bits)
    mult: np.ndarray  # (head, m) int64
    _small: Optional[Tuple[np.ndarray, np.ndarray, np.ndarray]] = None

    def small_tables(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """By ``4 * column + L - 1`` for varint lengths L = 1..4: the slot's header words
        as one ``V(8 * head)`` item each, and its varint keep byte; and ``4 * column``."""
        if self._small is None:
            count = self.stop - self.start
            lens = np.arange(1, 5, dtype=np.int64)
            heads = self.base.T[:, None, :] + lens[None, :, None] * self.mult.T[:, None, :]  # (m, 4, head)
            heads = np.ascontiguousarray(heads).view(f"V{8 * self.head}").reshape(-1)
            keeps = np.tile(_KEEP_LO[1:5], count)
            self._small = heads, keeps, 4 * np.arange(count, dtype=np.intp)
        return self._small


@dataclass
class _Layout:
    width: int  # bytes per padded row (multiple of 8)
    template: np.ndarray  # (width,) uint8
    keep: np.ndarray  # (width // 8,) uint8, packed little-endian bits
    floats: List[Tuple[int, int]]  # (column index, uint32 column of the value)
    runs: List[_IntRun]
    features_const: int  # features length without the int varints


def _put(buf: bytearray, keep: bytearray, pos: int, data: bytes) -> None:
    buf[pos:pos + len(data)] = data
    for p in range(pos, pos + len(data)):
        keep[p >> 3] |= 1 << (p & 7)


@functools.lru_cache(maxsize=64)
def _layout(keys: Tuple[bytes, ...], kinds: Tuple[str, ...], wide: Tuple[bool, ...]) -> _Layout:
    """The padded row of records with these columns; ``wide[j]``: the j-th int column
    needs a 16-byte varint slot."""
    buf, keep = bytearray(), bytearray()

    def grow(size: int) -> None:
        size = -(-size // 8) * 8
        buf.extend(bytes(size - len(buf)))
        keep.extend(bytes(size // 8 - len(keep)))

    # framing: data length (word 0), its crc (bytes 8..11), 0x0a (byte 15), features
    # length varint (word 2, kept bytes set per row)
    grow(24)
    for p in range(12):
        keep[p >> 3] |= 1 << (p & 7)
    _put(buf, keep, 15, b"\x0a")
    pos = 24
    features_const = 0
    floats: List[Tuple[int, int]] = []
    runs: List[_IntRun] = []
    run: Optional[dict] = None
    n_int = 0
    for j, (key, kind) in enumerate(zip(keys, kinds)):
        if kind == "float32":
            run = None
            head = _float_header(key)
            pos += -(pos + len(head)) % 4
            grow(pos + len(head) + 4)
            _put(buf, keep, pos, head + bytes(4))
            floats.append((j, (pos + len(head)) // 4))
            pos += len(head) + 4
            features_const += len(head) + 4
            continue
        _, size, base, mult = _int_header_linear(key)
        head_words = -(-size // 8)
        is_wide = wide[n_int]
        if run is None or run["head"] != head_words or run["wide"] != is_wide:
            run = {"start": n_int, "word": -(-pos // 8), "head": head_words, "wide": is_wide, "base": [], "mult": []}
            runs.append(run)  # type: ignore[arg-type]
        slot = head_words + (2 if is_wide else 1)
        word = run["word"] + (n_int - run["start"]) * slot
        pad = head_words * 8 - size
        run["base"].append(np.frombuffer(bytes(pad) + base, dtype="<u8"))
        run["mult"].append(np.frombuffer(bytes(pad) + mult, dtype="<u8"))
        grow((word + slot) * 8)
        for p in range(word * 8 + pad, (word + head_words) * 8):
            keep[p >> 3] |= 1 << (p & 7)
        pos = (word + slot) * 8
        features_const += size
        n_int += 1
    grow(pos + 4)  # the data crc: 4 bytes filled after compaction
    for p in range(pos, pos + 4):
        keep[p >> 3] |= 1 << (p & 7)
    int_runs = [_IntRun(r["start"], r["start"] + len(r["base"]), r["word"], r["head"] + (2 if r["wide"] else 1),
                        r["head"], r["wide"], np.ascontiguousarray(np.stack(r["base"]).view(np.int64).T),
                        np.ascontiguousarray(np.stack(r["mult"]).view(np.int64).T))
                for r in runs]  # type: ignore[index]
    return _Layout(len(buf), np.frombuffer(bytes(buf), dtype=np.uint8), np.frombuffer(bytes(keep), dtype=np.uint8),
                   floats, int_runs, features_const)


# --------------------------------------------------------------------------------------
# encoding
# --------------------------------------------------------------------------------------
class _Work(threading.local):
    """Arrays this thread reuses from block to block.

    Fresh multi-megabyte numpy temporaries are page-faulted in on every block (glibc
    serves them with mmap), which measured ~0.2-0.6 us per row here; so every (n, ints)
    work array lives here, and the padded matrix and keep mask of the last layout too:
    their constant bytes and bits stay in place from block to block (every variable
    byte and mask byte is rewritten per block). Holds a few times the block's padded
    matrix (about 10-30 MB with the sink's 8 MB block budget) per thread that wrote
    per-example records, until the thread ends.
    """

    def __init__(self) -> None:
        self.layout: Optional[_Layout] = None
        self.mat = np.empty((0, 8), dtype=np.uint8)
        self.keep = np.empty((0, 1), dtype=np.uint8)
        self.arrays: Dict[str, np.ndarray] = {}

    def array(self, name: str, shape: Tuple[int, ...], dtype: Any) -> np.ndarray:
        size = int(np.prod(shape))
        buf = self.arrays.get(name)
        if buf is None or buf.size < size or buf.dtype != dtype:
            buf = self.arrays[name] = np.empty(size, dtype=dtype)
        return buf[:size].reshape(shape)

    def padded(self, layout: _Layout, n: int) -> Tuple[np.ndarray, np.ndarray]:
        """The padded matrix and keep mask of ``n`` rows, template already in place."""
        if self.layout is not layout or self.mat.shape[0] < n:
            self.layout = None
            self.mat = np.empty((n, layout.width), dtype=np.uint8)
            self.mat[:] = layout.template
            self.keep = np.empty((n, layout.width // 8), dtype=np.uint8)
            self.keep[:] = layout.keep
            self.layout = layout
        return self.mat[:n], self.keep[:n]


_WORK = _Work()


# varint length by the biased exponent of float64(value): exact for values < 2**53
_LEN_BY_EXPONENT = np.array([1 if e < 1023 else max(1, -(-(e - 1022) // 7)) for e in range(2048)], dtype=np.intp)


def _varint_lens(values: np.ndarray, max_len: int, work: _Work) -> np.ndarray:
    """Varint lengths (intp, shape of ``values``) of uint64 ``values`` whose longest is
    ``max_len``: by a table on float64 exponents below 2**53 (3 passes), else by
    comparing with each power of 2**7 (2 passes per length)."""
    lens = work.array("lens", values.shape, np.intp)
    if max_len < 8:  # values < 2**49
        as_float = work.array("float", values.shape, np.float64)
        np.copyto(as_float, values, casting="unsafe")
        exponent = as_float.view(np.int64)
        np.right_shift(exponent, 52, out=exponent)
        np.take(_LEN_BY_EXPONENT, exponent, out=lens, mode="clip")
        return lens
    lens.fill(1)
    ge = work.array("ge", values.shape, np.bool_)
    for k in range(1, max_len):
        np.greater_equal(values, _U64(1 << (7 * k)), out=ge)
        np.add(lens, ge, out=lens, casting="unsafe")
    return lens


def _spread_varints(values: np.ndarray, max_len: int, work: _Work) -> Optional[np.ndarray]:
    """Turn uint64 ``values`` in place into the low words of their varints without
    continuation bits (7-bit group k in byte k, k < 8); returns the high words
    (groups 8, 9) if ``max_len`` > 8, before they are shifted out."""
    high = None
    tmp = work.array("tmp", values.shape, _U64)
    if max_len > 8:
        high = work.array("high", values.shape, _U64)
        np.right_shift(values, _U64(56), out=high)
        np.bitwise_and(high, _U64(0x7F), out=high)
        np.right_shift(values, _U64(63), out=tmp)
        np.left_shift(tmp, _U64(8), out=tmp)
        np.bitwise_or(high, tmp, out=high)
    for k in range(min(max_len, 8) - 1):
        # v + (v & ~low_bits) shifts everything above group k (bits > 8k+6) up by one
        np.bitwise_and(values, _U64(~((1 << (8 * k + 7)) - 1) & 0xFFFFFFFFFFFFFFFF), out=tmp)
        np.add(values, tmp, out=values)
    if max_len >= 8:
        np.bitwise_and(values, _U64(0x7F7F7F7F7F7F7F7F), out=values)  # bit 63 went to the high word
    return high


def _strided(arr: np.ndarray, first: int, count: int, slot: int) -> np.ndarray:
    """``(rows, count, slot)`` view of columns ``first .. first + count * slot`` of a 2-D array."""
    rows, item = arr.shape[0], arr.strides[1]
    return np.lib.stride_tricks.as_strided(arr[:, first:], shape=(rows, count, slot),
                                           strides=(arr.strides[0], slot * item, item))


def _stack_ints(int_cols: Sequence["_Column"], n: int, work: _Work) -> np.ndarray:
    """The int columns side by side, ``(n, ints)`` uint64 (two's complement)."""
    ints = work.array("ints", (n, len(int_cols)), _U64)
    for j, col in enumerate(int_cols):
        ints[:, j] = col.flat.values.view(_U64)
    return ints


def _write_small_ints(int_cols: Sequence["_Column"], layout_of: Any, n: int, work: _Work) -> Optional[tuple]:
    """:func:`_write_ints` for int columns whose values are all in ``[0, 2**28)`` (ids,
    labels): varints by two table lookups on 14-bit halves, lengths by counting their
    continuation bits, a slot's header words by one lookup on (column, length); ~14
    passes over each run's contiguous ``(rows, ints)`` block instead of 19 (processing
    it in row chunks of 512..4096 to stay in cache measured no faster). None if a value
    is out of range (the padded matrix may then hold some of this block's bytes: the
    caller rewrites every variable byte)."""
    if any(_int_header_linear(c.key)[0] < 4 for c in int_cols):
        return None
    layout = layout_of((False,) * len(int_cols))
    mat, keep = work.padded(layout, n)
    total = np.zeros(n, dtype=np.int64)
    for run in layout.runs:
        values = [c.flat.values for c in int_cols[run.start:run.stop]]
        if not _small_run(run, values, mat, keep, total, work):
            return None
    return layout, total


def _small_run(run: _IntRun, values: List[np.ndarray], mat: np.ndarray, keep: np.ndarray, total: np.ndarray,
               work: _Work) -> bool:
    """Write one run's slots for the rows of ``mat``; adds the varint lengths to
    ``total``. False if a value is out of ``[0, 2**28)``."""
    n, count = mat.shape[0], len(values)
    ints = work.array("ints", (n, count), _U64)
    for j, column in enumerate(values):
        ints[:, j] = column.view(_U64)
    if int(ints.max()) >= _SMALL_MAX:
        return False  # (negative int64 values are >= 2**63 as uint64)
    half = work.array("half", (n, count), _U64)
    varints = work.array("v32", (n, count), np.uint32)
    tmp = work.array("t32", (n, count), np.uint32)
    np.bitwise_and(ints, _U64(0x3FFF), out=half)
    np.take(_SMALL_LOW, half.view(np.intp), out=varints, mode="clip")
    np.right_shift(ints, _U64(14), out=half)
    np.take(_SMALL_HIGH, half.view(np.intp), out=tmp, mode="clip")
    np.bitwise_or(varints, tmp, out=varints)
    np.bitwise_and(varints, np.uint32(0x808080), out=tmp)
    lens = work.array("lm1", (n, count), np.uint8)  # varint length - 1: continuation bits
    if hasattr(np, "bitwise_count"):
        np.bitwise_count(tmp, out=lens)
    else:  # numpy < 2: they are set from byte 0 up
        np.copyto(lens, tmp != 0, casting="unsafe")
        np.add(lens, (tmp & np.uint32(0x8080)) == 0x8080, out=lens, casting="unsafe")
        np.add(lens, tmp == 0x808080, out=lens, casting="unsafe")
    total += lens.sum(axis=1, dtype=np.int64)
    total += count
    heads_table, keep_table, offsets = run.small_tables()
    index = work.array("index", (n, count), np.intp)
    np.add(lens, offsets, out=index, casting="unsafe")
    # header words: one lookup of all of a slot's header words (a V16 item), then one
    # strided copy into the slots (2 passes; base + L * mult per word took 4)
    heads = work.array("heads_v", (n, count), heads_table.dtype)
    np.take(heads_table, index, out=heads, mode="clip")
    np.copyto(_strided_items(mat, run.word * 8, heads.dtype, count, run.slot * 8), heads)
    # the varint's 4 bytes; the slot's other 4 are masked off
    np.copyto(_strided(mat.view(np.uint32), 2 * run.word, count, 2 * run.slot)[:, :, 2 * run.head], varints)
    run_keep = tmp.view(np.uint8)[:, :count]  # (n, count) view of free scratch
    np.take(keep_table, index, out=run_keep, mode="clip")
    np.copyto(_strided(keep, run.word, count, run.slot)[:, :, run.head], run_keep)
    return True


def _strided_items(mat: np.ndarray, first: int, dtype: Any, count: int, step: int) -> np.ndarray:
    """``(rows, count)`` view of ``mat`` (uint8 rows) as items of ``dtype`` starting at
    byte ``first`` of each row, ``step`` bytes apart."""
    items = mat[:, first:first + dtype.itemsize].view(dtype)
    return np.lib.stride_tricks.as_strided(items, shape=(mat.shape[0], count), strides=(mat.strides[0], step))


def _write_ints(ints: np.ndarray, int_cols: Sequence["_Column"], layout_of: Any, work: _Work) -> Optional[tuple]:
    """Find the varint lengths of the stacked ``ints`` and the layout (None if a key's
    header is not linear up to its column's longest varint); returns
    ``(layout, sum of the varint lengths per row)`` after writing header words, varint
    words and keep bytes into the padded matrix. Overwrites ``ints``."""
    n = ints.shape[0]
    max_len = len(_varint_bytes(int(ints.max())))
    col_lens = [max_len] * len(int_cols)
    if max_len > 8 or any(_int_header_linear(c.key)[0] < max_len for c in int_cols):
        col_lens = [len(_varint_bytes(v)) for v in ints.max(axis=0).tolist()]
        if any(_int_header_linear(c.key)[0] < m for c, m in zip(int_cols, col_lens)):
            return None
    layout = layout_of(tuple(m > 8 for m in col_lens))
    mat, keep = work.padded(layout, n)
    words = mat.view(np.int64)
    lens = _varint_lens(ints, max_len, work)
    high = _spread_varints(ints, max_len, work)
    cont = work.array("tmp", lens.shape, _U64)
    np.take(_CONT_LO, lens, out=cont, mode="clip")
    if high is not None:
        cont_high = work.array("cont_high", lens.shape, _U64)
        np.take(_CONT_HI, lens, out=cont_high, mode="clip")
    heads = work.array("heads", lens.shape, np.int64)
    for run in layout.runs:
        m = run.stop - run.start
        run_lens, run_heads = lens[:, run.start:run.stop], heads[:, :m]
        sec = _strided(words, run.word, m, run.slot)
        for k in range(run.head):  # header words: base + L * mult (int64 arithmetic wraps as uint64)
            np.multiply(run_lens, run.mult[k], out=run_heads)
            np.add(run_heads, run.base[k], out=sec[:, :, k])
        np.bitwise_or(ints[:, run.start:run.stop], cont[:, run.start:run.stop], out=sec[:, :, run.head].view(_U64))
        keep_sec = _strided(keep, run.word, m, run.slot)
        np.take(_KEEP_LO, run_lens, out=keep_sec[:, :, run.head], mode="clip")
        if run.wide:
            assert high is not None
            np.bitwise_or(high[:, run.start:run.stop], cont_high[:, run.start:run.stop],
                          out=sec[:, :, run.head + 1].view(_U64))
            np.take(_KEEP_HI, run_lens, out=keep_sec[:, :, run.head + 1], mode="clip")
    return layout, lens.sum(axis=1)


def encode_fixed(cols: Sequence["_Column"], n: int) -> Optional[Tuple[np.ndarray, np.ndarray]]:
    """Framed per-example records of ``n`` rows, or None if the columns are not all scalar
    int64/float32 (or a key's header is not linear in the varint length).

    Returns:
        ``(uint8 bytes, record offsets int64 (n+1,))`` as the generic encoder.
    """
    if n == 0 or sys.byteorder != "little" or not cols:
        return None
    if any(c.row_offsets is not None or c.flat.kind not in ("int64", "float32") for c in cols):
        return None
    work = _WORK
    keys, kinds = tuple(c.key for c in cols), tuple(c.flat.kind for c in cols)
    int_cols = [c for c in cols if c.flat.kind == "int64"]
    if int_cols:
        layout_of = lambda wide: _layout(keys, kinds, wide)  # noqa: E731
        found = (_write_small_ints(int_cols, layout_of, n, work)
                 or _write_ints(_stack_ints(int_cols, n, work), int_cols, layout_of, work))
        if found is None:
            return None
        layout, features_len = found
        mat, keep = work.padded(layout, n)
    else:
        layout = _layout(keys, kinds, ())
        mat, keep = work.padded(layout, n)
        features_len = np.zeros(n, dtype=np.int64)
    features_len += layout.features_const
    words, quads = mat.view(_U64), mat.view(np.uint32)
    for j, col_u32 in layout.floats:
        quads[:, col_u32] = np.ascontiguousarray(cols[j].flat.values, dtype="<f4").view(np.uint32)
    fl_u64 = features_len.astype(_U64)
    fl_lens = _varint_len(fl_u64, dtype=np.intp)
    low = words[:, 2]
    np.bitwise_and(fl_u64, _U64(0x7F), out=low)
    for k in range(1, int(fl_lens.max())):
        low |= (fl_u64 << _U64(k)) & _U64(0x7F << (8 * k))
    low |= np.take(_CONT_LO, fl_lens)
    np.take(_KEEP_LO, fl_lens, out=keep[:, 2], mode="clip")
    data_len = features_len
    data_len += fl_lens + 1
    words[:, 0] = data_len
    quads[:, 2] = _length_crcs(data_len)
    offsets = np.empty(n + 1, dtype=np.int64)
    offsets[0] = 0
    np.cumsum(data_len, out=offsets[1:])
    offsets[1:] += np.arange(16, 16 * (n + 1), 16, dtype=np.int64)
    flat = _filter_bytes(mat, keep)
    assert flat.size == offsets[-1]
    _fill_data_crcs(flat, offsets)
    return flat, offsets
