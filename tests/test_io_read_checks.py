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


# -- 3. int64 and uint64 -------------------------------------------------------------------------
def test_int64_and_uint64_files_are_refused_naming_column_and_files(tmp_path):
    big = 2**53
    _write(tmp_path / "a.parquet", x=pa.array([big, big + 1, big + 2], pa.int64()))
    _write(tmp_path / "b.parquet", x=pa.array([big, big + 1, big + 2], pa.uint64()))
    with pytest.raises(ValueError) as err:
        tp.Dataset(str(tmp_path), cpu=True).compute()   # was float64: 2**53 + 1 became 2**53
    msg = str(err.value)
    assert "'x'" in msg and "a.parquet" in msg and "b.parquet" in msg and "uint64" in msg and "Cast" in msg


def test_narrow_unsigned_with_int64_is_read_exactly(tmp_path):
    _write(tmp_path / "a.parquet", x=pa.array([2**53 + 1], pa.int64()))
    _write(tmp_path / "b.parquet", x=pa.array([7], pa.uint32()))
    assert tp.Dataset(str(tmp_path), cpu=True).compute()["x"].tolist() == [2**53 + 1, 7]


# -- 4. naive and zoned times --------------------------------------------------------------------
@pytest.mark.parametrize("tz_b", [None, "Europe/Paris"])
def test_files_disagreeing_on_a_time_zone_are_refused(tmp_path, tz_b):
    t = pd.Series(pd.to_datetime(["2024-01-01 10:00"])).astype("datetime64[us]")
    _write(tmp_path / "a.parquet", t=pa.array(t.dt.tz_localize("UTC")))
    _write(tmp_path / "b.parquet", t=pa.array(t if tz_b is None else t.dt.tz_localize(tz_b)))
    with pytest.raises(ValueError) as err:
        tp.Dataset(str(tmp_path), cpu=True).compute()
    msg = str(err.value)
    assert "'t'" in msg and "a.parquet" in msg and "b.parquet" in msg and "tz_" in msg


def test_convert_refuses_naive_and_zoned_times(tmp_path):
    from click.testing import CliRunner

    from tabprep.cli.main import cli

    d = tmp_path / "in"
    d.mkdir()
    t = pd.Series(pd.to_datetime(["2024-01-01 10:00"])).astype("datetime64[us]")
    _write(d / "a.parquet", t=pa.array(t.dt.tz_localize("UTC")))
    _write(d / "b.parquet", t=pa.array(t))
    r = CliRunner().invoke(cli, ["convert", str(d), "-o", str(tmp_path / "out")])
    assert r.exit_code != 0 and "b.parquet" in r.output and "'t'" in r.output
    assert not (tmp_path / "out").exists()


# -- 5. hive key=value folders -------------------------------------------------------------------
def test_mixed_hive_key_folders_are_named_in_a_warning(tmp_path, caplog):
    # (a consistent hive layout reads its keys as columns: tests/test_io_hive.py)
    (tmp_path / "label=0").mkdir()
    _write(tmp_path / "label=0" / "part-0.parquet", x=[1, 2])
    _write(tmp_path / "part-1.parquet", x=[1, 2])
    with caplog.at_level(logging.WARNING, logger="tabprep"):
        ds = tp.Dataset(str(tmp_path), cpu=True)
    assert len(ds.compute()) == 4
    assert "label=0" in caplog.text and "'label'" in caplog.text and "not read as a column" in caplog.text


# -- 6. inputs named twice ---------------------------------------------------------------------
@pytest.mark.parametrize("twice", [["d", "d"], ["d/a.parquet", "d/./a.parquet"], ["d", "d/*.parquet"]])
def test_a_file_named_twice_is_refused(tmp_path, twice):
    (tmp_path / "d").mkdir()
    _write(tmp_path / "d" / "a.parquet", x=[1, 2, 3])
    with pytest.raises(ValueError) as err:
        tp.Dataset([str(tmp_path / p) for p in twice], cpu=True)
    assert "a.parquet" in str(err.value) and "twice" in str(err.value)


# -- 7. errors that name the path and the fix ----------------------------------------------------
def test_no_paths_is_a_clear_error():
    with pytest.raises(ValueError, match="no paths"):
        tp.Dataset([])


def test_parquet_read_as_csv_names_the_file(tmp_path):
    _write(tmp_path / "a.parquet", x=[1, 2])
    _write(tmp_path / "b.parquet", x=[1, 2])
    with pytest.raises(ValueError) as err:
        tp.Dataset(str(tmp_path), engine="csv", cpu=True).compute()
    assert "a.parquet" in str(err.value) and "engine='parquet'" in str(err.value)


def test_relative_input_paths_do_not_depend_on_the_readers_working_directory(tmp_path, monkeypatch):
    # a dask worker resolves a relative path against its own working directory: one started
    # elsewhere read other data under the same relative name, and the job wrote mixed output,
    # exit 0 (found by the distributed review). The dataset holds absolute paths, resolved once
    (tmp_path / "a" / "d").mkdir(parents=True)
    (tmp_path / "b" / "d").mkdir(parents=True)
    pd.DataFrame({"x": [1, 2, 3]}).to_parquet(tmp_path / "a" / "d" / "p.parquet")
    pd.DataFrame({"x": [7, 8]}).to_parquet(tmp_path / "b" / "d" / "p.parquet")
    monkeypatch.chdir(tmp_path / "a")
    ds = tp.Dataset("d", cpu=True)
    assert ds.files == [str(tmp_path / "a" / "d" / "p.parquet")]
    monkeypatch.chdir(tmp_path / "b")   # a reader elsewhere (a worker started in another folder)
    assert ds.compute()["x"].tolist() == [1, 2, 3]
