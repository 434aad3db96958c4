"""merlin-core's ``Node`` graph API on tabprep's :class:`~tabprep.ops.node.Node` (issue #29):
the attributes NVTabular 23.08 scripts read (``selector``, ``dependencies``, ``children``,
``column_mapping``...) and its graph surgery (``add_child``, ``add_parent``, ``add_dependency``,
``remove_child``, ``compute_schemas``, ``validate_schemas``). Mixed into ``Node``.

How merlin's graph maps onto tabprep's: merlin's ``a + b`` is a node whose *parent* is ``a`` and
whose *dependency* is ``b``; tabprep's ``+`` node has both as ``parents``. So on a ``+`` node
:attr:`dependencies` is its parents after the first, and :attr:`parents_with_dependencies` is the
same list in both. An op's dependencies are its argument nodes (``TargetEncoding(target_node)``),
and a selection of the raw argument columns it reads (``TargetEncoding("t")``), as merlin makes one.

Surgery keeps tabprep's invariants (a selection reads raw columns and has no parents; a ``-`` has
one parent; an op has at least one) and refuses, naming tabprep's spelling, what would break them.
Nodes whose schemas a workflow computed (fit / ``fit_schema`` / ``load``) are not edited: that
workflow holds the graph as it was.
"""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional

from ..schema import ColumnSelector, Schema

if TYPE_CHECKING:  # pragma: no cover
    from .node import Node

#: ``bind(node, schema)``: computes the schemas of the graph up to ``node``; the workflow layer
#: installs it (ops sit below the workflow, which they may not import)
_SCHEMA_BINDER: Optional[Callable[[Any, Schema], None]] = None


def set_schema_binder(binder: Callable[[Any, Schema], None]) -> None:
    """Install the function :meth:`MerlinNodeAPI.compute_schemas` uses (called by tabprep.workflow)."""
    global _SCHEMA_BINDER
    _SCHEMA_BINDER = binder


def note_children(node: Any) -> None:
    """Record ``node`` as a child of each of its parents and dependencies (once each)."""
    ups = node.parents + node.deps if node.deps else node.parents
    ref = None
    key = id(node)
    for up in ups:
        # ``_kids``: id -> weak reference of each child, in the order they were made or attached, so
        # that an abandoned ``node >> op`` does not keep its graph alive (not pickled: __getstate__).
        # A dict: a node with thousands of children (one branch per column) notes each in O(1); a
        # list scanned for duplicates made building such a graph quadratic (8,000 children: 7.7 s)
        kids = getattr(up, "_kids", None)
        if kids is None:
            kids = up._kids = {}
        else:
            known = kids.get(key)
            if known is not None and known() is node:
                continue
            kids.pop(key, None)  # a collected child whose id this node reuses: noted anew, last
        ref = ref or weakref.ref(node)
        kids[key] = ref
        if len(kids) >= 16 and not len(kids) & (len(kids) - 1):  # at powers of two: amortised pruning
            for dead in [k for k, r in kids.items() if r() is None]:
                del kids[dead]


def _is_upstream_of(node: Any, child: Any) -> bool:
    return any(u is node for u in child.upstream)


