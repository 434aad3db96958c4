"""JoinExternal: add columns of a side table (a frame, or parquet at a path or fsspec URL) to each row."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

import pyarrow as pa
import pyarrow.parquet as pq

from .. import backend
from .._warn import warn_difference, warn_once, warned_once
from .._util import is_frame
from ..io import fs as fsmod
from ..io.paths import expand_paths
from ..schema import Schema
from .base import Operator, state_file

_ROW = "__tabprep_row__"
#: stands for a side table that a saved workflow holds in its state (see ``from_config``)
_IN_SAVED_STATE = object()


def _exact_int_keys(left: Any, side: Any, keys: List[str]) -> Any:
    """``side`` with each key whose integer type differs from the data's in sign where one is uint64
    (uint64 against int64, int32...) cast to the data's own kind, after dropping the side rows it
    cannot hold (negative keys for uint64 data, keys from 2**63 on for signed data): they match
    nothing (a null key is kept where the data's dtype holds nulls). pandas' merge compares such
    keys as float64, where 2**53 + 1 equals 2**53 (a wrong row joined, silently; or rows
    multiplied). Other keys as they are."""
    for k in keys:
        ld, sd = left[k].dtype, side[k].dtype
        if getattr(ld, "kind", "") not in "iu" or getattr(sd, "kind", "") not in "iu" or ld.kind == sd.kind:
            continue
        if "uint64" not in (str(ld).lower(), str(sd).lower()):
            continue   # (uint8/16/32 against a signed type: pandas widens both exactly)
        fits = (side[k] >= 0) if ld.kind == "u" else (side[k] <= 2 ** 63 - 1)
        # a null side key stays where the data's dtype can hold a null (it matches the data's null keys)
        keep = fits.fillna(False) | (side[k].isna() & (backend.is_gpu(side) or hasattr(ld, "na_value")))
        side = side[keep.values]
        signed = "Int64" if hasattr(ld, "na_value") else "int64"  # (pandas' nullable Int64 holds the nulls)
        side = side.assign(**{k: side[k].astype(ld if ld.kind == "u" else signed)})
    return side


def _note_int_misses(merged: Any, side: Any, ext: List[str]) -> None:
    """Once per process and column: rows without a match get a null in an integer or bool side
    column, which keeps its dtype (pandas ``Int64``), where NVTabular 23.08 gives float64 NaN."""
    for c in ext:
        key = ("JoinExternal misses", c)
        if warned_once(key) or getattr(side[c].dtype, "kind", "") not in ("i", "u", "b"):
            continue
        if backend.any_true(merged[c].isna().values):
            warn_once(key, f"JoinExternal: rows without a match get a null in the integer or bool side column {c!r}, "
                           f"which keeps its dtype (nullable), where NVTabular 23.08 turns the column into float64 "
                           f"with NaN (docs/migration.md). Cast it with LambdaOp(f, dtype='float64') after the join "
                           f"to get NVTabular's values.", stacklevel=2)


class JoinExternal(Operator):
    """Join the columns of a side table onto each row by key, keeping the row order.

    ``["item_id", "price"] >> JoinExternal(items_df, on="item_id")`` outputs the selected
    columns followed by the side table's columns (``columns_ext``). Each partition is joined
    on its own (the side table is broadcast to every task), so any partitioning works.

    Args:
        df_or_path: the side table (``df_ext=`` is NVTabular's keyword for it; give one): a pandas or cuDF DataFrame, or a parquet file / folder /
            glob, local or at an fsspec URL (``s3://``, ``gs://``, ``file://``...; read through
            fsspec like a :class:`tabprep.Dataset`'s files, a half-written tabprep folder is
            refused). It is read once per process and backend, and must fit in (device) memory.
        on: key column name(s), present in both tables. Key columns that are not selected
            are read from the raw input (and not output).
        columns_ext: side-table columns to add (default: all its non-key columns). They
            must not clash with the selected column names.
        on_ext: (NVTabular's) the side table's own key name(s), joined to ``on``. Listed in
            ``columns_ext`` (NVTabular 23.08 requires that), a side key is also output under its
            own name, as NVTabular's: the side table's key, null where a row has no match. Not
            listed (or ``columns_ext=None``), it is not output, with a warning at build.
        how: ``"left"`` (default): every row is kept, rows without a match get nulls (integer
            and bool side columns become nullable on pandas); ``"inner"``: rows without a
            match are dropped (see *Keys* for null keys). An inner join changes the number of
            rows, so, like :class:`Filter`, apply it last, to the merged columns
            (``(cats + conts) >> JoinExternal(..., how="inner")``), not inside one branch of ``+``.
        storage_options: options of the file system of a URL ``df_or_path`` (``key``/``secret``,
            ``endpoint_url``...), as in pandas and dask (default None: the environment's
            credentials); ignored for frames and local paths. Stored verbatim; never saved.

    Keys: a null key (NaN, None, NA) matches the side table's null key, as NVTabular 23.08's
    ``merge`` (pandas' and cuDF's merges compare nulls as equal): a left join gives the row that
    side row's values, an inner join keeps it; with no null key in the side table, a null key
    matches nothing. The side table must hold each key at most once, a null key included (a
    duplicate raises ``ValueError`` naming some of the duplicates), so a join never adds rows.

    Saving: ``Workflow.save`` writes the side table (its key and ``columns_ext`` columns) as
    parquet next to the workflow, so a loaded workflow joins exactly the same data even if
    the original file changes or is gone. Its path is saved, its ``storage_options`` are not
    (they hold credentials; pandas and dask never write them either): a loaded op has none and
    needs none, and ``repr`` shows only their names. A spec (``to_spec``) names the path only, so
    ``fit`` from a spec reads an ``s3://`` side table with the environment's credentials.

    Example:
        >>> items = pd.DataFrame({"item_id": [1, 2], "price": [9.5, 3.0]})
        >>> joined = ["item_id", "user_id"] >> JoinExternal(items, on="item_id")
    """

    resets_index = True   # (NVTabular's JoinExternal: reset_index(drop=True))

    def __init__(self, df_or_path: Any = None, on: Union[str, Sequence[str], None] = None,
                 columns_ext: Optional[Sequence[str]] = None, how: str = "left",
                 storage_options: Optional[Dict[str, Any]] = None, *, df_ext: Any = None,
                 on_ext: Union[str, Sequence[str], None] = None, drop_duplicates_ext: Optional[bool] = None,
                 kind_ext: Any = None, cache: Any = "host") -> None:
        # ``df_ext`` is NVTabular 23.08's keyword for the side table; ``df_or_path`` is tabprep's
        if df_ext is not None:
            if df_or_path is not None:
                raise TypeError("JoinExternal: give the side table once, as df_ext= (NVTabular's name) "
                                "or df_or_path= (tabprep's), not both")
            df_or_path = df_ext
        elif df_or_path is None:
            raise TypeError("JoinExternal needs the side table: df_ext= (or df_or_path=)")
        if df_or_path is _IN_SAVED_STATE:  # from_config of a frame side table: load_state brings it
            df_or_path = None
        if how not in ("left", "inner"):
            raise ValueError(f"JoinExternal how must be 'left' or 'inner', got {how!r}")
        if not on:
            raise ValueError("JoinExternal needs the key column(s) 'on'")
        df_or_path = _as_side_table(df_or_path)
        if df_or_path is not None and not (isinstance(df_or_path, (str, Path)) or is_frame(df_or_path)):
            raise TypeError(f"JoinExternal df_or_path must be a pandas/cuDF DataFrame, a pyarrow Table, a dask "
                            f"DataFrame, a tabprep Dataset or a parquet / csv path, got {type(df_or_path).__name__}")
        on_list = _names(on)
        ext_list = on_list if on_ext is None else _names(on_ext)
        if len(ext_list) != len(on_list):
            raise ValueError(f"JoinExternal: on_ext {on_ext!r} must name as many key columns as on {on!r}")
        listed = _names(columns_ext)
        hidden = [e for e, k in zip(ext_list, on_list) if e != k and e not in listed]
        if hidden:  # side keys named in columns_ext are output, as NVTabular 23.08 outputs them
            how_nvt = ("outputs them under their own names (equal to the key where a row matched)"
                       if columns_ext is None else
                       "raises KeyError unless columns_ext lists them, and then outputs them under their own names")
            warn_difference(f"JoinExternal(on_ext={on_ext!r}): the side table's key column(s) {hidden} are joined "
                            f"as {[k for e, k in zip(ext_list, on_list) if e in hidden]} and not output; NVTabular "
                            f"23.08 {how_nvt}. List them in columns_ext to output them (as NVTabular does)",
                            stacklevel=2, at_build=True)
        # NVTabular's: the side table's key names (honoured), full-row duplicates dropped before the
        # join (honoured), the table's format and cache (tabprep reads by type / suffix; no effect)
        self.on_ext, self.drop_duplicates_ext, self.kind_ext, self.cache = on_ext, drop_duplicates_ext, kind_ext, cache
        self.df_or_path = df_or_path
        self.on = on
        self.columns_ext = columns_ext
        self.how = how
        self.storage_options = storage_options
        #: an inner join drops rows (Workflow treats it like Filter)
        self.changes_rows = how == "inner"
        self._host: Any = None  # the validated side table on the host (pandas)
        self._cache: Dict[str, Any] = {}

    # -- the side table -----------------------------------------------------------------
    @property
    def keys(self) -> List[str]:
        return _names(self.on)

    def _side_host(self) -> Any:
        if self._host is None:
            src = self.df_or_path
            if src is None:
                raise RuntimeError("JoinExternal has no side table (it was built from a saved config without its state)")
            if is_frame(src):
                # cells holding Python lists / numpy arrays become one Arrow list column (multi-hot)
                frame = backend.lists_to_arrow(backend.to_host(src))
            else:
                frame = backend.arrow_to_frame(self._read_side(str(src)), cpu=True)
            self._host = self._validate(frame)
        return self._host

    def _read_side(self, src: str) -> pa.Table:
        """The parquet (or csv, by suffix) side table at ``src`` through tabprep's file systems."""
        so = self.storage_options
        with fsmod.remote_errors(src, "read the JoinExternal side table"):
            tables = []
            for f in expand_paths(src, so):
                path, filesystem = fsmod.arrow_path(f, so)
                tables.append(_read_side_file(path, filesystem))
        if not tables:
            raise FileNotFoundError(f"JoinExternal: no parquet file at {src!r}")
        return pa.concat_tables(tables, promote_options="default")

    def _validate(self, frame: Any, saved: bool = False) -> Any:
        """The side table checked and laid out for the join (keys, then ``columns_ext``). ``saved``:
        a table :meth:`save_state` wrote, already laid out (its keys renamed from ``on_ext``)."""
        keys = self.keys
        if self.on_ext is not None and not saved:  # the side table's own key names -> on's
            renames = {e: k for e, k in zip(_names(self.on_ext), keys) if e != k and e in frame.columns}
            both = [k for k in renames.values() if k in frame.columns]
            if both:
                raise ValueError(f"JoinExternal: the side table holds both the on_ext key(s) {list(renames)} and "
                                 f"column(s) {both} named like the data's keys; rename or drop one of them")
            # a side key listed in columns_ext is also output under its own name (NVTabular 23.08's
            # merge(left_on=on, right_on=on_ext) keeps it): a copy of it stays beside the join key
            listed = _names(self.columns_ext)
            kept = {e: frame[e] for e in renames if e in listed}
            frame = frame.rename(columns=renames)
            if kept:
                frame = frame.assign(**kept)
        missing = [k for k in keys if k not in frame.columns]
        if missing:
            raise KeyError(f"JoinExternal: key column(s) {missing} are not in the side table "
                           f"(its columns: {list(frame.columns)})")
        ext = self.ext_columns(frame)
        frame = frame[keys + ext]
        if self.drop_duplicates_ext:  # NVTabular's: repeated rows of the joined columns go before the join
            frame = frame.drop_duplicates(ignore_index=True)
        # a null key is kept: it matches the data's null key, as NVTabular 23.08's merge (pandas' and
        # cuDF's merges compare nulls as equal); duplicated() counts two null keys as duplicates
        dup = frame.duplicated(subset=keys, keep=False)
        if dup.any():
            examples = frame.loc[dup, keys].drop_duplicates().head(5).to_dict("records")
            raise ValueError(f"JoinExternal: the side table holds {int(dup.sum())} rows with duplicate keys {keys}, "
                             f"e.g. {examples}; a join must not multiply rows: deduplicate it first "
                             f"(e.g. side.drop_duplicates(subset={keys}); a null key is a key too, it matches the "
                             f"data's null keys: side.dropna(subset={keys}) drops them)")
        frame = frame.reset_index(drop=True)
        if self.how == "left":
            frame = backend.nullable_columns(frame, ext)
        return frame

    def ext_columns(self, frame: Any = None) -> List[str]:
        if self.columns_ext is not None:
            ext = _names(self.columns_ext)
            if frame is not None:
                missing = [c for c in ext if c not in frame.columns]
                if missing:
                    raise KeyError(f"JoinExternal: columns_ext {missing} are not in the side table "
                                   f"(its columns: {list(frame.columns)})")
            return [c for c in ext if c not in self.keys]
        frame = self._side_host() if frame is None else frame
        return [c for c in frame.columns if c not in self.keys]

    def _side(self, like: Any) -> Any:
        dev = backend.device(like)
        side = self._cache.get(dev)
        if side is None:
            side = backend.move_like(like, self._side_host())
            self._cache[dev] = side
        return side

    # -- columns ------------------------------------------------------------------------
    def dependencies(self) -> List[str]:
        return self.keys

    def output_column_names(self, columns: List[str]) -> List[str]:
        return list(columns) + self.ext_columns()

    def compute_output_schema(self, input_schema: Schema, columns: List[str]) -> Schema:

        ext = self.ext_columns()
        clash = [c for c in ext if c in columns]
        if clash:
            raise ValueError(f"JoinExternal: side-table columns {clash} clash with the selected columns; "
                             f"pass columns_ext without them, or Rename them first")
        side_schema = Schema.from_frame(self._side_host()[ext])
        return Schema([input_schema[c] for c in columns] + list(side_schema))

    # -- computation -------------------------------------------------------------------------
    def transform(self, columns: List[str], df: Any) -> Any:
        keys = self.keys
        side = self._side(df)
        ext = self.ext_columns()
        xp = backend.array_module(df)
        left = df[keys].reset_index(drop=True)
        left[_ROW] = xp.arange(len(df), dtype="int64")
        try:
            merged = left.merge(_exact_int_keys(left, side, keys), on=keys, how=self.how, sort=False)
        except (ValueError, TypeError) as exc:
            raise TypeError(f"JoinExternal: cannot join on {keys}: the key dtypes of the data "
                            f"({[str(df[k].dtype) for k in keys]}) and of the side table "
                            f"({[str(side[k].dtype) for k in keys]}) do not match ({exc})") from exc
        merged = merged.sort_values(_ROW)
        if len(merged) > len(left):   # (the side's keys are unique, checked: a row matches at most one)
            raise RuntimeError(f"JoinExternal: joining on {keys} made {len(merged)} rows of {len(left)}: the key dtypes "
                               f"{[str(df[k].dtype) for k in keys]} and {[str(side[k].dtype) for k in keys]} compared "
                               f"inexactly; cast the side table's keys to the data's dtypes (and report this)")
        sel = df[list(columns)]
        if self.how == "inner":
            sel = sel.take(merged[_ROW].values)
        if self.how == "left":
            _note_int_misses(merged, side, ext)
        out_ext = merged[ext].reset_index(drop=True)
        out_ext.index = sel.index
        return backend.concat_columns([sel, out_ext])

    # -- persistence ----------------------------------------------------------------------------
    def to_config(self) -> Dict[str, Any]:
        # storage_options are left out on purpose: workflow.json must not hold credentials (the
        # saved state embeds the side table, so a loaded op reads nothing remote)
        src = self.df_or_path
        return {"df_or_path": str(src) if isinstance(src, (str, Path)) else None, "on": self.on,
                "columns_ext": _as_given(self.columns_ext), "how": self.how,
                # NVTabular's side-key names and dedup: a spec re-reads a side-table path with them
                # (the saved state holds the table already joined on ``on``; see from_config)
                "on_ext": _as_given(self.on_ext),
                "drop_duplicates_ext": self.drop_duplicates_ext}

    @classmethod
    def _param_names(cls) -> List[str]:
        # ``df_ext`` is an alias of ``df_or_path`` (stored there), not a parameter of its own
        return [n for n in super()._param_names() if n != "df_ext"]

    @property
    def df_ext(self) -> Any:
        """NVTabular's name of the side table (``df_or_path``)."""
        return self.df_or_path

    @classmethod
    def from_config(cls, config: Dict[str, Any], allow_pickle: bool = False) -> "JoinExternal":
        config = dict(config)
        if config.get("df_or_path") is None:  # an in-memory side table: it is in the saved state
            config["df_or_path"] = _IN_SAVED_STATE
        return cls(**config)

    def __repr__(self) -> str:
        params = {k: repr(v) for k, v in self.get_params().items()}
        if self.storage_options:  # they hold credentials: show their names only
            params["storage_options"] = "{" + ", ".join(f"{k!r}: ..." for k in sorted(self.storage_options)) + "}"
        return f"{type(self).__name__}({', '.join(f'{k}={v}' for k, v in params.items())})"

    @classmethod
    def files_named(cls, config: Dict[str, Any], has_state: bool) -> List[tuple]:
        # the saved side table is read from the state; without it, the path (or URL) would be
        src = config.get("df_or_path", config.get("df_ext"))
        return [] if has_state or not isinstance(src, str) else [("df_or_path", src)]

    def to_spec_config(self) -> Dict[str, Any]:
        if not isinstance(self.df_or_path, (str, Path)):
            raise ValueError("its side table is an in-memory frame, which a spec cannot hold: write it to parquet "
                             "and give JoinExternal its path, or save the fitted workflow with workflow.save(path)")
        return self.to_config()

    def save_state(self, path: Path) -> Dict[str, Any]:
        path.mkdir(parents=True, exist_ok=True)
        pq.write_table(backend.frame_to_arrow(self._side_host()), path / "side_table.parquet")
        return {"file": "side_table.parquet"}

    def load_state(self, path: Path, meta: Dict[str, Any]) -> None:
        frame = backend.arrow_to_frame(pq.read_table(state_file(self, path, meta["file"])), cpu=True)
        self._host = self._validate(frame, saved=True)
        self._cache = {}

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_cache"] = {}  # device copies are rebuilt where the op runs
        return state


def _names(columns: Union[None, str, Sequence[str]]) -> List[str]:
    """``on`` / ``columns_ext`` / ``on_ext`` as a list of names (None: none listed)."""
    return [] if columns is None else [columns] if isinstance(columns, str) else list(columns)


def _as_given(columns: Union[None, str, Sequence[str]]) -> Union[None, str, List[str]]:
    """``columns_ext`` / ``on_ext`` for the saved config: None or one name as given, else a list."""
    return columns if columns is None or isinstance(columns, str) else list(columns)


_SIDE_FORMATS = {".parquet": "parquet", ".parq": "parquet", ".pq": "parquet", ".csv": "csv"}


def _read_side_file(path: str, filesystem: Any) -> pa.Table:
    """One side-table file: parquet, or csv by its ``.csv`` suffix (NVTabular's ``kind_ext``);
    any other suffix is an error naming it."""
    suffix = Path(path).suffix.lower()
    kind = _SIDE_FORMATS.get(suffix, "parquet" if suffix == "" else None)
    if kind is None:
        raise ValueError(f"JoinExternal: cannot read the side table {path!r}: unknown format {suffix!r}; give a "
                         f"parquet ({', '.join(k for k, v in _SIDE_FORMATS.items() if v == 'parquet')}) or "
                         f".csv file, or a DataFrame / pyarrow Table")
    if kind == "csv":
        from pyarrow import csv as pacsv

        if filesystem is None:
            return pacsv.read_csv(path)
        with filesystem.open_input_stream(path) as fh:
            return pacsv.read_csv(fh)
    return pq.read_table(path, filesystem=filesystem)


def _as_side_table(obj: Any) -> Any:
    """A pyarrow Table, dask DataFrame or tabprep Dataset side table as an in-memory frame
    (NVTabular's JoinExternal accepts them); paths and frames as they are."""
    if obj is None or isinstance(obj, (str, Path)) or is_frame(obj):
        return obj
    if isinstance(obj, pa.Table):
        return backend.arrow_to_frame(obj, cpu=True)
    from ..io.dataset import Dataset

    if isinstance(obj, Dataset):
        return obj._to_ddf().compute()
    if type(obj).__module__.startswith(("dask", "dask_cudf")) and hasattr(obj, "compute"):
        return obj.compute()
    return obj

