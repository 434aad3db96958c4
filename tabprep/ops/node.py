"""The column graph: selections, op chains (``>>``), merges (``+``) and drops (``-``).

Nodes are immutable once built and only ever point at nodes that already exist, so a
cycle cannot be expressed (:func:`iter_nodes` still refuses one, e.g. from an edited graph).
Output column order is deterministic: a merge lists its parents' columns in order, and an op
lists its outputs in the order of its inputs. A column that several parents of a merge output
comes from the last of them, at its place there (NVTabular 23.08's rule; the workflow warns when
the two compute it differently, see :func:`shadowed_columns`).

An op node may also have *dependencies* (``deps``): nodes computed by ops that the op takes as
an argument naming columns (NVTabular's ``TargetEncoding(target_node)``,
``JoinGroupby(cont_cols=node)``, ``DifferenceLag(partition_cols=[node])``). They are computed
before the op, which reads their output columns under the nodes' output names beside its
inputs; they are not outputs of the op (merlin.dag's ``Node.dependencies``).
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from .._warn import warn_difference
from ..schema import ColumnSelector, Schema, selected_by_tags
from .base import Operator
from .node_merlin import MerlinNodeAPI, note_children

ColumnLike = Union[str, Sequence[Any], "Node", Operator]


class Node(MerlinNodeAPI):
    """One vertex of a workflow graph.

    kinds:
      * ``"select"``: raw input columns (``columns``; ``groups``: ``[["a", "b"]]`` column groups);
      * ``"op"``: applies ``op`` to the merged columns of ``parents``;
      * ``"concat"``: merges the columns of ``parents`` side by side;
      * ``"drop"``: the columns of its one parent less ``columns``.

    ``deps`` (op nodes only): nodes whose output columns the op reads beside its inputs (see the
    module docstring); :attr:`upstream` is ``parents + deps``.
    """

    __slots__ = ("kind", "op", "parents", "columns", "groups", "_out", "tags", "deps", "_schemas", "_kids", "__weakref__")

    def __init__(self, kind: str, parents: Sequence["Node"] = (), op: Optional[Operator] = None,
                 columns: Sequence[str] = (), groups: Sequence[Tuple[str, ...]] = (),
                 tags: Sequence[str] = (), deps: Sequence["Node"] = ()) -> None:
        self.kind = kind
        self.deps: Tuple[Node, ...] = tuple(deps)
        #: a "select" by tag (ColumnSelector(tags=...)): the schema's columns carrying any of these
        #: tags join ``columns`` when the workflow is bound to a schema (fit / bind_schema)
        self.tags: Tuple[str, ...] = tuple(tags)
        self.op = op
        self.parents: Tuple[Node, ...] = tuple(parents)
        self.columns: Tuple[str, ...] = tuple(columns)
        self.groups: Tuple[Tuple[str, ...], ...] = tuple(tuple(g) for g in groups)
        self._out: Optional[List[str]] = None
        #: ``(input schema, output schema)`` set by the last workflow that computed its schemas with
        #: this node (:meth:`tabprep.Workflow.fit` / ``fit_schema`` / ``load``); None before
        self._schemas: Optional[Tuple[Schema, Schema]] = None
        note_children(self)  # merlin's node.children (node_merlin.py)

    # -- schemas (NVTabular's node.input_schema / node.output_schema) ------------------------
    @property
    def input_schema(self) -> Optional[Schema]:
        """Schema of the columns this node receives (an op: its parents' merged columns and the
        argument columns it reads, e.g. TargetEncoding's target; a selection: the selected input
        columns), as NVTabular sets it when a Workflow computes its schemas. A node may sit in several
        workflows: it holds the schemas of the most recent workflow that computed schemas with it
        (fit, ``fit_schema`` / ``bind_schema``, ``Workflow.load`` builds new nodes). None before."""
        schemas = getattr(self, "_schemas", None)   # a node unpickled from before this slot existed
        return None if schemas is None else schemas[0]

    @property
    def output_schema(self) -> Optional[Schema]:
        """Schema of the columns this node gives (see :attr:`input_schema` for when it is set and
        which workflow's it is); None before a workflow computed schemas with this node."""
        schemas = getattr(self, "_schemas", None)
        return None if schemas is None else schemas[1]

    # -- sugar ----------------------------------------------------------------------
    def __rshift__(self, other: Any) -> "Node":
        if isinstance(other, type) and issubclass(other, Operator):
            other = other()
        if callable(other) and not isinstance(other, Operator):
            from .lambda_op import LambdaOp

            other = LambdaOp(other)
        if not isinstance(other, Operator):
            raise TypeError(f"'>>' expects an op (e.g. ops.Categorify()), got {type(other).__name__}: {other!r}")
        if other._bound:
            raise ValueError(f"this {other.label} instance is already used in a graph; create a new op for each chain "
                             f"(ops keep learned statistics per instance)")
        other._bound = True
        if other.supports_groups:
            other.input_groups = [list(g) for g in _groups_reaching(self)]
        # nodes the op's constructor took as arguments (column_names_arg): the node's dependencies
        deps = other.__dict__.pop("_dependency_nodes", ())
        return attach_dependencies(Node("op", parents=[self], op=other), deps)

    def __add__(self, other: Any) -> "Node":
        if _is_empty_selection(other):  # NVTabular: node + [] is the node
            return self
        return Node("concat", parents=[self, _merge_operand(other)])

    def __radd__(self, other: Any) -> "Node":
        if _is_empty_selection(other):
            return self
        return Node("concat", parents=[_merge_operand(other), self])

    def __getitem__(self, columns: Any) -> "Node":
        """NVTabular's ``node["a"]`` / ``node[["a", "b"]]``: the node's output columns ``columns``
        in the order asked for (NVTabular's), a node of its own: a ``-`` of the others, or, for
        another order, a merge of one-column ``-`` nodes in that order (``workflow._picks_columns``)."""
        wanted = list(dict.fromkeys([columns] if isinstance(columns, str) else _flatten_names(_as_names(columns))))
        have = self.output_columns
        missing = [c for c in wanted if c not in have]
        if missing:
            raise KeyError(f"{missing} not among this node's output columns {have}")
        if [c for c in have if c in wanted] == wanted:
            return Node("drop", parents=[self], columns=[c for c in have if c not in wanted])
        return Node("concat", parents=[Node("drop", parents=[self], columns=[c for c in have if c != w]) for w in wanted])

    def resolve_tags(self, schema: Schema) -> None:
        """Fix a tag selection's columns on ``schema`` (see :attr:`tags`)."""
        if self.kind == "select" and self.tags:
            extra = [c.name for c in schema if selected_by_tags(c, self.tags) and c.name not in self.columns]
            self.columns = tuple(self.columns) + tuple(extra)
            self.tags = ()
            self._out = None

    def __sub__(self, other: Any) -> "Node":
        drop = _flatten_names(other if not isinstance(other, Node) else other.output_columns)
        return Node("drop", parents=[self], columns=drop)

    def __rsub__(self, other: Any) -> "Node":
        # ["a", "b"] - node: the listed columns less the node's output columns
        return as_node(other) - self

    # -- columns ---------------------------------------------------------------------
    def concat_sources(self) -> List[List[str]]:
        """A ``"concat"`` node's columns taken from each parent, in parent order: a column output by
        several parents comes from the last of them, at its place there (NVTabular 23.08's rule:
        merlin-core's ``Schema.__add__``, applied branch by branch), so an earlier parent's copy is
        not read. Their concatenation is the node's :attr:`output_columns`."""
        later: set = set()
        takes: List[List[str]] = []
        for p in reversed(self.parents):
            cols = p.output_columns
            takes.append([c for c in cols if c not in later])
            later.update(cols)
        return takes[::-1]

    @property
    def upstream(self) -> Tuple["Node", ...]:
        """The nodes computed before this one: its parents, then its dependencies."""
        return self.parents + self.deps if self.deps else self.parents

    def dependency_sources(self) -> Dict[str, "Node"]:
        """``{column: dependency node}`` of the op's argument columns (``op.dependencies()``) that
        a dependency node computes; the op's other argument columns are read from the raw input."""
        if not self.deps:
            return {}
        wanted = set(self.op.dependencies())
        return {c: d for d in self.deps for c in d.output_columns if c in wanted}

    def raw_dependencies(self) -> List[str]:
        """The op's argument columns read from the raw input (those no dependency node computes)."""
        if self.kind != "op":
            return []
        computed = self.dependency_sources()
        return [c for c in self.op.dependencies() if c not in computed]

    @property
    def input_columns(self) -> List[str]:
        """Merged output columns of the parents (what an op node receives)."""
        return _merge([p.output_columns for p in self.parents])

    @property
    def output_columns(self) -> List[str]:
        if self._out is None:
            if self.kind == "select":
                self._out = list(self.columns)
            elif self.kind == "op":
                self._out = list(self.op.output_column_names(self.input_columns))
            elif self.kind == "concat":
                self._out = _dedupe(c for taken in self.concat_sources() for c in taken)
            elif self.kind == "drop":
                dropped = set(self.columns)
                self._out = [c for c in self.parents[0].output_columns if c not in dropped]
            else:  # pragma: no cover - constructor guards kinds
                raise ValueError(self.kind)
        return list(self._out)

    @property
    def graph(self) -> Any:
        """The graph up to this node as a ``graphviz.Digraph`` (NVTabular's ``node.graph``, which
        notebooks display): one vertex per selection, op, ``+`` and ``-``, and the output columns.
        Needs the ``graphviz`` Python package (imported here only); rendering it to an image needs
        Graphviz's ``dot`` program, ``.source`` does not."""
        try:
            import graphviz
        except ImportError as exc:  # pragma: no cover - graphviz is a dev dependency
            raise ImportError("node.graph needs the graphviz package: pip install graphviz") from exc
        dot = graphviz.Digraph()
        ids: Dict[int, str] = {}

        def visit(node: "Node") -> str:
            if id(node) in ids:  # a node feeding several others is drawn once
                return ids[id(node)]
            name = ids[id(node)] = str(len(ids))
            if node.kind == "select":
                label = str(list(node.columns) or list(node.tags))
            elif node.kind == "op":
                label = str(node.op.label)
            elif node.kind == "concat":
                label = "+"
            else:
                label = f"- {list(node.columns)}"
            dot.node(name, label)
            for parent in node.parents:
                dot.edge(visit(parent), name)
            for dep in node.deps:  # an op's argument: dashed, as it is not among the op's inputs
                dot.edge(visit(dep), name, style="dashed")
            return name

        dot.node("output", f"output cols={self.output_columns}")
        dot.edge(visit(self), "output")
        return dot

    def __repr__(self) -> str:
        if self.kind == "select":
            return f"Select({list(self.columns)})"
        if self.kind == "op":
            return f"{self.parents[0]!r} >> {self.op!r}"
        if self.kind == "concat":
            return " + ".join(f"({p!r})" for p in self.parents)
        return f"({self.parents[0]!r}) - {list(self.columns)}"


def as_node(obj: Any) -> Node:
    """Turn a column name, a list of names / nodes / ``[name, name]`` groups, or a node into a node."""
    if isinstance(obj, Node):
        return obj
    if isinstance(obj, str):
        return Node("select", columns=[obj])
    if isinstance(obj, ColumnSelector):
        return Node("select", columns=obj.all_names, groups=[tuple(g.all_names) for g in obj.subgroups],
                    tags=obj.tags)
    obj = _as_names(obj)
    if isinstance(obj, Operator):
        raise TypeError(f"an op ({obj.label}) needs input columns: write [\"col\", ...] >> {obj.label}(...). "
                        f"Note that '+' binds tighter than '>>': write (cols >> Op()) + other, with parentheses")
    if isinstance(obj, (list, tuple)):
        # consecutive names (and [name, name] groups) form one selection; nodes keep their place,
        # so the output order is the order written
        parts: List[Node] = []
        names: List[str] = []
        groups: List[Tuple[str, ...]] = []

        alone: List[str] = []

        def flush() -> None:
            if names:
                # a name written alone that is also in a group keeps its own output next to the
                # group's (NVTabular's ColumnSelector.grouped_names): recorded as a 1-name group
                grouped = {c for g in groups for c in g}
                singles = [(c,) for c in _dedupe(alone) if c in grouped]
                parts.append(Node("select", columns=_dedupe(names), groups=singles + list(groups)))
                names.clear()
                groups.clear()
                alone.clear()

        for item in obj:
            if isinstance(item, str):
                names.append(item)
                alone.append(item)
            elif isinstance(item, (Node, ColumnSelector)):
                flush()
                parts.append(as_node(item))
            elif isinstance(item, (list, tuple)) and all(isinstance(x, str) for x in item):
                names.extend(item)
                groups.append(tuple(item))
            elif isinstance(item, (list, tuple)) and item and all(isinstance(x, (str, Node)) for x in item):
                if any(isinstance(x, Node) and _computed(x) for x in item):
                    # a group holding a node computed by ops: a group node over the computed columns
                    flush()
                    parts.append(group_node(item))
                    continue
                # a group of nodes of raw columns: a group of their raw columns
                group = [n for x in item for n in ([x] if isinstance(x, str) else raw_column_names(x, "a column group"))]
                names.extend(group)
                groups.append(tuple(group))
            else:
                raise TypeError(f"cannot use {item!r} as a column selection; use column names, lists of names or nodes")
        flush()
        if not parts:
            raise ValueError("empty column selection")
        node = parts[0]
        for p in parts[1:]:
            node = Node("concat", parents=[node, p])
        return node
    raise TypeError(f"cannot use {type(obj).__name__} {obj!r} as a column selection")


def _as_names(obj: Any) -> Any:
    """A pandas ``Index`` / numpy array of names as a list (NVTabular takes ``df.columns`` as a selection)."""
    if not isinstance(obj, (str, list, tuple, Node, ColumnSelector)) and hasattr(obj, "tolist"):
        return list(obj.tolist())
    return obj


def _is_empty_selection(obj: Any) -> bool:
    obj = _as_names(obj)
    return isinstance(obj, (list, tuple)) and len(obj) == 0 or (isinstance(obj, ColumnSelector) and not obj)


def raw_column_names(obj: Any, what: str = "an op's argument", owner: Optional[Operator] = None) -> List[str]:
    """Column names of ``obj`` used where an op takes columns beside its inputs (NVTabular lets
    nodes stand for them: ``TargetEncoding(target_node)``, ``JoinGroupby(cont_cols=node)``): a name,
    a :class:`ColumnSelector`, a node, or a list of those.

    A node of raw columns (selections, merges and drops of them) stands for its names. A node whose
    columns an op computed gives its output names and, with ``owner`` (the op whose argument it
    is), is recorded on it: the op's node gets it as a dependency, computed first (see
    :func:`attach_dependencies`). Without ``owner`` (a column group of nodes) such a node is
    refused with ``TypeError``, as is a selection by tag (no names before the schema is known)."""
    obj = _as_names(obj)
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, ColumnSelector):
        if obj.tags:
            raise TypeError(f"{what}: a ColumnSelector by tags cannot name columns before the data's schema "
                            f"is known; give the column names")
        return obj.all_names
    if isinstance(obj, Node):
        upstream = iter_nodes(obj)
        if any(n.kind == "select" and n.tags for n in upstream):
            raise TypeError(f"{what}: the node {obj!r} selects columns by tag, which names no columns before the "
                            f"data's schema is known; give the column names (or a node selecting them by name)")
        if any(n.kind == "op" for n in upstream):
            if owner is None:
                raise TypeError(f"{what}: the node {obj!r} holds columns computed by an op, but here columns are "
                                f"read as they are in the data; pass a selection of raw columns (e.g. the names "
                                f"{obj.output_columns}), or compute the column in a first workflow "
                                f"(wf1.transform(ds)) and name it in the second")
            found = owner.__dict__.setdefault("_dependency_nodes", [])
            if not any(d is obj for d in found):
                found.append(obj)
        return obj.output_columns
    if isinstance(obj, (list, tuple)):
        return [n for x in obj for n in raw_column_names(x, what, owner)]
    raise TypeError(f"{what}: cannot use {type(obj).__name__} {obj!r} as column names")


