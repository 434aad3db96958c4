"""Fused element-wise chains: consecutive ops with column kernels run as one pass per column.

An op may declare an element-wise kernel per column (:meth:`tabprep.ops.Operator.column_kernel`):
a function on :class:`tabprep.backend.HostColumn` (numpy values + null mask; on cuDF frames a
:class:`tabprep.backend.DeviceColumn` of CuPy arrays, see below) that computes what
its ``transform`` computes for that column. A *chain* is a run of op nodes ``n1 >> n2 >> ... >> nk``
that all declare kernels, keep their column names (output columns == input columns), read no
other column, keep the rows, and where each ``n_i`` (i < k) feeds only ``n_{i+1}`` and is not
itself wanted (a fit target's input, the output). The workflow runs a chain column by column:
the column's numpy buffers go through every kernel (in place where the arrays are the kernel's
own), and only the chain's last output becomes a pandas column again. Today's Criteo chain
``FillMissing >> Clip >> LogOp >> Normalize`` thus costs a few ufunc passes per column instead
of four pandas frames of fresh temporaries.

The same holds on cuDF frames: the backend turns a cuDF column into a
:class:`tabprep.backend.DeviceColumn` (CuPy values + null mask) and back
(:func:`tabprep.backend.host_column` / :func:`tabprep.backend.host_series` dispatch on the
column's type), and the kernels, written for any array namespace, run as a few CuPy passes per
column instead of four cuDF frames of temporaries. The GPU backend does so once its kernel
warm-up (:mod:`tabprep.backend.gpu_warmup`) has built those kernels; before, and with
``TABPREP_GPU_WARMUP=0``, cuDF frames run every op's ``transform`` (libcudf's precompiled
operations: a cold worker compiles no CuPy kernel for FillMissing or Clip).

Where a kernel declines a column (returns None: a dtype or column type it does not reproduce
exactly), that column goes through the ops' ``transform`` instead, op after op, so results never
depend on whether a chain was fused. Frames whose columns cannot become kernel columns
(:func:`tabprep.backend.host_columns_supported` is False) run every op's ``transform`` as before.
"""
from __future__ import annotations

import functools
import time
from collections import defaultdict
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from .. import backend
from ..ops.base import Operator, StatOperator
from ..ops.node import Node, upstream_ids


@functools.lru_cache(maxsize=None)
def _declares(cls: type, fast: str, reference: str, base: type) -> bool:
    """True when ``cls`` has a ``fast`` method (a host kernel or partial) of its own, not ``base``'s
    default, from a class at least as derived as its ``reference`` method's (a subclass overriding
    ``reference`` alone must not inherit a stale ``fast`` one)."""
    def owner(name: str) -> type:
        return next(c for c in cls.__mro__ if name in c.__dict__)

    fast_owner = owner(fast)
    return fast_owner is not base and issubclass(fast_owner, owner(reference))


def _declares_kernels(cls: type) -> bool:
    """``column_kernel`` of ``cls`` computes what its ``transform`` does (see :func:`_declares`)."""
    return _declares(cls, "column_kernel", "transform", Operator)


def _declares_host_partial(cls: type) -> bool:
    """``fit_partial_columns`` of ``cls`` computes what its ``fit_partial`` does (see :func:`_declares`)."""
    return _declares(cls, "fit_partial_columns", "fit_partial", StatOperator)


def fusable(n: Node) -> bool:
    """An op node that may be part of a chain (see the module docstring)."""
    if n.kind != "op" or not _declares_kernels(type(n.op)) or n.op.changes_rows or n.op.dependencies():
        return False
    return len(n.parents) >= 1 and n.output_columns == n.input_columns


