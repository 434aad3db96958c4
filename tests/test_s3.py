"""Object storage from the Python API: every path may be an ``s3://`` URL (issue #16).

Run against a real local S3 server (moto in server mode, the ``s3`` fixture of conftest.py).
References are plain pandas computed here from the documented op semantics, and the same job
run on local files; the test reads what tabprep wrote with its own s3fs client.
"""
from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from s3_helpers import (N, assert_matches, dead_endpoint, make_workflow, put_raw, raw_frame, read_output, reference,
                        write_local_raw)
from tabprep.backend import to_numpy
from tabprep.loader import DataLoader

# -- fit / transform / write ------------------------------------------------------------------------
def test_fit_transform_s3_to_s3_equals_local_run_and_pandas(s3, tmp_path):
    frame = raw_frame()
    put_raw(s3, "raw", frame)
    wf = make_workflow()
    ds = tp.Dataset(s3.url("raw"), cpu=True)
    assert ds.files == [s3.url(f"raw/part-{i}.parquet") for i in range(3)]
    assert ds.num_rows == N and ds.npartitions == 3
    meta = wf.fit(ds).transform(ds).to_parquet(s3.url("out"))
    assert meta["rows"] == N
    keys = s3.keys("out")
    assert keys == ["_SUCCESS", "_metadata", "_metadata.json", "_schema.json"] + [f"part-0000{i}.parquet" for i in range(3)]
    got = read_output(s3, "out")
    assert_matches(got, reference(frame))
    # the same job on local files gives the same values
    local = write_local_raw(tmp_path / "raw", frame)
    wl = make_workflow()
    wl.fit(tp.Dataset(local, cpu=True)).transform(tp.Dataset(local, cpu=True)).to_parquet(str(tmp_path / "out"))
    pd.testing.assert_frame_equal(got.sort_values("row").reset_index(drop=True),
                                  tp.Dataset(str(tmp_path / "out"), cpu=True).compute().sort_values("row").reset_index(drop=True),
                                  check_dtype=False)
    # and tabprep reads its own s3 output back, schema (cardinality) included
    back = tp.Dataset(s3.url("out"), cpu=True)
    assert back.schema["cat"].properties["cardinality"] == 3 + frame["cat"].nunique()
    assert_matches(back.compute(), reference(frame))


def test_split_per_worker_and_full_shuffle_on_s3(s3):
    frame = raw_frame(seed=5)
    put_raw(s3, "raw", frame)
    wf = make_workflow()
    ds = tp.Dataset(s3.url("raw"), cpu=True)
    wf.fit(ds).transform(ds).to_parquet(s3.url("out"), split_per_worker=2, output_files=2, shuffle="full", seed=1)
    keys = s3.keys("out")
    assert [k for k in keys if k.endswith(".parquet")] == [f"worker_{w}/part-0000{f}.parquet"
                                                           for w in range(2) for f in range(2)]
    assert "_SUCCESS" in keys and not any(k.startswith("_parts") or "incomplete" in k for k in keys)
    counts = [len(s3.read_frame(f"out/worker_{w}/part-0000{f}.parquet")) for w in range(2) for f in range(2)]
    assert max(counts) - min(counts) <= 1 and sum(counts) == N
    assert_matches(read_output(s3, "out"), reference(frame))
    # one worker's folder of a complete output reads on its own
    assert tp.Dataset(s3.url("out/worker_1"), cpu=True).num_rows == counts[2] + counts[3]