class MerlinNodeAPI:
    """merlin-core ``Node`` attributes and graph surgery (see the module docstring)."""

    __slots__ = ()

    def __getstate__(self: Any) -> Any:
        """Pickling / copying: the slots, less the weak references to the children (rebuilt by
        :meth:`__setstate__` from the parents' side)."""
        slots = {k: getattr(self, k) for k in type(self).__slots__
                 if k not in ("_kids", "__weakref__") and hasattr(self, k)}
        return (None, slots)

    def __setstate__(self: Any, state: Any) -> None:
        """Unpickling / ``copy.deepcopy``: restore the slots, then record the node as its parents'
        child (:attr:`children`), which ``__init__`` does for a node built in this process."""
        plain, slots = state if isinstance(state, tuple) else (state, None)
        for key, value in {**(plain or {}), **(slots or {})}.items():
            setattr(self, key, value)
        note_children(self)

    # -- read-only attributes ---------------------------------------------------------------
    @property
    def children(self: Any) -> List["Node"]:
        """The nodes that read this node's columns (built from it with ``>>``, ``+``, ``-``,
        ``node[...]``, as an op's argument, or attached by surgery), in the order they were made;
        merlin's ``node.children``. Nodes no longer referenced anywhere are gone from it."""
        live = [r() for r in (getattr(self, "_kids", None) or {}).values()]
        return [c for c in live if c is not None and _is_upstream_of(self, c)]

    @property
    def dependencies(self: Any) -> List["Node"]:
        """merlin's ``node.dependencies``: on a ``+`` node the branches after the first (merlin
        makes ``a + b``'s right operand a dependency); on an op node its argument nodes, then a
        selection of the raw argument columns it reads (``TargetEncoding("t")``: a selection of
        ``t``, made anew on each call); else ``[]``."""
        if self.kind == "concat":
            return list(self.parents[1:])
        if self.kind != "op":
            return []
        from .node import Node

        raw = self.raw_dependencies()
        return list(self.deps) + ([Node("select", columns=raw)] if raw else [])

    @property
    def parents_with_dependencies(self: Any) -> List["Node"]:
        """merlin's ``node.parents_with_dependencies``: parents, then dependencies."""
        if self.kind == "concat":
            return list(self.parents)
        return list(self.parents) + [d for d in self.dependencies]

    @property
    def grouped_parents_with_dependencies(self: Any) -> List["Node"]:
        """merlin's ``grouped_parents_with_dependencies`` (the same list: tabprep keeps column
        groups on the nodes, not in nested lists)."""
        return self.parents_with_dependencies

    @property
    def selector(self: Any) -> Optional[ColumnSelector]:
        """merlin's ``node.selector``: a selection's columns (its ``[["a", "b"]]`` groups as
        subgroups, its tags). Other nodes get one when a workflow computes their schemas (None
        before, as in merlin): an op's input columns (its column groups as subgroups: combo
        Categorify's ``[("a", "c")]``), a ``+`` or ``-`` node's output columns."""
        if self.kind == "select":
            multi = [g for g in self.groups if len(g) > 1]
            members = {c for g in multi for c in g}
            singled = {g[0] for g in self.groups if len(g) == 1}
            names = [c for c in self.columns if c not in members or c in singled]
            return ColumnSelector(names, subgroups=[list(g) for g in multi], tags=list(self.tags))
        if self.output_schema is None:
            return None
        if self.kind != "op":
            return ColumnSelector(self.output_columns)
        groups = [list(g) for g in getattr(self.op, "input_groups", ()) or () if len(g) > 1] \
            if self.op.supports_groups else []
        members = {c for g in groups for c in g}
        return ColumnSelector([c for c in self.input_columns if c not in members], subgroups=groups)

    @property
    def column_mapping(self: Any) -> Dict[str, List[str]]:
        """merlin's ``node.column_mapping``: ``{output column: [the columns it is computed from]}``.
        A selection, ``+`` or ``-`` maps each output column to itself. An op maps an output to the
        input column it is made from, after the argument columns named in its name
        (``TargetEncoding("t")`` on ``c``: ``{"TE_c_t": ["t", "c"]}``; ``JoinGroupby(cont_cols=["b"])``
        on ``a``: ``{"a_b_sum": ["b", "a"], "a_count": ["a"]}``); an output of several input columns
        (a combo or cross of a group) maps to those named in it."""
        outs = self.output_columns
        if self.kind != "op":
            return {c: [c] for c in outs}
        inputs = self.input_columns
        per_input: Dict[str, str] = {}
        try:
            pieces = [(c, list(self.op.output_column_names([c]))) for c in inputs]
            if [o for _, names in pieces for o in names] == outs:
                per_input = {o: c for c, names in pieces for o in names}
        except Exception:  # noqa: BLE001 - an op that cannot name one column's outputs alone (a group)
            per_input = {}
        args = list(self.op.dependencies())
        mapping: Dict[str, List[str]] = {}
        for o in outs:
            named = [a for a in args if _names(o, a)]
            if o in per_input:
                mapping[o] = named + [per_input[o]]
            else:
                sources = [c for c in inputs if _names(o, c)] or list(inputs)
                mapping[o] = named + [c for c in sources if c not in named]
        return mapping

    def exportable(self: Any, backend: Optional[str] = None) -> bool:
        """merlin's ``node.exportable(backend)``: always False (tabprep has no Triton export;
        serve a workflow with ``tabprep serve``)."""
        return False

    # -- surgery ----------------------------------------------------------------------------
    def add_parent(self: Any, parent: Any) -> None:
        """merlin's ``add_parent``: this node also reads ``parent``'s columns (a node, a column
        name, a list of names or a ``ColumnSelector``). On an op, the op transforms them too (as
        ``(a + parent) >> op``); on a ``+`` node, they join the merge."""
        from .node import as_node

        node = as_node(parent)
        _check_editable(self, node, "add_parent")
        if self.kind == "select":
            raise ValueError(f"add_parent: {self!r} selects raw input columns and cannot read another node; in "
                             f"tabprep select from a node with node[[...]] or merge with node_a + node_b")
        if self.kind == "drop":
            raise ValueError(f"add_parent: {self!r} (a '-') reads one node; merge first: (node_a + node_b) - [...]")
        _check_not_a_group(self, "add_parent")
        _attach(self, parents=tuple(self.parents) + (node,), deps=self.deps)

    def add_child(self: Any, child: Any) -> None:
        """merlin's ``add_child``: ``child`` (an op or ``+`` node) also reads this node's columns;
        the same as ``child.add_parent(self)``."""
        from .node import Node, as_node

        if not isinstance(child, Node):
            raise ValueError(f"add_child({child!r}): a column selection as a child reads raw columns, not this "
                             f"node's (NVTabular makes a node outside the graph, which changes nothing); "
                             f"in tabprep write node[[...]] for this node's columns")
        as_node(child).add_parent(self)

    def add_dependency(self: Any, dep: Any) -> None:
        """merlin's ``add_dependency``: on a ``+`` node, ``dep``'s columns join the merge (merlin's
        ``a + b`` is this call); on an op, ``dep`` is computed before the op and its columns are in
        the op's frame, read where the op names them as arguments (TargetEncoding's target), not
        transformed (as checked with nvtabular 23.08: the output is unchanged)."""
        from .node import as_node

        node = as_node(dep)
        _check_editable(self, node, "add_dependency")
        if self.kind == "concat":
            _check_not_a_group(self, "add_dependency")
            _attach(self, parents=tuple(self.parents) + (node,), deps=self.deps)
        elif self.kind == "op":
            _attach(self, parents=self.parents, deps=tuple(self.deps) + (node,))
        else:
            what = "a selection" if self.kind == "select" else "a '-'"
            raise ValueError(f"add_dependency: {self!r} is {what} node; NVTabular's result there is not a merge (a "
                             f"'-' keeps other columns). In tabprep write node_a + node_b to merge, node - other_node "
                             f"to drop its columns")

    def remove_child(self: Any, child: Any) -> None:
        """merlin's ``remove_child``: ``child`` no longer reads this node (a ``+`` node without this
        branch: ``remove_child`` of ``a`` from ``a + b`` leaves ``b``). ``ValueError`` where tabprep
        cannot follow NVTabular: an op left without input columns (NVTabular fails later with an
        IndexError), and this node being a ``+`` branch after the first or an op's argument (merlin
        calls those dependencies, which its ``remove_child`` leaves in place: the graph's output
        does not change)."""
        from .node import Node

        if not isinstance(child, Node) or not _is_upstream_of(self, child):
            return  # merlin: not a child, nothing to remove
        _check_editable(self, child, "remove_child")
        if child.kind == "concat" and child.parents[0] is not self or child.kind == "op" and \
                not any(p is self for p in child.parents):
            raise ValueError(f"remove_child: this node is a dependency of {child!r} (a '+' branch after the first, "
                             f"or an op's argument), which NVTabular's remove_child leaves in the graph; tabprep "
                             f"refuses rather than differ. Build the node again without it (node_a + node_c)")
        parents = tuple(p for p in child.parents if p is not self)
        if not parents:
            raise ValueError(f"remove_child: {child!r} would have no input columns left (NVTabular fails later "
                             f"with IndexError); give it another parent first (child.add_parent(...))")
        _attach(child, parents=parents, deps=child.deps)

    # -- schemas ----------------------------------------------------------------------------
    def compute_schemas(self: Any, root_schema: Schema, preserve_dtypes: bool = False) -> None:
        """merlin's ``compute_schemas(root_schema)``: sets :attr:`input_schema` /
        :attr:`output_schema` from the input data's schema ``root_schema``, as ``fit_schema`` of a
        workflow of this node does (tabprep computes every node above it too; merlin needs them
        computed first). A column missing from ``root_schema`` raises tabprep's ``KeyError`` naming
        it. Needs ``tabprep.workflow`` imported (``tp.Workflow`` used once does it; else a
        ``RuntimeError`` says so). ``preserve_dtypes`` is accepted and has no effect (tabprep's dtypes come from the data)."""
        if _SCHEMA_BINDER is None:
            # ops sit below the workflow and may not import it (tests/test_layers.py); the workflow
            # installs the binder when it is imported, which `import tabprep` alone does not do
            raise RuntimeError("node.compute_schemas needs tabprep's workflow layer, not imported yet: "
                               "import tabprep.workflow first (or use tp.Workflow(node).fit_schema(root_schema))")
        _SCHEMA_BINDER(self, root_schema)

    def validate_schemas(self: Any, root_schema: Schema, strict_dtypes: bool = False) -> None:
        """merlin's ``validate_schemas``: ``ValueError`` when a column of :attr:`input_schema` is
        neither in ``root_schema`` nor output by a parent or dependency (merlin's message), or, with
        ``strict_dtypes``, comes with another dtype. Needs :meth:`compute_schemas` first."""
        if self.input_schema is None:
            raise RuntimeError(f"validate_schemas: the schemas of {self!r} are not computed; call "
                               f"node.compute_schemas(root_schema) (or fit a workflow) first")
        label = self.op.label if self.kind == "op" else {"select": "SelectionOp", "concat": "ConcatColumns",
                                                           "drop": "SubtractionOp"}[self.kind]
        sources: Dict[str, Any] = {c.name: c for c in root_schema}
        for up in self.upstream:
            if up.output_schema is not None:
                sources.update({c.name: c for c in up.output_schema})
        for col in self.input_schema:
            found = sources.get(col.name)
            if found is None:
                raise ValueError(f"Missing column '{col.name}' at the input to '{label}'.")
            if strict_dtypes and str(found.dtype) != str(col.dtype):
                raise ValueError(f"Mismatched dtypes for column '{col.name}' provided to '{label}': ancestor nodes "
                                 f"provided dtype '{found.dtype}', expected dtype '{col.dtype}'.")


