"""``tp.profile(data)``: the per-column profile of a dataset in one streaming dask pass, and the
:class:`Profile` document (``profile.json`` + ``index.html``)."""
from __future__ import annotations

import json
import logging
import os
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

import pandas as pd

from ..io.dataset import Dataset
from ..stats.profile import finalize_profile, kll_every_for, partial_table
from ..stats.profile_stat import ProfileStat
from ..workflow.workflow import Workflow

log = logging.getLogger(__name__)

PROFILE_FILE = "profile.json"
HTML_FILE = "index.html"  # (the page; html.check_page says when it may be written)


class Profile:
    """A dataset's profile: ``doc`` is the ``profile.json`` document (format
    ``tabprep-profile``, see ``docs/guide/data-quality.md``). ``profile["C1"]`` is a column's
    summary dict."""

    def __init__(self, doc: Dict[str, Any], source: Optional[str] = None) -> None:
        if not isinstance(doc, dict) or doc.get("format") != "tabprep-profile":
            raise ValueError(f"{source or 'this document'} is not a tabprep profile (no 'format': 'tabprep-profile')")
        if int(doc.get("version", 0)) > 1:
            raise ValueError(f"{source or 'this profile'} has version {doc.get('version')}, newer than this tabprep "
                             "reads (1); upgrade tabprep")
        self.doc = doc
        self.source = source

    @property
    def rows(self) -> int:
        return int(self.doc.get("rows", 0))

    @property
    def columns(self) -> Dict[str, Dict[str, Any]]:
        return self.doc["columns"]

    def __getitem__(self, column: str) -> Dict[str, Any]:
        try:
            return self.columns[column]
        except KeyError:
            raise KeyError(f"column {column!r} is not in the profile; its columns are {list(self.columns)}") from None

    def __repr__(self) -> str:
        return f"Profile({self.rows} rows, {len(self.columns)} columns)"

    def summary(self) -> pd.DataFrame:
        """One row per column: kind, nulls, null rate, distinct, min/mean/max, top value share."""
        rows = []
        for name, c in self.columns.items():
            rows.append({"column": name, "dtype": c["dtype"], "kind": c["kind"], "count": c["count"],
                         "null_rate": c["null_rate"], "distinct": c.get("distinct"), "min": c.get("min"),
                         "mean": c.get("mean"), "max": c.get("max"), "std": c.get("std"),
                         "top_share": c.get("top_share")})
        return pd.DataFrame(rows)

    def to_json(self) -> str:
        return json.dumps(self.doc)

    def save(self, folder: str) -> str:
        """Write ``profile.json`` and ``index.html`` into ``folder`` (created); returns the
        HTML file's path. A ``FileExistsError`` (nothing written) when ``folder`` holds an
        ``index.html`` that is not a profile's page (a drift report's, or a file tabprep did not
        write): it is never replaced."""
        from .html import check_page, profile_html

        folder = os.fspath(folder)
        html = check_page(folder, "profile")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, PROFILE_FILE), "w") as fh:
            json.dump(self.doc, fh)
        with open(html, "w", encoding="utf-8") as fh:
            fh.write(profile_html(self))
        return html

    def _repr_html_(self) -> str:
        from .html import profile_html

        return profile_html(self, fragment=True)


