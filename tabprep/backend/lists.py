"""List (multi-hot) columns: flat leaves plus row offsets, and back.

pandas (Arrow list) implementations; the cuDF ones are in :mod:`tabprep.backend.gpu`.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pandas as pd
import pyarrow as pa

from .arrays import is_list_series, to_numpy
from .dispatch import Dispatch, register_gpu_lazy
from .frames import make_frame
from .parquet import arrow_to_frame

list_leaves = Dispatch("list_leaves", """(flat element series, row offsets as int64 array of len(series)+1)
of a list column.

Null rows are treated as empty lists; null elements stay null in the leaves.""")


@list_leaves.register(object)
def _list_leaves_pandas(series: Any):
    arr = pa.chunked_array(series.array._pa_array) if hasattr(series.array, "_pa_array") else pa.chunked_array([pa.array(series)])
    arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    if pa.types.is_fixed_size_list(arr.type):  # a null row cannot be filled with [] in a fixed-size list
        arr = arr.cast(pa.list_(arr.type.value_type))
    arr = arr.fill_null(pa.scalar([], type=arr.type)) if arr.null_count else arr
    lengths = pa.compute.list_value_length(arr).to_numpy(zero_copy_only=False).astype("int64")
    offsets = np.zeros(len(lengths) + 1, dtype="int64")
    np.cumsum(lengths, out=offsets[1:])
    flat = pa.compute.list_flatten(arr)
    leaves = arrow_to_frame(pa.table({"v": flat}), cpu=True)["v"]
    return leaves, offsets


_list_from_leaves = Dispatch("list_from_leaves")


@_list_from_leaves.register(object)
def _list_from_leaves_pandas(like: Any, values: Any, offsets: Any, name: Any, keep: bool):
    flat = values if isinstance(values, pa.Array) else pa.array(to_numpy(values) if not isinstance(values, pd.Series) else values)
    if isinstance(flat, pa.ChunkedArray):  # pyarrow-backed pandas strings
        flat = flat.combine_chunks()
    nulls = like.isna().to_numpy() if keep else None
    mask = pa.array(nulls) if nulls is not None and nulls.any() else None
    arr = pa.ListArray.from_arrays(pa.array(np.asarray(offsets, dtype="int32")), flat, mask=mask)
    return pd.Series(pd.arrays.ArrowExtensionArray(arr), index=like.index, name=name)


def list_from_leaves(values: Any, offsets: Any, like: Any, name: Optional[str] = None,
                     keep_null_rows: bool = True):
    """Rebuild a list column from flat values (array or series) and row offsets.

    When ``like`` is a list column with as many rows as ``offsets`` describes, its null rows
    stay null in the result (``list_leaves`` read them as empty lists); pass
    ``keep_null_rows=False`` when the result should have no null row (e.g. padded lists).
    """
    name = name if name is not None else like.name
    size = len(offsets) - 1
    keep = keep_null_rows and len(like) == size and is_list_series(like)
    return _list_from_leaves(like, values, offsets, name, keep)


# ---------------------------------------------------------------------------------------
# nested lists (list<list<...>>): flatten to one list of leaves per row, apply, rebuild
# ---------------------------------------------------------------------------------------
nested_flatten = Dispatch("nested_flatten", """(row leaves, structure) of a nested list series: a flat
list series with the same rows (a null row stays null; a null or empty inner list gives no leaf), and
an opaque structure that :func:`nested_rebuild` puts back around leaves of the same count per row.""")

nested_rebuild = Dispatch("nested_rebuild", """The nested list series of ``structure`` (from
:func:`nested_flatten`) around the leaves of the flat list series ``flat`` (same leaves per row), named
``name``: null rows and null inner lists of the original come back null.""")


list_levels = Dispatch("list_levels", """(leaf series, [row offsets of every level, outermost first])
of a (nested) list series: level 0's offsets index level 1's lists, the last level's the leaves.

