"""The TFRecord layout of a schema (features, dtypes, prebatched keys) and the folder's
``tfrecord_spec.json``: written by the writer, read by :func:`load_spec` and the readers.
TensorFlow-free."""
from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, List, Optional

from ..._util import whole_number
from ..commit import TFRECORD_SPEC_FILE
from ...schema import ColumnSchema, Schema
from .nested import expand_schema

#: Name of the spec file written into every TFRecord output folder.
SPEC_FILE = TFRECORD_SPEC_FILE
SPEC_VERSION = 1
#: Feature-key suffixes of a list column in the prebatched layout.
VALUES_SUFFIX = "__values"
LENGTHS_SUFFIX = "__lengths"

_COMPRESSIONS = (None, "GZIP", "ZLIB")


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
    rows = whole_number(batch_size, 1)   # (NaN and strings raised int()'s own errors)
    if rows is None:
        raise ValueError(f"batch_size must be None (per-example records) or a positive int, got {batch_size!r}")
    return rows


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
    schema = expand_schema(schema)   # nested columns: leaf values + one row-lengths feature per inner level
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
            **({"nested": col.properties["nested"]} if "nested" in col.properties else {}),
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
