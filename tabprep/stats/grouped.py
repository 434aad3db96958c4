"""Mergeable per-category aggregates (TargetEncoding, JoinGroupby).

A partial is a small frame indexed by the category value (one row per distinct non-null value
of the partition) whose columns are sums / minima / maxima; partials merge with ``concat`` +
``groupby(level=0)`` using the same aggregation per column, so they reduce as a tree exactly
like value counts. Integer-like keys are widened to int64 (so an int32 and an Int64 partition
merge), other keys (strings, floats) are grouped as they are. Rows with a null key are left
out here; the ops handle them (as a group of their own, or as "unseen").

Finalized statistics are host arrays (``values`` plus one array per column) looked up with
:func:`tabprep.stats.vocab.index_of`, so transform is a ``searchsorted`` (ints) or hash
lookup (strings) followed by a gather.
"""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

import numpy as np

from .. import backend
from . import vocab as V


def key_column(series: Any) -> Tuple[Any, Any]:
    """(``keys``, ``valid``): the non-null key values (an int64 array for integer-like
    columns, else a series) and the boolean mask (numpy/cupy) of the non-null rows."""
    valid = ~backend.isnull(series)
    if V.is_int_like(series):
        keys = backend.int_values(series, 0)
        return keys[valid], valid
    keys = series.reset_index(drop=True)
    if not bool(valid.all()):
        keys = keys[backend.new_series(valid, like=keys, dtype="bool")]
    return keys, valid


def null_columns(df: Any, columns: List[str]) -> List[str]:
    """The ``columns`` of the frame ``df`` holding a null (or NaN) in some row (a key column with a
    null forms a group NVTabular 23.08 treats otherwise: the ops warn)."""
    return [c for c in columns if backend.any_true(backend.isnull(df[c]))]


def group_agg(keys: Any, columns: Dict[str, Any], aggs: Dict[str, str], like: Any) -> Any:
    """Frame indexed by key: ``aggs[name]`` ("sum", "min", "max") of each array in ``columns``
    (arrays aligned with ``keys``)."""
    lib = backend.frame_lib(like)
    key_series = keys.reset_index(drop=True) if hasattr(keys, "reset_index") else lib.Series(keys)
    data = {"__key": key_series}
    for name, arr in columns.items():
        data[name] = lib.Series(arr, index=key_series.index)
    frame = lib.DataFrame(data)
    if len(frame) == 0:
        out = frame.set_index("__key")
        out.index.name = None
        return out
    out = frame.groupby("__key", sort=False).agg({n: aggs[n] for n in columns})
    out.index.name = None
    return out


def combine_agg(frames: List[Any], aggs: Dict[str, str]) -> Any:
    """Merge partial frames of :func:`group_agg` (associative)."""
    nonempty = [f for f in frames if len(f)]
    if not nonempty:
        return frames[0]
    if len(nonempty) == 1:
        return nonempty[0]
    nonempty = backend.on_one_backend(nonempty)  # host copies when some partials were moved there
    lib = backend.frame_lib(nonempty[0])
    cat = lib.concat(nonempty)
    out = cat.groupby(level=0, sort=False).agg({n: aggs[n] for n in cat.columns})
    out.index.name = None
    return out


def to_host_arrays(frame: Any) -> Tuple[np.ndarray, Dict[str, np.ndarray]]:
    """(values, {column: array}) of a finalized frame, on the host; int-like values as int64."""
    frame = backend.to_host(frame)
    values = frame.index.to_numpy()
    if values.dtype.kind in "iub":
        values = values.astype("int64")
    elif values.dtype.kind not in "f":
        values = values.astype(object)
    return values, {c: frame[c].to_numpy(dtype="float64" if frame[c].dtype.kind == "f" else None)
                    for c in frame.columns}
