"""The Python API never writes to a path that is, holds or lies inside one of the dataset's inputs
(the CLI's guarantee, docs/guarantees.md): ``wf.transform(ds).to_parquet(<ds's folder>)`` would
delete the input before reading it (object storage) or silently replace the raw data (local).

Checked from the user's side: the error names the output and the input, and the input folder
(on disk, or in the local S3 server's bucket) holds exactly what it held before.
"""
from __future__ import annotations

import filecmp
import os

import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops


def _raw(folder):
    os.makedirs(folder, exist_ok=True)
    pd.DataFrame({"x": [1.0, 2.0, 3.0]}).to_parquet(os.path.join(folder, "a.parquet"), index=False)
    pd.DataFrame({"x": [4.0, 5.0]}).to_parquet(os.path.join(folder, "b.parquet"), index=False)
    return str(folder)


def _transformed(ds):
    return tp.Workflow(["x"] >> ops.Normalize()).fit(ds).transform(ds)


def _snapshot(folder):
    return {n: open(os.path.join(folder, n), "rb").read() for n in sorted(os.listdir(folder))}


@pytest.mark.parametrize("write", ["parquet", "tfrecord"])
def test_output_is_the_input_folder(tmp_path, write):
    raw = _raw(tmp_path / "train")
    before = _snapshot(raw)
    ds = tp.Dataset(raw, cpu=True)
    out = _transformed(ds)
    with pytest.raises(ValueError) as exc:
        getattr(out, f"to_{write}")(raw, overwrite=True)
    msg = str(exc.value)
    assert f"{raw!r} is the input {raw!r}" in msg and "Write to a folder outside the dataset's inputs" in msg, msg
    assert _snapshot(raw) == before
    # the untransformed dataset too
    with pytest.raises(ValueError, match="is the input"):
        ds.to_parquet(raw, overwrite=True)
    assert _snapshot(raw) == before


def test_output_inside_the_input_folder(tmp_path):
    raw = _raw(tmp_path / "train")
    before = _snapshot(raw)
    sub = os.path.join(raw, "sub")
    with pytest.raises(ValueError) as exc:
        _transformed(tp.Dataset(raw, cpu=True)).to_parquet(sub)
    assert f"{sub!r} is inside the input folder {raw!r}" in str(exc.value), str(exc.value)
    assert _snapshot(raw) == before
    assert len(tp.Dataset(raw, cpu=True).compute()) == 5


def test_output_holding_an_input_file(tmp_path):
    raw = _raw(tmp_path / "train")
    before = _snapshot(raw)
    for src in (os.path.join(raw, "a.parquet"), os.path.join(raw, "*.parquet")):
        with pytest.raises(ValueError) as exc:
            _transformed(tp.Dataset(src, cpu=True)).to_parquet(str(tmp_path), overwrite=True)
        assert "holds the input" in str(exc.value) and "a.parquet" in str(exc.value), str(exc.value)
    assert _snapshot(raw) == before


def test_an_output_next_to_the_input_is_written(tmp_path):
    raw = _raw(tmp_path / "train")
    before = _snapshot(raw)
    _transformed(tp.Dataset(raw, cpu=True)).to_parquet(str(tmp_path / "train_out"))
    _transformed(tp.Dataset(os.path.join(raw, "a.parquet"), cpu=True)).to_parquet(str(tmp_path / "train2"))
    assert _snapshot(raw) == before
    assert len(tp.Dataset(str(tmp_path / "train_out"), cpu=True).compute()) == 5


def test_s3_output_is_the_input_prefix(s3):
    s3.put_frame("train/part-0.parquet", pd.DataFrame({"x": [1.0, 2.0, 3.0]}))
    url = s3.url("train")
    ds = tp.Dataset(url, cpu=True)
    for out in (url, s3.url("train/sub"), s3.url("")):
        with pytest.raises(ValueError) as exc:
            _transformed(ds).to_parquet(out, overwrite=True)
        assert "input" in str(exc.value) and url in str(exc.value), str(exc.value)
    assert s3.keys("train") == ["part-0.parquet"]
    assert len(s3.read_frame("train/part-0.parquet")) == 3
    _transformed(ds).to_parquet(s3.url("train_out"))
    assert "_SUCCESS" in s3.keys("train_out")


def test_a_tabprep_output_read_back_is_not_replaced(tmp_path):
    """The silent case: the input is a folder tabprep wrote, which ``overwrite`` may replace."""
    first = str(tmp_path / "stage1")
    tp.Dataset(pd.DataFrame({"x": [1.0, 2.0, 3.0]}), cpu=True).to_parquet(first)
    before = _snapshot(first)
    ds = tp.Dataset(first, cpu=True)
    with pytest.raises(ValueError, match="is the input"):
        _transformed(ds).to_parquet(first, overwrite=True)
    with pytest.raises(ValueError, match="is inside the input folder"):
        _transformed(ds).to_parquet(os.path.join(first, "sub"))
    assert _snapshot(first) == before
    assert tp.Dataset(first, cpu=True).compute()["x"].tolist() == [1.0, 2.0, 3.0]
