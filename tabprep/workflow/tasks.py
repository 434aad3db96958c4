"""The dask tasks of a workflow's fit and transform (module-level functions, so they pickle for
dask.distributed: the graph names them by import path)."""
from __future__ import annotations

import copy
import io
import pickle
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

import cloudpickle
import numpy as np
import pyarrow as pa

from .. import backend
from .._util import is_frame
from .._warn import task_warnings
from ..io.dataset import nullable_frame, piece_columns, source_noted, timed_columns, timed_read
from ..ops.base import _OUT_OF_FOLD, Operator
from ..schema import unit_drift
from ..stats.vocab import narrow_ints, widen_ints
from . import sizes  # noqa: F401 - dask's sizes of the statistics partials, on the workers that make them
from .fusion import fit_table, transform_table

if TYPE_CHECKING:  # pragma: no cover
    from .workflow import Workflow


def _fit_partition(wf: "Workflow", ids: List[str], df: Any, nullable: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """The partials of the stat ops ``ids`` on one partition: ``df``, or a no-argument reader of it
    (``Dataset._piece_readers``: the read then runs in this task, on this worker). A partition read
    as an Arrow table (CPU parquet) is fitted on host columns when :func:`fusion.fit_table` can, else
    converted to the pandas frame ``to_ddf`` gives (``nullable``: its nullable int dtypes)."""
    backend.tune_malloc_in_worker()  # dask's nanny leaves glibc mmapping every array > 128 KiB
    with task_warnings(getattr(wf, "_warn_job", None)):  # a worker's warnings reach the client
        if callable(df) and not is_frame(df):
            with source_noted(df):  # which file the failing rows are in
                streamed = _fit_streamed(wf, ids, df)
                if streamed is not None:
                    return streamed
                return _fit_frame(wf, ids, timed_read(df, wf), nullable)
        return _fit_frame(wf, ids, df, nullable)


def _fit_streamed(wf: "Workflow", ids: List[str], read: Any) -> Optional[Dict[str, Any]]:
    """The partials of ``ids`` when each is a statistic that takes a partition column by column
    (``fit_column``: the data profile of :func:`tabprep.profile`, which no op fits beside) and
    ``read`` can give its columns so (:func:`~tabprep.io.dataset.piece_columns`: one local
    parquet piece on the CPU): each column is read, given to the statistics, and dropped before
    the next is read. The same partials as :func:`_fit_frame` of the whole table; None
    otherwise."""
    extra = getattr(wf, "_extra_units", None) or {}
    if not ids or any(i not in extra or not hasattr(extra[i].op, "fit_column") for i in ids):
        return None
    columns = piece_columns(read)
    if columns is None:
        return None
    units = [extra[i] for i in ids]
    names = list(dict.fromkeys(c for u in units for c in u.input_columns))
    done: Dict[str, Dict[str, Any]] = {i: {} for i in ids}
    for name, col in timed_columns(columns, names, wf):
        for i, u in zip(ids, units):
            if name in u.input_columns:
                done[i][name] = u.op.fit_column(name, col)
        del col  # (one column held at a time)
    return {i: {c: done[i][c] for c in u.input_columns} for i, u in zip(ids, units)}


def _fit_frame(wf: "Workflow", ids: List[str], df: Any, nullable: Optional[Dict[str, str]],
               on_raw: Any = None) -> Dict[str, Any]:
    """:func:`_fit_partition` of a partition that has been read (``on_raw``: see ``fit_table``)."""
    extra = getattr(wf, "_extra_units", None) or {}
    if any(i in extra for i in ids):  # statistics of the raw partition beside the ops (the data profile)
        mine = [i for i in ids if i in extra]
        done: Dict[str, Dict[str, Any]] = {i: {} for i in mine}
        # a unit that can take columns as the fit reads them into host columns (the profile: its
        # values are then in the cache) gets them there; it computes the others from ``df`` after
        hooks = [extra[i].op.column_hook(done[i]) for i in mine if hasattr(extra[i].op, "column_hook")]
        hook = None
        if hooks and isinstance(df, pa.Table):
            def hook(name: str, arr: Any, host: Any) -> None:
                for h in hooks:
                    h(name, arr, host)
        rest = [i for i in ids if i not in extra]
        out = _fit_frame(wf, rest, df, nullable, hook) if rest else {}
        for i in mine:
            if done[i]:
                out[i] = extra[i].op.fit_partial(extra[i].input_columns, df, done=done[i])
            else:
                out[i] = extra[i].op.fit_partial(extra[i].input_columns, df)
        return out
    by_id = wf.nodes_by_id()
    targets = [by_id[i] for i in ids]
    needed = [p for t in targets for p in t.upstream]
    token = _OUT_OF_FOLD.set(True)  # ops fitted downstream of a target encoding see training values
    try:
        if isinstance(df, pa.Table):
            out = fit_table(wf, ids, df, on_raw)
            if out is not None:
                return out
            df = nullable_frame(df, nullable or {})
        else:  # a user's frame (Arrow tables hold strings in their string columns)
            check_objects(wf, df, "the data")
        df = fitted_units(wf, df)  # files in other datetime units: the bound unit
        cache = wf._execute(df, needed)
    finally:
        _OUT_OF_FOLD.reset(token)
    out = {}
    for nid, n in zip(ids, targets):
        inp = wf._op_input(n, [cache[id(p)] for p in n.parents], df, [cache[id(d)] for d in n.deps])
        if getattr(n.op, "supports_nested", False) == "leaves":   # statistics over every leaf once
            inp = backend.flatten_nested(inp, n.input_columns)
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
    with task_warnings(getattr(wf, "_warn_job", None)):  # a worker's warnings reach the client
        check_objects(wf, df, "the data")
        return wf.transform_frame(df, out_of_fold=out_of_fold, cast=cast)


def _transform_part(part: Any, wf: "Workflow", out_of_fold: bool, cast: bool, nullable: Dict[str, str]) -> Any:
    """:func:`_transform_partition` of a partition read as an Arrow table (``Dataset._table_tasks``):
    an Arrow table when :func:`~tabprep.workflow.fusion.transform_table` computes it, else the pandas
    frame of the pandas path (the writer takes either)."""
    backend.tune_malloc_in_worker()
    with task_warnings(getattr(wf, "_warn_job", None)):  # a worker's warnings reach the client
        if not cast and not is_frame(part):
            token = _OUT_OF_FOLD.set(bool(out_of_fold))  # as transform_frame sets it for the ops
            try:
                out = transform_table(wf, part)
            finally:
                _OUT_OF_FOLD.reset(token)
            if out is not None:
                return out
        return wf.transform_frame(nullable_frame(part, nullable), out_of_fold=out_of_fold, cast=cast)


#: one work item of a fit pass's last step: ``(node id, shard, shards)``. An op with keyed
#: statistics (``StatOperator.keyed_statistics``) is split into ``shards`` items, shard ``j`` holding
#: keys ``j, j + shards, ...`` of its partial; other ops are one item ``(node id, 0, 1)``.
Unit = Tuple[str, int, int]


def key_shard(stats: Dict[Any, Any], shard: int, shards: int) -> Dict[Any, Any]:
    """Shard ``shard`` of ``shards`` of a keyed op's dict (a partial, by key): its keys ``shard,
    shard + shards, ...`` in order (:func:`merge_keyed` puts the shards back in that order)."""
    return {k: stats[k] for k in list(stats)[shard::shards]}


def _split_partials(partial: Dict[str, Any], groups: List[List[Unit]]) -> Tuple[Dict[Unit, Any], ...]:
    """One partial (all ops of a level) cut into the work items of each final task, so that a
    final task fetches from other workers only its own items' partials."""
    return tuple(_group_piece(partial, g) for g in groups)


def _group_piece(partial: Dict[str, Any], units: List[Unit]) -> Dict[Unit, Any]:
    """The work items ``units`` of one partial (all ops of a level)."""
    return {(nid, shard, shards): partial[nid] if shards == 1 else key_shard(partial[nid], shard, shards)
            for nid, shard, shards in units}


def _combine_group(wf: "Workflow", units: List[Unit], *partials: Dict[str, Any]) -> Dict[Unit, Any]:
    """The work items ``units`` of whole partials (computed on this worker), merged into one piece:
    the first level of a group's tree, which reads its partials where they are instead of
    waiting for a split of each (on a dask.distributed cluster, every split output is a task:
    8 per partition)."""
    return _combine_pieces(wf, units, *[_group_piece(p, units) for p in partials])


def _combine_pieces(wf: "Workflow", units: List[Unit], *pieces: Dict[Unit, Any]) -> Dict[Unit, Any]:
    """The pieces (:func:`_split_partials`) of the work items ``units``, merged into one piece
    (``fit_combine`` of each item's op). The pieces (and the partials of :func:`_combine_group`
    and :func:`_finalize_stats`) come as separate arguments, not a list: dask.delayed traverses
    a list argument to find its dask objects, which cost 1.9 ms per combine task of 8 inputs
    against 0.5 ms (``fit_graph`` built 40 partitions' tasks in the client in 0.13-0.15 s with
    lists, 0.03-0.05 s without)."""
    if len(pieces) == 1:
        return pieces[0]
    by_id = wf.nodes_by_id()
    # (a piece may hold some of the units only: the partitioned finalize's parts, see _cut_shards)
    return {unit: by_id[unit[0]].op.fit_combine([p[unit] for p in pieces if unit in p]) for unit in units}


def _cut_shards(wf: "Workflow", units: List[Unit], sharded: List[Unit], shards: int,
                *pieces: Dict[Unit, Any]) -> Tuple[Dict[Unit, Any], ...]:
    """The partitioned finalize's cut, on the worker holding ``pieces`` (its merged pieces of a
    final task's ``units``): ``(rest, part 0, ..., part shards-1)``, ``rest`` the units not in
    ``sharded``, merged, for the final task, and part ``j`` each ``sharded`` unit's values hashed
    to ``j`` (the op's ``fit_split``), for the task that reduces part ``j`` of every worker."""
    merged = _combine_pieces(wf, units, *pieces)
    by_id = wf.nodes_by_id()
    keep = set(sharded)
    parts: List[Dict[Unit, Any]] = [{} for _ in range(shards)]
    for unit in sharded:
        for j, part in enumerate(by_id[unit[0]].op.fit_split(merged[unit], shards)):
            parts[j][unit] = part
    return ({u: merged[u] for u in units if u not in keep}, *parts)


def _reduce_shard(wf: "Workflow", units: List[Unit], *parts: Dict[Unit, Any]) -> Dict[Unit, Any]:
    """Part ``j`` of every worker's cut (:func:`_cut_shards`) of ``units``, merged and reduced by
    each op's ``fit_reduce`` (a vocabulary's threshold, top values and order): what the final
    task merges with the other parts' results, about one copy of the vocabulary in all."""
    by_id = wf.nodes_by_id()
    merged = _combine_pieces(wf, units, *parts)
    return {unit: by_id[unit[0]].op.fit_reduce(merged[unit]) for unit in units}


def _finalize_stats(wf: "Workflow", units: List[Unit], pack: bool, *partials: Dict[Unit, Any]) -> Dict[Unit, Any]:
    """The last reduction step of the work items ``units``, where their partials are (a worker
    with a distributed client): merge each item's partials, then finalize a copy of its op.
    Returns ``{unit: (set, removed)}``: the attributes ``fit_finalize`` set (new or rebound) and
    the names it deleted; with ``pack``, ``set`` is :func:`pack_state`'s arrays (for a client to
    receive). The workflow applies them to its own op (see ``reduction.adopt_fitted``), so the op
    keeps its identity and its parameters stay the objects the user passed.

    A shallow copy: the attributes ``fit_finalize`` sets are the copy's own, and the workflow the
    task received (shared by the worker's tasks, or the caller's own object with a local
    scheduler) is left as it was."""
    by_id = wf.nodes_by_id()
    merged = _combine_pieces(wf, units, *partials)
    out = {}
    for unit in units:
        n = by_id[unit[0]]
        combined = merged[unit]
        op = copy.copy(n.op)
        op.fit_finalize(n.input_columns, combined)
        before, after = vars(n.op), vars(op)
        state = {k: v for k, v in after.items() if k not in before or before[k] is not v}
        out[unit] = (pack_state(state) if pack else state, [k for k in before if k not in after])
    return out


def merge_keyed(pieces: List[Tuple[int, int, Dict[str, Any]]]) -> Dict[str, Any]:
    """The statistics dict of a keyed op from its shards' dicts ``(shard, shards, stats)``, in the
    key order of the unsplit partial (shard ``j``'s ``i``-th key was key ``i * shards + j``)."""
    ranked = [(i * shards + shard, key, value) for shard, shards, stats in pieces
              for i, (key, value) in enumerate((stats or {}).items())]
    return {key: value for _, key, value in sorted(ranked, key=lambda r: r[0])}


def pack_state(state: Dict[str, Any]) -> List[np.ndarray]:
    """An attribute dict as byte arrays: a pickle (protocol 5) header, then the out-of-band
    buffers of its arrays. dask.distributed sends a list of numpy arrays zero-copy, but pickles an
    op object whole: measured on the 10M-row Criteo vocabularies (56 MB, LocalCluster of 1
    worker), the client received the op in 0.27-0.40 s and these arrays, unpacked, in 0.08-0.11 s
    (on an H100 worker, 200M rows: 1.1 s from the last task to the client having the op).

    Integer arrays of 64-bit items (a vocabulary's values and counts) of at least
    :data:`~tabprep.stats.vocab.NARROW_MIN` items travel in the narrowest integer dtype that holds their values
    (counts are mostly small numbers, values often fit 32 bits) and are widened back to their
    dtype by :func:`unpack_state`: the bytes the client receives shrink (issue #34: the tail from
    the last task to the client does not shrink with more workers), the values stay equal."""
    buffers: List[Any] = []
    out = io.BytesIO()
    _NarrowingPickler(out, buffers).dump(state)
    return [np.frombuffer(out.getvalue(), np.uint8)] + [np.frombuffer(b.raw(), np.uint8) for b in buffers]


def unpack_state(frames: List[np.ndarray]) -> Dict[str, Any]:
    """The dict :func:`pack_state` packed (its arrays writable, as a pickle gives them, with their
    dtypes)."""
    return pickle.loads(frames[0].tobytes(), buffers=[f if f.flags.writeable else f.copy() for f in frames[1:]])


class _NarrowingPickler(pickle.Pickler):
    """:func:`pack_state`'s pickler: long 64-bit integer arrays as a narrower array and the call
    that widens it back."""

    def __init__(self, file: Any, buffers: List[Any]) -> None:
        super().__init__(file, protocol=5, buffer_callback=buffers.append)

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is np.ndarray:
            small, dtype = narrow_ints(obj)
            if dtype is not None:
                return widen_ints, (small, dtype)   # unpickled: a new, writeable array of the old dtype
        return NotImplemented


class _WorkerPickler(cloudpickle.CloudPickler):
    """cloudpickle (what dask.distributed falls back to for lambdas and local functions) for
    :func:`for_workers`: an op that overrides :meth:`Operator.state_for_workers` is pickled with
    that state; every other op is kept by reference (not copied at all)."""

    def __init__(self, file: Any, shared: List[Any], buffers: List[Any]) -> None:
        super().__init__(file, protocol=5, buffer_callback=buffers.append)
        self.shared = shared

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, Operator) and type(obj).state_for_workers is Operator.state_for_workers:
            self.shared.append(obj)
            return len(self.shared) - 1
        return None

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, Operator):
            rv = obj.__reduce_ex__(5)
            if isinstance(rv, tuple) and len(rv) >= 3 and isinstance(rv[2], dict):
                return (rv[0], rv[1], obj.state_for_workers(rv[2])) + tuple(rv[3:])
        return super().reducer_override(obj)


