"""Nested list columns (``list<list<...>>``) in TFRecord: the leaf values plus one list of row
lengths per inner level, as separate features. TensorFlow-free.

A nested column ``x`` of depth ``d`` is written as the list columns

* ``x``: the row's leaf values, flat (what NVTabular's loader calls the values; prebatched
  ``x__values`` / ``x__lengths``: the batch's leaves and leaves per row);
* ``x__row_lengths_1`` ... ``x__row_lengths_{d-1}``: for level ``k`` (1 = the lists inside the
  row), the lengths of that level's lists in the row (int64).

Per example, ``tf.io.parse_example`` with ``tf.io.RaggedFeature(value_key="x",
partitions=[tf.io.RaggedFeature.RowLengths("x__row_lengths_1"), ...])`` gives the
``(batch, None, ..., None)`` ragged tensor; equivalently ``tf.RaggedTensor.from_nested_row_lengths``
of the parsed features (see ``docs/guide/nested-lists.md``). Nulls are refused, as for flat lists.
"""
from __future__ import annotations

from typing import Any, List, Tuple

import numpy as np
import pyarrow as pa

from ...schema import ColumnSchema, Schema

#: feature key of level ``k``'s row lengths: ``<name>__row_lengths_<k>``
ROW_LENGTHS_SUFFIX = "__row_lengths_"


def row_lengths_key(name: str, level: int) -> str:
    return f"{name}{ROW_LENGTHS_SUFFIX}{level}"


def expand_schema(schema: Schema) -> Schema:
    """``schema`` with each nested column replaced by its leaf list column and its row-length columns."""
    if not any(c.depth > 1 for c in schema):
        return schema
    cols: List[ColumnSchema] = []
    for c in schema:
        if c.depth <= 1:
            cols.append(c)
            continue
        cols.append(c.with_(dtype=c.leaf_dtype, value_count=None, value_counts=None,
                            properties=dict(c.properties, nested={"depth": c.depth,
                                                                  "row_lengths": [row_lengths_key(c.name, k)
                                                                                  for k in range(1, c.depth)]})))
        for k in range(1, c.depth):
            cols.append(ColumnSchema(row_lengths_key(c.name, k), dtype="int64", is_list=True, is_ragged=True,
                                     properties={"row_lengths_of": c.name, "level": k}))
    return Schema(cols)


def _levels(arr: Any, name: str) -> Tuple[List[np.ndarray], Any]:
    """Offsets per level (each from 0) and the leaf array of a nested list array."""
    offsets: List[np.ndarray] = []
    while pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type) or pa.types.is_fixed_size_list(arr.type):
        if arr.null_count:
            what = "rows" if not offsets else f"lists at level {len(offsets)}"
            raise ValueError(f"column {name!r} has {arr.null_count} null {what}; TFRecord has no null: fill them "
                             f"before writing (FillMissing on the leaves, or drop the rows)")
        if pa.types.is_fixed_size_list(arr.type):
            arr = arr.cast(pa.large_list(arr.type.value_type))
        offs = np.asarray(arr.offsets, dtype=np.int64)
        base = int(offs[0])
        offsets.append(offs - base)
        arr = arr.values.slice(base, int(offs[-1]) - base)
    return offsets, arr


def expand_table(table: pa.Table, schema: Schema) -> pa.Table:
    """The columns of ``expand_schema(schema)`` from a table holding the nested columns."""
    nested = [c for c in schema if c.depth > 1 and c.name in table.column_names]
    if not nested:
        return table
    for c in nested:
        chunked = table.column(c.name)
        arr = chunked.combine_chunks() if isinstance(chunked, pa.ChunkedArray) else chunked
        offsets, leaves = _levels(arr, c.name)
        row_off = offsets[0]
        extra = []
        for k in range(1, len(offsets)):
            lengths = np.diff(offsets[k])
            lengths_list = pa.LargeListArray.from_arrays(pa.array(row_off), pa.array(lengths))
            extra.append((row_lengths_key(c.name, k), lengths_list))
            row_off = offsets[k][row_off]
        i = table.column_names.index(c.name)
        table = table.set_column(i, c.name, pa.LargeListArray.from_arrays(pa.array(row_off), leaves))
        for key, col in extra:
            table = table.append_column(key, col)
    return table
