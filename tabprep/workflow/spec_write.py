"""Workflow -> spec: the inverse of :func:`~tabprep.workflow.spec.workflow_from_spec`, and the spec's text.

Any graph of registered ops (or importable op classes) with JSON parameters round-trips; an op
holding a lambda or a local function is refused with a :class:`SpecError` saying why.
"""
from __future__ import annotations

import inspect
import json
import os
from pathlib import Path
from typing import Any, Dict, List, Union

import yaml

from ..ops.base import registered_ops
from .node import Node
from .spec_read import DROP_STEP, REF_KEY, SPEC_VERSION, SpecError


def workflow_to_spec(wf: Any, path: Union[None, str, os.PathLike] = None) -> Dict[str, Any]:
    """The spec (a dict) of ``wf``'s graph; also written to ``path`` (YAML, or JSON for ``.json``) if given.

    Raises:
        SpecError: an op cannot be expressed in a spec (a lambda or local function, a
            non-JSON parameter, an op class that cannot be imported by name).
    """
    for n in wf.nodes:
        if n.deps:  # a spec's steps name raw columns only: the dependency edge would be lost silently
            raise SpecError(f"{n.op.label} takes a node computed by ops as an argument "
                            f"({', '.join(repr(d) for d in n.deps)}), which a spec cannot express; save the "
                            f"workflow with wf.save(path) instead (workflow.json keeps the dependency)")
        if n.kind == "concat" and n.groups:  # a spec's [a, b] groups name raw columns only
            raise SpecError(f"the column group {list(n.groups[0])} holds columns computed by ops, which a spec "
                            f"cannot express (its groups name raw columns); save the workflow with wf.save(path) "
                            f"instead (workflow.json keeps the group)")
    spec = _SpecWriter(wf).run()
    if path is not None:
        text = spec_to_json(spec) if str(path).endswith(".json") else spec_to_yaml(spec)
        Path(path).write_text(text)
    return spec


class _SpecWriter:
    def __init__(self, wf: Any) -> None:
        self.wf = wf
        self.refcount: Dict[int, int] = {}
        for n in wf.nodes:
            for p in n.parents:
                self.refcount[id(p)] = self.refcount.get(id(p), 0) + 1
        self.given_names: Dict[str, str] = dict(wf._spec_names)
        self.names: Dict[int, str] = {}
        self.entries: List[Dict[str, Any]] = []
        self.entry_of: Dict[int, Dict[str, Any]] = {}
        self.output_ids: set = set()

    def shared(self, n: Node) -> bool:
        return self.refcount.get(id(n), 0) > 1

    def run(self) -> Dict[str, Any]:
        branches = self._flatten(self.wf.output_node, top=True)
        self.output_ids = {id(b) for b in branches if b.kind != "select"}
        for b in branches:
            if b.kind == "select":
                self.entries.append({"columns": _select_items(b)})
            else:
                self._emit(b, output=True)
        return {"version": SPEC_VERSION, "features": self.entries}

    def _flatten(self, n: Node, top: bool = False) -> List[Node]:
        """Leaves of a tree of unshared '+' merges, in order."""
        if n.kind == "concat" and (top or not self.shared(n)):
            out: List[Node] = []
            for p in n.parents:
                out.extend(self._flatten(p))
            return out
        return [n]

    def _name(self, n: Node) -> str:
        if id(n) not in self.names:
            taken = set(self.names.values())
            name = self.given_names.get(self.wf.node_id(n))
            if not name or name in taken:
                k = len(self.names) + 1
                while f"feature_{k}" in taken or f"feature_{k}" in self.given_names.values():
                    k += 1
                name = f"feature_{k}"
            self.names[id(n)] = name
        return self.names[id(n)]

    def _ref(self, n: Node) -> Dict[str, str]:
        """A reference to ``n``'s feature; helper features are emitted before their first user."""
        name = self._name(n)
        entry = self.entry_of.get(id(n))
        if entry is not None:  # an output branch emitted earlier: it now needs its name
            self._set_name(entry, name, output=True)
        elif id(n) not in self.output_ids:
            self._emit(n, output=False)
        return {REF_KEY: name}

    @staticmethod
    def _set_name(entry: Dict[str, Any], name: str, output: bool) -> None:
        rest = {k: v for k, v in entry.items() if k != "name"}
        entry.clear()
        entry["name"] = name
        entry.update(rest)
        if output:
            entry["output"] = True

    def _emit(self, n: Node, output: bool) -> None:
        steps: List[Any] = []
        cur = n
        # walk up the chain of ops / drops that belongs to this feature alone
        while cur.kind in ("op", "drop") and (cur is n or not self.shared(cur)) and len(cur.parents) == 1:
            steps.append(_op_step(cur, self.wf) if cur.kind == "op" else {DROP_STEP: list(cur.columns)})
            cur = cur.parents[0]
        steps.reverse()
        if cur.kind == "concat" and (cur is n or not self.shared(cur)):
            base_nodes = [leaf for p in cur.parents for leaf in self._flatten(p)]
        else:
            base_nodes = [cur]
        columns: List[Any] = []
        for b in base_nodes:
            if b.kind == "select":
                columns.extend(_select_items(b))
            else:
                columns.append(self._ref(b))
        entry: Dict[str, Any] = {"columns": columns}
        if steps:
            entry["ops"] = steps
        if id(n) in self.names:
            self._set_name(entry, self.names[id(n)], output=output)
        self.entries.append(entry)
        self.entry_of[id(n)] = entry