@pytest.mark.tf
def test_to_tfrecord_on_s3_parsed_by_tensorflow(s3, tmp_path):
    tf = pytest.importorskip("tensorflow")
    frame = raw_frame(seed=8)
    put_raw(s3, "raw", frame)
    wf = make_workflow()
    ds = tp.Dataset(s3.url("raw"), cpu=True)
    wf.fit(ds).transform(ds).to_tfrecord(s3.url("tfr"), compression="GZIP", output_files=2)
    keys = s3.keys("tfr")
    assert {"_SUCCESS", "tfrecord_spec.json", "part-00000.tfrecord.gz", "part-00001.tfrecord.gz"} <= set(keys)
    local = tmp_path / "tfr"
    local.mkdir()
    for k in ("part-00000.tfrecord.gz", "part-00001.tfrecord.gz"):
        s3.fs.get_file(f"{s3.bucket}/tfr/{k}", str(local / k))
    spec = {"cat": tf.io.FixedLenFeature([], tf.int64), "num": tf.io.FixedLenFeature([], tf.float32),
            "ival": tf.io.FixedLenFeature([], tf.int64), "row": tf.io.FixedLenFeature([], tf.int64),
            "label": tf.io.FixedLenFeature([], tf.int64)}
    records = tf.data.TFRecordDataset([str(local / "part-00000.tfrecord.gz"), str(local / "part-00001.tfrecord.gz")],
                                      compression_type="GZIP")
    parsed = [tf.io.parse_example(b, spec) for b in records.batch(1000)]
    got = pd.DataFrame({k: np.concatenate([p[k].numpy() for p in parsed]) for k in spec})
    assert len(got) == N
    assert_matches(got, reference(frame))


# -- saved workflows -------------------------------------------------------------------------------
def test_workflow_save_load_round_trip_on_s3_with_checksums(s3, tmp_path):
    frame = raw_frame(seed=11)
    wf = make_workflow()
    wf.fit(tp.Dataset(frame, cpu=True))
    wf.save(s3.url("wf"))
    keys = s3.keys("wf")
    assert "_SUCCESS" in keys and "workflow.json" in keys and not any("incomplete" in k for k in keys)
    saved = json.loads(s3.fs.cat_file(f"{s3.bucket}/wf/workflow.json"))
    assert set(saved["stats_files"]) == {k for k in keys if k.startswith("stats/")}
    loaded = tp.Workflow.load(s3.url("wf"))
    assert_matches(loaded.transform(tp.Dataset(frame, cpu=True)).compute(), reference(frame))
    # a statistics file swapped on the store: the recorded sha256 catches it, naming the URL
    stats_key = next(k for k in keys if k.startswith("stats/") and k.endswith(".parquet"))
    swapped = s3.read_frame(f"wf/{stats_key}").iloc[::-1]
    s3.put_frame(f"wf/{stats_key}", swapped)
    with pytest.raises(ValueError, match="sha256") as err:
        tp.Workflow.load(s3.url("wf"))
    assert s3.url(f"wf/{stats_key}") in str(err.value) and "tabprep-fetch" not in str(err.value)
    # saving again replaces it (a saved workflow); a half-written one (no _SUCCESS) is refused
    wf.save(s3.url("wf"))
    tp.Workflow.load(s3.url("wf"))
    s3.fs.rm_file(f"{s3.bucket}/wf/_SUCCESS")
    with pytest.raises(ValueError, match="half-written") as err:
        tp.Workflow.load(s3.url("wf"))
    assert s3.url("wf") in str(err.value)
    with pytest.raises(FileNotFoundError, match="not a saved tabprep workflow"):
        tp.Workflow.load(s3.url("nothing-here"))


# -- the loader ------------------------------------------------------------------------------------
def test_loader_reads_s3(s3):
    frame = raw_frame(seed=13)
    put_raw(s3, "raw", frame)
    wf = make_workflow()
    ds = tp.Dataset(s3.url("raw"), cpu=True)
    wf.fit(ds).transform(ds).to_parquet(s3.url("out"))
    loader = DataLoader(s3.url("out"), batch_size=64, label_names=["label"], cat_names=["cat", "ival", "row"],
                        cont_names=["num"], shuffle=False, device="cpu")
    batches = list(loader)
    got = pd.DataFrame({k: np.concatenate([to_numpy(b[k]) for b in batches]) for k in batches[0]})
    assert len(got) == N
    assert_matches(got, reference(frame))


