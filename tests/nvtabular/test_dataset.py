"""NVTabular 23.08's ``nvt.Dataset`` (merlin-core ``merlin.io.Dataset``) API, as a ported script
calls it. Expected values come from pyarrow / pandas in the test."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tabprep as tp


def _five_row_groups(path, rows_per_group=4):
    """One parquet file of 5 row groups (20 rows, a null, an inf)."""
    n = 5 * rows_per_group
    x = np.arange(n, dtype="float64")
    x[3] = np.nan
    x[7] = np.inf
    table = pa.table({"a": pa.array(np.arange(n, dtype="int64")), "x": pa.array(x),
                      "s": pa.array([f"v{i % 3}" for i in range(n)])})
    pq.write_table(table, path, row_group_size=rows_per_group)
    assert pq.ParquetFile(path).metadata.num_row_groups == 5
    return table


def test_row_groups_per_part_one_partition_per_row_group(tmp_path):
    """merlin.io.Dataset(path, row_groups_per_part=N): each partition is N row groups of one file
    (NVTabular's tests read a 5-row-group file as 5 partitions with N=1)."""
    table = _five_row_groups(tmp_path / "d.parquet")
    ds = tp.Dataset(str(tmp_path / "d.parquet"), row_groups_per_part=1)
    assert ds.npartitions == 5
    ddf = ds.to_ddf()
    assert ddf.npartitions == 5
    assert [len(p) for p in ddf.partitions] == [4] * 5
    got = ds.compute()
    assert got["a"].tolist() == table.column("a").to_pylist()
    ds2 = tp.Dataset(str(tmp_path / "d.parquet"), row_groups_per_part=2)
    assert [len(ds2.to_ddf().get_partition(i)) for i in range(ds2.npartitions)] == [8, 8, 4]


def test_row_groups_per_part_spans_no_files(tmp_path):
    """row_groups_per_part counts the row groups of one file: a partition never spans two files
    (dask's split_row_groups, which NVTabular's parquet engine uses)."""
    _five_row_groups(tmp_path / "a.parquet")
    _five_row_groups(tmp_path / "b.parquet")
    ds = tp.Dataset(str(tmp_path), row_groups_per_part=2)
    assert ds.npartitions == 6  # 2 + 2 + 1 per file


@pytest.mark.parametrize("engine", ["parquet", "csv"])
def test_unknown_keyword_is_an_error_naming_it(tmp_path, engine):
    """NVTabular hands unknown keywords to its engine, whose parquet read ignores them; tabprep
    refuses them by name instead of reading other partitions than the script expects."""
    df = pd.DataFrame({"a": [1, 2, None], "b": ["x", "y", "z"]})
    path = tmp_path / f"d.{engine}"
    df.to_parquet(path) if engine == "parquet" else df.to_csv(path, index=False)
    with pytest.raises(TypeError, match="row_group_per_part"):
        tp.Dataset(str(path), row_group_per_part=1)  # a typo of row_groups_per_part
    with pytest.raises(TypeError, match="dtypes"):
        tp.Dataset(str(path), dtypes={"a": "float32"})


def test_csv_reader_keywords_still_work(tmp_path):
    """Dataset(csv, sep=..., names=...) passes pandas.read_csv keywords on, as NVTabular does."""
    (tmp_path / "d.csv").write_text("1|x\n2|y\n")
    got = tp.Dataset(str(tmp_path / "d.csv"), sep="|", names=["a", "b"]).compute()
    assert got["a"].tolist() == [1, 2] and got["b"].tolist() == ["x", "y"]


def test_row_groups_per_part_refused_for_csv(tmp_path):
    (tmp_path / "d.csv").write_text("a\n1\n")
    with pytest.raises(TypeError, match="row_groups_per_part"):
        tp.Dataset(str(tmp_path / "d.csv"), row_groups_per_part=1)


def test_part_mem_fraction(tmp_path):
    """merlin.io.Dataset(part_mem_fraction=f): partitions of f x the device's total memory; a
    tiny fraction gives the smallest partitions (one row group each here)."""
    _five_row_groups(tmp_path / "d.parquet")
    assert tp.Dataset(str(tmp_path / "d.parquet"), part_mem_fraction=1e-12, cpu=True).npartitions == 5
    assert tp.Dataset(str(tmp_path / "d.parquet"), part_mem_fraction=0.1, cpu=True).npartitions == 1
    with pytest.raises(ValueError, match="part_mem_fraction"):
        tp.Dataset(str(tmp_path / "d.parquet"), part_mem_fraction=2)


def test_in_memory_frame_refuses_reader_keywords():
    with pytest.raises(TypeError, match="sep"):
        tp.Dataset(pd.DataFrame({"a": [1]}), sep="|")
