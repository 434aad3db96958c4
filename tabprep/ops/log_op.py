"""LogOp: log(1 + x) of continuous columns."""
from __future__ import annotations

from typing import Any, List

import numpy as np

from .. import backend
from ..schema import ColumnSchema, Tags
from .base import Operator, map_elements


class LogOp(Operator):
    """``log(float32(x) + 1)`` as float32: NVTabular's formula (the value made float32, 1 added in
    float32), with the logarithm correctly rounded (taken in float64, rounded once), so the CPU and
    the GPU give the same bits, within one unit in the last place of NVTabular's float32 logarithm.
    Nulls stay null; -1 gives -inf and x < -1 NaN (clip at 0 first: ``Clip(min_value=0)``); values
    below about 6e-8 in magnitude give 0, and floats beyond float32's range +-inf, as NVTabular's.

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
                # beyond int64: the int path's int64 view made 2**63.. negative (NaN, -inf); the
                # formula on the values as floats (float64 is rounded to float32 first, as an int is)
                return backend.log_plus_one32(backend.float_values(s))   # NaN where null
            if dtype.kind in "iub":
                values, mask = backend.int_data(s)
                out = backend.log1p_int(values)  # CPU: a table; GPU: one kernel
                if mask is not None:
                    backend.array_module(out).copyto(out, np.nan, where=mask)  # element-wise on cupy too
                return out
            return backend.log1p_float(backend.float_values(s))  # GPU: one kernel

        return backend.make_frame({c: map_elements(df[c], log1p, dtype="float32") for c in columns}, like=df)

    def column_kernel(self, column: str) -> Any:
        """Column kernel (see :meth:`Operator.column_kernel`; numpy or CuPy): ``log1p_int`` / ``log1p_float`` as above."""
        return backend.log1p_host

    def column_schema(self, col: ColumnSchema) -> ColumnSchema:
        return col.with_(dtype="float32", add_tags=self.output_tags)


#: LogOp's formula on a numeric array (numpy or cupy; also used by serving)
log_plus_one32 = backend.log_plus_one32

#: LogOp of an int64 numpy array by table lookup (see :mod:`tabprep.backend.arrays`)
int_log1p32 = backend.int_log1p32

