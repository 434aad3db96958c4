"""Vocabulary lookups built ahead of the transform (tabprep.ops._lookups, issue #34).

A partition task starts a background build of the fitted ops' lookup structures before it reads
its partition. These tests check that the build happens once per key however many threads ask,
that a failed build leaves nothing behind, that the background thread builds what the transform
would have built (on the transform's device key), that it never changes a result (outputs equal a
pandas reference with it on and off, in process and on a real dask.distributed cluster), and the
switch that turns it off.
"""
from __future__ import annotations

import logging
import pickle
import threading
import time

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops
from tabprep.ops import _lookups as lookups

distributed = pytest.importorskip("distributed")


def _frame(n: int = 20_000, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 500, n).astype("float64")
    a[rng.random(n) < 0.05] = np.nan   # nulls: id 1
    return pd.DataFrame({
        "a": pd.array(np.where(np.isnan(a), None, a), dtype="Int64"),
        "s": rng.choice(["x", "y", "z", "w"], n),
        "label": rng.integers(0, 2, n),
        "x": rng.normal(size=n),
    })


def _ids(train: pd.Series, col: pd.Series) -> np.ndarray:
    """NVTabular's Categorify ids, written independently: 0 pad, 1 null, 2 unseen, then the
    training values by descending count, ties by ascending value."""
    counts = train.dropna().value_counts()
    order = sorted(counts.index, key=lambda v: (-counts[v], v))
    ids = {v: 3 + i for i, v in enumerate(order)}
    return np.array([1 if pd.isna(v) else ids.get(v, 2) for v in col], dtype="int64")


def _workflow() -> tp.Workflow:
    cats = ["a", "s"] >> ops.Categorify()
    te = ["s"] >> ops.TargetEncoding("label", kfold=1, p_smooth=0)
    return tp.Workflow(cats + te + ["x"])


@pytest.fixture()
def parquet(tmp_path):
    df = _frame()
    for i in range(4):   # 4 partitions, one of them empty
        part = df.iloc[i * 7000:(i + 1) * 7000]
        part.to_parquet(tmp_path / f"p{i}.parquet", index=False)
    return df, str(tmp_path / "*.parquet")


def _reference(df: pd.DataFrame) -> pd.DataFrame:
    mean = df["label"].mean()
    by = df.groupby("s")["label"].mean()
    return pd.DataFrame({"a": _ids(df["a"], df["a"]), "s": _ids(df["s"], df["s"]),
                         "TE_s_label": df["s"].map(by).fillna(mean).to_numpy(), "x": df["x"].to_numpy()})


def _check(out: pd.DataFrame, ref: pd.DataFrame) -> None:
    assert out["a"].to_numpy().tolist() == ref["a"].tolist()
    assert out["s"].to_numpy().tolist() == ref["s"].tolist()
    np.testing.assert_allclose(out["TE_s_label"].to_numpy(dtype="float64"), ref["TE_s_label"], rtol=1e-6)
    np.testing.assert_array_equal(out["x"].to_numpy(), ref["x"])


