"""The task graph of one fit pass: a partial per partition, cut into the final tasks' groups of
ops, a combine tree per group on each worker, then the last step (merge + finalize) on the
workers, one task per group; and the adoption of what those tasks return into the workflow's own
ops. Follows dask's reductions: partial -> combine -> finalize, with ``split_out``.
"""
from __future__ import annotations

import contextlib
import os
from typing import Any, Dict, List, Optional, Tuple

import dask
from dask.base import tokenize
from dask.delayed import Delayed
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

from .._warn import warn_difference
from ..ops.base import StatOperator
from .fusion import _declares
from .tasks import (_combine_group, _combine_pieces, _cut_shards, _finalize_stats, _fit_partition, _reduce_shard,
                    _split_partials, merge_keyed, unpack_state)

#: how many pieces one combine task merges (the fan-in of the reduction tree), and at most how
#: many final tasks (groups of ops) the last step runs
SPLIT_EVERY = 8


def splits_by_key(op: Any) -> bool:
    """``op``'s ``keyed_statistics`` claim, honoured only when a class at least as derived as the
    ones defining its ``fit_partial``, ``fit_combine`` and ``fit_finalize`` makes it: a user's
    subclass overriding one of them (say, a finalize that looks at all keys at once) must not
    inherit a stale claim and be finalized in pieces."""
    return bool(getattr(op, "keyed_statistics", False)) and all(
        _declares(type(op), "keyed_statistics", m, StatOperator) for m in ("fit_partial", "fit_combine", "fit_finalize"))


