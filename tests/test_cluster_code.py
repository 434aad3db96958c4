"""A dask.distributed cluster whose workers run other tabprep code than the client (a modified
source tree, no tabprep at all) is refused before the workflow reaches them, naming the worker;
a worker that dies while the workflow is scattered to every worker fails the fit within a bound.

Real processes: a LocalCluster started here plus `dask worker` processes (no nanny) whose
PYTHONPATH points at a copy of the tabprep package made by the test.
"""
from __future__ import annotations

import contextlib
import logging
import os
import shutil
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
from tabprep.workflow import cluster_check

from conftest import within

distributed = pytest.importorskip("distributed")
PACKAGE = Path(tp.__file__).resolve().parent


@pytest.fixture(scope="module")
def cluster():
    # (the scheduler's HTTP server on any free port: dask warned when 8787 was taken)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                  scheduler_kwargs={"dashboard_address": ":0"}, silence_logs=logging.ERROR) as c:
        yield c


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("code")
    rng = np.random.default_rng(3)
    frames = []
    for i in range(4):
        df = pd.DataFrame({"cat": [f"c{v}" for v in rng.integers(0, 30, 500)], "x": rng.normal(5, 2, 500)})
        df.to_parquet(root / f"part-{i}.parquet", index=False)
        frames.append(df)
    return root, pd.concat(frames, ignore_index=True)


def _workflow():
    return tp.Workflow((["cat"] >> ops.Categorify()) + (["x"] >> ops.Normalize()))


def _copy_package(dest: Path, change: bool) -> Path:
    """A copy of this tabprep under ``dest`` (its PYTHONPATH); ``change``: one file gets a comment."""
    shutil.copytree(PACKAGE, dest / "tabprep", ignore=shutil.ignore_patterns("__pycache__"))
    if change:
        with open(dest / "tabprep" / "ops" / "categorify.py", "a") as fh:
            fh.write("# a local change on this worker only\n")
    return dest


@contextlib.contextmanager
def _worker(client, scheduler: str, pythonpath: str, home: Path, hide_tabprep: bool = False, preamble: str = ""):
    """A `dask worker --no-nanny` process joined to ``scheduler`` with ``PYTHONPATH=pythonpath``
    (``hide_tabprep``: tabprep cannot be imported in it; ``preamble``: Python code run before the
    worker starts); yields ``(address, process)``; killed at the end."""
    before = set(client.nthreads())
    code = ("import sys\n" + ("sys.modules['tabprep'] = None\n" if hide_tabprep else "") + preamble
            + "from distributed.cli.dask_worker import main\nmain()\n")
    env = dict(os.environ, PYTHONPATH=pythonpath, PYTHONWARNINGS="ignore")
    log = open(home / f"worker-{time.monotonic_ns()}.log", "w")
    proc = subprocess.Popen([sys.executable, "-c", code, scheduler, "--nthreads", "1", "--no-nanny",
                             "--no-dashboard", "--memory-limit", "1GB", "--host", "127.0.0.1"],
                            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(home))
    try:
        deadline = time.monotonic() + 90
        while True:
            new = set(client.nthreads()) - before
            if new:
                break
            assert proc.poll() is None, Path(log.name).read_text()
            assert time.monotonic() < deadline, "the worker did not join within 90 s"
            time.sleep(0.2)
        yield new.pop(), proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        log.close()
        deadline = time.monotonic() + 30
        while set(client.nthreads()) - before and time.monotonic() < deadline:
            time.sleep(0.1)


def _reference(raw: pd.DataFrame) -> pd.DataFrame:
    vc = raw["cat"].value_counts()
    ids = {v: i + 3 for i, (v, _) in enumerate(sorted(vc.items(), key=lambda kv: (-kv[1], kv[0])))}
    return pd.DataFrame({"cat": raw["cat"].map(ids).to_numpy(),
                         "x": ((raw["x"] - raw["x"].mean()) / raw["x"].std(ddof=1)).to_numpy()})


