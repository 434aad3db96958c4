"""SIGTERM (Kubernetes, Slurm) stops fit / transform / fit-transform like Ctrl-C: temporaries
removed, exit status 143 (issue #30). Real ``python -m tabprep`` processes; the state on disk is
read with plain os/pandas."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

ROOT = Path(__file__).resolve().parent.parent
SPEC = "features:\n  - columns: [C1]\n    ops: [Categorify]\n  - columns: [x]\n    ops: [Normalize]\n"


def _data(folder: Path, rows: int = 100_000, files: int = 8) -> Path:
    rng = np.random.default_rng(0)
    folder.mkdir()
    for f in range(files):
        pd.DataFrame({"C1": rng.integers(0, 5000, rows), "x": rng.normal(size=rows)}).to_parquet(
            folder / f"part{f:02d}.parquet")
    return folder


def _tabprep(args, cwd: Path, tmpdir: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmpdir)}
    return subprocess.Popen([sys.executable, "-m", "tabprep.cli", *map(str, args)], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for(pred, proc: subprocess.Popen, limit: float = 90.0) -> None:
    """Wait until ``pred()`` holds, then freeze the process (SIGSTOP) right there: a fast machine
    finishes a small job between two polls, and the test must signal it mid-job, not after."""
    deadline = time.monotonic() + limit
    while not pred():
        assert proc.poll() is None, f"the job ended before the point of the test: {proc.communicate()}"
        assert time.monotonic() < deadline, "the job never got there"
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGSTOP)


def _terminate(proc: subprocess.Popen):
    """SIGTERM to the frozen process, then let it run: the signal is pending when it resumes."""
    proc.send_signal(signal.SIGTERM)
    os.kill(proc.pid, signal.SIGCONT)
    return proc.communicate(timeout=60)


def _reading(pid: int, folder: Path):
    """True once process ``pid`` has a file of ``folder`` open (Linux: /proc/PID/fd)."""
    def pred():
        try:
            return any(os.readlink(f"/proc/{pid}/fd/{fd}").startswith(str(folder))
                       for fd in os.listdir(f"/proc/{pid}/fd"))
        except OSError:
            return False
    return pred


def _hidden(folder: Path) -> list:
    return sorted(n for n in os.listdir(folder) if ".tabprep-" in n)


def _writing(folder: Path, name: str):
    def pred():
        return any(n.startswith(f".{name}.tabprep-tmp-") and not n.endswith(".init")
                   and any(True for _ in (folder / n).rglob("*.parquet")) for n in os.listdir(folder))
    return pred


@pytest.mark.parametrize("command", ["fit-transform", "transform"])
def test_sigterm_during_a_write_removes_its_temporaries(tmp_path, command):
    data = _data(tmp_path / "data")
    (tmp_path / "spec.yaml").write_text(SPEC)
    tmpdir = tmp_path / "TMP"
    tmpdir.mkdir()
    if command == "transform":
        wf = tp.Workflow((["C1"] >> ops.Categorify()) + (["x"] >> ops.Normalize()))
        wf.fit(tp.Dataset(pd.read_parquet(data / "part00.parquet"))).save(str(tmp_path / "wf"))
        args = ["transform", tmp_path / "wf", data, "--out", tmp_path / "out", "-q"]
    else:
        args = ["fit-transform", tmp_path / "spec.yaml", data, "--out", tmp_path / "out",
                "--workflow-out", tmp_path / "wfo", "-q"]
    proc = _tabprep(args, tmp_path, tmpdir)
    try:
        _wait_for(_writing(tmp_path, "out"), proc)
        out, err = _terminate(proc)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 143, (proc.returncode, err.decode())
    assert "terminated" in err.decode() and "Traceback" not in err.decode(), err.decode()
    assert _hidden(tmp_path) == [], "temporaries left behind"
    assert not (tmp_path / "out").exists() and not (tmp_path / "wfo").exists()
    assert os.listdir(tmpdir) == [], os.listdir(tmpdir)


def test_sigterm_during_fit_leaves_nothing(tmp_path):
    data = _data(tmp_path / "data", files=24)
    (tmp_path / "spec.yaml").write_text(SPEC)
    tmpdir = tmp_path / "TMP"
    tmpdir.mkdir()
    proc = _tabprep(["fit", tmp_path / "spec.yaml", data, "--out", tmp_path / "wf"], tmp_path, tmpdir)
    try:
        _wait_for(_reading(proc.pid, data), proc)  # the fit pass is reading DATA
        out, err = _terminate(proc)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 143, (proc.returncode, err.decode())
    assert "terminated" in err.decode() and "Traceback" not in err.decode(), err.decode()
    assert _hidden(tmp_path) == [] and not (tmp_path / "wf").exists()


SLOW_SPEC = ("features:\n  - columns: [x]\n    ops: [{LambdaOp: {f: {import: \"slowmod:f\"}}}]\n"
             "  - columns: [C1]\n    ops: [Categorify]\n")
SLOW_MOD = '''import os, time

def f(col):
    if len(col) and float(col.iloc[0]) == 12345.0:   # the stuck partition: a task that does not return
        open(os.path.join(os.path.dirname(__file__), "stuck"), "w").close()
        time.sleep(600)
    return col
'''


def _stuck_job(tmp_path: Path):
    """``(process, its TMPDIR)``: ``tabprep fit-transform`` on 4 files whose third holds a row that
    makes the spec's LambdaOp write ``stuck`` and sleep 600 s (a task that does not return)."""
    data = _data(tmp_path / "data", rows=20_000, files=4)
    frame = pd.read_parquet(data / "part02.parquet")
    frame.loc[0, "x"] = 12345.0
    frame.to_parquet(data / "part02.parquet")
    (tmp_path / "spec.yaml").write_text(SLOW_SPEC)
    (tmp_path / "slowmod.py").write_text(SLOW_MOD)
    tmpdir = tmp_path / "TMP"
    tmpdir.mkdir()
    return _tabprep(["fit-transform", tmp_path / "spec.yaml", data, "--out", tmp_path / "out", "--workflow-out",
                     tmp_path / "wfo", "-q"], tmp_path, tmpdir), tmpdir


