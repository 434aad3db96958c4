"""DataStats: per-column statistics of the fitted data (NVTabular 23.08's op), on tabprep's
profile statistics (:mod:`tabprep.stats.profile`)."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from .. import backend
from ..dtypes import normalize_dtype
from ..schema import ColumnSchema
from ..stats.profile import KLL_EVERY_MAX, ColumnPartial, as_table, combine_columns, finalize_profile, partial_frame
from ._saved_state import check_number, check_order, column_entries
from .base import StatOperator, infinite_note

#: one column's partial: (dtype name, the column's profile partial, the partial of the numbers its
#: min / max / mean / std are taken from where they are not the column itself: string lengths, bools as
#: 0 / 1; the distinct non-null values of a column that is not a float, an Arrow array, for the exact
#: cardinality NVTabular counts; the profile's own distinct count is an estimate above 1024 values)
_Partial = Tuple[str, ColumnPartial, Optional[ColumnPartial], Optional[pa.Array]]


class DataStats(StatOperator):
    """Statistics of each selected column, computed by ``Workflow.fit`` into :attr:`output`;
    the transform returns the columns unchanged (NVTabular 23.08's ``DataStats``).

    ``output`` is ``{column: {...}}`` with, as NVTabular's:

    * ``dtype``: the column's dtype name (numpy names; ``"object"`` for strings, as pandas and
      cuDF name them in NVTabular);
    * ``min``, ``max``, ``mean``, ``std`` (sample standard deviation, ddof=1) of the non-null
      values; of the string lengths for a string column; of 0 / 1 for a bool column (floats there);
      ints for the ``min`` / ``max`` of an int column; None where there is no value (``std``: fewer
      than 2);
    * ``per_nan``: the percentage of null rows (None, NaN, NA; 0..100; None for no rows);
    * ``cardinality`` (columns that are not floats): the number of distinct non-null values
      (exact: the fit keeps each partition's distinct values, as NVTabular's ``nunique``).

    +-inf is left out of min / max / mean / std (tabprep's statistics are over the finite values;
    NVTabular's would be inf / NaN), and the fit warns naming the column. List columns are refused
    (NVTabular does not support them either). See also :func:`tabprep.profile`, which gives these
    statistics and more (quantiles, frequent values) without an op in the graph.

    Example:
        >>> stats = ops.DataStats()
        >>> wf = tp.Workflow(["price", "category"] >> stats); wf.fit(ds)
        >>> stats.output["price"]["mean"]
    """

    def __init__(self) -> None:
        self.stats_: Optional[Dict[str, Dict[str, Any]]] = None

    @property
    def output(self) -> Dict[str, Dict[str, Any]]:
        """``{column: statistics}`` of the last fit (NVTabular's ``DataStats.output``); ``{}``
        before a fit and after :meth:`clear`."""
        return dict(self.stats_ or {})

    # -- fit ---------------------------------------------------------------------------
    def fit_partial(self, columns: List[str], df: Any) -> Dict[str, _Partial]:
        # (the profile's KLL sketches, which no DataStats output reads, thinned the most: one
        # factor for every partition, so they merge as the profile's do)
        parts = partial_frame(df, columns, kll_every=KLL_EVERY_MAX)
        # the numbers behind min / max / mean / std of columns that are not numbers themselves
        derived = {}
        for c in columns:
            if parts[c].kind == "string":   # (float64 in every partition: pandas gives int64 where no row is null)
                derived[c] = df[c].str.len().astype("float64")
            elif parts[c].kind == "bool":
                derived[c] = df[c].astype("float64")
        more = partial_frame(backend.make_frame(derived, like=df), list(derived), kll_every=KLL_EVERY_MAX) if derived else {}
        counted = [c for c in columns if parts[c].kind != "float"]
        table = as_table(df, counted) if counted else None
        uniques = {c: _distinct([table.column(c)]) for c in counted}
        return {c: (_dtype_name(df[c].dtype, parts[c].kind), parts[c], more.get(c), uniques.get(c)) for c in columns}

    def fit_combine(self, partials: List[Dict[str, _Partial]]) -> Dict[str, _Partial]:
        out: Dict[str, _Partial] = {}
        for c in partials[0]:
            got = [p[c] for p in partials]
            # the dtype of a partition that holds rows (an empty one may be typed otherwise)
            dtype = next((g[0] for g in got if g[1].rows), got[0][0])
            extra = [g[2] for g in got if g[2] is not None]
            uniq = [g[3] for g in got if g[3] is not None]
            out[c] = (dtype, combine_columns([g[1] for g in got]), combine_columns(extra) if extra else None,
                      _distinct(uniq) if uniq else None)
        return out

    def fit_finalize(self, columns: List[str], combined: Dict[str, _Partial]) -> None:
        stats: Dict[str, Dict[str, Any]] = {}
        infinite = []
        names = list(combined)
        # the profile's summaries (profile.json's column entries) of the columns and of their numbers
        summaries = finalize_profile({c: combined[c][1] for c in names}, names)["columns"]
        derived = [c for c in names if combined[c][2] is not None]
        numbers_of = finalize_profile({c: combined[c][2] for c in derived}, derived)["columns"] if derived else {}
        for c, (dtype, part, extra, uniq) in combined.items():
            summary = summaries[c]
            numbers = numbers_of.get(c, summary)
            if numbers.get("inf"):
                infinite.append(c)
            entry: Dict[str, Any] = {"dtype": dtype}
            n = int(numbers.get("numeric_count") or 0)
            is_int = part.kind == "int"
            for key in ("min", "max"):
                v = numbers.get(key)
                entry[key] = None if v is None or not n else (int(v) if is_int and float(v).is_integer() else float(v))
            entry["mean"] = float(numbers["mean"]) if n and numbers.get("mean") is not None else None
            std = numbers.get("std")
            # the profile's std is the population one; NVTabular's (dask's) is the sample one (ddof=1)
            entry["std"] = float(std) * math.sqrt(n / (n - 1)) if std is not None and n > 1 else None
            rows = int(summary["count"])
            entry["per_nan"] = 100.0 * summary["nulls"] / rows if rows else None
            if part.kind != "float":
                entry["cardinality"] = len(uniq) if uniq is not None else int(summary.get("distinct") or 0)
            stats[c] = entry
        self.stats_ = stats
        self.fit_notes_ = [infinite_note("DataStats", infinite, "min, max, mean and std")] if infinite else []

    def check_state(self) -> None:
        """A loaded ``{column: statistics}`` is one a fit writes (``TypeError``, see the base class):
        ``dtype`` a string; ``min`` <= ``max``, ``mean``, ``std`` >= 0 finite numbers or None;
        ``per_nan`` in [0, 100] or None; ``cardinality`` an integer >= 0, required unless the dtype
        is a float one. Edited values were handed out by :attr:`output` as the fit's, silently."""
        fields = ("dtype", "min", "max", "mean", "std", "per_nan")
        for c, entry in column_entries(self.label, self.stats_, fields).items():
            if not isinstance(entry["dtype"], str):
                raise TypeError(f"{self.label}: the saved 'dtype' of column {c!r} must be a dtype name, "
                                f"got {entry['dtype']!r}"[:300])
            for field in ("min", "max", "mean"):
                check_number(self.label, c, field, entry[field])
            check_number(self.label, c, "std", entry["std"], low=0)
            check_number(self.label, c, "per_nan", entry["per_nan"], low=0, high=100)
            check_order(self.label, c, entry)
            if "cardinality" in entry or not entry["dtype"].startswith("float"):
                check_number(self.label, c, "cardinality", entry.get("cardinality"), none=False, integer=True, low=0)

    def state_columns(self, columns: List[str]) -> List[str]:
        return list(columns)

    # -- transform ---------------------------------------------------------------------
    def transform(self, columns: List[str], df: Any) -> Any:
        return df[columns]

    def column_schema(self, col: ColumnSchema) -> ColumnSchema:
        return col


def _distinct(arrays: List[Any]) -> pa.Array:
    """The distinct non-null values of some Arrow arrays (partitions may type them differently:
    ``string`` / ``large_string``, dictionary-encoded; all are cast to the first's value type)."""
    chunks: List[Any] = []
    for a in arrays:
        chunks += a.chunks if isinstance(a, pa.ChunkedArray) else [a]
    chunks = [c.dictionary_decode() if pa.types.is_dictionary(c.type) else c for c in chunks]
    if not chunks:
        return pa.array([])
    t = chunks[0].type
    merged = pa.chunked_array([c if c.type == t else c.cast(t) for c in chunks], type=t)
    return pc.unique(merged.drop_null()) if len(merged) else pa.array([], type=t)


def _dtype_name(dtype: Any, kind: str) -> str:
    """NVTabular's dtype string: numpy's names; ``object`` for strings (pandas' and cuDF's)."""
    if kind == "string":
        return "object"
    return normalize_dtype(dtype)
