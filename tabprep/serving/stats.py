"""Live training/serving skew counters of :class:`~tabprep.serving.ServingTransform`: per input
column, the values seen, the nulls, the values outside the fitted vocabulary (Categorify
columns: OOV) and the numbers outside the training range (the training profile's min/max).

``GET /stats`` of ``tabprep serve`` returns :meth:`ServingStats.to_dict` (format
``tabprep-serving-stats``, which ``tabprep drift REF stats.json`` compares with the training
profile: null and OOV rates); ``GET /metrics`` the same counters in Prometheus' text format.

Cost: :meth:`ServingStats.observe_row` keeps a tuple of the row's values (one C call); every
:data:`FLUSH_ROWS` rows, and before the counters are read, the buffered rows are counted column by
column (C-level passes: a set membership per value, one comparison for the range), a few us a
row instead of the ~25 us of a per-row loop over the columns on the request path (measured with
``benchmarks/serving.py --stats``: see docs/guide/data-quality.md). Counters are plain ints
updated without a lock on the request path: with several threads a count may very rarely miss
an increment (the server runs requests on one event loop thread).
"""
from __future__ import annotations

import math
import operator
import threading
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

STATS_FORMAT = "tabprep-serving-stats"
#: rows :meth:`ServingStats.observe_row` buffers before counting them together
FLUSH_ROWS = 256


