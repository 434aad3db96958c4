"""LogOp: log(1 + x) of continuous columns."""
from __future__ import annotations

from typing import Any, List

from .. import backend
from ..schema import ColumnSchema, Tags
from .base import Operator, map_elements, register


@register
class LogOp(Operator):
    """``log1p(x)`` as float32. Nulls stay null; x < -1 gives NaN (clip at 0 first: ``Clip(min_value=0)``).

    Example:
        >>> conts = ["I1"] >> FillMissing() >> Clip(min_value=0) >> LogOp()
    """

    output_tags = (Tags.CONTINUOUS,)
    supports_lists = True

    def __init__(self) -> None:
        pass

    def transform(self, columns: List[str], df: Any) -> Any:

        def log1p(s: Any) -> Any:
            x = backend.float_values(s)
            xp = backend.array_module(x)
            with _quiet():
                return xp.log1p(x).astype("float32")

        return backend.make_frame({c: map_elements(df[c], log1p, dtype="float32") for c in columns}, like=df)

    def column_schema(self, col: ColumnSchema) -> ColumnSchema:
        return col.with_(dtype="float32", add_tags=self.output_tags)


def _quiet():
    import numpy as np

    return np.errstate(invalid="ignore", divide="ignore")
