"""The Workflow: fit statistics with dask in one pass per dependency level, transform lazily."""
from __future__ import annotations

import functools
import logging
import time
from collections import defaultdict
from types import MappingProxyType
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

import dask

from .. import backend
from ..backend.frames import _is_default_index
from .._util import did_you_mean, is_frame, refuse_duplicate_columns, switched_off
from .._warn import new_job, reemit_from_cluster
from ..io.dataset import Dataset
from ..ops.base import _OUT_OF_FOLD, Operator, StatOperator
from ..ops._lookups import start_builds
from ..schema import (Schema, check_input_dtypes, drift_message, kind_mismatch_message, nest_like, normalize_dtype,
                      unit_drift)
from .cluster_check import distributed_client as _distributed_client, scatter_workflow
from .compat import WorkflowCompat
from .contract import WorkflowContract, _shown_dtype  # noqa: F401 - _shown_dtype: kept importable here
from .contract import check_declared_ints, conform_output as _conform
from .fusion import plan_chains, run_chain_node
from .node import Node, as_node, iter_nodes, upstream_ids, warn_shadowed
from .reduction import SPLIT_EVERY, adopt_fitted, fit_graph  # noqa: F401  (SPLIT_EVERY: kept importable here)
from .profiling import FIT_PROFILE_SAMPLE_ROWS, PROFILE_SAMPLE_ROWS, PROFILE_UNIT, complete_profile, profile_unit  # noqa: F401
from .tasks import _transform_frame, _transform_part, _transform_partition, check_objects, for_workers

log = logging.getLogger(__name__)