def fit_graph(wf: Any, nodes: Dict[str, Any], parts: List[Any], nullable: Optional[Dict[str, str]]) -> Tuple[List[Any], bool]:
    """The final tasks of a fit pass of the stat nodes ``nodes`` (by node id) over ``parts``
    (partition readers or delayed partitions), and whether their results are packed (``wf``, the
    workflow's graph handle, is a distributed future: the results travel to the client).

    With a dask.distributed client, partition ``i`` is fitted on worker ``i % W`` (a loose
    restriction: see :func:`_placed`), and each worker merges the pieces it computed before any
    cross to another worker: the final task of a group receives at most ``max(1, SPLIT_EVERY //
    W)`` merged pieces per worker. Before, a combine task of 8 partials ran on one worker and
    fetched the other worker's partials one after the other. The merged statistics must not
    depend on how the partials were grouped (integer counts, extrema, exact moments); float sums
    (TargetEncoding of a float target, JoinGroupby) may differ in the last bits with ``W``.

    The last step runs as work items, where the partials are: merge, then finalize (the
    vocabulary's sort etc.), in parallel over the workers' threads, at most :data:`SPLIT_EVERY`
    tasks. An op with keyed statistics (``keyed_statistics``: Categorify, Normalize) is split by
    key into up to :data:`SPLIT_EVERY` items, as dask's ``split_out``: one Categorify over the 26
    Criteo columns merged and finalized in one 0.4-0.6 s task on the CPU, while the other worker
    waited. The client receives finished statistics (host arrays, packed: see
    :func:`tasks.pack_state`), never the merged counts (device arrays on GPU workers). Measured on
    an H100, 200M Criteo rows, 1 worker: from the fit's last task to the end of ``fit`` 1.37-1.66 s
    when the client received the merged counts and finalized them (0.15-0.2 s of that); 1.15-1.31 s
    with the finalize on the worker but the fitted op objects sent back whole; 0.29-0.32 s with
    their state packed.

    The partitioned finalize (``TABPREP_VOCAB_SHARDS``, off by default: :func:`vocab_shards`), as
    dask's ``split_out`` by hash within a vocabulary: each worker's merged pieces of a final task
    are cut (``_cut_shards``, on that worker) into S parts by ``murmur3(value) % S``; part ``j`` of
    every worker goes to one task (``_reduce_shard``, placed round-robin), which merges it and
    keeps what can reach the vocabulary (``Categorify.fit_reduce``: ``freq_threshold``, the first
    ``max_size``); the final task merges S reduced parts of disjoint values, so about one copy of
    the vocabulary reaches it instead of W copies of the counts. The statistics are the same
    (tests/test_vocab_shards.py). Measured on the 2-core CPU LocalCluster it lengthened the last
    step (more tasks, a hash and a second exchange; docs/benchmarks.md)."""
    ids = list(nodes)
    workers = worker_addresses(wf)
    width = max(1, len(workers))
    units = []
    for nid, n in nodes.items():
        shards = max(1, min(SPLIT_EVERY, len(n.input_columns))) if splits_by_key(n.op) else 1
        units += [(nid, j, shards) for j in range(shards)]
    groups = [units[i::SPLIT_EVERY] for i in range(min(SPLIT_EVERY, len(units)))]
    partial_fn = dask.delayed(_fit_partition, pure=True)
    split_fn = dask.delayed(_split_partials, pure=True, nout=len(groups))
    group_fn = dask.delayed(_combine_group, pure=True)
    merge_fn = dask.delayed(_combine_pieces, pure=True)
    # Partition i is fitted on worker i % width, and each worker merges its own partials, one
    # tree per group (so a worker's threads merge groups in parallel), down to its share of that
    # group's final task: no partial crosses to another worker unmerged. A worker with no more
    # partials than that share cuts them into the groups (split) for the final tasks to fetch.
    keep = max(1, SPLIT_EVERY // width)
    parts = _pinned(parts, workers)  # partition i with its partial, on worker i % width
    # each final task's pieces, per worker: local[k][w]
    local: List[List[List[Any]]] = [[[] for _ in range(width)] for _ in groups]
    for w in range(width):
        with _placed(workers, w):
            partials = [partial_fn(wf, ids, p, nullable) for p in parts[w::width]]
            if len(partials) <= keep:
                split = [split_fn(p, groups) for p in partials]
                for k in range(len(groups)):
                    local[k][w] += [pieces[k] for pieces in split]
                continue
            for k, g in enumerate(groups):
                level = [group_fn(wf, g, *partials[i:i + SPLIT_EVERY]) for i in range(0, len(partials), SPLIT_EVERY)]
                while len(level) > keep:
                    level = [merge_fn(wf, g, *level[i:i + SPLIT_EVERY]) for i in range(0, len(level), SPLIT_EVERY)]
                local[k][w] += level
    shards = vocab_shards(width)
    inputs: List[List[Any]] = []  # each final task's pieces, from every worker
    turn = 0  # the partitioned finalize's part tasks, placed round-robin over the workers
    for k, g in enumerate(groups):
        sharded = [u for u in g if splits_by_hash(nodes[u[0]].op)] if shards > 1 else []
        if not sharded:
            inputs.append([piece for pieces in local[k] for piece in pieces])
            continue
        cut_fn = dask.delayed(_cut_shards, pure=True, nout=shards + 1)
        cuts = []
        for w in range(width):
            if local[k][w]:
                with _placed(workers, w):  # (its outputs' getitem tasks too: they run where the cut is)
                    cut = cut_fn(wf, g, sharded, shards, *local[k][w])
                    cuts.append([cut[i] for i in range(shards + 1)])
        reduce_fn = dask.delayed(_reduce_shard, pure=True)
        reduced = []
        for j in range(shards):
            with _placed(workers, turn):
                reduced.append(reduce_fn(wf, sharded, *[c[1 + j] for c in cuts]))
            turn += 1
        rest = [c[0] for c in cuts] if len(sharded) < len(g) else []
        inputs.append(rest + reduced)
    pack = not isinstance(wf, Delayed)
    final_fn = dask.delayed(_finalize_stats, pure=True)
    finals = []
    for k, g in enumerate(groups):
        with _placed(workers, k):
            finals.append(final_fn(wf, g, pack, *inputs[k]))
    return finals, pack


#: the environment variable that turns the partitioned finalize on: "auto" (one part per worker)
#: or a number of parts; unset, "" or "0": off (see :func:`vocab_shards`)
SHARDS_ENV = "TABPREP_VOCAB_SHARDS"


def vocab_shards(width: int) -> int:
    """How many parts the partitioned finalize cuts each final task's vocabularies into on ``width``
    workers (0: off, a vocabulary's whole counts go to its final task): ``TABPREP_VOCAB_SHARDS``
    ``auto`` gives one part per worker, a number that many parts; none with fewer than two workers
    (nothing would cross). Off by default: on a CPU LocalCluster it made the fit's last step
    slower (docs/benchmarks.md, "Scaling out"). Read when the fit's graph is built, in the client."""
    raw = os.environ.get(SHARDS_ENV, "").strip().lower()
    if width < 2 or raw in ("", "0", "1"):
        return 0
    if raw == "auto":
        return width
    try:
        n = int(raw)
    except ValueError:
        n = -1
    if not 2 <= n <= 255:
        raise ValueError(f"{SHARDS_ENV}={raw!r}: give 'auto' (one part per worker), a number of parts "
                         f"from 2 to 255, or 0 (off)")
    return n


def splits_by_hash(op: Any) -> bool:
    """``op``'s statistics can be finalized in parts cut by a hash of the value (Categorify):
    a keyed op (:func:`splits_by_key`) whose ``fit_split`` and ``fit_reduce`` come from a class
    at least as derived as its ``fit_partial``, ``fit_combine`` and ``fit_finalize`` (a user's
    subclass overriding one of these is finalized whole)."""
    cls = type(op)
    if not splits_by_key(op) or not all(callable(getattr(cls, m, None)) for m in ("fit_split", "fit_reduce")):
        return False
    return all(_declares(cls, m, ref, StatOperator) for m in ("fit_split", "fit_reduce")
               for ref in ("fit_partial", "fit_combine", "fit_finalize"))


def worker_addresses(wf: Any) -> List[str]:
    """The addresses of the dask.distributed workers the fit pass will run on (sorted; those of
    the client of ``wf``, a scattered future), none with a local scheduler."""
    if isinstance(wf, Delayed):  # (a Delayed's getattr would make a delayed attribute, not None)
        return []
    client = getattr(wf, "client", None)
    return sorted(client.nthreads()) if client is not None else []


def _placed(workers: List[str], i: int) -> Any:
    """The tasks made in this context prefer worker ``i`` (modulo their number): a loose restriction
    (``allow_other_workers``), so the scheduler runs them elsewhere if that worker is gone (a worker
    lost mid-fit, a cluster whose workers were replaced) rather than wait for it. Nothing with
    fewer than two workers."""
    if len(workers) < 2:
        return contextlib.nullcontext()
    return dask.annotate(**_restriction(workers, i))


def _restriction(workers: List[str], i: int) -> Dict[str, Any]:
    """The annotations of a task that prefers worker ``i`` (modulo their number), loosely."""
    return {"workers": [workers[i % len(workers)]], "allow_other_workers": True}


def _pinned(parts: List[Any], workers: List[str]) -> List[Any]:
    """``parts`` with each delayed partition (of a dask frame: csv input, an in-memory frame)
    restricted, loosely, to worker ``i % W`` with the tasks it depends on, as its partial is
    (:func:`_placed`): the partition is computed where it is fitted instead of moving between
    workers. ``dask.annotate`` marks only the tasks made in its context, not the partitions', which
    were made before (the fit's combine tasks used to take their partials as a list, whose
    traversal by dask.delayed happened to re-make them there). A dask frame's delayed partitions
    share one graph of all partitions: it is read once and each partition keeps only its own
    tasks (shared upstream tasks, e.g. of a repartition, land in several partitions' layers and
    take one of their workers). Partition readers (parquet) are returned as they are: they run
    inside the partial's task."""
    if len(workers) < 2 or not any(isinstance(p, Delayed) for p in parts):
        return parts
    from dask.optimization import cull

    graphs: Dict[int, Tuple[Any, Dict[Any, Any]]] = {}  # id(graph) -> (graph, its tasks)
    out = []
    for i, part in enumerate(parts):
        if not isinstance(part, Delayed):
            out.append(part)
            continue
        graph = part.__dask_graph__()
        if id(graph) not in graphs:
            graphs[id(graph)] = (graph, dict(graph))  # the graph kept: its id stays its own
        own, _ = cull(graphs[id(graph)][1], [part.key])  # the partition's task and what it depends on
        layer = MaterializedLayer(own, annotations=_restriction(workers, i))
        name = f"tabprep-placed-{tokenize(part.key)}"
        out.append(Delayed(part.key, HighLevelGraph({name: layer}, {name: set()}), layer=name))
    return out


def adopt_fitted(nodes: Dict[str, Any], fitted: List[Dict[Any, Any]], packed: bool) -> None:
    """Apply the final tasks' results to the ops of ``nodes`` (by node id, as given to
    :func:`fit_graph`): each op stays the object the user holds and takes what its fitted copy's
    ``fit_finalize`` set (learned state, caches) or deleted; its parameters stay the user's objects. The shards of a keyed op give one ``stats_``,
    in the key order of the unsplit fit; its other attributes come from shard 0."""
    by_node: Dict[str, List[Tuple[int, int, Dict[str, Any], List[str]]]] = {}
    for group in fitted:
        for (nid, shard, shards), (state, removed) in group.items():
            by_node.setdefault(nid, []).append((shard, shards, unpack_state(state) if packed else state, removed))
    for nid, pieces in by_node.items():
        pieces.sort(key=lambda p: p[0])
        state, removed = dict(pieces[0][2]), pieces[0][3]
        if len(pieces) > 1:
            state["stats_"] = merge_keyed([(shard, shards, st.get("stats_")) for shard, shards, st, _ in pieces])
        attrs = vars(nodes[nid].op)
        attrs.update(state)
        for name in removed:
            attrs.pop(name, None)
        fit_warnings = getattr(nodes[nid].op, "fit_warnings", None)
        for message in (fit_warnings() if callable(fit_warnings) else []):
            warn_difference(message, stacklevel=2)