def test_worker_with_a_modified_tabprep_is_refused_naming_it(cluster, data, tmp_path):
    root, raw = data
    copy = _copy_package(tmp_path / "changed", change=True)
    with distributed.Client(cluster) as client:
        good = list(client.nthreads())
        with _worker(client, cluster.scheduler_address, str(copy), tmp_path) as (odd, _):
            with pytest.raises(cluster_check.WorkerCodeMismatch) as err:
                within(120, lambda: _workflow().fit(tp.Dataset(str(root))))
            msg = str(err.value)
            assert odd in msg and not any(g in msg for g in good), msg
            assert str(copy / "tabprep") in msg and str(PACKAGE) in msg, msg
            assert f"tabprep {tp.__version__}" in msg and "install the same tabprep" in msg, msg
            assert "TABPREP_CHECK_WORKER_CODE=0" in msg
            # refused again on the next try (a failed check is not remembered as passed)
            with pytest.raises(cluster_check.WorkerCodeMismatch, match="install the same tabprep"):
                within(120, lambda: _workflow().fit(tp.Dataset(str(root))))
        # (the odd worker gone) the same client fits on the good workers
        wf = within(120, lambda: _workflow().fit(tp.Dataset(str(root))))
    got = within(60, lambda: wf.transform(raw[["cat", "x"]]))
    expect = _reference(raw)
    np.testing.assert_array_equal(got["cat"].to_numpy(), expect["cat"].to_numpy())
    np.testing.assert_allclose(got["x"].to_numpy(dtype="float64"), expect["x"].to_numpy(), rtol=1e-5, atol=1e-6)


def test_transform_on_a_worker_with_other_code_is_refused(cluster, data, tmp_path):
    root, raw = data
    wf = _workflow().fit(tp.Dataset(str(root)))   # in this process, dask's threads
    copy = _copy_package(tmp_path / "changed", change=True)
    with distributed.Client(cluster) as client:
        with _worker(client, cluster.scheduler_address, str(copy), tmp_path) as (odd, _):
            with pytest.raises(cluster_check.WorkerCodeMismatch, match=odd.replace(".", r"\.")):
                within(120, lambda: wf.transform(tp.Dataset(str(root))).to_parquet(str(tmp_path / "out")))
    assert not (tmp_path / "out" / "_SUCCESS").exists()


def test_worker_without_tabprep_is_refused_naming_it(cluster, data, tmp_path):
    root, _ = data
    with distributed.Client(cluster) as client:
        with _worker(client, cluster.scheduler_address, "", tmp_path, hide_tabprep=True) as (odd, _):
            with pytest.raises(cluster_check.WorkerCodeMismatch) as err:
                within(120, lambda: _workflow().fit(tp.Dataset(str(root))))
    msg = str(err.value)
    assert odd in msg and "cannot import tabprep" in msg and "install the same tabprep" in msg, msg
    assert "TABPREP_CHECK_WORKER_CODE" not in msg, msg   # skipping the check would not help there


def test_identical_code_in_another_folder_fits_and_is_checked_once(cluster, data, tmp_path, monkeypatch):
    root, raw = data
    copy = _copy_package(tmp_path / "same", change=False)
    with distributed.Client(cluster) as client:
        with _worker(client, cluster.scheduler_address, str(copy), tmp_path) as (other, _):
            probes = []
            run = client.run

            def counting(fn, *args, **kwargs):
                probes.append(getattr(fn, "__name__", fn))
                return run(fn, *args, **kwargs)

            monkeypatch.setattr(client, "run", counting)
            wf = _workflow()
            with distributed.get_task_stream(client) as ts:
                within(120, lambda: wf.fit(tp.Dataset(str(root), part_size="8kB")))
                out = within(120, lambda: wf.transform(tp.Dataset(str(root), part_size="8kB")).compute())
            # both workers ran tasks (the copy's worker computed with identical code)
            assert other in {t["worker"] for t in ts.data}
            # one probe for the client and its two workers, not one per pass / transform
            assert probes.count("_worker_fingerprint") == 1, probes
    expect = _reference(raw)
    out = out.reset_index(drop=True)
    np.testing.assert_array_equal(out["cat"].to_numpy(), expect["cat"].to_numpy())
    np.testing.assert_allclose(out["x"].to_numpy(dtype="float64"), expect["x"].to_numpy(), rtol=1e-5, atol=1e-6)


