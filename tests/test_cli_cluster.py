"""Clusters as an operator runs them: `dask scheduler` and `dask worker` processes started from the
command line with a scheduler file, and the GPU worker options (--rmm-pool-size,
--device-memory-limit, --protocol) plumbed into LocalCUDACluster / the workers of an existing
cluster (checked with a fake LocalCUDACluster: no GPU here)."""
from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import time
import types
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import tabprep as tp
from tabprep import backend
from tabprep.cli import cluster as cli_cluster
from tabprep.cli import runtime
from tabprep.cli.main import cli

from conftest import GPU_SKIP, within
from test_cli import SPEC, write_data
from test_cli_subprocess import sh

distributed = pytest.importorskip("distributed")
REPO = str(Path(tp.__file__).resolve().parent.parent)


def _env() -> dict:
    # the worker processes must import this checkout's tabprep (they unpickle its tasks)
    path = os.environ.get("PYTHONPATH", "")
    return dict(os.environ, PYTHONPATH=REPO + (os.pathsep + path if path else ""), PYTHONWARNINGS="ignore")


@pytest.fixture(scope="module")
def dask_processes(tmp_path_factory):
    """`dask scheduler --scheduler-file F` and two `dask worker --scheduler-file F`, as separate
    processes on 127.0.0.1 (working directory: F's folder, importable by the workers); yields F;
    stops them all (terminate, then kill) at the end of the module."""
    tmp_path = tmp_path_factory.mktemp("operator")
    sfile = tmp_path / "scheduler.json"
    dask_cmd = [sys.executable, "-m", "dask"]
    procs = []
    logs = []

    def start(args):
        log = open(tmp_path / f"proc{len(procs)}.log", "w")
        logs.append(log)
        procs.append(subprocess.Popen(dask_cmd + args, stdout=log, stderr=subprocess.STDOUT, env=_env(),
                                      cwd=str(tmp_path)))

    try:
        start(["scheduler", "--scheduler-file", str(sfile), "--host", "127.0.0.1", "--port", "0",
               "--no-dashboard"])
        deadline = time.monotonic() + 60
        while not sfile.exists():
            assert procs[0].poll() is None, (tmp_path / "proc0.log").read_text()
            assert time.monotonic() < deadline, "the scheduler wrote no scheduler file within 60 s"
            time.sleep(0.2)
        for _ in range(2):
            start(["worker", "--scheduler-file", str(sfile), "--host", "127.0.0.1", "--nworkers", "1",
                   "--nthreads", "1", "--memory-limit", "1GB", "--no-dashboard"])
        with distributed.Client(scheduler_file=str(sfile), timeout="30s") as client:
            client.wait_for_workers(2, timeout=90)
        yield sfile
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
        for log in logs:
            log.close()


def test_scheduler_file_cluster_from_the_command_line(dask_processes, tmp_path):
    """fit-transform on a scheduler + 2 workers started as an operator would == in-process output."""
    write_data(tmp_path / "data", files=4, rows=1500)
    (tmp_path / "spec.yaml").write_text(SPEC)
    sh("fit-transform", tmp_path / "spec.yaml", tmp_path / "data", "--out", tmp_path / "local", "-q")
    proc = sh("fit-transform", tmp_path / "spec.yaml", tmp_path / "data", "--out", tmp_path / "cluster",
              "--workflow-out", tmp_path / "wf", "--scheduler-file", dask_processes, "--part-size", "20kB")
    assert "(2 workers)" in proc.stderr, proc.stderr
    local = tp.Dataset(str(tmp_path / "local")).compute().reset_index(drop=True)
    cluster = tp.Dataset(str(tmp_path / "cluster")).compute().reset_index(drop=True)
    assert len(local) == 6000
    pd.testing.assert_frame_equal(cluster, local)
    # --scheduler also takes the file, and TABPREP_SCHEDULER_FILE the option's value
    sh("transform", tmp_path / "wf", tmp_path / "data", "--out", tmp_path / "again", "--scheduler", dask_processes,
       "-q")
    again = tp.Dataset(str(tmp_path / "again")).compute().reset_index(drop=True)
    pd.testing.assert_frame_equal(again, local)


