"""Dataset.to_parquet: row counts, order, shuffles, worker folders, markers, overwrite, atomicity."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tabprep as tp
from tabprep import backend, ops
from tabprep.io import writer as writer_mod

from conftest import GPU_SKIP, make_dataset, random_frame, to_pandas

HYP = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def data_files(folder):
    folder = Path(folder)
    return sorted(p for p in folder.rglob("*.parquet") if not any(part.startswith((".", "_"))
                                                                 for part in p.relative_to(folder).parts))


def file_rows(folder):
    return [pq.ParquetFile(p).metadata.num_rows for p in data_files(folder)]


def read_back(folder):
    return pd.concat([pq.read_table(p).to_pandas() for p in data_files(folder)], ignore_index=True)


def visible(folder):
    return sorted(p for p in os.listdir(folder) if not p.startswith("."))


def test_default_one_file_per_partition_keeps_order(tmp_path, backend):
    df = random_frame(seed=1, n=230)
    ds = make_dataset(df, backend, nparts=4)
    meta = ds.to_parquet(str(tmp_path / "out"))
    out = tmp_path / "out"
    assert (out / "_SUCCESS").exists() and (out / "_schema.json").exists()
    assert len(data_files(out)) == ds.npartitions
    assert sum(file_rows(out)) == 230 == meta["rows"]
    back = read_back(out)
    assert back["idx"].tolist() == list(range(230))
    assert back["s"].fillna("<n>").tolist() == df["s"].fillna("<n>").tolist()
    assert json.loads((out / "_metadata.json").read_text())["rows"] == 230
    # the written folder reads back as a Dataset with the same values and dtypes
    again = to_pandas(tp.Dataset(str(out), cpu=True))
    assert again["u16"].dtype == np.uint16 and again["I64"].tolist()[:20] == df["I64"].tolist()[:20]


@pytest.mark.parametrize("n_files", [1, 3, 7])
def test_output_files_near_equal_and_ordered(tmp_path, n_files, backend):
    df = random_frame(seed=2, n=101)
    ds = make_dataset(df, backend, nparts=4)
    ds.to_parquet(str(tmp_path / "out"), output_files=n_files)
    rows = file_rows(tmp_path / "out")
    assert len(rows) == n_files and sum(rows) == 101
    assert max(rows) - min(rows) <= 1
    assert read_back(tmp_path / "out")["idx"].tolist() == list(range(101))


def test_out_files_per_proc(tmp_path):
    df = random_frame(seed=3, n=50)
    make_dataset(df, nparts=2).to_parquet(str(tmp_path / "out"), out_files_per_proc=3)
    rows = file_rows(tmp_path / "out")
    assert len(rows) == 3 and sum(rows) == 50  # one process without a distributed client


@pytest.mark.parametrize("shuffle", ["partition", "full"])
def test_shuffles_keep_the_multiset(tmp_path, shuffle, backend):
    df = random_frame(seed=4, n=300)
    ds = make_dataset(df, backend, nparts=3)
    ds.to_parquet(str(tmp_path / "out"), output_files=2, shuffle=shuffle, seed=5)
    assert file_rows(tmp_path / "out") == [150, 150]
    back = read_back(tmp_path / "out")
    assert sorted(back["idx"].tolist()) == list(range(300))
    assert back["idx"].tolist() != list(range(300)), "rows were not shuffled"
    merged = back.sort_values("idx").reset_index(drop=True)
    assert merged["f64"].fillna(-1).tolist() == df["f64"].fillna(-1).tolist()
    assert merged["s"].fillna("<n>").tolist() == df["s"].fillna("<n>").tolist()
    if shuffle == "full":
        # a full shuffle mixes partitions: every file holds rows of every (non-empty) partition
        for f in data_files(tmp_path / "out"):
            ids = np.array(pq.read_table(f).column("idx").to_pylist())
            assert sorted(set(ids // 100)) == [0, 1, 2], f"{f.name} misses rows of some partition"
    if shuffle == "partition":
        # rows stay within their partition's range: each file holds a contiguous id range
        ds2 = make_dataset(df, backend, nparts=3)
        ds2.to_parquet(str(tmp_path / "p"), shuffle="partition", seed=1)
        for f in data_files(tmp_path / "p"):
            ids = sorted(pq.read_table(f).column("idx").to_pylist())
            assert ids == list(range(ids[0], ids[0] + len(ids))) if ids else True


def test_shuffle_seed_is_reproducible(tmp_path):
    df = random_frame(seed=6, n=120)
    for name in ("a", "b"):
        make_dataset(df, nparts=3).to_parquet(str(tmp_path / name), output_files=2, shuffle="full", seed=42)
    assert read_back(tmp_path / "a")["idx"].tolist() == read_back(tmp_path / "b")["idx"].tolist()


@pytest.mark.parametrize("shuffle", [None, "full"])
def test_split_per_worker(tmp_path, shuffle, backend):
    df = random_frame(seed=7, n=103)
    ds = make_dataset(df, backend, nparts=4)
    ds.to_parquet(str(tmp_path / "out"), split_per_worker=4, output_files=2, shuffle=shuffle, seed=3)
    out = tmp_path / "out"
    per_worker = []
    ids = []
    for w in range(4):
        wdir = out / f"worker_{w}"
        assert wdir.is_dir() and (wdir / "_schema.json").exists()
        files = data_files(wdir)
        assert len(files) == 2
        per_worker.append(sum(pq.ParquetFile(f).metadata.num_rows for f in files))
        ids += read_back(wdir)["idx"].tolist()
    assert sum(per_worker) == 103 and max(per_worker) - min(per_worker) <= 1
    assert sorted(ids) == list(range(103))
    if shuffle is None:
        assert ids == list(range(103)), "without shuffle, worker folders hold consecutive rows in order"
    assert (out / "_SUCCESS").exists()


def test_refuses_non_empty_existing_folder(tmp_path):
    df = random_frame(seed=8, n=20)
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("precious")
    with pytest.raises(FileExistsError, match="overwrite"):
        make_dataset(df).to_parquet(str(out))
    assert (out / "keep.txt").read_text() == "precious" and visible(out) == ["keep.txt"]
    assert visible(tmp_path) == ["out"] and os.listdir(tmp_path) == ["out"]
    # an empty existing folder is fine
    (tmp_path / "empty").mkdir()
    make_dataset(df).to_parquet(str(tmp_path / "empty"))
    assert sum(file_rows(tmp_path / "empty")) == 20
    # overwrite never replaces a folder tabprep did not write (issue #11): refused, files kept
    with pytest.raises(FileExistsError, match="tabprep did not write it") as exc:
        make_dataset(df.iloc[:5]).to_parquet(str(out), overwrite=True, output_files=1)
    assert str(out) in str(exc.value)
    assert (out / "keep.txt").read_text() == "precious" and visible(out) == ["keep.txt"]
    # ... but replaces a tabprep output entirely
    make_dataset(df.iloc[:7]).to_parquet(str(tmp_path / "empty"), overwrite=True, output_files=1)
    assert sum(file_rows(tmp_path / "empty")) == 7
    assert [f for f in visible(tmp_path / "empty") if not f.startswith("_")] == ["part-00000.parquet"]
    assert sorted(os.listdir(tmp_path)) == ["empty", "out"], "no temporary or trash folder may remain"


class Boom(RuntimeError):
    pass


def _crash_on_second_call(real):
    calls = {"n": 0}

    def wrapper(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise Boom("simulated crash mid-write")
        return real(*args, **kwargs)
    return wrapper


@pytest.mark.parametrize("phase", ["_write_part", "_write_output"])
def test_crash_mid_write_leaves_no_target_folder(tmp_path, monkeypatch, phase):
    df = random_frame(seed=9, n=200)
    monkeypatch.setattr(writer_mod, phase, _crash_on_second_call(getattr(writer_mod, phase)))
    with pytest.raises(Boom):
        make_dataset(df, nparts=4).to_parquet(str(tmp_path / "out"), output_files=3)
    assert not (tmp_path / "out").exists()
    assert os.listdir(tmp_path) == [], f"partial output left behind: {os.listdir(tmp_path)}"


@pytest.mark.parametrize("phase", ["_write_part", "_write_output"])
def test_crash_during_overwrite_keeps_old_content(tmp_path, monkeypatch, phase):
    df = random_frame(seed=10, n=150)
    out = tmp_path / "out"
    make_dataset(df.iloc[:40], nparts=1, empties=False).to_parquet(str(out), output_files=1)
    before = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    monkeypatch.setattr(writer_mod, phase, _crash_on_second_call(getattr(writer_mod, phase)))
    with pytest.raises(Boom):
        make_dataset(df, nparts=4).to_parquet(str(out), output_files=2, overwrite=True)
    after = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    assert after == before, "the previous output must be intact after a failed overwrite"
    assert os.listdir(tmp_path) == ["out"], f"partial output left behind: {os.listdir(tmp_path)}"
    assert sum(file_rows(out)) == 40


def test_transformed_dataset_writes_schema_with_cardinalities(tmp_path):
    df = random_frame(seed=11, n=80)
    wf = tp.Workflow((["s", "i32"] >> ops.Categorify()) + (["f64"] >> ops.FillMissing() >> ops.Normalize()) + ["idx"])
    ds = make_dataset(df, nparts=3)
    wf.fit(ds)
    wf.transform(ds).to_parquet(str(tmp_path / "out"), output_files=2)
    schema = json.loads((tmp_path / "out" / "_schema.json").read_text())
    cols = {c["name"]: c for c in schema["columns"]}
    assert [c["name"] for c in schema["columns"]] == wf.output_columns
    assert cols["s"]["properties"]["cardinality"] == wf.output_schema["s"].cardinality
    back = tp.Dataset(str(tmp_path / "out"), cpu=True)
    assert back.schema == wf.output_schema
    got = to_pandas(back)
    assert got["idx"].tolist() == df["idx"].tolist()
    # the written file holds the op's dtype: Normalize's default float64 (NVTabular's)
    assert str(got["f64"].dtype) == "float64" and str(got["s"].dtype) == "int64"


def test_invalid_arguments(tmp_path):
    ds = make_dataset(random_frame(seed=12, n=10))
    with pytest.raises(ValueError, match="shuffle"):
        ds.to_parquet(str(tmp_path / "a"), shuffle="yes")
    with pytest.raises(ValueError, match="not both"):
        ds.to_parquet(str(tmp_path / "a"), output_files=1, out_files_per_proc=1)
    with pytest.raises(ValueError, match="output_files"):
        ds.to_parquet(str(tmp_path / "a"), output_files=0)
    assert os.listdir(tmp_path) == []


@HYP
@given(n=st.integers(0, 120), nparts=st.integers(1, 5), files=st.integers(1, 5),
       workers=st.one_of(st.none(), st.integers(1, 4)), shuffle=st.sampled_from([None, "partition", "full"]))
def test_property_row_counts(n, nparts, files, workers, shuffle):
    df = random_frame(seed=n, n=n)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        meta = make_dataset(df, nparts=nparts).to_parquet(str(out), output_files=files, split_per_worker=workers,
                                                          shuffle=shuffle, seed=1)
        rows = file_rows(out)
        assert sum(rows) == n == meta["rows"]
        assert len(rows) == files * (workers or 1)
        ids = read_back(out)["idx"].tolist() if rows else []
        assert sorted(ids) == list(range(n))
        if shuffle is None:
            assert ids == list(range(n))
        assert max(rows) - min(rows) <= 1, f"file row counts {rows} are not near-equal"
        if workers:
            per_w = [sum(file_rows(out / f"worker_{w}")) for w in range(workers)]
            assert max(per_w) - min(per_w) <= 1, f"worker row counts {per_w} are not near-equal"
        assert (out / "_SUCCESS").exists()


def test_output_folder_reads_with_plain_pandas(tmp_path):
    """Side files start with '_' so pyarrow/pandas dataset discovery skips them."""
    import tabprep as tp

    df = pd.DataFrame({"a": np.arange(10), "b": np.arange(10) * 0.5})
    tp.Dataset(df, npartitions=2).to_parquet(str(tmp_path / "out"))
    back = pd.read_parquet(str(tmp_path / "out"))
    assert sorted(back["a"].tolist()) == list(range(10))


def _encodings(folder, column):
    """Encodings of ``column`` in the files of ``folder`` that hold rows."""
    out = set()
    for f in data_files(folder):
        md = pq.ParquetFile(f).metadata
        j = md.schema.names.index(column)
        out |= {e for g in range(md.num_row_groups) if md.row_group(g).num_rows
                for e in md.row_group(g).column(j).encodings}
    assert out, f"no rows in {folder}"
    return out


@pytest.mark.parametrize("int_encoding", ["delta", "dictionary"])
def test_int_encoding_changes_the_encoding_not_the_values(tmp_path, int_encoding):
    df = random_frame(seed=11, n=300)
    ds = make_dataset(df, nparts=3)
    ds.to_parquet(str(tmp_path / "out"), int_encoding=int_encoding)
    ints = [c for c in df.columns if str(df[c].dtype).lower().startswith(("int", "uint"))]
    assert ints
    for c in ints:
        assert ("DELTA_BINARY_PACKED" in _encodings(tmp_path / "out", c)) == (int_encoding == "delta"), c
    back = read_back(tmp_path / "out")
    for c in df.columns:
        assert back[c].astype(object).where(back[c].notna(), None).tolist() == \
            df[c].astype(object).where(df[c].notna(), None).tolist(), c
    # the phase-2 writer (files re-cut) encodes the same way
    ds.to_parquet(str(tmp_path / "cut"), output_files=2, int_encoding=int_encoding)
    assert ("DELTA_BINARY_PACKED" in _encodings(tmp_path / "cut", ints[0])) == (int_encoding == "delta")


def test_int_encoding_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match="int_encoding must be one of"):
        make_dataset(random_frame(seed=12, n=20), nparts=2).to_parquet(str(tmp_path / "out"), int_encoding="rle")
    assert not (tmp_path / "out").exists() and not [p for p in os.listdir(tmp_path) if p.startswith(".")]


def _codecs(folder):
    """``{column: {codec, ...}}`` over the row groups of the files of ``folder`` that hold rows."""
    out = {}
    for f in data_files(folder):
        md = pq.ParquetFile(f).metadata
        for g in range(md.num_row_groups):
            if not md.row_group(g).num_rows:
                continue
            for j in range(md.num_columns):
                col = md.row_group(g).column(j)
                out.setdefault(col.path_in_schema, set()).add(col.compression)
    assert out, f"no rows in {folder}"
    return out


@pytest.mark.parametrize("cut", [False, True])
def test_default_compression_skips_only_delta_packed_int_columns(tmp_path, cut):
    # "auto" (the default): DELTA_BINARY_PACKED ids are already bit-packed (snappy saves nothing on
    # them and costs a third of the write); every other column is snappy, as before
    df = random_frame(seed=13, n=400)
    kw = {"output_files": 2} if cut else {}
    make_dataset(df, nparts=3).to_parquet(str(tmp_path / "out"), **kw)
    codecs = _codecs(tmp_path / "out")
    ints = {c for c in df.columns if str(df[c].dtype).lower().startswith(("int", "uint"))}
    others = set(df.columns) - ints
    assert ints and others
    for c in ints:
        assert codecs[c] == {"UNCOMPRESSED"}, c
        assert "DELTA_BINARY_PACKED" in _encodings(tmp_path / "out", c)
    for c in others:
        assert codecs[c] == {"SNAPPY"}, c
    back = read_back(tmp_path / "out")
    for c in df.columns:
        assert back[c].astype(object).where(back[c].notna(), None).tolist() == \
            df[c].astype(object).where(df[c].notna(), None).tolist(), c


@pytest.mark.parametrize("codec,int_encoding,expect_ints", [
    ("snappy", "delta", "SNAPPY"), ("zstd", "delta", "ZSTD"), ("none", "delta", "UNCOMPRESSED"),
    ("auto", "dictionary", "SNAPPY")])
def test_explicit_compression_applies_to_every_column(tmp_path, codec, int_encoding, expect_ints):
    df = random_frame(seed=14, n=200)
    make_dataset(df, nparts=2).to_parquet(str(tmp_path / "out"), compression=codec, int_encoding=int_encoding)
    codecs = _codecs(tmp_path / "out")
    ints = {c for c in df.columns if str(df[c].dtype).lower().startswith(("int", "uint"))}
    others_codec = "SNAPPY" if codec == "auto" else expect_ints
    for c in df.columns:
        assert codecs[c] == {expect_ints if c in ints else others_codec}, (c, codecs[c])


def test_unknown_compression_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match="compression"):
        make_dataset(random_frame(seed=15, n=20), nparts=2).to_parquet(str(tmp_path / "out"), compression="snapy")
    assert not (tmp_path / "out").exists() and not [p for p in os.listdir(tmp_path) if p.startswith(".")]


def test_auto_compression_reaches_nested_columns(tmp_path):
    # pyarrow leaves a column missing from a per-column codec dict uncompressed: the nested
    # columns' leaf paths must be named
    table = pa.table({"ids": pa.array([3, 1, 2], pa.int64()),
                      "seq": pa.array([[1.5, 2.0], [], None], pa.list_(pa.float32())),
                      "st": pa.StructArray.from_arrays([pa.array([1.0, None, 3.0]), pa.array(["a", "b", None])], ["x", "y"]),
                      "m": pa.array([[("k", 1)], [], None], pa.map_(pa.string(), pa.int32())),
                      "f": pa.array([0.5, None, 2.5], pa.float64())})
    pq.write_table(table, tmp_path / "t.parquet", **backend.parquet_encodings(table.schema, "delta", "auto"))
    md = pq.ParquetFile(tmp_path / "t.parquet").metadata
    codecs = {md.row_group(0).column(j).path_in_schema: md.row_group(0).column(j).compression
              for j in range(md.num_columns)}
    assert codecs == {"ids": "UNCOMPRESSED", "seq.list.element": "SNAPPY", "st.x": "SNAPPY", "st.y": "SNAPPY",
                      "m.key_value.key": "SNAPPY", "m.key_value.value": "SNAPPY", "f": "SNAPPY"}
    assert pq.read_table(tmp_path / "t.parquet").equals(table)


@pytest.mark.parametrize("codec,expect", [("auto", "snappy"), ("none", None), ("ZSTD", "zstd"), ("snappy", "snappy")])
def test_cudf_writer_codec(codec, expect):
    assert backend.parquet.cudf_compression(codec) == expect


def test_cudf_writer_codec_refuses_unknown():
    with pytest.raises(ValueError, match="compression must be one of"):
        backend.parquet.cudf_compression("snapy")


@pytest.mark.gpu
@GPU_SKIP
@pytest.mark.parametrize("codec,expect", [("auto", "SNAPPY"), ("none", "UNCOMPRESSED"), ("zstd", "ZSTD")])
def test_cudf_writer_codecs_reach_the_files(tmp_path, codec, expect):
    # cuDF's writer keeps its own encodings: "auto" is plain snappy there. libcudf also stores a
    # column chunk UNCOMPRESSED when its codec would not shrink it (seen on an H100, cuDF 26.10:
    # the short random columns here), so only the compressible column must carry the codec.
    df = random_frame(seed=16, n=300)
    # distinct values that share a long prefix: dictionary encoding cannot shrink them, any codec can
    df["rep"] = ["x" * 200 + str(i) for i in range(len(df))]
    make_dataset(df, "gpu", nparts=2).to_parquet(str(tmp_path / "out"), compression=codec)
    codecs = _codecs(tmp_path / "out")
    assert codecs["rep"] == {expect}, codecs
    assert set().union(*codecs.values()) <= {expect, "UNCOMPRESSED"}, codecs
    back = read_back(tmp_path / "out")
    for c in df.columns:
        assert back[c].astype(object).where(back[c].notna(), None).tolist() == \
            df[c].astype(object).where(df[c].notna(), None).tolist(), c


def test_op_timer_gets_every_partitions_read_and_write(tmp_path):
    # the (io) rows of --profile: one read per partition in the fit and in the transform, one write
    # per partition, each with that partition's row count
    df = pd.DataFrame({"a": np.arange(1000) % 13, "x": np.linspace(-1, 1, 1000)})
    src = tmp_path / "src"
    src.mkdir()
    for i in range(4):
        df.iloc[i * 250:(i + 1) * 250].to_parquet(src / f"p{i}.parquet", row_group_size=125)
    calls = []
    wf = tp.Workflow((["a"] >> ops.Categorify()) + (["x"] >> ops.Normalize()))
    wf.op_timer = lambda nid, label, kind, seconds, rows: calls.append((nid, label, kind, rows, seconds))
    ds = tp.Dataset(str(src), part_size="1KB")
    n = ds.npartitions
    assert n >= 4
    wf.fit(ds)
    fit_reads = [c for c in calls if c[0] == "(io)"]
    assert [c[1:3] for c in fit_reads] == [("read parquet", "read")] * n and sum(c[3] for c in fit_reads) == 1000
    calls.clear()
    wf.transform(ds).to_parquet(str(tmp_path / "out"))
    io_rows = [c for c in calls if c[0] == "(io)"]
    reads = sorted(c[3] for c in io_rows if c[1:3] == ("read parquet", "read"))
    writes = sorted(c[3] for c in io_rows if c[1:3] == ("write", "write"))
    assert len(io_rows) == 2 * n and reads == writes and sum(writes) == 1000
    assert all(c[4] >= 0 for c in io_rows)
    assert read_back(tmp_path / "out")["a"].notna().all()


def test_out_files_per_proc_counts_every_worker_of_a_big_cluster(tmp_path, monkeypatch):
    """``out_files_per_proc`` writes N files per dask worker, for every worker: distributed
    2025.4 to 2026.6 list only the first five workers in ``Client.scheduler_info()`` (``n_workers=5``
    by default, dask/distributed#9045, undone in #9308), so a count taken from it wrote files for 5
    of 8 GPU workers. Here ``scheduler_info`` truncates as those versions did, on a cluster of 7
    workers: 7 x 2 files."""
    distributed = pytest.importorskip("distributed")
    real = distributed.Client.scheduler_info

    def first_five(self, *args, **kwargs):  # distributed 2025.4-2026.6's default
        info = real(self, *args, **kwargs)
        return dict(info, workers=dict(list(info["workers"].items())[:5]))

    monkeypatch.setattr(distributed.Client, "scheduler_info", first_five)
    df = pd.DataFrame({"x": np.arange(100, dtype="int64")})
    with distributed.LocalCluster(n_workers=7, threads_per_worker=1, processes=False, dashboard_address=None) as c, \
            distributed.Client(c) as client:
        assert len(client.scheduler_info()["workers"]) == 5  # the truncation is in effect
        make_dataset(df, nparts=2).to_parquet(str(tmp_path / "out"), out_files_per_proc=2)
    files = sorted(p.name for p in (tmp_path / "out").glob("*.parquet"))
    assert len(files) == 14, files
    back = pd.concat([pd.read_parquet(tmp_path / "out" / f) for f in files], ignore_index=True)
    np.testing.assert_array_equal(back["x"].to_numpy(), df["x"].to_numpy())
