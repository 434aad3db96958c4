"""JoinGroupby: per-category statistics of continuous columns, joined back onto every row."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .. import backend
from .._warn import warn_difference
from ..schema import ColumnSchema, Schema, Tags, normalize_dtype
from ..stats import grouped as G
from ..stats import vocab as V
from ._lookups import build_once
from ._saved_state import check_size, combo_key_format
from .base import StatOperator, check_nvt_args, column_names_arg, group_keys, infinite_note, state_file
from .categorify import COMBO_KEY_FORMAT, _combo_series

STATS = ("count", "sum", "mean", "std", "var", "min", "max")
_ACC = ("n", "s", "m2", "lo", "hi")  # per continuous column: count, sum, M2, min, max
#: NVTabular 23.08's statistics of a null key's category (fitted with a count of 0), as the fit warns
_NVT_NULL_KEY = {"count": "count is 0", "mean": "mean is inf (NaN where the sum is 0)",
                 "std": "std is NaN", "var": "var is -inf or NaN"}


class JoinGroupby(StatOperator):
    """Add, to every row, statistics of continuous columns over the rows of its category.

    ``["user_id"] >> JoinGroupby(cont_cols=["price"], stats=["count", "mean"])`` outputs
    ``user_id_count`` (rows of that user in the fitted data) and ``user_id_price_mean``.
    A column group ``[["a", "b"]]`` is one category made of both columns (``a_b_count``, ...).

    Outputs, per category column ``<cat>``, in NVTabular 23.08's order (its ``column_mapping``:
    for each continuous column, each stat in the order given, ``<cat>_count`` where ``"count"``
    first comes up: ``stats=["sum", "count"]`` on ``v``, ``f`` gives ``a_v_sum``, ``a_count``,
    ``a_f_sum``):

    * ``<cat>_count`` (int32): number of fitted rows in the category, if ``"count"`` is asked;
    * ``<cat>_<cont>_<stat>`` for each continuous column and each other stat, over its finite
      values (NaN is null; +-inf is left out too): ``sum`` (0 when none), ``mean``, ``std`` and
      ``var`` (sample, ``ddof=1``, as pandas; null with fewer than 2 values), ``min``, ``max``
      (null when none).

    Dtypes are NVTabular 23.08's: ``count`` int32, ``mean`` / ``std`` / ``var`` float32,
    ``sum`` / ``min`` / ``max`` the continuous column's dtype (float32 for a bool column); an
    integer one holds nulls where a statistic is null (pandas ``Int64``). They are computed in
    float64, so an int64 column's statistics are exact up to 2**53. Where the fitted values do
    not fit the integer dtype (a count past 2**31 - 1, an int32 column's sum past its range,
    which NVTabular wraps around) the output is int64, with a warning naming it.

    Differences from NVTabular 23.08, warned by ``Workflow.fit`` (``UserWarning``): nulls in a
    continuous column are left out of ``mean``/``std``/``var`` (NVTabular's mean counts null rows),
    and a null category (a null key in a single column, or a column group with a null part) has its
    own statistics (NVTabular: a count of 0, so its ``count``, ``mean``, ``std`` and ``var`` are 0,
    inf, NaN, -inf; ``sum``, ``min``, ``max`` agree).

    Null categories form a group of their own (as ``groupby(dropna=False)``). A category not
    seen at fit (a null key too, where the fitted data had none) gets a null count and null
    statistics, as NVTabular 23.08 on the GPU (its left merge finds no row; its CPU then raises
    casting the null count to int32); the count stays int32 with nulls (pandas ``Int32`` in a
    partition that holds one). The continuous columns are read from the
    raw input (they are dependencies, not outputs). Statistics are a mergeable reduction
    (counts, sums, M2 merged with Chan's formula, min, max), computed in one pass.

    Args:
        cont_cols: continuous column name(s) to summarize, or a node (NVTabular's ``cont_cols=node``:
            computed first, its output columns summarized under their names).
        stats: any of ``"count", "sum", "mean", "std", "var", "min", "max"``; default ``("count",)``,
            as NVTabular 23.08 (``cont_cols`` default None: counts need no continuous column).
        split_out, split_every, cat_cache, out_path, on_host, name_sep, tree_width: NVTabular
            23.08's reduction and storage arguments, accepted so its pipelines run unchanged;
            they change no value. ``out_path`` warns (nothing is written there); ``name_sep``
            must be ``"_"``.
    """

    output_tags = (Tags.CONTINUOUS,)
    supports_groups = True

    #: combined-key format (see :data:`tabprep.ops.categorify.COMBO_KEY_FORMAT`); set by fit / load
    _combo_format: int = COMBO_KEY_FORMAT

    def __init__(self, cont_cols: Union[None, str, Sequence[str]] = None, stats: Sequence[str] = ("count",),
                 split_out: Any = None, split_every: Any = None, cat_cache: Any = "host", out_path: Optional[str] = None,
                 on_host: bool = True, name_sep: str = "_", tree_width: Any = None) -> None:
        check_nvt_args("JoinGroupby", name_sep, out_path)
        # NVTabular's reduction / storage knobs, stored verbatim; they change no value (ops.base.check_nvt_args)
        self.split_out, self.split_every, self.cat_cache, self.out_path = split_out, split_every, cat_cache, out_path
        self.on_host, self.name_sep, self.tree_width = on_host, name_sep, tree_width
        cont_cols = [] if cont_cols is None else cont_cols
        cont_cols = column_names_arg(cont_cols, "JoinGroupby(cont_cols=...)", self)  # names, or nodes (see column_names_arg)
        stats_list = [stats] if isinstance(stats, str) else list(stats)
        bad = [s for s in stats_list if s not in STATS]
        if bad or not stats_list:
            raise ValueError(f"JoinGroupby stats must be among {list(STATS)}, got {stats!r}")
        if not cont_cols and stats_list != ["count"]:
            raise ValueError("JoinGroupby needs cont_cols for statistics other than 'count'")
        self.cont_cols = cont_cols
        self.stats = stats
        self.input_groups: List[List[str]] = []
        self.stats_: Optional[Dict[str, Any]] = None
        self._cache: Dict[Any, Any] = {}

    # -- columns -------------------------------------------------------------------------------
    @property
    def conts(self) -> List[str]:
        if not self.cont_cols:
            return []
        return [self.cont_cols] if isinstance(self.cont_cols, str) else list(self.cont_cols)

    @property
    def stat_list(self) -> List[str]:
        return [self.stats] if isinstance(self.stats, str) else list(self.stats)

    def dependencies(self) -> List[str]:
        return self.conts

    def _keys(self, columns: List[str]) -> Dict[str, List[str]]:
        """category name -> the column(s) it is made of."""
        return group_keys(columns, self.input_groups)

    def _outputs(self, key: str) -> List[tuple]:
        """(output name, cont or None, stat) of one category, in NVTabular 23.08's order
        (``JoinGroupby.column_mapping``, which its executor selects the outputs by): for each
        continuous column, each stat as listed, ``<key>_count`` where "count" first comes up."""
        out: Dict[str, tuple] = {}
        if not self.conts and "count" in self.stat_list:
            out[f"{key}_count"] = (f"{key}_count", None, "count")
        for c in self.conts:
            for st in self.stat_list:
                name = f"{key}_count" if st == "count" else f"{key}_{c}_{st}"
                out.setdefault(name, (name, None, "count") if st == "count" else (name, c, st))
        return list(out.values())

    def output_column_names(self, columns: List[str]) -> List[str]:
        return [name for key in self._keys(columns) for name, _, _ in self._outputs(key)]

    def compute_output_schema(self, input_schema: Schema, columns: List[str]) -> Schema:
        out = []
        dtypes = {}
        for key in self._keys(columns):
            for name, cont, st in self._outputs(key):
                given = input_schema[cont].dtype if cont is not None and cont in input_schema else None
                dtypes[name] = self._stat_dtype(key, name, st, given)
                out.append(ColumnSchema(name, dtype=dtypes[name], tags=self.output_tags))
        self._dtypes = dtypes  # what transform casts to (the bound schema's; see _stat_dtype)
        return Schema(out)

    def _stat_dtype(self, key: str, name: str, st: str, cont_dtype: Optional[str], warn: bool = True) -> str:
        """NVTabular 23.08's dtype of a statistic (join_groupby.py ``AGG_DTYPES``, ``_compute_dtype``):
        ``count`` int32, ``mean``/``std``/``var`` float32, ``sum``/``min``/``max`` the continuous
        column's dtype (float32 for a bool or other column). An integer dtype that the fitted
        values do not fit (a count past 2**31 - 1, an int32 column's sum past its range: NVTabular
        wraps them around) is int64 instead, with a warning naming the column."""
        if st == "count":
            want = "int32"
        elif st in ("sum", "min", "max") and _numeric_kind(cont_dtype):
            want = np.dtype(cont_dtype).name
        else:
            return "float32"
        table = (self.stats_ or {}).get(key, {}).get("table", {})
        if np.dtype(want).kind in "iu" and name in table:
            vals = np.asarray(table[name], dtype="float64")
            vals = vals[np.isfinite(vals)]
            info = np.iinfo(want)
            # (the first value past the top: float(info.max) of a 64-bit type rounds up to it, and
            # uint64's 2**64 - 1, rounded to 2**64 in float64, was cast back to uint64 as 0)
            top = 2.0 ** (info.bits - (1 if info.kind == "i" else 0))
            if vals.size and (vals.min() < info.min or vals.max() >= top):
                out = "int64" if vals.min() >= -2.0 ** 63 and vals.max() < 2.0 ** 63 else "float64"
                if warn:
                    warn_difference(f"JoinGroupby: {name!r} holds values outside {want} (NVTabular 23.08's dtype "
                                    f"for it, which would wrap them around); tabprep outputs it as {out}",
                                    stacklevel=3, at_build=True)
                return out
            if warn and info.bits == 64 and vals.size and np.abs(vals).max() >= 2.0 ** 53:
                warn_difference(f"JoinGroupby: {name!r} holds integers beyond 2**53; tabprep computes the statistics "
                                f"in float64, so they are rounded to its precision (min of [2**60 + 1] gives 2**60), "
                                f"where NVTabular 23.08's pandas / cuDF groupby gives them exactly (docs/migration.md)",
                                stacklevel=3, at_build=True)
        return want

    def _key_series(self, df: Any, cols: List[str]) -> Any:
        return _combo_series(df, cols, self._combo_format) if len(cols) > 1 else df[cols[0]]

    # -- fit -------------------------------------------------------------------------------------
    def fit_partial(self, columns: List[str], df: Any) -> Dict[str, Any]:
        xp = backend.array_module(df)
        conts = {c: backend.float_values(df[c]) for c in self.conts}
        # what fit_warnings reports (NVTabular 23.08 differs there): null conts, keys with a null part
        null_conts = [c for c, x in conts.items() if backend.any_true(xp.isnan(x))]
        inf_conts = [c for c, x in conts.items() if backend.any_true(xp.isinf(x))]
        out = {}
        for key, cols in self._keys(columns).items():
            keys, valid = G.key_column(self._key_series(df, cols))
            lib = backend.frame_lib(df)
            key_s = keys.reset_index(drop=True) if hasattr(keys, "reset_index") else lib.Series(keys)
            data = {"__key": key_s, "rows": lib.Series(xp.ones(int(valid.sum()), dtype="float64"), index=key_s.index)}
            for c, x in conts.items():
                x = x[valid]
                ok = xp.isfinite(x)  # non-finite policy: NaN and +-inf are left out of the statistics
                data[f"{c}\x1fn"] = lib.Series(ok.astype("float64"), index=key_s.index)
                data[f"{c}\x1fs"] = lib.Series(xp.where(ok, x, 0.0), index=key_s.index)
                data[f"{c}\x1flo"] = lib.Series(xp.where(ok, x, np.inf), index=key_s.index)
                data[f"{c}\x1fhi"] = lib.Series(xp.where(ok, x, -np.inf), index=key_s.index)
            frame = lib.DataFrame(data)
            g = frame.groupby("__key", sort=False)
            for c, x in conts.items():
                # second pass for M2: deviations from the group mean of this partition
                n_b = g[f"{c}\x1fn"].transform("sum")
                s_b = g[f"{c}\x1fs"].transform("sum")
                mean_b = s_b / n_b.where(n_b > 0, 1)
                dev = frame[f"{c}\x1fs"] - mean_b
                frame[f"{c}\x1fm2"] = (dev * dev).where(frame[f"{c}\x1fn"] > 0, 0.0)
            g = frame.groupby("__key", sort=False)
            res = g.agg(self._aggs())
            res.index.name = None
            null_part = len(cols) > 1 and bool(G.null_columns(df, cols))
            null_key = len(cols) == 1 and not bool(valid.all())  # NVTabular: the null category's count is 0
            out[key] = {"groups": res, "null": self._null_group(conts, ~valid, xp),
                        "flags": {"null_conts": null_conts, "null_part": null_part, "inf_conts": inf_conts,
                                  "null_key": null_key}}
        return out

    def _aggs(self) -> Dict[str, str]:
        aggs = {"rows": "sum"}
        for c in self.conts:
            aggs.update({f"{c}\x1fn": "sum", f"{c}\x1fs": "sum", f"{c}\x1fm2": "sum",
                         f"{c}\x1flo": "min", f"{c}\x1fhi": "max"})
        return aggs

    def _null_group(self, conts: Dict[str, Any], mask: Any, xp: Any) -> Dict[str, float]:
        acc = {"rows": float(mask.sum())}
        for c, x in conts.items():
            x = x[mask]
            x = x[xp.isfinite(x)]
            n = int(x.size)
            mean = float(x.mean()) if n else 0.0
            acc.update({f"{c}\x1fn": float(n), f"{c}\x1fs": float(x.sum()) if n else 0.0,
                        f"{c}\x1fm2": float(((x - mean) ** 2).sum()) if n else 0.0,
                        f"{c}\x1flo": float(x.min()) if n else np.inf, f"{c}\x1fhi": float(x.max()) if n else -np.inf})
        return acc

    def fit_combine(self, partials: List[Dict[str, Any]]) -> Dict[str, Any]:
        out = {}
        for key in partials[0]:
            frames = [p[key]["groups"] for p in partials]
            out[key] = {"groups": self._combine_frames(frames),
                        "null": self._combine_null([p[key]["null"] for p in partials]),
                        "flags": {"null_conts": sorted({c for p in partials for c in p[key]["flags"]["null_conts"]}),
                                  "null_part": any(p[key]["flags"]["null_part"] for p in partials),
                                  "null_key": any(p[key]["flags"].get("null_key") for p in partials),
                                  "inf_conts": sorted({c for p in partials for c in p[key]["flags"].get("inf_conts", [])})}}
        return out

    def _combine_frames(self, frames: List[Any]) -> Any:
        nonempty = [f for f in frames if len(f)]
        if len(nonempty) <= 1:
            return nonempty[0] if nonempty else frames[0]
        nonempty = backend.on_one_backend(nonempty)  # host copies when some partials were moved there
        lib = backend.frame_lib(nonempty[0])
        cat = lib.concat(nonempty)
        if self.conts:
            g = cat.groupby(level=0, sort=False)
            for c in self.conts:
                n, s = cat[f"{c}\x1fn"], cat[f"{c}\x1fs"]
                n_b, s_b = g[f"{c}\x1fn"].transform("sum"), g[f"{c}\x1fs"].transform("sum")
                d = s / n.where(n > 0, 1) - s_b / n_b.where(n_b > 0, 1)
                cat[f"{c}\x1fm2"] = cat[f"{c}\x1fm2"] + (n * d * d).where(n > 0, 0.0)
        out = cat.groupby(level=0, sort=False).agg(self._aggs())
        out.index.name = None
        return out

    def _combine_null(self, parts: List[Dict[str, float]]) -> Dict[str, float]:
        acc = {"rows": sum(p["rows"] for p in parts)}
        for c in self.conts:
            n = sum(p[f"{c}\x1fn"] for p in parts)
            s = sum(p[f"{c}\x1fs"] for p in parts)
            mean = s / n if n else 0.0
            m2 = sum(p[f"{c}\x1fm2"] + (p[f"{c}\x1fn"] * (p[f"{c}\x1fs"] / p[f"{c}\x1fn"] - mean) ** 2
                                        if p[f"{c}\x1fn"] else 0.0) for p in parts)
            acc.update({f"{c}\x1fn": n, f"{c}\x1fs": s, f"{c}\x1fm2": m2,
                        f"{c}\x1flo": min(p[f"{c}\x1flo"] for p in parts),
                        f"{c}\x1fhi": max(p[f"{c}\x1fhi"] for p in parts)})
        return acc

    def fit_finalize(self, columns: List[str], combined: Dict[str, Any]) -> None:
        stats = {}
        for key, entry in combined.items():
            values, arrays = G.to_host_arrays(entry["groups"])
            null = entry["null"]
            # rows: the categories, then the null group, then "unseen"
            acc = {name: np.concatenate([arrays[name].astype("float64"), [null[name], 0.0]]) for name in self._aggs()}
            for c in self.conts:
                acc[f"{c}\x1flo"][-1], acc[f"{c}\x1fhi"][-1] = np.inf, -np.inf
            # the unseen row, and the null group when no key was null: every statistic null, the
            # count too (NVTabular's left merge finds no row there: null on its GPU)
            empty = acc["rows"] == 0
            table = {name: np.where(empty, np.nan, _stat(acc, cont, st)) for name, cont, st in self._outputs(key)}
            stats[key] = {"values": values, "table": table}
        self.stats_ = stats
        self._cache = {}
        self.fit_notes_ = self._notes(columns, combined)

    def _notes(self, columns: List[str], combined: Dict[str, Any]) -> List[str]:
        """The differences from NVTabular 23.08 that this fit's data meets (docs/migration.md)."""
        notes = []
        moments = [st for st in self.stat_list if st in ("mean", "std", "var")]
        null_conts = sorted({c for e in combined.values() for c in e["flags"]["null_conts"]})
        if moments and null_conts:
            notes.append(f"JoinGroupby: continuous column(s) {null_conts} hold nulls/NaN; tabprep's {moments} "
                         f"are over the non-null values, where NVTabular 23.08's mean counts null rows (it divides "
                         f"the sum by the group's row count, nulls included; docs/migration.md). Fill them "
                         f"(FillMissing) first if the model was trained on NVTabular's numbers.")
        inf_conts = sorted({c for e in combined.values() for c in e["flags"].get("inf_conts", [])})
        if inf_conts and any(st != "count" for st in self.stat_list):
            notes.append(infinite_note("JoinGroupby", inf_conts, "statistics per category"))
        keys = self._keys(columns)
        for key, entry in combined.items():
            if entry["flags"]["null_part"]:
                notes.append(f"JoinGroupby: the column group {key!r} ({keys.get(key)}) has rows with a null part; "
                             f"tabprep gives each such combination its own statistics, where NVTabular 23.08 fits "
                             f"it with a count of 0 (an inf mean; docs/migration.md). Fill the nulls "
                             f"(FillMissing) first to make these categories explicit.")
            differ = [_NVT_NULL_KEY[st] for st in self.stat_list if st in _NVT_NULL_KEY]
            if entry["flags"].get("null_key") and differ:
                notes.append(f"JoinGroupby: column {key!r} holds nulls in the fitted data; tabprep gives the null "
                             f"category its own statistics (count = its rows), where NVTabular 23.08 fits it with a "
                             f"count of 0: on null rows its {', '.join(differ)} (sum, min and max agree; "
                             f"docs/migration.md). Fill the nulls (FillMissing) before the JoinGroupby to make null a "
                             f"category of its own (then both give its statistics).")
        return notes

    def clear(self) -> None:
        self.stats_ = None
        self.fit_notes_ = []
        self._cache = {}
        self._combo_format = COMBO_KEY_FORMAT

    # -- transform ----------------------------------------------------------------------------------
    def _index(self, key: str, like: Any) -> Any:
        # once per process and device, whichever thread asks first (see tabprep.ops._lookups)
        return build_once(self._cache, ("index", key, backend.device(like)),
                          lambda: V.vocab_index(self.stats_[key]["values"], like))

    def warm_lookups(self, like: Any) -> None:
        """Build every key's lookup structure for ``like``'s device now (see
        :mod:`tabprep.ops._lookups`); a no-op before fit."""
        for key in (self.stats_ if self.stats_ else {}):
            self._index(key, like)

    def _column(self, key: str, name: str, like: Any) -> Any:
        ck = ("col", key, name, backend.device(like))
        arr = self._cache.get(ck)
        if arr is None:
            arr = backend.array_module(like).asarray(self.stats_[key]["table"][name])
            self._cache[ck] = arr
        return arr

    def transform(self, columns: List[str], df: Any) -> Any:
        self._require_fitted()
        lib = backend.frame_lib(df)
        xp = backend.array_module(df)
        out = {}
        for key, cols in self._keys(columns).items():
            s = self._key_series(df, cols)
            n = len(self.stats_[key]["values"])
            pos = V.index_of(s, self._index(key, df))
            row = xp.where(pos >= 0, pos, xp.where(xp.asarray(backend.isnull(s)), n, n + 1))
            for name, cont, st in self._outputs(key):
                vals = self._column(key, name, df)[row]
                dtype = getattr(self, "_dtypes", {}).get(name) or self._stat_dtype(
                    key, name, st, normalize_dtype(str(df[cont].dtype)) if cont is not None else None, warn=False)
                if np.dtype(dtype).kind in "iu":  # null statistics (an unseen category) stay null
                    nulls = xp.isnan(vals)
                    series = backend.new_series(xp.where(nulls, 0, vals).astype(dtype), like=df[cols[0]], name=name)
                    series = backend.set_nulls(series, nulls)
                else:
                    series = backend.new_series(vals.astype(dtype), like=df[cols[0]], name=name)
                out[name] = series
        return lib.DataFrame(out, index=df.index)

    # -- persistence --------------------------------------------------------------------------------
    def save_state(self, path: Path) -> Dict[str, Any]:
        path.mkdir(parents=True, exist_ok=True)
        files = {}
        for i, (key, st) in enumerate(self.stats_.items()):
            n = len(st["values"])
            # the table has n + 2 rows (categories, null group, unseen): values padded with nulls
            values = pa.array(list(st["values"]) + [None, None]) if st["values"].dtype == object else \
                pa.array(np.concatenate([st["values"], np.zeros(2, dtype=st["values"].dtype)]),
                         mask=np.arange(n + 2) >= n)
            cols = {"value": values}
            cols.update({name: pa.array(arr) for name, arr in st["table"].items()})
            fname = f"groupby_{i:03d}.parquet"
            pq.write_table(pa.table(cols), path / fname)
            files[key] = {"file": fname, "size": n}
        return {"files": files, "input_groups": self.input_groups, "combo_key_format": self._combo_format}

    def load_state(self, path: Path, meta: Dict[str, Any]) -> None:
        self._combo_format = combo_key_format(self.label, meta)  # 1 saved before format 2: keep its ids
        stats = {}
        for key, m in meta["files"].items():
            table = pq.read_table(state_file(self, path, m["file"]))
            # n categories, then the null group and the unseen row: a smaller size cut the lookup silently
            n = check_size(self.label, key, m.get("size"), table.num_rows - 2)
            col = table.column("value").slice(0, n)
            if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
                values = np.asarray(col.to_pylist(), dtype=object)
            else:
                values = col.to_numpy()
            cols = {name: table.column(name).to_numpy() for name in table.column_names if name != "value"}
            count = cols.get(f"{key}_count")
            if count is not None and count.dtype.kind in "iu":
                # saved before 2026-11-29: the unseen row (and an unfitted null group) held count 0,
                # a fitted category never does; now null, as the other statistics
                cols[f"{key}_count"] = np.where(count == 0, np.nan, count.astype("float64"))
            stats[key] = {"values": values, "table": cols}
        self.stats_ = stats
        self._cache = {}

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_cache"] = {}
        return state


def _numeric_kind(dtype: Optional[str]) -> bool:
    """True for an int / uint / float dtype string (not bool, strings, datetimes, nested lists)."""
    try:
        return dtype is not None and np.dtype(dtype).kind in "iuf"
    except TypeError:  # "str", "list<int64>": not numpy dtypes
        return False


def _stat(acc: Dict[str, np.ndarray], cont: Optional[str], st: str) -> np.ndarray:
    if st == "count":
        return acc["rows"].round().astype("int64")
    n, s, m2 = acc[f"{cont}\x1fn"], acc[f"{cont}\x1fs"], acc[f"{cont}\x1fm2"]
    with np.errstate(invalid="ignore", divide="ignore"):
        if st == "sum":
            return s
        if st == "mean":
            return np.where(n > 0, s / np.where(n > 0, n, 1), np.nan)
        if st in ("var", "std"):
            var = np.where(n > 1, np.maximum(m2, 0.0) / np.where(n > 1, n - 1, 1), np.nan)
            return np.sqrt(var) if st == "std" else var
        if st == "min":
            return np.where(n > 0, acc[f"{cont}\x1flo"], np.nan)
        if st == "max":
            return np.where(n > 0, acc[f"{cont}\x1fhi"], np.nan)
    raise ValueError(st)