# -- half-written folders, overwrite -----------------------------------------------------------------
def test_a_write_killed_before_its_commit_is_refused_then_replaced(s3, monkeypatch):
    from tabprep.io import objectstore

    frame = raw_frame(seed=17)
    put_raw(s3, "raw", frame)

    def killed(self):
        raise SystemExit(9)  # the process dies just before writing _SUCCESS: nothing is cleaned up

    with monkeypatch.context() as m, pytest.raises(SystemExit):
        m.setattr(objectstore.RemoteStage, "commit", killed)
        tp.Dataset(s3.url("raw"), cpu=True).to_parquet(s3.url("out"))
    keys = s3.keys("out")
    assert ".tabprep-incomplete" in keys and "part-00000.parquet" in keys and "_SUCCESS" not in keys
    for read in (lambda: tp.Dataset(s3.url("out")),
                 lambda: tp.Dataset(s3.url("out/part-00000.parquet")),
                 lambda: DataLoader(s3.url("out"), batch_size=8, cont_names=["num"], device="cpu")):
        with pytest.raises(ValueError, match="half-written") as err:
            read()
        assert s3.url("out") in str(err.value) and "overwrite" in str(err.value)
    with pytest.raises(FileExistsError, match="interrupted tabprep write"):
        tp.Dataset(s3.url("raw"), cpu=True).to_parquet(s3.url("out"))
    tp.Dataset(s3.url("raw"), cpu=True).to_parquet(s3.url("out"), overwrite=True)
    keys = s3.keys("out")
    assert "_SUCCESS" in keys and ".tabprep-incomplete" not in keys
    back = tp.Dataset(s3.url("out"), cpu=True).compute().sort_values("row").reset_index(drop=True)
    pd.testing.assert_frame_equal(back[["row", "label"]], frame[["row", "label"]])


def test_overwrite_never_deletes_a_prefix_tabprep_did_not_write(s3):
    frame = raw_frame(seed=19)
    put_raw(s3, "raw", frame)
    # a user's prefix; a Spark-style _SUCCESS alone does not make it tabprep's
    user = {"user/data.parquet": None, "user/notes.txt": b"mine", "user/_SUCCESS": b""}
    s3.put_frame("user/data.parquet", frame.iloc[:10])
    for key, data in user.items():
        if data is not None:
            s3.fs.pipe_file(f"{s3.bucket}/{key}", data)
    before = {k: s3.fs.cat_file(f"{s3.bucket}/user/{k}") for k in s3.keys("user")}
    ds = tp.Dataset(s3.url("raw"), cpu=True)
    with pytest.raises(FileExistsError, match="tabprep did not write it") as err:
        ds.to_parquet(s3.url("user"), overwrite=True)
    assert s3.url("user") in str(err.value)
    wf = make_workflow().fit(ds)
    with pytest.raises(FileExistsError, match="tabprep did not write it"):
        wf.save(s3.url("user"))
    after = {k: s3.fs.cat_file(f"{s3.bucket}/user/{k}") for k in s3.keys("user")}
    assert after == before


def test_overwrite_replaces_a_tabprep_output_without_leftovers(s3):
    frame = raw_frame(seed=23)
    put_raw(s3, "raw", frame)
    ds = tp.Dataset(s3.url("raw"), cpu=True)
    ds.to_parquet(s3.url("out"), output_files=4)
    assert sum(k.endswith(".parquet") for k in s3.keys("out")) == 4
    with pytest.raises(FileExistsError, match="exists and is not empty"):
        ds.to_parquet(s3.url("out"), output_files=2)
    ds.to_parquet(s3.url("out"), output_files=2, overwrite=True)
    assert s3.keys("out") == ["_SUCCESS", "_metadata", "_metadata.json", "_schema.json", "part-00000.parquet",
                              "part-00001.parquet"]
    assert tp.Dataset(s3.url("out")).num_rows == N


def test_a_failed_write_leaves_nothing_that_looks_complete(s3):
    frame = raw_frame(seed=29)
    frame["cat"] = frame["cat"].astype(object)
    put_raw(s3, "raw", frame)
    ds = tp.Dataset(s3.url("raw"), cpu=True)
    with pytest.raises(ValueError, match="null"):  # TFRecord refuses nulls (cat has some)
        ds.to_tfrecord(s3.url("tfr"))
    assert s3.keys("tfr") == []


