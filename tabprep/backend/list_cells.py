"""The cells of an Arrow list column as numpy arrays, exact (:func:`numpy_cells`).

Part of :mod:`tabprep.backend` (see :func:`tabprep.backend.frames.lists_to_numpy`, which hands
frames to users in NVTabular's layout: one numpy array per row).
"""
from __future__ import annotations

from typing import Any, List

import numpy as np
import pyarrow as pa


def numpy_cells(col: Any) -> np.ndarray:
    """One numpy array per row of Arrow list column ``col`` (a ``ChunkedArray`` or array of a list,
    large list or fixed-size list type), ``None`` for a null row: pyarrow's ``to_numpy``, except
    where a chunk of integers holds a null element. There pyarrow turns every cell of the chunk into
    float64 (NaN for the null), which changes integers beyond 2**53 silently and gives ``[1., 2.]``
    for ``[1, 2]``. Here those cells keep their integer dtype; a cell with a null element is an
    object array of Python ints and ``None``. Other element types are pyarrow's (floats: NaN)."""
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    if not pa.types.is_integer(_leaf_type(col.type)):
        return col.to_numpy(zero_copy_only=False)
    parts: List[np.ndarray] = []
    for chunk in chunks:
        parts.append(_cells(chunk) if _has_null_leaf(chunk) else chunk.to_numpy(zero_copy_only=False))
    if not parts:
        return np.empty(0, dtype=object)
    out = np.empty(sum(len(p) for p in parts), dtype=object)
    at = 0
    for p in parts:   # (np.concatenate would stack equal-length cells into a 2-D array)
        out[at:at + len(p)] = p
        at += len(p)
    return out


def _is_list(type_: Any) -> bool:
    return pa.types.is_list(type_) or pa.types.is_large_list(type_) or pa.types.is_fixed_size_list(type_)


def _leaf_type(type_: Any) -> Any:
    """The element type under every list level of ``type_`` (list<list<int64>>: int64)."""
    while _is_list(type_):
        type_ = type_.value_type
    return type_


def _has_null_leaf(chunk: Any) -> bool:
    """Whether the leaves backing ``chunk`` hold a null, as pyarrow's ``to_numpy`` sees them: also
    under null rows (a fixed-size list's null row has null slots; a list's may cover values), which
    ``flatten()`` leaves out. Leaves outside a sliced chunk count too (the exact path then runs for
    nothing, with the same cells)."""
    leaves = chunk
    while _is_list(leaves.type):
        leaves = leaves.values
    return leaves.null_count > 0


def _offsets(chunk: Any) -> np.ndarray:
    """Where each row of ``chunk`` starts in ``chunk.values`` (n + 1 entries; the slice offset included)."""
    if pa.types.is_fixed_size_list(chunk.type):
        size = chunk.type.list_size
        return (np.arange(len(chunk) + 1, dtype=np.int64) + chunk.offset) * size
    return chunk.offsets.to_numpy(zero_copy_only=False).astype(np.int64)


def _cells(chunk: Any) -> np.ndarray:
    """The cells of list array ``chunk`` whose integer leaves hold nulls: each an integer array
    (a view), an object array of Python ints and ``None`` where it holds a null, or for a nested
    list an object array of its inner cells (made the same way, as pyarrow nests them)."""
    values = chunk.values
    if _is_list(values.type):
        inner, nulls = _cells(values), None
    else:
        inner = values.fill_null(0).to_numpy(zero_copy_only=False)
        nulls = values.is_null().to_numpy(zero_copy_only=False)
    row_null = chunk.is_null().to_numpy(zero_copy_only=False)
    offsets = _offsets(chunk)
    if nulls is not None:   # which rows hold a null leaf, for all rows at once (per row: ~1 us a row)
        seen = np.concatenate([[0], np.cumsum(nulls, dtype=np.int64)])
        has_null = seen[offsets[1:]] > seen[offsets[:-1]]
    out = np.empty(len(chunk), dtype=object)
    for i in range(len(chunk)):
        if row_null[i]:
            continue   # (None)
        a, b = offsets[i], offsets[i + 1]
        cell = inner[a:b]
        if nulls is None:
            cell = cell.copy()   # an object array of the inner cells
        elif has_null[i]:
            cell = cell.astype(object)   # Python ints, exact
            cell[nulls[a:b]] = None
        out[i] = cell
    return out


__all__ = ["numpy_cells"]
