"""Hive ``key=value`` folders: their keys are read as columns (int64 when every value looks like an
integer, else string; ``__HIVE_DEFAULT_PARTITION__`` is null), checked row by row against pandas'
``read_parquet`` of the same folder (pyarrow.dataset with hive partitioning)."""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tabprep as tp
from conftest import to_pandas


def _write(path, **cols):
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(cols), str(path))


def _hive(tmp_path, values=("0", "1"), key="label"):
    d = tmp_path / "data"
    for i, v in enumerate(values):
        _write(d / f"{key}={v}" / "part-0.parquet", x=[10 * i + 1, 10 * i + 2])
    return d


def _as_pandas_ref(d):
    ref = pd.read_parquet(str(d))
    for c in ref.columns:   # pandas gives the key as a category of int32 / string
        if isinstance(ref[c].dtype, pd.CategoricalDtype):
            ref[c] = ref[c].astype(ref[c].cat.categories.dtype)
    return ref.sort_values(list(ref.columns)).reset_index(drop=True)


def _rows(df):
    return df.sort_values(list(df.columns)).reset_index(drop=True)


def test_int_keys_are_int64_columns_as_pandas_reads_them(tmp_path):
    d = _hive(tmp_path)
    ds = tp.Dataset(str(d), cpu=True)
    assert ds.schema.column_names == ["x", "label"]
    out = to_pandas(ds.compute())
    assert str(out["label"].dtype) == "int64"
    ref = _as_pandas_ref(d)
    assert _rows(out)[["x", "label"]].astype("int64").equals(ref[["x", "label"]].astype("int64"))
    assert list(to_pandas(ds.to_ddf(columns=["label"]).compute())["label"].sort_values()) == [0, 0, 1, 1]


def test_string_keys_nested_keys_and_default_partition(tmp_path):
    d = tmp_path / "data"
    _write(d / "country=fr" / "day=1" / "a.parquet", x=[1, 2])
    _write(d / "country=us" / "day=2" / "b.parquet", x=[3])
    _write(d / "country=us" / "day=__HIVE_DEFAULT_PARTITION__" / "c.parquet", x=[4])
    out = _rows(to_pandas(tp.Dataset(str(d), cpu=True).compute()))
    assert list(out.columns) == ["x", "country", "day"]
    assert list(out["country"]) == ["fr", "fr", "us", "us"]
    assert out["day"].tolist()[:3] == [1, 1, 2] and pd.isna(out["day"].iloc[3])
    assert str(out["day"].dtype) == "Int64"
    import pyarrow.dataset as pds   # the reference: pyarrow's own hive discovery
    ref = pds.dataset(str(d), partitioning="hive").to_table().to_pandas().sort_values("x").reset_index(drop=True)
    assert list(ref["country"]) == list(out["country"])
    assert ref["day"].fillna(-1).astype("int64").tolist() == out["day"].fillna(-1).astype("int64").tolist()


def test_key_named_like_a_file_column_is_refused(tmp_path):
    d = tmp_path / "data"
    _write(d / "x=1" / "a.parquet", x=[1, 2])
    with pytest.raises(ValueError) as err:
        tp.Dataset(str(d), cpu=True).compute()
    assert "'x'" in str(err.value) and "x=1" in str(err.value)


def test_inconsistent_layouts_keep_the_warning_and_no_keys(tmp_path, caplog):
    d = tmp_path / "data"
    _write(d / "label=0" / "a.parquet", x=[1])
    _write(d / "other=1" / "b.parquet", x=[2])
    with caplog.at_level(logging.WARNING, logger="tabprep"):
        ds = tp.Dataset(str(d), cpu=True)
    assert ds.schema.column_names == ["x"]
    assert "label=0" in caplog.text and "not read as a column" in caplog.text


def test_workflow_categorify_of_the_key_and_loader(tmp_path):
    d = _hive(tmp_path, values=("a", "b"))
    ds = tp.Dataset(str(d), cpu=True)
    wf = tp.Workflow((["label"] >> tp.ops.Categorify()) + ["x"])
    out = to_pandas(wf.fit_transform(ds).compute())
    ref = _as_pandas_ref(d)
    assert len(out) == 4 and out["label"].nunique() == 2
    # the same key gets the same id, on the rows pandas gives that key
    pairs = set(zip(out["x"], out["label"]))
    by_key = {}
    for x, lab in zip(ref["x"], ref["label"]):
        by_key.setdefault(lab, set()).add(dict(pairs)[x])
    assert all(len(v) == 1 for v in by_key.values()) and len({next(iter(v)) for v in by_key.values()}) == 2
    from tabprep.loader import DataLoader
    d = _hive(tmp_path / "ints", values=("3", "7"))
    ref = _as_pandas_ref(d)
    seen = []
    for batch in DataLoader(str(d), batch_size=3, device="cpu", shuffle=False, cat_names=["label"], cont_names=["x"]):
        feats = batch[0] if isinstance(batch, tuple) else batch
        seen += list(zip(np.asarray(feats["x"]).ravel().tolist(), np.asarray(feats["label"]).ravel().tolist()))
    assert sorted(seen) == sorted(zip(ref["x"].tolist(), ref["label"].tolist()))


def test_keys_on_each_backend(tmp_path, backend):
    d = _hive(tmp_path)
    ds = tp.Dataset(str(d), cpu=backend == "cpu")
    out = _rows(to_pandas(ds.compute()))
    assert out["label"].tolist() == [0, 0, 1, 1] and out["x"].tolist() == [1, 2, 11, 12]
