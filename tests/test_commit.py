"""Atomic commit of tabprep's folders (issue #11): outputs and saved workflows are replaced
all-or-none, a folder tabprep did not write is never replaced, and whatever a crash leaves is
recovered by the next run at that path (old or new complete state, never a mix, never lost)."""
from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import tabprep as tp
from tabprep import ops
from tabprep.io import commit
from tabprep.io.commit import Transaction

ROOT = Path(__file__).resolve().parent.parent


# -- helpers: independent readers of what is on disk ---------------------------------------------
def frame(version: int) -> pd.DataFrame:
    """Version v: 10*v rows, x = v*1000 + row (so every version's values are distinct)."""
    n = 10 * version
    return pd.DataFrame({"x": np.arange(n, dtype="int64") + 1000 * version,
                         "y": np.linspace(0.0, 1.0, n) * version})


def output_version(path: Path) -> int:
    """The version a parquet output folder holds, read with pyarrow only; fails unless complete."""
    assert (path / "_SUCCESS").exists() and (path / "_metadata.json").exists(), f"{path} is not complete"
    files = sorted(p for p in path.glob("*.parquet"))
    x = pd.concat([pq.read_table(f).to_pandas() for f in files])["x"].to_numpy()
    version = int(x[0]) // 1000
    assert x.tolist() == list(range(1000 * version, 1000 * version + 10 * version)), "a mix of versions"
    return version


def fitted(version: int) -> tp.Workflow:
    wf = tp.Workflow(["y"] >> ops.Normalize())
    wf.fit(tp.Dataset(frame(version)))
    return wf


def workflow_version(path: Path) -> int:
    """The version a saved workflow holds: Normalize's mean, checked against pandas."""
    wf = tp.Workflow.load(str(path))
    probe = pd.DataFrame({"y": [0.0]})
    got = float(wf.transform(probe)["y"].iloc[0])
    for v in range(1, 6):
        y = frame(v)["y"]
        if np.isclose(got, (0.0 - y.mean()) / y.std(ddof=0), rtol=1e-4) or \
                np.isclose(got, (0.0 - y.mean()) / y.std(ddof=1), rtol=1e-4):
            return v
    raise AssertionError(f"{path} holds no known workflow version ({got})")


def hidden(parent: Path) -> list:
    return sorted(n for n in os.listdir(parent) if ".tabprep-" in n)