def test_the_check_can_be_switched_off(cluster, data, tmp_path, monkeypatch):
    root, _ = data
    copy = _copy_package(tmp_path / "changed", change=True)
    monkeypatch.setenv("TABPREP_CHECK_WORKER_CODE", "0")
    with distributed.Client(cluster) as client:
        with _worker(client, cluster.scheduler_address, str(copy), tmp_path):
            wf = within(120, lambda: _workflow().fit(tp.Dataset(str(root))))
    assert wf.fitted


def test_code_fingerprint_covers_every_source_file(tmp_path):
    version, digest, folder = cluster_check.code_fingerprint()
    assert version == tp.__version__ and folder == str(PACKAGE) and len(digest) == 64
    assert cluster_check.code_fingerprint() is cluster_check.code_fingerprint()   # computed once


def _first_copy_on(worker, workers):
    """dask's broadcast scatter puts its first copy on worker (counter % n) of the sorted addresses
    (a dask internal: ``utils_comm._round_robin_counter``, a list of one count): on ``worker``, so
    the others are asked for a copy from it in the broadcast that follows."""
    from distributed import utils_comm

    utils_comm._round_robin_counter[0] = sorted(workers).index(worker)


#: run in a worker before it starts: it dies (as if killed) when asked to fetch a copy of data from
#: another worker, which is what dask's broadcast scatter asks of every worker but the first
DIE_ON_COPY = ("import os, distributed.worker\n"
               "async def _die(self, *args, **kwargs):\n"
               "    os._exit(1)\n"
               "distributed.worker.Worker.gather = _die\n")


def test_worker_dying_while_the_workflow_is_scattered_fails_within_a_bound(cluster, data, tmp_path, monkeypatch):
    # dask's broadcast (Scheduler.replicate) retries the copy to a worker it started with, gone or
    # not, forever: a worker killed while a fit or transform scattered the workflow hung the job
    root, raw = data
    monkeypatch.setattr(cluster_check, "WORKER_LOST_GRACE_S", 3.0)
    with distributed.Client(cluster) as client:
        good = list(client.nthreads())
        with _worker(client, cluster.scheduler_address, os.environ.get("PYTHONPATH", ""), tmp_path,
                     preamble=DIE_ON_COPY) as (victim, proc):
            _first_copy_on(good[0], [*good, victim])   # the victim is asked for a copy (and dies)
            start = time.monotonic()
            with pytest.raises(cluster_check.ScatterFailed) as err:
                within(120, lambda: _workflow().fit(tp.Dataset(str(root))))
            assert proc.poll() is not None, "the worker did not die in the broadcast"
            assert time.monotonic() - start < 60
        msg = str(err.value)
        assert victim in msg and "left the cluster" in msg and "run the job again" in msg, msg
        # the same client goes on with the workers it has (the abandoned copy was released)
        wf = within(120, lambda: _workflow().fit(tp.Dataset(str(root))))
        got = within(120, lambda: wf.transform(tp.Dataset(str(root))).compute()).reset_index(drop=True)
    expect = _reference(raw)
    np.testing.assert_array_equal(got["cat"].to_numpy(), expect["cat"].to_numpy())
    np.testing.assert_allclose(got["x"].to_numpy(dtype="float64"), expect["x"].to_numpy(), rtol=1e-5, atol=1e-6)


#: run in a worker before it starts: asked to fetch a copy from another worker, it never answers
#: (a stuck worker: alive, connected, silent)
STUCK_ON_COPY = ("import asyncio, distributed.worker\n"
                 "async def _stuck(self, *args, **kwargs):\n"
                 "    await asyncio.sleep(3600)\n"
                 "distributed.worker.Worker.gather = _stuck\n")


