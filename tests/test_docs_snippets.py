"""Every ```python and ```bash block of README.md and docs/**/*.md runs as written.

Each page runs in its own process and empty folder (tests/snippets.py), its blocks in order, with
their ``# output:`` comments checked. A block that cannot run here is fenced ```text, or preceded
by ``<!-- skip: reason -->`` (GPU or cluster only).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import snippets  # noqa: E402

REPO = snippets.REPO
PAGES = [REPO / "README.md"] + sorted((REPO / "docs").rglob("*.md"))
RUNNABLE = [p for p in PAGES if any(b.runs for b in snippets.parse(p.read_text()))]


def _run_page(page: Path, workdir: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", JAX_PLATFORMS="cpu")
    return subprocess.run([sys.executable, str(REPO / "tests" / "snippets.py"), str(page), "--workdir", str(workdir)],
                          cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=900)


@pytest.fixture(scope="session")
def page_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Dict[Path, object]:
    """Every selected page, run in its own process, two at a time: a page mostly waits on process
    starts and imports (each `tabprep` command in a bash block is one), so the pages overlap well."""
    selected = [item.callspec.params["page"] for item in request.session.items
                if item.originalname == "test_page_snippets_run_as_written"]
    with ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 2))) as pool:
        futures = {page: pool.submit(_run_page, page, tmp_path_factory.mktemp("snippets")) for page in selected}
        return {page: f.result() for page, f in futures.items()}


@pytest.mark.parametrize("page", RUNNABLE, ids=[str(p.relative_to(REPO)) for p in RUNNABLE])
def test_page_snippets_run_as_written(page: Path, page_runs: Dict[Path, object]) -> None:
    proc = page_runs[page]
    assert proc.returncode == 0, f"{page.relative_to(REPO)}:\n{proc.stdout[-6000:]}"


def test_readme_and_docs_have_runnable_snippets() -> None:
    # the collector finds the pages (a renamed folder would silently test nothing)
    assert REPO / "README.md" in RUNNABLE
    assert len(RUNNABLE) >= 8, [str(p) for p in RUNNABLE]


# -- the collector itself --------------------------------------------------------------------------
PAGE = """# T

```python
x = 2
print(x + 1)  # output: 3
```

<!-- skip: needs a GPU -->
```python
raise SystemExit("never runs")
```

```text
not code
```

- a list item:

  ```bash
  echo hello   # output: hello
  ```
"""


def test_parse_blocks_skip_and_text() -> None:
    blocks = snippets.parse(PAGE)
    assert [(b.lang, b.runs) for b in blocks] == [("python", True), ("python", False), ("text", False), ("bash", True)]
    assert blocks[1].skip == "needs a GPU"
    assert blocks[3].code == "echo hello   # output: hello\n"  # list indentation removed


def test_output_comments_are_checked(tmp_path: Path) -> None:
    ok = tmp_path / "ok.md"
    ok.write_text(PAGE)
    bad = tmp_path / "bad.md"
    bad.write_text(PAGE.replace("# output: 3", "# output: 4"))
    bad_bash = tmp_path / "bad_bash.md"
    bad_bash.write_text(PAGE.replace("# output: hello", "# output: bye"))
    expr = tmp_path / "expr.md"
    expr.write_text("```python\n{'a': 1}  # output: {'a': 1}\nsorted([3, 1])  # output: [1, ...]\n```\n")
    runs = {p.name: subprocess.run([sys.executable, str(REPO / "tests" / "snippets.py"), str(p)],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
            for p in (ok, bad, bad_bash, expr)}
    assert runs["ok.md"].returncode == 0, runs["ok.md"].stdout
    assert "2 blocks ran" in runs["ok.md"].stdout
    assert runs["expr.md"].returncode == 0, runs["expr.md"].stdout
    assert runs["bad.md"].returncode == 1
    assert "printed\n  3\nbut the page says\n  # output: 4" in runs["bad.md"].stdout
    assert runs["bad_bash.md"].returncode == 1
    assert "# output: bye" in runs["bad_bash.md"].stdout


def test_matches() -> None:
    assert snippets.matches("a  b", "a\nb\n")
    assert snippets.matches("{'C1': (..., 48)}", "{'C1': (436, 48)}")
    assert not snippets.matches("5", "2")
    assert not snippets.matches("a", "ab")


def test_failing_block_fails_and_background_jobs_end(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("```bash\nsleep 300 &\necho $! > pid\n```\n\n```bash\nfalse\n```\n")
    proc = subprocess.run([sys.executable, str(REPO / "tests" / "snippets.py"), str(page), "--workdir", str(tmp_path)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    assert proc.returncode == 1 and "bash exited with 1" in proc.stdout
    pid = int((tmp_path / "pid").read_text())
    # the runner sends SIGTERM to the block's process group; on a loaded machine the process may
    # take a moment to be scheduled and die, so wait for it (a runner that never signals it
    # leaves `sleep 300` running past the deadline and fails)
    deadline = time.monotonic() + 15
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            state = "gone"
        if state in ("gone", "Z") or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert state in ("gone", "Z"), f"the block's background process {pid} still runs ({state})"


# -- the README's promises (issue #32) ---------------------------------------------------------------
def test_readme_is_short_and_its_install_commands_need_only_pypi() -> None:
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    install = [b for b in snippets.parse(text) if b.lang == "bash" and "pip install" in b.code][0]
    ci = (REPO / ".ci" / "run").read_text()
    for src in (install.code, ci):
        # a local version (torch==2.13.0+cpu) is served by no index but PyTorch's own: PyPI-only machines fail
        assert "+cpu" not in src and "--index-url" not in src and "--find-links" not in src, src
    # CI installs what the README's test command installs (plus the docs)
    assert 'pip install -e ".[dev,tf,serve,torch,jax]" && python -m pytest -q' in install.code
    assert '-e ".[dev,tf,serve,torch,jax,docs]"' in ci and "mkdocs build --strict" in ci


def test_readme_and_ci_run_one_test_command() -> None:
    # README's set-up line, its Development block and .ci/run's pytest line: the same pytest
    # arguments (pytest-xdist's `-n 4 --dist loadfile` included); .ci/run adds only -p no:cacheprovider
    import re

    readme = (REPO / "README.md").read_text()
    ci = (REPO / ".ci" / "run").read_text()
    ci_cmds = re.findall(r"^python3 -m pytest (.*)$", ci, flags=re.M)
    assert len(ci_cmds) == 1, ci_cmds
    ci_args = ci_cmds[0].replace("-p no:cacheprovider", "").split()
    readme_cmds = [m.split() for m in re.findall(r"python -m pytest ([^#&\n]*?)\s*#[^\n]*CI runs", readme)]
    assert len(readme_cmds) == 2, readme_cmds
    assert all(args == ci_args for args in readme_cmds), (readme_cmds, ci_args)
    assert "-n" in ci_args and "loadfile" in ci_args  # the files run on pytest-xdist workers
