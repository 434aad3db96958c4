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


def _frame():
    x = np.array([0.5, np.inf, -1.0, 2.0, np.nan, 3.0])
    return pd.DataFrame({"a": np.arange(6, dtype="int64"), "x": x, "s": list("abcabc")})


def test_to_iter_columns_and_indices(tmp_path):
    """merlin.io.Dataset.to_iter(columns=, indices=): partitions as frames, only those columns and
    partition numbers; len() is their row count."""
    _five_row_groups(tmp_path / "d.parquet")
    ds = tp.Dataset(str(tmp_path / "d.parquet"), row_groups_per_part=1)
    parts = list(ds.to_iter(columns=["a"], indices=[1, 3]))
    assert [list(p.columns) for p in parts] == [["a"], ["a"]]
    assert [p["a"].tolist() for p in parts] == [[4, 5, 6, 7], [12, 13, 14, 15]]
    assert len(ds.to_iter(indices=[0])) == 4 and len(ds.to_iter()) == 20
    whole = pd.concat(list(ds.to_iter()), ignore_index=True)
    pd.testing.assert_frame_equal(whole, pq.read_table(tmp_path / "d.parquet").to_pandas(), check_dtype=False)
    with pytest.raises(KeyError, match="nope"):
        ds.to_iter(columns=["nope"])


def test_to_cpu_and_infer_schema():
    """Dataset.to_cpu() (merlin: compute on the host from now on) and infer_schema() (the columns'
    names and dtypes, kept as ds.schema)."""
    ds = tp.Dataset(_frame(), npartitions=2)
    assert ds.to_cpu() is ds and ds.cpu
    sch = ds.infer_schema()
    assert sch.column_names == ["a", "x", "s"] and sch["a"].dtype == "int64" and ds.schema == sch
    assert isinstance(ds.compute(), pd.DataFrame)


def test_to_npy(tmp_path):
    """Dataset.to_npy(file): one 2-D array, columns in order (merlin-core); append=True streams
    partitions. Nulls refused naming the column."""
    df = pd.DataFrame({"a": np.arange(5, dtype="int64"), "x": [0.5, np.inf, -1.0, 2.0, 3.0]})
    ds = tp.Dataset(df, npartitions=2)
    ds.to_npy(str(tmp_path / "a.npy"))
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), df.to_numpy())
    ds.to_npy(str(tmp_path / "b.npy"), append=True)
    np.testing.assert_array_equal(np.load(tmp_path / "b.npy"), df.to_numpy())
    with pytest.raises(ValueError, match="'x'"):
        tp.Dataset(_frame()[["x"]].assign(x=[1.0, np.nan, 2, 3, 4, 5])).to_npy(str(tmp_path / "c.npy"))


def test_to_parquet_dtypes_roles_and_shuffle_enum(tmp_path):
    """to_parquet(output_path=, shuffle=Shuffle.PER_PARTITION, dtypes=, cats=, conts=, labels=), as
    the NVTabular notebooks call it: dtypes cast the written columns; cats/conts/labels are
    recorded (name, column index) with _file_list.txt, as NVTabular's writer does for HugeCTR."""
    df = _frame()
    out = tmp_path / "out"
    tp.Dataset(df, npartitions=2).to_parquet(output_path=str(out), shuffle=tp.io.Shuffle.PER_PARTITION,
                                             dtypes={"a": "int32", "x": "float32"}, cats=["s"], conts=["x"],
                                             labels=["a"], seed=0)
    table = pq.read_table(out, ignore_prefixes=["_"])
    assert table.schema.field("a").type == pa.int32() and table.schema.field("x").type == pa.float32()
    assert sorted(table.column("a").to_pylist()) == list(range(6))  # shuffled within partitions, all rows
    meta = __import__("json").loads((out / "_metadata.json").read_text())
    assert meta["cats"] == [{"col_name": "s", "index": 2}] and meta["labels"] == [{"col_name": "a", "index": 0}]
    lines = (out / "_file_list.txt").read_text().split()
    assert int(lines[0]) == len(lines) - 1 and all((out / f).is_file() for f in lines[1:])
    assert tp.Dataset(str(out)).schema["a"].dtype == "int32"
    with pytest.raises(KeyError, match="nope"):
        tp.Dataset(df).to_parquet(str(tmp_path / "o2"), dtypes={"nope": "int32"})
    tp.Dataset(df).to_parquet(str(tmp_path / "o3"), shuffle=tp.io.Shuffle.FULL, seed=1)
    assert sorted(pq.read_table(tmp_path / "o3", ignore_prefixes=["_"]).column("a").to_pylist()) == list(range(6))


