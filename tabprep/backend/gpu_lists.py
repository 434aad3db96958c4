"""The cuDF implementations of the list-column functions (:mod:`tabprep.backend.lists`): a list
column's leaves and offsets, building one back from them, nested lists level by level.

Part of :mod:`tabprep.backend.gpu`, which imports it (importing registers these implementations),
so it is loaded lazily too, never by ``import tabprep``.
"""
from __future__ import annotations

import logging
from typing import Any

import cudf
import cupy
import pyarrow as pa

from . import lists as L
from .dispatch import register_gpu as _register

log = logging.getLogger("tabprep.backend")


# ---------------------------------------------------------------------------
# lists
# ---------------------------------------------------------------------------
def _is_list_dtype(dtype: Any) -> bool:
    """A list dtype, as cuDF spells it (``cudf.ListDtype``) or as pandas' ``ArrowDtype(list)``, which
    cuDF 26 also reports for list columns made by some operations."""
    if isinstance(dtype, cudf.ListDtype):
        return True
    typ = getattr(dtype, "pyarrow_dtype", None)
    return typ is not None and (pa.types.is_list(typ) or pa.types.is_large_list(typ))


def _elements_are_lists(dtype: Any) -> bool:
    """True for ``list<list<...>>`` in either spelling of :func:`_is_list_dtype`."""
    if isinstance(dtype, cudf.ListDtype):
        return _is_list_dtype(dtype.element_type)
    typ = getattr(dtype, "pyarrow_dtype", None)
    return typ is not None and _is_list_dtype(typ) and (pa.types.is_list(typ.value_type)
                                                        or pa.types.is_large_list(typ.value_type))


@_register(L.list_leaves)
def _list_leaves(series: Any):
    col = series.list
    if _elements_are_lists(series.dtype):
        # nested lists: one level, as on the CPU (cuDF's .list.leaves flattens every level)
        return _one_level(series)
    leaves = col.leaves
    lengths = col.len().fillna(0).astype("int64").values
    offsets = cupy.concatenate([cupy.zeros(1, dtype="int64"), cupy.cumsum(lengths)])
    return leaves.reset_index(drop=True), offsets


def _one_level(series: Any):
    """(elements, offsets) of the outer level of a nested list series (null rows as empty lists)."""
    lengths = series.list.len().fillna(0).astype("int64").values
    offsets = cupy.concatenate([cupy.zeros(1, dtype="int64"), cupy.cumsum(lengths)])
    exploded = series.reset_index(drop=True).explode()
    # explode gives an empty or null row one null element: keep the elements of non-empty rows only
    width = cupy.maximum(lengths, 1)
    starts = cupy.cumsum(width) - width
    keep = cupy.ones(int(width.sum()), dtype=bool)
    keep[starts[lengths == 0]] = False
    return exploded[keep].reset_index(drop=True), offsets


@_register(L._list_from_leaves)
def _list_from_leaves(like: Any, values: Any, offsets: Any, name: Any, keep: bool):
    return _gpu_list_from_leaves(values, offsets, like, name, keep_nulls=keep)


def _gpu_list_from_leaves(values: Any, offsets: Any, like: Any, name: Any, keep_nulls: bool = False):
    # nan_as_null=False: a NaN leaf (log1p(-2), a NaN input) stays NaN, as the CPU's pa.array of the same
    # numpy values keeps it (cuDF's default turns NaN into null: the GPU gave None where the CPU gave nan)
    vals = values if isinstance(values, cudf.Series) else cudf.Series(values, nan_as_null=False)
    offs = cudf.Series(cupy.asarray(offsets).astype("int32"))
    try:
        import pylibcudf as plc

        mask, null_count = None, 0
        if keep_nulls and like.null_count:
            # same rows as ``like``: reuse its validity bitmask for the null rows
            src = like._column.to_pylibcudf(mode="read")
            if src.offset():  # a sliced view: materialize so the bitmask starts at row 0
                src = like.copy(deep=True)._column.to_pylibcudf(mode="read")
            mask, null_count = src.null_mask(), src.null_count()
        col = plc.Column(plc.DataType(plc.TypeId.LIST), len(offs) - 1, None, mask, null_count, 0,
                         [offs._column.to_pylibcudf(mode="read"), vals._column.to_pylibcudf(mode="read")])
        out = cudf.Series.from_pylibcudf(col)
    except (ImportError, AttributeError, TypeError) as exc:
        # older cuDF: rebuild through Arrow on the host (slower, same result)
        log.debug("pylibcudf list construction unavailable (%s); using Arrow", exc)
        nulls = pa.array(like.isna().to_numpy()) if keep_nulls and like.null_count else None
        arr = pa.ListArray.from_arrays(offs.to_arrow(), vals.to_arrow(), mask=nulls)
        out = cudf.Series.from_arrow(arr)
    out.index = like.index
    return out.rename(name)


