"""Counts of the writers and of Dataset's partitions are whole numbers >= 1 (and sizes positive),
or the call is refused naming the argument before anything is written.

``to_parquet(output_files=2.5)`` raised Python's "'float' object cannot be interpreted as an
integer", ``row_group_size=2.5`` was taken, ``Dataset(frame, npartitions=0)`` made one partition
and ``Dataset(path, part_size=-1)`` a partition per row group, silently."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

import tabprep as tp


@pytest.fixture()
def frame() -> pd.DataFrame:
    return pd.DataFrame({"c": np.arange(100) % 7, "x": np.arange(100) * 1.0})


@pytest.mark.parametrize("name,bad", [("output_files", 2.5), ("output_files", True), ("row_group_size", 2.5),
                                      ("row_group_size", 0), ("split_per_worker", 1.5), ("seed", 1.5),
                                      ("seed", -1), ("out_files_per_proc", float("nan"))])
def test_writer_counts(frame, tmp_path, name, bad):
    out = tmp_path / "out"
    with pytest.raises(ValueError, match=rf"{name} must be an int >= [01], got"):
        tp.Dataset(frame).to_parquet(str(out), **{name: bad})
    assert not out.exists() or not os.listdir(out)   # nothing written


def test_whole_writer_counts_of_other_types(frame, tmp_path):
    tp.Dataset(frame).to_parquet(str(tmp_path / "a"), output_files=np.int64(2), row_group_size=10.0, seed=np.uint8(3))
    got = tp.Dataset(str(tmp_path / "a")).compute().sort_values("x").reset_index(drop=True)
    pd.testing.assert_frame_equal(got, frame, check_dtype=False)
    assert len([f for f in os.listdir(tmp_path / "a") if f.endswith(".parquet")]) == 2


@pytest.mark.parametrize("bad", [0, 2.5, -1, True])
def test_frame_partitions(frame, bad):
    with pytest.raises(ValueError, match=r"npartitions must be an int >= 1, got"):
        tp.Dataset(frame, npartitions=bad)


@pytest.mark.parametrize("bad", [-1, 0, 0.5, float("nan"), "-5MB"])
def test_part_size(frame, tmp_path, bad):
    frame.to_parquet(tmp_path / "d.parquet")
    with pytest.raises(ValueError, match=r"part_size"):
        tp.Dataset(str(tmp_path / "d.parquet"), part_size=bad)


@pytest.mark.parametrize("write,name,bad", [("parquet", "overwrite", "no"), ("parquet", "overwrite", 1),
                                            ("parquet", "overwrite", None), ("tfrecord", "overwrite", "False"),
                                            ("tfrecord", "drop_last", "no")])
def test_flags_are_bools(frame, tmp_path, write, name, bad):
    """``overwrite="no"`` replaced an existing output (a truthy string counted as True)."""
    out = tmp_path / "out"
    tp.Dataset(frame).to_parquet(str(out))
    before = sorted(os.listdir(out)), (out / "_metadata.json").read_bytes()
    with pytest.raises(TypeError, match=rf"{name} must be True or False, got {bad!r} \({type(bad).__name__}\)"):
        getattr(tp.Dataset(frame), f"to_{write}")(str(out), **{name: bad})
    assert (sorted(os.listdir(out)), (out / "_metadata.json").read_bytes()) == before   # untouched


def test_numpy_bools_are_bools(frame, tmp_path):
    out = tmp_path / "out"
    tp.Dataset(frame).to_parquet(str(out), overwrite=np.bool_(False))
    tp.Dataset(frame).to_parquet(str(out), overwrite=np.bool_(True))
    assert len(tp.Dataset(str(out)).compute()) == 100


def test_workflow_save_allow_pickle_is_a_bool(frame, tmp_path):
    wf = tp.Workflow(["x"] >> tp.ops.Normalize()).fit(tp.Dataset(frame))
    with pytest.raises(TypeError, match=r"allow_pickle must be True or False, got 'no' \(str\)"):
        wf.save(str(tmp_path / "wf"), allow_pickle="no")
    assert not (tmp_path / "wf").exists()