def plan_chains(nodes: Sequence[Node], needed: set, wanted: set) -> Dict[int, List[Node]]:
    """``{id(head): [head, ..., last]}`` for the chains among ``needed`` nodes (ids); ``wanted``:
    ids whose outputs must be materialized (they end a chain). Nodes in topological order."""
    children: Dict[int, List[Node]] = defaultdict(list)
    for n in nodes:
        if id(n) in needed:
            for p in n.upstream:  # a node read as an op's argument too is materialized (ends its chain)
                children[id(p)].append(n)
    chains: Dict[int, List[Node]] = {}
    taken: set = set()
    for n in nodes:
        if id(n) not in needed or id(n) in taken or not fusable(n):
            continue
        chain = [n]
        while id(chain[-1]) not in wanted:
            kids = children[id(chain[-1])]
            if len(kids) != 1 or len(kids[0].parents) != 1 or not fusable(kids[0]):
                break
            chain.append(kids[0])
        taken.update(id(m) for m in chain)
        chains[id(n)] = chain
    return chains


def run_chain(ops: List[Operator], columns: List[str], inp: Any,
              timer: Optional[Callable[[int, float], None]] = None,
              clock: Callable[[], float] = time.perf_counter) -> Any:
    """The frame ``ops[-1]`` would output for ``columns`` of the frame ``inp`` (pandas or cuDF) after
    ``ops[0] .. ops[-2]``, computed with the ops' column kernels (``transform`` for columns a kernel
    declines). ``timer(i, seconds)``: optional, called with the time spent in ``ops[i]``."""
    out: Dict[str, Any] = {}
    declined: List[str] = []
    made: List[tuple] = []   # (column, kernel column): series made together below
    spent = [0.0] * len(ops)
    for c in columns:
        t = clock() if timer else 0.0
        kernels = [op.column_kernel(c) for op in ops]
        col = backend.host_column(inp[c]) if all(k is not None for k in kernels) else None
        for i, kernel in enumerate(kernels):
            if col is None:
                break
            try:
                col = kernel(col)
            except Exception as exc:
                _note(exc, ops[i], [c])
                raise
            if timer:
                now = clock()
                spent[i] += now - t
                t = now
        if col is None:
            declined.append(c)
            continue
        made.append((c, col))
    if made:   # all at once: the backend may batch their device work (one wait for the GPU, not one each)
        t = clock() if timer else 0.0
        names = [c for c, _ in made]
        series = backend.host_series_many(made[0][1], [col for _, col in made], [inp[c] for c in names], names)
        out.update(zip(names, series))
        if timer:
            spent[-1] += clock() - t
    if declined:  # the ops' own transforms, op after op, on the columns no kernel took
        declined = _whole_groups(ops, declined, columns)  # a group's columns are transformed together
        frame = inp[declined]
        for i, op in enumerate(ops):
            t = clock() if timer else 0.0
            try:
                frame = backend.on_leaves(frame, declined, lambda f, op=op: op.transform(declined, f)) \
                    if getattr(op, "supports_nested", False) == "leaves" else op.transform(declined, frame)
            except Exception as exc:
                _note(exc, op, declined)
                raise
            if timer:
                spent[i] += clock() - t
        for c in declined:
            out[c] = frame[c]
    if timer:
        for i, sec in enumerate(spent):
            timer(i, sec)
    return backend.make_frame({c: out[c] for c in columns}, like=inp)


def run_chain_node(wf: Any, chain: List[Node], parent_outputs: List[Any], df: Any) -> Any:
    """Run ``chain`` (from :func:`plan_chains`) for the workflow ``wf``: the head's input as the
    workflow merges it, then :func:`run_chain`; per-op times go to ``wf.op_timer`` as for unfused ops."""
    head = chain[0]
    inp = wf._op_input(head, parent_outputs, df)
    timer = None
    if wf.op_timer is not None:
        def timer(i: int, seconds: float) -> None:
            wf.op_timer(wf.node_id(chain[i]), chain[i].op.label, "transform", seconds, len(inp))
    return run_chain([n.op for n in chain], head.input_columns, inp, timer, wf.op_clock)


