"""Declarative workflow specs: a YAML or JSON file describing the graph, for the CLI and version control.

A spec lists **features**; each feature selects columns and applies a chain of ops. The
workflow's output is every feature's output side by side, in the order listed::

    features:
      - columns: [C1, C2]
        ops: [{Categorify: {freq_threshold: 2}}]
      - columns: [I1, I2]
        ops: [FillMissing, {Clip: {min_value: 0}}, LogOp, Normalize]
      - columns: [label]

is ``(["C1", "C2"] >> Categorify(freq_threshold=2)) + (["I1", "I2"] >> FillMissing() >>
Clip(min_value=0) >> LogOp() >> Normalize()) + ["label"]``.

Feature keys:

* ``columns`` (required): a list of

  - column names (``C1``; quote names YAML would read as numbers or booleans: ``"1"``, ``"yes"``),
  - groups of names sharing one vocabulary (``[[user_a, user_b]]``, as in Python),
  - references to another feature's output: ``{feature: NAME}``; this is how merges of chains,
    ``(A >> op) + B >> op2``, are written.

* ``ops``: the chain, applied in order. Each step is an op name (``LogOp``), a one-key mapping
  ``{Op: {param: value}}`` with the op's ``__init__`` parameters, or ``{drop: [columns]}``
  (remove columns from the chain's output). Ops are looked up among registered ops
  (:func:`tabprep.ops.registered_ops`); a custom op class can be named ``"package.module:Class"``.
  Parameters holding a function (LambdaOp ``f``, Filter ``f``, Rename ``f``) are written
  ``{import: "package.module:function"}``.
* ``name``: an identifier other features refer to with ``{feature: NAME}``.
* ``output``: whether the feature's columns are part of the workflow's output. Default: true,
  except for features that other features refer to (those are intermediate steps).

Example of a merge, ``(["a", "b"] >> FillMissing()) + ["c"] >> Normalize()``::

    features:
      - name: filled
        columns: [a, b]
        ops: [FillMissing]
      - columns: [{feature: filled}, c]
        ops: [Normalize]

Top-level keys besides ``features``: ``version`` (the spec format, 1) and ``description``.

Errors (:class:`SpecError`, a ``ValueError``) name the file and line, where in the spec, and the
fix: close matches for unknown ops, parameters and feature names; the op's signature for bad
parameters.

:func:`workflow_to_spec` is the inverse: any graph made of registered ops (or importable op
classes) with JSON parameters round-trips. Ops holding a lambda or a local function cannot be
written to a spec and are refused with a message saying so.
"""
from __future__ import annotations

import difflib
import inspect
import json
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import yaml

from ..ops.base import Operator, registered_ops
from .node import Node, as_node

SPEC_VERSION = 1
TOP_KEYS = ("features", "version", "description")
FEATURE_KEYS = ("columns", "ops", "name", "output")
DROP_STEP = "drop"
REF_KEY = "feature"

PathT = Tuple[Union[str, int], ...]


class SpecError(ValueError):
    """An invalid spec. ``source`` (file name or None), ``line`` (1-based or None), ``where`` (e.g. ``features[0].ops[1]``)."""

    def __init__(self, message: str, source: Optional[str] = None, line: Optional[int] = None,
                 where: Optional[str] = None) -> None:
        self.message = message
        self.source = source
        self.line = line
        self.where = where
        prefix = ""
        if source and line:
            prefix = f"{source} line {line}: "
        elif line:
            prefix = f"spec line {line}: "
        elif source:
            prefix = f"{source}: "
        super().__init__(prefix + message)


# -- reading ----------------------------------------------------------------------------
class _Located:
    """The parsed spec plus, when it came from text, the YAML node tree for line numbers."""

    def __init__(self, data: Any, root: Optional[yaml.Node], source: Optional[str]) -> None:
        self.data = data
        self.root = root
        self.source = source

    def line(self, path: PathT) -> Optional[int]:
        """1-based line of the deepest node of ``path`` found in the document."""
        node = self.root
        if node is None:
            return None
        line = node.start_mark.line + 1
        for depth, key in enumerate(path):
            nxt = None
            if isinstance(node, yaml.MappingNode):
                for k, v in node.value:
                    if isinstance(k, yaml.ScalarNode) and k.value == str(key):
                        # the last step of the path names a key: point at the key's line
                        nxt = k if depth == len(path) - 1 or (isinstance(v, yaml.ScalarNode) and v.value == "") else v
                        break
            elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
                nxt = node.value[key]
            if nxt is None:
                break
            node = nxt
            line = node.start_mark.line + 1
        return line

    def error(self, message: str, path: PathT = (), hint: str = "", at: Optional[PathT] = None) -> SpecError:
        """A :class:`SpecError` about ``path`` (``at``: where to take the line from, default ``path``)."""
        where = _where(path)
        text = message + (f" in {where}" if where else "") + (f"; {hint}" if hint else "")
        return SpecError(text, source=self.source, line=self.line(path if at is None else at), where=where or None)


def _where(path: PathT) -> str:
    out = ""
    for key in path:
        if isinstance(key, int):
            out += f"[{key}]"
        else:
            out += ("." if out else "") + str(key)
    return out