Null lists at any level are treated as empty; null leaves stay null.""")


@list_levels.register(object)
def _list_levels_pandas(series: Any):
    # Arrow offsets level by level: no pandas series for the inner levels (the loader's hot path)
    cur = _arrow_list(series)
    offsets = []
    while pa.types.is_list(cur.type) or pa.types.is_large_list(cur.type) or pa.types.is_fixed_size_list(cur.type):
        if pa.types.is_fixed_size_list(cur.type):
            cur = cur.cast(pa.list_(cur.type.value_type))
        if cur.null_count:   # a null list may own a slot range in Arrow: make it empty
            cur = cur.fill_null(pa.scalar([], type=cur.type))
        offs = np.asarray(cur.offsets, dtype=np.int64)
        base = int(offs[0])
        offsets.append(offs - base if base else offs)
        cur = cur.values.slice(base, int(offs[-1]) - base)
    return arrow_to_frame(pa.table({"v": cur}), cpu=True)["v"], offsets


def list_depth(series: Any) -> int:
    """List levels of a series: 0 (scalar), 1 (``list<int64>``), 2 (``list<list<int64>>``)..."""
    dtype = series.dtype
    depth = 0
    while True:
        inner = getattr(dtype, "element_type", None)   # cudf.ListDtype
        if inner is not None:
            depth, dtype = depth + 1, inner
            continue
        pa_type = getattr(dtype, "pyarrow_dtype", dtype)
        if isinstance(pa_type, pa.DataType) and (pa.types.is_list(pa_type) or pa.types.is_large_list(pa_type)
                                                 or pa.types.is_fixed_size_list(pa_type)):
            depth, dtype = depth + 1, pa_type.value_type
            continue
        return depth if depth or not is_list_series(series) else 1


def _arrow_list(series: Any) -> pa.Array:
    arr = series.array._pa_array if hasattr(series.array, "_pa_array") else pa.array(series)
    return arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr


@nested_flatten.register(object)
def _nested_flatten_pandas(series: Any):
    arr = _arrow_list(series)
    levels = []   # per level above the leaves: (offsets from 0, validity or None)
    cur = arr
    while pa.types.is_list(cur.type) or pa.types.is_large_list(cur.type) or pa.types.is_fixed_size_list(cur.type):
        if pa.types.is_fixed_size_list(cur.type):
            cur = cur.cast(pa.large_list(cur.type.value_type))
        offs = np.asarray(cur.offsets, dtype=np.int64)
        valid = None if not cur.null_count else np.asarray(cur.is_valid())
        if valid is not None:   # a null list may still own a slot range in Arrow: keep it empty
            lengths = np.where(valid, np.diff(offs), 0)
            keep = np.repeat(valid, np.diff(offs))
            child = cur.values.slice(int(offs[0]), int(offs[-1] - offs[0])).filter(pa.array(keep))
            offs = np.zeros(len(lengths) + 1, dtype=np.int64)
            np.cumsum(lengths, out=offs[1:])
        else:
            child = cur.values.slice(int(offs[0]), int(offs[-1] - offs[0]))
            offs = offs - offs[0]
        levels.append((offs, valid))
        cur = child
    row_off = levels[0][0]
    for offs, _ in levels[1:]:
        row_off = offs[row_off]
    flat = pa.LargeListArray.from_arrays(pa.array(row_off), cur, mask=None if levels[0][1] is None
                                         else pa.array(~levels[0][1]))
    out = pd.Series(pd.arrays.ArrowExtensionArray(flat), index=series.index, name=series.name)
    return out, (levels, series.dtype)


@nested_rebuild.register(object)
def _nested_rebuild_pandas(flat: Any, structure: Any, name: Any):
    levels, _ = structure
    arr = _arrow_list(flat)
    offs = np.asarray(arr.offsets, dtype=np.int64)
    cur = arr.values.slice(int(offs[0]), int(offs[-1] - offs[0]))
    for offs, valid in reversed(levels):
        cur = pa.LargeListArray.from_arrays(pa.array(offs), cur, mask=None if valid is None else pa.array(~valid))
    # back to 32-bit list offsets per level (what parquet readers give), unless too many values
    target = _list_type(cur.type)
    if target is not None:
        cur = cur.cast(target)
    return pd.Series(pd.arrays.ArrowExtensionArray(cur), index=flat.index, name=name)


def _list_type(t: pa.DataType) -> Optional[pa.DataType]:
    if pa.types.is_large_list(t) or pa.types.is_list(t):
        inner = _list_type(t.value_type) if (pa.types.is_large_list(t.value_type) or pa.types.is_list(t.value_type)) \
            else t.value_type
        return pa.list_(inner) if inner is not None else None
    return None


def on_leaves(df: Any, columns: Any, fn: Any) -> Any:
    """``fn(frame)`` on ``df`` with its nested list ``columns`` flattened to one list of leaves per
    row (the flat-list kernels of the ops then apply element-wise), and the output columns of the
    same names rebuilt to the original nesting (null rows and null inner lists as they were). Used by
    the workflow for ops declaring ``supports_nested = "leaves"``; ``df`` unchanged when no column
    is nested. The op must keep the number of leaves of every row (element-wise)."""
    nested = _nested_columns(df, columns)
    if not nested:
        return fn(df)
    structures = {}
    cols = {}
    for c in df.columns:
        if c in nested:
            cols[c], structures[c] = nested_flatten(df[c])
        else:
            cols[c] = df[c]
    out = fn(make_frame(cols, like=df))
    rebuilt = {c: (nested_rebuild(out[c], structures[c], c) if c in structures and is_list_series(out[c]) else out[c])
               for c in out.columns}
    return make_frame(rebuilt, like=out)


def _nested_columns(df: Any, columns: Any) -> list:
    """The ``columns`` of ``df`` holding lists of lists. A column of a numpy numeric, bool or time
    dtype is passed over without building its series (``df[c]``: ~0.3 ms per column on cuDF, 26
    HashBucket columns per chunk of the online Criteo transform)."""
    dtypes = dict(zip(df.columns, df.dtypes))
    return [c for c in columns if c in dtypes and not (isinstance(dtypes[c], np.dtype) and dtypes[c].kind in "iufbmM")
            and list_depth(df[c]) > 1]


def flatten_nested(df: Any, columns: Any) -> Any:
    """``df`` with its nested list ``columns`` flattened to one list of leaves per row (statistics of
    element-wise ops: they see every leaf once); ``df`` itself when none is nested."""
    nested = _nested_columns(df, columns)
    if not nested:
        return df
    return make_frame({c: (nested_flatten(df[c])[0] if c in nested else df[c]) for c in df.columns}, like=df)


register_gpu_lazy(list_leaves, _list_from_leaves, nested_flatten, nested_rebuild, list_levels)