def test_partition_lens_repartition_sample_dtypes(tmp_path):
    """merlin.io.Dataset.partition_lens, repartition(npartitions=), sample_dtypes()."""
    _five_row_groups(tmp_path / "d.parquet")
    ds = tp.Dataset(str(tmp_path / "d.parquet"), row_groups_per_part=2)
    assert ds.partition_lens == [8, 8, 4]
    re = ds.repartition(npartitions=2)
    assert re.npartitions == 2 and sum(re.partition_lens) == 20
    assert re.compute()["a"].tolist() == list(range(20))
    assert ds.sample_dtypes() == {"a": "int64", "x": "float64", "s": "str"}


def _written(tmp_path, **kw):
    """A frame with nulls, an inf and a list column, written by tabprep with every side file."""
    df = pd.DataFrame({"a": np.arange(30, dtype="int64"), "x": np.linspace(-1, 1, 30), "s": [f"v{i % 4}" for i in range(30)]})
    df.loc[[2, 9], "x"] = np.nan
    df.loc[5, "x"] = np.inf
    out = tmp_path / "out"
    tp.Dataset(df, npartitions=3).to_parquet(str(out), cats=["s"], conts=["x"], labels=["a"], **kw)
    return df, out


def test_glob_over_an_output_folder_skips_side_files(tmp_path):
    """merlin.io.Dataset("out/*") reads the data files of a folder NVTabular wrote: files whose
    names start with ``_`` or ``.`` (``_metadata``, ``_SUCCESS``, ``_file_list.txt``, ...) are not
    data (pyarrow's and dask's rule)."""
    df, out = _written(tmp_path, output_files=2)
    assert {"_metadata", "_SUCCESS", "_file_list.txt"} <= {p.name for p in out.iterdir()}
    ds = tp.Dataset(str(out / "*"))
    assert ds.num_rows == 30
    got = ds.compute().sort_values("a").reset_index(drop=True)
    pd.testing.assert_frame_equal(got[["a", "x", "s"]], df, check_dtype=False)
    assert tp.Dataset(str(out / "*"), engine="parquet").num_rows == 30


def test_glob_over_worker_folders_reads_their_files(tmp_path):
    """``"out/*"`` over a per-worker split matches the ``worker_K`` folders: their data files are
    read (and the side files skipped), every row once."""
    df, out = _written(tmp_path, split_per_worker=2)
    got = tp.Dataset(str(out / "*")).compute()
    assert sorted(got["a"].tolist()) == df["a"].tolist()


def test_glob_of_side_files_only_is_an_error(tmp_path):
    _, out = _written(tmp_path, output_files=1)
    with pytest.raises(FileNotFoundError, match="_"):
        tp.Dataset(str(out / "_*"))


def _numpy_cells():
    """A pandas frame whose list cells are numpy arrays (what NVTabular hands users on the CPU):
    an empty array, a null row, int64 values."""
    return pd.DataFrame({"l": [np.array([3, 1, 2]), np.array([], dtype="int64"), None, np.array([7]), np.array([1, 1])],
                         "y": [0, 1, 0, 1, 1]})


