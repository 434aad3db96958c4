"""FillMissing: replace nulls with a constant."""
from __future__ import annotations

from typing import Any, List

from .. import backend
from ..schema import ColumnSchema, Schema, without_table_properties
from .base import Operator


def _empty_list(value: Any) -> bool:
    """Whether ``fill_val`` is ``[]`` (or ``()``): fill null rows of list columns with empty lists."""
    return isinstance(value, (list, tuple)) and len(value) == 0


def fill_column(s: Any, value: Any) -> Any:
    """``s`` with nulls (and NaN) replaced by ``value``; nullable ints become plain int64. With
    ``value=[]``, the null rows of a list column become empty lists (its elements are left alone)."""
    if _empty_list(value):
        leaves, offsets = backend.list_leaves(s)   # reads a null row as an empty list
        return backend.list_from_leaves(leaves, offsets, like=s, keep_null_rows=False)
    if backend.is_list_series(s):
        from .base import map_elements

        return map_elements(s, lambda leaves: fill_column(leaves, value).values)
    return backend.fill_nulls(s, value)


def binary_flags(s: Any, name: str) -> Any:
    """A bool column: True where ``s`` was null."""
    return backend.new_series(backend.isnull(s), like=s, name=name, dtype="bool")


class FillMissing(Operator):
    """Fill nulls (and NaN) with ``fill_val``.

    Args:
        fill_val: the constant (default 0). It must fit the column's dtype.
        add_binary_cols: also output ``<column>_filled``, a bool column, True where a value was missing.

    Integer columns with nulls come out as plain int64 (no nulls left). List columns are
    filled element-wise (null rows stay null lists); ``fill_val=[]`` instead turns a list column's
    null rows into empty lists (its null elements stay: fill them with a second ``FillMissing``),
    what NVTabular 23.08's Categorify gives a null list row on the GPU (a tabprep addition: NVTabular
    raises on ``fill_val=[]``). Flat list columns only.

    Example:
        >>> conts = ["I1", "I2"] >> FillMissing(fill_val=0, add_binary_cols=True)
    """

    supports_lists = True
    supports_nested = "leaves"   # nested lists: element-wise on the leaves, structure kept

    def __init__(self, fill_val: Any = 0, add_binary_cols: bool = False) -> None:
        self.fill_val = fill_val
        self.add_binary_cols = add_binary_cols

    def check_input(self, input_schema: Schema, columns: List[str]) -> None:
        super().check_input(input_schema, columns)
        if not _empty_list(self.fill_val):
            return
        for c in columns:
            col = input_schema[c] if c in input_schema else None
            if col is not None and (not col.is_list or col.depth > 1):
                kind = "a nested list column" if col.is_list else f"a {col.dtype} column, not a list"
                raise TypeError(f"FillMissing(fill_val=[]) fills the null rows of flat list columns with empty lists; "
                                f"column {c!r} is {kind}. Select only flat list columns for it")

    def output_column_names(self, columns: List[str]) -> List[str]:
        if not self.add_binary_cols:
            return list(columns)
        return list(columns) + [f"{c}_filled" for c in columns]

    def _fill_value(self, columns: List[str]) -> Any:
        return {c: self.fill_val for c in columns}

    def transform(self, columns: List[str], df: Any) -> Any:
        values = self._fill_value(columns)
        out = {c: self._filled(df[c], values[c], c) for c in columns}
        if self.add_binary_cols:
            for c in columns:
                out[f"{c}_filled"] = binary_flags(df[c], f"{c}_filled")
        return backend.make_frame(out, like=df)

    def _filled(self, s: Any, value: Any, name: str) -> Any:
        """``s`` with its nulls filled; where the column cannot hold ``value`` (2.5 in an int column,
        an int beyond int64), the frame library's error (same type) names the column and the fix."""
        try:
            return fill_column(s, value)
        except (TypeError, ValueError, OverflowError) as exc:
            raise type(exc)(f"FillMissing: fill_val {value!r} cannot fill the nulls of column {name!r} ({s.dtype}): "
                            f"{exc}. Pass a fill_val that type holds, or cast the column first") from exc

    def column_kernel(self, column: str) -> Any:
        """Column kernel (see :meth:`Operator.column_kernel`; numpy or CuPy): ``fill_host`` with ``fill_val``."""
        if self.add_binary_cols or _empty_list(self.fill_val):   # list rows: the frame transform
            return None
        value = self.fill_val
        return lambda col: backend.fill_host(col, value)

    def compute_output_schema(self, input_schema: Schema, columns: List[str]) -> Schema:
        cols = []
        for c in columns:
            src = input_schema[c]
            cols.append(src.with_(tags=tuple(src.tags)))
        if self.add_binary_cols:
            # the indicator takes its column's tags and properties, as merlin-core gives a column
            # mapped from one input (NVTabular 23.08: x_filled of a continuous x is continuous), less
            # an id column's table size (a bool indicator has none); no "binary" tag, which merlin's
            # BINARY_CLASSIFICATION target tag includes
            cols += [ColumnSchema(f"{c}_filled", dtype="bool", tags=tuple(input_schema[c].tags),
                                  properties=without_table_properties(input_schema[c].properties)) for c in columns]
        return Schema(cols)