class _SharedUnpickler(pickle.Unpickler):
    def __init__(self, file: Any, shared: List[Any], buffers: List[Any]) -> None:
        super().__init__(file, buffers=buffers)
        self.shared = shared

    def persistent_load(self, pid: Any) -> Any:
        return self.shared[pid]


def for_workers(wf: "Workflow") -> "Workflow":
    """The copy of ``wf`` that is scattered to dask.distributed workers: the ops that override
    :meth:`Operator.state_for_workers` (Categorify: its vocabularies without their counts) are
    copies with that state, whose arrays are the original's memory (pickle protocol 5 buffers);
    the other ops are the workflow's own objects; the graph around them is rebuilt (small).
    Measured with 2 CPU workers, 10M Criteo rows (``benchmarks/scale.py``'s ``scatter``): the
    pickled workflow shrank from 56 to 28 MB and a job's scatter from 0.15 to 0.08-0.09 s."""
    shared: List[Any] = []
    buffers: List[Any] = []
    out = io.BytesIO()
    _WorkerPickler(out, shared, buffers).dump(wf)
    out.seek(0)
    return _SharedUnpickler(out, shared, buffers).load()


def _transform_frame(ds: Any, columns: List[str], wf: Any, out_of_fold: bool, cast: bool, meta: Any) -> Any:
    """The dask frame of a lazy transform (see :meth:`Workflow.transform`)."""
    return ds._to_ddf(columns=columns).map_partitions(_transform_partition, wf, out_of_fold, cast, meta=meta,
                                                     enforce_metadata=False, transform_divisions=False,
                                                     align_dataframes=False)


