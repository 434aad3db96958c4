"""Arrays of the loader's batches: 64-byte aligned gathers (rows of a column, 2-D blocks of
same-dtype columns) and a column's values as a contiguous array (float32 for continuous floats).

numpy / Arrow implementations; the cupy ones are in :mod:`tabprep.backend.gpu`, registered lazily
on the same :class:`~tabprep.backend.dispatch.Dispatch` objects. Split from
:mod:`tabprep.backend.arrays`, which re-exports these names.
"""
from __future__ import annotations

import contextlib
import sys
import threading
from typing import Any, Callable, Iterator, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa

from .dispatch import Dispatch, register_gpu_lazy

#: alignment of the batch arrays made on the CPU: TensorFlow's CPU kernels need 64-byte aligned
#: buffers, and aligned arrays can be handed to it through DLPack without a copy
ALIGN = 64


class BufferPool:
    """Host buffers of a loader's chunks, handed out again once no array made from them is alive.

    A chunk's blocks are tens of MB; memory fresh from the allocator (a new mapping, or pages the
    allocator gave back) faults on its first write, which costs about as much as the copy into it.
    The pool keeps up to ``max_buffers`` buffers and reuses one only when nothing but the pool
    references it (CPython's reference count: every numpy view of it, and every DLPack tensor made
    from those, holds a reference), so batches a caller keeps are never overwritten. One pool per
    epoch of a loader (:class:`~tabprep.loader.prefetch._ChunkStream`): it goes with the epoch.
    """

    def __init__(self, max_buffers: int = 16) -> None:
        self._bufs: list = []
        self._max = int(max_buffers)
        self._lock = threading.Lock()

    def take(self, nbytes: int) -> np.ndarray:
        """A uint8 buffer of at least ``nbytes`` bytes (at most a quarter more when reused)."""
        with self._lock:
            bufs = self._bufs
            spare = None
            for i in range(len(bufs)):
                # 2 references: the pool's list and getrefcount's argument; no array of it is alive
                if sys.getrefcount(bufs[i]) == 2:
                    if nbytes <= len(bufs[i]) <= nbytes + nbytes // 4:
                        return bufs[i]
                    spare = i if spare is None else spare
            buf = _new_buffer(nbytes)
            if len(bufs) < self._max:
                bufs.append(buf)
            elif spare is not None:   # a free buffer of another size makes room
                bufs[spare] = buf
            return buf


_current = threading.local()


@contextlib.contextmanager
def block_buffers(pool: Optional[BufferPool]) -> Iterator[None]:
    """Within the block, this thread's aligned arrays (:func:`take_block`, :func:`take_aligned`) come
    from ``pool`` (None: new buffers)."""
    prev = getattr(_current, "pool", None)
    _current.pool = pool
    try:
        yield
    finally:
        _current.pool = prev


def _new_buffer(nbytes: int) -> np.ndarray:
    # from Arrow's memory pool (mimalloc), which reuses recently freed memory, where a large
    # np.empty is a fresh mapping whose pages all fault on first write; the array keeps the Arrow
    # buffer alive, which returns to Arrow's pool with it
    return np.frombuffer(pa.allocate_buffer(nbytes), dtype=np.uint8)


def _aligned_empty(shape: Tuple[int, ...], dtype: np.dtype, first_byte: int) -> np.ndarray:
    """An uninitialised C-contiguous array of ``shape`` whose byte ``first_byte`` starts on an
    :data:`ALIGN`-byte boundary (from the thread's :class:`BufferPool` inside :func:`block_buffers`)."""
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    pool = getattr(_current, "pool", None)
    buf = pool.take(nbytes + ALIGN) if pool is not None else _new_buffer(nbytes + ALIGN)
    off = (-(buf.ctypes.data + first_byte)) % ALIGN
    return buf[off:off + nbytes].view(dtype).reshape(shape)


