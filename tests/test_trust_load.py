"""Loading a saved workflow executes nothing the folder names unless the user opts in (issue #11).

A hostile ``workflow.json`` may name any ``module:qualname``; loading it must not import the
module, let alone call it. Functions resolve only against tabprep's own ops/functions and the
ones the loading process registered (``tp.register_function``), or anything with an explicit
``trusted=True`` / ``allow_pickle=True``. Statistics files carry checksums in workflow.json.
"""
from __future__ import annotations

import json
import shutil
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tabprep as tp
from tabprep import ops
from tabprep.cli.main import cli

from conftest import upper_name

EVIL = "tabprep_evil_probe"


@pytest.fixture
def evil_module(tmp_path, monkeypatch):
    """An importable module that leaves a marker file when imported and when any of its functions runs."""
    marker = tmp_path / "marker"
    src = tmp_path / "evil_src"
    src.mkdir()
    (src / f"{EVIL}.py").write_text(textwrap.dedent(f"""
        import pathlib
        pathlib.Path({str(marker)!r} + ".imported").write_text("x")
        def run(*a, **k):
            pathlib.Path({str(marker)!r} + ".called").write_text("x")
            return "renamed"
        class Op:
            pass
    """))
    monkeypatch.syspath_prepend(str(src))
    sys.modules.pop(EVIL, None)
    yield marker
    sys.modules.pop(EVIL, None)


def _untouched(marker: Path) -> None:
    assert EVIL not in sys.modules, "the named module was imported"
    assert not Path(str(marker) + ".imported").exists(), "the named module was imported"
    assert not Path(str(marker) + ".called").exists(), "a function named by the file ran"


def _saved(tmp_path: Path, wf) -> Path:
    df = pd.DataFrame({"a": [1, 2, 3, 2], "b": ["x", "y", None, "x"], "label": [0, 1, 0, 1]})
    wf.fit(df)
    path = tmp_path / "wf"
    wf.save(path)
    return path


def _rename_wf():
    return tp.Workflow((["a"] >> ops.Rename(f=upper_name)) + (["b"] >> ops.Categorify()) + ["label"])


def _edit(path: Path, fn) -> None:
    spec = json.loads((path / "workflow.json").read_text())
    fn(spec)
    (path / "workflow.json").write_text(json.dumps(spec))


def _rename_entry(spec):
    return next(n for n in spec["nodes"] if n.get("op") == "Rename")


def test_tampered_function_import_is_refused_before_import(tmp_path, evil_module):
    path = _saved(tmp_path, _rename_wf())
    _edit(path, lambda s: _rename_entry(s)["params"].__setitem__("f", {"import": f"{EVIL}:run"}))
    with pytest.raises(Exception, match=rf"(?s){EVIL}:run.*(register_function|trusted=True)"):
        tp.Workflow.load(path)
    _untouched(evil_module)


def test_os_system_in_rename_runs_nothing(tmp_path):
    path = _saved(tmp_path, _rename_wf())
    probe = tmp_path / "pwned"
    _edit(path, lambda s: _rename_entry(s)["params"].__setitem__("f", {"import": "os:system"}))
    # os is imported already; what matters is that os.system is never called (Rename calls f on names)
    with pytest.raises(Exception, match="os:system"):
        wf = tp.Workflow.load(path)
        wf.transform(pd.DataFrame({"a": [1], "b": ["x"], "label": [0]}))
    result = CliRunner().invoke(cli, ["inspect", str(path)])
    assert result.exit_code != 0
    assert "os:system" in result.output
    assert not probe.exists()


def test_tampered_op_class_is_refused_before_import(tmp_path, evil_module):
    path = _saved(tmp_path, _rename_wf())
    _edit(path, lambda s: _rename_entry(s).__setitem__("op_class", f"{EVIL}:Op"))
    with pytest.raises(Exception, match=EVIL):
        tp.Workflow.load(path)
    _untouched(evil_module)
    result = CliRunner().invoke(cli, ["inspect", str(path)])
    assert result.exit_code != 0
    _untouched(evil_module)