class Workflow(WorkflowContract, WorkflowCompat):
    """A graph of column ops, fitted on a dataset and applied to others.

    Args:
        output: the graph's output node, or anything a node can be made of (column names,
            lists of names and nodes), e.g. ``cats + conts + ["label"]``.

    Example:
        >>> import tabprep as tp
        >>> from tabprep import ops
        >>> wf = tp.Workflow((["C1"] >> ops.Categorify()) + ["label"])
    """

    #: bumped by every fit pass and every transform: part of the dask token (:meth:`__dask_tokenize__`),
    #: so each pass is a new graph key while the workflow stays one key within a pass
    _fit_round: int = 0
    #: fit-pass work items that are not graph nodes, by id, during a fit pass (the data profile:
    #: ``workflow.profiling.StatUnit``); the tasks find them with :meth:`nodes_by_id`
    _extra_units: Mapping[str, Any] = MappingProxyType({})
    #: the training data's profile (``profile.json``, see :mod:`tabprep.quality`), set by
    #: :meth:`fit` (``profile=True``) and saved under ``stats/``; None before
    profile_: Optional[Dict[str, Any]] = None
    #: set by :meth:`from_spec` (read by :meth:`to_spec` and the CLI's error messages): feature names
    #: by node id, the spec line of each selected column, and the spec's file name (None for text/dicts)
    _spec_names: Mapping[str, str] = MappingProxyType({})
    _spec_column_lines: Mapping[str, Optional[int]] = MappingProxyType({})
    _spec_source: Optional[str] = None
    #: the clock of ``op_timer``'s seconds (``time.thread_time`` gives CPU seconds of the op's thread)
    op_clock: Callable[[], float] = staticmethod(time.perf_counter)

    def __init__(self, output: Any, client: Any = None) -> None:
        if client is not None:  # NVTabular's (deprecated there too): tabprep uses the current client
            log.warning("Workflow(client=...) is ignored: tabprep uses the current dask.distributed client, if any")
        self.output_node: Node = as_node(output)
        self.nodes: List[Node] = iter_nodes(self.output_node)
        self._ids = {id(n): f"n{i}" for i, n in enumerate(self.nodes)}
        self.input_schema: Optional[Schema] = None
        self._output_schema: Optional[Schema] = None
        self._node_schemas: Dict[str, Schema] = {}
        self.fit_time_: Optional[float] = None
        #: optional profiling hook ``op_timer(node_id, op_label, kind, seconds, rows)`` called after each
        #: op transform (``kind="transform"``) and each per-partition fit (``kind="fit"``); None: off
        self.op_timer: Optional[Callable[[str, str, str, float, int], None]] = None
        # check that the graph's columns resolve (duplicate names across merges etc.)
        self.output_node.output_columns  # noqa: B018
        warn_shadowed(self.output_node)

    # -- introspection ---------------------------------------------------------------
    def node_id(self, node: Node) -> str:
        return self._ids[id(node)]

    def nodes_by_id(self) -> Dict[str, Node]:
        """``{node_id(n): n}`` for every node (the inverse of :meth:`node_id`)."""
        out: Dict[str, Any] = {self._ids[id(n)]: n for n in self.nodes}
        out.update(self._extra_units)
        return out

    @property
    def ops(self) -> List[Operator]:
        return [n.op for n in self.nodes if n.kind == "op"]

    @property
    def stat_nodes(self) -> List[Node]:
        return [n for n in self.nodes if n.kind == "op" and isinstance(n.op, StatOperator)]

    @property
    def input_columns(self) -> List[str]:
        """Raw columns the workflow reads (selections and op dependencies), in first-use order."""
        cols: Dict[str, None] = {}  # an ordered set: linear in the number of columns (issue #30)
        for n in self.nodes:
            extra = list(n.columns) if n.kind == "select" else n.raw_dependencies()
            for c in extra:
                cols.setdefault(c, None)
        return list(cols)

    def _raw_columns_for(self, targets: Sequence[Node]) -> List[str]:
        """Raw input columns read by ``targets`` and their ancestors, in first-use order."""
        keep: set = set()
        stack = list(targets)
        while stack:
            n = stack.pop()
            if id(n) in keep:
                continue
            keep.add(id(n))
            stack.extend(n.upstream)
        cols: List[str] = []
        for n in self.nodes:
            if id(n) not in keep:
                continue
            extra = list(n.columns) if n.kind == "select" else n.raw_dependencies()
            for c in extra:
                if c not in cols:
                    cols.append(c)
        return cols

    @property
    def output_columns(self) -> List[str]:
        return self.output_node.output_columns

    @property
    def fitted(self) -> bool:
        """True when every op that learns statistics has them (always True for a workflow of
        stateless ops such as HashBucket, which can transform without :meth:`fit`)."""
        return all(n.op.fitted for n in self.stat_nodes)

    @property
    def output_schema(self) -> Schema:
        """Names, dtypes, tags and properties (cardinalities...) of the output columns.

        Known after :meth:`fit`; for a workflow of stateless ops also after :meth:`bind_schema`
        or a transform (it only needs the input's column dtypes, no statistics).
        """
        if self._output_schema is None:
            if not self.stat_nodes:
                raise RuntimeError("this workflow has no statistics to fit, but its output schema depends on the "
                                   "input's columns: call workflow.bind_schema(dataset.schema) (reads no data), "
                                   "workflow.fit(dataset) or transform a frame first")
            raise RuntimeError("the output schema is known once the workflow is fitted: call workflow.fit(dataset)")
        return self._output_schema

    def bind_schema(self, input_schema: Schema, source: str = "the input schema") -> "Workflow":
        """Compute every node's schema from ``input_schema`` without reading data.

        Checks that the selected columns exist (close matches are suggested). Enough to know
        :attr:`output_schema` for a workflow of stateless ops (HashBucket, LogOp, ...); a
        workflow with statistics still needs :meth:`fit` for its cardinalities. Loaders call
        this when a stateless workflow is attached before any fit. Returns ``self``.
        """
        self._bind(input_schema, source)
        return self

    @property
    def output_dtypes(self) -> Dict[str, str]:
        return {c.name: c.dtype for c in self.output_schema}

    def __repr__(self) -> str:
        return f"Workflow({self.output_node!r})"

    # -- execution on one in-memory frame ------------------------------------------------
    def _execute(self, df: Any, targets: Sequence[Node]) -> Dict[int, Any]:
        """Run the graph on one frame up to ``targets``; returns outputs keyed by id(node).

        Iterates the topologically sorted nodes rather than recursing through a closure: a
        recursive closure is a reference cycle, which kept every intermediate frame of a
        partition alive until the cyclic garbage collector happened to run.
        """
        needed = upstream_ids(targets)
        # runs of ops with host kernels go column by column through numpy (pandas only; see fusion.py)
        chains = plan_chains(self.nodes, needed, {id(t) for t in targets}) \
            if backend.host_columns_supported(df) else {}
        cache: Dict[int, Any] = {}
        for n in self.nodes:
            if id(n) not in needed or (id(n) not in chains and n.kind == "op" and id(n) in cache):
                continue
            if n.kind == "select":
                out = df[list(n.columns)]
            elif n.kind == "concat":
                parts = [cache[id(p)] for p in n.parents]
                takes = n.concat_sources()
                if any(len(t) != len(p.output_columns) for t, p in zip(takes, n.parents)):
                    # a column output by several branches: the last one's values (NVTabular's rule)
                    parts = [part[t] for part, t in zip(parts, takes) if t]
                _check_same_rows(parts)
                out = backend.concat_columns(parts)
                out = out[n.output_columns] if list(out.columns) != n.output_columns else out
            elif n.kind == "drop":
                out = cache[id(n.parents[0])][n.output_columns]
            elif id(n) in chains:
                chain = chains[id(n)]
                cache.update({id(m): None for m in chain})  # inner outputs are never materialized
                n = chain[-1]
                out = run_chain_node(self, chain, [cache[id(p)] for p in chain[0].parents], df)
            else:
                out = self._run_op(n, [cache[id(p)] for p in n.parents], df, [cache[id(d)] for d in n.deps])
            cache[id(n)] = out
        return cache

    def _op_input(self, n: Node, parent_outputs: List[Any], df: Any, dep_outputs: Sequence[Any] = ()) -> Any:
        """The frame ``n``'s op reads: its parents' outputs merged, then its argument columns
        (``op.dependencies()``): those its dependency nodes computed (``dep_outputs``, in
        ``n.deps`` order), the others from the raw frame ``df``."""
        if len(parent_outputs) == 1:
            inp = parent_outputs[0]
        else:
            _check_same_rows(parent_outputs)
            inp = backend.concat_columns(parent_outputs)
        if n.deps:
            sources = n.dependency_sources()
            parts = [inp]
            for d, out in zip(n.deps, dep_outputs):
                cols = [c for c in out.columns if sources.get(c) is d]
                if not cols:
                    continue
                if len(out) != len(inp):
                    raise ValueError(f"{n.op.label} reads {cols} computed by its argument node, which has "
                                     f"{len(out)} rows where its input has {len(inp)} (a Filter in one of them?); "
                                     f"apply Filter after {n.op.label}")
                parts.append(out[cols])
            if len(parts) > 1:
                inp = backend.concat_columns(parts)
        deps = [d for d in n.raw_dependencies() if d not in inp.columns]
        if deps:
            if len(inp) != len(df):
                raise ValueError(f"{n.op.label} reads {deps} from the raw input, but rows were filtered before it; "
                                 f"apply Filter after {n.op.label}")
            inp = backend.concat_columns([inp, df[deps]])
        return inp

    def _run_op(self, n: Node, parent_outputs: List[Any], df: Any, dep_outputs: Sequence[Any] = ()) -> Any:
        inp = self._op_input(n, parent_outputs, df, dep_outputs)
        cols = n.input_columns
        start = self.op_clock() if self.op_timer is not None else 0.0
        try:
            if getattr(n.op, "supports_nested", False) == "leaves":   # nested lists: on flat leaves per row
                out = backend.on_leaves(inp, cols, lambda frame: n.op.transform(cols, frame))
            else:
                out = n.op.transform(cols, inp)
        except Exception as exc:
            # the user's exception object itself (type, args, attributes intact), with context added
            _add_context(exc, f"{n.op.label} failed on columns {cols}")
            raise
        if self.op_timer is not None:
            self.op_timer(self.node_id(n), n.op.label, "transform", self.op_clock() - start, len(inp))
        if not type(n.op).__module__.startswith("tabprep."):
            check_declared_ints(n.op.label, out, self._node_schemas.get(self.node_id(n)))
        return out

    def build_lookups_ahead(self, cpu: bool) -> bool:
        """Start building, in one background thread, the lookup structures (vocabularies' hash
        tables or sorted copies) the fitted ops' transform needs on this thread's device, once per
        device and process (:mod:`tabprep.ops._lookups`). A transform's partition tasks call it
        before they read their partition, so a worker's first read overlaps the builds its
        first transform would otherwise wait for. Results are the same without it
        (``TABPREP_LOOKUPS_AHEAD=0`` turns it off). True if a thread was started."""
        if switched_off("TABPREP_LOOKUPS_AHEAD") or not self.fitted:
            return False
        like = backend.probe_array(cpu)
        return start_builds(self, [n.op for n in self.stat_nodes], like, backend.device(like))

    def transform_frame(self, df: Any, out_of_fold: bool = False, cast: bool = False) -> Any:
        """Transform one in-memory pandas or cuDF frame (the online path used by loaders).

        ``out_of_fold``, ``cast``: see :meth:`transform`. The frame's dtypes are checked against
        the fitted input schema once per distinct set of dtypes (not per value).
        """
        if self.input_schema is None:
            # a stateless workflow never fitted nor bound: this first frame defines the contract
            self._bind(Schema.from_frame(df), "the frame")
        else:
            df = self._enforce_contract(df, "the frame", cast)
        self._require_fitted()
        token = _OUT_OF_FOLD.set(bool(out_of_fold))
        try:
            out = self._execute(df, [self.output_node])[id(self.output_node)]
        finally:
            _OUT_OF_FOLD.reset(token)
        out = out[self.output_columns]
        if self.resets_index and not _is_default_index(out.index, len(out)):
            out = out.reset_index(drop=True)
        return _conform(out, self.output_schema)

    @property
    def resets_index(self) -> bool:
        """Whether :meth:`transform` gives a frame a fresh ``RangeIndex``, as NVTabular 23.08 does:
        merlin-core concatenates columns with ``reset_index(drop=True)`` wherever a node merges
        several inputs (``+``, an op reading several parents or dependency columns), and NVTabular's
        Filter, Dropna and JoinExternal reset it (``Operator.resets_index``); a graph with none of
        these keeps the frame's index. (Inside the graph the index is kept: TargetEncoding's folds
        read it.)"""
        for n in self.nodes:
            if n.kind == "concat" and len(n.parents) > 1 and not _picks_columns(n):
                return True
            if n.kind == "op" and (len(n.parents) > 1 or n.raw_dependencies() or n.dependency_sources()
                                   or getattr(n.op, "resets_index", False)):
                return True
        return False

    # -- fit --------------------------------------------------------------------------
    def _stat_levels(self) -> List[List[Node]]:
        level: Dict[int, int] = {}
        for n in self.nodes:
            # an op's dependency nodes count as its parents: their statistics are fitted first
            up = max((level[id(p)] for p in n.upstream), default=0)
            is_stat = n.kind == "op" and isinstance(n.op, StatOperator)
            level[id(n)] = up + (1 if is_stat else 0)
        groups: Dict[int, List[Node]] = defaultdict(list)
        for n in self.stat_nodes:
            groups[level[id(n)]].append(n)
        return [groups[k] for k in sorted(groups)]

    def fit(self, dataset: Any, progress: Optional[Callable[[str, int, int], None]] = None,
            profile: Any = False) -> "Workflow":
        """Compute every op's statistics over ``dataset``.

        One streaming pass over the data per dependency level (ops whose statistics depend on
        other fitted ops' output, such as Normalize after FillMissing, wait for the next pass);
        each pass computes, for all stat ops of its level, a partial per partition, merges
        them in a tree (fan-in :data:`SPLIT_EVERY`) and finalizes, the last merge and the
        finalize where the partials are (on the workers with a dask.distributed client, one task
        per group of ops; see :mod:`tabprep.workflow.reduction`). The ops in the graph (the
        objects the user holds) receive the statistics. Memory is bounded by the partition size
        and the size of the statistics, not by the dataset.

        Args:
            dataset: a :class:`tabprep.Dataset`, or anything ``Dataset()`` accepts
                (paths, pandas/cuDF/dask frames).
            progress: optional callback ``(stage, done, total)`` for progress bars.
            profile: ``True`` records the profile of the training data (:mod:`tabprep.quality`) in
                ``profile_`` (saved as ``stats/profile.json``), computed in the first pass; its
                sketches (quantiles, frequent values, distinct count) see every ``k``-th row, ``k``
                chosen so that they see about :data:`FIT_PROFILE_SAMPLE_ROWS` rows (rows, nulls,
                min, max, mean and std see all; the quantile sketch gets every ``f``-th sorted
                sampled value, ``f`` from the sample's size: ``stats.profile.kll_every_for``, 4 at
                50k rows). ``False`` (default): none, since it costs more than a
                small share of the fit today (docs/guide/data-quality.md); an int ``k``: that sampling.
        """
        ds = dataset if isinstance(dataset, Dataset) else Dataset(dataset)
        start = time.perf_counter()
        self._bind(ds.schema, ds.describe())
        for n in self.stat_nodes:
            n.op.clear()
        # the fit pass reads only what the stat ops and their ancestors use (not e.g. the label)
        columns = self._raw_columns_for(self.stat_nodes)
        unit = profile_unit(self, ds, columns, profile)
        if unit is not None:  # the profile reads the workflow's input columns (the label too), in the same pass
            columns += [c for c in unit.input_columns if c not in columns]
        # parquet: each task reads its partition itself, so the read and the partial are one task on
        # one worker (no partition ever moves); on the CPU as Arrow tables, fitted on host columns
        # where the ops allow (fusion.fit_table), else converted to the frames to_ddf gives (nullable
        # int dtypes). Other data: the dask frame's partitions.
        parts = ds._piece_readers(columns, arrow=True)
        if parts is None:
            ddf = ds._to_ddf(columns=columns)
            parts, meta = ddf.to_delayed(), ddf._meta
        else:  # no dask frame to build (on a GPU client 0.2-0.5 s of every fit)
            meta = ds.meta_frame(columns)
        nullable = ds._nullable_dtypes(columns)
        levels = self._stat_levels() or ([[]] if unit is not None else [])
        self.profile_ = None
        for i, level in enumerate(levels):
            if i:  # the columns reaching this level may depend on the statistics fitted so far
                self._bind(ds.schema, ds.describe())
            extra = {PROFILE_UNIT: unit} if unit is not None and i == 0 else {}
            self._fit_level(parts, meta, level, progress, stage=f"fit pass {i + 1}", nullable=nullable, extra=extra)
        if unit is not None:
            self.profile_ = unit.op.profile_
            complete_profile(self, self.profile_)  # id columns: the exact counts of the fitted vocabularies
        # cardinalities etc. are known now
        self._bind(ds.schema, ds.describe())
        backend.release_memory(collect=False)  # the pass's freed partitions, before a transform pass starts
        self.fit_time_ = time.perf_counter() - start
        log.info("fitted %d stat ops in %.2fs", len(self.stat_nodes), self.fit_time_)
        return self

    def _fit_level(self, parts: List[Any], meta: Any, level: List[Node], progress, stage: str,
                   nullable: Optional[Dict[str, str]] = None, extra: Optional[Dict[str, Any]] = None) -> None:
        """One fit pass over ``parts`` (partition readers or delayed partitions; ``meta``: their
        empty frame, for the scheduler options of its backend) for the stat ops of ``level`` and
        the work items ``extra`` (by id: statistics of the raw partition, the data profile)."""
        nodes: Dict[str, Any] = {self.node_id(n): n for n in level}
        nodes.update(extra or {})
        if not parts:
            raise ValueError("the dataset has no partitions to fit on")
        # the workflow (with the statistics of earlier levels) is one graph key locally, and a
        # future scattered once to every worker with a distributed client (never graph data)
        self._extra_units = dict(extra or {})  # (an instance attribute only during the pass: pickled with it)
        try:
            wf = self._graph_handle()
            finals, packed = fit_graph(wf, nodes, parts, nullable)
            if progress is not None:
                progress(stage, 0, len(parts))
            fitted = dask.compute(*finals, **backend.compute_options_for(meta))
        finally:
            self.__dict__.pop("_extra_units", None)
            reemit_from_cluster()  # warnings raised in the pass's tasks on distributed workers
        del finals, wf  # a scattered workflow is released on the workers with its last future
        if progress is not None:
            progress(stage, len(parts), len(parts))
        adopt_fitted(nodes, fitted, packed)

    def _graph_handle(self) -> Any:
        """What the tasks of a fit pass or a transform take as the workflow.

        With dask's local schedulers: ``dask.delayed(self)``, one graph key holding the object
        itself (nothing is pickled). With a dask.distributed client (``distributed.default_client()``):
        the workflow, statistics included, is scattered once to every worker
        (``broadcast=True``) and the tasks take that future, so the graph sent to the scheduler
        holds a key, not a pickled workflow (dask warned "large graph" for big vocabularies).
        ``hash=False``: each call scatters the workflow's current state (a later fit pass sees
        the statistics of the earlier ones). dask's active memory manager may drop a replica
        that no task waits on yet (its ReduceReplicas policy, every 2 s): a worker then fetches
        the workflow once from another when its first task runs. The workers drop it once the last future (held by
        the graph of a lazy transform) is released. A lazy transform made under a client must
        be computed with that client, and it uses the workflow as it was when ``transform``
        was called (set ``op_timer`` before).
        """
        self._fit_round += 1  # a new dask token per pass / transform (see __dask_tokenize__)
        client = _distributed_client()
        if client is None:
            return dask.delayed(self, pure=True)
        copy = for_workers(self)
        copy._warn_job = new_job()  # its tasks' warnings are sent back to this process (tabprep._warn)
        # (after checking that every worker runs this tabprep; bounded when a worker dies during it)
        return scatter_workflow(client, copy)

    def _require_fitted(self) -> None:
        missing = [n.op.label for n in self.stat_nodes if not n.op.fitted]
        if missing:
            raise RuntimeError(f"the workflow is not fitted ({', '.join(missing)} have no statistics): "
                               f"call workflow.fit(dataset) or load a fitted workflow with Workflow.load(path)")

    # -- transform ---------------------------------------------------------------------
    def transform(self, data: Any, out_of_fold: bool = False, cast: bool = False) -> Any:
        """Transform data with the fitted statistics.

        A :class:`~tabprep.Dataset` (or paths / a dask frame) gives back a lazy ``Dataset``
        (write it with ``.to_parquet`` / ``.to_tfrecord``, or ``.to_ddf()`` / ``.compute()``);
        a pandas or cuDF DataFrame gives back a DataFrame. Row order is kept.

        ``out_of_fold=True`` says ``data`` is the data the workflow was fitted on, partitioned
        the same way: target encoders (TargetEncoding) then give every row the encoding
        computed without its own fold (no label leak for training). Default False: all ops
        use the statistics of the whole fitted data (validation, test, serving).

        The fitted input schema is a contract: a column whose kind changed (int -> string,
        int -> float, string -> int, bool -> int) raises ``TypeError`` naming the column, the
        fitted and the given dtype. Ints of another width (int32 for int64) and nullable variants
        (``Int64``) are accepted and give identical ids. ``cast=True`` converts drifted columns
        to the fitted dtype instead, raising ``ValueError`` naming the column on lossy values
        (2.5 or "abc" for an int column). The fitted workflow is never changed by a transform.
        """
        if is_frame(data):
            refuse_duplicate_columns(data.columns, "the frame")
            if self.input_schema is not None:
                check_objects(self, data, "the frame")
            # a user's frame may hold Python lists / numpy arrays in cells: one Arrow list column, as
            # Dataset(frame) makes it (here, not in transform_frame: loaders' chunks come from Arrow);
            # numpy-array cells in give numpy-array cells out (NVTabular's layout, as Dataset.compute)
            out = self.transform_frame(backend.lists_to_arrow(data), out_of_fold=out_of_fold, cast=cast)
            return backend.lists_to_numpy(out) if backend.has_array_cells(data) else out
        ds = data if isinstance(data, Dataset) else Dataset(data)
        if self.input_schema is None:  # stateless and never bound: this dataset defines the contract
            self._bind(ds.schema, ds.describe())
        else:
            self._check_contract(ds.schema, ds.describe(), cast)
        self._require_fitted()
        columns = self.input_columns
        meta = self.transform_frame(ds.meta_frame(columns), cast=cast)
        # the workflow (vocabularies included) is one graph key, not a copy inside every task;
        # with a distributed client it is scattered once to every worker (see _graph_handle),
        # and each worker keeps its lookup tables
        wf = self._graph_handle()
        frame = functools.partial(  # the dask frame, built only when asked (Dataset._from_ddf); pickles
            _transform_frame, ds, columns, wf, bool(out_of_fold), bool(cast), meta)
        # the writer may compute the same partitions from Arrow tables (see fusion.transform_table)
        # and each partition is read, transformed and written by one task (Dataset._table_tasks)
        if ds.cpu:
            tables = (ds, self.input_columns, _transform_part, wf,
                      (bool(out_of_fold), bool(cast), ds._nullable_dtypes(self.input_columns)))
        else:
            tables = (ds, self.input_columns, _transform_partition, wf, (bool(out_of_fold), bool(cast)))
        return Dataset._from_ddf(frame, schema=self.output_schema, cpu=ds.cpu, source=f"transform of {ds.describe()}",
                                 tables=tables)

    def fit_transform(self, dataset: Any, out_of_fold: bool = True) -> Any:
        """Fit on ``dataset`` and transform it; target encodings come out-of-fold (see :meth:`transform`)."""
        return self.fit(dataset).transform(dataset, out_of_fold=out_of_fold)

    # -- persistence -------------------------------------------------------------------
    def save(self, path: str, allow_pickle: bool = False, transaction: Any = None, storage_options: Any = None) -> None:
        """Save the fitted workflow to a directory (JSON spec + statistics files); see :mod:`tabprep.workflow.serialize`.

        ``path`` may be new, empty or a saved workflow (replaced atomically); any other folder is
        refused with ``FileExistsError``. ``transaction`` (a :class:`tabprep.io.commit.Transaction`)
        commits it together with other folders, e.g. the output of ``to_parquet``. URLs: see :meth:`load`.
        """
        from .serialize import save_workflow

        save_workflow(self, path, allow_pickle=allow_pickle, transaction=transaction, storage_options=storage_options)

    @classmethod
    def load(cls, path: str, allow_pickle: bool = False, trusted: bool = False, storage_options: Any = None) -> "Workflow":
        """Load a workflow saved with :meth:`save`; it transforms exactly like the original.

        Runs nothing the folder names: functions and op classes resolve only to registered ones
        (:func:`tabprep.register_function`, ``@ops.register``) unless ``trusted=True`` (imports the
        modules named in ``workflow.json``); pickled functions need ``allow_pickle=True`` (implies
        ``trusted``). Statistics files are checked against their recorded checksums. ``path`` may be a
        URL (``s3://bucket/wf``, ``storage_options`` as in pandas): one without ``_SUCCESS`` is refused.
        """
        from .serialize import load_workflow

        return load_workflow(path, allow_pickle=allow_pickle, trusted=trusted, storage_options=storage_options)

    @classmethod
    def from_spec(cls, spec: Any) -> "Workflow":
        """Build an (unfitted) workflow from a YAML/JSON spec file, YAML text or a dict; see :mod:`tabprep.workflow.spec`."""
        from .spec import workflow_from_spec

        return workflow_from_spec(spec)

    def to_spec(self, path: Optional[str] = None) -> Dict[str, Any]:
        """The graph as a spec dict (written to ``path`` as YAML, or JSON for ``.json``, if given); see :mod:`tabprep.workflow.spec`."""
        from .spec import workflow_to_spec

        return workflow_to_spec(self, path)

    def __setstate__(self, state: Dict[str, Any]) -> None:
        # node ids are keyed by id(node), which differs in the process a pickled workflow lands in
        # (dask.distributed workers): rebuild them from the (pickled, ordered) node list
        self.__dict__.update(state)
        self._ids = {id(n): f"n{i}" for i, n in enumerate(self.nodes)}

    def __dask_tokenize__(self):
        # identity + fit round: cheap, and distinct between the passes of one fit
        return ("tabprep.Workflow", id(self), self._fit_round)