def attach_dependencies(node: Node, deps: Sequence[Node]) -> Node:
    """Make ``deps`` the dependencies of the op node ``node`` (see :class:`Node`); returns ``node``.

    ``ValueError`` when the graph cannot mean one thing: a dependency column that is also one of the
    op's input columns (NVTabular would silently give the op the dependency's values in place of its
    input's), two dependencies computing the same column, or a cycle (the node upstream of its own
    dependency)."""
    deps = tuple(deps)
    if not deps:
        return node
    label = node.op.label
    wanted = set(node.op.dependencies())
    seen: Dict[str, Node] = {}
    inputs = set(node.input_columns)
    for d in deps:
        if node is d or id(node) in upstream_ids([d]):
            raise ValueError(f"{label}: its argument node depends on the op's own node (a cycle); an op cannot "
                             f"read its own output")
        for c in d.output_columns:
            if c not in wanted:
                continue
            if c in inputs:
                raise ValueError(f"{label}: its argument node computes the column {c!r}, which is also one of the "
                                 f"columns the op transforms ({node.input_columns}); the op's frame cannot hold both. "
                                 f"Rename the argument's column (node >> ops.Rename(postfix='_target'))")
            if c in seen and seen[c] is not d:
                raise ValueError(f"{label}: two argument nodes compute the column {c!r}; rename one of them "
                                 f"(>> ops.Rename(postfix='_2'))")
            seen[c] = d
    node.deps = deps
    note_children(node)
    return node


