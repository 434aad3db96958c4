"""Print tabprep's package-level import graph (from the AST, nothing is imported).

Run: python3 benchmarks/import_graph.py [--functions]

Each edge `a -> b (n)` means n import statements in package `a` name a module of package `b`
(packages are tabprep's subpackages; top-level modules such as schema.py count as their own
package).  `--functions` also lists imports made inside functions (often hiding a cycle).
"""
from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "tabprep"


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def package_of(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else "tabprep"


def imports_of(path: Path):
    """Yield (target module, is_function_level, lineno) for each tabprep import in `path`."""
    mod = module_name(path)
    is_pkg = path.name == "__init__.py"
    tree = ast.parse(path.read_text(), str(path))
    func_nodes = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node):
                if sub is not node:
                    func_nodes.add(id(sub))
    for node in ast.walk(tree):
        in_func = id(node) in func_nodes
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("tabprep"):
                    yield a.name, in_func, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = mod.split(".")
                if not is_pkg:
                    base = base[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("tabprep"):
                continue
            # `from tabprep.io import writer` names a module too
            for a in node.names:
                cand = f"{target}.{a.name}"
                yield (cand if _is_module(cand) else target), in_func, node.lineno


def _is_module(name: str) -> bool:
    p = ROOT.parent.joinpath(*name.split("."))
    return p.with_suffix(".py").exists() or (p / "__init__.py").exists()


def graph(include_function_level: bool = True):
    edges = defaultdict(int)
    fn_imports = []
    for path in sorted(ROOT.rglob("*.py")):
        src = module_name(path)
        for target, in_func, line in imports_of(path):
            a, b = package_of(src), package_of(target)
            if in_func:
                fn_imports.append((src, target, line))
            if a != b and (include_function_level or not in_func):
                edges[(a, b)] += 1
    return edges, fn_imports


def cycles(edges) -> list[tuple[str, str]]:
    return sorted({tuple(sorted((a, b))) for (a, b) in edges if (b, a) in edges})


def main() -> None:
    edges, fn_imports = graph()
    print("package-level edges (module- and function-level imports):")
    for (a, b), n in sorted(edges.items()):
        print(f"  {a:>9} -> {b} ({n})")
    print("two-way edges:", ", ".join(f"{a}<->{b}" for a, b in cycles(edges)) or "none")
    print(f"function-level tabprep imports: {len(fn_imports)}")
    if "--functions" in sys.argv:
        for src, target, line in fn_imports:
            print(f"  {src}:{line} -> {target}")


if __name__ == "__main__":
    main()
