"""Vectorized ``tf.train.Example`` protobuf encoding (numpy, no TensorFlow): arrow columns
to flat numpy buffers, then per-example or prebatched records with TFRecord framing and
masked crc32c."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional, Tuple, Union

import numpy as np
import pyarrow as pa

from ...schema import ColumnSchema
from .fixed import encode_fixed
from .spec import LENGTHS_SUFFIX, VALUES_SUFFIX
from .wire import (_ARROW_FILTER_MIN, _fill_data_crcs, _filter_bytes, _length_crcs, _masked_crc_one, _varint_bytes,
                   _varint_matrix, _varint_stream, _vlen)

# Budget (bytes) of the padded row matrix used to encode one block of per-example
# records; rows per block = budget // widest row (at least 1, at most _MAX_BLOCK_ROWS).
_BLOCK_BYTES = 8 << 20
_MAX_BLOCK_ROWS = 16384


# --------------------------------------------------------------------------------------
# vectorized protobuf encoding
# --------------------------------------------------------------------------------------
def _varint_flat(values: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Concatenated varints of int64/uint64 ``values`` (two's complement for negatives).

    Returns:
        ``(bytes uint8, lengths int64)``.
    """
    return _varint_stream(values)


@dataclass
class _Flat:
    """Values of one column (or the elements of a list column) as numpy.

    ``values`` holds int64/float32 values; strings use ``offsets`` (int64, n+1,
    starting at 0) into ``data`` (uint8).
    """

    kind: str
    values: Optional[np.ndarray] = None
    offsets: Optional[np.ndarray] = None
    data: Optional[np.ndarray] = None

    def __len__(self) -> int:
        return len(self.values) if self.values is not None else len(self.offsets) - 1

    def slice(self, start: int, stop: int) -> "_Flat":
        if self.values is not None:
            return _Flat(self.kind, values=self.values[start:stop])
        offs = self.offsets[start:stop + 1]
        return _Flat(self.kind, offsets=offs - offs[0], data=self.data[offs[0]:offs[-1]])


@dataclass
class _Column:
    """One column of a chunk, ready to encode."""

    name: str
    key: bytes
    flat: _Flat
    row_offsets: Optional[np.ndarray] = None  # list columns: int64 (n+1,), starting at 0

    def slice_rows(self, start: int, stop: int) -> "_Column":
        if self.row_offsets is None:
            return _Column(self.name, self.key, self.flat.slice(start, stop))
        offs = self.row_offsets[start:stop + 1]
        return _Column(self.name, self.key, self.flat.slice(int(offs[0]), int(offs[-1])), offs - offs[0])


def _concat_flats(flats: List[_Flat]) -> _Flat:
    if flats[0].values is not None:
        return _Flat(flats[0].kind, values=np.concatenate([f.values for f in flats]))
    sizes = np.cumsum([0] + [int(f.offsets[-1]) for f in flats[:-1]])
    offsets = np.concatenate([flats[0].offsets[:1]] + [f.offsets[1:] + base for f, base in zip(flats, sizes)])
    return _Flat(flats[0].kind, offsets=offsets, data=np.concatenate([f.data for f in flats]))


def _concat_columns(chunks: List[List[_Column]]) -> List[_Column]:
    """Row-wise concatenation of converted chunks (same columns in the same order)."""
    out = []
    for parts in zip(*chunks):
        first = parts[0]
        flat = _concat_flats([p.flat for p in parts])
        if first.row_offsets is None:
            out.append(_Column(first.name, first.key, flat))
        else:
            sizes = np.cumsum([0] + [int(p.row_offsets[-1]) for p in parts[:-1]])
            offsets = np.concatenate([first.row_offsets[:1]]
                                     + [p.row_offsets[1:] + base for p, base in zip(parts, sizes)])
            out.append(_Column(first.name, first.key, flat, offsets))
    return out


