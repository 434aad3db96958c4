"""Spec -> workflow: validate a parsed spec and build its (unfitted) :class:`~tabprep.Workflow`.

Every error is a :class:`~tabprep.workflow.spec_read.SpecError` naming the line, the place in
the spec and the fix (close matches of unknown names, the op's signature for bad parameters).
"""
from __future__ import annotations

import inspect
from typing import Any, Dict, List, Optional, Sequence

from .._util import close_matches, did_you_mean, hint_for
from ..ops.base import Operator, registered_ops
from .node import Node, as_node
from .spec_read import (DROP_STEP, FEATURE_KEYS, REF_KEY, SPEC_VERSION, TOP_KEYS, PathT, _Located,
                        read_spec)


def workflow_from_spec(spec: Any) -> Any:
    """Build a :class:`~tabprep.Workflow` (not fitted) from a spec; see the module docstring."""
    from .workflow import Workflow

    loc = read_spec(spec)
    data = loc.data
    if not isinstance(data, dict):
        raise loc.error(f"the spec must be a mapping with a 'features:' list, got a {type(data).__name__}")
    for key in data:
        if key not in TOP_KEYS:
            raise loc.error(f"unknown top-level key {key!r}", (), _did_you_mean(str(key), TOP_KEYS, "keys are"),
                            at=(key,))
    version = data.get("version", SPEC_VERSION)
    if not isinstance(version, int) or version > SPEC_VERSION:
        raise loc.error(f"spec version {version!r} is not supported by this tabprep (it reads version "
                        f"{SPEC_VERSION})", ("version",), "upgrade tabprep or fix 'version'")
    features = data.get("features")
    if features is None:
        raise loc.error("the spec has no 'features:' list", (), "add features: [{columns: [...], ops: [...]}, ...]")
    if not isinstance(features, list) or not features:
        raise loc.error("'features' must be a non-empty list of {columns: [...], ops: [...]} entries", ("features",))

    builder = _Builder(loc, features)
    for i in range(len(features)):  # all of them: errors in unused features surface too
        builder.build(i)
    outputs = [i for i in range(len(features)) if builder.is_output(i)]
    if not outputs:
        raise loc.error("no feature is part of the output (all have output: false or are referenced)",
                        ("features",), "set output: true on the features to keep")
    node: Optional[Node] = None
    for i in outputs:
        part = builder.build(i)
        if node is not None:
            # a spec lists its features side by side: a column output by two of them is an error here
            # (a Python graph's '+' keeps the later branch's, NVTabular's rule, with a warning)
            have = set(node.output_columns)
            again = [c for c in part.output_columns if c in have]
            if again:
                raise loc.error("duplicate output columns", ("features", i),
                                f"duplicate column {again[0]!r}: it is output by more than one feature; keep it in "
                                f"one, or rename it in one of them (ops: [{{Rename: {{postfix: _x}}}}])")
        node = part if node is None else node + part
    wf = Workflow(node)
    names = {}
    for i, n in builder.nodes.items():
        name = builder.names.get(i)
        if name is not None:
            names[wf.node_id(n)] = name
    wf._spec_names = names
    wf._spec_column_lines = builder.column_lines
    wf._spec_source = loc.source
    return wf