def test_scheduler_file_errors(tmp_path):
    runner = CliRunner()
    (tmp_path / "spec.yaml").write_text(SPEC)
    write_data(tmp_path / "data", files=1, rows=50)
    base = ["fit", str(tmp_path / "spec.yaml"), str(tmp_path / "data"), "--out", str(tmp_path / "wf")]
    r = runner.invoke(cli, base + ["--scheduler-file", str(tmp_path / "nope.json")])
    assert r.exit_code == 2 and "nope.json" in r.output and "dask scheduler --scheduler-file" in r.output
    r = runner.invoke(cli, base + ["--scheduler-file", str(tmp_path / "spec.yaml"), "--workers", "2"])
    assert r.exit_code == 2 and "--scheduler-file" in r.output and "--workers" in r.output
    r = runner.invoke(cli, base + ["--cpu", "--rmm-pool-size", "1GB"])
    assert r.exit_code == 2 and "--rmm-pool-size" in r.output and "CPU" in r.output
    r = runner.invoke(cli, base + ["--scheduler", "tcp://127.0.0.1:1", "--protocol", "ucx"])
    assert r.exit_code == 2 and "--protocol" in r.output
    r = runner.invoke(cli, base + ["--device-memory-limit", "0.8"])
    assert r.exit_code == 2 and "--workers" in r.output
    help_text = " ".join(runner.invoke(cli, ["fit-transform", "--help"]).output.split())
    for opt in ("--scheduler-file PATH", "--rmm-pool-size SIZE", "--device-memory-limit SIZE", "--protocol [tcp|ucx]"):
        assert opt in help_text
    assert f"Default: {runtime.DEFAULT_RMM_POOL} of the device for --workers" in help_text


# -- GPU worker options, with a fake dask_cuda ---------------------------------------------------
@pytest.fixture()
def fake_gpus(monkeypatch):
    """Two fake GPUs of 16 GiB; a fake dask_cuda whose LocalCUDACluster records its arguments and
    starts an in-process LocalCluster; RMM pools recorded instead of made."""
    made = []
    pools = []

    class FakeLocalCUDACluster(distributed.LocalCluster):
        def __init__(self, **kwargs):
            made.append(kwargs)
            super().__init__(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None,
                             silence_logs=logging.ERROR)

    monkeypatch.setitem(sys.modules, "dask_cuda", types.SimpleNamespace(LocalCUDACluster=FakeLocalCUDACluster))
    monkeypatch.setattr(backend, "resolve_cpu", lambda cpu=None: bool(cpu))
    monkeypatch.setattr(backend, "gpu_count", lambda: 2)
    monkeypatch.setattr(backend, "compute_device",
                        lambda cpu, index=0: types.SimpleNamespace(total_memory=lambda: 16 * 1024 ** 3))
    monkeypatch.setattr(backend, "use_rmm_pool", lambda size=None: pools.append(size) or True)
    monkeypatch.setattr(cli_cluster, "_ucx_available", lambda: True)  # the fake cluster starts no UCX
    return made, pools


def test_local_cuda_cluster_options(fake_gpus):
    made, pools = fake_gpus
    with cli_cluster.dask_cluster(None, 2, "8GB", False, True, rmm_pool_size="40GB", device_memory_limit="0.7",
                              protocol="ucx") as client:
        assert client is not None and client.submit(lambda: 42).result() == 42
    assert made[-1]["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert made[-1]["rmm_pool_size"] == 40 * 1000 ** 3  # as dask-cuda's parse_bytes reads "40GB" (GiB: 1024 ** 3)
    assert made[-1]["device_memory_limit"] == 0.7
    assert made[-1]["protocol"] == "ucx" and made[-1]["memory_limit"] == "8GB"
    # defaults: half of each device pooled, dask-cuda's spilling threshold and transport
    with cli_cluster.dask_cluster(None, "auto", None, False, True):
        pass
    assert made[-1]["CUDA_VISIBLE_DEVICES"] == "0,1" and made[-1]["rmm_pool_size"] == 0.5
    # two threads per GPU worker (dask-cuda's default is one: reads, kernels and writes in series;
    # four contended for the device: 20.8-22.1 s against 18.7-19.4 s with two, see runtime)
    assert made[-1]["threads_per_worker"] == 2
    assert "device_memory_limit" not in made[-1] and "protocol" not in made[-1]
    with cli_cluster.dask_cluster(None, 1, None, False, True, rmm_pool_size="none", device_memory_limit="none"):
        pass
    assert made[-1]["rmm_pool_size"] is None and made[-1]["device_memory_limit"] == 0
    with pytest.raises(runtime.UsageProblem, match="needs 3 GPUs"):
        with cli_cluster.dask_cluster(None, 3, None, False, True):
            pass
    with pytest.raises(runtime.UsageProblem, match="--rmm-pool-size 'lots'"):
        with cli_cluster.dask_cluster(None, 1, None, False, True, rmm_pool_size="lots"):
            pass
    assert pools == []  # LocalCUDACluster makes its workers' pools itself


def test_existing_cluster_rmm_pool_via_client_run(fake_gpus):
    _, pools = fake_gpus
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
                                  silence_logs=logging.ERROR) as cluster:
        with cli_cluster.dask_cluster(cluster.scheduler_address, None, None, False, True, rmm_pool_size="0.25"):
            pass
        assert pools == [4 * 1024 ** 3] * 2  # a quarter of 16 GiB on each of the 2 workers
        with cli_cluster.dask_cluster(cluster.scheduler_address, None, None, False, True):
            pass
        assert len(pools) == 2  # not asked: the workers keep their own allocator
    with cli_cluster.dask_cluster(None, None, None, False, True, rmm_pool_size="2GB"):
        pass
    assert pools[-1] == 2 * 1000 ** 3  # in-process GPU job ("2GB" as dask reads it)
    with cli_cluster.dask_cluster(None, None, None, False, True):
        pass
    assert pools[-1] is None  # in-process default: RMM's pool size