# A piece of every row of a block of records, a 4-tuple (kind, payload, extra, lens):
# ("const", bytes, present, _) — the same bytes in every row (only where the bool
# array ``present`` is True, if given); ("block", (n, w) uint8, mask or None, lens) —
# row i is the masked bytes of block[i] (lens: their count, int or (n,) int64);
# ("ragged", data uint8, offsets int64 (n+1,), _) — row i is data[offsets[i]:offsets[i+1]].
_Piece = Tuple[str, Any, Any, Any]


def _p_const(pieces: List[_Piece], data: bytes, present: Optional[np.ndarray] = None) -> None:
    if not data:
        return
    if present is None or bool(present.all()):
        if pieces and pieces[-1][0] == "const" and pieces[-1][2] is None:
            pieces[-1] = ("const", pieces[-1][1] + data, None, None)
        else:
            pieces.append(("const", data, None, None))
    else:
        pieces.append(("const", data, present, None))


def _p_block(pieces: List[_Piece], mat: np.ndarray, lens: Optional[np.ndarray] = None,
             present: Optional[np.ndarray] = None) -> None:
    """Append a block whose row i is ``mat[i, :lens[i]]`` (all of it if lens is None),
    or nothing where ``present`` is False."""
    width = mat.shape[1]
    mask = None
    row_lens: Any = width
    if lens is not None and lens.size and lens.min() != width:
        mask = np.arange(width) < lens[:, None]
        row_lens = lens
    if present is not None and not bool(present.all()):
        mask = np.broadcast_to(present[:, None], mat.shape) if mask is None else mask & present[:, None]
        row_lens = np.where(present, row_lens, 0)
    pieces.append(("block", mat, mask, row_lens))


def _p_varint(pieces: List[_Piece], values: Union[int, np.ndarray], present: Optional[np.ndarray] = None) -> None:
    """Append the varint of a non-negative int or int64 array (only where ``present``)."""
    if not isinstance(values, np.ndarray):
        _p_const(pieces, _varint_bytes(int(values)), present)
        return
    if values.size and values.min() == values.max():
        _p_const(pieces, _varint_bytes(int(values[0])), present)
        return
    mat, lens = _varint_matrix(values.astype(np.uint64, copy=False))
    _p_block(pieces, mat, lens, present)


def _p_extend(pieces: List[_Piece], more: List[_Piece]) -> None:
    """Append ``more``, merging adjacent unconditional constants."""
    for piece in more:
        if piece[0] == "const" and piece[2] is None:
            _p_const(pieces, piece[1])
        else:
            pieces.append(piece)


def _assemble(pieces: List[_Piece], n: int) -> Tuple[np.ndarray, np.ndarray]:
    """Concatenate pieces row-wise: returns (flat uint8 bytes, row offsets int64 (n+1,)).

    Rows are laid out in a padded ``(n, W)`` matrix (each piece a column range, sized
    to its widest row) and compacted with one boolean mask.
    """
    widths = []
    for kind, payload, extra, _ in pieces:
        if kind == "const":
            widths.append(len(payload))
        elif kind == "block":
            widths.append(payload.shape[1])
        else:
            widths.append(int(np.diff(extra).max()) if n else 0)
    total_w = sum(widths)
    mat = np.empty((n, total_w), dtype=np.uint8)
    keep: Optional[np.ndarray] = None
    fixed_len = 0
    lens = np.zeros(n, dtype=np.int64)
    start = 0
    for (kind, payload, extra, row_lens), width in zip(pieces, widths):
        if width == 0:
            continue
        stop = start + width
        mask = None
        if kind == "const":
            mat[:, start:stop] = np.frombuffer(payload, dtype=np.uint8)
            if extra is not None:
                mask = np.broadcast_to(extra[:, None], (n, width))
                lens += extra * width
            else:
                fixed_len += width
        elif kind == "block":
            mat[:, start:stop] = payload
            mask = extra
            if isinstance(row_lens, np.ndarray):
                lens += row_lens
            else:
                fixed_len += row_lens
        else:
            data, offsets = payload, extra
            ragged_lens = np.diff(offsets)
            base = int(offsets[0])
            n_bytes = int(offsets[-1]) - base
            rows = np.repeat(np.arange(n, dtype=np.int64), ragged_lens)
            cols = np.arange(n_bytes, dtype=np.int64) - np.repeat(offsets[:-1] - base, ragged_lens) + start
            mat[rows, cols] = data[base:base + n_bytes]
            if ragged_lens.min() != width:
                mask = np.arange(width) < ragged_lens[:, None]
            lens += ragged_lens
        if mask is not None:
            if keep is None:
                keep = np.ones((n, total_w), dtype=bool)
            keep[:, start:stop] = mask
        start = stop
    if keep is None:
        flat = mat.reshape(-1)
    elif keep.size < _ARROW_FILTER_MIN:
        flat = mat[keep]
    else:
        flat = _filter_bytes(mat, np.packbits(keep, bitorder="little"))
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lens + fixed_len, out=offsets[1:])
    return flat, offsets


