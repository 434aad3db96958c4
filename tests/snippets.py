"""Run the code blocks of a Markdown page as a reader would: in order, in one empty folder.

``python tests/snippets.py PAGE.md [--workdir DIR]`` runs every ```python and ```bash block of
PAGE in order (Python blocks share one namespace, as in one session; bash blocks run in the same
folder) and checks ``# output: TEXT`` comments: after a Python statement, TEXT must equal what it
printed (or, for a bare expression that prints nothing, its ``repr``); after a bash command, what
the command wrote to stdout. Whitespace runs compare as one space and ``...`` matches anything.
```text (or any other language) blocks are not run; a block right after a
``<!-- skip: reason -->`` line is not run either (for GPU or cluster-only commands).

tests/test_docs_snippets.py runs this for README.md and every docs/**/*.md page. The repository
is importable (PYTHONPATH) and ``tabprep`` / ``python`` on PATH are this interpreter.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import io
import linecache
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

REPO = Path(__file__).resolve().parent.parent
RUN_LANGS = {"python": "python", "py": "python", "bash": "bash", "sh": "bash", "shell": "bash"}
FENCE = re.compile(r"^(\s*)```\s*([\w+-]*)\s*$")
SKIP = re.compile(r"^\s*<!--\s*skip:\s*(.+?)\s*-->\s*$")
OUTPUT = re.compile(r"#\s*output:\s?(.*)$")
BLOCK_TIMEOUT = 300


@dataclass
class Block:
    lang: str            # the fence's language as written
    code: str
    line: int            # 1-based line of the opening fence
    skip: Optional[str]  # the reason of a preceding <!-- skip: ... -->

    @property
    def runs(self) -> bool:
        return self.lang in RUN_LANGS and self.skip is None


def parse(text: str) -> List[Block]:
    """The fenced code blocks of a Markdown text, in order (indented fences in lists included)."""
    blocks: List[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2).lower()
        prev = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        skip = SKIP.match(prev)
        body: List[str] = []
        j = i + 1
        while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        if j == len(lines):
            raise ValueError(f"line {i + 1}: code block not closed")
        blocks.append(Block(lang, "\n".join(body) + "\n", i + 1, skip.group(1) if skip else None))
        i = j + 1
    return blocks


def matches(expected: str, got: str) -> bool:
    """``got`` equals ``expected`` with whitespace runs as one space and ``...`` as a wildcard."""
    norm = lambda s: " ".join(s.split())  # noqa: E731
    pattern = ".*".join(re.escape(part) for part in norm(expected).split("..."))
    return re.fullmatch(pattern, norm(got), flags=re.S) is not None


class SnippetError(AssertionError):
    pass


def _expected(lines: List[str], first: int, last: int) -> Optional[str]:
    for line in lines[first - 1:last]:
        m = OUTPUT.search(line)
        if m:
            return m.group(1).strip()
    return None


def run_python(block: Block, ns: Dict[str, object], where: str) -> None:
    # the block's source where inspect and tracebacks look for it (TensorFlow's AutoGraph reads it)
    filename = f"<{where}, block at line {block.line}>"
    linecache.cache[filename] = (len(block.code), None, block.code.splitlines(True), filename)
    tree = ast.parse(block.code, filename=filename)
    lines = block.code.splitlines()
    for stmt in tree.body:
        expected = _expected(lines, stmt.lineno, stmt.end_lineno or stmt.lineno)
        buf = io.StringIO()
        at = f"{where}, line {block.line + stmt.lineno}"
        with contextlib.redirect_stdout(buf):
            if isinstance(stmt, ast.Expr):
                value = eval(compile(ast.Expression(stmt.value), filename, "eval"), ns)
            else:
                exec(compile(ast.Module([stmt], []), filename, "exec"), ns)
                value = None
        out = buf.getvalue()
        sys.stdout.write(out)
        if expected is not None:
            got = out if out or value is None else repr(value)
            if not matches(expected, got):
                raise SnippetError(f"{at}: printed\n  {got.strip()}\nbut the page says\n  # output: {expected}")


def _bash_units(code: str) -> List[Tuple[str, int]]:
    """Commands of a bash block with their first line: continuations and heredocs kept whole."""
    units: List[Tuple[str, int]] = []
    lines = code.splitlines()
    i = 0
    while i < len(lines):
        start, unit = i, [lines[i]]
        heredoc = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", lines[i])
        while unit[-1].rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            unit.append(lines[i])
        if heredoc:
            while i + 1 < len(lines) and lines[i].strip() != heredoc.group(1):
                i += 1
                unit.append(lines[i])
        units.append(("\n".join(unit), start + 1))
        i += 1
    return units


def run_bash(block: Block, cwd: str, env: Dict[str, str], where: str) -> None:
    script = ["set -eo pipefail"]
    checks: Dict[int, Tuple[str, int]] = {}
    for n, (unit, line) in enumerate(_bash_units(block.code)):
        expected = _expected(unit.splitlines(), 1, len(unit.splitlines()))
        if expected is None:
            script.append(unit)
            continue
        checks[n] = (expected, line)
        script += [f"printf '@@B{n}@@\\n'", unit, f"printf '\\n@@E{n}@@\\n'"]
    # stdout to a file, not a pipe: a background command (a server) would hold a pipe open
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(["bash", "-c", "\n".join(script) + "\n"], cwd=cwd, env=env, stdout=log,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            proc.wait(timeout=BLOCK_TIMEOUT)
        except subprocess.TimeoutExpired:
            pass
        finally:
            # what the block left in the background goes with it
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            if proc.returncode is None:
                proc.wait(10)
        log.seek(0)
        out = log.read()
    shown = re.sub(r"\n?@@[BE]\d+@@\n", "\n", out)
    sys.stdout.write(shown)
    if proc.returncode != 0:
        raise SnippetError(f"{where}, block at line {block.line}: bash exited with {proc.returncode}")
    for n, (expected, line) in checks.items():
        m = re.search(rf"@@B{n}@@\n(.*?)\n@@E{n}@@", out, flags=re.S)
        got = m.group(1) if m else ""
        if not matches(expected, got):
            raise SnippetError(f"{where}, line {block.line + line}: printed\n  {got.strip()}\n"
                               f"but the page says\n  # output: {expected}")


def tool_dir(root: str) -> str:
    """A folder of ``tabprep`` and ``python`` commands that run this interpreter on this repository."""
    bin_dir = os.path.join(root, ".snippet-bin")
    os.makedirs(bin_dir, exist_ok=True)
    for name, cmd in (("tabprep", f'exec "{sys.executable}" -m tabprep.cli "$@"'),
                      ("python", f'exec "{sys.executable}" "$@"'), ("python3", f'exec "{sys.executable}" "$@"')):
        path = os.path.join(bin_dir, name)
        with open(path, "w") as f:
            f.write(f"#!/bin/sh\n{cmd}\n")
        os.chmod(path, 0o755)
    return bin_dir


def run_page(page: Path, workdir: str) -> int:
    """Runs the page's blocks in ``workdir``; returns how many ran."""
    where = str(page.relative_to(REPO)) if page.is_absolute() and REPO in page.parents else str(page)
    blocks = [b for b in parse(page.read_text()) if b.runs]
    env = dict(os.environ)
    env["PATH"] = tool_dir(tempfile.mkdtemp(prefix="snippet-bin-")) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), workdir] + [p for p in [env.get("PYTHONPATH")] if p])
    os.environ.update({"PATH": env["PATH"], "PYTHONPATH": env["PYTHONPATH"]})
    os.chdir(workdir)
    sys.path[:0] = [workdir, str(REPO)]
    ns: Dict[str, object] = {"__name__": "__main__"}
    for block in blocks:
        start = time.perf_counter()
        print(f"--- {where}:{block.line} ({block.lang})", flush=True)
        if RUN_LANGS[block.lang] == "python":
            run_python(block, ns, where)
        else:
            sys.stdout.flush()
            run_bash(block, workdir, env, where)
        print(f"--- {time.perf_counter() - start:.1f}s", flush=True)
    return len(blocks)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page")
    parser.add_argument("--workdir", default=None, help="folder to run in (default: a new temporary one)")
    args = parser.parse_args(argv)
    workdir = os.path.abspath(args.workdir or tempfile.mkdtemp(prefix="snippets-"))
    os.makedirs(workdir, exist_ok=True)
    try:
        n = run_page(Path(args.page).resolve(), workdir)
    except SnippetError as e:
        print(f"\nSNIPPET FAILED: {e}", flush=True)
        return 1
    print(f"\n{n} blocks ran", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