def _select_items(n: Node) -> List[Any]:
    """The selection as written: names, ``[a, b]`` groups, and a name written alone that is also
    in a group (a 1-name group of ``Node.groups``) both alone and in its group."""
    multi = [g for g in n.groups if len(g) > 1]
    singled = {g[0] for g in n.groups if len(g) == 1}
    grouped = {c: g for g in multi for c in g}
    items: List[Any] = []
    done: set = set()
    for c in n.columns:
        g = grouped.get(c)
        if g is None or c in singled:
            items.append(c)
        if g is not None and g not in done:
            done.add(g)
            items.append(list(g))
    return items


def _op_step(n: Node, wf: Any) -> Any:
    op = n.op
    cls = type(op)
    name = cls.__name__
    if registered_ops().get(name) is not cls:
        from ..ops.lambda_op import resolve_function

        name = f"{cls.__module__}:{cls.__qualname__}"
        try:
            ok = resolve_function(name) is cls
        except (ImportError, AttributeError):
            ok = False
        if not ok or cls.__module__ == "__main__":
            raise SpecError(f"cannot write {op.label} (node {wf.node_id(n)}) to a spec: its class is neither "
                            f"registered (@tabprep.ops.register) nor importable as {name!r}; define it in an "
                            f"importable module")
    try:
        config = op.to_spec_config()
    except (ValueError, TypeError) as exc:
        raise SpecError(f"cannot write {op.label} (node {wf.node_id(n)}) to a spec: {exc}") from None
    if _has_pickled(config):
        raise SpecError(f"cannot write {op.label} (node {wf.node_id(n)}, columns {n.input_columns}) to a spec: "
                        f"it holds a lambda or a local function, which a spec cannot name. Define the function "
                        f"in an importable module (it is then written as {{import: 'package.module:function'}}), "
                        f"or save the fitted workflow with workflow.save(path, allow_pickle=True) instead")
    try:
        config = json.loads(json.dumps(config))
    except TypeError as exc:
        raise SpecError(f"cannot write {op.label} (node {wf.node_id(n)}) to a spec: a parameter is not "
                        f"JSON-serializable ({exc})") from None
    defaults = {p.name: p.default for p in inspect.signature(cls.__init__).parameters.values()
                if p.default is not inspect.Parameter.empty}
    params = {k: v for k, v in config.items() if not (k in defaults and _same(v, defaults[k]))}
    return {name: params} if params else name


def _same(a: Any, b: Any) -> bool:
    try:
        return type(a) is type(b) and a == b or (a is None and b is None) or \
            (isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool)
             and not isinstance(b, bool) and a == b)
    except Exception:  # noqa: BLE001 - incomparable values are kept
        return False


def _has_pickled(obj: Any) -> bool:
    if isinstance(obj, dict):
        if "pickled" in obj:
            return True
        return any(_has_pickled(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return any(_has_pickled(v) for v in obj)
    return False


class _Dumper(yaml.SafeDumper):
    pass


def _scalar(x: Any) -> bool:
    return not isinstance(x, (dict, list))


def _repr_list(dumper: yaml.SafeDumper, data: List[Any]) -> Any:
    flow = all(_scalar(x) or (isinstance(x, list) and all(_scalar(y) for y in x))
               or (isinstance(x, dict) and all(_scalar(v) for v in x.values())) for x in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


def _repr_dict(dumper: yaml.SafeDumper, data: Dict[str, Any]) -> Any:
    flow = all(not isinstance(v, (dict, list)) or (isinstance(v, list) and all(not isinstance(y, (dict, list))
                                                                              for y in v)) for v in data.values())
    flow = flow and "columns" not in data and "features" not in data
    return dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=flow)


_Dumper.add_representer(list, _repr_list)
_Dumper.add_representer(dict, _repr_dict)


def spec_to_yaml(spec: Dict[str, Any]) -> str:
    """Readable YAML: one feature per block, column lists and op parameters inline."""
    return yaml.dump(spec, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=110)


def spec_to_json(spec: Dict[str, Any]) -> str:
    return json.dumps(spec, indent=2) + "\n"
