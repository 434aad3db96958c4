"""TFRecordSink: writes one TFRecord file from consecutive arrow chunks of rows (no
TensorFlow)."""
from __future__ import annotations

import logging
import gzip
import zlib
from typing import Any, BinaryIO, Dict, List, Optional, Sequence

import numpy as np
import pyarrow as pa

from ...schema import Schema
from ..fs import get_fs
from .nested import expand_schema, expand_table
from .spec import _check_batch_size, _check_compression, _feature_dtype, spec_for, write_spec
from . import encoder
from .encoder import _Column, _concat_columns, _encode_batch, _encode_examples, _to_column

logger = logging.getLogger(__name__)

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
            A URL (``s3://bucket/f.tfrecord``...) is written through fsspec.
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
        storage_options: of the remote file system when ``path`` is a URL (see
            :mod:`tabprep.io.fs`); default: the environment's credentials.

    Raises (from :meth:`write`):
        ValueError: a column holds nulls (see the module docstring) or a column is missing.
        TypeError: a column's data type does not match the schema.
    """

    def __init__(self, path: str, schema: Schema, batch_size: Optional[int] = None,
                 compression: Optional[str] = None, drop_last: bool = False,
                 storage_options: Optional[Dict[str, Any]] = None) -> None:
        self.path = path
        self._nested_schema = schema
        self.schema = schema = expand_schema(schema)   # a nested column: leaves + row lengths per level
        self.batch_size = _check_batch_size(batch_size)
        self.compression = _check_compression(compression)
        self.drop_last = bool(drop_last)
        self._kinds = {col.name: _feature_dtype(col) for col in schema}
        spec_for(schema, self.batch_size)  # validates key collisions early
        self._rows = 0
        self._records = 0
        self._dropped = 0
        self._bytes = 0
        self._pending: List[List[_Column]] = []  # converted chunks not yet written (prebatched)
        self._pending_rows = 0
        self._warned_extra = False
        self._stats: Optional[Dict[str, int]] = None
        fs, where = get_fs(path, storage_options)
        fs.makedirs(fs.dirname(fs.norm(where)))
        self._raw: BinaryIO = fs.open(where, "wb")
        self._remote = fs.remote and hasattr(self._raw, "discard")
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
        table = expand_table(table, self._nested_schema)
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
        block = max(1, min(encoder._MAX_BLOCK_ROWS, encoder._BLOCK_BYTES // row_bytes))
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
            self._close_raw()
        self._stats = self._summary(self._bytes)
        logger.debug("TFRecordSink(%s) closed: %s", self.path, self._stats)
        return dict(self._stats)

    def abort(self) -> None:
        """Close the file without flushing buffered rows (after an error); idempotent. A remote
        file is thrown away (closing it would upload the part written so far)."""
        if self._stats is None and self._remote:
            try:
                self._raw.discard()
            finally:
                self._raw.closed = True
            self._stats = self._summary(0)
        if self._stats is None:
            try:
                if self._fh is not self._raw:
                    self._fh.close()
            finally:
                self._close_raw()
            self._stats = self._summary(self._bytes)

    def _summary(self, nbytes: int) -> dict:
        return {"rows": self._rows, "records": self._records, "bytes": nbytes, "dropped_rows": self._dropped}

    def _close_raw(self) -> None:
        # the file's size is what was written to it (a remote file's size is not known locally)
        try:
            self._raw.flush()
            self._bytes = int(self._raw.tell())
        finally:
            self._raw.close()

    def __enter__(self) -> "TFRecordSink":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