def _whole_groups(ops: List[Operator], some: List[str], columns: List[str]) -> List[str]:
    """``some`` plus the other columns of every ``input_groups`` group (ops with ``supports_groups``,
    e.g. a shared vocabulary) that holds one of them, in ``columns`` order."""
    want = set(some)
    for op in ops:
        for group in op.input_groups:
            if want.intersection(group):
                want.update(group)
    return [c for c in columns if c in want]


def _note(exc: BaseException, op: Operator, columns: List[str]) -> None:
    from .workflow import _add_context

    _add_context(exc, f"{op.label} failed on columns {columns}")


# -- the Arrow-native transform ----------------------------------------------------------------------
#: dtypes the table path reads and writes (what pandas round-trips unchanged, NaN aside), and their
#: Arrow names
_NUMERIC = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64")
_ARROW_NUMERIC = frozenset(_NUMERIC[:-2] + ("float", "double"))


def transform_table(wf: Any, table: Any) -> Optional[Any]:
    """The workflow's output for the rows of the Arrow ``table`` (one partition), computed on host
    columns without pandas, as an Arrow table; None when the pandas path must run instead.

    Taken when every op of the graph runs in a chain (:func:`plan_chains`) whose kernels accept
    every column, and the input and output columns are numeric / bool of the fitted dtypes (an int32
    file under an int64 schema, strings, lists... run on pandas). The result equals
    ``frame_to_arrow(wf.transform_frame(arrow_to_frame(table)))``: same values and bits, same
    Arrow types, NaN written as null as the pandas path writes it.
    """
    import pyarrow as pa

    times: List[Any] = []  # (node, seconds), reported once the whole table is done
    cache = _host_outputs(wf, table, [wf.output_node], times)
    if cache is None:
        return None
    final = cache[id(wf.output_node)]
    arrays = []
    for c in wf.output_columns:
        arr = backend.host_column_to_arrow(final[c])
        want = wf.output_schema[c].dtype
        if want not in _NUMERIC or arr.type != pa.from_numpy_dtype(np.dtype(want)):
            return None
        arrays.append(arr)
    _report(wf, times, table.num_rows)
    return pa.table(arrays, names=list(wf.output_columns))


def fit_table(wf: Any, ids: List[str], table: Any, on_raw: Optional[Callable[[str, Any, Any], None]] = None
              ) -> Optional[Dict[str, Any]]:
    """The partials of the stat ops ``ids`` (node ids of ``wf``) on the rows of the Arrow ``table``
    (one partition of the fit), computed on host columns without pandas; None when the pandas path
    must run instead (``_fit_partition`` then converts the table).

    Taken when the ops before the targets run in chains whose kernels accept every column (as
    :func:`transform_table`), the columns read are numeric / bool of the bound dtypes, and every
    target's op gives :meth:`~tabprep.ops.StatOperator.fit_partial_columns` (Categorify on ints,
    Normalize). The partials equal ``fit_partial`` on the pandas frame of the table, bit for bit:
    the fit's pandas conversion (~0.1 s per 10M Criteo rows) and the pandas glue of the chain and of
    the partials (~1 s) are gone from the CPU fit. ``op_timer`` rows are those of the pandas path.
    ``on_raw(name, arrow column, host column)`` is called as each input column is read into a
    host column (the data profile's partial of it, while it is in the cache), also when None
    is returned later.
    """
    by_id = wf.nodes_by_id()
    targets = [by_id[i] for i in ids]
    if not targets or any(n.op.dependencies() or not _declares_host_partial(type(n.op)) for n in targets):
        return None
    parents = list({id(p): p for t in targets for p in t.parents}.values())
    times: List[Any] = []
    cache = _host_outputs(wf, table, parents, times, on_raw)
    if cache is None:
        return None
    timed, clock = wf.op_timer is not None, wf.op_clock
    out: Dict[str, Any] = {}
    fitted: List[Any] = []
    for nid, n in zip(ids, targets):
        merged = _merged([cache[id(p)] for p in n.parents])
        t = clock() if timed else 0.0
        part = n.op.fit_partial_columns(n.input_columns, {c: merged[c] for c in n.input_columns})
        if part is None:
            return None
        out[nid] = part
        if timed:
            fitted.append((nid, n, clock() - t))
    _report(wf, times, table.num_rows)
    for nid, n, sec in fitted:
        wf.op_timer(nid, n.op.label, "fit", sec, table.num_rows)
    return out


