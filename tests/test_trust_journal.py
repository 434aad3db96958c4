"""Commit journals are data on disk: recovery verifies them before it acts (issue #30).

A ``.tabprep-commit.json`` planted inside a received workflow folder, inside an ``--out`` folder,
or in a hidden ``.NAME.tabprep-tmp-*`` sibling must never get a folder tabprep did not write
deleted; reading (``tp.Dataset``) never deletes anything; a journal of another host (a shared
file system) is never stale by age: writers are refused naming host, pid and start time.

Expected states are plain file listings and contents written by the test.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tabprep as tp
from tabprep import ops
from tabprep.cli.main import cli

ROOT = Path(__file__).resolve().parent.parent
TXID = "0123456789ab"


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _precious(parent: Path, name: str = "precious") -> Path:
    """A user's folder of user files (tabprep did not write it)."""
    d = parent / name
    (d / "sub").mkdir(parents=True)
    (d / "thesis.txt").write_text("years of work")
    (d / "sub" / "data.csv").write_text("a,b\n1,2\n")
    return d


def _snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _journal(victim: Path, host: str = None, pid: int = None, **extra) -> dict:
    """A hostile journal: every path it names is the user's folder."""
    return {"txid": TXID, "pid": _dead_pid() if pid is None else pid, "host": host or socket.gethostname(),
            "time": time.time(), "record": str(victim.parent / "no-such-record.json"),
            "members": [{"final": str(victim), "tmp": str(victim), "old": str(victim), "what": "workflow folder",
                         "markers": ["workflow.json"]}], **extra}


def _fitted() -> tp.Workflow:
    df = pd.DataFrame({"c": ["a", "b", None, "a"], "x": [1.0, 2.0, None, 4.0]})
    return tp.Workflow((["c"] >> ops.Categorify()) + ["x"]).fit(tp.Dataset(df, cpu=True))


# -- the three scenarios ------------------------------------------------------------------------
def test_journal_planted_in_a_received_workflow_folder(tmp_path):
    victim = _precious(tmp_path)
    before = _snapshot(victim)
    received = tmp_path / "received_wf"
    _fitted().save(str(received))
    (received / ".tabprep-commit.json").write_text(json.dumps(_journal(victim)))
    _fitted().save(str(received))  # a saved workflow is replaced
    assert _snapshot(victim) == before
    assert tp.Workflow.load(str(received)).transform(pd.DataFrame({"c": ["a"], "x": [1.0]}))["c"].tolist() == [3]


def test_journal_planted_in_a_refused_out_folder(tmp_path):
    victim = _precious(tmp_path)
    before = _snapshot(victim)
    _fitted().save(str(tmp_path / "wf"))
    data = tmp_path / "data.parquet"
    pd.DataFrame({"c": ["a", "b"], "x": [1.0, 2.0]}).to_parquet(data)
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("mine")
    (out / ".tabprep-commit.json").write_text(json.dumps(_journal(victim)))
    r = CliRunner().invoke(cli, ["transform", str(tmp_path / "wf"), str(data), "--out", str(out), "-q"])
    assert r.exit_code == 2, r.output
    assert _snapshot(victim) == before
    assert (out / "mine.txt").read_text() == "mine"


def test_journal_in_a_hidden_sibling_of_a_missing_path_and_a_read(tmp_path):
    victim = _precious(tmp_path)
    before = _snapshot(victim)
    planted = tmp_path / f".data.tabprep-tmp-{TXID}"
    planted.mkdir()
    (planted / ".tabprep-commit.json").write_text(json.dumps(_journal(victim)))
    listing = sorted(os.listdir(tmp_path))
    with pytest.raises((FileNotFoundError, ValueError)):
        tp.Dataset(str(tmp_path / "data"))
    assert _snapshot(victim) == before
    assert sorted(os.listdir(tmp_path)) == listing, "reading deleted or moved something"


def test_reading_never_deletes_even_a_genuine_leftover(tmp_path):
    """A crashed first write (never committed) next to a missing path: a reader leaves it."""
    from tabprep.io import commit

    txn = commit.Transaction()
    tp.Dataset(pd.DataFrame({"x": [1, 2]})).to_parquet(str(tmp_path / "out"), transaction=txn)
    commit._ACTIVE.discard(txn.txid)  # the writer "died"
    listing = sorted(os.listdir(tmp_path))
    with pytest.raises(FileNotFoundError):
        tp.Dataset(str(tmp_path / "out"))
    assert sorted(os.listdir(tmp_path)) == listing
    commit.recover(tmp_path / "out")  # the next write there cleans it
    assert os.listdir(tmp_path) == []


# -- hypothesis: any journal, anywhere the protocol looks, deletes nothing of the user's ---------------------
PLACES = ["in_target", "tmp_sibling", "record_sibling"]


@st.composite
def hostile_journals(draw, victims):
    paths = st.sampled_from([str(v) for v in victims] + [str(v / "sub") for v in victims] + ["/", "..", ""])
    member = st.fixed_dictionaries({
        "final": paths, "tmp": paths, "old": paths,
        "what": st.sampled_from(["workflow folder", "output folder", "x"]),
        "markers": st.sampled_from([[], ["workflow.json"], ["_SUCCESS", "_metadata.json"]])})
    return {"txid": TXID, "pid": _DEAD, "host": socket.gethostname(), "time": draw(st.floats(0, 2e9)),
            "record": draw(st.one_of(paths, st.just("<existing>"))),
            "members": draw(st.lists(member, max_size=3))}