def test_transform_frame_of_numpy_cells_gives_numpy_cells():
    """NVTabular's ``workflow.transform(pandas_frame)`` gives list cells as numpy arrays (each has a
    ``.dtype``, ``cell * 2`` doubles the values); tabprep gave Python lists, where ``* 2`` repeats
    the list."""
    from tabprep import ops

    df = _numpy_cells()
    wf = tp.Workflow((["l"] >> ops.ListSlice(2)) + ["y"])
    wf.fit(tp.Dataset(df))
    out = wf.transform(df)
    cells = out["l"].tolist()
    assert isinstance(cells[0], np.ndarray) and cells[0].dtype == np.int64
    np.testing.assert_array_equal(out["l"][0] * 2, np.array([6, 2]))
    assert [None if c is None else c.tolist() for c in cells] == [[3, 1], [], None, [7], [1, 1]]
    assert out["y"].tolist() == [0, 1, 0, 1, 1]
    # the same cells as the lazy path gives (Dataset.compute)
    lazy = wf.transform(tp.Dataset(df)).compute()["l"].tolist()
    assert [None if c is None else c.tolist() for c in lazy] == [None if c is None else c.tolist() for c in cells]


def test_transform_frame_keeps_arrow_list_columns_arrow():
    """A frame whose list column is already an Arrow list column (pandas ArrowDtype) comes back as
    one: the cells keep the type they were given."""
    from tabprep import ops

    df = pd.DataFrame({"l": pd.Series(pa.array([[3, 1, 2], [], None], pa.list_(pa.int64())),
                                      dtype=pd.ArrowDtype(pa.list_(pa.int64())))})
    out = tp.Workflow(["l"] >> ops.ListSlice(2)).transform(df)
    assert isinstance(out["l"].dtype, pd.ArrowDtype)
    assert pa.array(out["l"].array).to_pylist() == [[3, 1], [], None]


def test_to_ddf_partitions_hold_numpy_list_cells(tmp_path):
    """merlin-core's Dataset.to_ddf() on the CPU (pyarrow's to_pandas): list columns are object
    columns of numpy arrays, in the partitions and in the meta; a null row is None. Read back from
    parquet, from a transform, and from a pandas frame with Arrow list columns."""
    table = pa.table({"l": pa.array([[1, 2], None, [], [3]], pa.list_(pa.int64())),
                      "s": pa.array([["a"], ["b", None], None, []], pa.list_(pa.string())),
                      "x": [1.0, np.nan, np.inf, 4.0]})
    pq.write_table(table, tmp_path / "d.parquet", row_group_size=2)
    ds = tp.Dataset(str(tmp_path / "d.parquet"), row_groups_per_part=1)
    ddf = ds.to_ddf()
    assert ddf.npartitions == 2
    assert ddf._meta["l"].dtype == object and ddf._meta["s"].dtype == object
    got = ddf.compute()
    assert got["l"].iloc[0].dtype == np.int64 and got["l"].iloc[0].tolist() == [1, 2]
    assert got["l"].iloc[1] is None and len(got["l"].iloc[2]) == 0
    assert got["s"].iloc[1].tolist() == ["b", None]
    assert got["x"].iloc[2] == np.inf
    # partition-wise, as a user's map_partitions sees them
    dtypes = ddf.map_partitions(lambda p: pd.Series([type(c).__name__ for c in p["l"]]), meta=("t", object))
    assert dtypes.compute().tolist() == ["ndarray", "NoneType", "ndarray", "ndarray"]
    assert ddf.get_partition(1).compute()["l"].iloc[1].tolist() == [3]
    # a transform's output, and a frame given with Arrow list columns
    out = tp.Workflow(["l"] >> tp.ops.Categorify()).fit_transform(ds).to_ddf().compute()
    assert out["l"].iloc[0].dtype == np.int64 and out["l"].iloc[0].tolist() == [3, 4] and out["l"].iloc[1] is None
    arrow_frame = table.to_pandas(types_mapper=pd.ArrowDtype)
    assert tp.Dataset(arrow_frame).to_ddf().compute()["l"].iloc[0].dtype == np.int64


def test_persist_is_dasks_persist_of_the_frame(tmp_path):
    """merlin-core binds dask's ``persist`` on Dataset (``_bind_dd_method("persist")``):
    ``ds.persist()`` is the dataset's dask frame held in memory, list cells as ``to_ddf()``."""
    import dask.dataframe as dd

    df = pd.DataFrame({"a": [1, 2, None, 4], "x": [0.5, np.inf, np.nan, 2.0]})
    ds = tp.Dataset(df, npartitions=2)
    got = ds.persist()
    assert isinstance(got, dd.DataFrame) and got.npartitions == 2
    pd.testing.assert_frame_equal(got.compute().reset_index(drop=True), df, check_dtype=False)