def _worker_settings(dask_worker=None):
    import dask

    w = dask_worker  # client.run hands the worker to a function that names this argument
    return {"profile": dask.config.get("distributed.worker.profile.enabled"),
            "profile_callbacks": sorted(k for k in w.periodic_callbacks if "profile" in k),
            "disk": dask.config.get("distributed.admin.system-monitor.disk"),
            "tick": dask.config.get("distributed.admin.tick.interval"),
            "memory_monitor": dask.config.get("distributed.worker.memory.monitor-interval")}


def test_local_cpu_cluster_runs_without_dashboard_feeds():
    # --workers starts its cluster without a dashboard: the workers' statistical profiler (a stack
    # walk every 10 ms), the disk counters and the 20 ms tick feed nothing but cost CPU next to the
    # tasks; the memory monitor (the nanny's memory limit) stays as dask sets it
    import dask

    before = {k: dask.config.get(k) for k in ("distributed.worker.profile.enabled",
                                              "distributed.admin.system-monitor.disk",
                                              "distributed.admin.tick.interval")}
    with cli_cluster.dask_cluster(None, 2, None, True, True) as client:
        got = client.run(_worker_settings)
        assert len(got) == 2
        for s in got.values():
            assert s["profile"] is False and s["profile_callbacks"] == [], s
            assert s["disk"] is False and s["tick"] == "100ms", s
            assert s["memory_monitor"] == dask.config.get("distributed.worker.memory.monitor-interval"), s
        assert client.submit(lambda: 42).result() == 42
    # the user's own configuration is as it was (the settings are the local cluster's alone)
    assert {k: dask.config.get(k) for k in before} == before



# -- what an operator gets wrong: clear errors, bounded waits, nothing written ---------------------
def _fit_args(tmp_path):
    (tmp_path / "spec.yaml").write_text(SPEC)
    if not (tmp_path / "data").exists():
        write_data(tmp_path / "data", files=2, rows=200)
    return ["fit", str(tmp_path / "spec.yaml"), str(tmp_path / "data"), "--out", str(tmp_path / "wf")]


def _one_error_line(r):
    """The one ``error: ...`` line of a failed command (and nothing of dask's own making)."""
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert "Traceback" not in r.stderr and "AssertionError" not in r.stderr, r.stderr
    return lines[0]


def test_scheduler_file_that_is_not_one(tmp_path):
    # a truncated / foreign / empty file: dask's Client raised a bare AssertionError (exit 1)
    runner = CliRunner()
    base = _fit_args(tmp_path)
    for i, text in enumerate(["not json", "{}", '{"address": 5}', ""]):
        f = tmp_path / f"sched{i}.json"
        f.write_text(text)
        r = runner.invoke(cli, base + ["--scheduler-file", str(f)])
        line = _one_error_line(r)
        assert r.exit_code == 2 and str(f) in line and "scheduler file" in line, (text, line)
        assert "dask scheduler --scheduler-file" in line  # how to make a good one
        r = runner.invoke(cli, base + ["--scheduler", str(f)])  # --scheduler takes the file too
        assert r.exit_code == 2 and str(f) in _one_error_line(r)
    # a folder is not "a file that does not exist"
    r = runner.invoke(cli, base + ["--scheduler-file", str(tmp_path)])
    line = _one_error_line(r)
    assert r.exit_code == 2 and "is a folder" in line and "does not exist" not in line
    assert not (tmp_path / "wf").exists()


def test_scheduler_address_typos_are_usage_errors(tmp_path):
    runner = CliRunner()
    base = _fit_args(tmp_path)
    for bad in ("garbage", str(tmp_path / "missing.json"), "tcp://", "tcp://host:port"):
        r = runner.invoke(cli, base + ["--scheduler", bad])
        line = _one_error_line(r)
        assert r.exit_code == 2 and f"--scheduler {bad!r}" in line and "tcp://" in line, line
    assert not (tmp_path / "wf").exists()


@pytest.fixture()
def not_a_scheduler():
    """Two TCP servers on 127.0.0.1 that are not dask schedulers: one accepts and never answers
    (an HTTP server waiting for a request line), one answers like an HTTP server (a dashboard's
    port 8787) and hangs up. Yields their addresses."""
    import socket
    import threading

    stop = threading.Event()
    servers, held = [], []

    def serve(sock, answer):
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            if answer:
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                conn.close()
            else:
                held.append(conn)

    for answer in (False, True):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        servers.append(sock)
        threading.Thread(target=serve, args=(sock, answer), daemon=True).start()
    yield [f"tcp://127.0.0.1:{s.getsockname()[1]}" for s in servers]
    stop.set()
    for s in servers + held:
        s.close()