def take_aligned(arr: np.ndarray, perm: Optional[np.ndarray], first_row: int) -> np.ndarray:
    """``arr[perm]`` (or a copy of ``arr``) in a new array whose row ``first_row`` starts on an
    :data:`ALIGN`-byte boundary: batches start at that row plus multiples of ``batch_size``, so
    their slices are aligned whenever ``batch_size * row bytes`` is a multiple of :data:`ALIGN`."""
    shape = ((len(perm) if perm is not None else len(arr)),) + arr.shape[1:]
    row_bytes = int(np.prod(arr.shape[1:], dtype=np.int64)) * arr.dtype.itemsize
    out = _aligned_empty(shape, arr.dtype, first_row * row_bytes)
    if perm is None:
        np.copyto(out, arr)
    else:
        np.take(arr, perm, axis=0, out=out, mode="clip")   # indices are valid; "clip" avoids a buffered copy
    return out


take_rows = Dispatch("take_rows", """Rows ``perm`` (None: all) of a batch array, as the loader's chunks
hold them: on the CPU a new array aligned at row ``first_row`` (:func:`take_aligned`); on the GPU
``arr[perm]`` (``arr`` itself when ``perm`` is None; ``perm`` on the device).""")
take_rows.register(object, take_aligned)

take_block = Dispatch("take_block", """One 2-D block ``(len(arrays), rows)`` of same-dtype 1-D arrays, row ``j``
holding ``arrays[j][perm]`` (``perm`` None: all rows, in order; else valid row indices, not
bounds-checked on the CPU: the loader passes a permutation of the rows): the loader keeps a chunk's columns of
one dtype and role (features / labels) in one block, so a batch is one slice of it and reaches a
framework in one DLPack hand-off. Dispatched on ``like`` (``arrays[0]``). On the CPU each row's element
``first_row`` starts on an :data:`ALIGN`-byte boundary and rows are :data:`ALIGN`-byte multiples apart
(batch slices stay aligned, as :func:`take_aligned` makes them), and ``arrays`` may mix numpy arrays
and null-free numeric Arrow (chunked) arrays, as :func:`~tabprep.backend.frame_column` gives them; on
the GPU a plain ``(k, rows)`` array.""")

#: numpy kinds gathered with Arrow's ``take`` on the CPU (bools and others keep ``np.take``)
_ARROW_TAKE_KINDS = "iuf"


def block_dtype(arr: Any) -> np.dtype:
    """numpy dtype of a loader column: a numpy / cupy array, or a numeric Arrow (chunked) array."""
    if isinstance(arr, (pa.Array, pa.ChunkedArray)):
        return np.dtype(arr.type.to_pandas_dtype())
    return arr.dtype


def _arrow_chunks(arr: Any) -> list:
    """The numpy views (no copy) of a null-free numeric Arrow array's chunks, in order."""
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    return [c.to_numpy(zero_copy_only=True) for c in chunks if len(c)]


def _arrow_values(arr: Any) -> np.ndarray:
    """One numpy array of a null-free numeric Arrow array's values (a copy when it has several chunks)."""
    chunks = _arrow_chunks(arr)
    return chunks[0] if len(chunks) == 1 else np.concatenate(chunks) if chunks else np.empty(0, block_dtype(arr))


def _fill(row: np.ndarray, parts: Sequence[np.ndarray]) -> None:
    """Copy ``parts`` one after the other into ``row``."""
    for pos, part in zip(np.cumsum([0] + [len(p) for p in parts[:-1]]), parts):
        row[pos:pos + len(part)] = part


