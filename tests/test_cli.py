"""The ``tabprep`` command line, in process with click's CliRunner: jobs, outputs, messages, exit codes."""
from __future__ import annotations

import io
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import tabprep as tp
from tabprep.cli.main import CRITEO_SPEC, cli
from tabprep.cli.progress import Progress

SPEC = """\
features:
  - columns: [C1, C2]
    ops: [{Categorify: {freq_threshold: 2}}]
  - columns: [I1, I2]
    ops: [FillMissing, {Clip: {min_value: 0}}, LogOp, Normalize]
  - columns: [label]
"""


def write_data(folder: Path, files: int = 3, rows: int = 2000, seed: int = 0) -> Path:
    """Small Criteo-like parquet files (label, I1-I4 with nulls, C1-C3 strings with nulls)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        d = {"label": rng.integers(0, 2, rows)}
        for i in range(1, 5):
            x = pd.array(rng.integers(-3, 500, rows), dtype="Int64")
            x[rng.random(rows) < 0.1] = pd.NA
            d[f"I{i}"] = x
        for i in range(1, 4):
            c = pd.Series(rng.integers(0, 40 * i, rows)).map(lambda v: f"{v:06x}").astype(object)
            c[rng.random(rows) < 0.05] = None
            d[f"C{i}"] = pd.Series(c, dtype="str")
        pd.DataFrame(d).to_parquet(folder / f"part{f}.parquet")
    return folder


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return write_data(tmp_path_factory.mktemp("cli") / "data")


@pytest.fixture
def spec(tmp_path) -> Path:
    p = tmp_path / "spec.yaml"
    p.write_text(SPEC)
    return p


def run(*args: str, ok: bool = True):
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, (result.exit_code, result.output)
    return result


def python_reference(data: Path) -> pd.DataFrame:
    wf = tp.Workflow.from_spec(SPEC)
    ds = tp.Dataset(str(data))
    wf.fit(ds)
    return wf.transform(ds).compute()


def hidden_leftovers(folder: Path):
    return [p.name for p in folder.iterdir() if p.name.startswith(".") and "tabprep" in p.name]


# -- help --------------------------------------------------------------------------------------
COMMANDS = ["fit", "transform", "fit-transform", "convert", "check", "inspect", "generate", "demo"]


def test_help_lists_every_command_and_exit_codes():
    out = run("--help").output
    for cmd in COMMANDS:
        assert f"  {cmd} " in out
    assert "Exit codes" in out and "features:" in out
    assert run("--version").output.strip().endswith(tp.__version__)


@pytest.mark.parametrize("cmd", COMMANDS)
def test_each_command_help(cmd):
    out = run(cmd, "--help").output
    assert "Usage: " in out and "--help" in out and "--debug" in out
    if cmd in ("fit", "transform", "fit-transform", "convert", "demo"):
        for opt in ("--cpu / --gpu", "--part-size", "--scheduler", "--workers", "--memory-limit", "--profile",
                    "--quiet"):
            assert opt in out, (cmd, opt)
    if cmd in ("transform", "fit-transform", "convert"):
        for opt in ("--to", "--output-files", "--split-per-worker", "--batch-size", "--shuffle", "--overwrite"):
            assert opt in out, (cmd, opt)


# -- jobs ----------------------------------------------------------------------------------------
def test_fit_transform_inspect_match_python(data, spec, tmp_path):
    r = run("fit", spec, data, "--out", tmp_path / "wf")
    assert "fit: 6,000 rows, 3 partitions" in r.stdout and "rows/s" in r.stdout
    assert "fit pass 1" in r.stderr and "partitions" in r.stderr  # the progress bar
    r = run("transform", tmp_path / "wf", data, "--out", tmp_path / "out")
    assert "transform: 6,000 rows -> 3 parquet files" in r.stdout
    assert (tmp_path / "out" / "_SUCCESS").exists()
    got = tp.Dataset(str(tmp_path / "out")).compute()
    pd.testing.assert_frame_equal(got, python_reference(data))

    r = run("inspect", tmp_path / "wf")
    for text in ("output schema (5 columns)", "embedding sizes", "C1: (", "statistics:", "Categorify",
                 "vocabulary", "Normalize", "mean", "columns: [C1, C2]"):
        assert text in r.stdout, text
    info = json.loads(run("inspect", tmp_path / "wf", "--json").stdout)
    wf = tp.Workflow.load(str(tmp_path / "wf"))
    assert info["embedding_sizes"] == {k: list(v) for k, v in tp.get_embedding_sizes(wf).items()}
    assert info["spec"] == tp.Workflow.from_spec(SPEC).to_spec()
    assert {s["op"] for s in info["statistics"]} == {"Categorify", "Normalize"}
    out_info = json.loads(run("inspect", tmp_path / "out", "--json").stdout)
    assert out_info["kind"] == "output" and out_info["rows"] == 6000 and out_info["complete"]


def test_fit_transform_to_tfrecord_split_per_worker(data, spec, tmp_path):
    r = run("fit-transform", spec, data, "--out", tmp_path / "tfr", "--workflow-out", tmp_path / "wf",
            "--to", "tfrecord", "--batch-size", "64", "--split-per-worker", "2", "--output-files", "2",
            "--shuffle", "--seed", "1")
    assert "saved the fitted workflow" in r.stdout
    meta = json.loads((tmp_path / "tfr" / "_metadata.json").read_text())
    assert meta["rows"] == 6000 and meta["format"] == "tfrecord"
    assert meta["options"]["shuffle"] == "partition" and meta["options"]["batch_size"] == 64
    assert sorted(f["file"] for f in meta["files"]) == [f"worker_{w}/part-0000{i}.tfrecord"
                                                        for w in range(2) for i in range(2)]
    # prebatched: files hold whole 64-row batches (near-equal counts), only the last may be short
    rows = [f["rows"] for f in sorted(meta["files"], key=lambda f: f["file"])]
    assert sum(rows) == 6000 and max(rows) - min(rows) <= 64 and all(r % 64 == 0 for r in rows[:-1])
    assert (tmp_path / "tfr" / "tfrecord_spec.json").exists() and (tmp_path / "wf" / "workflow.json").exists()


def test_shuffle_full_keeps_rows(data, spec, tmp_path):
    run("fit-transform", spec, data, "--out", tmp_path / "out", "--shuffle", "full", "--output-files", "2",
        "--seed", "3", "-q")
    got = tp.Dataset(str(tmp_path / "out")).compute()
    want = python_reference(data)
    assert len(got) == len(want)
    key = ["C1", "C2", "I1", "I2", "label"]
    pd.testing.assert_frame_equal(got.sort_values(key).reset_index(drop=True),
                                  want.sort_values(key).reset_index(drop=True))


def test_convert_csv_to_parquet_to_tfrecord(tmp_path):
    df = pd.DataFrame({"a": np.arange(100), "b": np.linspace(0, 1, 100), "s": [f"x{i % 7}" for i in range(100)]})
    df.to_csv(tmp_path / "in.tsv", sep="\t", index=False, header=False)
    run("convert", tmp_path / "in.tsv", "--engine", "csv", "--sep", "\\t", "--names", "a,b,s",
        "--out", tmp_path / "pq")
    got = tp.Dataset(str(tmp_path / "pq")).compute()
    assert list(got.columns) == ["a", "b", "s"] and len(got) == 100 and got["a"].tolist() == list(range(100))
    r = run("convert", tmp_path / "pq", "--to", "tfrecord", "--batch-size", "32", "--compression", "gzip",
            "--out", tmp_path / "tfr")
    assert "convert: 100 rows -> 1 tfrecord file" in r.stdout
    spec = json.loads((tmp_path / "tfr" / "tfrecord_spec.json").read_text())
    assert spec["compression"] == "GZIP" and spec["batch_size"] == 32


def test_check_command(data, spec):
    r = run("check", spec, data)
    assert "ok, 5 input columns -> 5 output columns" in r.stdout and "Categorify" in r.stdout
    assert json.loads(run("check", spec, "--json").stdout) == tp.Workflow.from_spec(SPEC).to_spec()


def test_profile_and_quiet(data, spec, tmp_path):
    r = run("fit-transform", spec, data, "--out", tmp_path / "out", "--profile", "--quiet")
    assert "profile" in r.stdout
    for op in ("Categorify", "FillMissing", "Clip", "LogOp", "Normalize"):
        assert op in r.stdout
    assert "fit " in r.stdout and "transform " in r.stdout
    assert "fit: " not in r.stdout and r.stderr == ""  # quiet: no summaries, no bars
    r = run("fit", spec, data, "--out", tmp_path / "wf", "-q")
    assert r.stdout == "" and r.stderr == ""


def test_overwrite(data, spec, tmp_path):
    run("fit", spec, data, "--out", tmp_path / "wf", "-q")
    r = run("fit", spec, data, "--out", tmp_path / "wf", "-q", ok=False)
    assert r.exit_code == 2 and "exists and is not empty; pass --overwrite" in r.stderr
    run("fit", spec, data, "--out", tmp_path / "wf", "-q", "--overwrite")
    assert not hidden_leftovers(tmp_path)


# -- bad input -----------------------------------------------------------------------------------------
def assert_failed(r, code: int, *fragments: str) -> None:
    assert r.exit_code == code, (r.exit_code, r.output)
    lines = [ln for ln in r.stderr.strip().splitlines() if "error" in ln.lower()]
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert r.stderr.strip().splitlines()[-1] == lines[0]
    for frag in fragments:
        assert frag in lines[0], (frag, lines[0])
    assert "Traceback" not in r.output


def test_missing_data_file(spec, tmp_path):
    r = run("fit", spec, tmp_path / "nope.parquet", "--out", tmp_path / "wf", ok=False)
    assert_failed(r, 2, "no such file or folder", "nope.parquet")
    assert not (tmp_path / "wf").exists()


def test_missing_spec_and_workflow(data, tmp_path):
    assert_failed(run("fit", tmp_path / "nope.yaml", data, "--out", tmp_path / "wf", ok=False), 2, "does not exist")
    assert_failed(run("transform", tmp_path / "nowf", data, "--out", tmp_path / "o", ok=False), 2,
                  "not a saved workflow")
    assert_failed(run("inspect", tmp_path, ok=False), 2, "not a saved workflow")
    assert not (tmp_path / "wf").exists() and not (tmp_path / "o").exists()


def test_malformed_spec(data, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("features:\n  - columns: [C1, C2]\n    ops: [Categorfy]\n")
    r = run("fit", bad, data, "--out", tmp_path / "wf", ok=False)
    assert_failed(r, 2, "bad.yaml line 3", "unknown op 'Categorfy'", "did you mean 'Categorify'")
    bad.write_text("features:\n  - columns: [C1\n")
    assert_failed(run("fit-transform", bad, data, "--out", tmp_path / "o", ok=False), 2, "invalid YAML", "line")
    assert_failed(run("check", bad, ok=False), 2, "invalid YAML")
    assert not (tmp_path / "wf").exists() and not (tmp_path / "o").exists()


def test_unknown_column(data, tmp_path):
    bad = tmp_path / "spec.yaml"
    bad.write_text("features:\n  - columns: [C1]\n    ops: [Categorify]\n  - columns: [I11]\n    ops: [Normalize]\n")
    r = run("fit", bad, data, "--out", tmp_path / "wf", ok=False)
    assert_failed(r, 1, "column 'I11'", "spec.yaml line 4", "is not in the dataset", "did you mean 'I1'")
    assert not (tmp_path / "wf").exists() and not hidden_leftovers(tmp_path)
    assert_failed(run("check", bad, data, ok=False), 1, "column 'I11'")


def test_unknown_column_at_transform(data, spec, tmp_path):
    run("fit", spec, data, "--out", tmp_path / "wf", "-q")
    other = write_data(tmp_path / "other", files=1, rows=50)
    pd.read_parquet(other / "part0.parquet").drop(columns=["C2"]).to_parquet(other / "part0.parquet")
    r = run("transform", tmp_path / "wf", other, "--out", tmp_path / "out", ok=False)
    assert_failed(r, 1, "column 'C2'", "not in the dataset")
    assert not (tmp_path / "out").exists() and not hidden_leftovers(tmp_path)


def test_unwritable_output(data, spec, tmp_path):
    (tmp_path / "afile").write_text("x")
    r = run("fit", spec, data, "--out", tmp_path / "afile" / "wf", ok=False)
    assert_failed(r, 1, "cannot write", "is a file, not a folder")
    r = run("fit-transform", spec, data, "--out", tmp_path / "afile" / "out", ok=False)
    assert_failed(r, 1, "cannot write")
    if os.geteuid() != 0:  # root ignores permissions
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        try:
            assert_failed(run("fit", spec, data, "--out", ro / "wf", ok=False), 1, "no write permission")
        finally:
            ro.chmod(0o700)


def test_job_failing_midway_leaves_nothing(data, tmp_path):
    # raw data has nulls: TFRecord refuses them in the middle of the write
    r = run("convert", data, "--to", "tfrecord", "--out", tmp_path / "tfr", ok=False)
    assert_failed(r, 1, "null")
    assert not (tmp_path / "tfr").exists() and not hidden_leftovers(tmp_path)


def test_usage_errors(data, spec, tmp_path):
    r = run("transform", tmp_path, data, "--out", tmp_path / "o", "--batch-size", "8", ok=False)
    assert_failed(r, 2, "--batch-size applies to --to tfrecord")
    r = run("fit", spec, data, "--out", tmp_path / "wf", "--memory-limit", "1GB", ok=False)
    assert_failed(r, 2, "--memory-limit", "--workers")
    r = run("fit", spec, data, "--out", tmp_path / "wf", "--scheduler", "tcp://x:1", "--workers", "2", ok=False)
    assert_failed(r, 2, "not both")
    r = run("fit", spec, data, "--out", tmp_path / "wf", "--workers", "0", ok=False)
    assert r.exit_code == 2  # click's own usage error
    r = run("fit", spec, "--out", tmp_path / "wf", ok=False)
    assert r.exit_code == 2 and "Missing argument" in r.stderr
    r = run("convert", data, "--out", data, "--overwrite", ok=False)
    assert_failed(r, 2, "holds the input")


def test_debug_shows_traceback(data, tmp_path):
    bad = tmp_path / "spec.yaml"
    bad.write_text("features:\n  - columns: [nope]\n")
    r = run("fit", bad, data, "--out", tmp_path / "wf", "--debug", ok=False)
    assert r.exit_code == 1 and "Traceback" in r.stderr and "error: column 'nope'" in r.stderr


# -- progress ----------------------------------------------------------------------------------------
def test_progress_lines():
    buf = io.StringIO()
    p = Progress(rows=1000, stream=buf)
    p("fit pass 1", 0, 4)
    p.tick()
    p("fit pass 1", 4, 4)
    p("transform", 0, 2)
    p("transform", 2, 2)
    lines = buf.getvalue().splitlines()
    assert lines[0].startswith("fit pass 1") and "0/4 partitions" in lines[0] and "0/1k rows" in lines[0]
    assert any("4/4 partitions" in ln and "1k/1k rows" in ln and "rows/s" in ln for ln in lines)
    assert [s for s, _, _ in p.finished] == ["fit pass 1", "transform"]
    quiet = io.StringIO()
    q = Progress(rows=None, enabled=False, stream=quiet)
    q("x", 0, 1)
    q("x", 1, 1)
    assert quiet.getvalue() == ""
    p2 = Progress(rows=None, stream=io.StringIO())
    p2("x", 0, 3)
    p2.done = 1
    assert "ETA" in p2.line() and "partitions" in p2.line()


def test_criteo_spec_is_the_canonical_workflow():
    wf = tp.Workflow.from_spec(CRITEO_SPEC)
    assert wf.output_columns == [f"C{i}" for i in range(1, 27)] + [f"I{i}" for i in range(1, 14)] + ["label"]
    assert [type(o).__name__ for o in wf.ops] == ["Categorify", "FillMissing", "Clip", "LogOp", "Normalize"]


# -- generate / demo (in process) ---------------------------------------------------------------------
def _has_synthetic() -> bool:
    import importlib.util

    return importlib.util.find_spec("tabprep.io.synthetic") is not None


needs_synthetic = pytest.mark.skipif(not _has_synthetic(), reason="tabprep.io.synthetic is not there yet")


@needs_synthetic
def test_criteo_spec_matches_synthetic_columns():
    from tabprep.io.synthetic import criteo_columns

    cols = criteo_columns()
    wf = tp.Workflow.from_spec(CRITEO_SPEC)
    assert set(wf.input_columns) == set(cols["label"] + cols["continuous"] + cols["categorical"])


@needs_synthetic
def test_generate_and_demo_in_process(tmp_path, monkeypatch):
    r = run("generate", "criteo", "--rows", "1000", "--files", "2", "--seed", "5", "--out", tmp_path / "c")
    assert "1,000 criteo rows" in r.stdout
    # the output layout (issue #11): readers verify it like any tabprep output
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["_SUCCESS", "_metadata.json", "part-00000.parquet",
                                                                  "part-00001.parquet"]
    meta = json.loads((tmp_path / "c" / "_metadata.json").read_text())
    assert [f["file"] for f in meta["files"]] == ["part-00000.parquet", "part-00001.parquet"]
    assert [f["rows"] for f in meta["files"]] == [len(pd.read_parquet(tmp_path / "c" / f["file"])) for f in meta["files"]]
    assert meta["rows"] == 1000
    # demo in a temporary folder that is removed at the end
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    r = run("demo", "--rows", "3000", "--profile")
    assert "embedding sizes" in r.stdout and "throughput" in r.stdout and "Categorify" in r.stdout
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("tabprep-demo-")]
    # --workdir refuses a folder holding other things
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "mine.txt").write_text("x")
    assert_failed(run("demo", "--rows", "10", "--workdir", tmp_path / "busy", ok=False), 2, "holds other files")


@needs_synthetic
def test_generate_failure_leaves_nothing(tmp_path, monkeypatch):
    from tabprep.io import synthetic as syn

    def broken(rows, out_dir, **kw):
        os.makedirs(out_dir, exist_ok=True)
        Path(out_dir, "part-00000.parquet").write_text("half")
        raise OSError("disk full")

    monkeypatch.setattr(syn, "generate_criteo", broken)
    r = run("generate", "criteo", "--rows", "10", "--out", tmp_path / "c", ok=False)
    assert_failed(r, 1, "disk full")
    assert list(tmp_path.iterdir()) == []


def _file_codecs(folder: Path) -> dict:
    import pyarrow.parquet as pq

    out: dict = {}
    for f in sorted(folder.glob("*.parquet")):
        md = pq.ParquetFile(f).metadata
        for j in range(md.num_columns):
            out.setdefault(md.schema.column(j).name, set()).add(md.row_group(0).column(j).compression)
    return out


@pytest.mark.parametrize("flag,ints,floats", [((), "UNCOMPRESSED", "SNAPPY"), (("--compression", "auto"), "UNCOMPRESSED", "SNAPPY"),
                                              (("--compression", "zstd"), "ZSTD", "ZSTD"),
                                              (("--compression", "none"), "UNCOMPRESSED", "UNCOMPRESSED")])
def test_convert_compression_reaches_the_files(tmp_path, flag, ints, floats):
    df = pd.DataFrame({"a": np.arange(100), "b": np.linspace(0, 1, 100)})
    df.to_parquet(tmp_path / "in.parquet")
    run("convert", tmp_path / "in.parquet", "--out", tmp_path / "pq", *flag)
    assert _file_codecs(tmp_path / "pq") == {"a": {ints}, "b": {floats}}
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "pq"), df, check_dtype=False)


def test_unknown_compression_names_the_codecs(tmp_path):
    pd.DataFrame({"a": [1]}).to_parquet(tmp_path / "in.parquet")
    r = run("convert", tmp_path / "in.parquet", "--out", tmp_path / "pq", "--compression", "snapy", ok=False)
    assert r.exit_code != 0 and "snapy" in r.output and "auto" in r.output and not (tmp_path / "pq").exists()


def test_overwrite_never_deletes_an_input_or_a_file_tabprep_did_not_write(data, spec, tmp_path):
    """--overwrite replaced the whole output folder: with WF_DIR or SPEC kept inside it (the command's
    own input), or a file of the user's there, they were deleted, exit 0 (adversarial review,
    2026-11-29). guarantees.md: no command writes to a path that is, holds or lies inside one of its
    inputs, and nothing tabprep did not write is replaced or deleted."""
    wf = tmp_path / "wf"
    run("fit", spec, data, "--out", wf)
    out = tmp_path / "X"
    run("transform", wf, data, "--out", out)
    moved = out / "mywf"
    wf.rename(moved)                                   # the workflow kept next to its output
    r = run("transform", moved, data, "--out", out, "--overwrite", ok=False)
    assert_failed(r, 2, "holds the input", "WF_DIR")
    assert (moved / "workflow.json").is_file()
    r = run("transform", moved, data, "--out", moved / "stats" / "o", ok=False)
    assert_failed(r, 2, "inside the input", "WF_DIR")

    wf2 = tmp_path / "wf2"
    run("fit", spec, data, "--out", wf2)
    kept = wf2 / "spec.yaml"
    kept.write_text(spec.read_text())                  # the spec kept with its workflow
    r = run("fit", kept, data, "--out", wf2, "--overwrite", ok=False)
    assert_failed(r, 2, "holds the input", "SPEC")
    assert kept.is_file()

    out2 = tmp_path / "Y"
    run("transform", moved, data, "--out", out2)
    (out2 / "NOTES.md").write_text("mine")             # a file tabprep did not write
    r = run("transform", moved, data, "--out", out2, "--overwrite", ok=False)
    assert_failed(r, 2, "NOTES.md", "tabprep did not write")
    assert (out2 / "NOTES.md").read_text() == "mine"
    (out2 / "NOTES.md").unlink()
    run("transform", moved, data, "--out", out2, "--overwrite")   # its own files only: replaced
    (wf2 / "spec.yaml").unlink()
    (wf2 / "README.txt").write_text("mine")
    r = run("fit", spec, data, "--out", wf2, "--overwrite", ok=False)
    assert_failed(r, 2, "README.txt", "tabprep did not write")


def test_data_naming_a_file_twice_is_refused(data, spec, tmp_path):
    """A folder and a glob inside it (or the same file twice) read every file twice, silently: twice
    the rows written, twice the counts in the fit (adversarial review, 2026-11-29)."""
    first = sorted(data.glob("*.parquet"))[0]
    r = run("fit", spec, data, str(data / "*.parquet"), "--out", tmp_path / "wf", ok=False)
    assert_failed(r, 2, "DATA names", first.name, "twice")
    r = run("convert", first, first, "--out", tmp_path / "o", ok=False)
    assert_failed(r, 2, "twice")
    assert not (tmp_path / "wf").exists() and not (tmp_path / "o").exists()


def test_names_must_match_the_fields_of_a_line(tmp_path):
    """--names with fewer names than a line's fields: pandas took the leading fields as an index,
    dropped, so the named columns got the last fields' values, exit 0 (adversarial review)."""
    f = tmp_path / "a.tsv"
    f.write_text("1\t10\t100\n2\t20\t200\n")
    r = run("convert", f, "--engine", "csv", "--sep", "\\t", "--names", "user,clicks", "--out", tmp_path / "o",
            ok=False)
    assert_failed(r, 2, "--names gives 2 names", "3 fields")
    run("convert", f, "--engine", "csv", "--sep", "\\t", "--names", "user,clicks,views", "--out", tmp_path / "p")
    got = pd.read_parquet(tmp_path / "p")
    assert got["user"].tolist() == [1, 2] and got["views"].tolist() == [100, 200]


