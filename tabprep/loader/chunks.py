"""Chunk preparation of a loader: read a chunk's pieces, transform, take columns as arrays, shuffle
into blocks. Runs in the loader's prefetch threads.

Part of :mod:`tabprep.loader.core` (see its docstring for the loader's data flow, step 4):
:class:`_ChunkPreparation` is a base of :class:`~tabprep.loader.core.DataLoader` and reads the
loader's resolved configuration (source, columns, transform, device); the row orders come from
:mod:`~tabprep.loader.planning` (drawn with numpy on the host, so the same on the CPU and the GPU).
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Dict, List, Optional

import numpy as np
import pyarrow as pa

from .. import backend
from .._warn import first_time, warn_difference
from ..backend.batch_arrays import BufferPool, block_buffers
from .blocks import StreamedBlocks, build_blocks
from .nested import check_fixed, is_nested_series, leaves_are_integers, nested_column, pad_chunk_column
from .planning import _EpochPlan, permutation_job
from .ragged import _Chunk, _RaggedColumn, _xp, add_batch_starts
from .sources import _Piece

log = logging.getLogger("tabprep.loader.core")


def truncation_message(name: str, longest: int, size: int) -> str:
    """The warning where rows of list column ``name`` (up to ``longest`` values) are cut to
    ``sparse_max`` (``size``), by the core loader's padding (the framework loaders' ``sparse_names``
    columns too)."""
    return (f"loader: list column {name!r} has rows of up to {longest} values, more than its sparse_max ({size}); "
            f"tabprep keeps their first {size} values. NVTabular 23.08's loader does not cut them: on the CPU "
            f"merlin-dataloader reshapes the column's values by the first row's length (a ValueError, or rows "
            f"split at the wrong places), on the GPU it passes them on unpadded (docs/migration.md). Pass "
            f"sparse_max={{{name!r}: {longest}}} or more (the default is the schema's value_count['max']) to "
            f"keep every value")


def _is_float64(s: Any) -> bool:
    """True for a float64 column: a pandas / cuDF series or an Arrow column (the CPU's no-workflow path)."""
    dtype = getattr(s, "dtype", None)
    if dtype is None:
        typ = getattr(s, "type", None)
        return typ is not None and pa.types.is_float64(typ)
    return str(dtype) in ("float64", "Float64", "double[pyarrow]")


def _expected_dtype(typ: Any, cont: bool) -> Optional[np.dtype]:
    """The dtype the loader makes of a column of Arrow type ``typ`` without nulls (None: not a
    scalar numeric column, or unknown): what :class:`~tabprep.loader.blocks.StreamedBlocks` lays
    its blocks out by."""
    if typ is None:
        return None
    if pa.types.is_integer(typ):
        return np.dtype(typ.to_pandas_dtype())
    if pa.types.is_floating(typ):
        return np.dtype(np.float32) if cont else np.dtype(typ.to_pandas_dtype())
    if pa.types.is_boolean(typ):
        return np.dtype(bool)
    return None


def _stacked_column(name: str, parts: List[Any]) -> Any:
    """Column ``name`` of a chunk from its parts (Arrow columns, one per piece), as the whole-piece
    read takes it (:func:`tabprep.backend.frame_column` of the stacked table): an Arrow column or a
    pandas series; parts whose types differ between files are reconciled by pandas, as there."""
    tables = [pa.table({name: p}) for p in parts]
    try:
        table = tables[0] if len(tables) == 1 else pa.concat_tables(tables)
    except pa.ArrowInvalid:
        return backend.tables_to_frame(tables)[name]
    return backend.frame_column(table, name)


class _ChunkPreparation:
    """The chunk-preparation steps of :class:`~tabprep.loader.core.DataLoader` (a base class: the
    attributes used here are the loader's)."""

    _source: Any
    _device: Any
    _read_columns: Optional[List[str]]
    _transform: Optional[Callable[[Any], Any]]
    _exact: bool
    shuffle: bool
    batch_size: int
    #: make list columns' per-batch offsets once per chunk (set by the framework adapters that hand
    #: offsets over: :class:`tabprep.loader._adapter.FrameworkLoader`)
    batch_starts: bool = False
    sparse_as_dense: bool
    _label_names: List[str]
    _cat_names: List[str]
    _cont_names: List[str]
    _passthrough: List[str]
    _sparse_names: List[str]
    _sparse_names_arg: Optional[List[str]]
    _sparse_max: Dict[str, Any]
    _warned_nulls: set
    _warned_narrowing: set
    _warned_truncation: set

    def _output_schema(self) -> Any:
        raise NotImplementedError

    def _read_piece(self, piece: _Piece) -> Any:
        units = [self._source.units[i] for i in piece.units]
        df = self._source.read_part(units, self._read_columns)
        full = sum(u.num_rows for u in units)
        if piece.start or piece.stop != full:
            df = backend.slice_rows(df, piece.start, piece.stop)
        return df

    def _prepare_chunk(self, plan: _EpochPlan, k: int, buffers: Optional[BufferPool] = None) -> _Chunk:
        """Chunk ``k`` of ``plan`` read, transformed and shuffled into blocks (on the CPU in memory of
        ``buffers``, the epoch's pool, when given)."""
        pieces = plan.chunks[k]
        expected = plan.offsets[k + 1] - plan.offsets[k]
        # the chunk's row order is drawn on the host while its pieces are read and transformed
        # (numpy releases the GIL while shuffling): ~60 ms per 4M rows no longer adds to the chunk
        # (a GPU computes the order itself: one kernel, no copy from the host)
        perm_job = permutation_job(plan, k) if self._exact and self.shuffle and expected > 1 \
            and self._device.host_orders else None
        order = list(dict.fromkeys(self._cat_names + self._cont_names + self._label_names))
        stream = self._source.column_stream(pieces, order) if self._transform is None else None
        if stream is not None:
            chunk = self._streamed_chunk(stream, order, plan, k, expected, perm_job, buffers)
            self._finish_chunk(chunk, self._first_full_batch_row(plan, k))
            chunk.ready = self._device.mark_ready(keep=None)   # host arrays: nothing to wait for
            return chunk
        ahead = getattr(self.workflow, "build_lookups_ahead", None)   # a Workflow: its vocabularies'
        if ahead is not None:   # lookups built in the background (once) while the first chunk is read
            ahead(self.cpu)
        raw = self._source.read_pieces(pieces, self._read_columns)
        if raw is None:
            parts = [self._read_piece(p) for p in pieces]
            # no transform: columns are taken from what the source stacks best (an Arrow table on the CPU)
            raw = self._source.stack(parts) if self._transform is not None else self._source.stack_columns(parts)
        if len(raw) != expected:
            raise RuntimeError(f"read {len(raw)} rows for chunk {k}, expected {expected}: did the data change "
                               f"since the loader was created?")
        df = raw
        if self._transform is not None:
            df = self._transform(raw)
            if self._exact and len(df) != len(raw):
                raise ValueError(f"the mapped transform returned {len(df)} rows for {len(raw)} input rows; the "
                                 f"loader needs row-preserving transforms (use a tabprep Workflow with Filter to "
                                 f"drop rows)")
        columns = self._to_columns(df, raw)
        n = len(df)
        perm = perm_job.result() if perm_job is not None else self._permutation(plan, k, n)
        if perm is not None:
            perm = self._device.index_array(perm)
        first = self._first_full_batch_row(plan, k)
        if self.sparse_as_dense:
            for name, m in self._sparse_max.items():
                # padded in chunk order, gathered with the other columns below
                columns[name] = pad_chunk_column(columns[name], m, name)
        with block_buffers(buffers):
            chunk = build_blocks(columns, self._label_names, perm, first, n)
        self._finish_chunk(chunk, first)
        # the chunk's device work is marked done by an event the consumer waits on when it takes the
        # chunk (_ChunkStream.get): its arrays are complete before the consumer's thread hands them
        # on, and this thread goes on to its next chunk without waiting for the GPU (a wait here, on
        # the default stream, also waited for the other preparation thread's queued work).
        # (a frame read on a stream of its own is held until that work is done: CudaDevice.mark_ready)
        chunk.ready = self._device.mark_ready(keep=raw if backend.reads_on_own_stream(raw) else None)
        return chunk

    def _first_full_batch_row(self, plan: _EpochPlan, k: int) -> int:
        """The first row of chunk ``k`` that starts a full batch: on the CPU, batch slices from there
        on are 64-byte aligned (backend.take_block), so the TF adapter hands them over without a copy."""
        return (-plan.offsets[k]) % self.batch_size if self._exact else 0

    def _streamed_chunk(self, stream: Any, order: List[str], plan: _EpochPlan, k: int, expected: int,
                        perm_job: Any, buffers: Optional[BufferPool]) -> _Chunk:
        """Chunk ``k`` (``expected`` rows) read column by column
        (:meth:`~tabprep.loader.sources._Source.column_stream`, no transform): each column is
        converted and gathered into its block right after its read."""
        labels = set(self._label_names)
        padded = set(self._sparse_max) if self.sparse_as_dense else set()
        layout = {}
        for name in order:
            dtype = _expected_dtype(stream.types.get(name), name in self._cont_names)
            if dtype is not None and name not in padded:
                layout[name] = (name in labels, dtype.str)
        first = self._first_full_batch_row(plan, k)
        blocks = None
        with block_buffers(buffers):
            for name, parts in stream:
                n = sum(len(p) for p in parts)
                if n != expected:
                    raise RuntimeError(f"read {n} rows of column {name!r} for chunk {k}, expected {expected}: did "
                                       f"the data change since the loader was created?")
                col = self._to_column(name, _stacked_column(name, parts))
                if name in padded:   # padded in chunk order, gathered below
                    col = pad_chunk_column(col, self._sparse_max[name], name)
                if blocks is None:   # the row order, drawn while the first column was read
                    perm = perm_job.result() if perm_job is not None else self._permutation(plan, k, n)
                    blocks = StreamedBlocks(layout, None if perm is None else self._device.index_array(perm),
                                            first, n)
                blocks.add(name, col, name in labels)
            return blocks.finish(order, self._label_names)

    def _finish_chunk(self, chunk: _Chunk, first: int) -> None:
        """The host offsets of a prepared chunk's list columns, and their rows' starts within their
        batches when a framework adapter asked for them (``batch_starts``: :func:`add_batch_starts`;
        ``first``: the chunk's first full batch row)."""
        for c in chunk.columns.values():
            if isinstance(c, _RaggedColumn):
                c.row_lengths = c.offsets[1:] - c.offsets[:-1]
                c.host_offsets = backend.to_numpy(c.offsets)
                if self.batch_starts and getattr(c, "levels", None) is None:
                    add_batch_starts(c, first, self.batch_size)

    def _permutation(self, plan: _EpochPlan, k: int, n: int) -> Optional[np.ndarray]:
        return self._device.row_order(n, plan.chunk_seed(k)) if self.shuffle else None

    def _to_columns(self, df: Any, raw: Any) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for name in self._cat_names + self._cont_names + self._label_names:
            if name in self._passthrough:
                if len(raw) != len(df):
                    raise ValueError(f"label {name!r} is passed through from the raw data, but the workflow "
                                     f"dropped rows: add it to the workflow's output")
                s = backend.frame_column(raw, name)
            else:
                s = backend.frame_column(df, name)
            out[name] = self._to_column(name, s)
        return out

    def _to_column(self, name: str, s: Any) -> Any:
        """The loader's arrays of column ``name`` of a chunk (``s``: :func:`tabprep.backend.frame_column`'s
        series or Arrow column): numpy / cupy values, or a ragged / nested list column."""
        cont = name in self._cont_names
        if is_nested_series(s):   # list<list<...>>: leaves + per-row leaf counts + inner levels
            # integer leaves stay integers under cont_names (the SOK notebook's keys; NVTabular keeps them)
            col = nested_column(s, lambda leaves: self._values(leaves, name, cont and not leaves_are_integers(leaves)))
            check_fixed(col, name, self._output_schema(), "the chunk being read (rows counted before shuffling)")
            return col
        if backend.is_list_series(s):
            leaves, offsets = backend.list_leaves(s)
            values = self._values(leaves, name, cont)
            xp = _xp(values)
            col = _RaggedColumn(values, xp.ascontiguousarray(xp.asarray(offsets, dtype=xp.int64)))
            if self.sparse_as_dense and isinstance(self._sparse_max.get(name), int):
                self._note_truncation(name, col, self._sparse_max[name])
            if name not in self._sparse_names:
                self._sparse_names.append(name)
                if self.sparse_as_dense and self._sparse_names_arg is None and name not in self._sparse_max:
                    raise ValueError(f"list column {name!r} needs sparse_max={{{name!r}: N}} for sparse_as_dense")
            return col
        return self._values(s, name, cont)

    def _note_truncation(self, name: str, col: _RaggedColumn, size: int) -> None:
        """Once per loader and column: rows longer than ``sparse_max`` are cut to their first
        ``size`` values, where NVTabular 23.08's loader does not cut them (one reduction per chunk
        of the ragged column ``col``, until a row is cut)."""
        if name in self._warned_truncation:
            return
        # on the chunk's own device: the offsets copied to the host and differenced there took ~6 ms
        # a 2.5M-row chunk on an H200, libcudf's .list.len().max() 4.7 ms; a CuPy difference and
        # max is one reduction and one scalar to the host (docs/benchmarks.md, twenty-second session)
        lengths = col.row_lengths = col.lengths   # kept: the shuffle's take_ragged reads them too
        longest = int(lengths.max()) if len(lengths) else 0
        if longest > size and first_time(self._warned_truncation, name):
            warn_difference(truncation_message(name, longest, size), stacklevel=2)

    def _values(self, s: Any, name: str, cont: bool) -> Any:
        """Contiguous numpy / cupy values of a scalar series (float32 for continuous float columns).

        Nulls become NaN in float columns and 0 in integer / bool ones (with a warning)."""
        if backend.is_string_series(s):
            raise TypeError(f"column {name!r} holds strings; the loader emits numeric tensors only: encode it with "
                            f"Categorify or HashBucket in the workflow")
        out = backend.column_array(s, cont, lambda: self._warn_nulls(name, s))
        if cont and name not in self._warned_narrowing and _is_float64(s) \
                and first_time(self._warned_narrowing, name):   # once per column, whatever thread meets it
            warn_difference(f"loader: continuous column {name!r} is float64; its batches hold it as float32 (what "
                            f"Keras and PyTorch layers take), where NVTabular 23.08's loader (merlin-dataloader) "
                            f"keeps float64 (docs/migration.md). Output float32 from the workflow (e.g. "
                            f"Normalize(out_dtype='float32')) to make the narrowing explicit", stacklevel=2)
        return out

    def _warn_nulls(self, name: str, s: Any) -> None:
        if name not in self._warned_nulls:
            self._warned_nulls.add(name)
            log.warning("column %r has nulls: emitted as NaN (floats) or 0 (integers); fill them in the workflow "
                        "(FillMissing / Categorify)", name)
