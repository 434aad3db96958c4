"""TFRecord output: ``tf.train.Example`` records written without TensorFlow, and readers.

Two layouts are supported:

* **per-example** (``batch_size=None``): one ``tf.train.Example`` per row. Scalar
  columns become one-value lists, list (multi-hot) columns variable-length lists.
* **prebatched** (``batch_size=B``): one ``tf.train.Example`` per batch of ``B`` rows.
  A scalar column ``x`` becomes one feature ``x`` holding the ``B`` values; a list
  column ``x`` becomes two features, ``x__values`` (the flat values of the ``B`` rows)
  and ``x__lengths`` (``B`` int64 row lengths), so the batch is rebuilt with
  ``tf.RaggedTensor.from_row_lengths`` (or ``tf.sparse``). The last record of a file
  holds the ``n_rows % B`` remaining rows (a *short* record) unless ``drop_last=True``,
  which drops those rows instead. Prebatched records are ~5x smaller than
  per-example ones (feature names are not repeated per row) and parse much faster.

Type mapping (schema dtype -> feature list): integers and bool -> ``int64_list``
(bool as 0/1; ``uint64`` values >= 2**63 are rejected), floats -> ``float_list``
(float32: float64 values are rounded to float32), ``str``/binary -> ``bytes_list``
(UTF-8 bytes). Readers return ``tf.int64``, ``tf.float32`` and ``tf.string``.

Nulls: a ``tf.train.Example`` cannot express a missing value that
``tf.io.FixedLenFeature`` would accept, so any null (a null scalar, a null list, or
a null inside a list) raises :class:`ValueError` naming the column; fill them before
writing (``FillMissing`` for continuous columns, ``Categorify`` for categorical ones).
NaN floats are values, not nulls, and are written as NaN. Empty lists are allowed.

Files use the standard TFRecord framing (uint64 length, masked crc32c of the length,
data, masked crc32c of the data) around standard ``tf.train.Example`` protobuf
bytes, optionally inside a GZIP or ZLIB stream (TF's ``TFRecordOptions`` names), so
``tf.data.TFRecordDataset`` + ``tf.io.parse_example`` read them. Encoding is
vectorized with numpy (no TensorFlow, no per-row protobuf objects): the only
per-row Python work is one ``crc32c`` call per record.

Every output folder gets a ``tfrecord_spec.json`` (see :func:`spec_for` and
:func:`write_spec`), written last and atomically; :func:`read_tfrecord` uses it.
"""
from __future__ import annotations

import gzip
import json
import logging
import os
import zlib
from dataclasses import dataclass
from typing import Any, BinaryIO, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np
import pyarrow as pa
from crc32c import crc32c

from tabprep.schema import ColumnSchema, Schema

logger = logging.getLogger(__name__)

__all__ = [
    "SPEC_FILE",
    "TFRecordSink",
    "feature_spec",
    "load_spec",
    "read_tfrecord",
    "spec_for",
    "write_spec",
]

#: Name of the spec file written into every TFRecord output folder.
SPEC_FILE = "tfrecord_spec.json"
SPEC_VERSION = 1
#: Feature-key suffixes of a list column in the prebatched layout.
VALUES_SUFFIX = "__values"
LENGTHS_SUFFIX = "__lengths"

_COMPRESSIONS = (None, "GZIP", "ZLIB")
_CRC_MASK_DELTA = np.uint32(0xA282EAD8)
# Budget (bytes) of the padded row matrix used to encode one block of per-example
# records; rows per block = budget // widest row (at least 1, at most _MAX_BLOCK_ROWS).
_BLOCK_BYTES = 8 << 20
_MAX_BLOCK_ROWS = 16384
_U64 = np.uint64


# --------------------------------------------------------------------------------------
# schema helpers
# --------------------------------------------------------------------------------------
def _feature_dtype(col: ColumnSchema) -> str:
    """The TF dtype name (``int64``, ``float32`` or ``string``) a column is written as."""
    dtype = col.dtype
    if dtype == "bool" or dtype.startswith("int") or dtype.startswith("uint"):
        return "int64"
    if dtype.startswith("float"):
        return "float32"
    if dtype in ("str", "bytes", "binary", "large_binary", "object"):
        return "string"
    raise TypeError(f"column {col.name!r}: dtype {dtype!r} cannot be written to TFRecord "
                    "(supported: integers, bool, floats, str/binary, and lists of those)")