def _computed(node: Node) -> bool:
    """Whether an op computes any of ``node``'s columns (else they are raw columns)."""
    return any(n.kind == "op" for n in iter_nodes(node))


def _merge_operand(other: Any) -> Node:
    """The node for the right (or left) operand of ``node + other``. As merlin-core's
    ``Node.__add__`` (``Node.construct_from`` of a list that is not all names becomes a
    ``GroupingOp``, whose selector is one subgroup of its columns), a list holding a node or a
    ``ColumnSelector`` is one column group of all its output columns: NVTabular's
    ``country + "user" + [country + "user"] >> Categorify(encode_type="combo")`` crosses
    ``geo_country`` and ``user``. A list of names only stays a plain selection."""
    obj = _as_names(other)
    if isinstance(obj, (list, tuple)) and any(isinstance(x, (Node, ColumnSelector)) for x in obj):
        return group_node(obj)
    return as_node(other)


def group_node(items: Sequence[Any]) -> Node:
    """One column group of the output columns of ``items`` (names and nodes, possibly computed
    by ops): a ``"concat"`` node whose ``groups`` hold that one group; ops with
    ``supports_groups`` (Categorify, TargetEncoding, JoinGroupby, HashedCross...) downstream take
    it as a group of their input columns."""
    if not any(isinstance(x, Node) and _computed(x) for x in items):
        # raw columns only: a selection with that group (as [["a", "b"]]), which a spec can write
        names = _dedupe(raw_column_names(list(items), "a column group"))
        return Node("select", columns=names, groups=[tuple(names)])
    inner = as_node(list(items))
    return Node("concat", parents=[inner], groups=[tuple(inner.output_columns)])