@_register(L.list_levels)
def _list_levels(series: Any):
    offsets = []
    cur = series
    while _is_list_dtype(cur.dtype):
        cur, offs = _list_leaves(cur)
        offsets.append(offs)
    return cur, offsets


def empty_series(dtype: Any, index: Any = None, name: Any = None):
    """A zero-row cuDF series of ``dtype`` whose device column has the types at every level.

    A zero-row list column from Arrow (``cudf.DataFrame.from_arrow``: dask's ``meta`` frames) has
    children of libcudf's EMPTY type under a correct Python dtype; the first kernel that rebuilds the
    column from pylibcudf (``from_pylibcudf``, as the list functions here do) reads the EMPTY leaves
    as strings, and e.g. ``Clip`` then fails with "Expected bytes, got numpy.float64" (issue #31).
    ``column_empty`` allocates each level's child with its own type."""
    from cudf.core.column import column_empty

    if not isinstance(dtype, cudf.ListDtype) and _is_list_dtype(dtype):
        dtype = cudf.ListDtype.from_arrow(dtype.pyarrow_dtype)
    out = cudf.Series._from_column(column_empty(0, dtype), name=name)
    if index is not None:
        out.index = index
    return out


def _leaf_dtype(dtype: Any) -> Any:
    if not isinstance(dtype, cudf.ListDtype) and _is_list_dtype(dtype):
        dtype = cudf.ListDtype.from_arrow(dtype.pyarrow_dtype)
    return dtype.leaf_type


@_register(L.nested_flatten)
def _nested_flatten(series: Any):
    """cuDF: every level's offsets (null lists empty) and validity, on the device."""
    if len(series) == 0:   # typed at every level (see empty_series)
        levels = [(cupy.zeros(1, dtype="int64"), None) for _ in range(L.list_depth(series))]
        return empty_series(cudf.ListDtype(_leaf_dtype(series.dtype)), series.index, series.name), (levels, series)
    levels = []
    cur = series.reset_index(drop=True)
    while _is_list_dtype(cur.dtype):
        lengths = cur.list.len().fillna(0).astype("int64").values
        valid = cur.notna().values if cur.null_count else None
        levels.append((cupy.concatenate([cupy.zeros(1, dtype="int64"), cupy.cumsum(lengths)]), valid))
        cur = _one_level(cur)[0] if _elements_are_lists(cur.dtype) \
            else cur.list.leaves.reset_index(drop=True)
    row_off = levels[0][0]
    for offs, _ in levels[1:]:
        row_off = offs[row_off]
    flat = _gpu_list_from_leaves(cur, row_off, series, series.name, keep_nulls=True)
    return flat, (levels, series)


@_register(L.nested_rebuild)
def _nested_rebuild(flat: Any, structure: Any, name: Any):
    levels, original = structure
    if len(flat) == 0:   # the leaf type the op gave, nested as deep as the original
        dtype = _leaf_dtype(flat.dtype)
        for _ in levels:
            dtype = cudf.ListDtype(dtype)
        return empty_series(dtype, flat.index, name)
    cur = flat.list.leaves.reset_index(drop=True)
    for k in range(len(levels) - 1, -1, -1):
        offs, valid = levels[k]
        if k == 0:
            like = original
        else:   # a stand-in series carrying this level's null mask (only its mask and index are read)
            like = cudf.Series(cupy.zeros(len(offs) - 1, dtype="int8"))
            if valid is not None:
                like = like.where(cudf.Series(valid))
        cur = _gpu_list_from_leaves(cur, offs, like, None, keep_nulls=valid is not None)
    cur.index = flat.index
    return cur.rename(name)
