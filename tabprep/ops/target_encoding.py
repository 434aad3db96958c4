"""TargetEncoding: replace a category by the smoothed mean of the target in that category."""
from __future__ import annotations

from pathlib import Path
import math
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .. import backend
from .._util import is_number, whole, whole_number
from .._warn import first_time, warn_difference, warn_user
from ..schema import ColumnSchema, Schema, Tags
from ..stats import grouped as G
from ..stats import vocab as V
from . import _fold_partitions as FP
from ._lookups import build_once
from ._saved_state import check_number, check_numbers, combo_key_format
from .base import (StatOperator, check_nvt_args, column_names_arg, group_keys, infinite_note, out_of_fold_mode,
                   state_file)
from .categorify import COMBO_KEY_FORMAT, _combo_series


class TargetEncoding(StatOperator):
    """Smoothed mean of a target per category, as new continuous columns ``TE_<col>_<target>``.

    For a category with target sum ``s`` and count ``n`` (rows with a non-null target)::

        TE = (s + p_smooth * global_mean) / (n + p_smooth)

    A null or unseen category gets ``global_mean`` (the mean of all non-null targets). A column
    group with a null part (``[["a", "b"]]``, ``a`` null) is a combination with its own
    statistics. NVTabular 23.08 fits a null category (single column or null part) with a count
    of 0 (``inf`` with ``p_smooth=0``), and counts a row with a null target in its category's
    count but not its sum (the target weighs as a 0); where the fitted data holds such nulls,
    ``Workflow.fit`` warns (``NVTabularDifferenceWarning`` naming the column and the fix).
    ``[["a", "b"]] >> TargetEncoding("y")`` encodes the combination of ``a`` and ``b`` as one
    category (output ``TE_a_b_y``); ``target`` may be a list (one output per target).

    **Out-of-fold values for training rows.** Encoding a training row with statistics that
    include its own label leaks the label. So every row is assigned to one of ``kfold``
    folds, and the rows the workflow was fitted on can be encoded with the statistics of the
    *other* folds (the global mean of the other folds is used for smoothing and for
    null/unseen categories):

    * ``wf.fit_transform(train)``, or ``wf.transform(train, out_of_fold=True)`` on the same
      dataset (same files, same partitioning) after ``wf.fit(train)``: out-of-fold values. A
      partition of an out-of-fold transform that is not one of the fitted partitions (its row
      count, first and last row id, and a digest of the target by row id: see
      :mod:`tabprep.ops._fold_partitions`) raises ``ValueError``: partitioned otherwise, its rows
      would get other folds than at fit and be encoded with their own target;
    * ``wf.transform(valid)`` (the default, ``out_of_fold=False``), ``transform_frame`` and
      loaders: statistics of all the fitted data.

    Ops fitted downstream of a TargetEncoding (e.g. Normalize) are fitted on the out-of-fold
    values, which is what they will see on the training data.

    **Folds** are deterministic: ``fold = splitmix64(row_id + fold_seed) % kfold`` where
    ``row_id`` is the row's integer index label (the row number for in-memory frames,
    the row number within the file piece for parquet partitions; the position within the
    partition if the index is not integer). They do not depend on the number of workers or
    threads, and are identical on the CPU and the GPU. ``kfold=1`` disables folds (out-of-fold
    values are then the full-data values).

    The target column is read from the raw input (a dependency), so it must be present in
    every dataset the workflow transforms; a node as ``target`` (``labels >> LambdaOp(...)``,
    as NVTabular) is computed first and its output columns are the targets, under its names. Rows with a null (NaN) or +-inf target are ignored by the
    statistics; list columns are not supported.

    Args:
        target: target column name(s), numeric or bool.
        kfold: number of folds (>= 1; default 3 and None = 3, as NVTabular 23.08).
        p_smooth: smoothing weight of the global mean (>= 0).
        out_dtype: float dtype of the outputs.
        fold_seed: seed of the fold assignment (default 42, as NVTabular). None (NVTabular:
            unseeded random folds): a random seed drawn when the op is built, kept by the fitted
            op, saved with it and sent to the workers, so one fit uses one fold assignment.
        target_mean: the global mean used for smoothing and for null / unseen categories, in
            place of the fitted one (NVTabular's): a number, or ``{target: number}``. Default None.
        out_col: output name(s), one per column group in order (one target only); default
            ``TE_<group>_<target>``.
        split_out, split_every, cat_cache, out_path, on_host, name_sep, drop_folds, tree_width:
            NVTabular 23.08's reduction and storage arguments, accepted so its pipelines run
            unchanged; they change no value. ``out_path`` warns (nothing is written there);
            ``name_sep`` must be ``"_"`` and ``drop_folds`` True.

    Example:
        >>> te = ["user_id", "item_id"] >> TargetEncoding("click", kfold=5, p_smooth=20)
        >>> te_pair = [["user_id", "item_id"]] >> TargetEncoding("click")   # TE_user_id_item_id_click
        >>> wf = Workflow(te + te_pair + ["click"])
        >>> train_out = wf.fit_transform(train)      # out-of-fold
        >>> valid_out = wf.transform(valid)          # full-data statistics
    """

    output_tags = (Tags.CONTINUOUS,)
    supports_groups = True

    #: combined-key format (see :data:`tabprep.ops.categorify.COMBO_KEY_FORMAT`); set by fit / load
    _combo_format: int = COMBO_KEY_FORMAT

    def __init__(self, target: Union[str, Sequence[str]], kfold: Optional[int] = 3, p_smooth: float = 20,
                 out_dtype: str = "float32", fold_seed: Optional[int] = 42, target_mean: Any = None,
                 out_col: Union[None, str, Sequence[str]] = None, split_out: Any = None, split_every: Any = None,
                 cat_cache: Any = "host", out_path: Optional[str] = None, on_host: bool = True, name_sep: str = "_",
                 drop_folds: bool = True, tree_width: Any = None) -> None:
        target = column_names_arg(target, "TargetEncoding(target=...)", self)  # names, or nodes (see column_names_arg)
        if not target:
            raise ValueError("TargetEncoding needs a target column")
        check_nvt_args("TargetEncoding", name_sep, out_path)
        if not drop_folds:
            raise ValueError("TargetEncoding(drop_folds=False): tabprep does not output the '__fold__' column "
                             "(NVTabular keeps it for its unit tests); op.folds(frame) gives each row's fold")
        if out_col is not None and not isinstance(out_col, str) and len(set(out_col)) != len(list(out_col)):
            raise ValueError(f"TargetEncoding out_col names must be unique, got {out_col!r}")
        # NVTabular's arguments, stored verbatim: target_mean and out_col are honoured, the
        # reduction / storage knobs change no value (ops.base.check_nvt_args)
        self.target_mean, self.out_col = target_mean, out_col
        self.split_out, self.split_every, self.cat_cache, self.out_path = split_out, split_every, cat_cache, out_path
        self.on_host, self.name_sep, self.drop_folds, self.tree_width = on_host, name_sep, drop_folds, tree_width
        kfold = 3 if kfold is None else kfold  # NVTabular 23.08: kfold or 3
        whole("TargetEncoding kfold", kfold, 1)   # (2.5 made other folds, silently)
        if fold_seed is not None and whole_number(fold_seed, 0) is None:
            raise ValueError(f"TargetEncoding fold_seed must be an int >= 0 (or None), got {fold_seed!r}")
        if not is_number(p_smooth) or not math.isfinite(p_smooth) or p_smooth < 0:   # (NaN gave every row the global mean)
            raise ValueError(f"TargetEncoding p_smooth must be a finite number >= 0, got {p_smooth!r}")
        out_dtype = "float32" if out_dtype is None else out_dtype  # NVTabular: out_dtype or np.float32
        if np.dtype(out_dtype).kind != "f":
            raise ValueError(f"TargetEncoding out_dtype must be a float dtype, got {out_dtype!r}")
        if int(kfold) > 1:
            warn_difference("TargetEncoding: tabprep's wf.transform(data) encodes every row with the statistics of all "
                            "the fitted data unless out_of_fold=True (wf.fit_transform sets it, for the training rows); "
                            "NVTabular 23.08 applies the k-fold encoding in every transform, also of new data, with its "
                            "folds drawn per partition, so its values differ (docs/migration.md). Transform the "
                            "training data with out_of_fold=True (CLI: tabprep fit-transform)", stacklevel=2,
                            at_build=True)
        self.target = target
        self.kfold = int(kfold)
        self.p_smooth = p_smooth
        self.out_dtype = out_dtype
        self.fold_seed = None if fold_seed is None else int(fold_seed)
        #: the seed in use: fold_seed, or one drawn now for fold_seed=None
        self._seed = int(fold_seed) if fold_seed is not None else int(np.random.default_rng().integers(0, 2 ** 62))
        self.input_groups: List[List[str]] = []
        self.stats_: Optional[Dict[str, Any]] = None
        #: the fingerprints of the fitted partitions (:mod:`._fold_partitions`; kfold > 1), by column
        #: ("rows", "first_row", "last_row", "digest"); None before fit, or loaded from a folder saved
        #: without them (an out-of-fold transform then warns once that it cannot check them)
        self.partitions_: Optional[Dict[str, np.ndarray]] = None
        self._cache: Dict[Any, Any] = {}
        self._warned: set = set()

    # -- columns ------------------------------------------------------------------------------
    @property
    def targets(self) -> List[str]:
        return [self.target] if isinstance(self.target, str) else list(self.target)

    def dependencies(self) -> List[str]:
        return self.targets

    def _keys(self, columns: List[str]) -> Dict[str, List[str]]:
        """category name -> the column(s) it is made of."""
        return group_keys(columns, self.input_groups)

    def _names(self, columns: List[str]) -> Dict[Any, str]:
        """(category name, target) -> output column: ``TE_<key>_<target>``, or ``out_col``'s names
        (NVTabular's: one per column group, in the order of the groups; one target only)."""
        keys = list(self._keys(columns))
        if self.out_col is None:
            return {(key, t): f"TE_{key}_{t}" for key in keys for t in self.targets}
        names = [self.out_col] if isinstance(self.out_col, str) else list(self.out_col)
        if len(self.targets) != 1 or len(names) != len(keys):
            raise ValueError(f"TargetEncoding out_col={self.out_col!r} names {len(names)} output(s), but the op makes "
                             f"{len(keys) * len(self.targets)} ({len(keys)} column group(s) {keys} x targets "
                             f"{self.targets}); give one name per column group (one target), or leave out_col out")
        return {(key, self.targets[0]): name for key, name in zip(keys, names)}

    def output_column_names(self, columns: List[str]) -> List[str]:
        return list(self._names(columns).values())

    def compute_output_schema(self, input_schema: Schema, columns: List[str]) -> Schema:
        out = []
        names = self._names(columns)
        for key, cols in self._keys(columns).items():
            for t in self.targets:
                out.append(ColumnSchema(names[key, t], dtype=self.out_dtype, tags=self.output_tags,
                                        properties={"target_encoding": {"columns": cols, "target": t}}))
        return Schema(out)

    def _key_series(self, df: Any, cols: List[str]) -> Any:
        return _combo_series(df, cols, self._combo_format) if len(cols) > 1 else df[cols[0]]

    # -- folds ----------------------------------------------------------------------------------
    def folds(self, df: Any) -> Any:
        """Fold (0..kfold-1, int64 numpy/cupy array) of each row of ``df``."""
        return self._row_hash(df)[1] % np.uint64(self.kfold)

    def _row_hash(self, df: Any) -> Any:
        """(row ids, their splitmix64 hash with the seed): the folds are ``hash % kfold``."""
        xp = backend.array_module(df)
        idx = df.index
        if backend._numpy_kind_dtype(idx.dtype).kind in "iu" and len(idx):
            row = backend.int_values(backend.frame_lib(df).Series(idx), 0)
        else:
            row = xp.arange(len(df), dtype="int64")
        return row, _splitmix64(row, self._seed, xp)

    def _what(self, columns: List[str]) -> str:
        """The op as its messages name it."""
        t = self.targets[0] if len(self.targets) == 1 else self.targets
        return f"TargetEncoding(target {t!r}, kfold={self.kfold}) of columns {list(self._keys(columns))}"

    def _check_partition(self, columns: List[str], df: Any, row: Any, hashed: Any, xp: Any) -> None:
        """An out-of-fold transform's partition ``df`` must be one of the fitted partitions
        (:mod:`._fold_partitions`): ``ValueError`` otherwise. A fitted op without their fingerprints
        (saved before them) warns once that it cannot check."""
        table = getattr(self, "partitions_", None)   # (an op pickled before the attribute existed: None)
        if table is None:
            if first_time(self.__dict__.setdefault("_warned", set()), "partitions"):
                warn_user(FP.unchecked_message(self._what(columns)), stacklevel=4)
            return
        found = FP.fingerprint(row, hashed, backend.float_values(df[self.targets[0]]), xp)
        fitted = build_once(self._cache, ("partitions",), lambda: FP.lookup(table))
        FP.check_partition(found, fitted, len(table["rows"]), self._what(columns))

    # -- fit ----------------------------------------------------------------------------------------
    def _target_arrays(self, df: Any, xp: Any) -> Dict[str, Any]:
        out = {}
        for t in self.targets:
            s = df[t]
            if backend.is_string_series(s) or backend.is_list_series(s):
                raise TypeError(f"TargetEncoding target {t!r} must be numeric or bool, got {s.dtype}")
            out[t] = backend.float_values(s)
        return out

    def fit_partial(self, columns: List[str], df: Any) -> Dict[str, Any]:
        xp = backend.array_module(df)
        k = self.kfold
        row, hashed = self._row_hash(df)
        fold = (hashed % np.uint64(k)).astype("int64")
        ys = self._target_arrays(df, xp)
        # the partition's fingerprint, to check out-of-fold transforms against (_fold_partitions)
        found = FP.fingerprint(row, hashed, ys[self.targets[0]], xp) if k > 1 else None
        totals = {}
        cols_per_target = {}
        inf_targets = [t for t, y in ys.items() if backend.any_true(xp.isinf(y))]  # fit_notes_ (NVTabular counts them)
        for t, y in ys.items():
            ok = xp.isfinite(y)  # non-finite policy: NaN (null) and +-inf targets are left out, like nulls
            yz = xp.where(ok, y, 0.0)
            sums = xp.zeros(k, dtype="float64")
            cnts = xp.zeros(k, dtype="float64")
            cols = {}
            for f in range(k):
                in_f = (fold == f) & ok
                sums[f] = yz[in_f].sum()
                cnts[f] = in_f.sum()
                cols[f"{t}\x1fs{f}"] = xp.where(in_f, yz, 0.0)
                cols[f"{t}\x1fc{f}"] = in_f.astype("float64")
            totals[t] = (backend.to_numpy(sums), backend.to_numpy(cnts))
            cols_per_target[t] = cols
        keyed = {}
        null_parts = []  # column groups with a null part (NVTabular 23.08 fits them with count 0: fit_warnings)
        null_keys = []  # single columns holding a null (the same: NVTabular's null category has count 0)
        null_targets = []  # (key, target): a null target in a row NVTabular counts (its key's first column set)
        nan_ys = {t: xp.isnan(y) for t, y in ys.items()}
        for key, cols in self._keys(columns).items():
            keys, valid = G.key_column(self._key_series(df, cols))
            data = {n: a[valid] for c in cols_per_target.values() for n, a in c.items()}
            keyed[key] = G.group_agg(keys, data, {n: "sum" for n in data}, like=df)
            if len(cols) > 1 and G.null_columns(df, cols):
                null_parts.append(key)
            elif len(cols) == 1 and not bool(valid.all()):
                null_keys.append(key)
            counted = valid if len(cols) == 1 else ~xp.asarray(backend.isnull(df[cols[0]]))
            null_targets += [(key, t) for t, nan in nan_ys.items() if backend.any_true(nan & counted)]
        return {"keys": keyed, "totals": totals, "null_parts": null_parts, "inf_targets": inf_targets,
                "null_keys": null_keys, "null_targets": null_targets, "partitions": [found] if found else []}

    def fit_combine(self, partials: List[Dict[str, Any]]) -> Dict[str, Any]:
        keyed = {}
        for key in partials[0]["keys"]:
            frames = [p["keys"][key] for p in partials]
            keyed[key] = G.combine_agg(frames, {n: "sum" for n in frames[0].columns})
        totals = {t: (sum(p["totals"][t][0] for p in partials), sum(p["totals"][t][1] for p in partials))
                  for t in partials[0]["totals"]}
        null_parts = sorted({k for p in partials for k in p.get("null_parts", [])})
        inf_targets = sorted({t for p in partials for t in p.get("inf_targets", [])})
        null_keys = sorted({k for p in partials for k in p.get("null_keys", [])})
        null_targets = sorted({tuple(kt) for p in partials for kt in p.get("null_targets", [])})
        return {"keys": keyed, "totals": totals, "null_parts": null_parts, "inf_targets": inf_targets,
                "null_keys": null_keys, "null_targets": null_targets,
                "partitions": [fp for p in partials for fp in p.get("partitions", [])]}

    def fit_finalize(self, columns: List[str], combined: Dict[str, Any]) -> None:
        k = self.kfold
        totals = {}
        for t, (sums, cnts) in combined["totals"].items():
            if cnts.sum() == 0:
                raise ValueError(f"TargetEncoding: the target {t!r} has no non-null value in the fitted data")
            totals[t] = {"sum": [float(x) for x in sums], "count": [int(x) for x in cnts]}
        keys = {}
        for key, frame in combined["keys"].items():
            values, arrays = G.to_host_arrays(frame)
            entry = {"values": values}
            for t in self.targets:
                entry[t] = {"sum": np.stack([arrays[f"{t}\x1fs{f}"] for f in range(k)], axis=1).reshape(len(values), k),
                            "count": np.stack([arrays[f"{t}\x1fc{f}"] for f in range(k)], axis=1)
                            .reshape(len(values), k).round().astype("int64")}
            keys[key] = entry
        self.stats_ = {"keys": keys, "totals": totals}
        self.partitions_ = FP.as_table(combined.get("partitions", [])) if k > 1 else None
        self._cache = {}
        groups = self._keys(columns)
        self.fit_notes_ = [
            f"TargetEncoding: the column group {key!r} ({groups.get(key)}) has rows with a null part; tabprep "
            f"encodes each such combination from its own rows, where NVTabular 23.08 fits it with a count of 0 "
            f"(the prior, or inf with p_smooth=0; docs/migration.md). Fill the nulls (FillMissing) first to make "
            f"these categories explicit." for key in combined.get("null_parts", [])]
        self.fit_notes_ += _null_notes(groups, combined, self.p_smooth)
        if combined.get("inf_targets"):
            self.fit_notes_.append(infinite_note("TargetEncoding", combined["inf_targets"], "sums and means per category"))

    def clear(self) -> None:
        self.stats_ = None
        self.partitions_ = None
        self.fit_notes_ = []
        self._cache = {}
        self._combo_format = COMBO_KEY_FORMAT

    # -- encodings ---------------------------------------------------------------------------------
    def _given_mean(self, t: str) -> Optional[float]:
        """``target_mean`` for target ``t``: a number (every target) or ``{target: number}``."""
        m = self.target_mean
        if isinstance(m, dict):
            m = m.get(t)
        return None if m is None else float(m)

    def _encodings(self, key: str, t: str) -> Dict[str, np.ndarray]:
        """Host arrays: full-data encoding per category, out-of-fold encoding per (category, fold),
        and the global means (full, per fold)."""
        ck = ("enc", key, t)
        enc = self._cache.get(ck)
        if enc is None:
            p = float(self.p_smooth)
            tot = self.stats_["totals"][t]
            tsum, tcnt = np.asarray(tot["sum"], dtype="float64"), np.asarray(tot["count"], dtype="float64")
            gm = tsum.sum() / tcnt.sum()
            oof_n = tcnt.sum() - tcnt
            with np.errstate(invalid="ignore", divide="ignore"):
                gm_f = np.where(oof_n > 0, (tsum.sum() - tsum) / np.where(oof_n > 0, oof_n, 1), gm)
            given = self._given_mean(t)
            if given is not None:  # NVTabular: the given target_mean serves every fold and unseen values
                gm, gm_f = given, np.full(len(gm_f), given)
            st = self.stats_["keys"][key][t]
            s, n = st["sum"], st["count"].astype("float64")
            s_all, n_all = s.sum(axis=1), n.sum(axis=1)
            full = _smooth(s_all, n_all, p, gm)
            if self.kfold > 1:
                oof = _smooth(s_all[:, None] - s, n_all[:, None] - n, p, gm_f[None, :])
            else:
                oof, gm_f = full[:, None], np.array([gm])
            enc = {"full": full, "oof": oof, "gm": np.float64(gm), "gm_f": gm_f}
            self._cache[ck] = enc
        return enc

    def _device(self, name: str, arr: np.ndarray, like: Any) -> Any:
        ck = (name, backend.device(like))
        out = self._cache.get(ck)
        if out is None:
            out = backend.array_module(like).asarray(arr)
            self._cache[ck] = out
        return out

    def _index(self, key: str, like: Any) -> Any:
        # once per process and device, whichever thread asks first (see tabprep.ops._lookups)
        return build_once(self._cache, ("index", key, backend.device(like)),
                          lambda: V.vocab_index(self.stats_["keys"][key]["values"], like))

    def warm_lookups(self, like: Any) -> None:
        """Build every key's lookup structure for ``like``'s device now (see
        :mod:`tabprep.ops._lookups`); a no-op before fit."""
        for key in (self.stats_["keys"] if self.stats_ else {}):
            self._index(key, like)

    def transform(self, columns: List[str], df: Any) -> Any:
        self._require_fitted()
        lib = backend.frame_lib(df)
        xp = backend.array_module(df)
        oof = out_of_fold_mode() and self.kfold > 1
        fold = None
        if oof:
            row, hashed = self._row_hash(df)
            self._check_partition(columns, df, row, hashed, xp)
            fold = (hashed % np.uint64(self.kfold)).astype("int64")
        out = {}
        names = self._names(columns)
        for key, cols in self._keys(columns).items():
            s = self._key_series(df, cols)
            pos = V.index_of(s, self._index(key, df))
            seen = pos >= 0
            safe = xp.where(seen, pos, 0)
            for t in self.targets:
                enc = self._encodings(key, t)
                name = names[key, t]
                if len(enc["full"]) == 0:
                    gm = self._device(f"{key}\x1f{t}\x1fgm_f", enc["gm_f"], df)[fold] if oof else enc["gm"]
                    vals = xp.zeros(len(df), dtype="float64") + gm
                elif oof:
                    table = self._device(f"{key}\x1f{t}\x1foof", enc["oof"], df)
                    gm_f = self._device(f"{key}\x1f{t}\x1fgm_f", enc["gm_f"], df)
                    vals = xp.where(seen, table[safe, fold], gm_f[fold])
                else:
                    table = self._device(f"{key}\x1f{t}\x1ffull", enc["full"], df)
                    vals = xp.where(seen, table[safe], enc["gm"])
                out[name] = backend.new_series(vals.astype(self.out_dtype), like=df[cols[0]], name=name)
        return lib.DataFrame(out, index=df.index)

    # -- persistence -------------------------------------------------------------------------------
    def save_state(self, path: Path) -> Dict[str, Any]:
        path.mkdir(parents=True, exist_ok=True)
        files = {}
        k = self.kfold
        for i, (key, entry) in enumerate(self.stats_["keys"].items()):
            cols = {"value": pa.array(entry["values"])}
            for j, t in enumerate(self.targets):
                for f in range(k):
                    cols[f"sum_{j}_{f}"] = pa.array(entry[t]["sum"][:, f], type=pa.float64())
                    cols[f"count_{j}_{f}"] = pa.array(entry[t]["count"][:, f], type=pa.int64())
            fname = f"te_{i:03d}.parquet"
            pq.write_table(pa.table(cols), path / fname)
            files[key] = fname
        meta = {"files": files, "totals": self.stats_["totals"], "input_groups": self.input_groups,
                "combo_key_format": self._combo_format, "fold_seed_used": self._seed}
        if self.partitions_ is not None:  # (kfold > 1) the fitted partitions, to check out-of-fold transforms
            FP.save(self.partitions_, path)
            meta["partitions"] = {"file": FP.FILE, "target": self.targets[0], "count": len(self.partitions_["rows"])}
        return meta

    def load_state(self, path: Path, meta: Dict[str, Any]) -> None:
        self._combo_format = combo_key_format(self.label, meta)  # 1 saved before format 2: keep its ids
        if meta.get("fold_seed_used") is not None:
            check_number(self.label, None, "fold_seed_used", meta["fold_seed_used"], integer=True, low=0)
            self._seed = meta["fold_seed_used"]
        _check_totals(self.label, meta.get("totals"), self.targets, self.kfold)
        k = self.kfold
        keys = {}
        for key, fname in meta["files"].items():
            table = pq.read_table(state_file(self, path, fname))
            col = table.column("value")
            if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
                values = np.asarray(col.to_pylist(), dtype=object)
            else:
                values = col.to_numpy()
            entry = {"values": values}
            for j, t in enumerate(self.targets):
                entry[t] = {"sum": np.stack([table.column(f"sum_{j}_{f}").to_numpy() for f in range(k)], axis=1)
                            .reshape(len(values), k),
                            "count": np.stack([table.column(f"count_{j}_{f}").to_numpy() for f in range(k)], axis=1)
                            .reshape(len(values), k)}
            keys[key] = entry
        self.stats_ = {"keys": keys, "totals": meta["totals"]}
        # saved before 2026-11-29: no fingerprints (out-of-fold transforms warn once that they are unchecked)
        parts = meta.get("partitions")
        self.partitions_ = FP.load(state_file(self, path, parts["file"])) if parts else None
        self._cache = {}

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_cache"] = {}
        return state


