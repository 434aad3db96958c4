"""Clip: bound values to [min_value, max_value]."""
from __future__ import annotations

from typing import Any, List, Optional

import numpy as np

from .. import backend
from .base import Operator, map_elements


class Clip(Operator):
    """Clip values to ``[min_value, max_value]`` (either bound may be None). Nulls stay null.

    The column's dtype is kept (an int column clipped with float bounds stays int; bounds are
    cast to the column's dtype). List columns are clipped element-wise.

    Example:
        >>> conts = ["I1", "I2"] >> Clip(min_value=0)
    """

    supports_lists = True

    def __init__(self, min_value: Optional[float] = None, max_value: Optional[float] = None) -> None:
        if min_value is None and max_value is None:
            raise ValueError("Clip needs min_value, max_value or both")
        if min_value is not None and max_value is not None and min_value > max_value:
            raise ValueError(f"Clip: min_value {min_value} is greater than max_value {max_value}")
        self.min_value = min_value
        self.max_value = max_value

    def transform(self, columns: List[str], df: Any) -> Any:
        out = {}
        for c in columns:
            s = df[c]
            if backend.is_list_series(s):
                out[c] = map_elements(s, lambda leaves: leaves.clip(lower=self.min_value, upper=self.max_value).values)
            elif backend.is_gpu(s) and str(s.dtype) == "bool":
                # cuDF refuses numeric bounds on a bool column; clip its 0/1 values like pandas
                # does, then back to bool (nulls stay null)
                out[c] = s.astype("float64").clip(lower=self.min_value, upper=self.max_value) != 0
            elif self._numpy_bounds(s) is not None:
                # numpy releases the GIL where pandas' clip holds it (dask runs partitions on
                # threads); on the GPU one cupy kernel replaces several cuDF calls
                lo, hi = self._numpy_bounds(s)
                values = s.values if backend.is_gpu(s) else s.to_numpy()
                out[c] = backend.new_series(backend.array_module(values).clip(values, lo, hi), like=s)
            else:
                out[c] = s.clip(lower=self.min_value, upper=self.max_value)
        return backend.make_frame(out, like=df)

    def _numpy_bounds(self, s: Any) -> Optional[tuple]:
        """Bounds for ``np.clip``/``cupy.clip`` when they give what pandas' clip gives (numpy
        int/float columns, cuDF ones without nulls; for ints, integral bounds only), else None."""
        dtype = s.dtype
        if not isinstance(dtype, np.dtype) or dtype.kind not in "iuf":
            return None
        if backend.is_gpu(s) and s.has_nulls:  # cuDF's clip keeps the null mask
            return None
        bounds = (self.min_value, self.max_value)
        if dtype.kind == "f":
            return bounds
        info = np.iinfo(dtype)
        for b in bounds:
            if b is not None and not (float(b).is_integer() and info.min <= b <= info.max):
                return None
        return tuple(None if b is None else int(b) for b in bounds)
