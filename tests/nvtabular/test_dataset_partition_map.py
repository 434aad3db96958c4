"""merlin-core 23.08's ``Dataset.file_partition_map`` for parquet datasets: each file's path -> the
indices of the partitions its rows are in, on tabprep's partition plan.

merlin-core's parquet engine keys the map by the file's path; its consumers (``shuffle_by_keys``'s
hive detection in ``merlin/io/dask.py``) and its CSV engine take the values as sequences of partition
indices, which tabprep gives (merlin 23.08's parquet engine gives an int, the file's last partition:
docs/migration.md). The expected maps are built in the tests from the rows of each partition.
"""
from __future__ import annotations

import os
import warnings

import numpy as np
import pandas as pd
import pytest

import tabprep as tp


@pytest.fixture
def files(tmp_path):
    """Three files of distinct ids (25 rows in 3 row groups, 10 in 1, an empty one)."""
    sizes = [25, 10, 0]
    start = 0
    out = []
    for i, n in enumerate(sizes):
        path = tmp_path / f"part{i}.parquet"
        pd.DataFrame({"id": np.arange(start, start + n, dtype="int64"),
                      "x": np.where(np.arange(n) % 4 == 0, np.nan, 1.5)}).to_parquet(path, row_group_size=10)
        out.append((str(path), start, start + n))
        start += n
    return tmp_path, out


def _expected(ds, files):
    """file -> partitions holding its ids, from the partitions' data (pandas)."""
    ddf = ds.to_ddf()
    out = {}
    for i in range(ddf.npartitions):
        ids = ddf.get_partition(i).compute()["id"].to_numpy()
        for path, lo, hi in files:
            if ((ids >= lo) & (ids < hi)).any():
                out.setdefault(os.path.realpath(path), []).append(i)
    return out


@pytest.mark.parametrize("kwargs", [{}, {"row_groups_per_part": 1}, {"part_size": 100}])
def test_file_partition_map_lists_each_files_partitions(files, kwargs, backend):
    """One partition per file by default (on the CPU; on the GPU small files share one); a file
    split into several parts (row_groups_per_part=1: one per row group; a small part_size) maps to
    all of them, in order; on the CPU the empty file to its own empty partition, as merlin-core's
    plan has it."""
    tmp_path, fl = files
    ds = tp.Dataset(str(tmp_path), engine="parquet", cpu=backend == "cpu", **kwargs)
    got = {os.path.realpath(k): v for k, v in ds.file_partition_map.items()}
    expected = _expected(ds, fl)
    empty = os.path.realpath(fl[2][0])
    if backend == "cpu":
        assert empty in got and ds.partition_lens[got[empty][0]] == 0
    assert all(0 <= i < ds.npartitions for i in got.pop(empty, []))
    assert got == expected
    assert all(isinstance(i, int) for v in got.values() for i in v)
    listed = sorted(i for v in ds.file_partition_map.values() for i in v)
    assert sorted(set(listed)) == list(range(ds.npartitions))  # every partition comes from some file
    if backend == "cpu":  # one file per partition: each partition listed once
        assert listed == list(range(ds.npartitions))
    if kwargs.get("row_groups_per_part") == 1:
        assert got[os.path.realpath(fl[0][0])] == [0, 1, 2]
    if not kwargs and backend == "cpu":
        assert list(got.values()) == [[0], [1]]


def test_file_partition_map_keys_are_the_datasets_files(files):
    """Keys are the file paths as the dataset lists them (merlin: the files' paths), in the order
    merlin reads a list of paths in: sorted naturally (nvtabular 23.8.0 gives ``{part0: 0, part1: 1}``
    for ``Dataset([part1, part0])``)."""
    tmp_path, fl = files
    ds = tp.Dataset([fl[1][0], fl[0][0]])
    assert list(ds.file_partition_map) == [fl[0][0], fl[1][0]]
    assert ds.file_partition_map == {fl[0][0]: [0], fl[1][0]: [1]}


