"""DifferenceLag: difference of a value to the one ``shift`` rows before, within a partition key."""
from __future__ import annotations

from typing import Any, List, Sequence, Union

import numpy as np

from .. import backend
from ..schema import ColumnSchema, Schema, Tags
from .base import Operator, column_names_arg


class DifferenceLag(Operator):
    """``x[i] - x[i - shift]`` when rows ``i`` and ``i - shift`` have the same partition key, else NaN.

    Outputs one float32 column per input column and shift (NVTabular 23.08's ``output_dtype``),
    named ``<column>_difference_lag_<shift>`` as in NVTabular (e.g. ``ts_difference_lag_1``) and
    ordered as NVTabular's: for each input column, its shifts in the order given
    (``ts_difference_lag_1, ts_difference_lag_-1, price_difference_lag_1, ...``); the inputs are
    not output. A negative shift looks ahead (``x[i] - x[i + |shift|]``). The difference is
    taken in float64 and rounded once to float32, so an int64 timestamp column (seconds since
    1970) gives its gaps with float32's 24-bit precision (exact up to 16,777,216).

    The data must be sorted by the partition columns (then by time, usually) so each key's
    rows are contiguous, and each key's rows must lie in one dask partition (write the data
    partitioned by key, or use one partition): the op runs partition by partition, so the first
    ``shift`` rows of every dask partition have no previous row and get NaN even when their key
    continues from the previous partition.

    Nulls: a null value, a null partition key (it matches nothing, not even another null) and
    the first ``shift`` rows of each key all give NaN. Columns must be numeric (ints, floats,
    bools; convert datetimes to ints first); keys may be ints, floats or strings.

    Args:
        partition_cols: the key column(s); read from the raw input if not among the selected columns.
            Nodes may stand for columns (``partition_cols=[node]``): a node computed by ops is
            computed first and its output columns are the keys.
        shift: an int (non-zero) or a list of ints: one output column per shift.

    Example:
        >>> gaps = ["timestamp"] >> DifferenceLag("user_id", shift=1)   # -> timestamp_difference_lag_1
    """

    output_tags = (Tags.CONTINUOUS,)

    def __init__(self, partition_cols: Union[str, Sequence[str]], shift: Union[int, Sequence[int]] = 1) -> None:
        partition_cols = column_names_arg(partition_cols, "DifferenceLag(partition_cols=...)", self)  # names, or nodes (see column_names_arg)
        cols = [partition_cols] if isinstance(partition_cols, str) else list(partition_cols)
        if not cols or not all(isinstance(c, str) for c in cols):
            raise ValueError(f"DifferenceLag needs partition column names, got {partition_cols!r}")
        shifts = list(shift) if isinstance(shift, (list, tuple)) else [shift]
        if not shifts or any(not isinstance(s, (int, np.integer)) or int(s) == 0 for s in shifts):
            raise ValueError(f"DifferenceLag shift must be a non-zero int or a list of them, got {shift!r}")
        self.partition_cols = partition_cols
        self.shift = shift

    @property
    def shifts(self) -> List[int]:
        return [int(self.shift)] if isinstance(self.shift, (int, np.integer)) else [int(s) for s in self.shift]

    @property
    def keys(self) -> List[str]:
        return [self.partition_cols] if isinstance(self.partition_cols, str) else list(self.partition_cols)

    def dependencies(self) -> List[str]:
        return self.keys

    def output_column_names(self, columns: List[str]) -> List[str]:
        return [f"{c}_difference_lag_{k}" for c in columns for k in self.shifts]

    def transform(self, columns: List[str], df: Any) -> Any:
        out = {}
        for k in self.shifts:  # keys compared once per shift; outputs reordered below
            same = None
            for key in self.keys:
                m = _same_key(df[key], k)
                same = m if same is None else same & m
            for c in columns:
                x = backend.float_values(df[c])
                xp = backend.array_module(x)
                prev = _shifted(x, k, np.nan)
                diff = xp.where(same, x - prev, np.nan)
                out[f"{c}_difference_lag_{k}"] = backend.new_series(diff, like=df[c], name=f"{c}_difference_lag_{k}",
                                                                    dtype="float32")
        return backend.make_frame({name: out[name] for name in self.output_column_names(columns)}, like=df)

    def compute_output_schema(self, input_schema: Schema, columns: List[str]) -> Schema:
        out = []
        for c in columns:
            for k in self.shifts:
                src = input_schema[c]
                out.append(ColumnSchema(f"{c}_difference_lag_{k}", dtype="float32",
                                        tags=tuple(t for t in src.tags if t != Tags.CATEGORICAL) + self.output_tags))
        return Schema(out)


def _same_key(s: Any, k: int) -> Any:
    """Bool array: row ``i`` and row ``i - k`` exist and have the same non-null key."""
    nulls = backend.isnull(s)
    valid = ~nulls & ~_shifted(nulls, k, True)
    if backend.is_float_series(s):
        v = backend.float_values(s)
    elif getattr(s.dtype, "kind", "O") in "iu" and not backend.is_string_series(s):
        v = backend.int_values(s, 0)
    else:  # strings and other types: compare the values themselves
        match = (s == s.shift(k)).fillna(False)
        return backend.int_values(match, 0).astype(bool) & valid
    return (v == _shifted(v, k, 0)) & valid


def _shifted(x: Any, k: int, fill: Any) -> Any:
    """``x`` moved down by ``k`` rows (up for negative ``k``), ``fill`` in the vacated rows."""
    xp = backend.array_module(x)
    out = xp.empty_like(x)
    n = len(x)
    if abs(k) >= n:
        out[:] = fill
    elif k > 0:
        out[:k] = fill
        out[k:] = x[:n - k]
    else:
        out[n + k:] = fill
        out[:n + k] = x[-k:]
    return out
