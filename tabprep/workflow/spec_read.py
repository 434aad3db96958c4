"""Reading a workflow spec: YAML/JSON text or files with line numbers, and :class:`SpecError`.

The format is described in :mod:`tabprep.workflow.spec`; this module parses it (keeping the
YAML node tree so errors name the line) and holds the constants the builder and the writer share.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import yaml

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
        _check_expansion(root, source)  # before anything walks the values: aliases can multiply them
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


#: the most values (scalars, lists, mappings) a spec may hold once its YAML aliases are expanded;
#: real specs hold thousands. A few hundred bytes of nested aliases ("billion laughs") expand to
#: billions, and everything that walks the spec (checks, the graph build) would walk them all
MAX_SPEC_VALUES = 1_000_000


def _check_expansion(root: Any, source: Optional[str]) -> None:
    """Refuse a spec whose aliases expand it past :data:`MAX_SPEC_VALUES` values, or refer to
    themselves; linear in the size of the YAML text (each node is sized once)."""
    if root is None:
        return
    size: Dict[int, int] = {}
    on_path: set = set()
    stack: List[tuple] = [(root, False)]
    while stack:
        n, done = stack.pop()
        key = id(n)
        children = ([c for kv in n.value for c in kv] if isinstance(n, yaml.MappingNode)
                    else list(n.value) if isinstance(n, yaml.SequenceNode) else [])
        if done:
            on_path.discard(key)
            size[key] = 1 + sum(size[id(c)] for c in children)
            if size[key] > MAX_SPEC_VALUES:
                raise SpecError(f"the spec expands to more than {MAX_SPEC_VALUES:,} values through YAML aliases "
                                f"(&anchor / *alias repeated inside each other); refusing it. Write the values out, "
                                f"or use fewer nested aliases", source=source, line=n.start_mark.line + 1)
            continue
        if key in size:
            continue
        if key in on_path:
            raise SpecError("a YAML alias refers to a value that contains it (a recursive structure); a spec "
                            "cannot hold one", source=source, line=n.start_mark.line + 1)
        on_path.add(key)
        stack.append((n, True))
        stack.extend((c, False) for c in children if id(c) not in size)


def _check_duplicate_keys(node: Any, source: Optional[str]) -> None:
    """YAML keeps the last of two equal keys silently; a spec with one is almost surely a mistake."""
    stack = [node]
    visited: set = set()  # a node an alias repeats is checked once
    while stack:
        n = stack.pop()
        if id(n) in visited:
            continue
        visited.add(id(n))
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