def test_scatter_to_a_stuck_worker_fails_after_the_timeout(cluster, data, tmp_path, monkeypatch):
    root, _ = data
    monkeypatch.setenv("TABPREP_SCATTER_TIMEOUT", "4")
    with distributed.Client(cluster) as client:
        good = list(client.nthreads())
        with _worker(client, cluster.scheduler_address, os.environ.get("PYTHONPATH", ""), tmp_path,
                     preamble=STUCK_ON_COPY) as (stuck, _):
            _first_copy_on(good[0], [*good, stuck])
            start = time.monotonic()
            with pytest.raises(cluster_check.ScatterFailed) as err:
                within(120, lambda: _workflow().fit(tp.Dataset(str(root))))
            assert time.monotonic() - start < 30
    msg = str(err.value)
    assert "did not finish within 4 s" in msg and "TABPREP_SCATTER_TIMEOUT=SECONDS" in msg, msg
    monkeypatch.setenv("TABPREP_SCATTER_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="TABPREP_SCATTER_TIMEOUT='soon'"):
        cluster_check.scatter_timeout()


def test_cli_job_on_a_cluster_with_other_code_is_one_error_line(cluster, tmp_path):
    # as an operator sees it: `tabprep fit --scheduler ADDRESS` on a cluster one of whose workers runs
    # a modified tabprep fails with exit code 1, one line naming that worker, and writes nothing
    from click.testing import CliRunner

    from tabprep.cli.main import cli
    from test_cli import SPEC, write_data

    (tmp_path / "spec.yaml").write_text(SPEC)
    write_data(tmp_path / "data", files=2, rows=200)
    copy = _copy_package(tmp_path / "changed", change=True)
    with distributed.Client(cluster) as client:
        with _worker(client, cluster.scheduler_address, str(copy), tmp_path) as (odd, _):
            args = ["fit", str(tmp_path / "spec.yaml"), str(tmp_path / "data"), "--out", str(tmp_path / "wf"), "-q",
                    "--scheduler", cluster.scheduler_address]
            r = within(180, lambda: CliRunner().invoke(cli, args))
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.exit_code == 1 and len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert odd in lines[0] and str(copy / "tabprep") in lines[0] and "install the same tabprep" in lines[0], lines
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "wf").exists()


def test_a_stopped_worker_fails_the_code_check_within_its_bound(cluster, data, tmp_path, monkeypatch):
    # a worker process stopped (SIGSTOP: alive, connected, never answering) would hold the check's
    # client.run forever; it is bounded and says what to look at
    root, _ = data
    monkeypatch.setattr(cluster_check, "PROBE_TIMEOUT_S", 3.0)
    with distributed.Client(cluster) as client:
        with _worker(client, cluster.scheduler_address, os.environ.get("PYTHONPATH", ""), tmp_path) as (stopped, proc):
            os.kill(proc.pid, signal.SIGSTOP)
            try:
                start = time.monotonic()
                with pytest.raises(cluster_check.ScatterFailed) as err:
                    within(60, lambda: _workflow().fit(tp.Dataset(str(root))))
                assert time.monotonic() - start < 30
            finally:
                os.kill(proc.pid, signal.SIGCONT)
    msg = str(err.value)
    assert "did not all answer within 3 s" in msg and stopped in msg and "stuck or stopped" in msg, msg


def test_worker_with_a_tabprep_before_the_check_is_refused(cluster, data, tmp_path):
    # a worker whose tabprep has no code_fingerprint (a release from before this check): its version
    # and folder are still named
    root, _ = data
    copy = _copy_package(tmp_path / "older", change=False)
    module = copy / "tabprep" / "workflow" / "cluster_check.py"
    module.write_text(module.read_text().replace("def code_fingerprint(", "def _not_there_yet("))
    with distributed.Client(cluster) as client:
        with _worker(client, cluster.scheduler_address, str(copy), tmp_path) as (odd, _):
            with pytest.raises(cluster_check.WorkerCodeMismatch) as err:
                within(120, lambda: _workflow().fit(tp.Dataset(str(root))))
    msg = str(err.value)
    assert f"{odd} runs tabprep {tp.__version__} from {copy / 'tabprep'}, which predates this check" in msg, msg