class BlockGather:
    """A CPU block ``(rows, n)`` of dtype ``dtype`` filled one row at a time: row ``j`` gets
    ``arr[perm]`` (``perm`` None: ``arr`` as it is) by :meth:`fill`. Element ``first_row`` of each
    row starts on an :data:`ALIGN`-byte boundary and rows are :data:`ALIGN`-byte multiples apart,
    as :func:`take_block` lays them out (from the thread's :class:`BufferPool` inside
    :func:`block_buffers`). The loader fills a row as soon as its column is read
    (:mod:`tabprep.loader.blocks`), while the column's values are still in the CPU's cache."""

    def __init__(self, dtype: np.dtype, rows: int, n: int, perm: Optional[np.ndarray], first_row: int) -> None:
        self.dtype = dtype = np.dtype(dtype)
        size = dtype.itemsize
        # a row stride of whole ALIGN-byte units (ALIGN is a multiple of every numeric itemsize)
        unit = max(ALIGN // size, 1) if ALIGN % size == 0 else ALIGN
        stride = max(-(-n // unit) * unit, unit)
        self.array = _aligned_empty((rows, stride), dtype, first_row * size)[:, :n]
        self.perm = perm
        # the shuffle's gather: Arrow's take kernel runs about twice as fast as np.take on a chunk
        # (and reads Arrow's chunks as they are, with no concatenation), one index array for all columns
        self._indices = None
        if perm is not None and dtype.kind in _ARROW_TAKE_KINDS:
            # the permutation as it is (int32 from the loader, int64 for the biggest chunks): no conversion per block
            self._indices = pa.array(perm if perm.dtype.kind in "iu" else perm.astype(np.int64))

    def fill(self, j: int, arr: Any) -> None:
        """Row ``j`` := ``arr[perm]``: ``arr`` a numpy array or a null-free numeric Arrow (chunked)
        array of the block's dtype."""
        import pyarrow.compute as pc

        row = self.array[j]
        arrow = isinstance(arr, (pa.Array, pa.ChunkedArray))
        if self._indices is not None:
            # numpy values go to Arrow without a copy (no mask: NaN stays a value, not a null)
            # no bounds check: ``perm`` is a permutation of the chunk's rows (a pass over the
            # indices per column saved, about a sixth of the gather)
            _fill(row, _arrow_chunks(pc.take(arr if arrow else pa.array(arr), self._indices, boundscheck=False)))
        elif self.perm is None:
            _fill(row, _arrow_chunks(arr) if arrow else [arr])
        else:   # indices are valid; "clip" avoids a buffered copy
            np.take(_arrow_values(arr) if arrow else arr, self.perm, out=row, mode="clip")


@take_block.register(object)
def _take_block(like: Any, arrays: Sequence[Any], perm: Optional[np.ndarray], first_row: int) -> np.ndarray:
    n = len(perm) if perm is not None else len(arrays[0])
    gather = BlockGather(block_dtype(arrays[0]), len(arrays), n, perm, first_row)
    for j, arr in enumerate(arrays):
        gather.fill(j, arr)
    return gather.array


column_array = Dispatch("column_array", """Contiguous numpy / cupy values of a scalar (non-string)
series for the loader: float columns become float32 when ``cont``; integer / bool columns keep their
dtype (merlin-dataloader 23.08 keeps every column's dtype; a float32 cast would round ids above 2**24);
nulls become NaN in float columns and 0 in integer / bool ones, after calling ``on_nulls()``.""")


@column_array.register(object)
def _column_array(s: Any, cont: bool, on_nulls: Callable[[], None]) -> Any:
    dtype = s.dtype
    np_dtype = np.dtype(getattr(dtype, "numpy_dtype", dtype)) if not isinstance(dtype, np.dtype) else dtype
    if not isinstance(dtype, np.dtype) and s.hasnans:
        on_nulls()
        if np_dtype.kind in "iub":
            arr = s.to_numpy(dtype=np_dtype if np_dtype.kind != "b" else np.int8, na_value=0)
        else:
            arr = s.to_numpy(dtype=np.float32 if cont else np.float64, na_value=np.nan)
    else:
        arr = s.to_numpy(dtype=np_dtype)
    return np.ascontiguousarray(_cont_dtype(arr) if cont else arr)


def _cont_dtype(arr: Any) -> Any:
    """float32 for a continuous column's floats; integers and bools keep their dtype."""
    return arr if arr.dtype.kind in "iub" or arr.dtype == np.float32 else arr.astype(np.float32)


@column_array.register(np.ndarray)
def _column_array_numpy(arr: np.ndarray, cont: bool, on_nulls: Callable[[], None]) -> np.ndarray:
    # a null-free numeric column taken from Arrow without pandas (backend.frame_column)
    return np.ascontiguousarray(_cont_dtype(arr) if cont else arr)


@column_array.register(pa.ChunkedArray)
def _column_array_arrow(arr: pa.ChunkedArray, cont: bool, on_nulls: Callable[[], None]) -> Any:
    # a null-free numeric column of the loader's Arrow chunk (backend.frame_column): kept as Arrow
    # chunks for the gather (take_block), unless a continuous float column needs the float32 cast
    if cont and pa.types.is_floating(arr.type) and not pa.types.is_float32(arr.type):
        return _column_array_numpy(_arrow_values(arr), cont, on_nulls)
    return arr


register_gpu_lazy(take_rows, take_block, column_array)