def test_build_once_builds_each_key_once_across_threads():
    cache: dict = {}
    calls = []

    def build():
        calls.append(1)
        time.sleep(0.05)   # long enough for every thread to arrive while the first builds
        return object()

    got = []
    threads = [threading.Thread(target=lambda: got.append(lookups.build_once(cache, "k", build))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert len({id(g) for g in got}) == 1 and len(got) == 8


def test_build_once_keeps_nothing_after_a_failed_build():
    cache: dict = {}

    def fail():
        raise MemoryError("out of device memory")

    with pytest.raises(MemoryError):
        lookups.build_once(cache, "k", fail)
    assert "k" not in cache
    assert lookups.build_once(cache, "k", lambda: 42) == 42


def _wait_built(op, keys, device="cpu", timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        cache = getattr(op, "_index_cache", None)
        if cache is None:
            cache = op._cache
        have = {k for k in cache if k[0] != "build"}
        if all(k in have for k in keys):
            return have
        time.sleep(0.01)
    raise AssertionError(f"not built within {timeout} s: {keys}, have {have}")


def test_workflow_builds_its_lookups_in_the_background_once_per_device(parquet):
    df, path = parquet
    wf = _workflow()
    wf.fit(tp.Dataset(path))
    cat, te = [n.op for n in wf.stat_nodes]
    assert not cat._index_cache and not te._cache
    assert wf.build_lookups_ahead(cpu=True) is True
    _wait_built(cat, [("a", "cpu"), ("s", "cpu")])
    _wait_built(te, [("index", "s", "cpu")])
    # what the background built is what the transform uses (no second structure)
    built = cat._index_cache[("a", "cpu")]
    out = wf.transform(df)
    assert cat._index_cache[("a", "cpu")] is built
    _check(out, _reference(df))
    # once per workflow and device; a copy (a worker's unpickled workflow) builds its own
    assert wf.build_lookups_ahead(cpu=True) is False
    copy = pickle.loads(pickle.dumps(wf))
    assert not [n.op for n in copy.stat_nodes][0]._index_cache
    assert copy.build_lookups_ahead(cpu=True) is True


def test_switched_off_and_unfitted_workflows_build_nothing(parquet, monkeypatch):
    df, path = parquet
    wf = _workflow()
    assert wf.build_lookups_ahead(cpu=True) is False   # not fitted: nothing to build
    wf.fit(tp.Dataset(path))
    monkeypatch.setenv("TABPREP_LOOKUPS_AHEAD", "0")
    assert wf.build_lookups_ahead(cpu=True) is False
    time.sleep(0.05)
    assert not [n.op for n in wf.stat_nodes][0]._index_cache


@pytest.mark.parametrize("ahead", ["1", "0"])
def test_transform_tasks_build_ahead_and_write_the_same_output(parquet, tmp_path, monkeypatch, ahead):
    df, path = parquet
    monkeypatch.setenv("TABPREP_LOOKUPS_AHEAD", ahead)
    wf = _workflow()
    wf.fit(tp.Dataset(path))
    before = dict(lookups.started)
    wf.transform(tp.Dataset(path)).to_parquet(str(tmp_path / "out"))
    out = pd.read_parquet(tmp_path / "out")
    _check(out, _reference(df))
    assert lookups.started.get("cpu", 0) - before.get("cpu", 0) == (1 if ahead == "1" else 0)


def test_a_failing_background_build_changes_nothing(parquet, tmp_path, monkeypatch, caplog):
    df, path = parquet
    wf = _workflow()
    wf.fit(tp.Dataset(path))

    def broken(self, like):
        raise RuntimeError("device lost")

    monkeypatch.setattr(ops.Categorify, "warm_lookups", broken)
    with caplog.at_level(logging.DEBUG, logger="tabprep.ops._lookups"):
        wf.transform(tp.Dataset(path)).to_parquet(str(tmp_path / "out"))
    _check(pd.read_parquet(tmp_path / "out"), _reference(df))
    assert any("device lost" in (r.exc_text or "") or "device lost" in str(r.exc_info) for r in caplog.records)


def test_workers_build_ahead_on_a_real_cluster(parquet, tmp_path):
    df, path = parquet
    with distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=True, dashboard_address=None,
                                  silence_logs=logging.ERROR) as cluster, distributed.Client(cluster) as client:
        wf = _workflow()
        wf.fit(tp.Dataset(path))
        wf.transform(tp.Dataset(path)).to_parquet(str(tmp_path / "out"))
        per_worker = client.run(lambda: dict(__import__("tabprep.ops._lookups", fromlist=["x"]).started))
    _check(pd.read_parquet(tmp_path / "out"), _reference(df))
    # every worker that ran a transform task started one background build (once, not per task)
    counts = [w.get("cpu", 0) for w in per_worker.values()]
    assert max(counts) == 1 and sum(counts) >= 1, per_worker


@pytest.mark.gpu
@pytest.mark.skipif(not tp.backend.has_cudf(), reason="cuDF / a CUDA device is not available")
def test_gpu_lookups_built_ahead_are_the_transforms(parquet, tmp_path):
    import cupy

    df, path = parquet
    wf = _workflow()
    wf.fit(tp.Dataset(path, cpu=False))
    dev = f"gpu:{cupy.cuda.runtime.getDevice()}"
    assert wf.build_lookups_ahead(cpu=False) is True
    cat = [n.op for n in wf.stat_nodes][0]
    _wait_built(cat, [("a", dev), ("s", dev)])
    built = cat._index_cache[("a", dev)]
    assert isinstance(built.keys, cupy.ndarray)   # the GPU's sorted vocabulary, not a host table
    wf.transform(tp.Dataset(path, cpu=False)).to_parquet(str(tmp_path / "out"))
    assert cat._index_cache[("a", dev)] is built
    _check(pd.read_parquet(tmp_path / "out"), _reference(df))
