"""DropLowCardinality: drop categorical columns with too few distinct values."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from .. import backend
from .._warn import first_time, warn_difference
from ..schema import Schema, Tags
from ._saved_state import check_number
from .base import StatOperator


class DropLowCardinality(StatOperator):
    """Drop the selected columns that have fewer than ``min_cardinality`` distinct values.

    A column's cardinality is, in this order:

    1. from its input schema, when an upstream op recorded one: for a :class:`Categorify`
       output, the number of vocabulary values (``cardinality - 2 - num_oov_buckets``, i.e.
       without the padding, null and out-of-vocabulary ids); otherwise the schema's
       ``cardinality`` (e.g. ``num_buckets`` of :class:`HashBucket`);
    2. else counted during fit: the number of distinct non-null values (list columns: of
       their elements). Counting keeps at most ``min_cardinality`` values per column and
       partition, so memory stays small whatever the real cardinality.

    Columns tagged ``continuous`` are never dropped (as in NVTabular, only categorical data is
    considered); nothing else changes: kept columns pass through untouched. Which columns are
    dropped is known once the workflow is fitted (``workflow.output_schema``).

    Nulls: not counted as a value (after Categorify, though, nulls are id 1, a value). NaN is
    null; +-inf, a value like any other, counts as one distinct value each.

    NVTabular 23.08 (``DropLowCardinality(min_cardinality=4)``) decides on the schema only: a
    column tagged categorical whose ``domain.max`` (a Categorify output's vocabulary + 1 +
    ``num_buckets``) is below ``min_cardinality`` is dropped, every other column is kept. The
    defaults agree on Categorify outputs with one OOV id (two or more values stay); where the
    fitted choice differs from what NVTabular's rule gives on the same schema (another
    ``min_cardinality``, a raw column dropped, several OOV ids), fitting warns once per op with a
    :class:`tabprep.NVTabularDifferenceWarning` naming the columns (docs/migration.md).

    Args:
        min_cardinality: columns with fewer distinct values are dropped (default 2: drops
            constant and empty columns; NVTabular's default 4 on ``domain.max`` is the same
            choice on Categorify outputs).

    Example:
        >>> cats = ["C1", "C2", "C3"] >> Categorify() >> DropLowCardinality()
    """

    supports_lists = True

    def __init__(self, min_cardinality: Optional[int] = None) -> None:
        if min_cardinality is not None and int(min_cardinality) < 1:
            raise ValueError(f"min_cardinality must be >= 1, got {min_cardinality}")
        # as given: None (the default) resolves to 2 here and to NVTabular's 4 in its rule, also
        # after save/load (a resolved 2 reloaded as an explicit 2 for both)
        self.min_cardinality = min_cardinality
        self._warned: set = set()
        self.stats_: Optional[Dict[str, int]] = None
        self._schema_cards: Dict[str, Optional[int]] = {}
        self._continuous: List[str] = []

    @property
    def _min(self) -> int:
        """The threshold tabprep applies (default 2)."""
        return 2 if self.min_cardinality is None else int(self.min_cardinality)

    @property
    def _nvt_min(self) -> int:
        """NVTabular's threshold for the same call (its default is 4), to say where choices differ."""
        return 4 if self.min_cardinality is None else int(self.min_cardinality)

    # -- fit: count distinct values, capped --------------------------------------------------
    def fit_partial(self, columns: List[str], df: Any) -> Dict[str, List[Any]]:
        out = {}
        for c in columns:
            if c in self._continuous:
                continue
            s = df[c]
            if backend.is_list_series(s):
                s, _ = backend.list_leaves(s)
            counts, _ = backend.value_counts(s)
            out[c] = backend.to_numpy(counts.index[: self._min]).tolist()
        return out

    def fit_combine(self, partials: List[Dict[str, List[Any]]]) -> Dict[str, List[Any]]:
        out = {}
        for c in partials[0]:
            seen: set = set()
            for p in partials:
                seen.update(p[c])
                if len(seen) >= self._min:
                    break
            out[c] = list(seen)[: self._min]
        return out

    def fit_finalize(self, columns: List[str], combined: Dict[str, List[Any]]) -> None:
        self.stats_ = {c: len(v) for c, v in combined.items()}

    def check_state(self) -> None:
        """A loaded ``{column: count}`` holds integers >= 0 (``TypeError``, see the base class): a
        string failed at the comparison, a fraction or a negative count silently dropped a column."""
        if self.stats_ is None:
            return
        if not isinstance(self.stats_, dict):
            raise TypeError(f"{self.label}: the saved statistics must map columns to their distinct-value counts, "
                            f"got {self.stats_!r}"[:300])
        for c, count in self.stats_.items():
            check_number(self.label, c, None, count, none=False, integer=True, low=0)

    def state_columns(self, columns: List[str]) -> List[str]:
        # continuous columns are never counted (nor dropped)
        return [c for c in columns if c not in self._continuous]

    # -- which columns stay ------------------------------------------------------------------
    def cardinality(self, column: str) -> Optional[int]:
        """The cardinality used for ``column`` (None while unknown, e.g. before fit)."""
        card = self._schema_cards.get(column)
        if card is not None:
            return card
        return (self.stats_ or {}).get(column)

    def dropped(self, columns: List[str]) -> List[str]:
        out = []
        for c in columns:
            if c in self._continuous:
                continue
            card = self.cardinality(c)
            if card is not None and card < self._min:
                out.append(c)
        return out

    def output_column_names(self, columns: List[str]) -> List[str]:
        drop = set(self.dropped(columns))
        return [c for c in columns if c not in drop]

    def compute_output_schema(self, input_schema: Schema, columns: List[str]) -> Schema:
        self._continuous = [c for c in columns if Tags.CONTINUOUS in input_schema[c].tags]
        self._schema_cards = {c: _schema_cardinality(input_schema[c].properties) for c in columns}
        if self.stats_ is not None:  # fitted: the choice is known
            self._announce_difference(input_schema, columns)
        return input_schema.select(self.output_column_names(columns))

    def nvtabular_dropped(self, input_schema: Schema, columns: List[str]) -> List[str]:
        """The columns NVTabular 23.08's ``DropLowCardinality`` drops on this schema (its
        ``compute_selector``): tagged categorical with a ``domain`` whose max is below its
        ``min_cardinality`` (4 by default)."""
        out = []
        for c in columns:
            col = input_schema[c]
            dom = col.properties.get("domain")
            if (Tags.CATEGORICAL in col.tags and isinstance(dom, dict) and dom.get("max") is not None
                    and int(dom["max"]) < self._nvt_min):
                out.append(c)
        return out

    def _announce_difference(self, input_schema: Schema, columns: List[str]) -> None:
        mine, theirs = self.dropped(columns), self.nvtabular_dropped(input_schema, columns)
        if set(mine) == set(theirs) or not first_time(self._warned, (tuple(mine), tuple(theirs))):
            return
        # which columns a model gets must not silently differ from the NVTabular pipeline's
        warn_difference(f"DropLowCardinality(min_cardinality={self._min}) drops {mine}, where NVTabular "
                        f"23.08's DropLowCardinality(min_cardinality={self._nvt_min}) drops {theirs}: tabprep counts "
                        f"a column's distinct values (of a Categorify output, its vocabulary), NVTabular compares "
                        f"the schema's domain max (vocabulary + 1 + num_buckets) and keeps every column without a "
                        f"domain (raw ones). On Categorify outputs with one OOV id, min_cardinality=k here keeps "
                        f"what NVTabular's k + 2 keeps (see docs/migration.md)", stacklevel=3, at_build=True)

    def transform(self, columns: List[str], df: Any) -> Any:
        return df[self.output_column_names(columns)]

    def clear(self) -> None:
        self.stats_ = None


def _schema_cardinality(props: Dict[str, Any]) -> Optional[int]:
    card = props.get("cardinality")
    if card is None:
        return None
    if "vocabulary" in props and "num_oov_buckets" in props:  # a Categorify output
        return max(int(card) - 2 - int(props["num_oov_buckets"]), 0)
    return int(card)