def _element_bytes(flat: _Flat) -> Tuple[np.ndarray, np.ndarray]:
    """BytesList elements ``0x0A varint(len) bytes`` of each string: (bytes, offsets)."""
    n = len(flat)
    lens = np.diff(flat.offsets)
    pieces: List[_Piece] = []
    _p_const(pieces, b"\x0a")
    _p_varint(pieces, lens)
    pieces.append(("ragged", flat.data, flat.offsets, None))
    return _assemble(pieces, n)


def _feature_content(flat: _Flat, row_offsets: Optional[np.ndarray], n: int) -> Tuple[List[_Piece], Any]:
    """Pieces of the ``Feature`` message of each row, and its length per row.

    ``row_offsets`` None means one value per row (scalar column).
    """
    pieces: List[_Piece] = []
    if row_offsets is None:
        row_offsets_ = None
        counts: Union[int, np.ndarray] = 1
    else:
        row_offsets_ = row_offsets.astype(np.int64, copy=False)
        counts = np.diff(row_offsets_)
    if flat.kind == "float32":
        raw = np.ascontiguousarray(flat.values, dtype="<f4").view(np.uint8)
        if row_offsets_ is None:
            _p_const(pieces, b"\x12\x06\x0a\x04")
            _p_block(pieces, raw.reshape(n, 4))
            return pieces, 8
        present = counts > 0
        payload = 4 * counts
        list_len = np.where(present, 1 + _vlen(payload) + payload, 0)
        _p_const(pieces, b"\x12")
        _p_varint(pieces, list_len)
        _p_const(pieces, b"\x0a", present)
        _p_varint(pieces, payload, present)
        pieces.append(("ragged", raw, 4 * row_offsets_, None))
        return pieces, 1 + _vlen(list_len) + list_len
    if flat.kind == "int64":
        packed, lens = _varint_flat(flat.values)
        if row_offsets_ is None:
            payload = lens
            byte_offsets = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(lens, out=byte_offsets[1:])
            present = None
            list_len = 1 + _vlen(payload) + payload
        else:
            elem_offsets = np.zeros(len(lens) + 1, dtype=np.int64)
            np.cumsum(lens, out=elem_offsets[1:])
            byte_offsets = elem_offsets[row_offsets_]
            payload = np.diff(byte_offsets)
            present = counts > 0
            list_len = np.where(present, 1 + _vlen(payload) + payload, 0)
        _p_const(pieces, b"\x1a")
        _p_varint(pieces, list_len)
        _p_const(pieces, b"\x0a", present)
        _p_varint(pieces, payload, present)
        pieces.append(("ragged", packed, byte_offsets, None))
        return pieces, 1 + _vlen(list_len) + list_len
    # strings
    elem_bytes, elem_offsets = _element_bytes(flat)
    byte_offsets = elem_offsets if row_offsets_ is None else elem_offsets[row_offsets_]
    list_len = np.diff(byte_offsets)
    _p_const(pieces, b"\x0a")
    _p_varint(pieces, list_len)
    pieces.append(("ragged", elem_bytes, byte_offsets, None))
    return pieces, 1 + _vlen(list_len) + list_len


