"""csv columns whose values change kind further down a file than the rows read to choose the
column types (``tabprep.io.csv_check.SAMPLE_ROWS``, 2000 per file): an int column with text, a
decimal or an empty value at row 5000. Each read is either pandas' own reading of the file (the
reference, ``pd.read_csv`` of the whole file) or an error naming the file, the column, the dtype
chosen from the first rows, the value found and the ``dtype=`` fix; never dask's "Mismatched
dtypes" table without a file, and never a value read wrong (2.5 read as 2)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import tabprep as tp
from tabprep.cli.main import cli

ROWS, AT = 6000, 5000


def _csv(path, late: str, at: int = AT, rows: int = ROWS) -> str:
    """Columns x (ints, but ``late`` at row ``at``) and y (ints)."""
    lines = ["x,y"] + [f"{late if i == at else i},{i}" for i in range(rows)]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _clear(msg: str, file: str, value: str, kind: str, fix: str) -> None:
    assert file in msg and "'x'" in msg and "int64" in msg and "2000" in msg, msg
    assert value in msg and kind in msg and fix in msg, msg
    assert "Mismatched dtypes" not in msg, msg


@pytest.mark.parametrize("part_size", [None, "20kB"])   # one partition; the value in a later one
@pytest.mark.parametrize("late, value, kind, fix", [
    ("abc", "'abc'", "text", "dtype={'x': 'str'}"),
    ("2.5", "'2.5'", "a decimal number", "dtype={'x': 'float64'}"),
    ("", "an empty value", "null", "dtype={'x': 'Int64'}"),
])
def test_a_late_value_of_another_kind_names_file_column_and_fix(tmp_path, part_size, late, value, kind, fix):
    path = _csv(tmp_path / "late.csv", late)
    with pytest.raises(ValueError) as err:
        tp.Dataset(path, cpu=True, part_size=part_size).compute()   # was dask's table, no file
    _clear(str(err.value), path, value, kind, fix)


@pytest.mark.parametrize("dtype", ["float64", "Int64", "str"])
def test_the_fix_reads_the_file_as_pandas_does(tmp_path, dtype):
    late = {"float64": "2.5", "Int64": "", "str": "abc"}[dtype]
    path = _csv(tmp_path / "late.csv", late)
    ref = pd.read_csv(path, dtype={"x": dtype})
    out = tp.Dataset(path, cpu=True, part_size="20kB", dtype={"x": dtype}).compute()
    assert len(out) == ROWS
    pd.testing.assert_series_equal(out["x"].reset_index(drop=True), ref["x"], check_dtype=False)
    assert out["x"].isna().sum() == ref["x"].isna().sum()
    if dtype == "float64":
        assert out["x"].iloc[AT] == 2.5   # not truncated to 2


@pytest.mark.parametrize("late", ["", "2.5"])
def test_a_value_of_another_kind_within_the_first_rows_reads_as_pandas_does(tmp_path, late):
    # row 100: after the 10 rows dask itself looks at (it raised its "Mismatched dtypes" table),
    # within the 2000 rows tabprep reads to choose the types: float64, as pandas reads the file
    path = _csv(tmp_path / "early.csv", late, at=100)
    ref = pd.read_csv(path)
    out = tp.Dataset(path, cpu=True, part_size="20kB").compute()
    assert str(out["x"].dtype) == "float64" == str(ref["x"].dtype)
    np.testing.assert_array_equal(out["x"].to_numpy(), ref["x"].to_numpy())
    assert out["y"].tolist() == list(range(ROWS))


@pytest.mark.parametrize("part_size", [None, "20kB"])
def test_the_error_names_the_file_that_holds_the_value(tmp_path, part_size):
    a = _csv(tmp_path / "a.csv", "7")
    b = _csv(tmp_path / "b.csv", "abc")
    with pytest.raises(ValueError) as err:
        tp.Dataset([a, b], cpu=True, part_size=part_size).compute()
    _clear(str(err.value), b, "'abc'", "text", "dtype={'x': 'str'}")
    assert a not in str(err.value)


def test_a_workflow_fit_names_the_file_and_the_column(tmp_path):
    path = _csv(tmp_path / "late.csv", "abc")
    wf = tp.Workflow(["x"] >> tp.ops.Normalize())
    with pytest.raises(ValueError) as err:
        wf.fit(tp.Dataset(path, cpu=True))
    _clear(str(err.value), path, "'abc'", "text", "dtype={'x': 'str'}")


def test_cli_convert_prints_the_clear_error_and_writes_no_output(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    path = _csv(d / "late.csv", "2.5")
    r = CliRunner().invoke(cli, ["convert", str(d), "-o", str(tmp_path / "out")])
    assert r.exit_code == 1, r.output
    _clear(r.output, path, "'2.5'", "a decimal number", "dtype={'x': 'float64'}")
    assert "Traceback" not in r.output
    assert not (tmp_path / "out").exists()


def test_files_without_a_header_and_a_bool_column(tmp_path):
    lines = [f"{i},{'' if i == AT else i % 2 == 0}" for i in range(ROWS)]
    (tmp_path / "n.csv").write_text("\n".join(lines) + "\n")
    path = str(tmp_path / "n.csv")
    with pytest.raises(ValueError) as err:
        tp.Dataset(path, cpu=True, names=["i", "flag"], header=None).compute()
    msg = str(err.value)
    assert path in msg and "'flag'" in msg and "bool" in msg and "an empty value" in msg, msg
    assert "dtype={'flag': 'boolean'}" in msg, msg
    out = tp.Dataset(path, cpu=True, names=["i", "flag"], header=None, dtype={"flag": "boolean"}).compute()
    ref = pd.read_csv(path, names=["i", "flag"], header=None, dtype={"flag": "boolean"})
    assert out["flag"].isna().sum() == 1 and out["flag"].fillna(False).tolist() == ref["flag"].fillna(False).tolist()
    assert out["i"].tolist() == list(range(ROWS))


def test_a_cluster_worker_names_the_file_too(tmp_path):
    # the readers travel to worker processes in the task graph (pickled)
    import logging

    distributed = pytest.importorskip("distributed")
    a = _csv(tmp_path / "a.csv", "7")
    b = _csv(tmp_path / "b.csv", "2.5")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=logging.ERROR) as cluster, distributed.Client(cluster):
        with pytest.raises(ValueError) as err:
            tp.Dataset([a, b], cpu=True, part_size="20kB").compute()
        out = tp.Dataset([a, b], cpu=True, part_size="20kB", dtype={"x": "float64"}).compute()
    _clear(str(err.value), b, "'2.5'", "a decimal number", "dtype={'x': 'float64'}")
    assert len(out) == 2 * ROWS and out["x"].tolist()[ROWS + AT] == 2.5
