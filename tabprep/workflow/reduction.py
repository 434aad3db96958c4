"""The task graph of one fit pass: a partial per partition, a combine tree, then the last step
(merge + finalize) on the workers, one task per group of ops; and the adoption of what those
tasks return into the workflow's own ops. Follows dask's reductions: partial -> combine -> finalize.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import dask
from dask.delayed import Delayed

from .tasks import _combine_partials, _finalize_stats, _fit_partition, _split_partials, unpack_state

#: how many partials one combine task merges (the fan-in of the reduction tree), and at most how
#: many final tasks (groups of ops) the last step runs
SPLIT_EVERY = 8


def fit_graph(wf: Any, ids: List[str], parts: List[Any], nullable: Optional[Dict[str, str]]) -> Tuple[List[Any], bool]:
    """The final tasks of a fit pass of the stat ops ``ids`` over ``parts`` (partition readers or
    delayed partitions), and whether their results are packed (``wf``, the workflow's graph
    handle, is a distributed future: the results travel to the client).

    The last step runs as one task per group of ops, where the partials are: merge, then finalize
    (the vocabulary's sort etc.), in parallel over the workers' threads. The client receives
    finished statistics (host arrays, packed: see :func:`tasks.pack_state`), never the merged
    counts (device arrays on GPU workers). Measured on an H100, 200M Criteo rows, 1 worker: from
    the fit's last task to the end of ``fit`` 1.37-1.66 s when the client received the merged
    counts and finalized them (0.15-0.2 s of that); 1.15-1.31 s with the finalize on the worker
    but the fitted op objects sent back whole; 0.29-0.32 s with their state packed."""
    partial_fn = dask.delayed(_fit_partition, pure=True)
    partials = [partial_fn(wf, ids, p, nullable) for p in parts]
    combine_fn = dask.delayed(_combine_partials, pure=True)
    while len(partials) > SPLIT_EVERY:
        partials = [combine_fn(wf, ids, partials[i:i + SPLIT_EVERY]) for i in range(0, len(partials), SPLIT_EVERY)]
    groups = [ids[i::SPLIT_EVERY] for i in range(min(SPLIT_EVERY, len(ids)))]
    if len(groups) > 1:  # each final task fetches only its own ops' partials
        split_fn = dask.delayed(_split_partials, pure=True, nout=len(groups))
        pieces = [split_fn(p, groups) for p in partials]
        per_group = [[pc[g] for pc in pieces] for g in range(len(groups))]
    else:
        per_group = [partials]
    pack = not isinstance(wf, Delayed)
    final_fn = dask.delayed(_finalize_stats, pure=True)
    return [final_fn(wf, g, per_group[k], pack) for k, g in enumerate(groups)], pack


def adopt_fitted(ops_by_id: Dict[str, Any], fitted: List[Dict[str, Any]], packed: bool) -> None:
    """Apply the final tasks' results to the workflow's ops: each op stays the object the user
    holds and takes what its fitted copy's ``fit_finalize`` set (learned state, caches) or
    deleted; its parameters stay the user's objects."""
    for group in fitted:
        for nid, (state, removed) in group.items():
            attrs = vars(ops_by_id[nid])
            attrs.update(unpack_state(state) if packed else state)
            for name in removed:
                attrs.pop(name, None)