def _groups_reaching(node: Node) -> List[Tuple[str, ...]]:
    """The column groups an op applied to ``node`` receives, as a selection's ``groups``: the
    groups of selections and of group nodes (see :func:`group_node`) reached through merges and
    drops, after a 1-name group for each column that also arrives alone (NVTabular's
    ``grouped_names``: ``country + [country + "user"]`` encodes ``geo_country`` alone and in the
    group). Groups do not pass through ops (whose outputs may be renamed)."""
    alone, groups = _grouping(node)
    members = {c for g in groups for c in g}
    return [(c,) for c in _dedupe(alone) if c in members] + groups


def _grouping(node: Node) -> Tuple[List[str], List[Tuple[str, ...]]]:
    """(columns arriving alone, multi-column groups) of ``node``'s output (see :func:`_groups_reaching`)."""
    if node.kind == "op":
        return node.output_columns, []
    if node.kind == "select":
        multi = [g for g in node.groups if len(g) > 1]
        members = {c for g in multi for c in g}
        singled = {g[0] for g in node.groups if len(g) == 1}
        return [c for c in node.columns if c not in members or c in singled], multi
    if node.kind == "concat" and node.groups:  # a group node: its columns come as the group only
        multi = [g for g in node.groups if len(g) > 1]
        return [g[0] for g in node.groups if len(g) == 1], multi
    alone: List[str] = []
    groups: List[Tuple[str, ...]] = []
    for p in node.parents:
        a, g = _grouping(p)
        alone.extend(a)
        groups.extend(g)
    if node.kind == "drop":
        dropped = set(node.columns)
        alone = [c for c in alone if c not in dropped]
    return alone, groups