# -- helpers ---------------------------------------------------------------------------
#: the old name of :meth:`Schema.from_frame` (ops/join_external.py and loader/core.py still use it)
schema_of_frame = Schema.from_frame


def _picks_columns(n: Node) -> bool:
    """A merge of one-column ``-`` nodes of one parent (``node[["b", "a"]]`` in an order other than
    the node's): NVTabular's selection of columns, which keeps the index."""
    return all(p.kind == "drop" and p.parents[0] is n.parents[0].parents[0] for p in n.parents)


def _check_same_rows(parts: List[Any]) -> None:
    lens = {len(p) for p in parts}
    if len(lens) > 1:
        raise ValueError("branches merged with '+' have different row counts (a Filter inside one branch?); "
                         "apply Filter to the merged columns instead: (a + b) >> ops.Filter(...)")


class OpContext(Exception):
    """Python 3.10 only: where an op failed, chained as the cause of the user's own exception
    (3.11+ adds the same text with ``add_note``)."""


def _add_context(exc: BaseException, note: str) -> None:
    """Add ``note`` to ``exc`` without rebuilding it (type, args and attributes stay the user's):
    ``add_note`` on Python >= 3.11; on 3.10 a ``__notes__`` list plus, when the exception has no
    cause yet, an :class:`OpContext` chained as its cause so that the traceback shows the note."""
    if hasattr(exc, "add_note"):
        exc.add_note(note)
        return
    try:  # pragma: no cover - Python 3.10
        exc.__notes__ = [*getattr(exc, "__notes__", []), note]  # type: ignore[attr-defined]
        if exc.__cause__ is None:
            exc.__cause__ = OpContext(note)
    except AttributeError:  # pragma: no cover - exceptions that refuse attributes: leave them as they are
        pass
