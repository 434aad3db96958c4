"""The dask tasks of a workflow's fit and transform (module-level functions, so they pickle for
dask.distributed: the graph names them by import path)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional

import pyarrow as pa

from .. import backend
from .._util import is_frame
from ..io.dataset import nullable_frame, timed_read
from ..ops.base import _OUT_OF_FOLD
from .fusion import fit_table, transform_table

if TYPE_CHECKING:  # pragma: no cover
    from .workflow import Workflow


def _fit_partition(wf: "Workflow", ids: List[str], df: Any, nullable: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """The partials of the stat ops ``ids`` on one partition: ``df``, or a no-argument reader of it
    (``Dataset._piece_readers``: the read then runs in this task, on this worker). A partition read
    as an Arrow table (CPU parquet) is fitted on host columns when :func:`fusion.fit_table` can, else
    converted to the pandas frame ``to_ddf`` gives (``nullable``: its nullable int dtypes)."""
    backend.tune_malloc_in_worker()  # dask's nanny leaves glibc mmapping every array > 128 KiB
    if callable(df) and not is_frame(df):
        df = timed_read(df, wf)
    by_id = {wf.node_id(n): n for n in wf.nodes}
    targets = [by_id[i] for i in ids]
    needed = [p for t in targets for p in t.parents]
    token = _OUT_OF_FOLD.set(True)  # ops fitted downstream of a target encoding see training values
    try:
        if isinstance(df, pa.Table):
            out = fit_table(wf, ids, df)
            if out is not None:
                return out
            df = nullable_frame(df, nullable or {})
        cache = wf._execute(df, needed)
    finally:
        _OUT_OF_FOLD.reset(token)
    out = {}
    for nid, n in zip(ids, targets):
        inp = wf._op_input(n, [cache[id(p)] for p in n.parents], df)
        start = wf.op_clock() if wf.op_timer is not None else 0.0
        out[nid] = n.op.fit_partial(n.input_columns, inp)
        if wf.op_timer is not None:
            wf.op_timer(nid, n.op.label, "fit", wf.op_clock() - start, len(inp))
    # no release_memory per partition: the next partition reuses the freed pages (handing them back
    # and faulting them in again cost ~10% of the CPU job); fit() releases once at the end of the pass
    del cache, df
    return out


def _transform_partition(df: Any, wf: "Workflow", out_of_fold: bool, cast: bool = False) -> Any:
    backend.tune_malloc_in_worker()
    return wf.transform_frame(df, out_of_fold=out_of_fold, cast=cast)


def _transform_part(part: Any, wf: "Workflow", out_of_fold: bool, cast: bool, nullable: Dict[str, str]) -> Any:
    """:func:`_transform_partition` of a partition read as an Arrow table (``Dataset._table_tasks``):
    an Arrow table when :func:`~tabprep.workflow.fusion.transform_table` computes it, else the pandas
    frame of the pandas path (the writer takes either)."""
    backend.tune_malloc_in_worker()
    if not cast and not is_frame(part):
        token = _OUT_OF_FOLD.set(bool(out_of_fold))  # as transform_frame sets it for the ops
        try:
            out = transform_table(wf, part)
        finally:
            _OUT_OF_FOLD.reset(token)
        if out is not None:
            return out
    return wf.transform_frame(nullable_frame(part, nullable), out_of_fold=out_of_fold, cast=cast)


def _combine_partials(wf: "Workflow", ids: List[str], partials: List[Dict[str, Any]]) -> Dict[str, Any]:
    if len(partials) == 1:
        return partials[0]
    by_id = {wf.node_id(n): n for n in wf.nodes}
    return {nid: by_id[nid].op.fit_combine([p[nid] for p in partials]) for nid in ids}