class ServingStats:
    """Counters of the raw input columns ``columns``. ``vocabs``: ``{column: set of values}``
    (OOV = a non-null value outside it); ``ranges``: ``{column: (min, max)}`` (out of range = a
    number below min or above max; NaN is a null)."""

    def __init__(self, columns: Sequence[str], vocabs: Optional[Dict[str, Any]] = None,
                 ranges: Optional[Dict[str, tuple]] = None, dtypes: Optional[Dict[str, str]] = None) -> None:
        self.columns = list(columns)
        self.vocabs = {c: frozenset(_plain(v) for v in vs) for c, vs in (vocabs or {}).items() if c in self.columns}
        self.ranges = {c: r for c, r in (ranges or {}).items() if c in self.columns and None not in r}
        self.dtypes = dict(dtypes or {})
        self.rows = 0
        self.nulls = dict.fromkeys(self.columns, 0)
        self.oov = dict.fromkeys(self.vocabs, 0)
        self.out_of_range = dict.fromkeys(self.ranges, 0)
        # one tuple per column, read in the hot loop: (name, vocabulary or None, low, high)
        self._plan = [(c, self.vocabs.get(c), *(self.ranges.get(c) or (None, None))) for c in self.columns]
        self._index: Dict[str, Any] = {}  # vocabularies as hash indexes, for batches (built on first use)
        # one-row requests: their values (a tuple in ``columns`` order) wait here, counted in batches
        self._pending: List[tuple] = []
        self._take = operator.itemgetter(*self.columns) if len(self.columns) > 1 else \
            (lambda row, c=tuple(self.columns): tuple(row[k] for k in c))
        self._lock = threading.Lock()

    @classmethod
    def for_workflow(cls, wf: Any, columns: Sequence[str]) -> "ServingStats":
        """Counters for a fitted workflow: vocabularies of its Categorify ops on raw columns, ranges
        from its training profile (``wf.profile_``) when it has one."""
        from ..quality.profile import vocabularies

        prof = (getattr(wf, "profile_", None) or {}).get("columns", {})
        ranges = {c: (p.get("min"), p.get("max")) for c, p in prof.items() if p.get("kind") in ("int", "float")}
        dtypes = {c: p.get("dtype") for c, p in prof.items()}
        return cls(columns, vocabularies(wf), ranges, dtypes)

    def observe_row(self, row: Dict[str, Any]) -> None:
        """Count one request row (raw values by column; lists for list columns): buffered, counted
        with the next :data:`FLUSH_ROWS` rows or when the counters are read."""
        self._pending.append(self._take(row))
        if len(self._pending) >= FLUSH_ROWS:
            self.flush()

    def flush(self) -> None:
        """Count the buffered rows of :meth:`observe_row` (the readers call it first)."""
        with self._lock:
            rows, self._pending = self._pending, []
            if not rows:
                return
            self.rows += len(rows)
            for (c, vocab, lo, hi), vals in zip(self._plan, zip(*rows)):
                self._count_values(c, vocab, lo, hi, vals)

    def _count_values(self, c: str, vocab: Any, lo: Any, hi: Any, vals: Sequence[Any]) -> None:
        """Add one column's values of some rows (Python scalars, None or NaN as null, lists) to
        the counters, with C-level passes over the column (a set membership per value, no per-row
        dict work) when its values are plain scalars, else the per-value rules of :meth:`_count_slow`."""
        nonnull = [v for v in vals if v is not None]
        nulls = len(vals) - len(nonnull)
        types = set(map(type, nonnull))
        if not (types <= {int, float, bool} or types == {str}):  # lists, mixed, objects: value by value
            self.nulls[c] += nulls
            self._count_slow(c, vocab, lo, hi, nonnull)
            return
        if float in types:  # NaN is a null
            clean = [v for v in nonnull if v == v]
            nulls += len(nonnull) - len(clean)
            nonnull = clean
        self.nulls[c] += nulls
        if vocab is not None:
            self.oov[c] += len(nonnull) - sum(map(vocab.__contains__, nonnull))
        elif lo is not None and str not in types:  # (strings: no range)
            self.out_of_range[c] += sum(1 for v in nonnull if v < lo or v > hi)

    def _count_slow(self, c: str, vocab: Any, lo: Any, hi: Any, nonnull: List[Any]) -> None:
        for v in nonnull:
            if v != v:  # (NaN)
                self.nulls[c] += 1
                continue
            if vocab is not None:
                if type(v) is list:
                    self.oov[c] += sum(1 for x in v if x is not None and x not in vocab)
                elif v not in vocab:
                    self.oov[c] += 1
            elif lo is not None and isinstance(v, (int, float)) and (v < lo or v > hi):  # (a counter never raises)
                self.out_of_range[c] += 1

    def _vocab_index(self, c: str, vocab: Any) -> Any:
        index = self._index.get(c)
        if index is None:
            import pandas as pd

            index = self._index[c] = pd.Index(list(vocab))
        return index

    def observe_batch(self, cols: Dict[str, Any], n: int) -> None:
        """Count a batch of ``n`` rows (``serving.columns.Col`` by column)."""
        with self._lock:
            self.rows += n
            for c, vocab, lo, hi in self._plan:
                col = cols[c]
                null = col.nulls()
                if col.is_list:
                    self.nulls[c] += int(col.row_nulls.sum()) if col.row_nulls is not None else 0
                else:
                    self.nulls[c] += int(null.sum()) if null is not None else 0
                vals = col.values if null is None else col.values[~null]
                if vocab is not None and len(vals):
                    self.oov[c] += int(np.count_nonzero(self._vocab_index(c, vocab).get_indexer(vals) < 0))
                elif lo is not None and not col.is_list and vals.dtype.kind in "iuf":
                    self.out_of_range[c] += int(np.count_nonzero((vals < lo) | (vals > hi)))

    def to_dict(self) -> Dict[str, Any]:
        """The ``GET /stats`` document."""
        self.flush()
        cols = {}
        for c in self.columns:
            entry: Dict[str, Any] = {"rows": self.rows, "nulls": self.nulls[c], "dtype": self.dtypes.get(c, "unknown")}
            if c in self.oov:
                entry["oov"] = self.oov[c]
            if c in self.out_of_range:
                entry["out_of_range"] = self.out_of_range[c]
                entry["range"] = list(self.ranges[c])
            cols[c] = entry
        return {"format": STATS_FORMAT, "version": 1, "rows": self.rows, "columns": cols}

    def prometheus(self, prefix: str = "tabprep") -> str:
        """The counters in Prometheus' text exposition format (version 0.0.4)."""
        self.flush()
        lines = [f"# HELP {prefix}_rows_total Rows transformed.", f"# TYPE {prefix}_rows_total counter",
                 f"{prefix}_rows_total {self.rows}"]
        for name, help_, counts in (("nulls", "Null input values by column.", self.nulls),
                                    ("oov", "Input values outside the fitted vocabulary, by column.", self.oov),
                                    ("out_of_range", "Input numbers outside the training range, by column.",
                                     self.out_of_range)):
            metric = f"{prefix}_column_{name}_total"
            lines += [f"# HELP {metric} {help_}", f"# TYPE {metric} counter"]
            lines += [f'{metric}{{column="{_label(c)}"}} {n}' for c, n in counts.items()]
        return "\n".join(lines) + "\n"


def _label(name: str) -> str:
    return name.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v