def _feature_keys(col: ColumnSchema, batch_size: Optional[int]) -> List[str]:
    if col.is_list and batch_size is not None:
        return [col.name + VALUES_SUFFIX, col.name + LENGTHS_SUFFIX]
    return [col.name]


def _check_batch_size(batch_size: Optional[int]) -> Optional[int]:
    if batch_size is None:
        return None
    if isinstance(batch_size, bool) or int(batch_size) != batch_size or batch_size < 1:
        raise ValueError(f"batch_size must be None (per-example records) or a positive int, got {batch_size!r}")
    return int(batch_size)


def _check_compression(compression: Optional[str]) -> Optional[str]:
    if compression in (None, ""):
        return None
    upper = str(compression).upper()
    if upper not in _COMPRESSIONS:
        raise ValueError(f"compression must be None, 'GZIP' or 'ZLIB', got {compression!r}")
    return upper


def spec_for(schema: Schema, batch_size: Optional[int] = None, compression: Optional[str] = None,
             drop_last: bool = False) -> Dict[str, Any]:
    """Describe the TFRecord layout of ``schema`` (everything but the file list).

    Args:
        schema: the columns written, in order.
        batch_size: None for per-example records, else rows per prebatched record.
        compression: None, ``"GZIP"`` or ``"ZLIB"``.
        drop_last: whether short last batches are dropped (prebatched only).

    Returns:
        A JSON-able dict: ``format``, ``version``, ``layout`` (``"example"`` or
        ``"prebatched"``), ``batch_size``, ``drop_last``, ``compression`` and
        ``features``: one entry per column with ``name``, ``dtype`` (TF dtype name),
        ``source_dtype`` (schema dtype), ``is_list``, ``shape`` (of one record's
        value; ``null`` = variable; a short last record has fewer than ``batch_size``
        rows) and ``keys`` (the ``tf.train.Example`` feature keys). :func:`write_spec`
        adds ``files``, ``rows`` and ``records``.

    Raises:
        TypeError: a column dtype cannot be written.
        ValueError: bad batch_size/compression, or feature keys collide (a list column
            ``x`` next to a column named ``x__values``/``x__lengths`` when prebatched).
    """
    batch_size = _check_batch_size(batch_size)
    compression = _check_compression(compression)
    features = []
    seen: Dict[str, str] = {}
    for col in schema:
        keys = _feature_keys(col, batch_size)
        for key in keys:
            if key in seen:
                raise ValueError(f"feature key {key!r} of column {col.name!r} collides with column {seen[key]!r}")
            seen[key] = col.name
        if batch_size is None:
            shape: List[Optional[int]] = [None] if col.is_list else []
        else:
            shape = [batch_size, None] if col.is_list else [batch_size]
        features.append({
            "name": col.name,
            "dtype": _feature_dtype(col),
            "source_dtype": col.dtype,
            "is_list": bool(col.is_list),
            "shape": shape,
            "keys": keys,
        })
    return {
        "format": "tfrecord",
        "version": SPEC_VERSION,
        "layout": "example" if batch_size is None else "prebatched",
        "batch_size": batch_size,
        "drop_last": bool(drop_last) if batch_size is not None else False,
        "compression": compression,
        "features": features,
    }


def write_spec(directory: str, spec: Dict[str, Any], files: Iterable[Dict[str, Any]]) -> str:
    """Write ``tfrecord_spec.json`` into ``directory`` atomically (temp file + rename).

    Call it after every record file of the folder is closed, so a folder with a spec
    is complete.

    Args:
        directory: the output folder (one worker shard, or the whole output).
        spec: a dict from :func:`spec_for`.
        files: one dict per record file: ``file`` (or ``path``; relative to
            ``directory``, or absolute inside it) and the ``rows``/``records``/``bytes``
            (/``dropped_rows``) that :meth:`TFRecordSink.close` returned. Order is kept
            (it is the read order). Entries are written as ``{"file": relative path,
            "rows", "records", "bytes"[, "dropped_rows"]}``.

    Returns:
        The path of the spec file.
    """
    entries = []
    root = os.path.abspath(directory)
    for entry in files:
        rel = str(entry["file"] if "file" in entry else entry["path"])
        if os.path.isabs(rel):
            rel = os.path.relpath(rel, root)
        item = {"file": rel.replace(os.sep, "/"), "rows": int(entry["rows"]),
                "records": int(entry["records"]), "bytes": int(entry.get("bytes", 0))}
        if "dropped_rows" in entry:
            item["dropped_rows"] = int(entry["dropped_rows"])
        entries.append(item)
    out = dict(spec)
    out["files"] = entries
    out["rows"] = sum(e["rows"] for e in entries)
    out["records"] = sum(e["records"] for e in entries)
    target = os.path.join(directory, SPEC_FILE)
    tmp = target + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(out, fh, indent=2)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, target)
    return target