# -- options, other formats, other URLs ---------------------------------------------------------------
def test_storage_options_are_honoured(s3, monkeypatch):
    """The endpoint given only in storage_options is used everywhere (the environment's is dead),
    and a wrong one there fails with an error naming the URL."""
    frame = raw_frame(seed=31)
    put_raw(s3, "raw", frame)
    monkeypatch.setenv("AWS_ENDPOINT_URL", dead_endpoint())
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    so = {"endpoint_url": s3.endpoint}
    ds = tp.Dataset(s3.url("raw"), cpu=True, storage_options=so)
    wf = make_workflow().fit(ds)
    wf.transform(ds).to_parquet(s3.url("out"), storage_options=so)
    wf.save(s3.url("wf"), storage_options=so)
    loaded = tp.Workflow.load(s3.url("wf"), storage_options=so)
    back = tp.Dataset(s3.url("out"), cpu=True, storage_options=so)
    assert_matches(back.compute(), reference(frame))
    assert_matches(loaded.transform(tp.Dataset(frame, cpu=True)).compute(), reference(frame))
    batches = list(DataLoader(s3.url("out"), batch_size=100, cont_names=["num"], cat_names=["row"], shuffle=False,
                              device="cpu", reader_kwargs={"storage_options": so}))
    assert sum(len(to_numpy(b["row"])) for b in batches) == N
    bad = {"endpoint_url": dead_endpoint(), "config_kwargs": {"retries": {"max_attempts": 1}}}
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3.endpoint)  # the environment's works: the option must win
    with pytest.raises(OSError, match="storage_options") as err:
        tp.Dataset(s3.url("raw"), storage_options=bad)
    assert s3.url("raw") in str(err.value)
    with pytest.raises(OSError, match="storage_options"):
        ds.to_parquet(s3.url("out2"), storage_options=bad)


def test_distributed_workers_get_the_storage_options(s3, monkeypatch):
    """Worker processes know no endpoint (their environment's is dead): the options travel in the graph."""
    from distributed import Client, LocalCluster

    frame = raw_frame(seed=37)
    put_raw(s3, "raw", frame)
    monkeypatch.setenv("AWS_ENDPOINT_URL", dead_endpoint())
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    so = {"endpoint_url": s3.endpoint}
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster):
        ds = tp.Dataset(s3.url("raw"), cpu=True, storage_options=so)
        wf = make_workflow().fit(ds)
        wf.transform(ds).to_parquet(s3.url("out"), output_files=2, storage_options=so)
    assert_matches(read_output(s3, "out"), reference(frame))


def test_csv_on_s3_with_nulls(s3):
    frame = pd.DataFrame({"a": [1, None, 3, 4], "s": ["x", None, "y", "z"]})
    for i in range(2):
        s3.fs.pipe_file(f"{s3.bucket}/csv/p{i}.csv", frame.to_csv(index=False).encode())
    got = tp.Dataset(s3.url("csv/*.csv"), cpu=True).compute()
    want = pd.concat([frame, frame], ignore_index=True)
    np.testing.assert_array_equal(got["a"].to_numpy(np.float64), want["a"].to_numpy(np.float64))
    assert got["s"].isna().tolist() == want["s"].isna().tolist()


def test_file_urls_are_local_paths(tmp_path):
    frame = raw_frame(seed=41)
    local = write_local_raw(tmp_path / "raw", frame)
    ds = tp.Dataset("file://" + local, cpu=True)
    assert ds.files == [os.path.join(local, f"part-{i}.parquet") for i in range(3)]
    wf = make_workflow().fit(ds)
    wf.transform(ds).to_parquet("file://" + str(tmp_path / "out"))
    wf.save("file://" + str(tmp_path / "wf"))
    assert sorted(os.listdir(tmp_path / "out"))[:4] == ["_SUCCESS", "_metadata", "_metadata.json", "_schema.json"]
    loaded = tp.Workflow.load("file://" + str(tmp_path / "wf"))
    assert_matches(loaded.transform(tp.Dataset(str(tmp_path / "raw"), cpu=True)).compute(), reference(frame))
