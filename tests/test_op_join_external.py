"""JoinExternal against pandas ``merge`` (row order kept), left and inner, frames and parquet."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tabprep as tp
from tabprep import ops

from conftest import make_dataset, to_pandas


def _data(seed: int = 0, n: int = 200) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    k = pd.array(rng.integers(0, 30, n), dtype="Int64")
    k[rng.random(n) < 0.1] = pd.NA
    return pd.DataFrame({"k": k, "c": pd.Series(rng.choice(["a", "b"], n), dtype="str"),
                         "v": rng.normal(size=n), "idx": np.arange(n)})


def _side() -> pd.DataFrame:
    keys = np.arange(0, 40, 2)  # only even keys
    return pd.DataFrame({"k": keys, "price": keys * 1.5, "qty": keys * 10,
                         "name": pd.Series([f"n{k}" for k in keys], dtype="str"), "flag": keys % 4 == 0})


def reference(data: pd.DataFrame, side: pd.DataFrame, on, how: str, cols, ext) -> pd.DataFrame:
    """pandas merge of the rows in order; null keys never match."""
    on = [on] if isinstance(on, str) else on
    left = data.reset_index(drop=True).copy()
    left["__row"] = np.arange(len(left))
    m = left[on + ["__row"]].dropna(subset=on).merge(side[on + ext], on=on, how="inner")
    m = m.set_index("__row")
    if how == "inner":
        rows = np.sort(m.index.to_numpy())
        out = left.loc[rows, cols].reset_index(drop=True)
        return pd.concat([out, m.loc[rows, ext].reset_index(drop=True)], axis=1)
    out = left[cols].copy()
    for c in ext:
        out[c] = m[c].reindex(np.arange(len(left))).to_numpy()
    return out


def _values(s: pd.Series):
    return [None if (v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v))) else v
            for v in s.astype(object).tolist()]


def check(out: pd.DataFrame, ref: pd.DataFrame) -> None:
    assert list(out.columns) == list(ref.columns)
    assert len(out) == len(ref)
    for c in ref.columns:
        assert _values(out[c]) == _values(ref[c]), c


@pytest.mark.parametrize("how", ["left", "inner"])
def test_matches_pandas_merge_and_keeps_row_order(how):
    data, side = _data(0), _side()
    wf = tp.Workflow(["k", "idx"] >> ops.JoinExternal(side, on="k", how=how))
    out = to_pandas(wf.transform(make_dataset(data, nparts=4)))
    check(out, reference(data, side, "k", how, ["k", "idx"], ["price", "qty", "name", "flag"]))
    schema = wf.output_schema
    assert [c.name for c in schema] == ["k", "idx", "price", "qty", "name", "flag"]
    assert [schema[c].dtype for c in ("price", "qty", "name", "flag")] == ["float64", "int64", "str", "bool"]
    if how == "left":  # unmatched rows: integer and bool side columns are nullable, not float
        assert str(out["qty"].dtype) == "Int64" and out["qty"].isna().any()
    assert wf.ops[0].changes_rows == (how == "inner")


def test_key_read_from_input_columns_ext_and_multi_key(tmp_path):
    data = _data(1)
    data["k2"] = data["idx"] % 3
    side = _side()
    side["k2"] = side["k"] % 3
    path = tmp_path / "side.parquet"
    pq.write_table(pa.Table.from_pandas(side, preserve_index=False), path)
    # the keys are read from the raw input but not output
    wf = tp.Workflow(["v"] >> ops.JoinExternal(str(path), on=["k", "k2"], columns_ext=["price"]))
    out = to_pandas(wf.transform(make_dataset(data, nparts=3)))
    check(out, reference(data, side, ["k", "k2"], "left", ["v"], ["price"]))
    assert wf.output_columns == ["v", "price"]


def test_string_keys_inner_join_with_empty_partitions():
    data = _data(2)
    data["c"] = data["c"].where(data["idx"] % 7 != 0, None)
    side = pd.DataFrame({"c": pd.Series(["a", "zz"], dtype="str"), "w": [1.0, 2.0]})
    wf = tp.Workflow(["c", "idx"] >> ops.JoinExternal(side, on="c", how="inner"))
    out = to_pandas(wf.transform(make_dataset(data, nparts=3)))
    check(out, reference(data, side, "c", "inner", ["c", "idx"], ["w"]))
    empty = wf.transform(data.iloc[:0])
    assert list(empty.columns) == ["c", "idx", "w"] and len(empty) == 0


def test_errors():
    data, side = _data(3), _side()
    dup = pd.concat([side, side.iloc[:2]])
    with pytest.raises(ValueError, match="duplicate keys"):
        tp.Workflow(["k"] >> ops.JoinExternal(dup, on="k")).transform(data)
    with pytest.raises(ValueError, match="clash"):
        tp.Workflow(["k", "v"] >> ops.JoinExternal(side.rename(columns={"price": "v"}), on="k")).transform(data)
    with pytest.raises(KeyError, match="not in the side table"):
        tp.Workflow(["k"] >> ops.JoinExternal(side, on="k", columns_ext=["nope"])).transform(data)
    with pytest.raises(ValueError, match="how"):
        ops.JoinExternal(side, on="k", how="outer")
    with pytest.raises(TypeError):
        ops.JoinExternal(123, on="k")


def test_save_load_embeds_the_side_table(tmp_path):
    data, side = _data(4), _side()
    path = tmp_path / "side.parquet"
    pq.write_table(pa.Table.from_pandas(side, preserve_index=False), path)
    for src in (side, str(path)):
        wf = tp.Workflow(["k", "idx"] >> ops.JoinExternal(src, on="k", columns_ext=["qty", "name"]))
        before = to_pandas(wf.transform(make_dataset(data, nparts=2)))
        out_dir = tmp_path / f"wf_{type(src).__name__}"
        wf.save(str(out_dir))
        if isinstance(src, str):
            path.unlink()  # the saved workflow does not need the original file
        loaded = tp.Workflow.load(str(out_dir))
        assert loaded.output_schema == wf.output_schema
        pd.testing.assert_frame_equal(to_pandas(loaded.transform(make_dataset(data, nparts=3))), before)


# -- side tables at fsspec URLs, storage_options ------------------------------------------------------------
def _put_side(s3, key: str, side: pd.DataFrame) -> None:
    with s3.fs.open(f"{s3.bucket}/{key}", "wb") as fh:  # the test's own client
        side.to_parquet(fh, index=False)


def test_s3_side_table_with_storage_options(s3, monkeypatch, tmp_path):
    """An s3:// side table read with the credentials and endpoint given only in storage_options
    (the server checks them; the environment's are unknown / dead); the saved workflow holds
    none of them, and a loaded one joins the same from its embedded copy."""
    from s3_helpers import only_storage_options_credentials

    data, side = _data(11), _side()
    _put_side(s3, "side/a.parquet", side.iloc[:7])
    _put_side(s3, "side/b.parquet", side.iloc[7:])  # a folder of two files
    ref = reference(data, side, "k", "left", ["k", "idx"], ["price", "name"])
    with only_storage_options_credentials(s3, monkeypatch) as so:
        with pytest.raises(OSError, match="credentials"):  # they really are only in storage_options
            tp.Workflow(["k", "idx"] >> ops.JoinExternal(s3.url("side"), on="k")).transform(
                make_dataset(data, nparts=2)).compute()
        op = ops.JoinExternal(s3.url("side"), on="k", columns_ext=["price", "name"], storage_options=so)
        assert op.storage_options is so  # stored verbatim
        wf = tp.Workflow(["k", "idx"] >> op)
        check(to_pandas(wf.transform(make_dataset(data, nparts=3))), ref)
        for secret in (so["key"], so["secret"]):
            assert secret not in repr(op) and secret not in repr(wf)
        wf.save(str(tmp_path / "wf"))
    text = "\n".join(p.read_text(errors="replace") for p in (tmp_path / "wf").rglob("*") if p.is_file())
    for secret in (so["key"], so["secret"], s3.endpoint):
        assert secret not in text, "a storage option was written into the saved workflow"
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    check(to_pandas(loaded.transform(make_dataset(data, nparts=2))), ref)


def test_file_and_memory_url_side_tables(tmp_path):
    """Other fsspec URLs than s3:// go through fsspec as well: file:// is the local file,
    memory:// (which pyarrow does not know) is read like any other store."""
    import fsspec

    data, side = _data(13), _side()
    folder = tmp_path / "side é"
    folder.mkdir()
    side.to_parquet(folder / "t.parquet", index=False)
    mem = fsspec.filesystem("memory")
    with mem.open("/tabprep-join-test/side/t.parquet", "wb") as fh:
        side.to_parquet(fh, index=False)
    try:
        for src in ("file://" + str(folder / "t.parquet"), "file://" + str(folder),
                    "memory://tabprep-join-test/side"):
            for how in ("left", "inner"):
                wf = tp.Workflow(["k", "idx"] >> ops.JoinExternal(src, on="k", how=how, columns_ext=["qty", "flag"]))
                check(to_pandas(wf.transform(make_dataset(data, nparts=2))),
                      reference(data, side, "k", how, ["k", "idx"], ["qty", "flag"]))
    finally:
        mem.rm("/tabprep-join-test", recursive=True)


@pytest.mark.parametrize("how", ["left", "inner"])
def test_uint64_keys_against_signed_keys_match_exactly(backend, how):
    """A uint64 key column joined with a signed int side key (or the other way round): pandas'
    merge compares them as float64, so 2**53 + 1 matched the side's 2**53 (a silently wrong value),
    and 2**53 and 2**53 + 1 both in the side table multiplied rows (a crash). Keys now match by
    their integer values; side keys the data's type cannot hold (negative for uint64, 2**63 and up
    for int64) match nothing. The reference is a dict lookup of Python ints."""
    big = 2 ** 53
    data_u = pd.DataFrame({"k": np.array([big + 1, 3, 2 ** 63 + 7, 5], dtype="uint64")})
    side_i = pd.DataFrame({"k": np.array([big, 3, -1, big + 1], dtype="int64"), "v": [1.0, 3.0, -1.0, 2.0]})
    data_i = pd.DataFrame({"k": np.array([big + 1, 3, -1, 5], dtype="int64")})
    side_u = pd.DataFrame({"k": np.array([big, 3, 2 ** 63 + 7, big + 1], dtype="uint64"), "v": [1.0, 3.0, 9.0, 2.0]})
    for data, side in ((data_u, side_i), (data_i, side_u)):
        lookup = {int(k): v for k, v in zip(side["k"], side["v"]) if -(2 ** 63) <= int(k) < 2 ** 64}
        keys = [int(k) for k in data["k"]]
        wf = tp.Workflow(["k"] >> ops.JoinExternal(side, on="k", how=how, columns_ext=["k", "v"]))
        ds = make_dataset(data, backend, nparts=2)
        wf.fit(ds)
        out = to_pandas(wf.transform(ds))
        if how == "left":
            want = [lookup.get(k) for k in keys]
            assert [None if pd.isna(v) else v for v in out["v"]] == want
            assert [int(k) for k in out["k"]] == keys
        else:
            want = [(k, lookup[k]) for k in keys if k in lookup]
            assert [(int(k), v) for k, v in zip(out["k"], out["v"])] == want


def test_a_join_that_would_multiply_rows_says_so(monkeypatch):
    """Were keys compared inexactly again (here: the exact cast switched off), a row matching two
    side rows raises naming the keys and dtypes, where pandas' length mismatch named nothing."""
    from tabprep.ops import join_external

    monkeypatch.setattr(join_external, "_exact_int_keys", lambda left, side, keys: side)
    data = pd.DataFrame({"k": np.array([2 ** 53, 3], dtype="uint64")})
    side = pd.DataFrame({"k": np.array([2 ** 53, 2 ** 53 + 1, 3], dtype="int64"), "v": [1.0, 2.0, 3.0]})
    wf = tp.Workflow(["k"] >> ops.JoinExternal(side, on="k", columns_ext=["k", "v"]))
    wf.fit(tp.Dataset(data))
    with pytest.raises(RuntimeError, match=r"JoinExternal: joining on \['k'\] made 3 rows of 2: the key dtypes "
                                           r"\['uint64'\] and \['int64'\] compared inexactly"):
        wf.transform(data)
