"""Groupby: one row per group with list / count / first / last / sum / mean features (sessions)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from .. import backend
from .._warn import warn_once, warned_once
from ..dtypes import dtype_kind, time_parts
from ..schema import ColumnSchema, Schema, Tags
from ..stats import grouped as G
from .base import Operator, column_names_arg

AGGS = ("list", "count", "first", "last", "sum", "mean", "min", "max", "std", "var", "median", "nunique")
#: aggregations whose output is a count (int64)
_COUNTS = ("count", "nunique")
#: aggregations NVTabular computes from the group's list (its ``_list_aggs``), output first
_LIST_AGGS = ("list", "first", "last")
#: the keys of Groupby's once-per-process warnings (tabprep._warn.warn_once)
_DTYPES_NOTE = ("Groupby", "dtypes")
_NULL_KEYS_NOTE = ("Groupby", "null keys")
_IGNORED_AGGS_NOTE = ("Groupby", "ignored aggs")
#: aggregations of numbers only: NVTabular 23.08 raises on strings / datetimes / timedeltas
#: (pandas refuses them, or its float32 cast of the result does)
_NUMERIC_AGGS = ("sum", "mean", "median", "std", "var")
_POS = "__tabprep_pos__"
_GID = "__tabprep_gid__"


class Groupby(Operator):
    """Group rows by key column(s) and aggregate the other columns: one output row per group.

    ``["session_id", "item_id", "ts"] >> Groupby("session_id", sort_cols="ts",
    aggs={"item_id": ["list", "count"], "ts": ["first", "last"]})`` gives one row per session
    with ``item_id_list`` (the session's items in time order), ``item_id_count``,
    ``ts_first`` and ``ts_last``.

    Aggregations (output ``<col><name_sep><agg>``):

    * ``list``: the group's values in order (a list column, ``pd.ArrowDtype`` list on pandas,
      so it can be written to parquet; nulls stay null elements);
    * ``count``: number of non-null values (int64);
    * ``first`` / ``last``: value of the first / last row of the group (null if that value
      is null), in the column's dtype;
    * ``min`` / ``max`` over the non-null values, in the column's dtype as NVTabular's (an
      int64 id stays exact; strings, datetimes and timedeltas too; null when all null);
    * ``sum`` (int64 for int/bool columns, else float64; 0 when all null), ``mean``,
      ``median``, ``std`` and ``var`` (sample, ddof=1, as pandas and
      NVTabular; float64; null when all null, ``std``/``var`` also for one value) over the
      non-null values; of a string, datetime or timedelta column they are a ``TypeError``
      naming the column (NVTabular 23.08 raises too). pandas' ``sum`` of strings concatenates
      them (in row order, nulls skipped; an all-null group gives ``""`` with pandas' string dtype,
      ``0`` with object), but NVTabular 23.08 casts
      it to float32, which raises (digit strings become a number): for the concatenation,
      aggregate ``list`` and join each list with a :class:`LambdaOp` (docs/migration.md);
    * ``nunique``: number of distinct non-null values (int64).

    Output dtypes differ from NVTabular 23.08 on purpose (it casts count/nunique to int32 and
    sum/mean/median/std/var to float32, which rounds sums and ids past 2**24): tabprep keeps
    int64 / float64 and warns once per process; cast afterwards (``LambdaOp(f, dtype=...)``)
    for NVTabular's dtypes.

    Order within a group: by ``sort_cols`` (``ascending``; nulls last), then by the input row
    order. ``ascending`` is a bool for every sort column, or a list of one per sort column, as
    pandas' ``sort_values`` takes it (another length is a ``ValueError``). ``list`` follows that
    order. ``first`` / ``last`` follow NVTabular 23.08's ``_first_or_last``, which reads
    ``ascending`` as a truth value: with ``ascending=False`` the lists run backwards and ``first``
    is still the earliest row (the list's last element); with a non-empty list (``[False]``,
    ``[True, False]``) ``first`` / ``last`` are the list's first / last elements, whatever
    directions it holds. Groups come out in ascending key order (a null key forms the last group).
    A key column is output only when it is selected (NVTabular).

    Output columns in NVTabular's order: the selected keys, then the ``list`` / ``first`` /
    ``last`` outputs of every aggregated column, then its other aggregations (columns in the
    ``aggs`` dict's order, or the selection's; aggregations of one column in the order given,
    where NVTabular's follows a Python set and changes from process to process).

    **Partitions.** Each partition is grouped on its own, so a group split over several
    partitions gives several rows. Either make sure the data is partitioned by the key (e.g.
    one file per day of sessions that never cross files), or repartition it first with
    ``Dataset.shuffle_by_keys`` (a dask shuffle on the key, as NVTabular's recipe; or
    :func:`shuffle_by_key`)::

        ds = tp.Dataset("events/*.parquet").shuffle_by_keys("session_id")
        sessions = wf.transform(ds)

    Like :class:`Filter`, Groupby changes the rows, so apply it last, to the merged columns
    (``(cats + conts) >> Groupby(...)``), not inside one branch of ``+``.

    Args:
        groupby_cols: key column name(s).
        sort_cols: column name(s) ordering the rows within a group (read from the raw input
            when not selected; not output unless aggregated).
        aggs: an aggregation name or list of names applied to every selected non-key column,
            or a dict ``{column: name or [names]}``. As NVTabular's, a dict aggregates only the
            selected columns that are not keys: its other keys are ignored (warned once, naming them).
        name_sep: separator of output names.
        ascending: sort direction of ``sort_cols``: a bool, or a list of one bool per sort column.
    """

    changes_rows = True

    def __init__(self, groupby_cols: Union[str, Sequence[str]], sort_cols: Union[None, str, Sequence[str]] = None,
                 aggs: Union[str, Sequence[str], Dict[str, Any]] = "list", name_sep: str = "_",
                 ascending: Union[bool, Sequence[bool]] = True) -> None:
        # NVTabular also takes nodes / ColumnSelectors of raw columns for these
        groupby_cols = column_names_arg(groupby_cols, "Groupby(groupby_cols=...)", self)
        sort_cols = column_names_arg(sort_cols, "Groupby(sort_cols=...)", self)
        if not groupby_cols:
            raise ValueError("Groupby needs groupby_cols")
        for names in (aggs.values() if isinstance(aggs, dict) else [aggs]):
            names = [names] if isinstance(names, str) else list(names)
            bad = [a for a in names if a not in AGGS]
            if bad or not names:
                raise ValueError(f"Groupby aggregations must be among {list(AGGS)}, got {names!r}")
        self.groupby_cols = groupby_cols
        self.sort_cols = sort_cols
        self.aggs = aggs
        self.name_sep = name_sep
        self.ascending = ascending
        _check_ascending(ascending, self.sorts)
        names = [a for v in (aggs.values() if isinstance(aggs, dict) else [aggs])
                 for a in ([v] if isinstance(v, str) else list(v))]
        recast = any(a in ("count", "nunique", "sum", "mean", "median", "std", "var") for a in names)
        # once per process, where a graph is built (Workflow.load rebuilds one: not there)
        if recast:
            warn_once(_DTYPES_NOTE, "Groupby: count/nunique come out int64 and sum/mean/median/std/var int64 or "
                      "float64; NVTabular 23.08 casts them to int32/float32 (see docs/migration.md). Cast with "
                      "LambdaOp(f, dtype=...) for NVTabular's dtypes", stacklevel=2, at_build=True)

    # -- columns ---------------------------------------------------------------------------
    @property
    def keys(self) -> List[str]:
        return [self.groupby_cols] if isinstance(self.groupby_cols, str) else list(self.groupby_cols)

    @property
    def sorts(self) -> List[str]:
        if not self.sort_cols:
            return []
        return [self.sort_cols] if isinstance(self.sort_cols, str) else list(self.sort_cols)

    def _agg_map(self, columns: List[str]) -> Dict[str, List[str]]:
        if isinstance(self.aggs, dict):
            # NVTabular's _get_agg_dicts: only the selected columns that are not keys
            return {c: list(dict.fromkeys([a] if isinstance(a, str) else a)) for c, a in self.aggs.items()
                    if c in columns and c not in self.keys}
        names = list(dict.fromkeys([self.aggs] if isinstance(self.aggs, str) else self.aggs))
        return {c: names for c in columns if c not in self.keys}

    def _ordered_aggs(self, columns: List[str]) -> List[Tuple[str, str]]:
        """``(column, agg)`` in NVTabular's output order (Groupby.column_mapping): every column's
        list-type aggregations (``list``, ``first``, ``last``), then every column's others; within
        one column the order given (NVTabular's is a Python set's, which varies by process)."""
        agg_map = self._agg_map(columns)
        listy = [(c, a) for c, names in agg_map.items() for a in names if a in _LIST_AGGS]
        return listy + [(c, a) for c, names in agg_map.items() for a in names if a not in _LIST_AGGS]

    def dependencies(self) -> List[str]:
        # not the ``aggs`` dict's keys: only selected columns are aggregated (NVTabular reads no others)
        return list(dict.fromkeys(self.keys + self.sorts))

    def _ignored_aggs(self, columns: List[str]) -> List[str]:
        """The ``aggs`` dict's keys NVTabular's ``_get_agg_dicts`` drops: not selected, or a key."""
        if not isinstance(self.aggs, dict):
            return []
        return [c for c in self.aggs if c not in columns or c in self.keys]

    def check_input(self, input_schema: Schema, columns: List[str]) -> None:
        super().check_input(input_schema, columns)
        for c, a in self._ordered_aggs(columns):
            kind = _kind(input_schema[c].dtype) if c in input_schema else "?"
            if a in _NUMERIC_AGGS and kind in "sMm":
                what = {"s": "strings", "M": "datetimes", "m": "timedeltas"}[kind]
                # pandas' sum of strings concatenates them; NVTabular 23.08 casts it to float32, which
                # raises (or makes "1" + "2" the number 12.0): no result to copy, so a recipe instead
                concat = (" For pandas' concatenation of a group's strings (its groupby sum), aggregate 'list' and "
                          "join each list with a LambdaOp (docs/migration.md, Groupby)") if kind == "s" else ""
                raise TypeError(f"Groupby: column {c!r} holds {what} ({input_schema[c].dtype}), which have no {a!r} "
                                f"(NVTabular 23.08 raises too); aggregate it with min, max, first, last, list, count "
                                f"or nunique, or convert it to numbers first.{concat}")
        ignored = self._ignored_aggs(columns)
        if ignored:
            # NVTabular drops them without a word; a dropped request deserves one (once per keys)
            warn_once((_IGNORED_AGGS_NOTE, tuple(ignored)),
                      f"Groupby: aggs keys {ignored} are ignored, as in NVTabular 23.08: only selected columns that "
                      f"are not groupby_cols are aggregated (selected: {list(columns)}, groupby_cols: {self.keys}). "
                      f"Select a column to aggregate it; a key column is output as it is", stacklevel=2, at_build=True)

    def _out_keys(self, columns: List[str]) -> List[str]:
        """Key columns output: those selected (NVTabular's Groupby.column_mapping)."""
        return [k for k in self.keys if k in columns]

    def output_column_names(self, columns: List[str]) -> List[str]:
        return self._out_keys(columns) + [f"{c}{self.name_sep}{a}" for c, a in self._ordered_aggs(columns)]

    def compute_output_schema(self, input_schema: Schema, columns: List[str]) -> Schema:
        out = [input_schema[k] for k in self._out_keys(columns)]
        for c, a in self._ordered_aggs(columns):
            src = input_schema[c]
            kind = _kind(src.dtype)
            is_int = kind in "ib"
            name = f"{c}{self.name_sep}{a}"
            if a == "list":
                out.append(ColumnSchema(name, dtype=src.dtype, tags=tuple(src.tags) + (Tags.LIST,),
                                        properties=dict(src.properties), is_list=True, is_ragged=True))
            elif a in ("first", "last") or (a in ("min", "max") and kind in "sMm"):
                # one of the column's values, as it is (a string is no continuous feature)
                out.append(src.with_(name=name))
            elif a in _COUNTS:
                out.append(ColumnSchema(name, dtype="int64", tags=(Tags.CONTINUOUS,)))
            elif a == "sum":
                out.append(ColumnSchema(name, dtype="int64" if is_int else "float64", tags=(Tags.CONTINUOUS,)))
            elif a in ("min", "max") and kind in "ibf":  # NVTabular keeps the column's dtype (float32 too)
                out.append(ColumnSchema(name, dtype=src.dtype, tags=(Tags.CONTINUOUS,)))
            else:
                out.append(ColumnSchema(name, dtype="float64", tags=(Tags.CONTINUOUS,)))
        return Schema(out)

    # -- computation ---------------------------------------------------------------------------
    def transform(self, columns: List[str], df: Any) -> Any:
        lib = backend.frame_lib(df)
        xp = backend.array_module(df)
        keys, sorts = self.keys, self.sorts
        agg_map = self._agg_map(columns)
        work = df.reset_index(drop=True)
        n = len(work)
        if n:
            _announce_null_keys(work, keys)
        # group numbers in ascending key order (null keys last), then the order within groups
        if n:
            gid = backend.int_values(work[keys].groupby(keys, sort=True, dropna=False).ngroup(), 0)
        else:
            gid = xp.zeros(0, dtype="int64")
        order_frame = lib.DataFrame({_GID: gid, **{s: work[s] for s in sorts}, _POS: xp.arange(n, dtype="int64")})
        order_frame = order_frame.sort_values([_GID] + sorts + [_POS],
                                              ascending=[True] + self._directions() + [True], na_position="last")
        order = backend.int_values(order_frame[_POS], 0)
        gid = gid[order]
        ngroups = int(gid[-1]) + 1 if n else 0
        sizes = xp.bincount(gid, minlength=ngroups) if n else xp.zeros(0, dtype="int64")
        offsets = xp.zeros(ngroups + 1, dtype="int64")
        offsets[1:] = xp.cumsum(sizes)
        first, last = offsets[:-1], offsets[1:] - 1
        rows = work.take(order).reset_index(drop=True)
        out = {k: rows[k].take(first).reset_index(drop=True) for k in keys}
        like = out[keys[0]]
        gid_s = lib.Series(gid)
        for c, names in agg_map.items():
            s = rows[c]
            valid = ~xp.asarray(backend.isnull(s))
            for a in names:
                name = f"{c}{self.name_sep}{a}"
                if a == "list":
                    out[name] = backend.list_from_leaves(s, offsets, like=like, name=name)
                elif a in ("first", "last"):
                    # NVTabular's _first_or_last reads ``ascending`` as a truth value: False runs
                    # the rows backwards and "first" takes the list's last row (the earliest); a
                    # non-empty list is true whatever it holds, so "first" is the list's first row
                    take = first if (a == "first") == bool(self.ascending) else last
                    out[name] = s.take(take).reset_index(drop=True).rename(name)
                elif a in ("min", "max") and not backend.is_float_series(s):
                    # in the column's own dtype (NVTabular's): no float64 detour, int64 ids stay
                    # exact; strings, datetimes and timedeltas are compared as themselves
                    frame = lib.DataFrame({"g": gid_s, "x": s.reset_index(drop=True)})
                    red = frame.groupby("g", sort=True)["x"].agg(a)
                    out[name] = red.reindex(range(ngroups)).reset_index(drop=True).rename(name)
                else:
                    red = backend.new_series(self._reduce(s, valid, a, gid, gid_s, ngroups, lib, xp), like=like,
                                             name=name)
                    # a float column's min / max come back in its dtype (NVTabular's): exact, as
                    # they are among its values (float32, float16, nullable Float32 with <NA>)
                    out[name] = red.astype(s.dtype) if a in ("min", "max") and backend.is_float_series(s) else red
        return lib.DataFrame({name: out[name] for name in self.output_column_names(columns)})

    def _directions(self) -> List[bool]:
        """One sort direction per sort column (checked by :func:`_check_ascending`)."""
        if isinstance(self.ascending, (list, tuple)):
            return [bool(d) for d in self.ascending]
        return [bool(self.ascending)] * len(self.sorts)

    @staticmethod
    def _reduce(s: Any, valid: Any, agg: str, gid: Any, gid_s: Any, ngroups: int, lib: Any, xp: Any) -> Any:
        if ngroups == 0:
            is_int = (not backend.is_float_series(s)) and agg in ("count", "sum")
            return xp.zeros(0, dtype="int64" if (agg in _COUNTS or (agg == "sum" and is_int)) else "float64")
        count = xp.bincount(gid[valid], minlength=ngroups).astype("int64")
        if agg == "count":
            return count
        if agg == "nunique":
            frame = lib.DataFrame({"g": gid_s, "x": s.reset_index(drop=True)})
            red = frame.groupby("g", sort=True)["x"].nunique(dropna=True)
            return backend.int_values(red.reindex(range(ngroups), fill_value=0), 0)
        if agg in ("std", "var", "median"):
            x = backend.float_values(s)
            frame = lib.DataFrame({"g": gid_s, "x": lib.Series(xp.where(valid, x, np.nan))})
            red = frame.groupby("g", sort=True)["x"].agg(agg)
            return backend.float_values(red.reindex(range(ngroups)))
        int_like = not backend.is_float_series(s) and not backend.is_string_series(s)
        if agg == "sum" and int_like:
            x = backend.int_values(s, 0)
            return lib.DataFrame({"g": gid_s, "x": lib.Series(x)}).groupby("g", sort=True)["x"].sum().values
        x = backend.float_values(s)
        if agg in ("sum", "mean"):
            total = lib.DataFrame({"g": gid_s, "x": lib.Series(xp.where(valid, x, 0.0))}).groupby("g", sort=True)["x"].sum()
            total = backend.float_values(total)
            if agg == "sum":
                return total
            return xp.where(count > 0, total / xp.maximum(count, 1), np.nan)
        fill = np.inf if agg == "min" else -np.inf
        frame = lib.DataFrame({"g": gid_s, "x": lib.Series(xp.where(valid, x, fill))})
        red = frame.groupby("g", sort=True)["x"].agg(agg)
        return xp.where(count > 0, backend.float_values(red), np.nan)


def _kind(dtype: str) -> str:
    """The input contract's kind of a schema dtype ("i", "b", "f", "s", "M", "m" or "?"), a
    time-zone-aware datetime's "M" too (dtype_kind leaves those "?", as numpy knows no tz)."""
    parts = time_parts(dtype)
    if parts:
        return parts[0]
    if dtype.startswith("dictionary<values="):
        # a pandas ArrowDtype dictionary column in memory is named as Arrow names it: its values' kind
        # (a parquet one is read as its values); "?" let a string sum reach the transform's int cast
        values = dtype[len("dictionary<values="):].split(",")[0]
        return "s" if values in ("string", "large_string", "utf8", "large_utf8") else dtype_kind(values)
    return dtype_kind(dtype)


def _check_ascending(ascending: Any, sorts: List[str]) -> None:
    """Refuse, when the op is built, what pandas' ``sort_values(sort_cols, ascending=...)`` refuses
    when NVTabular 23.08's transform calls it: a list of another length than ``sort_cols``
    ("Length of ascending (2) != length of by (1)"), or a direction that is no bool (or int).
    Without sort columns NVTabular sorts nothing and only reads its truth value (first / last)."""
    if not sorts:
        return
    listed = isinstance(ascending, (list, tuple))
    bad = [d for d in (ascending if listed else [ascending]) if not isinstance(d, (bool, int, np.bool_, np.integer))]
    if bad:
        raise ValueError(f"Groupby(ascending={ascending!r}): a sort direction must be a bool (as pandas' sort_values "
                         f"takes it), got {bad!r}")
    if listed and len(ascending) != len(sorts):
        raise ValueError(f"Groupby(ascending={ascending!r}) gives {len(ascending)} direction(s) for the {len(sorts)} "
                         f"sort_cols {sorts!r}: give one bool per sort column, or one bool for all (pandas' "
                         f"sort_values, which NVTabular 23.08 calls, refuses it too)")


def shuffle_by_key(data: Any, keys: Union[str, Sequence[str]], npartitions: Optional[int] = None) -> Any:
    """Repartition a dataset so that all rows of a key land in the same partition (dask shuffle).

    Use before a workflow ending in :class:`Groupby` on data not already partitioned by the
    key. Row order within a partition is not kept: give Groupby ``sort_cols``.

    Args:
        data: a :class:`tabprep.Dataset` (or anything ``Dataset()`` accepts).
        keys: the key column(s).
        npartitions: number of output partitions (default: the input's).

    Returns:
        a :class:`tabprep.Dataset` over the shuffled dask frame.
    """
    from ..io.dataset import Dataset

    ds = data if isinstance(data, Dataset) else Dataset(data)
    return ds.shuffle_by_keys(keys, npartitions=npartitions)


def _announce_null_keys(work: Any, keys: List[str]) -> None:
    """Warn (once per process) when rows have a null key: tabprep groups them (the last group);
    NVTabular 23.08's ``df.groupby(keys)`` drops them (pandas' / cuDF's ``dropna=True``)."""
    if warned_once(_NULL_KEYS_NOTE):
        return
    nulls = G.null_columns(work, keys)
    if nulls:
        warn_once(_NULL_KEYS_NOTE, f"Groupby: rows with a null key in {nulls} form one group of their own (the last); "
                  f"NVTabular 23.08 drops them (see docs/migration.md). Drop them first with {nulls} >> ops.Dropna() "
                  f"(or ops.Filter) for NVTabular's result", stacklevel=2)