def _find_spec_files(path: str) -> List[str]:
    direct = os.path.join(path, SPEC_FILE)
    if os.path.isfile(direct):
        return [direct]
    found = []
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames.sort()
        if SPEC_FILE in filenames:
            found.append(os.path.join(dirpath, SPEC_FILE))
            dirnames[:] = []  # a folder with a spec is one output; don't descend further
    found.sort()
    return found


def load_spec(path: str) -> Dict[str, Any]:
    """Load the spec of a TFRecord output: one folder with a spec, or a folder of shards.

    Args:
        path: a folder holding ``tfrecord_spec.json``, or a top folder whose subfolders
            (e.g. one per worker) hold one each; the spec file itself is accepted too.

    Returns:
        The spec with ``files`` from every shard, in sorted shard order, each entry
        with ``path`` (absolute), ``file`` (as listed), ``rows`` and ``records`` (derived
        from rows and the layout when a spec omits it); ``rows``/``records`` are
        totals and ``shards`` lists the folders read.

    Raises:
        FileNotFoundError: no spec found (e.g. an incomplete write), or a listed file
            is missing.
        ValueError: shards disagree on features, batch size, compression or drop_last.
    """
    if os.path.isfile(path):
        path = os.path.dirname(os.path.abspath(path))
    spec_files = _find_spec_files(path)
    if not spec_files:
        raise FileNotFoundError(f"no {SPEC_FILE} under {path!r}: not a TFRecord output, or its write did not finish")
    merged: Optional[Dict[str, Any]] = None
    files: List[Dict[str, Any]] = []
    shards = []
    for spec_file in spec_files:
        with open(spec_file, encoding="utf-8") as fh:
            spec = json.load(fh)
        if spec.get("format") != "tfrecord" or int(spec.get("version", 0)) > SPEC_VERSION:
            raise ValueError(f"{spec_file}: unsupported spec (format={spec.get('format')!r}, "
                             f"version={spec.get('version')!r})")
        folder = os.path.dirname(os.path.abspath(spec_file))
        shards.append(folder)
        if merged is None:
            merged = {k: v for k, v in spec.items() if k not in ("files", "rows", "records")}
        else:
            for key in ("layout", "batch_size", "drop_last", "compression", "features"):
                if spec.get(key) != merged.get(key):
                    raise ValueError(f"{spec_file}: {key} differs from {spec_files[0]}; shards of one "
                                     "output must share their layout")
        for entry in spec.get("files", []):
            rel = entry["file"] if "file" in entry else entry["path"]
            full = os.path.join(folder, rel)
            if not os.path.isfile(full):
                raise FileNotFoundError(f"{spec_file} lists {rel!r}, which does not exist")
            rows = int(entry["rows"])
            if "records" in entry:
                records = int(entry["records"])
            elif spec.get("batch_size"):
                bsz = int(spec["batch_size"])
                records = rows // bsz if spec.get("drop_last") else -(-rows // bsz)
            else:
                records = rows
            files.append(dict(entry, file=rel, path=full, rows=rows, records=records))
    assert merged is not None
    merged["files"] = files
    merged["rows"] = sum(int(f["rows"]) for f in files)
    merged["records"] = sum(int(f["records"]) for f in files)
    merged["shards"] = shards
    return merged


# --------------------------------------------------------------------------------------
# vectorized protobuf encoding
# --------------------------------------------------------------------------------------
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