def _flatten_names(obj: Any) -> List[str]:
    if isinstance(obj, str):
        return [obj]
    out: List[str] = []
    for item in obj:
        out.extend(_flatten_names(item))
    return out


def _dedupe(names: Iterable[str]) -> List[str]:
    seen = set()
    out = []
    for n in names:
        if n not in seen:
            seen.add(n)
            out.append(n)
    return out


def _merge(lists: List[List[str]]) -> List[str]:
    out: List[str] = []
    seen = set()
    for cols in lists:
        for c in cols:
            if c not in seen:
                seen.add(c)
                out.append(c)
    return out


def _carrier(node: Node, column: str) -> Node:
    """The first node above ``node`` (itself included) that is not a ``+`` merge, along the
    branch that ``node``'s ``column`` comes from."""
    while node.kind == "concat":
        node = next(p for p, taken in zip(node.parents, node.concat_sources()) if column in taken)
    return node


def _origin(node: Node, column: str) -> Tuple[str, Any]:
    """Where ``node``'s ``column`` is computed: ``("raw", column)`` for a raw column passed along
    (same values whichever branch carries it), else ``("op", id of the op node)``."""
    while True:
        node = _carrier(node, column)
        if node.kind == "select":
            return ("raw", column)
        if node.kind == "op":
            return ("op", id(node))
        node = node.parents[0]  # a drop passes its parent's column along


