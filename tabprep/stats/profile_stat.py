"""The profile as a fit-pass statistic (:class:`ProfileStat`), split from :mod:`tabprep.stats.profile`
(which re-exports it) to keep that module under 600 lines."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence

import pyarrow as pa

from .. import backend
from . import profile as _profile   # partial_frame looked up there at each call (tests patch it)
from .profile import (ColumnPartial, _check_every, _numeric_partial, column_partial, combine_tables, countable,
                      counted_partial, finalize_profile)
from .profile_numeric import _host_type


class ProfileStat:
    """The profile as a fit-pass statistic (``fit_partial`` / ``fit_combine`` / ``fit_finalize``,
    the :class:`~tabprep.ops.base.StatOperator` protocol that ``workflow/reduction.py`` drives):
    ``Workflow.fit`` runs it beside the ops of its first pass; :func:`tabprep.quality.profile`
    runs it alone. Not an op of the graph: it never transforms."""

    keyed_statistics = False
    label = "Profile"

    def __init__(self, columns: Sequence[str], sample_every: int = 1, vocabs: Optional[Dict[str, Any]] = None,
                 categorical: Sequence[str] = (), counted: Sequence[str] = (), kll_every: int = 1) -> None:
        self.columns = list(columns)
        #: the KLL thinning factor of every partition of the pass (see :func:`kll_every_for`)
        self.kll_every = _check_every(kll_every)
        self.categorical = list(categorical)
        #: id columns whose exact value counts the fit computes (see :func:`counted_partial`)
        self.counted = [c for c in counted if c in self.categorical]
        self.sample_every = _check_every(sample_every, "sample_every", "every row")
        self.vocabs = vocabs or {}
        self.profile_: Optional[Dict[str, Any]] = None

    def fit_partial(self, columns: Sequence[str], df: Any,
                    done: Optional[Dict[str, ColumnPartial]] = None) -> Dict[str, ColumnPartial]:
        """The partial of the partition ``df``; ``done``: the partials of some columns already
        computed from the same rows (:meth:`column_hook`), kept as they are."""
        done = dict(done or {})
        done.update(self._counted(df, [c for c in self.counted if c in columns and c not in done]))
        rest = [c for c in columns if c not in done]
        if not done:
            return _profile.partial_frame(df, columns, self.sample_every, self.vocabs, self.categorical, self.kll_every)
        parts = dict(done)
        if rest:
            parts.update(_profile.partial_frame(df, rest, self.sample_every, self.vocabs, self.categorical, self.kll_every))
        return {c: parts[c] for c in columns}

    def fit_column(self, name: str, col: Any) -> ColumnPartial:
        """The partial of the column ``name`` of a partition, given alone (an Arrow column: a pass
        that reads a partition column by column, ``workflow.tasks``): what :meth:`fit_partial` of a
        table holding it gives for it."""
        if name in self.counted and countable(col.type):
            return counted_partial(col.type, len(col), col.null_count)
        return column_partial(col, self.sample_every, self.vocabs.get(name), name in self.categorical,
                              kll_every=self.kll_every)

    def _counted(self, df: Any, names: List[str]) -> Dict[str, ColumnPartial]:
        """:func:`counted_partial` of the columns ``names`` of the partition ``df`` (Arrow table,
        pandas or cuDF frame) that are ints (others get the sketches)."""
        if not names:
            return {}
        if isinstance(df, pa.Table):
            cols = {c: df.column(c) for c in names}
            return {c: counted_partial(col.type, len(col), col.null_count) for c, col in cols.items()
                    if countable(col.type)}
        types = backend.frame_to_arrow(df[names].iloc[:0]).schema  # (the types as_table gives, no rows copied)
        return {c: counted_partial(types.field(c).type, len(df), int(df[c].isna().sum())) for c in names
                if countable(types.field(c).type)}

    def column_hook(self, done: Dict[str, ColumnPartial]) -> Callable[[str, Any, Any], None]:
        """A callback ``(name, arrow column, host column)`` for the columns a CPU fit pass reads
        into host columns (``fusion.fit_table``): the partial of a profiled int column is computed
        there, from the fit's unpacked null mask and contiguous values while they are in the
        CPU's cache (the same partial as :func:`column_partial` of the Arrow column), into
        ``done``; :meth:`fit_partial` then computes only the other columns."""
        wanted, cats, counted = set(self.columns), set(self.categorical), set(self.counted)

        def hook(name: str, arr: Any, host: Any) -> None:
            if name in counted and name not in done and countable(arr.type):
                done[name] = counted_partial(arr.type, len(arr), arr.null_count)
            elif (name in wanted and name not in done and host is not None and pa.types.is_integer(arr.type)
                    and host.values.dtype == _host_type(arr.type) and len(host.values) == len(arr)):
                kind = "category" if name in cats else "int"
                done[name] = _numeric_partial(arr, arr.type, kind, self.sample_every, self.vocabs.get(name), None,
                                              chunks=[(host.values, host.mask)], kll_every=self.kll_every)
        return hook

    def fit_combine(self, parts: List[Dict[str, ColumnPartial]]) -> Dict[str, ColumnPartial]:
        return combine_tables(parts)

    def fit_finalize(self, columns: Sequence[str], combined: Dict[str, ColumnPartial]) -> None:
        self.profile_ = finalize_profile(combined, columns, self.sample_every, self.kll_every)