def read_spec(spec: Any) -> _Located:
    """Parse a spec given as a dict, a path to a .yaml/.yml/.json file, or YAML text (a str with a newline)."""
    if isinstance(spec, dict):
        return _Located(spec, None, None)
    if isinstance(spec, (str, os.PathLike)):
        text_given = isinstance(spec, str) and "\n" in spec
        if text_given:
            return _parse_text(spec, None)
        path = Path(spec)
        if not path.exists():
            raise FileNotFoundError(f"spec file {str(path)!r} does not exist (working directory {os.getcwd()})")
        if path.is_dir():
            raise SpecError(f"{str(path)!r} is a folder; a spec is a .yaml or .json file "
                            f"(a saved workflow folder is loaded with Workflow.load / `tabprep transform`)")
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            raise SpecError("is not a text file; a spec is a YAML or JSON file", source=str(path)) from None
        return _parse_text(text, str(path))
    raise TypeError(f"a spec is a dict, a path to a YAML/JSON file, or YAML text; got {type(spec).__name__}")


def _parse_text(text: str, source: Optional[str]) -> _Located:
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        context = getattr(exc, "context", None)
        detail = f"{context}, {problem}" if context else problem
        if source and source.endswith(".json"):
            try:  # JSON that YAML rejects (tabs as indentation): no line numbers then, but valid
                return _Located(json.loads(text), None, source)
            except json.JSONDecodeError as jexc:
                raise SpecError(f"invalid JSON: {jexc.msg} (column {jexc.colno})", source=source,
                                line=jexc.lineno) from None
        raise SpecError(f"invalid YAML: {detail} (column {mark.column + 1})" if mark else f"invalid YAML: {detail}",
                        source=source, line=(mark.line + 1) if mark else None) from None
    if data is None:
        raise SpecError("the spec is empty; it needs a 'features:' list (see tabprep.workflow.spec)", source=source)
    _check_duplicate_keys(root, source)
    return _Located(data, root, source)


def _check_duplicate_keys(node: Any, source: Optional[str]) -> None:
    """YAML keeps the last of two equal keys silently; a spec with one is almost surely a mistake."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, yaml.MappingNode):
            seen: Dict[str, int] = {}
            for k, v in n.value:
                if isinstance(k, yaml.ScalarNode):
                    if k.value in seen:
                        raise SpecError(f"key {k.value!r} appears twice in one mapping (first on line {seen[k.value]}); "
                                        f"YAML would keep only the last: merge them", source=source,
                                        line=k.start_mark.line + 1)
                    seen[k.value] = k.start_mark.line + 1
                stack.append(v)
        elif isinstance(n, yaml.SequenceNode):
            stack.extend(n.value)


# -- spec -> workflow ----------------------------------------------------------------------
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
        try:
            node = part if node is None else node + part
            node.output_columns  # noqa: B018 - duplicate output columns raise here
        except ValueError as exc:
            raise loc.error("duplicate output columns", ("features", i), str(exc)) from None
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
        accepted = _param_names(cls)
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
    close = difflib.get_close_matches(name, ops, n=3, cutoff=0.6)
    if name.lower() in lower and lower[name.lower()] not in close:
        close.insert(0, lower[name.lower()])
    if close:
        return "did you mean " + " or ".join(repr(c) for c in close) + "?"
    return f"known ops are {', '.join(ops)} (or 'package.module:Class' for a custom op)"


def _did_you_mean(word: str, choices: Sequence[str], label: str) -> str:
    close = difflib.get_close_matches(word, list(choices), n=3, cutoff=0.5)
    if close:
        return "did you mean " + " or ".join(repr(c) for c in close) + "?"
    return f"{label} {', '.join(choices)}".strip() if label else ""


def _quote_hint(value: Any) -> str:
    if isinstance(value, bool):
        return "YAML reads yes/no/on/off/true/false as booleans: quote the column name, e.g. 'yes'"
    if isinstance(value, (int, float)):
        return f"YAML reads {value!r} as a number: quote the column name, e.g. '{value}'"
    return "column names are strings"


def _param_names(cls: type) -> List[str]:
    sig = inspect.signature(cls.__init__)
    return [p.name for p in sig.parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _has_var_keyword(cls: type) -> bool:
    return any(p.kind == p.VAR_KEYWORD for p in inspect.signature(cls.__init__).parameters.values())


def _first_param(cls: type) -> str:
    names = _param_names(cls)
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


# -- workflow -> spec ----------------------------------------------------------------------
def workflow_to_spec(wf: Any, path: Union[None, str, os.PathLike] = None) -> Dict[str, Any]:
    """The spec (a dict) of ``wf``'s graph; also written to ``path`` (YAML, or JSON for ``.json``) if given.

    Raises:
        SpecError: an op cannot be expressed in a spec (a lambda or local function, a
            non-JSON parameter, an op class that cannot be imported by name).
    """
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
    grouped = {c: g for g in n.groups for c in g}
    items: List[Any] = []
    done: set = set()
    for c in n.columns:
        g = grouped.get(c)
        if g is None:
            items.append(c)
        elif g not in done:
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
        config = op.to_config()
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


# -- text ------------------------------------------------------------------------------
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