def test_sigterm_exits_at_once_while_a_task_of_the_job_is_still_running(tmp_path):
    """After SIGTERM the job cleans up and exits with 143 even though one of dask's threads is
    still running a task: the interpreter's shutdown joins those threads, so a task that goes on
    (here one that sleeps, as a slow write may) held the terminated process alive past its
    'terminated' line (a CI run saw a terminated `tabprep transform` still alive 60 s later)."""
    proc, tmpdir = _stuck_job(tmp_path)
    try:
        _wait_for(lambda: (tmp_path / "stuck").exists(), proc)
        start = time.monotonic()
        out, err = _terminate(proc)
        took = time.monotonic() - start
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 143, (proc.returncode, err.decode())
    assert "terminated" in err.decode() and "Traceback" not in err.decode(), err.decode()
    assert took < 30, took
    assert _hidden(tmp_path) == [], "temporaries left behind"
    assert not (tmp_path / "out").exists() and not (tmp_path / "wfo").exists()
    assert os.listdir(tmpdir) == [], os.listdir(tmpdir)


def _signal_thread(pid: int, sig: int) -> int:
    """Send ``sig`` to one thread of process ``pid`` other than its main thread (Linux ``tgkill``),
    as the kernel may do with a process-directed signal; returns that thread's id."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    tids = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid)
    assert tids, "the job runs no thread besides its main one"
    if libc.tgkill(pid, tids[0], sig) != 0:
        raise OSError(ctypes.get_errno(), "tgkill")
    return tids[0]


@pytest.mark.parametrize("sig, code, said", [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")])
def test_a_stop_signal_that_lands_on_a_worker_thread_still_stops_the_job(tmp_path, sig, code, said):
    """The kernel hands a process-directed SIGTERM (or Ctrl-C's SIGINT) to any thread that does not block it. Python
    runs the handler only in the main thread, and only once that thread runs Python code again:
    a main thread blocked in dask's wait for a task that does not return never did, and the job
    stayed alive (about 1 CI run in 60 hung so; here the signal goes to a worker thread on purpose)."""
    proc, tmpdir = _stuck_job(tmp_path)
    try:
        _wait_for(lambda: (tmp_path / "stuck").exists(), proc)
        os.kill(proc.pid, signal.SIGCONT)
        time.sleep(3)   # the job's other tasks end: its main thread waits for the stuck one alone
        assert proc.poll() is None
        _signal_thread(proc.pid, sig)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == code, (proc.returncode, err.decode())
    assert said in err.decode() and "Traceback" not in err.decode(), err.decode()
    assert _hidden(tmp_path) == [], "temporaries left behind"
    assert not (tmp_path / "out").exists() and not (tmp_path / "wfo").exists()
    assert os.listdir(tmpdir) == [], os.listdir(tmpdir)