def test_trusted_load_imports_the_named_function(tmp_path, evil_module):
    path = _saved(tmp_path, _rename_wf())
    _edit(path, lambda s: _rename_entry(s)["params"].__setitem__("f", {"import": f"{EVIL}:run"}))
    wf = tp.Workflow.load(path, trusted=True)
    out = wf.transform(pd.DataFrame({"a": [1], "b": ["x"], "label": [0]}))
    assert "renamed" in list(out.columns)


def test_registered_function_loads_without_trust(tmp_path):
    def shout(name: str) -> str:
        return name.upper() + "!"

    tp.register_function(shout, name="tests.shout")
    wf = tp.Workflow((["a"] >> ops.Rename(f=shout)) + ["label"])
    path = _saved(tmp_path, wf)
    spec = json.loads((path / "workflow.json").read_text())
    assert _rename_entry(spec)["params"]["f"] == {"import": "tests.shout"}
    wf2 = tp.Workflow.load(path)
    out = wf2.transform(pd.DataFrame({"a": [5], "label": [1]}))
    assert list(out.columns) == ["A!", "label"]


def test_importable_module_function_needs_registration_or_trust(tmp_path):
    # a plain importable function (conftest:...) is saved by import path, but loading it back into a
    # process that did not register it is refused unless trusted
    wf = tp.Workflow((["a"] >> ops.LambdaOp(np.negative)) + ["label"])
    path = _saved(tmp_path, wf)
    out_ok = tp.Workflow.load(path, trusted=True).transform(pd.DataFrame({"a": [3], "label": [0]}))
    assert out_ok["a"].tolist() == [-3]
    with pytest.raises(Exception, match="numpy:negative"):
        tp.Workflow.load(path)
    tp.register_function(np.negative)
    assert tp.Workflow.load(path).transform(pd.DataFrame({"a": [3], "label": [0]}))["a"].tolist() == [-3]


def test_swapped_vocabulary_files_are_refused(tmp_path):
    wf = tp.Workflow((["a"] >> ops.Categorify()) + (["b"] >> ops.Categorify()) + ["label"])
    path = _saved(tmp_path, wf)
    files = sorted(p for p in (path / "stats").rglob("*.parquet"))
    assert len(files) >= 2
    a, b = files[0], files[1]
    tmp = a.with_suffix(".swap")
    shutil.move(a, tmp)
    shutil.move(b, a)
    shutil.move(tmp, b)
    with pytest.raises(Exception, match=rf"(?i)({a.name}|{b.name}).*(checksum|changed|modified)|(checksum|changed|modified).*({a.name}|{b.name})"):
        tp.Workflow.load(path)


def test_truncated_statistics_file_is_refused(tmp_path):
    wf = tp.Workflow((["b"] >> ops.Categorify()) + ["label"])
    path = _saved(tmp_path, wf)
    f = next((path / "stats").rglob("*.parquet"))
    f.write_bytes(f.read_bytes()[:-10])
    with pytest.raises(Exception, match=f.name):
        tp.Workflow.load(path)


# -- fuzz: whatever workflow.json says, nothing outside the allow-list is imported or run ---------------
_names = st.sampled_from([f"{EVIL}:run", f"{EVIL}:Op", f"{EVIL}", f"{EVIL}:run.__call__", "os:system",
                          "subprocess:call", "builtins:exec", "builtins:eval", "importlib:import_module",
                          f"{EVIL}.sub:run", "tabprep.ops:Rename"])
_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8) | _names,
                     lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(
                         ["import", "pickled", "f", "op_class", "module", "cls", "x"]), c, max_size=3),
                     max_leaves=6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.sampled_from(["f", "op_class", "params", "op", "state"]),
       value=st.one_of(_names, st.fixed_dictionaries({"import": _names}), st.fixed_dictionaries({"pickled": _names}), _json))