def _entry_prefix(key: bytes) -> bytes:
    """Map-entry bytes after the entry length: key field + the value field's tag."""
    return b"\x0a" + _varint_bytes(len(key)) + key + b"\x12"


def _int_scalar_entry(col: _Column, n: int) -> Optional[Tuple[List[_Piece], np.ndarray]]:
    """Fast path for scalar int columns: the entry header depends only on the value's
    varint length L, so it is one table lookup per row. None if header sizes vary."""
    values = col.flat.values.view(np.uint64)
    mat, lens = _varint_matrix(values)
    width = mat.shape[1]
    prefix = _entry_prefix(col.key)
    headers, totals = [], []
    for length in range(width + 1):
        content_hdr = b"\x1a" + _varint_bytes(2 + length) + b"\x0a" + _varint_bytes(length)
        feature_len = len(content_hdr) + length
        entry_len = len(prefix) + _vlen(feature_len) + feature_len
        headers.append(b"\x0a" + _varint_bytes(entry_len) + prefix + _varint_bytes(feature_len) + content_hdr)
        totals.append(1 + _vlen(entry_len) + entry_len)
    if len({len(h) for h in headers[1:]}) != 1:
        return None
    table = np.frombuffer(b"".join(headers[1:]), dtype=np.uint8).reshape(width, -1)
    pieces: List[_Piece] = []
    if width == 1:
        _p_const(pieces, headers[1])
        _p_block(pieces, mat)
        return pieces, np.full(n, totals[1], dtype=np.int64)
    _p_block(pieces, np.take(table, lens - 1, axis=0))
    _p_block(pieces, mat, lens)
    return pieces, np.asarray(totals, dtype=np.int64)[lens]


def _entry_pieces(col: _Column, n: int) -> Tuple[List[_Piece], Any]:
    """Pieces of the ``features`` map entry of ``col`` in each row, and its total size
    (tag + length varint + entry) per row."""
    if col.row_offsets is None and col.flat.kind == "int64" and n:
        fast = _int_scalar_entry(col, n)
        if fast is not None:
            return fast
    content, feature_len = _feature_content(col.flat, col.row_offsets, n)
    prefix = _entry_prefix(col.key)
    entry_len = len(prefix) + _vlen(feature_len) + feature_len
    pieces: List[_Piece] = []
    _p_const(pieces, b"\x0a")
    _p_varint(pieces, entry_len)
    _p_const(pieces, prefix)
    _p_varint(pieces, feature_len)
    _p_extend(pieces, content)
    return pieces, 1 + _vlen(entry_len) + entry_len


def _encode_examples(cols: List[_Column], n: int) -> Tuple[np.ndarray, np.ndarray]:
    """Framed TFRecord bytes of ``n`` per-example records: (uint8 bytes, record offsets).

    Scalar int64/float32 columns take the byte-template path of :mod:`.fixed`; anything
    else (lists, strings, headers that vary in size) the generic pieces below. Both give
    the same bytes.
    """
    fast = encode_fixed(cols, n)
    if fast is not None:
        return fast
    return _encode_examples_generic(cols, n)


