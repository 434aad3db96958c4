"""Dataset: parquet files / globs / folders / lists, csv, in-memory frames, part_size splitting."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tabprep as tp
from tabprep import ops

from conftest import assert_same_frame, is_cpu, partition_lengths, random_frame, to_pandas


def write_parts(folder, df, nfiles, row_group_size=None):
    os.makedirs(folder, exist_ok=True)
    cuts = np.linspace(0, len(df), nfiles + 1).astype(int)
    paths = []
    for i in range(nfiles):
        p = os.path.join(folder, f"part-{i:03d}.parquet")
        pq.write_table(pa.Table.from_pandas(df.iloc[cuts[i]:cuts[i + 1]], preserve_index=False), p,
                       row_group_size=row_group_size)
        paths.append(p)
    return paths


def test_parquet_file_glob_folder_and_list_agree(tmp_path, backend):
    df = random_frame(seed=1, n=200)
    paths = write_parts(tmp_path / "data", df, 4)
    # stray files readers must ignore in a folder
    (tmp_path / "data" / "_SUCCESS").write_text("")
    (tmp_path / "data" / ".hidden.parquet").write_text("not parquet")
    cpu = is_cpu(backend)
    sources = {
        "folder": str(tmp_path / "data"),
        "glob": str(tmp_path / "data" / "part-*.parquet"),
        "list": paths,
    }
    for name, src in sources.items():
        ds = tp.Dataset(src, cpu=cpu)
        assert ds.num_rows == len(df), name
        got = to_pandas(ds)
        assert got["idx"].tolist() == list(range(len(df))), f"{name}: files must be read in order"
        assert_same_frame(got.astype({"I64": "Int64"}), df, f"Dataset({name})")
    single = to_pandas(tp.Dataset(paths[1], cpu=cpu))
    assert_same_frame(single, df.iloc[50:100].reset_index(drop=True), "single file")


def test_nullable_ints_consistent_across_files(tmp_path):
    a = pd.DataFrame({"x": np.array([1, 2, 3], dtype="int64"), "y": [1.0, 2.0, 3.0]})
    b = pd.DataFrame({"x": pd.array([4, None], dtype="Int64"), "y": [4.0, 5.0]})
    pq.write_table(pa.Table.from_pandas(a, preserve_index=False), tmp_path / "a.parquet")
    pq.write_table(pa.Table.from_pandas(b, preserve_index=False), tmp_path / "b.parquet")
    ds = tp.Dataset(str(tmp_path), cpu=True)
    parts = [p.compute() for p in ds.to_ddf().to_delayed()]
    assert {str(p["x"].dtype) for p in parts} == {"Int64"}, "partitions must agree on the dtype"
    assert to_pandas(ds)["x"].tolist()[:4] == [1, 2, 3, 4]
    wf = tp.Workflow(["x"] >> ops.Categorify())
    wf.fit(ds)
    assert to_pandas(wf.transform(ds))["x"].tolist() == [3, 4, 5, 6, 1]


def test_part_size_splits_on_row_groups(tmp_path):
    df = random_frame(seed=2, n=1000)
    path = tmp_path / "one.parquet"
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path, row_group_size=100)
    rg_bytes = pq.ParquetFile(path).metadata.row_group(0).total_byte_size
    whole = tp.Dataset(str(path), cpu=True)
    assert whole.npartitions == 1
    split = tp.Dataset(str(path), cpu=True, part_size=int(rg_bytes * 2.5))
    lengths = partition_lengths(split)
    assert split.npartitions == len(lengths) > 1
    assert sum(lengths) == 1000 and all(n % 100 == 0 and n > 0 for n in lengths)  # whole row groups
    assert max(lengths) <= 300
    assert_same_frame(to_pandas(split), to_pandas(whole))
    # string sizes are accepted too
    assert tp.Dataset(str(path), cpu=True, part_size="1KB").npartitions == 10


def test_csv(tmp_path):
    df = pd.DataFrame({"a": [1, 2, 3, 4], "b": ["x", "y", None, "z"], "c": [0.5, np.nan, 1.5, 2.0]})
    df.iloc[:2].to_csv(tmp_path / "p1.csv", index=False)
    df.iloc[2:].to_csv(tmp_path / "p2.csv", index=False)
    ds = tp.Dataset(str(tmp_path / "*.csv"), cpu=True)
    assert ds.engine == "csv"
    got = to_pandas(ds)
    assert got["a"].tolist() == [1, 2, 3, 4]
    assert got["b"].isna().tolist() == [False, False, True, False]
    assert got["c"].isna().tolist() == [False, True, False, False]
    assert ds.num_rows == 4
    wf = tp.Workflow(["b"] >> ops.Categorify())
    wf.fit(ds)
    assert to_pandas(wf.transform(ds))["b"].tolist() == [3, 4, 1, 5]


def test_pandas_frame_with_npartitions(backend):
    df = random_frame(seed=3, n=100)
    ds = tp.Dataset(df, npartitions=4, cpu=is_cpu(backend))
    assert ds.npartitions == 4 and ds.cpu == is_cpu(backend)
    assert ds.num_rows == 100
    got = to_pandas(ds)
    assert_same_frame(got, df)
    part = ds.to_ddf().get_partition(0).compute()
    assert (type(part).__module__.startswith("cudf")) == (not is_cpu(backend))


def test_missing_paths_raise_file_not_found_with_the_path(tmp_path):
    missing = str(tmp_path / "nope.parquet")
    with pytest.raises(FileNotFoundError, match="nope.parquet"):
        tp.Dataset(missing)
    with pytest.raises(FileNotFoundError, match="zz_"):
        tp.Dataset(str(tmp_path / "zz_*.parquet"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="empty"):
        tp.Dataset(str(tmp_path / "empty"))
    good = tmp_path / "g.parquet"
    pq.write_table(pa.table({"a": [1]}), good)
    with pytest.raises(FileNotFoundError, match="missing_in_list"):
        tp.Dataset([str(good), str(tmp_path / "missing_in_list.parquet")])


def test_not_parquet_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_text("hello")
    with pytest.raises(ValueError, match="bad.parquet"):
        _ = tp.Dataset(str(bad)).schema


def test_schema_of_parquet_and_frame_agree(tmp_path):
    df = random_frame(seed=4, n=30)
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "d.parquet")
    a = tp.Dataset(str(tmp_path / "d.parquet")).schema
    b = tp.Dataset(df).schema
    assert a.column_names == b.column_names == list(df.columns)
    assert [c.dtype for c in a] == [c.dtype for c in b]
    assert a["u16"].dtype == "uint16" and a["s"].dtype == "str" and a["I64"].dtype == "int64"


def test_incomplete_output_folder_is_refused(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    pq.write_table(pa.table({"a": [1]}), folder / "part-0.parquet")
    (folder / ".tabprep-incomplete").write_text("")
    with pytest.raises(ValueError, match="incomplete"):
        tp.Dataset(str(folder))


def test_empty_parquet_file_among_others(tmp_path):
    df = pd.DataFrame({"a": np.arange(5, dtype="int64"), "s": pd.Series(list("abcde"), dtype="str")})
    pq.write_table(pa.Table.from_pandas(df.iloc[:0], preserve_index=False), tmp_path / "a0.parquet")
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "a1.parquet")
    ds = tp.Dataset(str(tmp_path))
    assert ds.num_rows == 5
    wf = tp.Workflow(["s"] >> ops.Categorify())
    wf.fit(ds)
    assert to_pandas(wf.transform(ds))["s"].tolist() == [3, 4, 5, 6, 7]


@pytest.mark.parametrize("part_rows", [50, 120, 400, 10_000])
def test_pieces_spanning_files_cover_every_row_group_in_order(tmp_path, part_rows):
    """GPU planning (span_files): pieces run on into the next files until full; every row group
    is read exactly once, in file order, and a piece fits part_size unless one row group is bigger."""
    from tabprep.io.dataset import _read_piece, _row_group_memory, plan_pieces

    rng = np.random.default_rng(0)
    frames, files = [], []
    for i, n in enumerate([30, 0, 75, 10, 140, 5]):
        df = pd.DataFrame({"a": rng.integers(0, 9, n), "b": rng.random(n)})
        path = str(tmp_path / f"f{i}.parquet")
        pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path, row_group_size=20)
        frames.append(df)
        files.append(path)
    one_row = _row_group_memory(pq.read_schema(files[0]), pq.ParquetFile(files[0]).metadata.row_group(0)) / 20
    part_size = int(part_rows * one_row)
    pieces = plan_pieces(files, part_size, span_files=True)
    seen = []
    for p in pieces:
        seen += [(p.path, g) for g in p.row_groups]
        for path, groups in p.more:
            seen += [(path, g) for g in groups]
    expected = [(f, g) for f in files for g in range(pq.ParquetFile(f).metadata.num_row_groups)]
    assert seen == expected
    for p in pieces:
        groups = len(p.row_groups) + sum(len(g) for _, g in p.more)
        assert groups == 1 or p.num_rows * one_row <= part_size + 1e-6
    got = pd.concat([_read_piece(p, None, True, {}) for p in pieces], ignore_index=True)
    assert len(got) == sum(len(f) for f in frames) == sum(p.num_rows for p in pieces)
    pd.testing.assert_frame_equal(got, pd.concat(frames, ignore_index=True), check_dtype=False)
    if part_rows >= 10_000:
        assert len([p for p in pieces if p.num_rows]) == 1  # everything in one partition
    assert len(plan_pieces(files, part_size)) >= len(pieces)  # CPU planning never spans files


@pytest.mark.parametrize("typ", ["int8", "int16", "int32", "int64", "uint8", "uint32", "uint64"])
def test_int_columns_with_nulls_read_from_arrow_buffers(typ):
    """arrow_to_frame builds masked int arrays on Arrow's own buffers: sliced and chunked arrays
    (non-zero offsets, bitmaps not byte-aligned) must give the same column as Arrow's conversion."""
    from tabprep import backend

    rng = np.random.default_rng(7)
    hi = min(np.iinfo(np.dtype(typ)).max, 10 ** 6)
    vals = [None if rng.random() < 0.3 else int(v) for v in rng.integers(0, hi, 101)]
    arr = pa.array(vals, type=getattr(pa, typ)())
    for table in (pa.table({"x": arr}), pa.table({"x": arr.slice(3)}), pa.table({"x": arr.slice(5, 50)}),
                  pa.table({"x": pa.chunked_array([arr.slice(7, 30), arr.slice(1, 9), arr.slice(61)])})):
        got = backend.arrow_to_frame(table)["x"]
        exp = table.column("x").to_pandas(types_mapper=lambda t: pd.ArrowDtype(t)).astype(got.dtype)
        pd.testing.assert_series_equal(got, exp.rename("x"), check_index_type=False)


def test_to_parquet_accepts_nvtabular_output_path(tmp_path):
    """NVTabular scripts write `workflow.transform(ds).to_parquet(output_path=..., output_files=N)`."""
    import pandas as pd
    import pytest

    import tabprep as tp

    df = pd.DataFrame({"a": range(10), "b": [1.5] * 10})
    tp.Dataset(df).to_parquet(output_path=str(tmp_path / "out"), output_files=2)
    back = pd.read_parquet(str(tmp_path / "out"))
    assert sorted(back["a"].tolist()) == list(range(10)) and len(list((tmp_path / "out").glob("*.parquet"))) == 2
    with pytest.raises(TypeError, match="not both"):
        tp.Dataset(df).to_parquet(str(tmp_path / "x"), output_path=str(tmp_path / "y"))
    with pytest.raises(TypeError, match="missing the output folder"):
        tp.Dataset(df).to_parquet()