def test_address_of_something_else_fails_within_the_timeout(not_a_scheduler, tmp_path, monkeypatch):
    # dask's Client bounds the TCP connect only: a server that never answers hung the job forever,
    # an HTTP answer read as a frame length asked for 3 EiB ("MemoryError")
    monkeypatch.setattr(cli_cluster, "CONNECT_TIMEOUT_S", 3)
    runner = CliRunner()
    base = _fit_args(tmp_path)
    for address in not_a_scheduler:
        start = time.monotonic()
        r = runner.invoke(cli, base + ["--scheduler", address])
        line = _one_error_line(r)
        assert time.monotonic() - start < 20, line
        assert r.exit_code == 1 and address in line and "not answer as a dask scheduler" in line, line
        assert "EiB" not in line and "8786" in line  # the scheduler's usual port, as a hint
    assert not (tmp_path / "wf").exists()


def test_refused_scheduler_address_is_one_line_naming_it_and_the_fix(tmp_path, monkeypatch):
    # nothing listening at the address (no scheduler started, a wrong port): dask retries the
    # refused connection until its timeout, after which the job said the server "did not answer as
    # a dask scheduler within 20 s", as if something else listened there; now: refused, and the fix
    monkeypatch.setattr(cli_cluster, "CONNECT_TIMEOUT_S", 2)
    start = time.monotonic()
    r = CliRunner().invoke(cli, _fit_args(tmp_path) + ["--scheduler", "tcp://127.0.0.1:1"])
    line = _one_error_line(r)
    assert time.monotonic() - start < 15, line
    assert r.exit_code == 1 and "'tcp://127.0.0.1:1'" in line and "connection refused" in line, line
    assert "did not answer" not in line and "start the scheduler (`dask scheduler" in line, line
    assert "--scheduler" in line and "8786" in line, line   # or correct the address (the usual port)
    assert not (tmp_path / "wf").exists()


def test_refused_address_reads_as_refused_when_dask_lost_the_refusal():
    # on a busy machine dask's last connect retry is cancelled by its own timeout, so its error's
    # chain holds no ConnectionRefusedError (seen under CI's load: "is the host reachable?");
    # the address itself still refuses a plain connect, and the error says so
    timed_out = OSError("Timed out trying to connect to tcp://127.0.0.1:1 after 2 s")
    line = cli_cluster._unreachable(timed_out, "at 'tcp://127.0.0.1:1'", 2)
    assert "connection refused" in line and "reachable" not in line, line


def test_scheduler_without_workers_waits_then_fails(tmp_path, monkeypatch):
    # a scheduler whose workers are not (yet) there: a bounded, announced wait
    # (TABPREP_WAIT_FOR_WORKERS seconds), then a clear error; a worker that joins in time runs the job
    monkeypatch.setenv("TABPREP_WAIT_FOR_WORKERS", "2")
    runner = CliRunner()
    base = _fit_args(tmp_path)
    # worker processes (a worker thread in this process would tune this process's allocator)
    with distributed.LocalCluster(n_workers=0, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=logging.ERROR) as cluster:
        start = time.monotonic()
        r = runner.invoke(cli, base + ["--scheduler", cluster.scheduler_address])
        assert time.monotonic() - start < 15
        assert r.exit_code == 1, r.output
        assert "waiting up to 2 s for a worker" in r.stderr
        line = r.stderr.strip().splitlines()[-1]
        assert line.startswith("error: ") and "has no workers" in line and "dask worker" in line, r.stderr
        assert "No valid workers" not in r.stderr and not (tmp_path / "wf").exists()
        # 0: no wait at all (dask's wait_for_workers(timeout=0) waited forever)
        monkeypatch.setenv("TABPREP_WAIT_FOR_WORKERS", "0")
        start = time.monotonic()
        r = runner.invoke(cli, base + ["--scheduler", cluster.scheduler_address])
        assert time.monotonic() - start < 15 and r.exit_code == 1, r.output
        assert "has no workers (waited 0 s" in _one_error_line(r) and not (tmp_path / "wf").exists()
        monkeypatch.setenv("TABPREP_WAIT_FOR_WORKERS", "60")
        import threading

        threading.Timer(1.0, cluster.scale, args=(1,)).start()
        r = runner.invoke(cli, base + ["--scheduler", cluster.scheduler_address, "-q"])
        assert r.exit_code == 0, r.output
        assert (tmp_path / "wf" / "workflow.json").exists()
    r = runner.invoke(cli, base + ["--scheduler", "tcp://127.0.0.1:1"], env={"TABPREP_WAIT_FOR_WORKERS": "-3"})
    assert r.exit_code == 2 and "TABPREP_WAIT_FOR_WORKERS" in _one_error_line(r)