def _encode_examples_generic(cols: List[_Column], n: int) -> Tuple[np.ndarray, np.ndarray]:
    """:func:`_encode_examples` for any columns: pieces assembled in a padded matrix."""
    entries: List[List[_Piece]] = []
    features_len: Any = 0
    for col in cols:
        pieces, total = _entry_pieces(col, n)
        entries.append(pieces)
        features_len = features_len + total
    features_len = np.broadcast_to(np.asarray(features_len, dtype=np.int64), (n,))
    data_len = 1 + _vlen(features_len) + features_len
    header = np.empty((n, 12), dtype=np.uint8)
    header[:, :8] = data_len.astype("<u8").view(np.uint8).reshape(n, 8)
    header[:, 8:] = _length_crcs(data_len).view(np.uint8).reshape(n, 4)
    pieces: List[_Piece] = []
    _p_block(pieces, header)
    _p_const(pieces, b"\x0a")
    _p_varint(pieces, features_len)
    for entry in entries:
        _p_extend(pieces, entry)
    _p_block(pieces, np.zeros((n, 4), dtype=np.uint8))
    flat, offsets = _assemble(pieces, n)
    _fill_data_crcs(flat, offsets)
    return flat, offsets


def _list_feature(flat: _Flat) -> Tuple[List[Any], int]:
    """One ``Feature`` holding all values of ``flat``: (byte parts, total length)."""
    n = len(flat)
    if flat.kind == "float32":
        raw = np.ascontiguousarray(flat.values, dtype="<f4").view(np.uint8)
        inner = [b"\x0a" + _varint_bytes(4 * n), raw] if n else []
        tag = b"\x12"
    elif flat.kind == "int64":
        packed, _ = _varint_flat(np.ascontiguousarray(flat.values, dtype=np.int64))
        inner = [b"\x0a" + _varint_bytes(packed.size), packed] if n else []
        tag = b"\x1a"
    else:
        elems, _ = _element_bytes(flat) if n else (np.zeros(0, np.uint8), None)
        inner = [elems]
        tag = b"\x0a"
    inner_len = sum(len(p) for p in inner)
    head = tag + _varint_bytes(inner_len)
    return [head] + inner, len(head) + inner_len


def _encode_batch(cols: List[_Column], start: int, stop: int) -> List[Any]:
    """Byte parts of one framed prebatched record holding rows ``[start, stop)``."""
    entries: List[Any] = []
    features_len = 0
    for col in cols:
        if col.row_offsets is None:
            feats = [(col.key, _list_feature(col.flat.slice(start, stop)))]
        else:
            offs = col.row_offsets[start:stop + 1]
            values = col.flat.slice(int(offs[0]), int(offs[-1]))
            lengths = _Flat("int64", values=np.diff(offs).astype(np.int64))
            feats = [(col.key + VALUES_SUFFIX.encode(), _list_feature(values)),
                     (col.key + LENGTHS_SUFFIX.encode(), _list_feature(lengths))]
        for key, (parts, feature_len) in feats:
            prefix = _entry_prefix(key) + _varint_bytes(feature_len)
            entry_len = len(prefix) + feature_len
            head = b"\x0a" + _varint_bytes(entry_len) + prefix
            entries.append(head)
            entries.extend(parts)
            features_len += len(head) + feature_len
    data = np.concatenate([np.frombuffer(p, dtype=np.uint8) if isinstance(p, bytes) else p
                           for p in [b"\x0a" + _varint_bytes(features_len)] + entries])
    length = data.size.to_bytes(8, "little")
    return [length + _masked_crc_one(length).to_bytes(4, "little"), data,
            _masked_crc_one(data).to_bytes(4, "little")]


# --------------------------------------------------------------------------------------
# arrow -> numpy
# --------------------------------------------------------------------------------------
def _null_error(name: str, what: str, count: int) -> ValueError:
    return ValueError(
        f"column {name!r} has {count} null {what}; TFRecord features cannot express missing values "
        "(tf.io.FixedLenFeature has no null), so fill them before writing: FillMissing for continuous "
        "columns, Categorify (nulls get their own id) for categorical ones")