def test_fuzz_tampered_json_imports_and_runs_nothing(tmp_path, evil_module, where, value):
    base = tmp_path / "base"
    if not base.exists():
        _saved(tmp_path, _rename_wf())
        shutil.move(tmp_path / "wf", base)
    path = tmp_path / "fuzz"
    shutil.rmtree(path, ignore_errors=True)
    shutil.copytree(base, path)

    def tamper(spec):
        e = _rename_entry(spec)
        if where == "f":
            e["params"]["f"] = value
        elif where == "params":
            e["params"] = value if isinstance(value, dict) else {"f": value}
        else:
            e[where] = value

    _edit(path, tamper)
    try:
        wf = tp.Workflow.load(path)
        wf.transform(pd.DataFrame({"a": [1], "b": ["x"], "label": [0]}))
    except Exception:
        pass
    _untouched(evil_module)


# -- decisions of the implementation (helper trust-load) -----------------------------------------------
def test_spec_file_import_still_imports(tmp_path, evil_module):
    # a spec file is user-written code-like config: its {import: ...} imports as documented
    spec = {"features": [{"columns": ["a"], "ops": [{"Rename": {"f": {"import": f"{EVIL}:run"}}}]}]}
    wf = tp.Workflow.from_spec(spec)
    assert Path(str(evil_module) + ".imported").exists()
    assert wf.output_columns == ["renamed"]


def test_allow_pickle_implies_trusted_imports(tmp_path, evil_module):
    path = _saved(tmp_path, _rename_wf())
    _edit(path, lambda s: _rename_entry(s)["params"].__setitem__("f", {"import": f"{EVIL}:run"}))
    wf = tp.Workflow.load(path, allow_pickle=True)
    assert "renamed" in list(wf.transform(pd.DataFrame({"a": [1], "b": ["x"], "label": [0]})).columns)


def test_registered_op_class_by_path_loads_without_trust(tmp_path):
    # an op whose name is taken by another registered op is saved with op_class; the op registry
    # (by module:qualname) is on the allow-list
    path = _saved(tmp_path, _rename_wf())
    _edit(path, lambda s: _rename_entry(s).__setitem__("op_class", "tabprep.ops.rename:Rename"))
    out = tp.Workflow.load(path).transform(pd.DataFrame({"a": [1], "b": ["x"], "label": [0]}))
    assert list(out.columns) == ["A_X", "b", "label"]


def test_pickled_path_outside_stats_is_refused(tmp_path):
    wf = tp.Workflow((["a"] >> ops.LambdaOp(lambda c: c + 1)) + ["label"])
    df = pd.DataFrame({"a": [1, 2], "label": [0, 1]})
    wf.fit(df)
    wf.save(tmp_path / "wf", allow_pickle=True)
    entry = lambda s: next(n for n in s["nodes"] if n.get("op") == "LambdaOp")  # noqa: E731
    _edit(tmp_path / "wf", lambda s: entry(s)["params"].__setitem__("f", {"pickled": "../elsewhere.pkl"}))
    with pytest.raises(ValueError, match=r"elsewhere\.pkl.*not a path under stats/"):
        tp.Workflow.load(tmp_path / "wf", allow_pickle=True)


def test_missing_and_edited_statistics_files(tmp_path):
    path = _saved(tmp_path, tp.Workflow((["b"] >> ops.Categorify()) + ["label"]))
    spec = json.loads((path / "workflow.json").read_text())
    rec = spec["stats_files"]
    assert spec["format_version"] >= 2 and len(rec) == 1
    rel, info = next(iter(rec.items()))
    import hashlib

    import pyarrow.parquet as pq

    assert info["sha256"] == hashlib.sha256((path / rel).read_bytes()).hexdigest()
    assert info["rows"] == pq.read_metadata(path / rel).num_rows == 2  # the distinct values x, y
    # a rewritten vocabulary of the same shape (values changed) is refused
    t = pq.read_table(path / rel).to_pandas()
    t["value"] = t["value"].replace({"x": "y", "y": "x"})
    t.to_parquet(path / rel, index=False)
    with pytest.raises(ValueError, match=rf"{Path(rel).name}.*checksum"):
        tp.Workflow.load(path)
    (path / rel).unlink()
    with pytest.raises(ValueError, match=rf"{Path(rel).name} is missing"):
        tp.Workflow.load(path)
    result = CliRunner().invoke(cli, ["inspect", str(path)])
    assert result.exit_code != 0 and "is missing" in result.output


