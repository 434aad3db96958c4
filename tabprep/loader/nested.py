"""Nested list columns (``list<list<...>>``) in the loader: NVTabular's leaf layout plus the
row lengths of every level, on numpy (CPU) or cupy (GPU) without a host round trip of the data.

A nested column of one chunk is a :class:`_NestedColumn`: the leaf values with per-row leaf
offsets (so it shuffles, slices and concatenates as a flat list column does, and its
``(values, lengths)`` are NVTabular's ``(values, nnzs)``), plus one :class:`_RaggedColumn` per
inner level: for level ``k`` (1 = the lists inside a row), the lengths of that level's lists as
values, with per-row offsets. A batch of it is a :class:`NestedBatch`.

Part of :mod:`tabprep.loader.core` (see its docstring for the loader's data flow).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from .. import backend
from .._util import whole
from .ragged import PAD_ID, RaggedBatch, _RaggedColumn, _row_ids, _xp, pad_ragged

#: ``sparse_max`` of a nested column: one maximum length per level, or None (detected per chunk)
DenseSize = Union[int, Tuple[int, ...], None]


class NestedBatch(RaggedBatch):
    """A nested list column of one batch.

    ``values`` (all the leaves, flat) and ``lengths`` (int64 leaves per row) are NVTabular's
    ``(values, nnzs)``; ``levels`` holds, per inner level, a :class:`RaggedBatch` whose
    ``lengths`` count that level's lists per row and whose ``values`` are those lists' lengths.
    :attr:`nested_row_lengths` is what ``tf.RaggedTensor.from_nested_row_lengths`` takes.
    """

    # a namedtuple subclass without __slots__: instances carry ``levels`` in their __dict__
    levels: Tuple[RaggedBatch, ...]

    @classmethod
    def make(cls, values: Any, lengths: Any, levels: Sequence[RaggedBatch]) -> "NestedBatch":
        out = cls(values, lengths)
        out.levels = tuple(levels)
        return out

    @property
    def depth(self) -> int:
        """List levels of the column (2 for ``list<list<int64>>``)."""
        return len(self.levels) + 1

    @property
    def nested_row_lengths(self) -> List[Any]:
        """Row lengths per level, outermost first: lists per row, then each list's length."""
        return [self.levels[0].lengths] + [lv.values for lv in self.levels]

    def offsets(self) -> List[Any]:
        """Offsets per level (int64, each ``len + 1`` entries), outermost first: row -> level-1 lists,
        level-1 list -> level-2 lists ..., last level -> leaves (what torch users index with)."""
        xp = _xp(self.values)
        out = []
        for lengths in self.nested_row_lengths:
            off = xp.zeros(len(lengths) + 1, dtype=xp.int64)
            if len(lengths):
                xp.cumsum(lengths, out=off[1:])
            out.append(off)
        return out


@dataclass
class _NestedColumn(_RaggedColumn):
    """A nested list column of one chunk: leaves with per-row offsets, plus the inner levels."""

    levels: List[_RaggedColumn] = field(default_factory=list)


def is_nested_series(s: Any) -> bool:
    """True for a list column whose elements are lists (``list<list<...>>``)."""
    if not backend.is_list_series(s):
        return False
    dtype = s.dtype
    inner = getattr(dtype, "element_type", None)  # cudf.ListDtype
    if inner is not None:
        return type(inner).__name__ == "ListDtype"
    import pyarrow as pa

    vt = dtype.pyarrow_dtype.value_type
    return pa.types.is_list(vt) or pa.types.is_large_list(vt) or pa.types.is_fixed_size_list(vt)


def leaves_are_integers(leaves: Any) -> bool:
    """True when a nested column's leaves are integers (ids / keys: the loader keeps their dtype even
    under ``cont_names``, where a float32 cast would change keys above 2**24)."""
    dtype = getattr(leaves.dtype, "numpy_dtype", leaves.dtype)
    try:
        return np.dtype(dtype).kind in "iu"
    except TypeError:
        return False


def _diff(offsets: Any) -> Any:
    return offsets[1:] - offsets[:-1]


def nested_column(s: Any, values_fn: Any) -> _NestedColumn:
    """The :class:`_NestedColumn` of a nested list series; ``values_fn(leaves)`` gives the leaf array.

    Null rows and null inner lists count as empty lists; null leaves follow ``values_fn``
    (0 / NaN with a warning, as flat list columns)."""
    cur, level_offsets = backend.list_levels(s)
    values = values_fn(cur)
    xp = _xp(values)
    level_offsets = [xp.ascontiguousarray(xp.asarray(o, dtype=xp.int64)) for o in level_offsets]
    row_off = level_offsets[0]            # row -> first level-1 list
    levels: List[_RaggedColumn] = []
    for k in range(1, len(level_offsets)):
        # level k's lists: lengths as values, row offsets into them composed from the outer levels
        levels.append(_RaggedColumn(xp.ascontiguousarray(_diff(level_offsets[k])), row_off))
        row_off = level_offsets[k][row_off]
    return _NestedColumn(values, xp.ascontiguousarray(row_off), levels=levels)