def _null_notes(groups: Dict[str, List[str]], combined: Dict[str, Any], p_smooth: float) -> List[str]:
    """The fit's notes on nulls where NVTabular 23.08's numbers differ (docs/migration.md): a null key
    in a single column (NVTabular fits the null category with a count of 0), a null target in rows of
    a category (NVTabular counts the row, its sum skips the target: the target weighs as a 0)."""
    notes = []
    for key in combined.get("null_keys", []):
        nvt = "inf, or the mean where their targets sum to 0" if not p_smooth else \
            f"(their target sum + {p_smooth} * mean) / {p_smooth}"
        notes.append(f"TargetEncoding: column {key!r} holds nulls in the fitted data; tabprep encodes the null "
                     f"category with the global target mean, where NVTabular 23.08 fits it with a count of 0 "
                     f"(its null rows get {nvt}; docs/migration.md). Fill the nulls (FillMissing) before the "
                     f"TargetEncoding to make null a category of its own (then both give its smoothed mean).")
    by_target: Dict[str, List[str]] = {}
    for key, t in combined.get("null_targets", []):
        by_target.setdefault(t, []).append(key)
    for t, keys in sorted(by_target.items()):
        cols = [k if len(groups.get(k, [k])) == 1 else groups[k] for k in keys]
        notes.append(f"TargetEncoding: the target {t!r} holds nulls (NaN) in rows of the categories of {cols}; "
                     f"tabprep leaves a row with a null (NaN) target out of its category's sum and count, where "
                     f"NVTabular 23.08 counts the row but not its target (as if the target were 0, pulling the "
                     f"encoding toward 0: "
                     f"a category with targets [1, NaN] gets 0.5 with p_smooth=0, not 1.0; docs/migration.md). "
                     f"Drop (or fill) the rows with a null target before fitting to get the same numbers from both.")
    return notes