_DEAD = _dead_pid()


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), place=st.sampled_from(PLACES), reader=st.booleans())
def test_fuzz_planted_journals_delete_nothing_of_the_user(tmp_path_factory, data, place, reader):
    from tabprep.io import commit

    base = tmp_path_factory.mktemp("j")
    victims = [_precious(base, "precious"), _precious(base, ".target.tabprep-old-" + TXID)]
    before = {v: _snapshot(v) for v in victims}
    target = base / "target"
    j = data.draw(hostile_journals(victims))
    if j["record"] == "<existing>":
        j["record"] = str(base / f".target.tabprep-commit-{TXID}.json")
    if place == "in_target":
        target.mkdir()
        where = target / ".tabprep-commit.json"
    elif place == "tmp_sibling":
        (base / f".target.tabprep-tmp-{TXID}").mkdir()
        where = base / f".target.tabprep-tmp-{TXID}" / ".tabprep-commit.json"
    else:
        where = base / f".target.tabprep-commit-{TXID}.json"
    where.write_text(json.dumps(j))
    if j["record"].endswith(".json") and not Path(j["record"]).exists() and j["record"].startswith(str(base)):
        Path(j["record"]).write_text(json.dumps(j))
    if reader:
        try:
            tp.Dataset(str(target))
        except (FileNotFoundError, ValueError):
            pass
    else:
        try:
            commit.recover(target)
        except (RuntimeError, FileExistsError):
            pass
    for v in victims:
        assert v.exists() and _snapshot(v) == before[v], f"{v} changed ({place}, reader={reader}): {j}"


# -- two hosts on one shared file system ---------------------------------------------------------------------
def _other_host_write(tmp_path: Path, name: str = "out", days_old: float = 3.0) -> Path:
    """What host A's in-flight first write of ``name`` looks like from host B: its temporary,
    with a journal naming A (and a pid that means nothing here), started days ago."""
    final = tmp_path / name
    tmp = tmp_path / f".{name}.tabprep-tmp-{TXID}"
    (tmp / "_parts").mkdir(parents=True)
    (tmp / "_parts" / "part-00007.parquet").write_bytes(b"A is writing this")
    (tmp / ".tabprep-incomplete").write_text("")
    (tmp / ".tabprep-commit.json").write_text(json.dumps({
        "txid": TXID, "pid": 4242, "host": "host-a.cluster", "time": time.time() - days_old * 86400,
        "record": str(tmp_path / f".{name}.tabprep-commit-{TXID}.json"),
        "members": [{"final": str(final), "tmp": str(tmp), "old": str(tmp_path / f".{name}.tabprep-old-{TXID}"),
                     "what": "output folder", "markers": ["_SUCCESS", "_metadata.json"]}]}))
    return tmp


def test_reader_on_host_b_leaves_host_a_write_alone(tmp_path):
    tmp = _other_host_write(tmp_path)
    with pytest.raises(ValueError, match=r"in use by host host-a\.cluster, pid 4242 since \d{4}-\d\d-\d\d"):
        tp.Dataset(str(tmp_path / "out"))
    assert (tmp / "_parts" / "part-00007.parquet").read_bytes() == b"A is writing this"


def test_writer_on_host_b_is_refused_naming_host_pid_and_time(tmp_path):
    tmp = _other_host_write(tmp_path)
    with pytest.raises(RuntimeError, match=r"in use by host host-a\.cluster, pid 4242 since \d{4}-\d\d-\d\d \d\d:"):
        tp.Dataset(pd.DataFrame({"x": [1]})).to_parquet(str(tmp_path / "out"), overwrite=True)
    assert (tmp / "_parts" / "part-00007.parquet").read_bytes() == b"A is writing this"
    _fitted().save(str(tmp_path / "wf"))
    pd.DataFrame({"c": ["a"], "x": [1.0]}).to_parquet(tmp_path / "d.parquet")
    r = CliRunner().invoke(cli, ["transform", str(tmp_path / "wf"), str(tmp_path / "d.parquet"),
                                 "--out", str(tmp_path / "out"), "--overwrite", "-q"])
    assert r.exit_code != 0 and "in use by host host-a.cluster, pid 4242 since" in r.output, r.output
    assert (tmp / "_parts" / "part-00007.parquet").read_bytes() == b"A is writing this"


HOLDER = textwrap.dedent("""
    import sys, time
    import pandas as pd
    import tabprep as tp
    from tabprep.io.commit import Transaction
    txn = Transaction()
    tp.Dataset(pd.DataFrame({"x": [1, 2]})).to_parquet(sys.argv[1], overwrite=True, transaction=txn)
    print("staged", flush=True)
    sys.stdin.readline()
    txn.commit()
""")


def test_concurrent_writer_on_this_host_is_refused_naming_the_holder(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout.readline().strip() == b"staged"
        host = socket.gethostname()
        with pytest.raises(RuntimeError, match=rf"in use by host {host}, pid {proc.pid} since "):
            tp.Dataset(pd.DataFrame({"x": [9]})).to_parquet(str(out), overwrite=True)
        proc.stdin.write(b"\n")
        proc.stdin.flush()
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
        proc.wait()
    assert pd.read_parquet(out)["x"].tolist() == [1, 2]
