"""NVTabular 23.08's ``Workflow`` calls that tabprep's own API spells otherwise or lacked
(issue #29): ``fit_schema``, ``input_dtypes``, ``remove_inputs``, ``get_subworkflow`` (with
:func:`Subgraph`). Mixed into :class:`tabprep.Workflow`."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from ..ops.node import _SUBGRAPHS, Node, Subgraph, iter_nodes  # noqa: F401 - Subgraph re-exported
from ..ops.node_merlin import set_schema_binder
from ..schema import Schema

class WorkflowCompat:
    """NVTabular's spellings on :class:`tabprep.Workflow`."""

    def fit_schema(self, input_schema: Schema) -> "WorkflowCompat":
        """NVTabular's name of :meth:`bind_schema`: compute every node's schema from ``input_schema``
        (no data read). Returns the workflow."""
        return self.bind_schema(input_schema)  # type: ignore[attr-defined]

    @property
    def input_dtypes(self) -> Dict[str, str]:
        """``{input column: dtype}`` of the data the workflow was fitted on (or bound to)."""
        if self.input_schema is None:  # type: ignore[attr-defined]
            raise RuntimeError("the input dtypes are known once the workflow is fitted (workflow.fit(dataset)) or "
                               "bound (workflow.fit_schema(schema))")
        sch = self.input_schema  # type: ignore[attr-defined]
        return {c: sch[c].dtype for c in self.input_columns if c in sch}  # type: ignore[attr-defined]

    @property
    def subworkflows(self) -> List[str]:
        """Names of the :func:`Subgraph` parts of this workflow (NVTabular's)."""
        return [_SUBGRAPHS[id(n)][0] for n in self.nodes  # type: ignore[attr-defined]
                if id(n) in _SUBGRAPHS and _SUBGRAPHS[id(n)][1] is n]

    def clear_stats(self) -> None:
        """Forget every op's fitted statistics (NVTabular's ``clear_stats``); fit again after."""
        for n in self.stat_nodes:  # type: ignore[attr-defined]
            n.op.clear()
        self._output_schema = None

    def get_subworkflow(self, name: str) -> Any:
        """The part of the graph named with :func:`Subgraph` as a workflow of its own, sharing this
        workflow's ops (fitted statistics included) and bound to its input schema when known."""
        for n in self.nodes:  # type: ignore[attr-defined]
            entry = _SUBGRAPHS.get(id(n))
            if entry is not None and entry[1] is n and entry[0] == name:
                sub = type(self)(n)
                if self.input_schema is not None:  # type: ignore[attr-defined]
                    sub._bind(self.input_schema)  # type: ignore[attr-defined]
                return sub
        names = sorted(e[0] for i, e in _SUBGRAPHS.items() if any(e[1] is n for n in self.nodes))  # type: ignore
        raise KeyError(f"no Subgraph named {name!r} in this workflow; its subgraphs: {names}")

    def remove_inputs(self, input_cols: Sequence[str]) -> "WorkflowCompat":
        """NVTabular's ``remove_inputs``: the workflow without the raw input columns ``input_cols``
        (e.g. the label, for serving): they leave every selection, and an op left without input
        columns leaves the graph. The ops (and their fitted statistics) are kept. Changes the
        workflow in place and returns it. An op that reads a removed column as a dependency
        (TargetEncoding's target) keeps reading it."""
        drop = {input_cols} if isinstance(input_cols, str) else set(input_cols)
        unknown = sorted(drop - set(self.input_columns))  # type: ignore[attr-defined]
        if unknown:
            raise KeyError(f"{unknown} are not input columns of this workflow: {self.input_columns}")  # type: ignore
        new: Dict[int, Optional[Node]] = {}
        for n in self.nodes:  # type: ignore[attr-defined]
            new[id(n)] = _without(n, drop, new)
        out = new[id(self.output_node)]  # type: ignore[attr-defined]
        if out is None:
            raise ValueError(f"removing {sorted(drop)} leaves the workflow without output columns")
        schema = self.input_schema  # type: ignore[attr-defined]
        self.output_node = out
        self.nodes = iter_nodes(out)
        self._ids = {id(n): f"n{i}" for i, n in enumerate(self.nodes)}
        self._output_schema = None
        self._node_schemas = {}
        self.input_schema = None
        if schema is not None:
            self._bind(Schema(c for c in schema if c.name not in drop))  # type: ignore[attr-defined]
        return self


def _without(n: Node, drop: set, new: Dict[int, Optional[Node]]) -> Optional[Node]:
    """A copy of node ``n`` without the raw columns ``drop`` (None: nothing left)."""
    if n.kind == "select":
        cols = [c for c in n.columns if c not in drop]
        if not cols:
            return None
        if len(cols) == len(n.columns):
            return n
        groups = [tuple(c for c in g if c not in drop) for g in n.groups]
        return Node("select", columns=cols, groups=[g for g in groups if len(g) > 1], tags=n.tags)
    parents = [new[id(p)] for p in n.parents]
    kept = [p for p in parents if p is not None]
    if not kept:
        return None
    if all(a is b for a, b in zip(parents, n.parents)):
        return n
    if n.kind == "concat":
        out = kept[0]
        for p in kept[1:]:
            out = Node("concat", parents=[out, p])
        return out
    # an op's dependency nodes are kept whole: the op keeps reading its argument (as a raw dependency)
    copy = Node(n.kind, parents=kept, op=n.op, columns=[c for c in n.columns if c not in drop], groups=n.groups,
                tags=n.tags, deps=n.deps)
    if n.kind == "op" and getattr(n.op, "input_groups", None):
        n.op.input_groups = [list(g) for g in n.op.input_groups if not set(g) & drop] or []
    if n.kind == "op" and not copy.input_columns:
        return None
    return copy


__all__ = ["Subgraph", "WorkflowCompat"]


def _bind_node(node: Node, schema: Schema) -> None:
    """merlin's ``node.compute_schemas(root_schema)``: the schemas of the graph up to ``node``, as
    ``Workflow(node).fit_schema(root_schema)`` computes them (see ops/node_merlin.py)."""
    from .workflow import Workflow

    Workflow(node).bind_schema(schema)


set_schema_binder(_bind_node)
