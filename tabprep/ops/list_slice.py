"""ListSlice: truncate (and optionally pad) list (multi-hot) columns to a window of each row."""
from __future__ import annotations

from typing import Any, List, Optional

import numpy as np

from .. import backend
from ..schema import ColumnSchema, Tags
from .base import Operator


class ListSlice(Operator):
    """Keep a window of every list: NVTabular's ``ListSlice(start, end=None, pad=False, pad_value=0.0)``.

    As in NVTabular 23.08, a positive ``start`` without ``end`` is a length: ``ListSlice(10)``
    keeps the first 10 elements (``row[:10]``), ``ListSlice(-10)`` the last 10 (``row[-10:]``),
    ``ListSlice(1, 11)`` ``row[1:11]``, ``ListSlice(0)`` the whole row. Otherwise ``start`` and
    ``end`` follow Python slicing: negative values count from the end of each row, out-of-range
    bounds are clipped, and an empty window gives an empty list. Element dtype and null elements
    are kept. (``start`` and ``end`` hold the normalized window: ``ListSlice(10).start == 0`` and
    ``.end == 10``, as NVTabular stores them.)

    With ``pad=True`` every row comes out with exactly ``L`` elements (NVTabular's
    ``max_elements``): the window, then ``pad_value`` (cast to the element dtype) appended on the
    right. ``L`` is ``end - start`` for a non-negative ``start``, ``-start`` for a negative
    ``start`` with ``end`` None or positive, and ``end - start`` for negative ``start`` and ``end``.
    A window with no such length (``ListSlice(0, pad=True)``: NVTabular would pad every row to
    2**63 elements; ``ListSlice(1, -1, pad=True)``: a negative ``L``, which NVTabular silently
    leaves unpadded) is refused with an error.

    Output schema, NVTabular 23.08's whatever the input's lengths: with ``pad=True``
    ``value_count = {"min": L, "max": L}``, ``is_ragged=False``; without, ``{"min": 0, "max": L}``,
    ragged (so a fixed-length input, e.g. after :class:`ValueCount`, stays multi-hot for
    ``get_embedding_sizes``; ``L`` may exceed the longest row, e.g. ``ListSlice(-4, 2)`` says 4),
    and where the window has no length (``ListSlice(0)``, the whole row) merlin's open
    ``{"min": 0, "max": None}``, ragged. A window whose ``L`` is negative
    (``ListSlice(1, -1)``) makes NVTabular 23.08 raise computing the schema (merlin-core refuses
    a negative max); tabprep slices it and records the open ``value_count``.

    Nulls: a null row stays null without padding; with ``pad=True`` it is read as an empty
    list and so becomes ``L`` pad values (padded output has no null row). Pad with 0, the
    padding id of :class:`Categorify`, after categorifying.

    Scalar columns are read as one-element lists (a null as an empty list), so
    ``ListSlice(1, pad=True)`` turns a scalar column into a fixed-length list column. A pandas
    column of Python lists (object dtype) is read as a list column.

    Args:
        start: a length (positive, without ``end``), or the first position kept (may be negative).
        end: one past the last position kept (None: to the end of the row; may be negative).
        pad: right-pad every row to the fixed length ``L``.
        pad_value: the padding element (default 0.0, cast to the element dtype).

    Example:
        >>> recent = ["item_history"] >> Categorify() >> ListSlice(-20, pad=True)   # last 20, padded with 0
        >>> first3 = ["tags"] >> ListSlice(3)
    """

    supports_lists = True
    output_tags = (Tags.LIST,)   # NVTabular 23.08's ListSlice.output_tags
    supports_nested = "native"   # nested lists: slices the outer level (the lists of each row)

    def __init__(self, start: int, end: Optional[int] = None, pad: bool = False, pad_value: Any = 0.0) -> None:
        if not isinstance(start, (int, np.integer)) or (end is not None and not isinstance(end, (int, np.integer))):
            raise TypeError(f"ListSlice: start and end must be ints (end may be None), got {start!r}, {end!r}")
        start = int(start)
        end = None if end is None else int(end)
        if start > 0 and end is None:  # NVTabular: ListSlice(n) keeps the first n elements
            start, end = 0, start
        self.start = start
        self.end = end
        self.pad = bool(pad)
        self.pad_value = pad_value
        if self.pad and self.fixed_length is None:
            raise ValueError(f"ListSlice(start={self.start}, end={self.end}, pad=True): the window has no fixed "
                             f"length to pad to (NVTabular's max_elements is "
                             f"{'unbounded' if self.end is None else self._max_elements()}); give an end, or a "
                             f"negative start")

    def _max_elements(self) -> Optional[int]:
        """NVTabular's ``max_elements`` (None: unbounded)."""
        if self.start < 0:
            return -self.start if self.end is None or self.end > 0 else self.end - self.start
        return None if self.end is None else self.end - self.start

    @property
    def fixed_length(self) -> Optional[int]:
        """Length ``L`` every row is padded to (None when the window has none)."""
        width = self._max_elements()
        return width if width is not None and width >= 0 else None

    def _window(self, lengths: Any, xp: Any):
        """(first kept position, number kept) per row for row lengths ``lengths``."""
        n = lengths
        s = xp.minimum(n, self.start) if self.start >= 0 else xp.maximum(n + self.start, 0)
        if self.end is None:
            e = n
        elif self.end >= 0:
            e = xp.minimum(n, self.end)
        else:
            e = xp.maximum(n + self.end, 0)
        e = xp.maximum(e, s)
        return s, e - s

    def window_length(self, length: int) -> int:
        """Number of elements kept from a row of ``length`` elements (before padding)."""
        _, k = self._window(np.array([length], dtype="int64"), np)
        return int(k[0])

    # -- transform ---------------------------------------------------------------------------
    def transform(self, columns: List[str], df: Any) -> Any:
        df = backend.lists_to_arrow(df[columns])  # a pandas column of Python lists is a list column
        return backend.make_frame({c: self._slice(df[c], c) for c in columns}, like=df)

    def _slice(self, s: Any, name: str) -> Any:
        if backend.is_list_series(s):
            leaves, offsets = backend.list_leaves(s)
        else:
            leaves, offsets = _scalar_leaves(s)
        src, new_offsets = self.gather_plan(offsets, len(leaves))
        if self.pad:
            # one pad element appended after the leaves: padded slots point at it
            lib = backend.frame_lib(leaves)
            leaves = lib.concat([leaves, self._pad_element(lib, leaves.dtype, name)], ignore_index=True)
        values = leaves.take(src).reset_index(drop=True)
        return backend.list_from_leaves(values, new_offsets, like=s, name=name, keep_null_rows=not self.pad)

    def _pad_element(self, lib: Any, dtype: Any, name: str) -> Any:
        """The pad element as a one-row series of the leaves' dtype; a ``ValueError`` naming the
        column where that dtype cannot hold it (NaN or inf on int lists: pandas' casting error)."""
        try:
            return lib.Series([self.pad_value]).astype(dtype)
        except (ValueError, TypeError, OverflowError) as exc:
            raise ValueError(f"ListSlice: pad_value {self.pad_value!r} cannot be held by list column {name!r} of {dtype} "
                             f"elements ({exc}). Pass a pad_value of that type, or cast the column first") from exc

    def gather_plan(self, offsets: Any, n_leaves: int):
        """(positions in the leaves to take, new row offsets) for row ``offsets`` (numpy or cupy).

        With ``pad=True`` a padded slot points at position ``n_leaves`` (the pad element).
        Pure array code: the same on numpy and cupy.
        """
        xp = backend.array_module(offsets)
        rows = len(offsets) - 1
        first, kept = self._window(offsets[1:] - offsets[:-1], xp)
        begin = offsets[:-1] + first
        if not self.pad:
            new_offsets = xp.concatenate([xp.zeros(1, dtype="int64"), xp.cumsum(kept).astype("int64")])
            total = int(new_offsets[-1])
            pos = xp.arange(total, dtype="int64")
            row = xp.searchsorted(new_offsets[1:], pos, side="right")
            return begin[row] + (pos - new_offsets[row]), new_offsets
        width = self.fixed_length
        new_offsets = xp.arange(rows + 1, dtype="int64") * width
        if not width:
            return xp.zeros(0, dtype="int64"), new_offsets
        pos = xp.arange(rows * width, dtype="int64")
        row = pos // width
        k = pos - row * width
        return xp.where(k < kept[row], begin[row] + k, n_leaves), new_offsets

    # -- schema ------------------------------------------------------------------------------
    def column_schema(self, col: ColumnSchema) -> ColumnSchema:
        """NVTabular 23.08's output schema (list_slice.py ``_compute_properties`` and
        ``_compute_shape``): ``value_count`` ``{"min": 0, "max": L}`` (``{"min": L, "max": L}`` with
        ``pad=True``) where the window has a length ``L``, merlin's open ``{"min": 0, "max": None}``
        where it has none; ragged unless min == max. The input's lengths play no part (a
        fixed-length input stays multi-hot after an unpadded slice, as in NVTabular)."""
        col = col.with_(add_tags=self.output_tags)
        width = self.fixed_length  # None: unbounded, or negative (merlin-core refuses it: see the class doc)
        if width is None:
            return col.with_(is_list=True, is_ragged=True, value_count=None)
        low = width if self.pad else 0
        return col.with_(is_list=True, is_ragged=low != width, value_count={"min": low, "max": width})


def _scalar_leaves(s: Any):
    """(leaves, offsets) of a scalar column read as one-element lists, nulls as empty lists."""
    nulls = backend.isnull(s)
    xp = backend.array_module(nulls)
    keep = xp.nonzero(~nulls)[0]
    offsets = xp.concatenate([xp.zeros(1, dtype="int64"), xp.cumsum(~nulls).astype("int64")])
    return s.take(keep).reset_index(drop=True), offsets