def check_objects(wf: "Workflow", df: Any, source: str) -> None:
    """Refuse object columns of ``df`` read by ``wf`` that hold values other than strings (bools,
    Decimals, ints, bytes, mixes): fitted as strings they would all be out of vocabulary (issue #30).
    A user's frames and dask partitions are checked (one pass per object column); columns read
    from Arrow (parquet) hold strings by construction and skip this."""
    sch = wf.input_schema
    cols = [c for c, d in zip(df.columns, df.dtypes.tolist()) if d == object and (sch is None or c in sch)]
    found = backend.non_string_objects(df, cols) if cols else {}
    if found:
        raise TypeError(backend.non_string_objects_message(found, source))


def fitted_units(wf: "Workflow", df: Any) -> Any:
    """``df`` with datetime / timedelta columns of another unit than the bound input schema's
    converted to it exactly (a fit over files written in different units: the statistics must
    count one unit; issue #30). ``ValueError`` naming the column where the unit cannot hold them."""
    sch = wf.input_schema
    if sch is None or not any(getattr(d, "kind", "") in ("M", "m") for d in df.dtypes.tolist()):
        return df
    casts = {c: sch[c].dtype for c, d in zip(df.columns, df.dtypes.tolist())
             if c in sch and not sch[c].is_list and unit_drift(sch[c].dtype, str(d))}
    return df.assign(**{c: backend.cast_safely(df[c], dt, c) for c, dt in casts.items()}) if casts else df
