"""How long ``tabprep --help`` and every ``tabprep COMMAND --help`` take, in fresh processes.

    python benchmarks/cli_startup.py [--runs 7]

Prints the median and minimum wall time of each help over ``--runs`` fresh interpreters, next
to the interpreter's own start (``python -c pass``) and ``import click``, the floor under any
click program. The goal (issue #32) is <= 0.2 s for every help; the help imports no pandas,
pyarrow, dask or numpy (tests/test_cli_startup.py).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def timed(args, runs: int, env) -> tuple:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    sys.path.insert(0, str(REPO))
    from tabprep.cli.main import cli
    import click

    commands = cli.list_commands(click.Context(cli))
    py = [sys.executable]
    rows = [("python -c pass", py + ["-c", "pass"]), ("python -c 'import click'", py + ["-c", "import click"]),
            ("tabprep --help", py + ["-m", "tabprep.cli", "--help"])]
    rows += [(f"tabprep {c} --help", py + ["-m", "tabprep.cli", c, "--help"]) for c in commands]
    print(f"{'command':32} {'median s':>9} {'min s':>7}")
    for name, cmd in rows:
        med, best = timed(cmd, args.runs, env)
        print(f"{name:32} {med:9.3f} {best:7.3f}", flush=True)


if __name__ == "__main__":
    main()