def test_old_folder_without_checksums_loads_with_warning(tmp_path, caplog):
    original = _rename_wf()
    path = _saved(tmp_path, original)
    _edit(path, lambda s: (s.pop("stats_files"), s.__setitem__("format_version", 1)))
    with caplog.at_level("WARNING"):
        wf = tp.Workflow.load(path)
    assert "without checksums" in caplog.text
    df = pd.DataFrame({"a": [1, 2], "b": ["y", "x"], "label": [0, 1]})
    pd.testing.assert_frame_equal(wf.transform(df), original.transform(df))
    # a current-format folder whose checksums were removed is refused
    _edit(path, lambda s: s.__setitem__("format_version", 2))
    with pytest.raises(ValueError, match="stats_files"):
        tp.Workflow.load(path)


def test_cli_trusted_flag(tmp_path, evil_module):
    path = _saved(tmp_path, _rename_wf())
    _edit(path, lambda s: _rename_entry(s)["params"].__setitem__("f", {"import": f"{EVIL}:run"}))
    refused = CliRunner().invoke(cli, ["inspect", str(path)])
    assert refused.exit_code == 2 and "--trusted" in refused.output
    _untouched(evil_module)
    ok = CliRunner().invoke(cli, ["inspect", "--trusted", str(path)])
    assert ok.exit_code == 0, ok.output
    assert "renamed" in ok.output


def test_register_function_decorator_and_lambda_names():
    @tp.register_function(name="tests.plus_one")
    def plus_one(c):
        return c + 1

    assert tp.registry.resolve_function("tests.plus_one", trusted=False) is plus_one
    with pytest.raises(ValueError, match="name="):
        tp.register_function(lambda c: c)
    assert tp.register_function(upper_name) is upper_name


# -- paths inside an op's saved state stay inside stats/ and are checksummed (issue #30) ----------------
def _state_wf(tmp_path: Path) -> Path:
    """A saved workflow with a Categorify vocabulary and a JoinExternal side table, plus a parquet
    file outside it (``outside.parquet``, distinct values) and one planted under its stats/ that
    the save did not write (no checksum)."""
    side = pd.DataFrame({"a": [1, 2, 3], "price": [9.5, 3.0, 1.25]})
    wf = tp.Workflow((["b"] >> ops.Categorify()) + (["a"] >> ops.JoinExternal(side, on="a")) + ["label"])
    path = _saved(tmp_path, wf)
    outside = pd.DataFrame({"value": ["EVIL", "EVIL2"], "count": [10**6, 10**6], "a": [1, 2], "price": [-1.0, -2.0]})
    outside.to_parquet(tmp_path / "outside.parquet")
    node_dirs = sorted(p for p in (path / "stats").iterdir())
    outside.to_parquet(node_dirs[0] / "planted.parquet")
    return path


def _state_entries(spec):
    cat = next(n for n in spec["nodes"] if n.get("op") == "Categorify")
    join = next(n for n in spec["nodes"] if n.get("op") == "JoinExternal")
    return cat, join


def _set_state_path(spec, op: str, value) -> None:
    cat, join = _state_entries(spec)
    if op == "Categorify":
        vocab = next(iter(cat["state"]["vocabularies"].values()))
        vocab["files"] = [value]
    else:
        join["state"]["file"] = value


