"""Helpers of the CLI trust tests (tests/test_trust_cli.py, tests/test_trust_io.py): run a command in
process, and read which version an output folder and a saved workflow hold. Nothing here calls tabprep
to compute an expected value."""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from tabprep.cli.main import cli


def run(*args, code: int = 0):
    """``tabprep ARGS`` in process; asserts the exit code."""
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result


def cardinalities(out: Path, wf: Path):
    """(cardinality of C1 in the output's _schema.json, in the saved workflow.json), or None if either
    is unreadable."""
    try:
        o = json.loads((out / "_schema.json").read_text())
        w = json.loads((wf / "workflow.json").read_text())
    except (OSError, ValueError):
        return None
    oc = next(c for c in o["columns"] if c["name"] == "C1")["properties"]["cardinality"]
    wc = next(c for c in w["output_schema"]["columns"] if c["name"] == "C1")["properties"]["cardinality"]
    return oc, wc