def describe_branch(node: Node) -> str:
    """``['movieId'] >> JoinExternal >> Categorify``: a branch's chain of ops from its selection
    (for messages)."""
    labels: List[str] = []
    while node.kind in ("op", "drop") and len(node.parents) == 1:
        if node.kind == "op":
            labels.append(node.op.label)
        node = node.parents[0]
    head = repr(list(node.columns)) if node.kind == "select" else "(" + " + ".join(
        describe_branch(p) for p in node.parents) + ")"
    return " >> ".join([head] + labels[::-1])


def shadowed_columns(output: Node) -> List[Tuple[str, Node, Node]]:
    """``(column, earlier branch, later branch)`` for every column that two branches of a ``+``
    merge compute differently (a raw column selected twice is not listed); each branch is the node
    that carries the column into the merge. NVTabular 23.08, and tabprep, keep the later branch's
    values; the caller warns."""
    found: List[Tuple[str, Node, Node]] = []
    for n in iter_nodes(output):
        if n.kind != "concat" or len(n.parents) < 2:
            continue
        takes = n.concat_sources()
        for i, p in enumerate(n.parents[:-1]):
            kept = set(takes[i])
            for c in [c for c in p.output_columns if c not in kept]:
                winner = next(q for q, t in zip(n.parents[i + 1:], takes[i + 1:]) if c in t)
                if _origin(p, c) != _origin(winner, c):
                    found.append((c, _carrier(p, c), _carrier(winner, c)))
    return found


