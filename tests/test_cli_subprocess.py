"""The ``tabprep`` console script as a real process: every subcommand, real exit codes, and a
dask.distributed LocalCluster of 2 worker processes giving the same output as the default scheduler."""
from __future__ import annotations

import importlib.util
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import tabprep as tp
from tabprep.cli.main import cli
from tabprep.workflow.spec import op_signature

from test_cli import SPEC, write_data

HAS_SYNTHETIC = importlib.util.find_spec("tabprep.io.synthetic") is not None
needs_synthetic = pytest.mark.skipif(not HAS_SYNTHETIC, reason="tabprep.io.synthetic is not there yet")


def tabprep_cmd():
    # the console script installed with *this* interpreter (a venv's bin/), not the first `tabprep`
    # on PATH: `venv/bin/python -m pytest` without activating the venv would otherwise run another
    # Python's script (a pyenv shim), which cannot import tabprep
    exe = Path(sys.executable).with_name("tabprep" + (".exe" if os.name == "nt" else ""))
    return [str(exe)] if exe.is_file() else [sys.executable, "-m", "tabprep.cli"]


def sh(*args, code: int = 0, cwd=None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    proc = subprocess.run(tabprep_cmd() + [str(a) for a in args], capture_output=True, text=True, timeout=240,
                          env=env, cwd=cwd)
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    return proc


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sub")
    write_data(root / "data", files=4, rows=1500)
    (root / "spec.yaml").write_text(SPEC)
    return root


def read(folder: Path) -> pd.DataFrame:
    return tp.Dataset(str(folder)).compute()


def test_help_process():
    out = sh("--help").stdout
    assert "fit-transform" in out and "Exit codes" in out
    assert "--scheduler" in sh("fit", "--help").stdout


def test_python_module_entry_point():
    proc = subprocess.run([sys.executable, "-m", "tabprep.cli", "--version"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and tp.__version__ in proc.stdout


def test_fit_transform_inspect_check_processes(work):
    sh("fit", work / "spec.yaml", work / "data", "--out", work / "wf")
    proc = sh("transform", work / "wf", work / "data", "--out", work / "out", "--output-files", "2", "--profile")
    assert "transform: 6,000 rows -> 2 parquet files" in proc.stdout and "Categorify" in proc.stdout
    info = json.loads(sh("inspect", work / "wf", "--json").stdout)
    assert set(info["embedding_sizes"]) == {"C1", "C2"}
    assert "ok" in sh("check", work / "spec.yaml", work / "data").stdout
    # functions named in a spec are imported from the working directory
    (work / "myfuncs.py").write_text("def twice(col):\n    return col * 2\n")
    (work / "fn.yaml").write_text("features:\n  - columns: [I1]\n    ops: [{LambdaOp: {f: {import: 'myfuncs:twice'}}}]\n")
    assert "ok, 1 input columns" in sh("check", "fn.yaml", cwd=work).stdout
    wf = tp.Workflow.from_spec(SPEC)
    ds = tp.Dataset(str(work / "data"))
    wf.fit(ds)
    pd.testing.assert_frame_equal(read(work / "out"), wf.transform(ds).compute())


def test_convert_process(work):
    sh("convert", work / "data", "--out", work / "conv", "--output-files", "1", "-q")
    assert len(read(work / "conv")) == 6000


def test_exit_codes_process(work, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("features:\n  - columns: [C1]\n    ops: [{Categorify: {freq_treshold: 2}}]\n")
    proc = sh("fit", bad, work / "data", "--out", tmp_path / "wf", code=2)
    assert proc.stderr.strip() == (f"error: {bad} line 3: Categorify has no parameter 'freq_treshold' in "
                                   f"features[0].ops[0].Categorify.freq_treshold; did you mean 'freq_threshold'? "
                                   f"signature: {op_signature(tp.ops.Categorify)}")
    bad.write_text("features:\n  - columns: [C9]\n")
    proc = sh("fit-transform", bad, work / "data", "--out", tmp_path / "o", "-q", code=1)
    assert proc.stderr.startswith("error: column 'C9'") and proc.stdout == ""
    sh("transform", tmp_path / "nowf", work / "data", "--out", tmp_path / "o", code=2)
    sh("fit", work / "spec.yaml", work / "data", "--outt", tmp_path / "o", code=2)
    assert not (tmp_path / "o").exists() and not (tmp_path / "wf").exists()


@needs_synthetic
def test_generate_process(tmp_path):
    proc = sh("generate", "criteo", "--rows", "3000", "--out", tmp_path / "criteo", "--files", "2")
    assert "generate: 3,000 criteo rows" in proc.stdout
    df = read(tmp_path / "criteo")
    assert len(df) == 3000 and {"label", "I1", "I13", "C1", "C26"} <= set(df.columns)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    sh("generate", "movielens", "--rows", "2000", "--out", tmp_path / "ml")
    assert len(read(tmp_path / "ml")) > 0
    sh("generate", "criteo", "--rows", "10", "--out", tmp_path / "criteo", code=2)  # exists, no --overwrite


@needs_synthetic
def test_demo_process(tmp_path):
    proc = sh("demo", "--rows", "20000", "--workdir", tmp_path / "demo")
    out = proc.stdout
    assert "embedding sizes" in out and "C26: (" in out and "rows/s" in out
    assert "tabprep fit " in out  # the equivalent commands
    for name in ("raw", "spec.yaml", "workflow", "out"):
        assert (tmp_path / "demo" / name).exists()
    assert len(read(tmp_path / "demo" / "out")) == 20000
    # a second run reuses the folder
    sh("demo", "--rows", "5000", "--workdir", tmp_path / "demo", "-q")
    assert len(read(tmp_path / "demo" / "out")) == 5000


# -- dask.distributed ----------------------------------------------------------------------------
def test_local_cluster_workers_2_same_output(work, tmp_path):
    """`--workers 2` (a LocalCluster of 2 processes, in a real process) == dask's default scheduler."""
    sh("fit-transform", work / "spec.yaml", work / "data", "--out", tmp_path / "default", "-q")
    proc = sh("fit-transform", work / "spec.yaml", work / "data", "--out", tmp_path / "cluster",
              "--workflow-out", tmp_path / "wf", "--workers", "2", "--memory-limit", "2GB")
    assert "dask cluster:" in proc.stderr and "(2 workers)" in proc.stderr
    pd.testing.assert_frame_equal(read(tmp_path / "cluster"), read(tmp_path / "default"))
    a = json.loads((tmp_path / "cluster" / "_schema.json").read_text())
    b = json.loads((tmp_path / "default" / "_schema.json").read_text())
    assert a == b


def test_existing_scheduler_same_output_and_profile(work, tmp_path):
    """`--scheduler ADDRESS` of a LocalCluster with 2 worker processes; per-op times come from the workers."""
    from distributed import LocalCluster

    runner = CliRunner()
    r = runner.invoke(cli, ["fit", str(work / "spec.yaml"), str(work / "data"), "--out", str(tmp_path / "wf"), "-q"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli, ["transform", str(tmp_path / "wf"), str(work / "data"), "--out",
                            str(tmp_path / "default"), "--to", "tfrecord", "--batch-size", "100", "-q"])
    assert r.exit_code == 0, r.output
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=logging.ERROR) as cluster:
        addr = cluster.scheduler_address
        r = runner.invoke(cli, ["fit", str(work / "spec.yaml"), str(work / "data"), "--out",
                                str(tmp_path / "wf2"), "--scheduler", addr, "-q", "--profile"])
        assert r.exit_code == 0, r.output
        assert "Categorify" in r.stdout and "fit" in r.stdout  # times recorded on the workers
        r = runner.invoke(cli, ["transform", str(tmp_path / "wf2"), str(work / "data"), "--out",
                                str(tmp_path / "cluster"), "--to", "tfrecord", "--batch-size", "100",
                                "--scheduler", addr, "--profile"])
        assert r.exit_code == 0, r.output
        assert "Normalize" in r.stdout and "transform" in r.stdout
    for name in ("tfrecord_spec.json", "_schema.json"):
        assert (tmp_path / "cluster" / name).read_text() == (tmp_path / "default" / name).read_text()
    files = sorted(p.name for p in (tmp_path / "default").glob("*.tfrecord"))
    assert files and files == sorted(p.name for p in (tmp_path / "cluster").glob("*.tfrecord"))
    for f in files:
        assert (tmp_path / "cluster" / f).read_bytes() == (tmp_path / "default" / f).read_bytes()
    assert tp.Workflow.load(str(tmp_path / "wf2")).to_spec() == tp.Workflow.load(str(tmp_path / "wf")).to_spec()


def test_cli_start_does_not_import_dask_dataframe():
    """``import tabprep`` (every CLI command, ``tabprep serve``, a dask worker's first task) leaves
    dask.dataframe to the first dataset read: it pulls in dask.array and scipy (~0.4-0.8 s)."""
    code = ("import sys, tabprep, tabprep.cli, tabprep.serving; "
            "print(sorted(m for m in ('dask.dataframe', 'dask.array', 'scipy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_parquet_fit_transform_write_does_not_import_dask_dataframe(tmp_path, backend):
    """A fit and a transform of parquet files written back as parquet (the Criteo job, the CLI's
    fit-transform) run on dask.delayed tasks over the files' pieces: importing dask.dataframe
    (~0.5 s, on the job's critical path) is left to users who ask for a dask frame. The partition
    counts are still the dask frame's."""
    code = f"""
import sys, json
import numpy as np, pandas as pd
import tabprep as tp
from tabprep import ops
rng = np.random.default_rng(0)
for i in range(2):
    pd.DataFrame({{"c": rng.integers(0, 50, 1000), "x": rng.normal(size=1000),
                  "y": rng.integers(0, 2, 1000)}}).to_parquet(r"{tmp_path}/in-%d.parquet" % i, row_group_size=250)
ds = tp.Dataset(r"{tmp_path}/in-*.parquet", cpu={backend == "cpu"}, part_size="8KB")
wf = tp.Workflow((["c"] >> ops.Categorify()) + (["x"] >> ops.Normalize()) + ["y"])
wf.fit(ds)
out = wf.transform(ds)
meta = out.to_parquet(r"{tmp_path}/out")
counts = [ds.npartitions, out.npartitions]
imported = sorted(m for m in ("dask.dataframe", "dask_cudf") if m in sys.modules)
counts += [ds.to_ddf().npartitions, out.to_ddf().npartitions]
print(json.dumps({{"imported": imported, "counts": counts, "rows": meta["rows"]}}))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["imported"] == [], r.stdout + r.stderr
    assert res["rows"] == 2000
    n_ds, n_out, n_ds_ddf, n_out_ddf = res["counts"]
    assert n_ds > 2 and n_ds == n_ds_ddf and n_out == n_out_ddf == n_ds
    got = pd.read_parquet(tmp_path / "out")
    assert len(got) == 2000 and list(got.columns) == ["c", "x", "y"]


def test_stdout_closed_by_the_reader_exits_quietly(tmp_path):
    """``tabprep inspect WF | head -1``: once the reader is gone, the command stops quietly as
    common CLIs do (exit 0 or 141 = 128 + SIGPIPE; no ``error: [Errno 32] Broken pipe``, no traceback)."""
    import fcntl

    cols = [f"column_{i:04d}" for i in range(3000)]  # an inspect listing of ~200 kB, far beyond a pipe's buffer
    frame = pd.DataFrame({c: [1, 2, 3] for c in cols})
    tp.Workflow(cols).fit(tp.Dataset(frame, cpu=True)).save(str(tmp_path / "wf"))
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    for args in (["inspect", tmp_path / "wf"], ["inspect", tmp_path / "wf", "--json"]):
        proc = subprocess.Popen(tabprep_cmd() + [str(a) for a in args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env)
        if hasattr(fcntl, "F_SETPIPE_SZ"):  # the smallest pipe buffer: the writer blocks early (Linux)
            fcntl.fcntl(proc.stdout.fileno(), fcntl.F_SETPIPE_SZ, 4096)
        first = proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read().decode()
        rc = proc.wait(timeout=120)
        assert first.strip(), args
        assert rc in (0, 141), (args, rc, err)
        assert "error" not in err.lower() and "Traceback" not in err and "Broken pipe" not in err, (args, err)