def _smooth(s: np.ndarray, n: np.ndarray, p: float, gm: Any) -> np.ndarray:
    den = n + p
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (s + p * gm) / np.where(den > 0, den, 1)
    return np.where(den > 0, out, gm)


def _splitmix64(x: Any, seed: int, xp: Any) -> Any:
    """splitmix64 finalizer of ``x + seed`` (uint64 arithmetic, identical on numpy and cupy)."""
    z = x.astype("uint64") + np.uint64((seed * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _check_totals(label: str, totals: Any, targets: List[str], kfold: int) -> None:
    """The saved ``totals`` (``{target: {"sum": [per fold], "count": [per fold]}}``, the prior of
    every encoding) checked: a string there was a bare ``TypeError`` at transform, a list of another
    length a wrong prior per fold."""
    if not isinstance(totals, dict):
        raise TypeError(f"{label}: the saved 'totals' must map each target to its sums and counts, "
                        f"got {totals!r}"[:300])
    for t in targets:
        tot = totals.get(t)
        if not isinstance(tot, dict):
            raise TypeError(f"{label}: the saved 'totals' of target {t!r} must be a mapping of 'sum' and 'count', "
                            f"got {tot!r}"[:300])
        check_numbers(label, f"the saved 'totals' of target {t!r}: 'sum'", tot.get("sum"), kfold)
        check_numbers(label, f"the saved 'totals' of target {t!r}: 'count'", tot.get("count"), kfold, integer=True)
        if sum(tot["count"]) == 0:
            raise TypeError(f"{label}: the saved 'totals' of target {t!r} count no row; a fit has at least one")
