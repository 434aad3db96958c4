"""A YAML alias bomb in a spec is refused quickly with a message (issue #30: a 539-byte one kept
`tabprep check` running past 30 s)."""
from __future__ import annotations

import time

import pytest
from click.testing import CliRunner

import tabprep as tp
from tabprep.cli.main import cli

BOMB = """\
a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]
i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]
features:
  - columns: *i
"""


def test_check_refuses_an_alias_bomb_quickly(tmp_path):
    spec = tmp_path / "bomb.yaml"
    spec.write_text(BOMB)
    assert len(BOMB) < 700
    start = time.perf_counter()
    r = CliRunner().invoke(cli, ["check", str(spec)])
    assert time.perf_counter() - start < 5.0
    assert r.exit_code == 2 and "aliases" in r.output and "bomb.yaml" in r.output, r.output


def test_workflow_from_spec_refuses_it_too():
    from tabprep.workflow.spec import SpecError

    with pytest.raises(SpecError, match="aliases"):
        tp.Workflow.from_spec(BOMB)


def test_a_recursive_alias_is_refused(tmp_path):
    spec = tmp_path / "loop.yaml"
    spec.write_text("a: &a [1, *a]\nfeatures:\n  - columns: [x]\n")
    r = CliRunner().invoke(cli, ["check", str(spec)])
    assert r.exit_code == 2 and "recursive" in r.output, r.output


def test_modest_aliases_still_work(tmp_path):
    spec = tmp_path / "ok.yaml"
    spec.write_text("features:\n  - columns: [a]\n    ops: &o [FillMissing]\n  - columns: [b]\n    ops: *o\n")
    wf = tp.Workflow.from_spec(str(spec))
    assert wf.input_columns == ["a", "b"]
