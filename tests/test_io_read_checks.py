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