class _Builder:
    def __init__(self, loc: _Located, features: List[Any]) -> None:
        self.loc = loc
        self.features = [self._normalize(i, f) for i, f in enumerate(features)]
        self.names: Dict[int, str] = {}
        by_name: Dict[str, int] = {}
        for i, f in enumerate(self.features):
            name = f.get("name")
            if name is None:
                continue
            if not isinstance(name, str) or not name:
                raise loc.error(f"a feature name must be a non-empty string, got {name!r}", ("features", i, "name"))
            if name in by_name:
                other = loc.line(("features", by_name[name], "name"))
                raise loc.error(f"feature name {name!r} is used twice", ("features", i, "name"),
                                f"it is also the name of features[{by_name[name]}]"
                                + (f" (line {other})" if other else "") + "; names must be unique")
            by_name[name] = i
            self.names[i] = name
        self.by_name = by_name
        self.referenced: set = set()
        for i, f in enumerate(self.features):
            for j, item in enumerate(f["columns"]):
                if isinstance(item, dict):
                    self.referenced.add(self._ref(i, j, item))
        self.nodes: Dict[int, Node] = {}
        self._visiting: List[int] = []
        self.column_lines: Dict[str, Optional[int]] = {}

    def _normalize(self, i: int, f: Any) -> Dict[str, Any]:
        loc = self.loc
        path: PathT = ("features", i)
        if isinstance(f, str):  # shorthand: "- label"
            f = {"columns": [f]}
        elif isinstance(f, list):  # shorthand: "- [a, b]"
            f = {"columns": f}
        if not isinstance(f, dict):
            raise loc.error(f"a feature must be a mapping like {{columns: [...], ops: [...]}}, got {f!r}", path)
        for key in f:
            if key not in FEATURE_KEYS:
                hint = _did_you_mean(str(key), FEATURE_KEYS, "feature keys are")
                if str(key) in registered_ops():
                    hint = f"'{key}' is an op: put it in the feature's ops: list"
                raise loc.error(f"unknown key {key!r}", path + (key,), hint)
        if "columns" not in f or f["columns"] is None:
            raise loc.error("the feature has no 'columns:'", path, "add columns: [name, ...]")
        cols = f["columns"]
        if isinstance(cols, str):
            cols = [cols]
        if not isinstance(cols, list) or not cols:
            raise loc.error(f"'columns' must be a non-empty list, got {cols!r}", path + ("columns",))
        for j, item in enumerate(cols):
            p = path + ("columns", j)
            if isinstance(item, str):
                continue
            if isinstance(item, list):
                if not item:
                    raise loc.error("an empty column group", p)
                for k, sub in enumerate(item):
                    if not isinstance(sub, str):
                        raise loc.error(f"a column group holds column names, got {sub!r}", p + (k,),
                                        _quote_hint(sub))
                continue
            if isinstance(item, dict):
                if list(item) != [REF_KEY]:
                    raise loc.error(f"a mapping in 'columns' refers to another feature and must be "
                                    f"{{{REF_KEY}: NAME}}, got {item!r}", p)
                continue
            raise loc.error(f"column name {item!r} is not a string", p, _quote_hint(item))
        ops = f.get("ops")
        if ops is None:
            ops = []
        elif not isinstance(ops, list):
            ops = [ops]
        output = f.get("output")
        if output is not None and not isinstance(output, bool):
            raise loc.error(f"'output' must be true or false, got {output!r}", path + ("output",))
        return {"columns": cols, "ops": ops, "name": f.get("name"), "output": output}

    def _ref(self, i: int, j: int, item: Dict[str, Any]) -> int:
        name = item[REF_KEY]
        if name not in self.by_name:
            known = sorted(self.by_name)
            hint = _did_you_mean(str(name), known, "named features are") if known else \
                "no feature has a name: give the referenced feature name: " + str(name)
            raise self.loc.error(f"no feature is named {name!r}", ("features", i, "columns", j), hint)
        return self.by_name[name]

    def is_output(self, i: int) -> bool:
        out = self.features[i]["output"]
        return (i not in self.referenced) if out is None else out

    def build(self, i: int) -> Node:
        if i in self.nodes:
            return self.nodes[i]
        if i in self._visiting:
            cycle = [self.names.get(k, f"features[{k}]") for k in self._visiting[self._visiting.index(i):]] + \
                    [self.names.get(i, f"features[{i}]")]
            raise self.loc.error(f"features refer to each other in a cycle: {' -> '.join(cycle)}", ("features", i),
                                 "a feature can only use features that do not (indirectly) use it")
        self._visiting.append(i)
        f = self.features[i]
        path: PathT = ("features", i)
        parts: List[Node] = []
        pending: List[Any] = []

        def flush() -> None:
            if pending:
                parts.append(as_node(list(pending)))
                pending.clear()

        for j, item in enumerate(f["columns"]):
            if isinstance(item, dict):
                flush()
                parts.append(self.build(self._ref(i, j, item)))
            else:
                names = [item] if isinstance(item, str) else item
                for k, name in enumerate(names):
                    p = path + ("columns", j) + ((k,) if isinstance(item, list) else ())
                    self.column_lines.setdefault(name, self.loc.line(p))
                pending.append(item)
        flush()
        try:
            node = parts[0]
            for p in parts[1:]:
                node = node + p
            node.output_columns  # noqa: B018
        except ValueError as exc:
            raise self.loc.error("cannot merge the columns", path + ("columns",), str(exc)) from None
        for k, step in enumerate(f["ops"]):
            node = self._apply(node, step, path + ("ops", k))
        self._visiting.pop()
        self.nodes[i] = node
        return node

    def _apply(self, node: Node, step: Any, path: PathT) -> Node:
        loc = self.loc
        if isinstance(step, str):
            name, params = step, {}
        elif isinstance(step, dict) and len(step) == 1:
            name, params = next(iter(step.items()))
            if params is None:
                params = {}
        elif isinstance(step, dict) and step:
            ops_in = [k for k in step if _lookup_op(str(k)) is not None or k == DROP_STEP]
            hint = ""
            if len(ops_in) == 1 and step[ops_in[0]] is None:
                hint = (f"it looks like the parameters of {ops_in[0]} are not indented under it: write "
                        f"{{{ops_in[0]}: {{{', '.join(f'{k}: {step[k]!r}' for k in step if k != ops_in[0])}}}}}")
            raise loc.error(f"an op step with several keys {list(step)}", path,
                            hint or "an op step is one name or a one-key mapping {Op: {param: value}}; "
                                    "write one op per list item")
        else:
            raise loc.error(f"an op step is an op name or a mapping {{Op: {{param: value}}}}, got {step!r}", path)
        name = str(name)
        if name == DROP_STEP:
            cols = [params] if isinstance(params, str) else params
            if not isinstance(cols, list) or not cols or not all(isinstance(c, str) for c in cols):
                raise loc.error(f"drop takes a list of column names, got {params!r}", path)
            missing = [c for c in cols if c not in node.output_columns]
            if missing:
                raise loc.error(f"drop: no column {missing[0]!r} to drop", path,
                            f"the columns at this point are {node.output_columns}")
            return node - cols
        cls = _lookup_op(name)
        if cls is None:
            raise loc.error(f"unknown op {name!r}", path, _unknown_op_hint(name))
        if not isinstance(params, dict):
            sig = op_signature(cls)
            raise loc.error(f"the parameters of {name} must be a mapping {{param: value}}, got {params!r}", path,
                            f"e.g. {{{name}: {{{_first_param(cls)}: ...}}}}; signature: {sig}")
        ppath = path + (name,)
        accepted = cls._param_names()
        var_kw = _has_var_keyword(cls)
        for key in params:
            if key not in accepted and not var_kw:
                raise loc.error(f"{name} has no parameter {key!r}", ppath + (key,),
                                _did_you_mean(str(key), accepted, "") + f" signature: {op_signature(cls)}")
        try:
            inspect.signature(cls.__init__).bind(None, **params)
        except TypeError as exc:
            raise loc.error(f"bad parameters for {name}", ppath, f"{exc}; signature: {op_signature(cls)}") from None
        try:
            op = cls.from_config(dict(params))
        except Exception as exc:  # noqa: BLE001 - the op's own validation message is what the user needs
            raise loc.error(f"invalid parameters for {name}", ppath,
                            f"{name}({_fmt_params(params)}): {exc}; signature: {op_signature(cls)}") from None
        try:
            out = node >> op
            out.output_columns  # noqa: B018
        except (ValueError, TypeError, KeyError) as exc:
            msg = exc.args[0] if exc.args else str(exc)
            raise loc.error(f"{name} cannot be applied to columns {node.output_columns}", path, msg) from None
        return out