def _to_flat(arr: pa.Array, kind: str, name: str) -> _Flat:
    typ = arr.type
    if pa.types.is_dictionary(typ):
        arr = arr.dictionary_decode()
        typ = arr.type
    if kind == "string":
        if not (pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_binary(typ)
                or pa.types.is_large_binary(typ)):
            raise TypeError(f"column {name!r}: schema says str but the data is {typ}")
        arr = arr.cast(pa.large_binary())
        if len(arr) == 0 or arr.buffers()[1] is None:
            return _Flat(kind, offsets=np.zeros(len(arr) + 1, dtype=np.int64), data=np.zeros(0, dtype=np.uint8))
        offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset:arr.offset + len(arr) + 1]
        data_buf = arr.buffers()[2]
        data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
        base = int(offsets[0]) if len(offsets) else 0
        offsets = offsets - base
        return _Flat(kind, offsets=offsets, data=data[base:base + int(offsets[-1])])
    if pa.types.is_boolean(typ):
        values = arr.to_numpy(zero_copy_only=False).astype(np.int64 if kind == "int64" else np.float32)
        return _Flat(kind, values=values)
    if kind == "int64":
        if not pa.types.is_integer(typ):
            raise TypeError(f"column {name!r}: schema says an integer type but the data is {typ}")
        values = arr.to_numpy()
        if values.dtype == np.uint64 and values.size and int(values.max()) >= 1 << 63:
            raise ValueError(f"column {name!r}: uint64 values >= 2**63 do not fit TFRecord's int64")
        return _Flat(kind, values=values.astype(np.int64, copy=False))
    if not (pa.types.is_floating(typ) or pa.types.is_integer(typ)):
        raise TypeError(f"column {name!r}: schema says a float type but the data is {typ}")
    values = arr.to_numpy()
    with np.errstate(over="ignore"):  # overflow is reported below, naming the column
        out = values.astype(np.float32, copy=False)
    if values.dtype.itemsize > 4 and values.dtype.kind == "f":
        big = np.isinf(out) & np.isfinite(values)
        if big.any():
            raise ValueError(
                f"column {name!r}: {int(big.sum())} finite value(s) such as {float(values[big][0])!r} are beyond "
                f"float32's range (about ±3.4e38), which TFRecord's float_list holds: they would become inf. "
                f"Bring them into range before writing: Clip(min_value=..., max_value=...) them, or transform "
                f"them with a LambdaOp (rescale, log, or cast to another type)")
    return _Flat(kind, values=out)


def _to_column(chunked: Union[pa.ChunkedArray, pa.Array], col: ColumnSchema, kind: str) -> _Column:
    if isinstance(chunked, pa.ChunkedArray):
        # one chunk (a table slice) is used as is: combine_chunks would copy it
        arr = chunked.chunk(0) if chunked.num_chunks == 1 else chunked.combine_chunks()
    else:
        arr = chunked
    if arr.null_count:
        raise _null_error(col.name, "lists" if col.is_list else "values", arr.null_count)
    typ = arr.type
    is_list_type = pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ)
    if is_list_type != bool(col.is_list):
        raise TypeError(f"column {col.name!r}: schema is_list={col.is_list} but the data is {typ}")
    key = col.name.encode("utf-8")
    if not is_list_type:
        return _Column(col.name, key, _to_flat(arr, kind, col.name))
    value_type = typ.value_type
    if pa.types.is_list(value_type) or pa.types.is_large_list(value_type) or pa.types.is_fixed_size_list(value_type):
        raise TypeError(f"column {col.name!r}: nested lists ({typ}) cannot be written to TFRecord")
    arr = arr.cast(pa.large_list(value_type))
    offsets = np.asarray(arr.offsets, dtype=np.int64)
    base = int(offsets[0])
    values = arr.values.slice(base, int(offsets[-1]) - base)
    if values.null_count:
        raise _null_error(col.name, "list elements", values.null_count)
    return _Column(col.name, key, _to_flat(values, kind, col.name), offsets - base)
