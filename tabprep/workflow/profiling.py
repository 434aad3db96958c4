"""The training data's profile in a fit pass (``Workflow.fit(profile=...)``): which columns,
which sampling, which are ids. The profile itself is :mod:`tabprep.stats.profile`."""
from __future__ import annotations

import logging
from typing import Any, List

from ..stats.profile import ProfileStat, StatUnit

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
    have = set(ds.schema.column_names)
    cols = [c for c in list(columns) + [c for c in wf.input_columns if c not in columns] if c in have]
    if profile is True:
        try:
            import datasketches  # noqa: F401
        except ImportError:  # a dependency; a broken install still fits, without the profile
            log.warning("Workflow.fit records no training profile: the datasketches package is missing "
                        "(pip install datasketches); pass profile=False to silence this")
            return None
        rows = ds.num_rows if ds.engine == "parquet" else 0  # (a frame's length costs a pass)
        every = max(1, rows // FIT_PROFILE_SAMPLE_ROWS)
    else:
        every = int(profile)
    return StatUnit(ProfileStat(cols, every, categorical=id_columns(wf)), cols)


def id_columns(wf: Any) -> List[str]:
    """Raw columns that an op reads as ids (Categorify, hashing, encodings): their profile
    counts values and skips quantiles, whose order means nothing for ids."""
    raw = set(wf.input_columns)
    out: List[str] = []
    for n in wf.nodes:
        if n.kind == "op" and getattr(n.op, "reads_ids", type(n.op).__name__ in _ID_OPS):
            out += [c for c in n.input_columns if c in raw and c not in out]
    return out