def warn_shadowed(output: Node) -> None:
    """Warn about each column that two branches of a ``+`` compute differently: the later branch's
    values are kept, as NVTabular 23.08 does silently (docs/migration.md, notebook 02). Called when
    a workflow is built, and again when a tag selection is resolved on the data's schema."""
    for col, earlier, later in shadowed_columns(output):
        warn_difference(
            f"column {col!r} is output by two branches of a '+' merge that compute it differently, "
            f"{describe_branch(earlier)} and later {describe_branch(later)}: as in NVTabular 23.08, the "
            f"later branch's values are kept (its schema merged over the earlier one's). To keep the other, "
            f"leave {col!r} out of the later branch (node[[...]] or node - [{col!r}]) or rename one of "
            f"them (>> ops.Rename(postfix='_x'))", stacklevel=3, at_build=True)


def iter_nodes(output: Node) -> List[Node]:
    """All nodes reachable from ``output`` through parents and dependencies, each after the nodes it
    reads (deterministic order; a graph without dependencies keeps its parents-first order).
    ``ValueError`` on a cycle."""
    order: List[Node] = []
    seen = set()
    active = set()
    stack: List[Tuple[Node, int]] = [(output, 0)]  # (node, next upstream index): no recursion limit
    while stack:
        n, i = stack.pop()
        if i == 0:
            if id(n) in seen:
                continue
            if id(n) in active:
                raise ValueError(f"the graph has a cycle through {n!r}: a node is among its own inputs or "
                                 f"dependencies")
            active.add(id(n))
        up = n.upstream
        if i < len(up):
            stack.append((n, i + 1))
            if id(up[i]) not in seen:  # an active one (a cycle) is refused when popped, just below
                stack.append((up[i], 0))
            continue
        active.discard(id(n))
        seen.add(id(n))
        order.append(n)
    return order


def upstream_ids(targets: Iterable[Node]) -> set:
    """``id()`` of ``targets`` and of every node they depend on (what a run up to them computes)."""
    needed: set = set()
    stack = list(targets)
    while stack:
        n = stack.pop()
        if id(n) not in needed:
            needed.add(id(n))
            stack.extend(n.upstream)
    return needed


#: Subgraph names, by node id (a Node has fixed slots; the names live here, weakly keyed by id)
_SUBGRAPHS: Dict[int, "tuple[str, Node]"] = {}


def Subgraph(name: str, selection: Any) -> Node:  # noqa: N802 - NVTabular's name (merlin.dag.ops.subgraph)
    """NVTabular's ``Subgraph(name, cols >> ops...)``: names a part of the graph, so that
    ``workflow.get_subworkflow(name)`` returns it as a workflow of its own (sharing the fitted ops).
    Returns the node itself; use it in the graph as any node."""
    node = as_node(selection)
    _SUBGRAPHS[id(node)] = (str(name), node)
    return node