def test_file_partition_map_of_a_frame_is_an_attribute_error():
    """merlin: a dataset of a frame has no files (``AttributeError``, which merlin's
    ``shuffle_by_keys`` catches); tabprep says why."""
    ds = tp.Dataset(pd.DataFrame({"a": [1, 2]}))
    with pytest.raises(AttributeError, match="parquet"):
        ds.file_partition_map
    assert not hasattr(ds, "file_partition_map")


@pytest.fixture
def csv_files(tmp_path):
    """Two csv files of distinct ids with nulls (2795 and 221 bytes, as in the nvtabular run)."""
    start = 0
    out = []
    for i, n in enumerate([400, 30]):
        path = tmp_path / f"f{i}.csv"
        pd.DataFrame({"id": np.arange(start, start + n), "x": np.where(np.arange(n) % 4 == 0, np.nan, 1.5)}).to_csv(
            path, index=False)
        out.append((str(path), start, start + n))
        start += n
    return tmp_path, out


@pytest.mark.parametrize("part_size, nvt_map", [(None, {"f0.csv": [0], "f1.csv": [1]}),
                                                ("1KB", {"f0.csv": [0, 1], "f1.csv": [2]}),
                                                ("500B", {"f0.csv": [0, 1, 2, 3, 4], "f1.csv": [5]})])
def test_file_partition_map_of_csv_files_is_merlins(csv_files, part_size, nvt_map, backend):
    """merlin-core 23.08's CSV engine: each file's *name* -> the partitions of its byte blocks
    (nvtabular 23.08 printed ``nvt_map`` for these files and part sizes). Checked also against the
    rows of each partition."""
    tmp_path, fl = csv_files
    kwargs = {} if part_size is None else {"part_size": part_size}
    ds = tp.Dataset(str(tmp_path / "*.csv"), engine="csv", cpu=backend == "cpu", **kwargs)
    got = ds.file_partition_map
    if backend == "cpu":  # on the GPU the default part size differs (nvtabular's too)
        assert got == nvt_map
    expected = {os.path.basename(k): v for k, v in _expected(ds, fl).items()}
    assert got == expected
    assert sorted(i for v in got.values() for i in v) == list(range(ds.npartitions))


def test_file_partition_map_of_csv_files_sharing_a_name_is_an_error(csv_files, tmp_path):
    """merlin keys the csv map by file name, so two files of one name would silently share a key;
    tabprep raises naming them."""
    _, fl = csv_files
    (tmp_path / "sub").mkdir()
    other = tmp_path / "sub" / "f0.csv"
    pd.DataFrame({"id": [1000], "x": [1.0]}).to_csv(other, index=False)
    ds = tp.Dataset([fl[0][0], str(other)], engine="csv")
    with pytest.raises(ValueError, match="f0.csv"):
        ds.file_partition_map


def test_file_partition_map_of_compressed_csv_files_is_one_partition_each(tmp_path, backend):
    """A compressed csv file cannot be read in blocks: one partition per file (merlin's engine, which
    uses dask's split, and the reader agree), whatever ``part_size``."""
    for i, n in enumerate([300, 20]):
        pd.DataFrame({"id": np.arange(n) + 1000 * i, "x": np.where(np.arange(n) % 3 == 0, np.nan, 2.0)}).to_csv(
            tmp_path / f"g{i}.csv.gz", index=False, compression="gzip")
    ds = tp.Dataset(str(tmp_path / "*.csv.gz"), engine="csv", part_size="500B", cpu=backend == "cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # dask says the gzip files are read whole
        got = ds.file_partition_map
        assert got == {"g0.csv.gz": [0], "g1.csv.gz": [1]}
        ddf = ds.to_ddf()
        assert [len(ddf.get_partition(i).compute()) for i in range(ddf.npartitions)] == [300, 20]