@pytest.mark.parametrize("op", ["Categorify", "JoinExternal"])
@pytest.mark.parametrize("bad", ["ABS", "../../outside.parquet", "../n1/x.parquet", "planted.parquet"])
def test_state_paths_outside_stats_or_unrecorded_are_refused(tmp_path, op, bad):
    path = _state_wf(tmp_path)
    value = str(tmp_path / "outside.parquet") if bad == "ABS" else bad
    _edit(path, lambda s: _set_state_path(s, op, value))
    with pytest.raises(ValueError) as err:
        tp.Workflow.load(path)
    msg = str(err.value)
    assert "workflow.json" in msg and op in msg and value in msg, msg


def test_a_symlinked_statistics_file_is_refused(tmp_path):
    path = _state_wf(tmp_path)
    spec = json.loads((path / "workflow.json").read_text())
    rel = next(iter(spec["stats_files"]))
    target = path / rel
    shutil.copy(target, tmp_path / "copy.parquet")
    target.unlink()
    target.symlink_to(tmp_path / "copy.parquet")  # same bytes, same checksum: still refused
    with pytest.raises(ValueError, match="symbolic link"):
        tp.Workflow.load(path)


_state_paths = st.one_of(
    st.sampled_from(["ABS", "../../outside.parquet", "planted.parquet", "", ".", "..", "/", "a//b", "..\\x",
                     "stats/../outside.parquet", "./planted.parquet"]),
    st.text(alphabet=st.sampled_from(list("./\\ab_")), max_size=12),
    st.none(), st.integers(), st.lists(st.text(max_size=3), max_size=2))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(op=st.sampled_from(["Categorify", "JoinExternal"]), value=_state_paths)
def test_fuzz_state_paths_read_nothing_outside(tmp_path, op, value):
    base = tmp_path / "base"
    if not base.exists():
        base.mkdir()
        shutil.move(_state_wf(base), base / "saved")
    path = tmp_path / "fuzz"
    shutil.rmtree(path, ignore_errors=True)
    shutil.copytree(base / "saved", path)
    if value == "ABS":
        value = str(base / "outside.parquet")
    _edit(path, lambda s: _set_state_path(s, op, value))
    try:
        wf = tp.Workflow.load(path)
    except ValueError as exc:
        assert "workflow.json" in str(exc), exc  # a clear refusal, naming the file
        return
    # loaded: it can only have read its own recorded files (never the planted/outside values)
    out = wf.transform(pd.DataFrame({"a": [1, 2], "b": ["x", "EVIL"], "label": [0, 1]}))
    assert out["b"].tolist()[1] == 2 and -1.0 not in out["price"].tolist()


def test_a_workflow_json_linked_to_a_file_outside_the_folder_is_refused(tmp_path):
    # the statistics files and stats/ may not be links out of the folder; workflow.json, which says
    # what runs, was followed. A folder that is itself a link stays fine (its files are inside it)
    import pandas as pd

    import tabprep as tp
    from tabprep import ops

    tp.Workflow(["x"] >> ops.Normalize()).fit(pd.DataFrame({"x": [1.0, 2.0]})).save(str(tmp_path / "wf"))
    outside = tmp_path / "elsewhere.json"
    (tmp_path / "wf" / "workflow.json").rename(outside)
    (tmp_path / "wf" / "workflow.json").symlink_to(outside)
    with pytest.raises(ValueError, match=r"workflow\.json.*symbolic link.*outside"):
        tp.Workflow.load(str(tmp_path / "wf"))
    (tmp_path / "link").symlink_to(tmp_path / "real")
    wf = tp.Workflow(["x"] >> ops.Normalize()).fit(pd.DataFrame({"x": [1.0, 2.0]}))
    wf.save(str(tmp_path / "real"))
    new = pd.DataFrame({"x": [3.0]})
    assert tp.Workflow.load(str(tmp_path / "link")).transform(new)["x"].tolist() == wf.transform(new)["x"].tolist()
