"""How long ``tabprep --help`` and every ``tabprep COMMAND --help`` take, in fresh processes.

    python benchmarks/cli_startup.py [--runs 7]

Prints the median and minimum wall time of each help over ``--runs`` fresh interpreters, next
to the interpreter's own start (``python -c pass``) and ``import click``, the floor under any
click program. The goal (issue #32) is <= 0.2 s for every help; the help imports no pandas,
pyarrow, dask or numpy (tests/test_cli_startup.py). Bytecode is cached (in a temporary folder),
as it is after ``pip install``, even where PYTHONDONTWRITEBYTECODE=1 is set;
``--no-bytecode-cache`` times a checkout whose modules are compiled on every start.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def timed(args, runs: int, env, cwd) -> tuple:
    """Median and minimum wall seconds, and the median CPU seconds (user + sys) of the process:
    on a loaded machine the wall time measures the queue for a core, the CPU time the work."""
    times, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd, check=True)
        times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(times), min(times), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--repo", default=str(REPO), help="the tabprep checkout to time (default: this one)")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="compile every module on every run (PYTHONDONTWRITEBYTECODE=1 and no cache), as in a "
                             "read-only checkout; default: bytecode cached as after any pip install")
    args = parser.parse_args()
    repo = Path(args.repo).resolve()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(repo)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    # An installed package has its bytecode cached; a shell with PYTHONDONTWRITEBYTECODE=1 (CI images
    # often set it) would time compiling tabprep's CLI modules on every run instead (~20-40 ms).
    # The cache goes to a temporary folder (PYTHONPYCACHEPREFIX), not into the checkout; each
    # command runs once untimed to fill it.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cache = tempfile.mkdtemp(prefix="tabprep-startup-pycache-")
    env["PYTHONPYCACHEPREFIX"] = cache
    if args.no_bytecode_cache:   # the installed packages keep their bytecode; the checkout's is not written
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        del env["PYTHONPYCACHEPREFIX"]
    sys.path.insert(0, str(repo))
    from tabprep.cli.main import cli
    import click

    commands = cli.list_commands(click.Context(cli))
    py = [sys.executable]
    rows = [("python -c pass", py + ["-c", "pass"]), ("python -c 'import click'", py + ["-c", "import click"]),
            ("tabprep --help", py + ["-m", "tabprep.cli", "--help"])]
    rows += [(f"tabprep {c} --help", py + ["-m", "tabprep.cli", c, "--help"]) for c in commands]
    print(f"bytecode: {'of the checkout not cached (compiled on every run)' if args.no_bytecode_cache else 'cached (' + cache + ')'}")
    print(f"{'command':32} {'wall median s':>14} {'wall min s':>11} {'CPU median s':>13}")
    for name, cmd in rows:
        timed(cmd, 1, env, repo)                            # warm-up: fills the bytecode cache, the page cache
        med, best, cpu = timed(cmd, args.runs, env, repo)  # cwd: `python -m` puts it first on sys.path
        print(f"{name:32} {med:14.3f} {best:11.3f} {cpu:13.3f}", flush=True)
    shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