def test_memory_limit_is_checked_before_anything_starts(tmp_path):
    runner = CliRunner()
    base = _fit_args(tmp_path)
    for bad in ("garbage", "-1GB", "-1", "2.5", "4"):  # a bare number > 1 was bytes: a 4-byte worker
        r = runner.invoke(cli, base + ["--workers", "1", "--memory-limit", bad])
        line = _one_error_line(r)
        assert r.exit_code == 2 and f"--memory-limit {bad!r}" in line and "4GB" in line, line
    assert not (tmp_path / "wf").exists()
    assert cli_cluster.cpu_cluster_kwargs(1, "0.5")["memory_limit"] == "0.5"  # dask's forms pass through


@pytest.mark.parametrize("opt, bad", [("--rmm-pool-size", "-1"), ("--rmm-pool-size", "-5GB"),
                                      ("--rmm-pool-size", "1.5"), ("--rmm-pool-size", "2"),
                                      ("--device-memory-limit", "inf"), ("--device-memory-limit", "3"),
                                      ("--device-memory-limit", "nan")])
def test_gpu_memory_sizes_refuse_negative_and_unitless(fake_gpus, tmp_path, opt, bad):
    # a bare number is a fraction of the device (0..1); "2" was a 2-byte pool, "-1" a negative one
    made, pools = fake_gpus
    r = CliRunner().invoke(cli, _fit_args(tmp_path) + ["--workers", "1", opt, bad])
    line = _one_error_line(r)
    assert r.exit_code == 2 and f"{opt} {bad!r}" in line and "40GB" in line and "0.8" in line, line
    assert made == [] and pools == [] and not (tmp_path / "wf").exists()


def _bad_int_data(folder):
    """I1 (fitted as int) as floats in every file; part2's hold a 2.5 (no int can hold it)."""
    write_data(folder, files=3, rows=200)
    for name in ("part0", "part1", "part2"):
        d = pd.read_parquet(folder / f"{name}.parquet")
        d["I1"] = d["I1"].astype("float64")
        if name == "part2":
            d.loc[7, "I1"] = 2.5
        d.to_parquet(folder / f"{name}.parquet")


def test_worker_error_is_one_line_naming_column_and_file(dask_processes, tmp_path):
    # a value no int holds, met by a task on a worker of an operator's cluster, reaches the user as
    # the in-process job's one line: the column, the file; no dask traceback, no output
    runner = CliRunner()
    r = runner.invoke(cli, _fit_args(tmp_path) + ["-q"])
    assert r.exit_code == 0, r.output
    _bad_int_data(tmp_path / "bad")
    lines = []
    for extra in ([], ["--scheduler-file", str(dask_processes)]):
        r = runner.invoke(cli, ["transform", str(tmp_path / "wf"), str(tmp_path / "bad"), "--out",
                                str(tmp_path / "out"), "--cast", "-q"] + extra)
        line = _one_error_line(r)
        assert r.exit_code == 1 and "'I1'" in line and "2.5" in line, line
        assert str(tmp_path / "bad" / "part2.parquet") in line, line
        assert not (tmp_path / "out").exists()
        lines.append(line)
    assert lines[0] == lines[1]


