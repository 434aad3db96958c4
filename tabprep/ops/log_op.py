"""LogOp: log(1 + x) of continuous columns."""
from __future__ import annotations

from typing import Any, List

import numpy as np

from .. import backend
from ..schema import ColumnSchema, Tags
from .base import Operator, map_elements


class LogOp(Operator):
    """``log1p(x)`` as float32. Nulls stay null; x < -1 gives NaN (clip at 0 first: ``Clip(min_value=0)``).

    Example:
        >>> conts = ["I1"] >> FillMissing() >> Clip(min_value=0) >> LogOp()
    """

    output_tags = (Tags.CONTINUOUS,)
    supports_lists = True
    numeric_input = True
    supports_nested = "leaves"   # nested lists: element-wise on the leaves, structure kept

    def __init__(self) -> None:
        pass

    def transform(self, columns: List[str], df: Any) -> Any:

        def log1p(s: Any) -> Any:
            dtype = backend._numpy_kind_dtype(s.dtype)
            if dtype == np.uint64:
                # beyond int64: the int path's int64 view made 2**63.. negative (NaN, -inf); float64
                # then log1p is what the int path computes below 2**63 (see log1p_int)
                values = backend.float_values(s)   # NaN where null
                return backend.array_module(values).log1p(values).astype(np.float32)
            if dtype.kind in "iub":
                values, mask = backend.int_data(s)
                out = backend.log1p_int(values)  # CPU: a table of log1p values; GPU: the device's log1p
                if mask is not None:
                    backend.array_module(out).copyto(out, np.nan, where=mask)  # element-wise on cupy too
                return out
            return backend.log1p_float(backend.float_values(s))  # GPU: one fused kernel

        return backend.make_frame({c: map_elements(df[c], log1p, dtype="float32") for c in columns}, like=df)

    def column_kernel(self, column: str) -> Any:
        """Column kernel (see :meth:`Operator.column_kernel`; numpy or CuPy): ``log1p_int`` / ``log1p_float`` as above."""
        return backend.log1p_host

    def column_schema(self, col: ColumnSchema) -> ColumnSchema:
        return col.with_(dtype="float32", add_tags=self.output_tags)


#: ``log1p`` of a float64 array, via ``log(1 + x)`` where that is exact to float32 (also used by serving)
fast_log1p = backend.fast_log1p

#: ``float32(log1p(values))`` of an int64 numpy array by table lookup (see :mod:`tabprep.backend.arrays`)
int_log1p32 = backend.int_log1p32

