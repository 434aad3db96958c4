"""Warnings about NVTabular 23.08's behaviour (docs/migration.md) are given where the user builds
the graph, once, and not again each time a saved workflow is loaded (a serving process or a data
loader loads it over and over; the graph's author already saw them). NVTabular itself keeps the
later branch of a ``+`` merge silently (merlin.dag's ``__add__``), and its
``Categorify(single_table=True)`` ids differ from tabprep's (see docs/migration.md)."""
from __future__ import annotations

import warnings

import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

_TEXTS = ("'+' merge", "single_table", "Groupby: count/nunique")


def _df():
    return pd.DataFrame({"a": ["x", "y", "x", None], "b": ["u", "u", "v", "v"], "s": [1, 1, 2, 2],
                         "n": [1.0, 2.0, 3.0, 4.0]})


def _ours(record):
    return [str(w.message) for w in record if any(t in str(w.message) for t in _TEXTS)]


def test_build_warns_and_load_does_not(tmp_path, monkeypatch):
    """Building warns (the '+' shadowing, single_table, Groupby's dtypes); fit and save work;
    Workflow.load of the folder, twice, emits none of these warnings."""
    from tabprep import _warn

    monkeypatch.setattr(_warn, "_ONCE", set())  # once per process: as in a fresh one
    with pytest.warns(tp.NVTabularDifferenceWarning) as record:
        graph = ((["a"] >> ops.Categorify()) + (["a"] >> ops.HashBucket(10))
                 + (["b"] >> ops.Categorify(single_table=True)))
        wf = tp.Workflow(graph)
    got = _ours(record)
    assert any("'+' merge" in m and "'a'" in m for m in got), got
    assert any("single_table" in m for m in got), got
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gb = tp.Workflow(["s", "n"] >> ops.Groupby("s", aggs={"n": ["sum", "count"]}))
        gb.fit(tp.Dataset(_df()))
    wf.fit(tp.Dataset(_df()))
    wf.save(str(tmp_path / "wf"))
    gb.save(str(tmp_path / "gb"))
    monkeypatch.setattr(_warn, "_ONCE", set())
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(2):
            loaded = tp.Workflow.load(str(tmp_path / "wf"))
            loaded_gb = tp.Workflow.load(str(tmp_path / "gb"))
    assert _ours(record) == []
    # the loaded workflows compute what the fitted ones do
    pd.testing.assert_frame_equal(loaded.transform(_df()), wf.transform(_df()))
    pd.testing.assert_frame_equal(loaded_gb.transform(_df()), gb.transform(_df()))


def test_building_again_after_a_load_warns_again():
    """A graph built by the user after a load (in the same thread) still warns: only the load is quiet."""
    with pytest.warns(UserWarning, match="single_table"):
        ops.Categorify(single_table=True)


def _parquet_with_nulls(root):
    import numpy as np

    root.mkdir()
    for i in range(3):
        x = np.arange(i * 10, i * 10 + 10, dtype="float64")
        x[3] = np.nan
        pd.DataFrame({"x": x, "c": ["a", "b"] * 5}).to_parquet(root / f"part-{i}.parquet", index=False)
    return root


@pytest.fixture
def deadline():
    """Fail instead of hanging when a cluster does not come up or a job stalls (120 s; the test
    takes ~10 s). SIGALRM interrupts the main thread, where the client waits."""
    import signal

    def expired(signum, frame):
        raise TimeoutError("the LocalCluster test ran past 120 s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(120)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_bucketize_warning_from_cluster_workers_reaches_the_client(tmp_path, deadline):
    """The Bucketize null/NaN warning (NVTabular 23.08's np.digitize puts NaN in the last bucket,
    tabprep keeps it null) is raised inside transform tasks. On a dask.distributed cluster of
    worker processes those tasks run elsewhere: the warning reaches the client once per job,
    after fit (the Categorify downstream of Bucketize transforms it) and after to_parquet."""
    distributed = pytest.importorskip("distributed")
    import logging

    root = _parquet_with_nulls(tmp_path / "in")
    wf = tp.Workflow((["x"] >> ops.Bucketize([5.0, 15.0]) >> ops.Categorify()) + ["c"])
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=logging.ERROR) as cluster, distributed.Client(cluster) as client:
        with warnings.catch_warnings(record=True) as fit_record:
            warnings.simplefilter("always")
            wf.fit(tp.Dataset(str(root)))
        with warnings.catch_warnings(record=True) as write_record:
            warnings.simplefilter("always")
            wf.transform(tp.Dataset(str(root))).to_parquet(str(tmp_path / "out"))
        # the tasks did run on the worker process, not here
        assert client.run(lambda: 1) and len(client.scheduler_info()["workers"]) == 1
    for record in (fit_record, write_record):
        ours = [w for w in record if "Bucketize: column 'x'" in str(w.message)]
        assert len(ours) == 1, [str(w.message) for w in record]
        assert issubclass(ours[0].category, tp.NVTabularDifferenceWarning)
    out = pd.read_parquet(tmp_path / "out")
    assert len(out) == 30 and (out["x"] == 1).sum() == 3  # the nulls: Categorify's null id
