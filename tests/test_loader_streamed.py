"""Issue 33 (CPU): with no workflow, the CPU loader reads a chunk of local parquet files one column at a
time and gathers each column into its block right after its read.

The batches must be those of the whole-piece read (every chunk's pieces read whole, then gathered),
batch by batch and block by block, and, unshuffled, those pandas reads from the files: with nulls in
int, bool and float32 columns (their dtypes change, so the expected block layout is wrong and the
chunk is regrouped), list columns (ragged and padded), a column whose type differs between files,
pieces trimmed by a shard, and labels of two dtypes.

Either way, a file that changed, broke or went away under the loader is an error naming it.
"""
from __future__ import annotations

from typing import Dict, List

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tabprep.backend import to_numpy
from tabprep.loader import DataLoader, RaggedBatch
from tabprep.loader.sources import _ParquetSource

CATS = ["i8", "u16", "i64", "nul", "flag", "nflag", "f32n", "lst"]
CONTS = ["f64", "f32"]
LABELS = ["y", "w"]


def _frame(f: int, n: int, start: int, nulls: bool) -> pd.DataFrame:
    rng = np.random.default_rng(f)
    nullable = pd.array(rng.integers(0, 9, n), dtype="Int64")
    nflag = pd.array(rng.random(n) < 0.5, dtype="boolean")
    f32n = rng.normal(size=n).astype("float32")
    if nulls:   # only some files: the first chunk's layout can hold and a later one's not
        nullable[rng.random(n) < 0.2] = pd.NA
        nflag[rng.random(n) < 0.2] = pd.NA
        f32n[rng.random(n) < 0.2] = np.nan
    df = pd.DataFrame({
        "row": np.arange(start, start + n, dtype="int64"),
        "i8": rng.integers(-100, 100, n).astype("int8"),
        # int32 in one file, int64 in the others: pandas reconciles the chunk that holds both
        "u16": rng.integers(0, 60000, n).astype("uint16" if f != 1 else "int32"),
        "i64": rng.integers(-2**62, 2**62, n),
        "nul": nullable, "flag": rng.random(n) < 0.3, "nflag": nflag,
        "f32n": pd.array(f32n, dtype="Float32") if nulls else f32n,
        "lst": [list(rng.integers(0, 50, rng.integers(0, 4))) for _ in range(n)],
        "f64": rng.normal(size=n) * 1e3, "f32": rng.normal(size=n).astype("float32"),
        "y": rng.integers(0, 2, n).astype("int64"), "w": rng.random(n).astype("float32")})
    df.loc[df.index[::17], "f64"] = np.inf
    df.loc[df.index[::13], "f32"] = np.nan
    if nulls:
        df["f32n"] = df["f32n"].astype("float32")   # NaN as null in parquet (pandas writes it so)
    return df


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("streamed")
    frames, start = [], 0
    for f, n in enumerate((900, 700, 1100, 500)):
        df = _frame(f, n, start, nulls=f >= 2)
        start += n
        table = pa.Table.from_pandas(df, preserve_index=False)
        if f >= 2:   # real parquet nulls in the float32 id column
            table = table.set_column(table.schema.get_field_index("f32n"), "f32n",
                                     pa.array(df["f32n"].to_numpy(), from_pandas=True))
        pq.write_table(table, str(d / f"p{f}.parquet"), row_group_size=300)
        frames.append(df)
    return str(d), pd.concat(frames, ignore_index=True)


def _whole_piece_reads(monkeypatch) -> None:
    monkeypatch.setattr(_ParquetSource, "column_stream", lambda self, pieces, columns: None)


def _loader(path: str, **kw) -> DataLoader:
    args = dict(cat_names=CATS + ["row"], cont_names=CONTS, label_names=LABELS, buffer_size=400,
                parts_per_chunk=2, device="cpu")
    args.update(kw)
    return DataLoader(path, kw.pop("batch_size", 256), **{k: v for k, v in args.items() if k != "batch_size"})


def _rows(batch, name) -> List[list]:
    col = batch[name]
    vals, lens = to_numpy(col.values), to_numpy(col.lengths)
    offs = np.concatenate([[0], np.cumsum(lens)])
    return [vals[offs[i]:offs[i + 1]].tolist() for i in range(len(lens))]


def _assert_same_batches(a: list, b: list) -> None:
    assert len(a) == len(b) and a
    for x, y in zip(a, b):
        assert list(x) == list(y)
        for name in x:
            if isinstance(x[name], RaggedBatch):
                assert _rows(x, name) == _rows(y, name), name
            else:
                assert x[name].dtype == y[name].dtype, name
                np.testing.assert_array_equal(x[name], y[name], err_msg=name)
        # the same blocks: names, dtypes and values (what framework adapters hand over)
        assert [(names, blk.dtype) for names, blk in x.blocks] == [(names, blk.dtype) for names, blk in y.blocks]
        for (_, p), (_, q) in zip(x.blocks, y.blocks):
            np.testing.assert_array_equal(p, q)


