"""The training data's profile in a fit pass (``Workflow.fit(profile=...)``): which columns,
which sampling, which are ids. The profile itself is :mod:`tabprep.stats.profile`."""
from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional, Sequence

from .._util import whole_number
from ..stats.profile import kll_every_for
from ..stats.profile_stat import ProfileStat

log = logging.getLogger(__name__)

#: the id of the data profile's work item in a fit pass
PROFILE_UNIT = "profile"
#: rows the sketches of ``tabprep.quality.profile`` see by default (about)
PROFILE_SAMPLE_ROWS = 1_000_000
#: rows the sketches of a fit's training profile see (about; see ``Workflow.fit(profile=...)``):
#: fewer, so that the profile stays a small share of the fit
FIT_PROFILE_SAMPLE_ROWS = 50_000

#: ops that read their input columns as ids (an op may say so with a ``reads_ids`` attribute)
_ID_OPS = frozenset({"Categorify", "HashBucket", "HashedCross", "TargetEncoding", "JoinGroupby", "DropLowCardinality",
                     "ValueCount"})


def profile_unit(wf: Any, ds: Any, columns: List[str], profile: Any) -> Any:
    """The data profile's work item of a fit (None with ``profile=False``): the input columns
    the workflow and its fit pass read that ``ds`` has."""
    if profile is False or profile is None:
        return None
    if isinstance(profile, ProfileStat):  # tabprep.quality.profile's own (columns, vocabularies...)
        return StatUnit(profile, profile.columns)
    if profile is not True and whole_number(profile, 1) is None:   # (2.5 sampled every 2nd row, 0 every row)
        raise ValueError(f"Workflow.fit: profile must be True, False or an int >= 1 (the sketches see every k-th "
                         f"row), got {profile!r}")
    have = set(ds.schema.column_names)
    cols = [c for c in list(columns) + [c for c in wf.input_columns if c not in columns] if c in have]
    if profile is True:
        try:
            import datasketches  # noqa: F401
        except ImportError:  # a dependency; a broken install still fits, without the profile
            log.warning("Workflow.fit records no training profile: the datasketches package is missing "
                        "(pip install datasketches); pass profile=False to silence this")
            return None
    rows = ds.num_rows if ds.engine == "parquet" else 0  # (a frame's length costs a pass: unknown, no thinning)
    every = max(1, rows // FIT_PROFILE_SAMPLE_ROWS) if profile is True else int(profile)
    # the KLL thinning factor from the pass's sample size alone (4 at the default 50k-row sample),
    # the rule tp.profile follows: the same profile for the same data and sampling
    kll_every = kll_every_for(rows // max(1, every))
    return StatUnit(ProfileStat(cols, every, categorical=id_columns(wf), counted=list(counted_columns(wf)),
                                kll_every=kll_every), cols)


def counted_columns(wf: Any) -> Dict[str, Any]:
    """``{raw column: Categorify op}`` for the raw columns whose exact value counts (nulls aside)
    a Categorify of ``wf`` computes in its fit and keeps whole as its vocabulary: the column
    read as it is (no op before it), its own vocabulary (not a group's), no ``freq_threshold``,
    ``max_size`` or given ``vocabs``, and Categorify's own fit methods (not a subclass's). The
    training profile takes those columns' frequent values and distinct count from the fitted
    vocabulary (exact) instead of its sketches (:func:`complete_profile`)."""
    from ..ops.categorify import Categorify

    raw = set(wf.input_columns)
    out: Dict[str, Any] = {}
    for n in wf.nodes:
        op = n.op if n.kind == "op" else None
        if not isinstance(op, Categorify) or n.deps or any(
                getattr(type(op), m) is not getattr(Categorify, m)
                for m in ("fit_partial", "fit_partial_columns", "fit_combine", "fit_finalize", "_vocab_keys")):
            continue
        for key, cols in op._vocab_keys(list(n.input_columns)).items():
            if (cols == [key] and key in raw and key not in out and op._param(op.freq_threshold, key) <= 1
                    and not op._param(op.max_size, key) and not (op.vocabs and key in op.vocabs)
                    and _reads_raw(n, key)):
                out[key] = op
    return out


def _reads_raw(node: Any, column: str) -> bool:
    """``node`` receives the raw input column ``column`` unchanged (through selections, merges
    and drops only)."""
    parents = [p for p in node.parents if column in p.output_columns]
    if len(parents) != 1:
        return False
    p = parents[0]
    if p.kind == "select":
        return column in p.columns
    return p.kind in ("concat", "drop") and _reads_raw(p, column)


def complete_profile(wf: Any, doc: Optional[Dict[str, Any]]) -> None:
    """Add to the training profile ``doc`` (in place) the frequent values and distinct count of
    its counted columns (``ColumnPartial.counted``) from the vocabularies ``wf``'s fitted
    Categorify ops learned: the exact value counts of every row."""
    from ..ops.categorify import _host, shown_values
    from ..stats.profile_json import counted_fields

    if not doc:
        return
    ops = counted_columns(wf)
    for name, entry in doc["columns"].items():
        if entry.get("kind") != "category" or "distinct" in entry:
            continue  # (profiled by its sketches)
        if name not in ops:
            raise RuntimeError(f"the training profile of column {name!r} waits for a Categorify's counts that this "
                               "workflow does not compute; fit with profile=False, or use tp.profile")
        st = ops[name].stats_[name]
        values, freqs = shown_values(st), _host(st["freqs"])
        nonnull = entry["count"] - entry["nulls"]
        if int(st.get("nulls", entry["nulls"])) != entry["nulls"] or int(freqs.sum()) != nonnull:
            raise RuntimeError(f"the training profile of column {name!r}: Categorify counted {int(freqs.sum())} values "
                               f"and {st.get('nulls')} nulls, the profile {nonnull} and {entry['nulls']} in the "
                               "same rows; fit with profile=False, or use tp.profile (and report this)")
        entry.update(counted_fields(values, freqs))


def id_columns(wf: Any) -> List[str]:
    """Raw columns that an op reads as ids (Categorify, hashing, encodings): their profile
    counts values and skips quantiles, whose order means nothing for ids."""
    raw = set(wf.input_columns)
    out: List[str] = []
    for n in wf.nodes:
        if n.kind == "op" and getattr(n.op, "reads_ids", type(n.op).__name__ in _ID_OPS):
            out += [c for c in n.input_columns if c in raw and c not in out]
    return out


class StatUnit:
    """A fit-pass work item that is not a graph node: ``op`` (the statistic) over the raw input
    columns ``input_columns`` (what ``reduction.fit_graph`` and the tasks read of a node)."""

    kind = "stat"

    def __init__(self, op: Any, input_columns: Sequence[str]) -> None:
        self.op = op
        self.input_columns = list(input_columns)
        self.parents: List[Any] = []
