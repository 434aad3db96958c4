"""Replacing a tabprep folder on object storage never deletes a file the user put inside it: the
same refusal as on a local disk ("it holds 'notes.txt', which tabprep did not write").

Same local S3 server (the ``s3`` fixture of conftest.py); what is in the bucket is read with the
test's own s3fs client.
"""
from __future__ import annotations

import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops


def _ds():
    return tp.Dataset(pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0]}), cpu=True)


def _refused(exc, url, name):
    msg = str(exc.value)
    assert url in msg and f"{name!r}" in msg and "which tabprep did not write" in msg, msg
    assert "Move it out of the folder, or choose another path" in msg, msg


def test_output_overwrite_keeps_a_users_file(s3):
    url = s3.url("out")
    _ds().to_parquet(url)
    s3.fs.pipe(f"{s3.bucket}/out/notes.txt", b"mine")
    before = s3.keys("out")
    with pytest.raises(FileExistsError) as exc:
        _ds().to_parquet(url, overwrite=True)
    _refused(exc, url, "notes.txt")
    assert s3.keys("out") == before
    assert s3.fs.cat(f"{s3.bucket}/out/notes.txt") == b"mine"
    # without the user's file, overwrite replaces the folder as before
    s3.fs.rm(f"{s3.bucket}/out/notes.txt")
    _ds().to_parquet(url, overwrite=True)
    assert "notes.txt" not in s3.keys("out") and "_SUCCESS" in s3.keys("out")


def test_split_output_overwrite_keeps_a_file_in_a_worker_folder(s3):
    url = s3.url("out")
    _ds().to_parquet(url, split_per_worker=2)
    s3.fs.pipe(f"{s3.bucket}/out/worker_0/my_model.ckpt", b"weights")
    with pytest.raises(FileExistsError) as exc:
        _ds().to_parquet(url, split_per_worker=2, overwrite=True)
    _refused(exc, url, "worker_0/my_model.ckpt")
    assert s3.fs.cat(f"{s3.bucket}/out/worker_0/my_model.ckpt") == b"weights"
    assert "worker_1/part-00000.parquet" in s3.keys("out")


def test_workflow_save_keeps_a_users_file(s3):
    url = s3.url("wf")
    wf = tp.Workflow(["x"] >> ops.Normalize())
    wf.fit(_ds())
    wf.save(url)
    s3.fs.pipe(f"{s3.bucket}/wf/model/weights.h5", b"h5")
    before = s3.keys("wf")
    with pytest.raises(FileExistsError) as exc:
        wf.save(url)
    _refused(exc, url, "model/weights.h5")
    assert s3.keys("wf") == before
    assert s3.fs.cat(f"{s3.bucket}/wf/model/weights.h5") == b"h5"
    tp.Workflow.load(url)  # the previous version is still whole


def test_an_interrupted_write_is_still_replaced(s3):
    """A killed write left tabprep's marker and its part files: ``overwrite`` replaces them."""
    s3.fs.pipe(f"{s3.bucket}/out/.tabprep-incomplete", b"{}")
    s3.fs.pipe(f"{s3.bucket}/out/_parts/part-00001.parquet", b"x")
    s3.fs.pipe(f"{s3.bucket}/out/worker_1/part-00000.parquet", b"x")
    s3.fs.pipe(f"{s3.bucket}/out/part-00002.tfrecord.gz", b"x")
    _ds().to_parquet(s3.url("out"), overwrite=True)
    keys = s3.keys("out")
    assert "_SUCCESS" in keys and ".tabprep-incomplete" not in keys, keys
    assert not {"_parts/part-00001.parquet", "worker_1/part-00000.parquet", "part-00002.tfrecord.gz"} & set(keys)
    # but not a user's file next to them
    s3.fs.pipe(f"{s3.bucket}/out2/.tabprep-incomplete", b"{}")
    s3.fs.pipe(f"{s3.bucket}/out2/part-00000.parquet", b"x")
    s3.fs.pipe(f"{s3.bucket}/out2/notes.txt", b"mine")
    with pytest.raises(FileExistsError) as exc:
        _ds().to_parquet(s3.url("out2"), overwrite=True)
    _refused(exc, s3.url("out2"), "notes.txt")
    assert s3.fs.cat(f"{s3.bucket}/out2/notes.txt") == b"mine"