def test_every_read_is_one_column_and_unshuffled_batches_are_pandas_values(files, monkeypatch):
    path, ref = files
    reads: List[list] = []
    real = pq.ParquetFile.read_row_groups

    def spy(self, row_groups, columns=None, **kw):
        reads.append(list(columns))
        return real(self, row_groups, columns=columns, **kw)

    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", spy)
    batches = list(_loader(path, shuffle=False))
    assert reads and all(len(cols) == 1 for cols in reads)
    got: Dict[str, np.ndarray] = {n: np.concatenate([b[n] for b in batches]) for n in batches[0]
                                  if not isinstance(batches[0][n], RaggedBatch)}
    np.testing.assert_array_equal(got["row"], np.arange(len(ref)))
    for name in ("i8", "i64", "y"):
        assert got[name].dtype == ref[name].dtype, name
        np.testing.assert_array_equal(got[name], ref[name].to_numpy())
    np.testing.assert_array_equal(got["u16"], ref["u16"].to_numpy("int64"))
    np.testing.assert_array_equal(got["nul"], ref["nul"].fillna(0).to_numpy("int64"))
    np.testing.assert_array_equal(got["flag"], ref["flag"].to_numpy())
    np.testing.assert_array_equal(got["nflag"], ref["nflag"].fillna(False).to_numpy("int8"))
    np.testing.assert_array_equal(got["f32n"], ref["f32n"].to_numpy("float64"))   # NaN where null
    for name in ("f64", "f32", "w"):
        assert got[name].dtype == np.float32
        np.testing.assert_array_equal(got[name], ref[name].to_numpy().astype("float32"))
    lists = [row for b in batches for row in _rows(b, "lst")]
    assert lists == [list(map(int, v)) for v in ref["lst"]]


@pytest.mark.parametrize("shard", [None, (3, 1)])
def test_shuffled_batches_equal_the_whole_piece_reads(files, monkeypatch, shard):
    path, ref = files
    kw = dict(shuffle=True, seed=5)
    if shard is not None:   # pieces trimmed mid row group
        kw.update(global_size=shard[0], global_rank=shard[1])
    streamed = list(_loader(path, **kw))
    with monkeypatch.context() as m:
        _whole_piece_reads(m)
        whole = list(_loader(path, **kw))
    _assert_same_batches(streamed, whole)
    rows = np.concatenate([b["row"] for b in streamed])
    assert len(np.unique(rows)) == len(rows)
    if shard is None:
        assert sorted(rows.tolist()) == list(range(len(ref)))


def test_padded_list_columns_and_one_file_chunks(files, monkeypatch):
    path, _ = files
    kw = dict(shuffle=True, seed=2, sparse_as_dense=True, sparse_max={"lst": 2}, parts_per_chunk=1, buffer_size=250)
    with pytest.warns(Warning, match="sparse_max"):
        streamed = list(_loader(path, **kw))
    with monkeypatch.context() as m, pytest.warns(Warning, match="sparse_max"):
        _whole_piece_reads(m)
        whole = list(_loader(path, **kw))
    _assert_same_batches(streamed, whole)
    assert streamed[0]["lst"].shape == (256, 2)


def test_a_file_changed_under_the_loader_is_named(tmp_path):
    df = pd.DataFrame({"a": np.arange(900), "y": np.arange(900) % 2})
    pq.write_table(pa.Table.from_pandas(df), str(tmp_path / "p.parquet"), row_group_size=300)
    loader = DataLoader(str(tmp_path), 100, cat_names=["a"], label_names=["y"], device="cpu", shuffle=False)
    # the same row groups, fewer rows in each
    pq.write_table(pa.Table.from_pandas(df.iloc[:600]), str(tmp_path / "p.parquet"), row_group_size=200)
    with pytest.raises(RuntimeError, match=r"column 'a'.*did the data change"):
        list(loader)


def _corrupt_file(path) -> None:
    df = pd.DataFrame({"a": np.arange(100_000), "b": np.random.default_rng(0).random(100_000),
                       "y": np.arange(100_000) % 2})
    df.to_parquet(path, row_group_size=50_000)
    raw = bytearray(path.read_bytes())
    raw[100:5000] = b"\x55" * 4900   # inside the first data pages; the footer stays readable
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("how", ["columns", "pieces", "workflow"])
def test_a_corrupt_data_page_names_the_file_and_row_groups(tmp_path, monkeypatch, how):
    # reliability: a corrupt page met by the loader (read column by column, a piece at a time, or
    # read for the online transform) is a ValueError naming the file, its row groups and the fix,
    # with pyarrow's error as its cause, where it was pyarrow's bare "Corrupt snappy compressed data"
    import tabprep as tp
    from tabprep import ops

    _corrupt_file(tmp_path / "x.parquet")
    loader = DataLoader(str(tmp_path), 1000, cat_names=["a"], cont_names=["b"], label_names=["y"], device="cpu")
    if how == "pieces":
        _whole_piece_reads(monkeypatch)
    if how == "workflow":
        loader = loader.map(tp.Workflow((["a"] >> ops.HashBucket(num_buckets=10)) + ["b", "y"]))
    with pytest.raises(ValueError, match=r"row groups \[0(, 1)?\] of the parquet file .*x\.parquet.*corrupt") as info:
        list(loader)
    assert isinstance(info.value.__cause__, (pa.ArrowException, OSError))


@pytest.mark.parametrize("how", ["columns", "pieces"])
def test_a_file_deleted_under_the_loader_is_said_to_be_gone(tmp_path, monkeypatch, how):
    df = pd.DataFrame({"a": np.arange(900), "y": np.arange(900) % 2})
    pq.write_table(pa.Table.from_pandas(df), str(tmp_path / "p.parquet"), row_group_size=300)
    loader = DataLoader(str(tmp_path), 100, cat_names=["a"], label_names=["y"], device="cpu", shuffle=False)
    if how == "pieces":
        _whole_piece_reads(monkeypatch)
    (tmp_path / "p.parquet").unlink()
    with pytest.raises(ValueError, match=r"parquet file .*p\.parquet: it is gone .*moved or deleted"):
        list(loader)
