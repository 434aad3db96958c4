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


register_gpu_lazy(list_leaves, _list_from_leaves)