def _varint_len(values: np.ndarray) -> np.ndarray:
    """Varint byte lengths (1..10, int64) of uint64 ``values``."""
    lens = np.ones(values.shape, dtype=np.int64)
    if values.size == 0:
        return lens
    vmax = int(values.max())
    for k in range(1, 10):
        threshold = 1 << (7 * k)
        if vmax < threshold:
            break
        lens += values >= _U64(threshold)
    return lens


def _vlen(value: Union[int, np.ndarray]) -> Union[int, np.ndarray]:
    """Varint length of an int or of each element of an int64 array (non-negative)."""
    if isinstance(value, np.ndarray):
        return _varint_len(value.astype(np.uint64, copy=False))
    return len(_varint_bytes(int(value)))


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


def _varint_flat(values: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Concatenated varints of int64/uint64 ``values`` (two's complement for negatives).

    Returns:
        ``(bytes uint8, lengths int64)``.
    """
    mat, lens = _varint_matrix(values.view(np.uint64) if values.dtype == np.int64 else values)
    if mat.shape[1] == 1 or (lens.size and lens.min() == mat.shape[1]):
        return mat.reshape(-1), lens
    return mat[np.arange(mat.shape[1]) < lens[:, None]], lens


def _masked_crc(crcs: np.ndarray) -> np.ndarray:
    """TFRecord's masked crc32c of an array of crc32c values (uint32)."""
    crcs = crcs.astype(np.uint32, copy=False)
    return (((crcs >> np.uint32(15)) | (crcs << np.uint32(17))) + _CRC_MASK_DELTA).astype(np.uint32)


def _masked_crc_one(data: Any) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


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
    flat = mat.reshape(-1) if keep is None else mat[keep]
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


def _length_crcs(lengths: np.ndarray) -> np.ndarray:
    """Masked crc32c of each record's 8-byte little-endian length (computed per distinct length)."""
    uniq, inverse = np.unique(lengths, return_inverse=True)
    table = np.array([_masked_crc_one(int(v).to_bytes(8, "little")) for v in uniq.tolist()], dtype="<u4")
    return table[inverse.reshape(-1)]


def _encode_examples(cols: List[_Column], n: int) -> Tuple[np.ndarray, np.ndarray]:
    """Framed TFRecord bytes of ``n`` per-example records: (uint8 bytes, record offsets)."""
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
    view = memoryview(flat)
    starts = (offsets[:-1] + 12).tolist()
    ends = (offsets[1:] - 4).tolist()
    crcs = np.fromiter((crc32c(view[a:b]) for a, b in zip(starts, ends)), dtype=np.uint32, count=n)
    trailer_pos = (offsets[1:] - 4)[:, None] + np.arange(4)
    flat[trailer_pos] = _masked_crc(crcs).astype("<u4").view(np.uint8).reshape(n, 4)
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
    return _Flat(kind, values=arr.to_numpy().astype(np.float32, copy=False))


def _to_column(chunked: Union[pa.ChunkedArray, pa.Array], col: ColumnSchema, kind: str) -> _Column:
    arr = chunked.combine_chunks() if isinstance(chunked, pa.ChunkedArray) else chunked
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


# --------------------------------------------------------------------------------------
# the sink
# --------------------------------------------------------------------------------------
class TFRecordSink:
    """Writes one TFRecord file from consecutive arrow chunks of rows.

    The dataset writer creates one sink per output file, calls :meth:`write` with the
    file's rows in order, then :meth:`close`; it also writes the folder's spec
    (:func:`spec_for` + :func:`write_spec`). The sink writes ``path`` directly: atomicity
    (temp folder, rename) is the writer's job.

    Args:
        path: output file; its folder is created if missing. Any existing file is replaced.
        schema: the columns to write, in this order. Chunks must contain them (extra
            columns are ignored, with a warning once); their arrow types must match the
            schema (int/bool, float, str/binary; list types exactly where ``is_list``).
        batch_size: None (default) writes one ``tf.train.Example`` per row; ``B`` writes
            one record per ``B`` rows. Rows are buffered across :meth:`write` calls, so
            every record but the last holds exactly ``B`` rows whatever the chunk sizes.
        compression: None (default), ``"GZIP"`` or ``"ZLIB"`` (TF's
            ``TFRecordOptions`` names; level 6).
        drop_last: prebatched only (ignored per-example): drop the ``rows % B`` rows
            left at :meth:`close` instead of writing them as a short last record
            (:meth:`close` reports them as ``dropped_rows``). Default False.

    Raises (from :meth:`write`):
        ValueError: a column holds nulls (see the module docstring) or a column is missing.
        TypeError: a column's data type does not match the schema.
    """

    def __init__(self, path: str, schema: Schema, batch_size: Optional[int] = None,
                 compression: Optional[str] = None, drop_last: bool = False) -> None:
        self.path = path
        self.schema = schema
        self.batch_size = _check_batch_size(batch_size)
        self.compression = _check_compression(compression)
        self.drop_last = bool(drop_last)
        self._kinds = {col.name: _feature_dtype(col) for col in schema}
        spec_for(schema, self.batch_size)  # validates key collisions early
        self._rows = 0
        self._records = 0
        self._dropped = 0
        self._pending: List[List[_Column]] = []  # converted chunks not yet written (prebatched)
        self._pending_rows = 0
        self._warned_extra = False
        self._stats: Optional[Dict[str, int]] = None
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        self._raw: BinaryIO = open(path, "wb")
        self._fh: Any = self._raw
        self._zlib = None
        if self.compression == "GZIP":
            self._fh = gzip.GzipFile(filename="", mode="wb", fileobj=self._raw, compresslevel=6, mtime=0)
        elif self.compression == "ZLIB":
            self._zlib = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS)

    # -- io ----------------------------------------------------------------------------
    def _emit(self, parts: Sequence[Any]) -> None:
        for part in parts:
            if self._zlib is not None:
                self._raw.write(self._zlib.compress(part))
            else:
                self._fh.write(part)

    def _columns(self, table: pa.Table) -> List[_Column]:
        names = set(table.column_names)
        missing = [c.name for c in self.schema if c.name not in names]
        if missing:
            raise ValueError(f"chunk lacks schema columns {missing}; it has {table.column_names}")
        if not self._warned_extra and len(names) > len(self.schema):
            extra = sorted(names - set(self.schema.column_names))
            logger.warning("TFRecordSink(%s): ignoring columns not in the schema: %s", self.path, extra)
            self._warned_extra = True
        return [_to_column(table.column(col.name), col, self._kinds[col.name]) for col in self.schema]

    # -- writing -------------------------------------------------------------------------
    def write(self, table: pa.Table) -> None:
        """Encode and write (or, prebatched, buffer until a batch is full) a chunk of rows."""
        if self._stats is not None:
            raise ValueError(f"TFRecordSink({self.path}) is closed")
        if table.num_rows == 0:
            return
        if self.batch_size is None:
            self._write_examples(self._columns(table), table.num_rows)
            return
        self._pending.append(self._columns(table))  # converts and validates now
        self._pending_rows += table.num_rows
        if self._pending_rows >= self.batch_size:
            self._flush_batches(final=False)

    def _write_examples(self, cols: List[_Column], n: int) -> None:
        row_bytes = 16
        for col in cols:
            row_bytes += 24 + len(col.key)
            if col.row_offsets is not None:
                counts = np.diff(col.row_offsets)
                per_value = 4 if col.flat.kind == "float32" else 10
                if col.flat.kind == "string":
                    byte_offs = col.flat.offsets[col.row_offsets]
                    row_bytes += int(np.max(np.diff(byte_offs) + 12 * counts)) if n else 0
                else:
                    row_bytes += int(counts.max()) * per_value if n else 0
            elif col.flat.kind == "string":
                row_bytes += int(np.diff(col.flat.offsets).max()) + 12 if n else 0
        block = max(1, min(_MAX_BLOCK_ROWS, _BLOCK_BYTES // row_bytes))
        for start in range(0, n, block):
            stop = min(n, start + block)
            part = cols if (start == 0 and stop == n) else [c.slice_rows(start, stop) for c in cols]
            flat, _ = _encode_examples(part, stop - start)
            self._emit([flat])
            self._records += stop - start
            self._rows += stop - start

    def _flush_batches(self, final: bool) -> None:
        bsz = self.batch_size
        assert bsz is not None
        cols = self._pending[0] if len(self._pending) == 1 else _concat_columns(self._pending)
        n = self._pending_rows
        if final and n % bsz and not self.drop_last:
            n_write = n
        else:
            n_write = (n // bsz) * bsz
        for start in range(0, n_write, bsz):
            stop = min(n_write, start + bsz)
            self._emit(_encode_batch(cols, start, stop))
            self._records += 1
            self._rows += stop - start
        rest = n - n_write
        if final:
            self._dropped += rest
            self._pending, self._pending_rows = [], 0
        else:
            self._pending = [[c.slice_rows(n_write, n) for c in cols]] if rest else []
            self._pending_rows = rest

    def close(self) -> Dict[str, int]:
        """Flush buffered rows, close the file and return its counts.

        Prebatched: the rows left over (fewer than ``batch_size``) are written as one
        short record, or dropped if ``drop_last``. Calling close again returns the
        same dict.

        Returns:
            ``{"rows": rows written, "records": records written, "bytes": file size on
            disk (after compression), "dropped_rows": rows dropped by drop_last}``.
        """
        if self._stats is not None:
            return dict(self._stats)
        try:
            if self.batch_size is not None and self._pending_rows:
                self._flush_batches(final=True)
            if self._zlib is not None:
                self._raw.write(self._zlib.flush())
            if self._fh is not self._raw:
                self._fh.close()
        finally:
            self._raw.close()
        self._stats = {"rows": self._rows, "records": self._records,
                       "bytes": os.path.getsize(self.path), "dropped_rows": self._dropped}
        logger.debug("TFRecordSink(%s) closed: %s", self.path, self._stats)
        return dict(self._stats)

    def abort(self) -> None:
        """Close the file without flushing buffered rows (after an error); idempotent."""
        if self._stats is None:
            try:
                if self._fh is not self._raw:
                    self._fh.close()
            finally:
                self._raw.close()
            self._stats = {"rows": self._rows, "records": self._records,
                           "bytes": os.path.getsize(self.path), "dropped_rows": self._dropped}

    def __enter__(self) -> "TFRecordSink":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


# --------------------------------------------------------------------------------------
# reading (needs TensorFlow)
# --------------------------------------------------------------------------------------
def _tf() -> Any:
    try:
        import tensorflow as tf
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("reading TFRecords needs TensorFlow: pip install 'tabprep[tf]'") from err
    return tf


def _tf_dtype(tf: Any, name: str) -> Any:
    return {"int64": tf.int64, "float32": tf.float32, "string": tf.string}[name]


def _features_of(schema_or_spec: Union[Schema, Dict[str, Any]]) -> List[Dict[str, Any]]:
    if isinstance(schema_or_spec, Schema):
        return spec_for(schema_or_spec)["features"]
    return schema_or_spec["features"]


def feature_spec(schema: Union[Schema, Dict[str, Any]], batch_size: Optional[int] = None,
                 drop_last: bool = False) -> Dict[str, Any]:
    """The ``tf.io`` parse spec of records written for ``schema``, for your own pipelines.

    Args:
        schema: the written schema (or a loaded spec dict).
        batch_size: None for per-example records, else the prebatched record size.
        drop_last: prebatched only: True if the files were written with drop_last, so
            every record holds exactly ``batch_size`` rows and scalars can use a static
            ``FixedLenFeature([batch_size])``.

    Returns:
        ``{column name: feature}``. Per-example (use with ``tf.io.parse_example`` on a
        batch of serialized records): scalars ``FixedLenFeature([], dtype)``, lists
        ``RaggedFeature(dtype)`` (ragged ``[batch, None]``). Prebatched (use with
        ``tf.io.parse_single_example`` on one record): scalars
        ``FixedLenSequenceFeature([], dtype, allow_missing=True)`` giving ``[rows]``
        (accepts the short last record), or ``FixedLenFeature([batch_size])`` when
        ``drop_last``; lists ``RaggedFeature(value_key="<name>__values",
        partitions=[RowLengths("<name>__lengths")])`` giving ragged ``[rows, None]``.
        dtypes are ``tf.int64``, ``tf.float32`` or ``tf.string``.
    """
    tf = _tf()
    batch_size = _check_batch_size(batch_size)
    out: Dict[str, Any] = {}
    for feat in _features_of(schema):
        dtype = _tf_dtype(tf, feat["dtype"])
        name = feat["name"]
        if batch_size is None:
            if feat["is_list"]:
                out[name] = tf.io.RaggedFeature(dtype=dtype, value_key=name, row_splits_dtype=tf.int64)
            else:
                out[name] = tf.io.FixedLenFeature([], dtype)
        elif feat["is_list"]:
            out[name] = tf.io.RaggedFeature(
                dtype=dtype, value_key=name + VALUES_SUFFIX, row_splits_dtype=tf.int64,
                partitions=[tf.io.RaggedFeature.RowLengths(name + LENGTHS_SUFFIX)])
        elif drop_last:
            out[name] = tf.io.FixedLenFeature([batch_size], dtype)
        else:
            out[name] = tf.io.FixedLenSequenceFeature([], dtype, allow_missing=True)
    return out


def _prebatched_parser(tf: Any, features: List[Dict[str, Any]]) -> Any:
    """Parse a vector of prebatched records into one batch (records' rows concatenated)."""
    spec: Dict[str, Any] = {}
    for feat in features:
        dtype = _tf_dtype(tf, feat["dtype"])
        name = feat["name"]
        if feat["is_list"]:
            spec[name] = tf.io.RaggedFeature(dtype=dtype, value_key=name + VALUES_SUFFIX, row_splits_dtype=tf.int64,
                                             partitions=[tf.io.RaggedFeature.RowLengths(name + LENGTHS_SUFFIX)])
        else:
            spec[name] = tf.io.RaggedFeature(dtype=dtype, value_key=name, row_splits_dtype=tf.int64)

    def parse(records: Any) -> Dict[str, Any]:
        parsed = tf.io.parse_example(records, spec)
        out = {}
        for name, value in parsed.items():
            # [records, rows(, values)] -> [rows(, values)]: dense for scalars, ragged
            # (rebuilt from __values/__lengths by the RowLengths partition) for lists
            out[name] = value.values
        return out

    return parse


def read_tfrecord(path: str, batch_size: Optional[int] = None, shuffle: bool = False,
                  num_parallel_reads: Optional[int] = None, *, columns: Optional[Sequence[str]] = None,
                  shuffle_buffer: Optional[int] = None, seed: Optional[int] = None,
                  drop_remainder: bool = False, deterministic: Optional[bool] = None) -> Any:
    """Read TFRecords written by :class:`TFRecordSink` as a ``tf.data.Dataset`` of dicts.

    Args:
        path: one output folder (with ``tfrecord_spec.json``, e.g. one worker's shard)
            or a top folder whose subfolders each hold one (all shards are read).
        batch_size: rows per element; every element but the last holds exactly
            ``batch_size`` rows. None: per-example files yield single rows (scalars
            ``[]``, lists 1-D); prebatched files yield one element per record (the
            written batch; a file's last record may be short). Per-example: records are
            batched, then parsed with one vectorized ``tf.io.parse_example`` per batch.
            Prebatched, ``batch_size`` a multiple ``m`` of the written size (the fast
            path): groups of ``m`` full records are parsed together and passed on
            without copying; the leftover full records and the files' short last
            records are read last (skipping to them, not re-reading) and rebatched.
            Prebatched, any other size: every row is rebatched (``Dataset.rebatch``,
            one extra copy, about half the speed).
        shuffle: shuffle file order each epoch and records within a buffer
            (prebatched: whole batches are shuffled, rows inside a record are not; on
            the fast path the rebatched tail still comes last).
        num_parallel_reads: files read concurrently (interleaved); default
            ``tf.data.AUTOTUNE``.
        columns: read only these columns (others are skipped by the parser).
        shuffle_buffer: records in the shuffle buffer; default 10_000 per-example,
            16 prebatched. Ignored unless ``shuffle``.
        seed: shuffle seed.
        drop_remainder: drop a final batch smaller than ``batch_size``.
        deterministic: element order is deterministic; default ``not shuffle``.

    Returns:
        A dataset of ``{column: tensor}``: ``tf.int64`` / ``tf.float32`` / ``tf.string``
        dense tensors ``[batch]`` for scalar columns and ``tf.RaggedTensor``
        ``[batch, None]`` for list columns (per-example, ``batch_size=None``: rows).

    Raises:
        FileNotFoundError / ValueError: see :func:`load_spec`; unknown ``columns``.
    """
    tf = _tf()
    spec = load_spec(path)
    batch_size = _check_batch_size(batch_size)
    autotune = tf.data.AUTOTUNE
    num_parallel_reads = autotune if num_parallel_reads is None else num_parallel_reads
    deterministic = (not shuffle) if deterministic is None else deterministic
    features = spec["features"]
    if columns is not None:
        by_name = {f["name"]: f for f in features}
        unknown = [c for c in columns if c not in by_name]
        if unknown:
            raise ValueError(f"columns {unknown} are not in the TFRecord spec; it has {list(by_name)}")
        features = [by_name[c] for c in columns]
    entries = [f for f in spec["files"] if int(f["records"]) > 0]
    compression = spec.get("compression") or ""
    prebatched = spec["layout"] == "prebatched"
    written = int(spec["batch_size"]) if prebatched else 0
    # prebatched + a multiple of the written size: the bulk is read as whole groups of
    # full records (no copy) and only the tail (leftover full records and the short
    # last record of each file) is rebatched
    split_tail = prebatched and batch_size is not None and batch_size % written == 0
    group = (batch_size // written) if split_tail else 1
    take = [int(f["rows"]) // written if split_tail else int(f["records"]) for f in entries]
    if split_tail:
        leftover = sum(take) % group
        for i in range(len(take) - 1, -1, -1):  # leftover full records come from the last files
            cut = min(leftover, take[i])
            take[i] -= cut
            leftover -= cut
    main_files = [(f["path"], k) for f, k in zip(entries, take) if k > 0]
    tail_files = [(f["path"], k) for f, k in zip(entries, take) if int(f["records"]) > k]

    def open_file(path_: Any, count: Any) -> Any:
        return tf.data.TFRecordDataset(path_, compression_type=compression).take(count)

    files_ds = tf.data.Dataset.from_tensor_slices((
        tf.constant([p for p, _ in main_files], dtype=tf.string),
        tf.constant([k for _, k in main_files], dtype=tf.int64)))
    if shuffle and len(main_files) > 1:
        files_ds = files_ds.shuffle(len(main_files), seed=seed, reshuffle_each_iteration=True)
    cycle = None if num_parallel_reads == autotune else max(1, min(int(num_parallel_reads), max(1, len(main_files))))
    records = files_ds.interleave(open_file, cycle_length=cycle, block_length=1,
                                  num_parallel_calls=num_parallel_reads, deterministic=deterministic)
    if shuffle:
        buf = shuffle_buffer if shuffle_buffer is not None else (16 if prebatched else 10_000)
        if buf > 1:
            records = records.shuffle(buf, seed=seed, reshuffle_each_iteration=True)
    if not prebatched:
        parse_spec = feature_spec({"features": features})
        parse = lambda rec: tf.io.parse_example(rec, parse_spec)  # noqa: E731
        ds = records.batch(batch_size or 1024, drop_remainder=drop_remainder and batch_size is not None)
        ds = ds.map(parse, num_parallel_calls=autotune, deterministic=deterministic)
        if batch_size is None:
            ds = ds.unbatch()
        return ds.prefetch(autotune)
    parse = _prebatched_parser(tf, features)
    if batch_size is None:
        ds = records.batch(1).map(parse, num_parallel_calls=autotune, deterministic=deterministic)
    elif not split_tail:
        # any other size: parse records and rebatch every row to exact sizes (copies)
        ds = records.batch(max(1, batch_size // written)).map(parse, num_parallel_calls=autotune,
                                                                 deterministic=deterministic)
        ds = ds.rebatch(batch_size, drop_remainder=drop_remainder)
    else:
        ds = records.batch(group, drop_remainder=True).map(parse, num_parallel_calls=autotune,
                                                           deterministic=deterministic)
        if tail_files:
            tail = tf.data.Dataset.from_tensor_slices((
                tf.constant([p for p, _ in tail_files], dtype=tf.string),
                tf.constant([k for _, k in tail_files], dtype=tf.int64)))
            tail = tail.flat_map(lambda p, k: tf.data.TFRecordDataset(p, compression_type=compression).skip(k))
            tail = tail.batch(group).map(parse).rebatch(batch_size, drop_remainder=drop_remainder)
            ds = ds.concatenate(tail)
    return ds.prefetch(autotune)