def _names(output: str, column: str) -> bool:
    """Whether ``column`` is a ``_``-separated part of the output name ``output`` (``t`` in ``TE_c_t``)."""
    return f"_{column}_" in f"_{output}_"


def _check_not_a_group(node: Any, call: str) -> None:
    if node.kind == "concat" and node.groups:
        raise ValueError(f"{call}: {node!r} is one column group ([node_a, node_b] in a '+'), whose columns were fixed "
                         f"when it was written; write the group again with the new columns")


def _check_editable(node: Any, other: Any, call: str) -> None:
    for n in (node, other):
        if getattr(n, "_schemas", None) is not None:
            raise ValueError(f"{call}: the schemas of {n!r} were computed by a workflow (fit / fit_schema / "
                             f"Workflow.load), which holds the graph as it was; edit the graph before "
                             f"Workflow(...), or build a new one with >>, + and - and a new Workflow")


def _attach(node: Any, parents: tuple, deps: tuple) -> None:
    """Give ``node`` new parents / dependencies, checked as ``>>`` checks them (cycles, argument
    columns among the op's inputs), then forget the cached columns downstream."""
    from .node import _groups_reaching, attach_dependencies, iter_nodes, Node

    old = (node.parents, node.deps, node._out, getattr(node.op, "input_groups", None))
    node.parents, node.deps = tuple(parents), ()
    try:
        iter_nodes(node)  # a cycle: the new parent reads this node
        if deps:
            node._out = None
            attach_dependencies(node, deps)
            iter_nodes(node)
        if node.kind == "op" and node.op.supports_groups:
            merged = node.parents[0] if len(node.parents) == 1 else Node("concat", parents=node.parents)
            node.op.input_groups = [list(g) for g in _groups_reaching(merged)]
    except Exception:
        node.parents, node.deps, node._out = old[0], old[1], old[2]
        if old[3] is not None:
            node.op.input_groups = old[3]
        raise
    note_children(node)
    _forget_columns(node)
    node.output_columns  # noqa: B018 - resolve now: a duplicate or missing column fails at the call


def _forget_columns(node: Any) -> None:
    """Clear the cached output columns of ``node`` and every node below it."""
    stack, seen = [node], set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        n._out = None
        stack.extend(n.children)
