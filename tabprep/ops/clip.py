"""Clip: bound values to [min_value, max_value]."""
from __future__ import annotations

import math
from typing import Any, List, Optional, Tuple

from .. import backend
from .._util import is_number
from ..dtypes import dtype_kind
from ..schema import Schema
from .base import Operator, map_elements


class Clip(Operator):
    """Clip values to ``[min_value, max_value]`` (either bound may be None). Nulls stay null. A NaN
    bound is no bound, as in pandas' ``clip`` (NVTabular's Clip on the CPU).

    The column's dtype is kept: on an int, uint or bool column a bound must be a whole number
    (``-1.0`` is fine); a fractional one is a ``ValueError`` when the workflow is bound (cast the
    column to float first). List columns are clipped element-wise.

    Example:
        >>> conts = ["I1", "I2"] >> Clip(min_value=0)
    """

    supports_lists = True
    supports_nested = "leaves"   # nested lists: element-wise on the leaves, structure kept

    def __init__(self, min_value: Optional[float] = None, max_value: Optional[float] = None) -> None:
        if min_value is None and max_value is None:
            raise ValueError("Clip needs min_value, max_value or both")
        if min_value is not None and max_value is not None and min_value > max_value:
            raise ValueError(f"Clip: min_value {min_value} is greater than max_value {max_value}")
        self.min_value = min_value
        self.max_value = max_value

    def bounds(self) -> Tuple[Any, Any]:
        """The bounds to clip with: a NaN bound is None (no bound), as pandas' clip takes it;
        numpy's clip with a NaN bound made every value NaN."""
        return tuple(None if _is_nan(b) else b for b in (self.min_value, self.max_value))

    def check_input(self, input_schema: Schema, columns: List[str]) -> None:
        """A fractional bound on an int, uint or bool column (list leaves too) is refused: tabprep
        keeps the column's dtype, so it could only truncate the bound (NVTabular 23.08's pandas clip
        returns float64 data there, under an int schema)."""
        super().check_input(input_schema, columns)
        lower, upper = self.bounds()
        for c in columns:
            kind = dtype_kind(input_schema[c].dtype) if c in input_schema else None
            if kind not in ("i", "b"):   # (ints of any signedness, nullable ones too; bools)
                continue
            for name, b in (("min_value", lower), ("max_value", upper)):
                if b is not None and is_number(b) and math.isfinite(b) and not float(b).is_integer():
                    raise ValueError(
                        f"Clip({name}={b}) on column {c!r}, which holds {input_schema[c].dtype} values: tabprep keeps "
                        f"the column's dtype, so it cannot clip to a fractional bound (NVTabular 23.08 returns float64 "
                        f"data there). Give a whole-number bound (e.g. {name}={math.floor(b) if name == 'min_value' else math.ceil(b)}"
                        f"), or cast the column to float first: >> LambdaOp(lambda c: c.astype(\"float64\")) >> Clip(...)")

    def transform(self, columns: List[str], df: Any) -> Any:
        out = {}
        lower, upper = self.bounds()
        for c in columns:
            s = df[c]
            if backend.is_list_series(s):
                # the clipped leaves as a series: its nulls stay nulls and its dtype the leaves' (an
                # int array read through numpy would come back as floats with NaN; issue #30)
                out[c] = map_elements(s, lambda leaves: backend.clip_series(leaves, lower, upper))
            else:
                # numpy / cupy clip where it gives what pandas' clip gives (it releases the GIL;
                # on the GPU one kernel replaces several cuDF calls), else the frame library's clip
                out[c] = backend.clip_series(s, lower, upper)
        return backend.make_frame(out, like=df)

    def column_kernel(self, column: str) -> Any:
        """Column kernel (see :meth:`Operator.column_kernel`; numpy or CuPy): ``clip``, in place when it may."""
        lower, upper = self.bounds()
        return lambda col: backend.clip_host(col, lower, upper)


def _is_nan(bound: Any) -> bool:
    return is_number(bound) and math.isnan(bound)