def _host_outputs(wf: Any, table: Any, wanted: List[Node], times: List[Any],
                  on_raw: Optional[Callable[[str, Any, Any], None]] = None) -> Optional[Dict[int, Dict[str, Any]]]:
    """Host columns (``{id(node): {column: HostColumn}}``) of the ``wanted`` nodes and what they need,
    computed from the Arrow ``table`` by the ops' column kernels; None when some op needed has no
    chain (or a kernel declines) or a column read is missing or not of its bound numeric dtype.
    ``times`` gets ``(node, seconds)`` of each chain op when the workflow has an ``op_timer``."""
    from ..schema import normalize_dtype

    if table.num_rows == 0:
        return None
    needed = upstream_ids(wanted)
    nodes = [n for n in wf.nodes if id(n) in needed]
    chains = plan_chains(nodes, needed, {id(n) for n in wanted})
    inner = {id(m) for chain in chains.values() for m in chain[1:]}  # computed with their chain's head
    if any(n.kind == "op" and id(n) not in chains and id(n) not in inner for n in nodes):
        return None
    fitted = wf.input_schema
    for c in dict.fromkeys(c for n in nodes if n.kind == "select" for c in n.columns):
        typ = str(table.schema.field(c).type) if c in table.column_names else None
        if typ not in _ARROW_NUMERIC or c not in fitted or normalize_dtype(typ) != normalize_dtype(fitted[c].dtype):
            return None
    timed, clock = wf.op_timer is not None, wf.op_clock
    raw: Dict[str, Any] = {}
    cache: Dict[int, Dict[str, Any]] = {}
    for n in nodes:
        if n.kind == "select":
            out = {}
            for c in n.columns:
                if c not in raw:
                    raw[c] = backend.host_column_from_arrow(table.column(c))
                    if on_raw is not None:
                        on_raw(c, table.column(c), raw[c])
                out[c] = raw[c]
        elif id(n) in inner:
            continue
        elif n.kind in ("concat", "drop"):
            merged = _merged([cache[id(p)] for p in n.parents])
            out = {c: merged[c] for c in n.output_columns}
        else:
            chain = chains[id(n)]
            inp = _merged([cache[id(p)] for p in n.parents])
            out = {}
            spent = [0.0] * len(chain)
            for c in n.input_columns:
                col = _unowned(inp[c])
                for i, m in enumerate(chain):
                    t = clock() if timed else 0.0
                    kernel = m.op.column_kernel(c)
                    col = kernel(col) if kernel is not None else None
                    if col is None:
                        return None
                    if timed:
                        spent[i] += clock() - t
                out[c] = col
            times.extend(zip(chain, spent))
            n = chain[-1]
        cache[id(n)] = {c: _unowned(col) for c, col in out.items()}
    return cache


def _report(wf: Any, times: List[Any], rows: int) -> None:
    """The chain ops' seconds to ``wf.op_timer`` (as the pandas path reports them), once a table is done."""
    if wf.op_timer is None:
        return
    for m, sec in times:
        wf.op_timer(wf.node_id(m), m.op.label, "transform", sec, rows)


def _merged(parts: List[Dict[str, Any]]) -> Dict[str, Any]:
    if len(parts) == 1:
        return parts[0]
    out: Dict[str, Any] = {}
    for p in parts:
        out.update(p)
    return out


def _unowned(col: Any) -> Any:
    """``col`` as a kernel input that must not be written (it may be read by another branch)."""
    if not col.owned:
        return col
    return backend.HostColumn(col.values, col.mask, owned=False, nullable=col.nullable)