def test_op_error_names_op_column_and_file(tmp_path, monkeypatch):
    # an op (here a user function) failing on one partition of the fit: the one line says which op,
    # which columns and which file, not only the function's own text
    (tmp_path / "boom_fns.py").write_text(
        "def boom(col):\n"
        "    if (col == 424242).any():\n"
        "        raise ValueError('value out of range')\n"
        "    return col\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    write_data(tmp_path / "data", files=3, rows=200)
    d = pd.read_parquet(tmp_path / "data" / "part1.parquet")
    d.loc[3, "I2"] = 424242
    d.to_parquet(tmp_path / "data" / "part1.parquet")
    (tmp_path / "spec.yaml").write_text("features:\n  - columns: [I2]\n"
                                        "    ops: [FillMissing, {LambdaOp: {f: {import: 'boom_fns:boom'}}}, Normalize]\n")
    r = CliRunner().invoke(cli, ["fit", str(tmp_path / "spec.yaml"), str(tmp_path / "data"), "--out",
                                 str(tmp_path / "wf"), "-q"])
    line = _one_error_line(r)
    assert r.exit_code == 1 and "value out of range" in line and "LambdaOp(boom)" in line and "'I2'" in line, line
    assert str(tmp_path / "data" / "part1.parquet") in line, line


def test_worker_killed_mid_job_output_complete_and_identical(dask_processes, tmp_path, monkeypatch):
    """SIGKILL of a `dask worker` process (its nanny starts a new one) while the job runs: the job
    succeeds; its files are those of the in-process job, byte for byte; the output folder is never
    seen half-written (it appears whole, _SUCCESS included)."""
    import signal

    home = dask_processes.parent  # the workers' working directory: they import the module from there
    pids = tmp_path / "pids.txt"
    (home / "slow_fns.py").write_text(
        "import os, time\n"
        "def slow(col):\n"
        f"    with open({str(pids)!r}, 'a') as fh:\n"
        "        fh.write(f'{os.getpid()}\\n')\n"
        "    time.sleep(0.15)\n"
        "    return col\n")
    monkeypatch.syspath_prepend(str(home))
    write_data(tmp_path / "data", files=8, rows=250)
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC + "  - columns: [I3]\n    ops: [FillMissing, {LambdaOp: {f: {import: 'slow_fns:slow'}}}, "
                           "Normalize]\n")
    r = CliRunner().invoke(cli, ["fit-transform", str(spec), str(tmp_path / "data"), "--out", str(tmp_path / "local"),
                                 "-q"])
    assert r.exit_code == 0, r.output
    pids.unlink()
    from test_cli_subprocess import tabprep_cmd

    out = tmp_path / "cluster"
    proc = subprocess.Popen(tabprep_cmd() + ["fit-transform", str(spec), str(tmp_path / "data"), "--out", str(out),
                                             "--scheduler-file", str(dask_processes), "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=str(home))
    killed, seen = None, set()
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        calls = [int(x) for x in pids.read_text().split()] if pids.exists() else []
        workers = [p for p in calls if p != proc.pid]
        if killed is None and len(workers) >= 6:  # mid-job: fit partials done or under way, transform to come
            killed, at = workers[-1], len(calls)
            os.kill(killed, signal.SIGKILL)
        if out.exists():   # (the commit's journal is in the folder for an instant after its rename)
            seen.add(tuple(sorted(p.name for p in out.iterdir() if p.name != ".tabprep-commit.json")))
        time.sleep(0.05)
    stdout, stderr = proc.communicate(timeout=60)
    assert killed is not None and proc.returncode == 0, (killed, proc.returncode, stderr)
    after = [int(x) for x in pids.read_text().split()][at:]
    assert after and killed not in after  # the job went on after the kill, without that process
    final = tuple(sorted(p.name for p in out.iterdir()))
    assert "_SUCCESS" in final and seen <= {final}, seen  # never seen without _SUCCESS or with parts missing
    local = sorted(p.name for p in (tmp_path / "local").glob("*.parquet"))
    assert local and local == sorted(p.name for p in out.glob("*.parquet"))
    for name in local:
        assert (out / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name
    assert len(tp.Dataset(str(out)).compute()) == 2000
    with distributed.Client(scheduler_file=str(dask_processes), timeout="30s") as client:
        client.wait_for_workers(2, timeout=60)  # the nanny's new worker, for the tests after this one


def test_a_bare_byte_count_is_bytes_as_dask_reads_it(fake_gpus):
    # dask and dask-cuda read a whole number > 1 as bytes: a script passing 42949672960 keeps
    # working; only tiny counts ("2": a 2-byte pool) are refused as a missing unit
    made, _ = fake_gpus
    with cli_cluster.dask_cluster(None, 1, "8589934592", False, True, rmm_pool_size="42949672960",
                              device_memory_limit="12884901888"):
        pass
    assert made[-1]["rmm_pool_size"] == 40 * 1024 ** 3
    assert made[-1]["device_memory_limit"] == 12 * 1024 ** 3
    assert made[-1]["memory_limit"] == "8589934592"
    for opt, bad in (("--rmm-pool-size", "1048575"), ("--device-memory-limit", "2e9")):
        with pytest.raises(runtime.UsageProblem, match=f"{opt} '{bad}'"):
            cli_cluster._size_or_fraction(bad, opt)
    with pytest.raises(runtime.UsageProblem, match="--memory-limit '1000'"):
        cli_cluster.check_memory_limit("1000")


# -- every worker of an existing cluster gone mid-job: a bounded wait, then a clear error -----------
@pytest.fixture()
def lone_worker_cluster(tmp_path):
    """A `dask scheduler --scheduler-file F` process of its own (these tests kill all its workers) and
    one `dask worker --no-nanny` process (nothing restarts it), working directory F's folder, where
    ``lone_fns.slow`` records the pid that runs it and sleeps 0.3 s. Yields ``(F, start_worker)``;
    stops every process at the end."""
    home = tmp_path / "operator"
    home.mkdir()
    sfile = home / "scheduler.json"
    sys.modules.pop("lone_fns", None)  # an earlier test's module (another folder, another pid file)
    (home / "lone_fns.py").write_text(
        "import os, time\n"
        "def slow(col):\n"
        f"    with open({str(home / 'pids.txt')!r}, 'a') as fh:\n"
        "        fh.write(f'{os.getpid()}\\n')\n"
        "    time.sleep(0.3)\n"
        "    return col\n"
        "def slow_square(x):\n"
        "    return slow(x) ** 2\n")
    procs, logs = [], []

    def start(args):
        log = open(home / f"proc{len(procs)}.log", "w")
        logs.append(log)
        procs.append(subprocess.Popen([sys.executable, "-m", "dask"] + args, stdout=log, stderr=subprocess.STDOUT,
                                      env=_env(), cwd=str(home)))
        return procs[-1]

    def start_worker():
        return start(["worker", "--scheduler-file", str(sfile), "--host", "127.0.0.1", "--nthreads", "1",
                      "--memory-limit", "1GB", "--no-dashboard", "--no-nanny"])

    try:
        start(["scheduler", "--scheduler-file", str(sfile), "--host", "127.0.0.1", "--port", "0", "--no-dashboard"])
        deadline = time.monotonic() + 60
        while not sfile.exists():
            assert procs[0].poll() is None, (home / "proc0.log").read_text()
            assert time.monotonic() < deadline, "the scheduler wrote no scheduler file within 60 s"
            time.sleep(0.1)
        start_worker()
        with distributed.Client(scheduler_file=str(sfile), timeout="30s") as client:
            client.wait_for_workers(1, timeout=60)
        yield sfile, start_worker
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.kill()
            p.wait(timeout=20)
        for log in logs:
            log.close()
        sys.modules.pop("lone_fns", None)


def _slow_job(tmp_path, sfile, wait_s):
    """The in-process output of a fit-transform with the slow op (``tmp_path/local``), and the same
    job started as a process on the cluster of ``sfile`` (TABPREP_WAIT_FOR_WORKERS=``wait_s``);
    returns once a worker ran the slow op twice: ``(process, pid of that worker, output folder)``."""
    home = sfile.parent
    write_data(tmp_path / "data", files=8, rows=250)
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC + "  - columns: [I3]\n    ops: [FillMissing, {LambdaOp: {f: {import: 'lone_fns:slow'}}}, "
                           "Normalize]\n")
    pids = home / "pids.txt"
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(home))
        r = CliRunner().invoke(cli, ["fit-transform", str(spec), str(tmp_path / "data"), "--out",
                                     str(tmp_path / "local"), "-q"])
    assert r.exit_code == 0, r.output
    pids.unlink(missing_ok=True)
    from test_cli_subprocess import tabprep_cmd

    out = tmp_path / "cluster"
    proc = subprocess.Popen(tabprep_cmd() + ["fit-transform", str(spec), str(tmp_path / "data"), "--out", str(out),
                                             "--scheduler-file", str(sfile), "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(_env(), TABPREP_WAIT_FOR_WORKERS=str(wait_s)), cwd=str(home))
    deadline = time.monotonic() + 60
    while True:
        workers = [int(x) for x in pids.read_text().split() if int(x) != proc.pid] if pids.exists() else []
        if len(workers) >= 2:
            return proc, workers[-1], out
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(("no worker ran the slow op", proc.communicate(timeout=30)))
        time.sleep(0.05)


def _finish(proc, timeout):
    """``(returncode, stderr)`` of ``proc`` within ``timeout`` seconds (killed, and the test failed,
    after that: a job that hangs fails instead of hanging CI)."""
    try:
        _, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, stderr = proc.communicate(timeout=30)
        raise AssertionError(f"the job did not end within {timeout} s: {stderr}") from None
    return proc.returncode, stderr


def test_all_workers_gone_mid_fit_transform_is_one_line(lone_worker_cluster, tmp_path):
    # the only worker of an operator's cluster killed mid-job (no nanny restarts it): the workflow
    # the job scattered to every worker is gone with it, which dask cannot recompute; the job fails
    # at once with one line naming the scheduler and what to do (it said "FutureCancelledError:
    # _finalize_stats-... cancelled for reason: already forgotten"), exit code 1, nothing committed
    import json
    import signal

    sfile, _ = lone_worker_cluster
    address = json.loads(sfile.read_text())["address"]
    proc, worker, out = _slow_job(tmp_path, sfile, 3)
    os.kill(worker, signal.SIGKILL)
    killed_at = time.monotonic()
    code, stderr = _finish(proc, 60)
    assert time.monotonic() - killed_at < 30, stderr
    line = _one_error_line(types.SimpleNamespace(stderr=stderr))
    assert code == 1, stderr
    assert address in line and "lost all its workers" in line and "run the job again" in line, line
    assert f"dask worker --scheduler-file {sfile}" in line and "Future" not in line, line
    assert not (out / "_SUCCESS").exists()


def _kill_mid_compute(sfile, start_worker=None, after_s=1.5):
    """A thread that SIGKILLs the worker once it has run ``lone_fns`` twice, then (``start_worker``
    given) starts a new worker ``after_s`` seconds later. Returns the thread (started)."""
    import signal
    import threading

    pids = sfile.parent / "pids.txt"

    def run():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            calls = [int(x) for x in pids.read_text().split()] if pids.exists() else []
            if len(calls) >= 2:
                os.kill(calls[-1], signal.SIGKILL)
                if start_worker is not None:
                    time.sleep(after_s)
                    start_worker()
                return
            time.sleep(0.05)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _scheduler_tasks(sfile):
    with distributed.Client(scheduler_file=str(sfile), timeout="30s") as client:
        return client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks))


def test_no_workers_for_the_wait_fails_the_compute(lone_worker_cluster, monkeypatch):
    # a compute whose tasks hold no scattered data (as `tabprep convert`'s, and any between the
    # fit passes), its only worker killed and none back: dask's scheduler keeps the tasks waiting
    # for a worker forever (no-workers-timeout is unset by default) and the job hung; it now waits
    # TABPREP_WAIT_FOR_WORKERS seconds, as for a first worker, then fails with one line, and the
    # operator's scheduler is left without the job's tasks
    import json

    import dask

    sfile, _ = lone_worker_cluster
    address = json.loads(sfile.read_text())["address"]
    monkeypatch.syspath_prepend(str(sfile.parent))
    monkeypatch.setenv("TABPREP_WAIT_FOR_WORKERS", "3")
    import lone_fns

    killer = _kill_mid_compute(sfile)
    start = time.monotonic()

    def job():
        with cli_cluster.dask_cluster(None, None, None, True, True, scheduler_file=str(sfile)):
            return dask.compute(*[dask.delayed(lone_fns.slow_square)(i) for i in range(20)])

    with pytest.raises(runtime.JobFailed) as err:
        within(60, job)
    killer.join(timeout=5)
    assert 3 <= time.monotonic() - start < 30
    msg = str(err.value)
    assert address in msg and "no workers for 3 s" in msg and "TABPREP_WAIT_FOR_WORKERS" in msg, msg
    assert f"dask worker --scheduler-file {sfile}" in msg, msg
    deadline = time.monotonic() + 10
    while _scheduler_tasks(sfile) and time.monotonic() < deadline:  # the cancel reaches the scheduler
        time.sleep(0.2)
    assert _scheduler_tasks(sfile) == 0


def test_workers_back_within_the_wait_finish_the_compute(lone_worker_cluster, monkeypatch):
    # the only worker killed mid-compute, a new one started 1.5 s later (within the wait): the
    # compute goes on on it (dask recomputes what the dead worker held) and returns every result
    import dask

    sfile, start_worker = lone_worker_cluster
    monkeypatch.syspath_prepend(str(sfile.parent))
    monkeypatch.setenv("TABPREP_WAIT_FOR_WORKERS", "30")
    import lone_fns

    killer = _kill_mid_compute(sfile, start_worker)

    def job():
        with cli_cluster.dask_cluster(None, None, None, True, True, scheduler_file=str(sfile)):
            return dask.compute(*[dask.delayed(lone_fns.slow_square)(i) for i in range(20)])

    got = within(90, job)
    killer.join(timeout=5)
    assert not killer.is_alive()
    calls = (sfile.parent / "pids.txt").read_text().split()
    assert len(set(calls)) == 2  # both workers ran tasks: the killed one and its successor
    assert list(got) == [i * i for i in range(20)]


@contextlib.contextmanager
def _port_8787_held():
    """dask's default dashboard/HTTP port held by another program for the block (or already held)."""
    import socket

    holder = socket.socket()
    try:
        holder.bind(("0.0.0.0", 8787))
        holder.listen(1)
    except OSError:
        pass  # already held by something else: the case under test all the same
    try:
        yield
    finally:
        holder.close()


def test_local_cluster_leaves_the_dashboard_port_alone(recwarn):
    # --workers starts no dashboard, yet dask's scheduler still bound its HTTP server to 8787, and
    # warned "Port 8787 is already in use" (even with -q) whenever another cluster or job held it
    with _port_8787_held():
        with cli_cluster.dask_cluster(None, 1, None, True, True) as client:
            assert client.submit(lambda: 7).result() == 7
    assert not [w for w in recwarn if "8787" in str(w.message)], [str(w.message) for w in recwarn]


def test_protocol_ucx_without_its_package_is_a_usage_error(monkeypatch, tmp_path):
    # was dask's FutureWarning about the package, then "Cluster failed to start: Scheduler failed
    # to start" (exit 1) after the cluster had begun starting
    monkeypatch.setattr(cli_cluster, "_ucx_available", lambda: False)
    r = CliRunner().invoke(cli, _fit_args(tmp_path) + ["--workers", "1", "--protocol", "ucx"])
    line = _one_error_line(r)
    assert r.exit_code == 2 and "--protocol ucx" in line and "distributed-ucxx" in line and "tcp" in line, line
    assert not (tmp_path / "wf").exists()


@pytest.mark.gpu
@GPU_SKIP
def test_real_local_cuda_cluster_takes_the_cli_arguments(recwarn):
    # the fake LocalCUDACluster above checks what tabprep passes; this one, that dask-cuda accepts
    # it (its RMM pool, the scheduler's HTTP server off 8787) and runs a task on the GPU worker
    with _port_8787_held():
        with cli_cluster.dask_cluster(None, 1, None, False, True) as client:
            assert len(client.scheduler_info()["workers"]) == 1
            assert client.submit(lambda: __import__("cupy").arange(5).sum().item()).result() == 10
    assert not [w for w in recwarn if "8787" in str(w.message)], [str(w.message) for w in recwarn]