def _lookup_op(name: str) -> Optional[type]:
    ops = registered_ops()
    if name in ops:
        return ops[name]
    if ":" in name:
        from ..ops.lambda_op import resolve_function

        try:
            cls = resolve_function(name)
        except (ImportError, AttributeError):
            return None
        if isinstance(cls, type) and issubclass(cls, Operator):
            return cls
    return None


def _unknown_op_hint(name: str) -> str:
    ops = sorted(registered_ops())
    if ":" in name:
        return (f"'{name}' does not import as a tabprep Operator class ('package.module:Class', importable from the "
                f"working directory or PYTHONPATH)")
    lower = {o.lower(): o for o in ops}
    close = close_matches(name, ops, cutoff=0.6)
    if name.lower() in lower and lower[name.lower()] not in close:
        close.insert(0, lower[name.lower()])
    if close:
        return hint_for(close)
    return f"known ops are {', '.join(ops)} (or 'package.module:Class' for a custom op)"


def _did_you_mean(word: str, choices: Sequence[str], label: str) -> str:
    hint = did_you_mean(word, choices)
    if hint:
        return hint
    return f"{label} {', '.join(choices)}".strip() if label else ""


def _quote_hint(value: Any) -> str:
    if isinstance(value, bool):
        return "YAML reads yes/no/on/off/true/false as booleans: quote the column name, e.g. 'yes'"
    if isinstance(value, (int, float)):
        return f"YAML reads {value!r} as a number: quote the column name, e.g. '{value}'"
    return "column names are strings"


def _has_var_keyword(cls: type) -> bool:
    return any(p.kind == p.VAR_KEYWORD for p in inspect.signature(cls.__init__).parameters.values())


def _first_param(cls: type) -> str:
    names = cls._param_names()
    return names[0] if names else "param"


def op_signature(cls: type) -> str:
    """``Clip(min_value: Optional[float] = None, max_value: Optional[float] = None)``."""
    parts = []
    for p in inspect.signature(cls.__init__).parameters.values():
        if p.name == "self":
            continue
        text = p.name
        if p.kind == p.VAR_KEYWORD:
            text = "**" + text
        elif p.kind == p.VAR_POSITIONAL:
            text = "*" + text
        if p.annotation is not inspect.Parameter.empty:
            ann = p.annotation if isinstance(p.annotation, str) else getattr(p.annotation, "__name__", repr(p.annotation))
            text += f": {ann}"
        if p.default is not inspect.Parameter.empty:
            text += f" = {p.default!r}"
        parts.append(text)
    return f"{cls.__name__}({', '.join(parts)})"


def _fmt_params(params: Dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items())