def test_overwrite_replaces_every_layout_tabprep_writes(tmp_path):
    """The foreign-file check of --overwrite knows every file tabprep writes in its folders: HugeCTR's
    _file_list.txt, split_per_worker's worker_K/ summaries, TFRecord's spec."""
    from tabprep.io.layout import foreign_files

    ds = tp.Dataset(pd.DataFrame({"a": [1, 2, 3, 4], "b": [0.5, 1.5, 2.5, 3.5], "y": [0, 1, 0, 1]}))
    outs = {"hugectr": dict(cats=["a"], conts=["b"], labels=["y"]), "workers": dict(split_per_worker=2)}
    for name, kw in outs.items():
        ds.to_parquet(str(tmp_path / name), **kw)
        ds.to_parquet(str(tmp_path / name), overwrite=True, **kw)
        assert foreign_files(tmp_path / name) == [], name
    for name, kw in {"tfr": {}, "tfr_workers": dict(split_per_worker=2)}.items():
        ds.to_tfrecord(str(tmp_path / name), **kw)
        ds.to_tfrecord(str(tmp_path / name), overwrite=True, **kw)
        assert foreign_files(tmp_path / name) == [], name
    (tmp_path / "hugectr" / "mine.txt").write_text("x")
    assert foreign_files(tmp_path / "hugectr") == ["mine.txt"]
    with pytest.raises(FileExistsError, match="mine.txt"):
        ds.to_parquet(str(tmp_path / "hugectr"), overwrite=True)
