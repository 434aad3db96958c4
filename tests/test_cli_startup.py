"""``tabprep --help`` stays fast: no help imports pandas, pyarrow, dask or numpy (issue #32), and
``import tabprep`` imports no deep-learning framework or cuDF.

Timings: ``python benchmarks/cli_startup.py`` (goal: every help <= 0.2 s).
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
HEAVY = ("pandas", "numpy", "pyarrow", "dask", "distributed", "fsspec", "yaml", "scipy")
FRAMEWORKS = ("tensorflow", "torch", "jax", "keras", "cudf", "cupy", "dask_cudf")

#: standard-library modules that cost milliseconds each and that only a running command needs
#: (logging pulls traceback, string, weakref...): --help must not import them either
LIGHT_BUT_NOT_FREE = ("logging", "json", "difflib", "traceback", "signal", "select")

#: every command's --help in one interpreter: the data libraries loaded after each (any), and the
#: standard-library modules above loaded beyond what the interpreter's start had already imported
PROBE = """
import sys
before = set(sys.modules)   # what the interpreter's start (site, .pth files) already imported
from tabprep.cli.main import cli
import click
names = cli.list_commands(click.Context(cli))
heavy, light = {}, {}
for args in [["--help"]] + [[n, "--help"] for n in names]:
    try:
        cli.main(args=args, prog_name="tabprep", standalone_mode=False)
    except SystemExit:
        pass
    heavy[" ".join(args)] = sorted(m for m in %r if m in sys.modules)
    light[" ".join(args)] = sorted(m for m in %r if m in sys.modules and m not in before)
print(repr({"commands": names, "heavy": heavy, "light": light}))   # repr, not json: no json import
""" % (HEAVY, LIGHT_BUT_NOT_FREE)


def _run(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture(scope="module")
def helps() -> dict:
    proc = _run(PROBE)
    assert proc.returncode == 0, proc.stderr
    return ast.literal_eval(proc.stdout.strip().splitlines()[-1])


def test_help_of_every_command_imports_no_data_libraries(helps: dict) -> None:
    # the lazily registered commands are listed (and their modules importable)
    assert {"fit", "transform", "fit-transform", "convert", "check", "inspect", "generate", "demo",
            "serve"} <= set(helps["commands"])
    loaded = {args: mods for args, mods in helps["heavy"].items() if mods}
    assert not loaded, f"these helps import data libraries (move the imports into the command body): {loaded}"


def test_help_imports_no_stdlib_module_only_commands_need(helps: dict) -> None:
    seen = helps["light"]
    assert len(seen) >= 12, seen
    loaded = {args: mods for args, mods in seen.items() if mods}
    assert not loaded, f"these helps import modules only a running command needs (import them in the body): {loaded}"


def test_help_output_lists_lazy_commands() -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-m", "tabprep.cli", "--help"], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "serve" in out.stdout and "fit-transform" in out.stdout
    serve = subprocess.run([sys.executable, "-m", "tabprep.cli", "serve", "--help"], capture_output=True, text=True,
                           env=env, timeout=120)
    assert serve.returncode == 0 and "WF_DIR" in serve.stdout


def test_import_tabprep_imports_no_framework_until_used() -> None:
    proc = _run("import sys, tabprep\n"
                f"print(sorted(m for m in {FRAMEWORKS + HEAVY!r} if m in sys.modules))\n"
                "tabprep.Workflow, tabprep.Dataset, tabprep.ServingTransform\n"
                f"print(sorted(m for m in {FRAMEWORKS!r} if m in sys.modules))\n"
                "print(tabprep.__version__, 'Workflow' in dir(tabprep))")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[0] == "[]", f"`import tabprep` imported {lines[0]}"
    assert lines[1] == "[]", f"using tabprep's public names imported {lines[1]}"
    assert lines[2].endswith("True")


def test_public_names_resolve() -> None:
    import tabprep

    for name in tabprep.__all__:
        assert getattr(tabprep, name) is not None, name
    from tabprep import Workflow, ops
    assert Workflow.__module__.startswith("tabprep.workflow") and hasattr(ops, "Categorify")
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        tabprep.nope  # noqa: B018


def test_subpackages_resolve_as_attributes() -> None:
    proc = _run("import tabprep as tp\n"
                "print(tp.workflow.as_node.__name__, tp.backend.has_cudf.__name__, tp.io.Dataset.__name__)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["as_node", "has_cudf", "Dataset"]
