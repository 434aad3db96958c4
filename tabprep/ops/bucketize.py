"""Bucketize: map continuous values to the index of the bucket they fall in."""
from __future__ import annotations

from typing import Any, Dict, List, Sequence, Union

import numpy as np

from .. import backend
from .._warn import first_time, warn_difference
from ..schema import ColumnSchema, Tags, without_table_properties
from .base import Operator
from .embeddings import embedding_sizes_property


class Bucketize(Operator):
    """Replace each value by the number of ``boundaries`` that are <= it (an int bucket id).

    With sorted boundaries ``b`` (``len(b) = K``) the id is ``np.digitize(x, b)``
    (``right=False``), i.e. ``searchsorted(b, x, side="right")``:

    * ``x < b[0]`` -> 0;  ``b[i-1] <= x < b[i]`` -> i;  ``x >= b[K-1]`` -> K.

    Ids lie in ``[0, K]``; the output schema records ``cardinality = K + 1`` and tags the
    column categorical (its ``continuous`` tag is removed). Int columns with a list of ints are
    compared as int64 (exact); otherwise values are compared as float64 (ints beyond 2**53 lose
    precision against float boundaries), as ``np.digitize`` does in NVTabular's ``Bucketize``;
    the same except for nulls.

    Non-finite values: +-inf falls in the first/last bucket (no statistics are fitted).
    Nulls: a null (or NaN) value stays null; the output is int32 as NVTabular's (``Int32`` on
    pandas for a partition holding a null), and the first transform that meets one warns (``UserWarning``
    naming the column; NVTabular 23.08 puts NaN in the last bucket). Precede with ``FillMissing``, or follow with ``FillMissing`` or ``Categorify`` (null -> id 1)
    when a model needs every row to have an id. List columns are bucketized element-wise.

    Args:
        boundaries: increasing cut points, one list for every column or ``{column: list}``.

    Example:
        >>> age_bucket = ["age"] >> Bucketize([18, 25, 35, 50, 65])           # ids 0..5
        >>> buckets = ["a", "b"] >> Bucketize({"a": [0, 1], "b": [10.0, 20.0, 30.0]})
    """

    output_tags = (Tags.CATEGORICAL,)
    supports_lists = True
    numeric_input = True

    def __init__(self, boundaries: Union[Sequence[float], Dict[str, Sequence[float]]]) -> None:
        lists = boundaries.values() if isinstance(boundaries, dict) else [boundaries]
        for b in lists:
            arr = _as_array(b)   # ints stay int64: float64 made close ints beyond 2**53 equal
            if arr is None or arr.ndim != 1 or arr.size == 0:
                raise ValueError(f"Bucketize boundaries must be non-empty lists of numbers, got {b!r}")
            if (arr.dtype.kind == "f" and np.isnan(arr).any()) or (arr[1:] <= arr[:-1]).any():
                raise ValueError(f"Bucketize boundaries must be strictly increasing numbers, got {list(b)!r}")
        self.boundaries = boundaries
        #: the once-per-op warnings given ("nulls")
        self._warned: set = set()

    def boundaries_for(self, column: str) -> np.ndarray:
        """The boundaries (float64 array) used for ``column``."""
        return self._given(column).astype("float64")

    def int_boundaries_for(self, column: str) -> "np.ndarray | None":
        """``column``'s boundaries as int64 when they are a list of ints (int columns are then
        compared with them as ints, exactly), else None (compared as float64)."""
        given = self._given(column)
        return given if given.dtype.kind == "i" else None

    def _given(self, column: str) -> np.ndarray:
        """``column``'s boundaries as numpy makes an array of them: int64 for a list of ints, else
        float64 (what ``np.digitize`` compares in, in NVTabular)."""
        b = self.boundaries
        if isinstance(b, dict):
            if column not in b:
                raise KeyError(f"Bucketize has no boundaries for column {column!r}; add it to the dict "
                               f"(columns with boundaries: {sorted(b)})")
            b = b[column]
        return _as_array(b)

    def transform(self, columns: List[str], df: Any) -> Any:
        out = {}
        for c in columns:
            s = df[c]
            if backend.is_list_series(s):
                leaves, offsets = backend.list_leaves(s)
                out[c] = backend.list_from_leaves(self._bucket(leaves, c), offsets, like=s, name=c)
            else:
                out[c] = self._bucket(s, c)
        return backend.make_frame(out, like=df)

    def _bucket(self, s: Any, column: str) -> Any:
        given = self._given(column)
        kind = backend._numpy_kind_dtype(s.dtype).kind
        if given.dtype.kind == "i" and kind in "ib":
            # ints against a list of ints: compared as ints, as NVTabular's np.digitize does (float64
            # put a value within 256 below a boundary near 1.7e18 past it). uint64 stays on float64:
            # numpy compares uint64 with int64 in float64 too
            x, nulls = backend.int_data(s)
            xp = backend.array_module(x)
            nulls = nulls if nulls is not None else xp.zeros(len(x), dtype=bool)
        else:
            x = backend.float_values(s)
            xp = backend.array_module(x)
            given = given.astype("float64")
            nulls = xp.isnan(x)
        b = xp.asarray(given)
        ids = xp.searchsorted(b, x, side="right").astype("int32")  # NVTabular 23.08's output_dtype
        out = backend.new_series(ids, like=s, dtype="int32")
        if "nulls" not in self._warned and backend.any_true(nulls) and first_time(self._warned, "nulls"):
            # NVTabular 23.08 puts NaN in the last bucket (docs/migration.md): loud, once per op
            warn_difference(f"Bucketize: column {column!r} has null/NaN values; they stay null here, where "
                            f"NVTabular 23.08 puts them in the last bucket (id {len(b)}, as the largest values). "
                            f"Put FillMissing before Bucketize (e.g. [{column!r}] >> FillMissing(fill_val=...) "
                            f">> Bucketize(...)) to give them a bucket.", stacklevel=2)
        return backend.set_nulls(out, nulls)

    def column_schema(self, col: ColumnSchema) -> ColumnSchema:
        k = len(self.boundaries_for(col.name))
        tags = tuple(t for t in col.tags if t != Tags.CONTINUOUS) + self.output_tags
        # embedding_sizes: the pair get_embedding_sizes gives (NVTabular writes no table size here)
        props = {"cardinality": k + 1, "domain": {"min": 0, "max": k}, "embedding_sizes": embedding_sizes_property(k + 1)}
        return col.with_(dtype="int32", tags=tags, properties=without_table_properties(col.properties),
                         add_properties=props)


def _as_array(b: Any) -> Any:
    """The boundaries as numpy makes them: int64 for ints (bools count as ints), float64 for any
    other numbers; None when they are not numbers."""
    try:
        arr = np.asarray(list(b))
    except (TypeError, ValueError):
        return None
    if arr.dtype.kind in "iub":
        return arr.astype("int64") if arr.dtype.kind != "u" or arr.max(initial=0) < 2**63 else arr.astype("float64")
    try:
        return arr.astype("float64")
    except (TypeError, ValueError):
        return None