def test_shuffle_per_worker_is_a_full_shuffle_and_says_so_once(tmp_path, monkeypatch):
    """merlin-core 23.08's ``to_parquet(shuffle=Shuffle.PER_WORKER)`` mixes rows only among the files
    one worker task writes (one file per partition when no file count is given); tabprep shuffles
    fully (docs/migration.md). The first such write of a process warns, naming ``Shuffle.PER_WORKER``
    and the options to choose instead; the rows written are the same."""
    import warnings

    from tabprep import _warn

    monkeypatch.setattr(_warn, "_ONCE", set())   # once per process: as in a fresh one
    df = _frame()

    def write(name, shuffle, **kw):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            tp.Dataset(df, npartitions=3).to_parquet(str(tmp_path / name), shuffle=shuffle, seed=0, **kw)
        table = pq.read_table(tmp_path / name, ignore_prefixes=["_"])
        return table, [str(w.message) for w in rec if issubclass(w.category, tp.NVTabularDifferenceWarning)
                       and "PER_WORKER" in str(w.message)]

    table, notes = write("pw", tp.io.Shuffle.PER_WORKER)
    assert len(notes) == 1, notes
    assert "shuffle='full'" in notes[0] and "shuffle='partition'" in notes[0] and "out_files_per_proc" in notes[0]
    assert "1 file" in notes[0]   # what this write did: every row over 1 file (NVTabular: one per partition)
    got = table.to_pandas().sort_values("a").reset_index(drop=True)
    pd.testing.assert_frame_equal(got, df, check_dtype=False)   # the same rows, inf and NaN included
    assert len([f for f in (tmp_path / "pw").iterdir() if f.suffix == ".parquet"]) == 1
    _, notes = write("pw2", tp.io.Shuffle.PER_WORKER, output_files=2)
    assert notes == []                                            # once per process
    monkeypatch.setattr(_warn, "_ONCE", set())
    for i, shuffle in enumerate([tp.io.Shuffle.PER_PARTITION, tp.io.Shuffle.FULL, "full", "partition", None]):
        _, notes = write(f"o{i}", shuffle)
        assert notes == [], shuffle                               # the other values say nothing


@pytest.mark.parametrize("text", ["1KB", "1kB", "1 KB", "2.5KB", "1KiB", "1kib", "128MB", "1GiB", "1GB", "100", "1e3"])
def test_part_size_strings_are_read_as_dask_reads_them(text):
    """merlin-core's Dataset reads ``part_size`` with dask's ``parse_bytes``: KB/MB/GB are powers of
    1000, KiB/MiB/GiB powers of 1024 (tabprep read "1KB" as 1024, "128MB" as 134,217,728)."""
    from dask.utils import parse_bytes

    from tabprep.io.dataset import parse_size

    assert parse_size(text) == parse_bytes(text)


def test_part_size_1kb_plans_the_partitions_of_1000_bytes(tmp_path):
    """A 10,200-byte csv file in blocks of part_size: "1KB" is 1000 bytes (10 partitions), "1KiB"
    1024 (9), as nvtabular 23.8.0 gives them (checked: 10, 10, 9, 9 for "1KB", 1000, "1KiB", 1024);
    tabprep gave 9 for "1KB"."""
    path = tmp_path / "d.csv"
    text = "a,b,c\n" + "1234567,abcdefghi,0.5\n" * 460
    tail = ",abcdefghi,0.5\n"
    text += "1" * (10_200 - len(text) - len(tail)) + tail   # a last row padding the file to 10,200 bytes
    path.write_text(text)
    size = path.stat().st_size
    assert size == 10_200
    by = {p: tp.Dataset(str(path), cpu=True, part_size=p).npartitions for p in ("1KB", 1000, "1KiB", 1024)}
    assert by["1KB"] == by[1000] and by["1KiB"] == by[1024], (size, by)
    assert by[1000] != by[1024], (size, by)   # the file is sized so that the two units differ
