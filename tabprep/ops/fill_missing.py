"""FillMissing: replace nulls with a constant."""
from __future__ import annotations

from typing import Any, List

import numpy as np
import pandas as pd

from .. import backend
from ..schema import ColumnSchema, Schema, Tags
from .base import Operator


def fill_column(s: Any, value: Any) -> Any:
    """``s`` with nulls (and NaN) replaced by ``value``; nullable ints become plain int64."""
    if backend.is_list_series(s):
        from .base import map_elements

        return map_elements(s, lambda leaves: fill_column(leaves, value).values)
    if not backend.is_gpu(s) and isinstance(s.array, pd.arrays.IntegerArray) and _fits(value, s.array._data.dtype):
        # numpy where() on the masked array's buffers: pandas' fillna + astype hold the GIL
        data, mask = s.array._data, s.array._mask
        filled = np.where(mask, np.asarray(value, dtype=data.dtype), data) if mask.any() else data
        return backend.new_series(filled, like=s)
    if backend.is_gpu(s) and not s.has_nulls and not backend.is_float_series(s):
        return s  # nothing to fill (floats may still hold NaN, which cuDF keeps apart from nulls)
    out = s.fillna(value)
    if backend.is_gpu(s) and backend.is_float_series(s):
        out = out.nans_to_nulls().fillna(value)
    dtype = str(out.dtype)
    if dtype in ("Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64", "boolean"):
        out = out.astype(dtype.lower().replace("boolean", "bool"))
    return out


def _fits(value: Any, dtype: np.dtype) -> bool:
    """True when ``value`` is an integer that ``dtype`` holds (else pandas decides/raises)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer, float, np.floating)):
        return False
    if isinstance(value, (float, np.floating)) and not float(value).is_integer():
        return False
    info = np.iinfo(dtype)
    return info.min <= value <= info.max


def binary_flags(s: Any, name: str) -> Any:
    """A bool column: True where ``s`` was null."""
    return backend.new_series(backend.isnull(s), like=s, name=name, dtype="bool")


class FillMissing(Operator):
    """Fill nulls (and NaN) with ``fill_val``.

    Args:
        fill_val: the constant (default 0). It must fit the column's dtype.
        add_binary_cols: also output ``<column>_filled``, a bool column, True where a value was missing.

    Integer columns with nulls come out as plain int64 (no nulls left). List columns are
    filled element-wise (null rows stay null lists).

    Example:
        >>> conts = ["I1", "I2"] >> FillMissing(fill_val=0, add_binary_cols=True)
    """

    supports_lists = True

    def __init__(self, fill_val: Any = 0, add_binary_cols: bool = False) -> None:
        self.fill_val = fill_val
        self.add_binary_cols = add_binary_cols

    def output_column_names(self, columns: List[str]) -> List[str]:
        if not self.add_binary_cols:
            return list(columns)
        return list(columns) + [f"{c}_filled" for c in columns]

    def _fill_value(self, columns: List[str]) -> Any:
        return {c: self.fill_val for c in columns}

    def transform(self, columns: List[str], df: Any) -> Any:
        values = self._fill_value(columns)
        out = {c: fill_column(df[c], values[c]) for c in columns}
        if self.add_binary_cols:
            for c in columns:
                out[f"{c}_filled"] = binary_flags(df[c], f"{c}_filled")
        return backend.make_frame(out, like=df)

    def compute_output_schema(self, input_schema: Schema, columns: List[str]) -> Schema:
        cols = []
        for c in columns:
            src = input_schema[c]
            cols.append(src.with_(tags=tuple(src.tags)))
        if self.add_binary_cols:
            cols += [ColumnSchema(f"{c}_filled", dtype="bool", tags=(Tags.BINARY,)) for c in columns]
        return Schema(cols)
