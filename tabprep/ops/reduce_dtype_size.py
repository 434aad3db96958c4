"""ReduceDtypeSize: cast numeric columns to the smallest dtype that holds their fitted range."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from .. import backend
from ..schema import ColumnSchema, Schema
from ._saved_state import check_number, check_order, column_entries
from .base import StatOperator

DEFAULT_INT_DTYPES = ("int8", "int16", "int32", "int64")
DEFAULT_FLOAT_DTYPES = ("float32", "float64")


class ReduceDtypeSize(StatOperator):
    """Learn each numeric column's min and max, then cast it to the first dtype that holds them.

    * signed integer columns: the first of ``int_dtypes`` (default int8, int16, int32,
      int64: signed only, since frameworks may read uint8 indices as boolean masks) whose
      range contains ``[min, max]``;
    * unsigned integer columns keep their dtype, as in NVTabular 23.08 (which narrows signed
      ints only); with an ``int_dtypes`` that lists unsigned dtypes, the first unsigned one
      whose range contains ``[min, max]``;
    * float columns: the first of ``float_dtypes`` (default float32, float64) whose finite
      range contains the finite ``[min, max]``. Like NVTabular this checks the range only:
      float32 keeps ~7 significant digits. Infinities are kept as infinities.

    Other columns (bools, strings, lists of strings) pass through unchanged; list columns of numbers
    are reduced element-wise. An int column with no non-null value keeps its dtype; a float column
    with none takes the first float dtype (NVTabular 23.08: float_dtype). Values outside
    the fitted range met at transform time wrap (ints) or overflow to inf (floats), as a numpy
    cast does: fit on data that covers the range.

    Nulls: kept, and ignored by min/max. On pandas an int column holding nulls comes out as the
    nullable variant (``Int8``...).

    Args:
        float_dtypes: candidate float dtypes, smallest first (None: float32, float64).
        int_dtypes: candidate int dtypes, smallest first (None: int8, int16, int32, int64).
        float_dtype: NVTabular 23.08's argument: the one dtype for every float column (its
            default, float32, is also tabprep's first candidate). A column whose fitted range
            does not fit it keeps its dtype (NVTabular casts it anyway: values overflow to inf).

    Example:
        >>> small = ["C1", "I1"] >> Categorify() >> ReduceDtypeSize()   # ids in int8/int16/...
    """

    supports_lists = True

    def __init__(self, float_dtypes: Optional[Sequence[str]] = None,
                 int_dtypes: Optional[Sequence[str]] = None, float_dtype: Any = None) -> None:
        if float_dtype is not None and float_dtypes is not None:
            raise ValueError("ReduceDtypeSize: give float_dtype (NVTabular's: one dtype for every float column) or "
                             "float_dtypes (tabprep's: candidates, smallest first), not both")
        for d in float_dtypes or ([float_dtype] if float_dtype is not None else ()):
            if np.dtype(d).kind != "f":
                raise ValueError(f"float_dtypes must be float dtypes, got {d!r}")
        for d in int_dtypes or ():
            if np.dtype(d).kind not in "iu":
                raise ValueError(f"int_dtypes must be integer dtypes, got {d!r}")
        self.float_dtypes = float_dtypes
        self.int_dtypes = int_dtypes
        self.float_dtype = float_dtype
        self.stats_: Optional[Dict[str, Any]] = None

    # -- fit ---------------------------------------------------------------------------------
    def fit_partial(self, columns: List[str], df: Any) -> Dict[str, Optional[List[Any]]]:
        return {c: _min_max(df[c]) for c in columns}

    def fit_combine(self, partials: List[Dict[str, Optional[List[Any]]]]) -> Dict[str, Optional[List[Any]]]:
        out: Dict[str, Optional[List[Any]]] = {}
        for c in partials[0]:
            parts = [p[c] for p in partials if p[c] is not None]
            if not parts:
                out[c] = None
                continue
            kinds = {p[0] for p in parts}
            kind = "f" if "f" in kinds else ("i" if "i" in kinds else "u")
            lows = [p[1] for p in parts if p[1] is not None]
            highs = [p[2] for p in parts if p[2] is not None]
            out[c] = [kind, min(lows) if lows else None, max(highs) if highs else None]
        return out

    def fit_finalize(self, columns: List[str], combined: Dict[str, Optional[List[Any]]]) -> None:
        stats: Dict[str, Any] = {}
        for c, v in combined.items():
            if v is None or (v[0] != "f" and v[1] is None):
                stats[c] = {"min": None, "max": None, "dtype": None}
                continue
            kind, lo, hi = v
            stats[c] = {"min": lo, "max": hi, "dtype": self._pick(kind, lo, hi)}
        self.stats_ = stats
        # NVTabular 23.08 casts every float column to float_dtype, so a range past it becomes +-inf there
        kept = [c for c, st in stats.items() if self.float_dtype is not None and combined[c] is not None
                and combined[c][0] == "f" and st["min"] is not None and st["dtype"] is None]
        self.fit_notes_ = [
            f"ReduceDtypeSize(float_dtype={np.dtype(self.float_dtype).name!r}): column(s) {kept} hold values outside "
            f"{np.dtype(self.float_dtype).name}'s range and keep their dtype, where NVTabular 23.08 casts them anyway "
            f"(the values past the range become +-inf; docs/migration.md). Clip them first, or leave them out of "
            f"ReduceDtypeSize, to get the same numbers from both."] if kept else []

    def to_config(self) -> Dict[str, Any]:
        config = dict(self.get_params())
        if config.get("float_dtype") is not None:  # np.float32 (NVTabular's default spelling) is saved by its name
            config["float_dtype"] = np.dtype(config["float_dtype"]).name
        return config

    def _pick(self, kind: str, lo: Any, hi: Any) -> Optional[str]:
        if kind == "f":
            candidates = [self.float_dtype] if self.float_dtype is not None else self.float_dtypes
            for d in candidates or DEFAULT_FLOAT_DTYPES:
                info = np.finfo(d)
                if lo is None or (float(info.min) <= lo and hi <= float(info.max)):
                    return np.dtype(d).name
            return None
        candidates = self.int_dtypes or DEFAULT_INT_DTYPES
        if kind == "u":  # unsigned columns stay unsigned (NVTabular 23.08 narrows signed ints only)
            candidates = [d for d in self.int_dtypes or () if np.dtype(d).kind == "u"]
        for d in candidates:
            info = np.iinfo(d)
            if info.min <= lo and hi <= info.max:
                return np.dtype(d).name
        return None

    def check_state(self) -> None:
        """A loaded ``{column: {"min", "max", "dtype"}}`` is one a fit writes: min / max both finite
        numbers (ints for an int dtype) with min <= max, or both None; dtype None or an int / uint /
        float dtype name that holds [min, max]. An edited dtype that does not (``int8`` for 300) wrapped
        the values silently, an unknown name failed at transform (``TypeError``, see the base class)."""
        for c, st in column_entries(self.label, self.stats_, ("min", "max", "dtype")).items():
            for field in ("min", "max"):
                check_number(self.label, c, field, st[field])
            if (st["min"] is None) != (st["max"] is None):
                raise TypeError(f"{self.label}: the saved 'min' and 'max' of column {c!r} must both be numbers or "
                                f"both None, got {st['min']!r} and {st['max']!r}")
            check_order(self.label, c, st)
            dtype = st["dtype"]
            if dtype is None:
                continue
            try:
                kind = np.dtype(dtype).kind if isinstance(dtype, str) else None
            except (TypeError, ValueError):   # not a dtype name numpy knows
                kind = None
            if kind not in ("i", "u", "f"):
                raise TypeError(f"{self.label}: the saved 'dtype' of column {c!r} must be None or an int / uint / "
                                f"float dtype name, got {dtype!r}")
            if st["min"] is None and kind == "f":
                continue   # a float column with no finite value
            info = np.finfo(dtype) if kind == "f" else np.iinfo(dtype)
            if st["min"] is None or (kind != "f" and not all(isinstance(st[k], int) for k in ("min", "max"))) \
                    or not info.min <= st["min"] <= st["max"] <= info.max:
                raise TypeError(f"{self.label}: the saved 'dtype' of column {c!r}, {dtype!r}, does not hold its saved "
                                f"range [{st['min']!r}, {st['max']!r}]")

    def state_columns(self, columns: List[str]) -> List[str]:
        return list(columns)

    def target_dtype(self, column: str) -> Optional[str]:
        """The dtype ``column`` is cast to (None: unchanged, or not fitted yet)."""
        st = (self.stats_ or {}).get(column)
        return None if st is None else st.get("dtype")

    # -- transform ---------------------------------------------------------------------------
    def transform(self, columns: List[str], df: Any) -> Any:
        self._require_fitted()
        out = {}
        for c in columns:
            s = df[c]
            dtype = self.target_dtype(c)
            if dtype is None:
                out[c] = s
            elif backend.is_list_series(s):
                leaves, offsets = backend.list_leaves(s)
                out[c] = backend.list_from_leaves(backend.cast_keep_nulls(leaves, dtype), offsets, like=s, name=c)
            else:
                out[c] = backend.cast_keep_nulls(s, dtype)
        return backend.make_frame(out, like=df)

    def compute_output_schema(self, input_schema: Schema, columns: List[str]) -> Schema:
        out = []
        for c in columns:
            col: ColumnSchema = input_schema[c]
            dtype = self.target_dtype(c)
            out.append(col.with_(dtype=dtype) if dtype is not None else col)
        return Schema(out)


def _min_max(s: Any) -> Optional[List[Any]]:
    """``[kind, min, max]`` of the non-null values ("i": signed ints, "u": unsigned ints, exactly; "f":
    finite floats, None if none)."""
    if backend.is_list_series(s):
        s, _ = backend.list_leaves(s)
    if backend.is_string_series(s):
        return None
    kind = getattr(s.dtype, "kind", "O")
    if kind == "f":
        x = backend.float_values(s)
        xp = backend.array_module(x)
        x = x[xp.isfinite(x)]
        if x.size == 0:
            # no finite value (all null, or infinities): the first float dtype holds them, as
            # NVTabular 23.08 casts every float column to float_dtype (an all-null one too)
            return ["f", None, None]
        return ["f", float(x.min()), float(x.max())]
    if kind == "u" and getattr(s.dtype, "itemsize", 8) == 8:
        # uint64 beyond int64: read through int64 2**64 - 1 would become -1 (issue #30); the
        # series' own min / max (both backends, nulls skipped) are exact
        if int(s.notna().sum()) == 0:
            return None
        return ["u", int(s.min()), int(s.max())]
    if kind in "iu":
        mask = backend.isnull(s)
        x = backend.int_values(s, 0)
        x = x[~mask] if bool(mask.any()) else x
        if x.size == 0:
            return None
        return [kind, int(x.min()), int(x.max())]
    return None
