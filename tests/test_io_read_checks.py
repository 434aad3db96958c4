"""Reading rules for files in a folder, files that disagree, and inputs named twice (adversarial
io review, 2026-12): every case here was a silent wrong result or an error naming no file."""
from __future__ import annotations

import logging
import shutil

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tabprep as tp


def _write(path, **cols):
    pq.write_table(pa.table(cols), path)
    return path


# -- 1. parquet files whatever their names -------------------------------------------------
def test_folder_reads_every_parquet_file_whatever_its_name(tmp_path, caplog):
    d = tmp_path / "ext"
    d.mkdir()
    _write(d / "a.parquet", x=[1, 2, 3])
    for name in ("b.PARQUET", "c.parq", "d.pq", "e.snappy.parquet", "f.parquet.gz", "000000_0",
                 "part-00000-1b2c.c000"):
        shutil.copy(d / "a.parquet", d / name)
    # side files pyarrow / dask / Spark leave: not data, skipped without a word
    (d / "_SUCCESS").write_text("")
    (d / ".part-0.crc").write_bytes(b"crc")
    pq.write_metadata(pa.schema([("x", pa.int64())]), d / "_common_metadata")
    with caplog.at_level(logging.WARNING, logger="tabprep"):
        ds = tp.Dataset(str(d), cpu=True)
        assert len(ds.files) == 8
        assert len(ds.compute()) == 24
    assert caplog.records == []


def test_folder_warns_naming_files_it_does_not_read(tmp_path, caplog):
    d = tmp_path / "mixed"
    d.mkdir()
    _write(d / "a.parquet", x=[1, 2, 3])
    (d / "README.md").write_text("notes")
    with caplog.at_level(logging.WARNING, logger="tabprep"):
        ds = tp.Dataset(str(d), cpu=True)
    assert len(ds.compute()) == 3
    text = caplog.text
    assert "README.md" in text and "not read" in text


# -- 2. csv files that disagree ----------------------------------------------------------------
def _csv(path, text):
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("b_text, column", [
    ("x\n3\n4\n", "'y'"),              # a column missing: was y float with NaN
    ("x,z\n3,5\n4,6\n", "'y'"),        # another column: was x, y, z half NaN
    ("3,5\n4,6\n", "'x'"),             # no header: its first row became the column names
])
def test_csv_files_whose_headers_disagree_are_refused(tmp_path, b_text, column):
    a = _csv(tmp_path / "a.csv", "x,y\n1,2\n3,4\n")
    b = _csv(tmp_path / "b.csv", b_text)
    with pytest.raises(ValueError) as err:
        tp.Dataset([a, b], cpu=True).compute()
    msg = str(err.value)
    assert "a.csv" in msg and "b.csv" in msg and column in msg and "csv file" in msg


def test_csv_columns_in_another_order_or_ints_with_nulls_are_read(tmp_path):
    a = _csv(tmp_path / "a.csv", "x,y\n1,2\n3,4\n")
    b = _csv(tmp_path / "b.csv", "y,x\n5,\n6,8\n")
    out = tp.Dataset([a, b], cpu=True).compute()
    assert out["y"].tolist() == [2, 4, 5, 6] and out["x"].isna().sum() == 1


def test_csv_dtype_clash_names_the_file_and_the_column(tmp_path):
    a = _csv(tmp_path / "a.csv", "x,y\n1,2\n3,4\n")
    b = _csv(tmp_path / "b.csv", "x,y\nabc,2\ndef,4\n")
    with pytest.raises(ValueError) as err:
        tp.Dataset([a, b], cpu=True).compute()
    msg = str(err.value)
    assert "b.csv" in msg and "a.csv" in msg and "'x'" in msg and "dtype=" in msg
    assert "Mismatched dtypes" not in msg


def test_csv_convert_refuses_disagreeing_files(tmp_path):
    from click.testing import CliRunner

    from tabprep.cli.main import cli

    d = tmp_path / "in"
    d.mkdir()
    _csv(d / "a.csv", "x,y\n1,2\n3,4\n")
    _csv(d / "b.csv", "x\n3\n4\n")
    r = CliRunner().invoke(cli, ["convert", str(d), "-o", str(tmp_path / "out")])
    assert r.exit_code != 0 and "b.csv" in r.output and "'y'" in r.output
    assert not (tmp_path / "out").exists()