def take_nested(col: _NestedColumn, perm: Any, take: Any) -> _NestedColumn:
    """Rows ``perm`` of a nested column (``take`` is :func:`tabprep.loader.ragged.take_ragged`)."""
    top = _take_level(_RaggedColumn(col.values, col.offsets), perm, take)
    return _NestedColumn(top.values, top.offsets, levels=[_take_level(lv, perm, take) for lv in col.levels])


def _take_level(col: _RaggedColumn, perm: Any, take: Any) -> _RaggedColumn:
    """Rows ``perm`` of one level: when every row has as many values (fixed-shape data such as the SOK
    slots), one gather of a ``(rows, width)`` block instead of the per-value ragged gather."""
    xp = _xp(col.offsets)
    rows = len(col.offsets) - 1
    if rows:
        width = int(col.offsets[1] - col.offsets[0])
        if int(col.offsets[-1] - col.offsets[0]) == width * rows and bool((_diff(col.offsets) == width).all()):
            lo = int(col.offsets[0])
            block = col.values[lo:lo + width * rows].reshape(rows, width)
            return _RaggedColumn(xp.ascontiguousarray(block[perm]).reshape(-1),
                                 xp.arange(len(perm) + 1, dtype=xp.int64) * width)
    return take(col, perm)


def _host_offsets(col: _RaggedColumn) -> np.ndarray:
    if col.host_offsets is None:
        col.host_offsets = backend.to_numpy(col.offsets)
    return col.host_offsets


def slice_nested(col: _NestedColumn, a: int, b: int) -> NestedBatch:
    """Rows ``[a, b)`` of a nested chunk column (views)."""
    host = _host_offsets(col)
    levels = []
    for lv in col.levels:
        if lv.row_lengths is None:   # once per chunk, not per batch
            lv.row_lengths = _diff(lv.offsets)
        h = _host_offsets(lv)
        levels.append(RaggedBatch(lv.values[int(h[a]):int(h[b])], lv.lengths[a:b]))
    return NestedBatch.make(col.values[int(host[a]):int(host[b])], col.lengths[a:b], levels)


def concat_nested(parts: Sequence[NestedBatch]) -> NestedBatch:
    xp = _xp(parts[0].values)
    levels = [RaggedBatch(xp.concatenate([p.levels[k].values for p in parts]),
                          xp.concatenate([p.levels[k].lengths for p in parts]))
              for k in range(len(parts[0].levels))]
    return NestedBatch.make(xp.concatenate([p.values for p in parts]),
                            xp.concatenate([p.lengths for p in parts]), levels)


def _fixed_shape(lengths_per_level: Sequence[Any], rows: int) -> Optional[Tuple[int, ...]]:
    """The per-level lengths when every list of every level has the same length, else None."""
    shape = []
    for lengths in lengths_per_level:
        if len(lengths) == 0:
            if rows:
                return None
            shape.append(0)
            continue
        first = int(lengths[0])
        if not bool((lengths == first).all()):
            return None
        shape.append(first)
    return tuple(shape)


def pad_nested(values: Any, nested_lengths: Sequence[Any], shape: Optional[Tuple[int, ...]], name: str = "",
               pad: int = PAD_ID) -> Any:
    """Dense ``(rows, d1, ..., dk)`` array of a nested column from its leaves and row lengths per
    level (outermost first), right-padded with ``pad``; longer lists are truncated. ``shape``
    None: every level must have one length in these rows (NVTabular's fixed-shape case), else a
    ``ValueError`` asks for ``sparse_max``."""
    xp = _xp(values)
    rows = len(nested_lengths[0])
    fixed = _fixed_shape(nested_lengths, rows)
    if shape is None:
        if fixed is None:
            raise ValueError(f"list column {name!r} is nested with lists of varying lengths, so its dense shape is "
                             f"not fixed: pass sparse_max={{{name!r}: (max_outer, max_inner)}} or fit ValueCount on "
                             f"it (its schema then records the maximum per level)")
        shape = fixed
    shape = tuple(int(d) for d in shape)
    if fixed == shape:   # every list already has its level's length: the leaves are the dense array
        return values.reshape((rows,) + shape)
    out = xp.full((rows,) + shape, pad, dtype=values.dtype)
    if len(values) == 0 or 0 in shape:
        return out
    # per leaf: its index in each level (row, position in the row, position in the inner list...)
    offsets = []
    for lengths in nested_lengths:
        off = xp.zeros(len(lengths) + 1, dtype=xp.int64)
        xp.cumsum(lengths, out=off[1:])
        offsets.append(off)
    index = [None] * len(offsets)
    owner = xp.arange(len(values), dtype=xp.int64)   # the item, at the current level, holding each leaf
    keep = xp.ones(len(values), dtype=bool)
    for k in range(len(offsets) - 1, -1, -1):
        parent = _row_ids(offsets[k], int(offsets[k][-1]), xp)[owner]
        pos = owner - offsets[k][parent]
        keep &= pos < shape[k]
        index[k] = pos
        owner = parent
    coords = (owner[keep],) + tuple(i[keep] for i in index)
    out[coords] = values[keep]
    return out