# -- a folder tabprep did not write is never replaced --------------------------------------------
def test_save_refuses_a_folder_of_user_files_and_keeps_them(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("precious")
    (folder / "data.csv").write_text("a,b\n1,2\n")
    with pytest.raises(FileExistsError, match="tabprep did not write it") as exc:
        fitted(1).save(str(folder))
    assert str(folder) in str(exc.value)
    assert sorted(os.listdir(folder)) == ["data.csv", "notes.txt"]
    assert (folder / "notes.txt").read_text() == "precious"
    assert hidden(tmp_path) == []


def test_save_replaces_a_saved_workflow_and_an_empty_folder(tmp_path):
    (tmp_path / "empty").mkdir()
    fitted(1).save(str(tmp_path / "empty"))
    assert workflow_version(tmp_path / "empty") == 1
    fitted(2).save(str(tmp_path / "empty"))
    assert workflow_version(tmp_path / "empty") == 2
    assert hidden(tmp_path) == [] and not (tmp_path / "empty" / commit.JOURNAL_FILE).exists()


def test_kinds_are_not_interchangeable(tmp_path):
    # a saved workflow is not an output folder and vice versa: neither replaces the other
    fitted(1).save(str(tmp_path / "wf"))
    with pytest.raises(FileExistsError, match="tabprep did not write it"):
        tp.Dataset(frame(1)).to_parquet(str(tmp_path / "wf"), overwrite=True)
    tp.Dataset(frame(1)).to_parquet(str(tmp_path / "out"))
    with pytest.raises(FileExistsError, match="tabprep did not write it"):
        fitted(1).save(str(tmp_path / "out"))
    assert workflow_version(tmp_path / "wf") == 1 and output_version(tmp_path / "out") == 1


def test_spark_style_success_file_is_not_enough(tmp_path):
    # Hadoop/Spark outputs hold _SUCCESS too: without tabprep's _metadata.json they are not ours
    spark = tmp_path / "spark"
    spark.mkdir()
    (spark / "_SUCCESS").write_text("")
    (spark / "part-0000.snappy.parquet").write_bytes(b"PAR1")
    with pytest.raises(FileExistsError, match="tabprep did not write it"):
        tp.Dataset(frame(1)).to_parquet(str(spark), overwrite=True)
    assert sorted(os.listdir(spark)) == ["_SUCCESS", "part-0000.snappy.parquet"]


def test_a_file_at_the_path_is_refused(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(FileExistsError, match="existing file"):
        fitted(1).save(str(tmp_path / "f"))
    assert (tmp_path / "f").read_text() == "x"


# -- joint commit ---------------------------------------------------------------------------------
def write_both(tmp_path: Path, version: int) -> None:
    with Transaction() as txn:
        tp.Dataset(frame(version)).to_parquet(str(tmp_path / "out"), overwrite=True, transaction=txn)
        fitted(version).save(str(tmp_path / "wf"), transaction=txn)


def test_joint_commit_both_or_neither_on_error(tmp_path):
    write_both(tmp_path, 1)
    assert output_version(tmp_path / "out") == 1 and workflow_version(tmp_path / "wf") == 1
    # the output is written, then the job fails before the workflow is saved: neither changes
    with pytest.raises(ZeroDivisionError):
        with Transaction() as txn:
            tp.Dataset(frame(2)).to_parquet(str(tmp_path / "out"), overwrite=True, transaction=txn)
            1 / 0
    assert output_version(tmp_path / "out") == 1 and workflow_version(tmp_path / "wf") == 1
    assert hidden(tmp_path) == []
    # a writer failing inside the transaction (a column missing) leaves the other folders old too
    with pytest.raises(Exception):
        with Transaction() as txn:
            fitted(3).save(str(tmp_path / "wf"), transaction=txn)
            tp.Workflow(["nope"] >> ops.Normalize()).fit(tp.Dataset(frame(3)))
    assert output_version(tmp_path / "out") == 1 and workflow_version(tmp_path / "wf") == 1
    assert hidden(tmp_path) == []
    write_both(tmp_path, 2)
    assert output_version(tmp_path / "out") == 2 and workflow_version(tmp_path / "wf") == 2
    assert hidden(tmp_path) == []


def test_joint_commit_refuses_nested_or_equal_paths(tmp_path):
    with Transaction() as txn:
        txn.stage(tmp_path / "a", commit.OUTPUT).finish()
        with pytest.raises(ValueError, match="one is inside the other"):
            txn.stage(tmp_path / "a" / "b", commit.WORKFLOW)
        with pytest.raises(ValueError, match="same folder"):
            txn.stage(tmp_path / "a", commit.WORKFLOW)


def test_commit_refuses_user_files_that_appeared_during_the_job(tmp_path):
    txn = Transaction()
    st = txn.stage(tmp_path / "out", commit.OUTPUT, overwrite=True)
    (st.tmp / "_SUCCESS").write_text("")
    st.finish()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mine.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="tabprep did not write it"):
        txn.commit()
    assert os.listdir(tmp_path / "out") == ["mine.txt"] and hidden(tmp_path) == []


# -- crashes between the steps of a commit (the internals, then what the next run does) ----------
STEPS = ["staged", "prepared", "recorded", "aside0", "aside1", "in0", "in1"]


def crash_during_joint_commit(tmp_path: Path, version: int, step: str) -> None:
    """Run a joint commit of out + wf up to ``step`` and 'crash' (abandon it, no cleanup)."""
    txn = Transaction()
    tp.Dataset(frame(version)).to_parquet(str(tmp_path / "out"), overwrite=True, transaction=txn)
    fitted(version).save(str(tmp_path / "wf"), transaction=txn)
    s0, s1 = txn.stages
    plan = [("prepared", txn._prepare), ("recorded", txn._write_record), ("aside0", lambda: txn._move_aside(s0)),
            ("aside1", lambda: txn._move_aside(s1)), ("in0", lambda: txn._move_in(s0)),
            ("in1", lambda: txn._move_in(s1))]
    for name, fn in plan:
        if STEPS.index(name) > STEPS.index(step):
            break
        fn()
    commit._ACTIVE.discard(txn.txid)  # the process is gone: its temporaries are stale


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("recover_at", ["out", "wf"])
def test_crash_between_renames_recovers_both_old_or_both_new(tmp_path, step, recover_at):
    write_both(tmp_path, 1)
    crash_during_joint_commit(tmp_path, 2, step)
    done = commit.recover(tmp_path / recover_at)  # what the next run at either path does first
    expected = 2 if STEPS.index(step) >= STEPS.index("recorded") else 1
    assert output_version(tmp_path / "out") == expected, done
    assert workflow_version(tmp_path / "wf") == expected, done
    assert hidden(tmp_path) == [], "no temporary, old copy or commit record may remain"
    assert not (tmp_path / "out" / commit.JOURNAL_FILE).exists()


class Killed(BaseException):
    """Stands for SIGKILL: nothing after it runs (not an Exception, so no handler sees it)."""


MUTATIONS = ("rename", "replace", "unlink", "remove", "rmdir", "mkdir")


@contextlib.contextmanager
def killed_before_change(kill_at: int):
    """Inside the block, the ``kill_at``-th file-system change (a rename, a deletion, a new folder,
    a file opened for writing) and every later one raise :class:`Killed` instead of happening. Yields a one-item list
    counting the changes (``kill_at`` past them: no kill)."""
    import builtins

    real = {name: getattr(os, name) for name in MUTATIONS}
    real_open = builtins.open
    count = [0]

    def step():
        count[0] += 1
        if kill_at and count[0] >= kill_at:  # and every change after it: a killed process changes nothing
            raise Killed()  # (the commit's `except BaseException` handlers would otherwise undo it)

    def counting(name):
        def call(*args, **kwargs):
            step()
            return real[name](*args, **kwargs)
        return call

    def counting_open(file, mode="r", *args, **kwargs):
        if any(m in mode for m in "wax+"):
            step()
        return real_open(file, mode, *args, **kwargs)

    for name in real:
        setattr(os, name, counting(name))
    builtins.open = counting_open
    try:
        yield count
    finally:
        for name, orig in real.items():
            setattr(os, name, orig)
        builtins.open = real_open


def kill_commit_at(base: Path, kill_at: int) -> int:
    """Write out + wf version 1 in ``base``, then commit version 2 jointly and 'kill' the process
    before the ``kill_at``-th file-system change of the commit; return the commit's changes."""
    write_both(base, 1)
    txn = Transaction()
    tp.Dataset(frame(2), npartitions=3).to_parquet(str(base / "out"), overwrite=True, transaction=txn)
    fitted(2).save(str(base / "wf"), transaction=txn)
    try:
        with killed_before_change(kill_at) as count:
            txn.commit()
    except Killed:
        commit._ACTIVE.discard(txn.txid)  # the process is gone
    return count[0]


def recover_both(base: Path, kill_at: int = 0) -> int:
    """What the next run at either path does first (killed before its ``kill_at``-th change)."""
    try:
        with killed_before_change(kill_at) as count:
            commit.recover(base / "out")
            commit.recover(base / "wf")
    except Killed:
        pass
    return count[0]


def assert_old_or_new(base: Path, what: str) -> int:
    out, wf = output_version(base / "out"), workflow_version(base / "wf")
    assert out == wf, f"{what}: out is version {out}, wf version {wf}"
    assert hidden(base) == [], f"{what}: leftovers {hidden(base)}"
    return out


def test_kill_before_any_file_system_change_of_a_commit_recovers_old_or_new(tmp_path):
    # CI once left '.out.tabprep-old-...' for good: a kill inside the rmtree of the replaced
    # version had deleted its _SUCCESS, and recovery no longer recognised it as tabprep's.
    # Here the commit is killed before each of its changes in turn, and the recovery too
    total = kill_commit_at(tmp_path / "probe", kill_at=0)
    assert total > 6, "the commit deletes every file of both replaced versions"
    versions = set()
    for kill_at in range(1, total + 1):
        base = tmp_path / f"k{kill_at}"
        base.mkdir()
        kill_commit_at(base, kill_at)
        snapshot = tmp_path / f"snap{kill_at}"
        shutil.copytree(base, snapshot, symlinks=True)
        changes = recover_both(base)
        versions.add(assert_old_or_new(base, f"commit killed at change {kill_at} of {total}"))
        for recover_kill in range(1, changes + 1):  # the recovery killed too, then the run after it
            shutil.rmtree(base)
            shutil.copytree(snapshot, base, symlinks=True)
            recover_both(base, recover_kill)
            recover_both(base)
            assert_old_or_new(base, f"commit killed at change {kill_at}, its recovery at {recover_kill}")
    # a kill before the commit record leaves version 1, after it version 2: both were reached
    assert versions == {1, 2}


def test_next_write_at_the_path_recovers_first(tmp_path):
    fitted(1).save(str(tmp_path / "wf"))
    txn = Transaction()
    fitted(2).save(str(tmp_path / "wf"), transaction=txn)
    (s,) = txn.stages
    txn._prepare()
    txn._write_record()
    txn._move_aside(s)  # crash here: wf is missing, its old and new versions are hidden
    commit._ACTIVE.discard(txn.txid)
    assert not (tmp_path / "wf").exists()
    fitted(3).save(str(tmp_path / "wf"))
    assert workflow_version(tmp_path / "wf") == 3 and hidden(tmp_path) == []


def test_first_commit_crash_without_old_version(tmp_path):
    txn = Transaction()
    tp.Dataset(frame(2)).to_parquet(str(tmp_path / "out"), transaction=txn)
    txn._prepare()
    txn._write_record()
    commit._ACTIVE.discard(txn.txid)
    commit.recover(tmp_path / "out")
    assert output_version(tmp_path / "out") == 2 and hidden(tmp_path) == []


def test_leftovers_of_older_versions_only_old_copy(tmp_path):
    # an older tabprep crashed between its two renames: only the -old- copy holds the data
    fitted(1).save(str(tmp_path / "wf"))
    os.rename(tmp_path / "wf", tmp_path / ".wf.tabprep-old-1a2b3c4d")
    (tmp_path / ".wf.tabprep-tmp-5e6f7a8b").mkdir()  # its half-written new version
    (tmp_path / ".wf.tabprep-tmp-5e6f7a8b" / "workflow.json").write_text("{")
    done = commit.recover(tmp_path / "wf")
    assert workflow_version(tmp_path / "wf") == 1 and hidden(tmp_path) == [], done


def test_leftovers_after_the_swap_are_removed_and_others_untouched(tmp_path):
    tp.Dataset(frame(1)).to_parquet(str(tmp_path / "out"))
    (tmp_path / ".out.tabprep-old-deadbeef").mkdir()
    (tmp_path / ".outer.tabprep-tmp-deadbeef").mkdir()  # another path's temporary: not ours to touch
    (tmp_path / ".out.notes").write_text("user file")
    tp.Dataset(frame(2)).to_parquet(str(tmp_path / "out"), overwrite=True)
    assert output_version(tmp_path / "out") == 2
    assert hidden(tmp_path) == [".outer.tabprep-tmp-deadbeef"] and (tmp_path / ".out.notes").exists()


def test_a_live_writer_is_not_disturbed(tmp_path):
    txn = Transaction()
    fitted(1).save(str(tmp_path / "wf"), transaction=txn)  # staged, still running in this process
    with pytest.raises(RuntimeError, match="still in progress"):
        fitted(2).save(str(tmp_path / "wf"))
    txn.commit()
    assert workflow_version(tmp_path / "wf") == 1 and hidden(tmp_path) == []


def test_another_live_process_is_detected(tmp_path):
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        tmp = tmp_path / ".wf.tabprep-tmp-0123456789ab"
        tmp.mkdir()
        import json
        import socket

        (tmp / commit.JOURNAL_FILE).write_text(json.dumps({
            "txid": "0123456789ab", "pid": sleeper.pid, "host": socket.gethostname(),
            "record": str(tmp_path / ".wf.tabprep-commit-0123456789ab.json"), "members": []}))
        with pytest.raises(RuntimeError, match=f"process {sleeper.pid}"):
            fitted(1).save(str(tmp_path / "wf"))
        assert tmp.exists()
    finally:
        sleeper.kill()
        sleeper.wait()
    fitted(1).save(str(tmp_path / "wf"))  # the process is gone: its temporary is stale
    assert workflow_version(tmp_path / "wf") == 1 and hidden(tmp_path) == []


# -- SIGKILL at random points of real writes ----------------------------------------------------
WRITER = textwrap.dedent("""
    import sys, itertools
    sys.path.insert(0, {root!r})
    import numpy as np, pandas as pd
    import tabprep as tp
    from tabprep import ops
    from tabprep.io.commit import Transaction
    mode, base = sys.argv[1], sys.argv[2]

    def frame(v):
        n = 10 * v
        return pd.DataFrame({{"x": np.arange(n, dtype="int64") + 1000 * v, "y": np.linspace(0.0, 1.0, n) * v}})

    def fitted(v):
        wf = tp.Workflow(["y"] >> ops.Normalize())
        return wf.fit(tp.Dataset(frame(v)))

    wfs = {{v: fitted(v) for v in (2, 3)}}
    print("ready", flush=True)
    for i in itertools.count():
        v = 2 + i % 2
        if mode == "save":
            wfs[v].save(base + "/wf")
        elif mode == "parquet":
            tp.Dataset(frame(v), npartitions=2).to_parquet(base + "/out", overwrite=True)
        elif mode == "tfrecord":
            tp.Dataset(frame(v), npartitions=2).to_tfrecord(base + "/out", overwrite=True, output_files=2)
        else:
            with Transaction() as txn:
                tp.Dataset(frame(v), npartitions=2).to_parquet(base + "/out", overwrite=True, transaction=txn)
                wfs[v].save(base + "/wf", transaction=txn)
""")


def tfrecord_version(path: Path) -> int:
    """The version a TFRecord output folder holds, read with TensorFlow's own reader and Example
    parser; fails unless complete."""
    tf = pytest.importorskip("tensorflow")
    assert (path / "_SUCCESS").exists() and (path / "_metadata.json").exists(), f"{path} is not complete"
    files = sorted(str(p) for p in path.glob("*.tfrecord"))
    xs = [v for raw in tf.data.TFRecordDataset(files)
          for v in tf.train.Example.FromString(raw.numpy()).features.feature["x"].int64_list.value]
    version = int(xs[0]) // 1000
    assert sorted(xs) == list(range(1000 * version, 1000 * version + 10 * version)), "a mix of versions"
    return version


@pytest.mark.parametrize("mode", ["save", "parquet", "tfrecord", "joint"])
def test_sigkill_at_random_points_leaves_old_or_new_complete_state(tmp_path, mode):
    script = tmp_path / "writer.py"
    script.write_text(WRITER.format(root=str(ROOT)))
    rng = random.Random(1234)
    # the three trials' writers run side by side, each in its own folder (their start, the
    # imports, is most of a trial's time); each is killed its own random delay after all are ready
    bases, procs = [], []
    for trial in range(3):
        base = tmp_path / f"t{trial}"
        base.mkdir()
        if mode in ("save", "joint"):
            fitted(1).save(str(base / "wf"))
        if mode in ("parquet", "joint"):
            tp.Dataset(frame(1)).to_parquet(str(base / "out"))
        if mode == "tfrecord":
            tp.Dataset(frame(1)).to_tfrecord(str(base / "out"))
        bases.append(base)
        procs.append(subprocess.Popen([sys.executable, str(script), mode, str(base)], stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)}))
    try:
        for proc in procs:
            assert proc.stdout.readline().strip() == b"ready"
        start = time.monotonic()
        for delay, proc in sorted(zip([rng.uniform(0.05, 1.5) for _ in procs], procs), key=lambda dp: dp[0]):
            time.sleep(max(0.0, start + delay - time.monotonic()))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for trial, base in enumerate(bases):
        commit.recover(base / ("wf" if mode == "save" else "out"))  # the next run at that path
        if mode in ("save", "joint"):
            commit.recover(base / "wf")
        versions = []
        if mode in ("parquet", "joint"):
            versions.append(output_version(base / "out"))
        if mode == "tfrecord":
            versions.append(tfrecord_version(base / "out"))
        if mode in ("save", "joint"):
            versions.append(workflow_version(base / "wf"))
        assert set(versions) <= {1, 2, 3} and len(set(versions)) == 1, versions
        assert hidden(base) == [], f"trial {trial}: leftovers {hidden(base)}"


def test_a_replaced_version_that_cannot_take_the_marker_does_not_fail_the_commit(tmp_path, monkeypatch, caplog):
    # the deletion of the replaced version comes after the commit point: an error there (a
    # read-only folder; simulated, as root ignores permissions) must not make a committed write raise
    tp.Dataset(frame(1)).to_parquet(str(tmp_path / "out"))
    real_write_text = Path.write_text

    def refuse(self, *args, **kwargs):
        if self.name == commit.INCOMPLETE_MARKER and ".tabprep-old-" in self.parent.name:
            raise PermissionError(13, "Permission denied", str(self))
        return real_write_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", refuse)
    tp.Dataset(frame(2)).to_parquet(str(tmp_path / "out"), overwrite=True)
    monkeypatch.undo()
    assert output_version(tmp_path / "out") == 2
    assert hidden(tmp_path) == []  # what could be deleted was
    assert "could not fully delete the replaced version" in caplog.text