def profile(data: Any, columns: Optional[Sequence[str]] = None, categorical: Iterable[str] = (),
            sample_every: Optional[int] = None, vocabs: Optional[Dict[str, Any]] = None,
            kll_every: Optional[int] = None) -> Profile:
    """The profile of ``data`` (a :class:`tabprep.Dataset` or anything it accepts: parquet paths,
    pandas/cuDF/dask frames), computed in one dask pass: a partial per partition (on the workers
    with a dask.distributed client), merged in the fit's reduction tree, finalized once. A
    pyarrow ``Table`` (or ``RecordBatch``) is profiled as it is, in this process, as one
    partition (its Arrow types kept: an int column with nulls stays ints, a date a date), with
    the defaults of a frame (``sample_every`` 1, ``kll_every`` 1).

    Args:
        columns: the columns to profile (default all).
        categorical: int columns holding ids: counted (frequent values, distinct), with no
            quantiles or histogram.
        sample_every: the sketches (quantiles, frequent values, distinct count, OOV) see every
            ``k``-th row of each partition; rows, nulls, NaN/inf, min, max, mean and std see
            all. Default: ``k`` such that they see about 1M rows (1 below 2M rows of parquet;
            see ``Workflow.fit(profile=...)``); 1: every row.
        vocabs: ``{column: values}`` fitted vocabularies: the profile counts the values outside
            them (``oov``, ``oov_rate``); :func:`tabprep.quality.drift` passes a workflow's.
        kll_every: the quantile (KLL) sketches get every ``f``-th value of each sorted chunk of
            the sample, each standing for ``f`` values (unbiased; the added rank error, at most
            about ``f`` / the values of the smallest chunk, is ``quantile_thinning_error`` in
            ``profile.json``). Default: by the pass's sample size alone
            (:func:`tabprep.stats.profile.kll_every_for`: 16 at a 1M-row sample, 1 below 16,384
            rows or when the row count is unknown: a frame); 1: no thinning.

    Memory is bounded per column (sketches: KLL ~ a few KB, HLL 4 KB, 1,024 frequent-value
    counters), whatever the number of rows or distinct values.
    """
    table = arrow_table(data)
    ds = None if table is not None else data if isinstance(data, Dataset) else Dataset(data)
    names = table.column_names if table is not None else ds.schema.column_names
    where = f"the pyarrow Table ({table.num_rows:,} rows)" if table is not None else ds.describe()
    cols = list(columns) if columns is not None else list(names)
    missing = [c for c in cols if c not in names]
    if missing:
        raise KeyError(f"columns {missing} are not in {where}; its columns are {names}")
    categorical = list(categorical)
    unknown = [c for c in categorical if c not in names]
    if unknown:
        raise KeyError(f"categorical columns {unknown} are not in {where}; its columns are {names}")
    idx = {c: pd.Index(v) for c, v in (vocabs or {}).items() if c in cols}
    if table is not None:  # (in memory already: one partition, no pass to schedule)
        stat = ProfileStat(cols, 1 if sample_every is None else sample_every, idx,
                           categorical=[c for c in categorical if c in cols], kll_every=1 if kll_every is None else kll_every)
        doc = finalize_profile(partial_table(table.select(cols), stat.sample_every, idx, stat.categorical,
                                             kll_every=stat.kll_every), cols, stat.sample_every, stat.kll_every)
        return Profile(doc, where)
    if sample_every is None:
        from ..workflow.workflow import PROFILE_SAMPLE_ROWS

        sample_every = max(1, ds.num_rows // PROFILE_SAMPLE_ROWS) if ds.engine == "parquet" else 1
    if kll_every is None:  # (one factor for the pass, from its sample size: never a partition's own)
        kll_every = kll_every_for(ds.num_rows // max(1, int(sample_every))) if ds.engine == "parquet" else 1
    stat = ProfileStat(cols, sample_every, idx, categorical=[c for c in categorical if c in cols],
                       kll_every=kll_every)
    if _is_empty(ds):
        empty = ds.meta_frame(cols)
        doc = finalize_profile(partial_table(_as_arrow(empty), stat.sample_every, idx, stat.categorical), cols,
                               stat.sample_every, stat.kll_every)
        return Profile(doc, ds.describe())
    wf = Workflow(cols)
    wf.fit(ds, profile=stat)
    return Profile(wf.profile_, ds.describe())


def arrow_table(data: Any) -> Any:
    """``data`` as a pyarrow Table when it is one (or a ``RecordBatch``), else None."""
    import pyarrow as pa

    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    return data if isinstance(data, pa.Table) else None


def _is_empty(ds: Dataset) -> bool:
    if ds.engine == "parquet":
        return ds.num_rows == 0
    return False


def _as_arrow(frame: Any) -> Any:
    from .. import backend

    return backend.frame_to_arrow(frame)


def load_profile(path: str) -> Profile:
    """A profile folder (``profile.json``), a ``profile.json`` file, or a saved workflow's
    training profile (``stats/profile.json``)."""
    candidates = [path] if path.endswith(".json") else [os.path.join(path, PROFILE_FILE),
                                                       os.path.join(path, "stats", PROFILE_FILE)]
    for p in candidates:
        if os.path.isfile(p):
            with open(p) as fh:
                return Profile(json.load(fh), p)
    if os.path.isfile(os.path.join(path, "workflow.json")):
        raise FileNotFoundError(f"the saved workflow {path!r} has no training profile (stats/profile.json): fit and "
                                "save it again with this tabprep (Workflow.fit(ds, profile=True), CLI `tabprep fit --data-profile`), "
                                "or profile its training data with `tabprep profile DATA --out DIR`")
    raise FileNotFoundError(f"{path!r} holds no profile.json (a `tabprep profile` output folder) and is not a "
                            "saved workflow (workflow.json)")


def as_profile(obj: Any) -> Profile:
    """``obj`` as a Profile: a Profile, a fitted Workflow (its training profile), a profile
    document dict, or a folder / file path (:func:`load_profile`)."""
    if isinstance(obj, Profile):
        return obj
    if isinstance(obj, Workflow):
        if obj.profile_ is None:
            raise ValueError("this workflow has no training profile: fit it with profile=True (CLI: tabprep fit --data-profile)")
        return Profile(obj.profile_, "the workflow's training profile")
    if isinstance(obj, dict):
        return Profile(obj)
    if isinstance(obj, (str, os.PathLike)):
        return load_profile(os.fspath(obj))
    raise TypeError(f"expected a Profile, a fitted Workflow or a path, got {type(obj).__name__}")


def _raw_vocab_stats(wf: Workflow) -> Dict[str, Dict[str, Any]]:
    """``{raw column: its fitted vocabulary statistics}`` (``values``, ``freqs``) of the workflow's
    Categorify ops that read a raw column directly; the first op reading a column wins."""
    raw = set(wf.input_columns)
    out: Dict[str, Dict[str, Any]] = {}
    for n in wf.stat_nodes:
        stats = getattr(n.op, "stats_", None)
        if type(n.op).__name__ != "Categorify" or not stats:
            continue
        for c in n.input_columns:
            st = stats.get(c)
            if c in raw and isinstance(st, dict) and c not in out:
                out[c] = st
    return out


def vocabularies(wf: Workflow) -> Dict[str, List[Any]]:
    """``{raw column: vocabulary values}`` of the workflow's Categorify ops that read a raw column
    directly (the OOV reference of a drift check)."""
    from ..ops.categorify import shown_values

    return {c: shown_values(st) for c, st in _raw_vocab_stats(wf).items() if st.get("values") is not None}


def reference_of(obj: Any) -> "tuple[Profile, Dict[str, Any]]":
    """The reference profile and the fitted vocabularies (for OOV) of a drift reference: a saved
    workflow folder / a fitted Workflow (its training profile and Categorify vocabularies), or a
    profile (folder, file, object: vocabularies only where its frequent values are exact).

    Each vocabulary column gets ``oov_rate_expected``: the OOV share a fresh sample of the
    training distribution would show, Good-Turing's estimate of the unseen mass (values seen
    once / values): a long-tailed id column has OOV that is no drift."""
    wf: Union[Workflow, None] = obj if isinstance(obj, Workflow) else None
    if wf is None and isinstance(obj, (str, os.PathLike)) and os.path.isfile(os.path.join(os.fspath(obj), "workflow.json")):
        wf = Workflow.load(os.fspath(obj))
    if wf is not None:
        if wf.profile_ is None:  # raises the helpful error (the folder's or the object's)
            as_profile(obj) if isinstance(obj, Workflow) else load_profile(os.fspath(obj))
        prof = as_profile(wf)
        prof = Profile(json.loads(json.dumps(prof.doc)), prof.source)  # (a copy: the expected OOV goes in)
        for c, counts in _vocab_counts(wf).items():
            if c in prof.columns and counts.size:
                prof.columns[c]["oov_rate_expected"] = float((counts == 1).sum() / counts.sum())
        return prof, vocabularies(wf)
    prof = Profile(json.loads(json.dumps(as_profile(obj).doc)), as_profile(obj).source)
    vocabs = {}
    for c, s in prof.columns.items():
        if complete_values(s) and s.get("kind") in ("category", "string", "bool") and s.get("frequent_n"):
            vocabs[c] = [v for v, _ in s["frequent"]]
            s["oov_rate_expected"] = sum(1 for _, n in s["frequent"] if n == 1) / s["frequent_n"]
    return prof, vocabs


def complete_values(col: Dict[str, Any]) -> bool:
    """Whether a profile column's frequent-value list holds every distinct value with exact counts
    (its values are then a vocabulary: OOV shares can be computed from it)."""
    return bool(col.get("frequent_exact")) and len(col.get("frequent", [])) == col.get("distinct")


def _vocab_counts(wf: Workflow) -> Dict[str, Any]:
    """``{raw column: value counts of its vocabulary}`` of the Categorify ops on raw columns."""
    import numpy as np

    return {c: np.asarray(st["freqs"], dtype=np.int64) for c, st in _raw_vocab_stats(wf).items()
            if st.get("freqs") is not None}