def pad_chunk_column(col: _RaggedColumn, size: DenseSize, name: str = "") -> Any:
    """Dense array of a chunk's list column (flat or nested); a scalar column is refused (it was
    named in ``sparse_names``)."""
    if not isinstance(col, _RaggedColumn):
        raise _not_a_list(name)
    if isinstance(col, _NestedColumn):
        lengths = [col.levels[0].lengths] + [lv.values for lv in col.levels]
        return pad_nested(col.values, lengths, _as_shape(size, len(col.levels) + 1, name), name)
    return pad_ragged(col, int(size))


def _not_a_list(name: str) -> ValueError:
    return ValueError(f"sparse_names lists {name!r}, which holds one value per row, not lists: sparse_as_dense "
                      f"pads list columns only; remove {name!r} from sparse_names")


def _as_shape(size: DenseSize, depth: int, name: str) -> Optional[Tuple[int, ...]]:
    if size is None:
        return None
    shape = (_length(name, size),) if np.isscalar(size) else tuple(_length(name, s) for s in size)
    if len(shape) != depth:
        raise ValueError(f"sparse_max[{name!r}] = {size!r} gives {len(shape)} length(s) for a list column of "
                         f"{depth} levels: give one maximum per level, e.g. {tuple([8] * depth)}")
    return shape


def _length(name: str, value: Any) -> int:
    """A ``sparse_max`` length: a whole number >= 1 (2.5 padded to 2 and True to 1, 0 emptied every
    row, -1 raised numpy's "negative dimensions are not allowed")."""
    return whole(f"sparse_max[{name!r}]", value, 1)


def schema_depth(schema: Any, name: str) -> int:
    """List levels of column ``name`` in ``schema`` (0: scalar or unknown)."""
    if schema is None or name not in schema:
        return 0
    return getattr(schema[name], "depth", 1 if schema[name].is_list else 0)


def dense_size(name: str, given: Any, schema: Any) -> DenseSize:
    """The padded size of list column ``name`` for ``sparse_as_dense``: ``given`` (``sparse_max``),
    else the schema's maximum length per level. A nested column with no known maximum gives None
    (its shape is taken from the data, which must then be fixed-shape); a flat one raises."""
    depth = schema_depth(schema, name)
    col = schema[name] if schema is not None and name in schema else None
    if col is not None and not col.is_list:   # (before asking for a sparse_max it would not need)
        raise _not_a_list(name)
    if given is not None:
        return _as_shape(given, depth, name) if depth > 1 else (_length(name, given) if np.isscalar(given) else given)
    if depth > 1:
        counts = getattr(col, "value_counts", None)
        if counts and all(c and c.get("max") is not None for c in counts):
            return tuple(int(c["max"]) for c in counts)
        return None
    m = col.value_count.get("max") if col is not None and col.value_count else None
    if m is None:
        raise ValueError(f"sparse_as_dense needs the maximum length of list column {name!r}: it is not in "
                         f"the schema (value_count), pass sparse_max={{{name!r}: N}}")
    return int(m)


def check_fixed(col: _NestedColumn, name: str, schema: Any, where: str) -> None:
    """Raise when the schema says every level of ``name`` has one length and the data disagrees
    (names the row, counted from the first row of ``where``)."""
    c = schema[name] if schema is not None and name in schema else None
    counts = getattr(c, "value_counts", None) if c is not None else None
    if not counts or any(not cc or cc.get("min") is None or cc.get("min") != cc.get("max") for cc in counts):
        return
    shape = [int(cc["max"]) for cc in counts]
    xp = _xp(col.values)
    rows = len(col.offsets) - 1
    first = rows
    bad = col.levels[0].lengths != shape[0]
    if bool(bad.any()):
        first = int(xp.argmax(bad))
    for lv, d in zip(col.levels, shape[1:]):
        wrong = lv.values != d
        if bool(wrong.any()):   # the row holding the first list of the wrong length
            item = int(xp.argmax(wrong))
            first = min(first, int(np.searchsorted(_host_offsets(lv)[1:], item, side="right")))
    if first < rows:
        raise ValueError(f"column {name!r}: row {first} of {where} has lists of another shape than the schema's fixed "
                         f"{shape} (the fitted value counts per level): fix that row, or refit (ValueCount) on data "
                         f"that includes it so that the schema records a ragged column")


__all__ = ["NestedBatch", "is_nested_series", "nested_column", "pad_nested", "dense_size"]
