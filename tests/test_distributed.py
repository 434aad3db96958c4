"""Fit and transform on a real dask.distributed LocalCluster of 2 worker processes.

The workflow (vocabularies included) reaches the workers once, scattered, never as data inside
the task graph; the partial -> combine tree runs on the workers; outputs equal the threaded
scheduler's and an independent pandas reference.
"""
from __future__ import annotations

import logging
import pickle
import time
import warnings
from typing import Dict, List, Tuple

import dask
import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

distributed = pytest.importorskip("distributed")

#: graphs above this size make distributed warn ("Sending large graph"); the test's vocabulary
#: pickles to several times this, so a workflow inside the graph fails the test
GRAPH_LIMIT = "100kB"


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=logging.ERROR) as c:
        yield c


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("dist")
    rng = np.random.default_rng(7)
    frames = []
    for i, n in enumerate([30_000, 25_000, 7, 20_000]):
        skewed = np.where(rng.random(n) < 0.5, rng.integers(0, 50, n), rng.integers(0, 1_000_000, n))
        cat = pd.Series([f"v{v:07d}" for v in skewed], dtype=object)
        cat[rng.random(n) < 0.05] = None
        x = pd.Series(rng.normal(3, 2, n))
        x[rng.random(n) < 0.1] = np.nan
        if i == 1:
            x.iloc[:3] = np.inf  # Clip(max) below keeps inf out of the moments
        df = pd.DataFrame({"cat": cat, "x": x, "label": rng.integers(0, 2, n).astype("int8")})
        df.to_parquet(root / f"part-{i}.parquet", index=False)
        frames.append(df)
    return root, pd.concat(frames, ignore_index=True)


def make_workflow() -> tp.Workflow:
    cats = ["cat"] >> ops.Categorify()
    conts = ["x"] >> ops.FillMissing(fill_val=0.0) >> ops.Clip(min_value=-1.0, max_value=50.0) >> ops.Normalize()
    return tp.Workflow(cats + conts + ["label"])


def read_output(path) -> pd.DataFrame:
    return tp.Dataset(str(path)).compute().reset_index(drop=True)


def test_cluster_fit_transform_equals_threads_and_pandas(cluster, data, tmp_path):
    root, raw = data
    # reference 1: dask's threaded scheduler in this process (no client yet)
    ref_wf = make_workflow().fit(tp.Dataset(str(root), part_size="256kB"))
    ref_wf.transform(tp.Dataset(str(root), part_size="256kB")).to_parquet(str(tmp_path / "threads"))
    ref = read_output(tmp_path / "threads")
    assert len(pickle.dumps(ref_wf)) > 4 * 100_000, "the vocabulary must be large enough for the graph check"

    wf = make_workflow()
    from tabprep.backend import core

    # an earlier in-process worker (``Client(processes=False)`` in another test) may have tuned
    # this process already: what matters is that the cluster's run leaves it as it was
    tuned_before = core._malloc_tuned
    with distributed.Client(cluster) as client, warnings.catch_warnings():
        warnings.simplefilter("error")  # "Sending large graph of size ..." fails the test
        with dask.config.set({"distributed.admin.large-graph-warning-threshold": GRAPH_LIMIT}):
            with distributed.get_task_stream(client) as ts:
                ds = tp.Dataset(str(root), part_size="256kB")
                assert ds.npartitions >= 4
                wf.fit(ds)
                wf.transform(ds).to_parquet(str(tmp_path / "cluster"))
        keys = [str(t["key"]) for t in ts.data]
        workers = {t["worker"] for t in ts.data}
        # the fit's partials and their merge + finalize ran on the workers (both of them)
        assert any("_fit_partition" in k for k in keys) and any("_finalize_stats" in k for k in keys), keys[:20]
        assert workers <= set(client.scheduler_info()["workers"]) and len(workers) == 2
        # nothing left behind on the workers (the scattered workflow was released)
        # (releasing a future reaches the workers asynchronously: wait for it, bounded)
        deadline = time.monotonic() + 20
        while True:
            held = client.run(lambda dask_worker: len(dask_worker.data))
            if sum(held.values()) == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert sum(held.values()) == 0, held
        # the workers' allocator was tuned for partition-sized arrays (dask's nanny leaves glibc
        # mmapping every array over 128 KiB); this process, not a worker, keeps its settings
        assert client.run(lambda: core._malloc_tuned) == dict.fromkeys(workers, True)
        assert core._malloc_tuned is tuned_before
    got = read_output(tmp_path / "cluster")
    pd.testing.assert_frame_equal(got, ref)
    assert wf.output_schema.to_dict() == ref_wf.output_schema.to_dict()

    # reference 2: plain pandas. Categorify: null 1, unseen 2, then ids from 3 by descending
    # count, ties by ascending value
    vc = raw["cat"].dropna().value_counts()
    order = sorted(vc.items(), key=lambda kv: (-kv[1], kv[0]))
    ids = {v: i + 3 for i, (v, _) in enumerate(order)}
    expect = raw["cat"].map(lambda v: 1 if v is None else ids[v]).to_numpy()
    np.testing.assert_array_equal(got["cat"].to_numpy(), expect)
    x = raw["x"].fillna(0.0).clip(-1.0, 50.0)
    expect_x = ((x - x.mean()) / x.std(ddof=1)).to_numpy()
    np.testing.assert_allclose(got["x"].to_numpy(dtype="float64"), expect_x, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got["label"].to_numpy(), raw["label"].to_numpy())


def test_lazy_transform_and_saved_workflow_on_cluster(cluster, data, tmp_path):
    """A workflow fitted on the cluster saves and loads like a local one; a lazy transform made
    under the client computes to the same frame as the loaded workflow's local transform."""
    root, _ = data
    with distributed.Client(cluster):
        wf = make_workflow().fit(tp.Dataset(str(root), part_size="256kB"))
        lazy = wf.transform(tp.Dataset(str(root), part_size="256kB"))
        on_cluster = lazy.compute().reset_index(drop=True)
        wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    local = loaded.transform(tp.Dataset(str(root), part_size="256kB")).compute().reset_index(drop=True)
    pd.testing.assert_frame_equal(on_cluster, local)


def test_local_scheduler_pickles_nothing(data, monkeypatch):
    """Without a client the workflow is a graph key holding the object itself: never pickled."""
    root, _ = data
    wf = make_workflow()

    def refuse(self):
        raise AssertionError("the workflow was pickled on the local scheduler")

    monkeypatch.setattr(tp.Workflow, "__reduce_ex__", lambda self, proto: refuse(self), raising=False)
    wf.fit(tp.Dataset(str(root), part_size="256kB"))
    assert len(wf.transform(tp.Dataset(str(root))).compute()) == 75_007


def test_partition_read_transform_write_is_one_task(cluster, data, tmp_path):
    """Each parquet partition is read, transformed and written by one task, and read and fitted by
    one task, so a partition never moves between workers (measured on 2 GPUs: a 20M-row partition
    sent to the other worker for its write cost 4.4 s of a 12 s transform). Same output as the
    threaded run."""
    root, _ = data
    ref_wf = make_workflow().fit(tp.Dataset(str(root), part_size="256kB"))
    ref_wf.transform(tp.Dataset(str(root), part_size="256kB")).to_parquet(str(tmp_path / "threads"))
    wf = make_workflow()
    with distributed.Client(cluster) as client:
        ds = tp.Dataset(str(root), part_size="256kB")
        n = ds.npartitions
        assert n >= 4
        with distributed.get_task_stream(client) as fit_ts:
            wf.fit(ds)
        with distributed.get_task_stream(client) as ts:
            wf.transform(ds).to_parquet(str(tmp_path / "cluster"))
    fit_tasks = [str(t["key"]) for t in fit_ts.data]
    # n partials (each with its partition's read inside) + the reduction (combine tree, the split of
    # the last partials per group of ops, the partitioned finalize's cut and reduced parts of the
    # vocabularies, merge + finalize per group), nothing else
    assert sum("_fit_partition" in k for k in fit_tasks) == n
    reduction = ("_combine_group", "_combine_pieces", "_split_partials", "getitem", "_cut_shards", "_reduce_shard",
                 "_finalize_stats")
    assert all("_fit_partition" in k or k.startswith(reduction) or k.strip("('").startswith(reduction)
               for k in fit_tasks), fit_tasks
    write_tasks = [str(t["key"]) for t in ts.data]
    assert len(write_tasks) == n and all("_run_part" in k for k in write_tasks), write_tasks
    pd.testing.assert_frame_equal(read_output(tmp_path / "cluster"), read_output(tmp_path / "threads"))


def test_statistics_are_merged_and_finalized_on_the_workers(cluster, data, monkeypatch):
    """The last reduction step (merge an op's partials, turn them into its statistics) runs on the
    workers, one task per group of ops, so the ops finalize in parallel and the client receives
    finished statistics (host arrays; on the GPU the client never touches device data). The client
    process merges and finalizes nothing, and the ops the user holds carry the statistics, equal
    to a threaded fit's."""
    root, _ = data
    ref = make_workflow().fit(tp.Dataset(str(root), part_size="256kB"))
    ref_cat, ref_norm = [n.op for n in ref.stat_nodes]

    def refuse(self, *args, **kwargs):
        raise AssertionError(f"{type(self).__name__} merged or finalized in the client process")

    # patched in this process only: the workers are other processes with the real methods
    for cls in (ops.Categorify, ops.Normalize):
        monkeypatch.setattr(cls, "fit_finalize", refuse)
        monkeypatch.setattr(cls, "fit_combine", refuse)
    threshold = {"cat": 1}
    cat, norm = ops.Categorify(freq_threshold=threshold), ops.Normalize()
    wf = tp.Workflow((["cat"] >> cat) + (["x"] >> ops.FillMissing(fill_val=0.0)
                                         >> ops.Clip(min_value=-1.0, max_value=50.0) >> norm) + ["label"])
    with distributed.Client(cluster) as client, distributed.get_task_stream(client) as ts:
        wf.fit(tp.Dataset(str(root), part_size="256kB"))
    keys = [str(t["key"]) for t in ts.data]
    assert any("_finalize_stats" in k for k in keys), keys
    # the user's own op objects are fitted (the workflow adopted the workers' state into them)
    assert [n.op for n in wf.stat_nodes] == [cat, norm]
    assert cat.fitted and norm.fitted and cat._index_cache == {}
    assert cat.freq_threshold is threshold  # parameters stay the objects the user passed
    v, rv = cat.stats_["cat"], ref_cat.stats_["cat"]
    assert isinstance(v["values"], np.ndarray) and isinstance(v["freqs"], np.ndarray)
    assert v["values"].flags.writeable and v["freqs"].flags.writeable  # as a pickled array would be
    np.testing.assert_array_equal(v["values"], rv["values"])
    np.testing.assert_array_equal(v["freqs"], rv["freqs"])
    assert v["nulls"] == rv["nulls"]
    assert norm.stats_ == ref_norm.stats_


def test_packed_state_round_trips_arrays_of_every_layout():
    """The fitted state a worker packs for the client (pickle header + out-of-band array buffers)
    unpacks to equal, writable arrays of every layout, next to plain values."""
    from tabprep.workflow.tasks import pack_state, unpack_state

    class State:
        pass

    s = State()
    s.c = np.arange(10, dtype=np.int64)
    s.f = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    s.strided = np.arange(20)[::3]
    s.objects = np.array(["a", None, "c"], dtype=object)
    s.empty = np.array([], dtype="uint8")
    s.nested = {"k": {"values": np.array([3, 1, 2]), "nulls": 4}, "label": "x"}
    frames = pack_state(vars(s))
    assert all(isinstance(f, np.ndarray) and f.dtype == np.uint8 for f in frames)
    frames = [f.copy() for f in frames]
    for f in frames:
        f.flags.writeable = False  # as a received, read-only frame may be
    got = unpack_state(frames)
    assert sorted(got) == sorted(vars(s))
    for name in ("c", "f", "strided", "objects", "empty"):
        np.testing.assert_array_equal(got[name], getattr(s, name))
        assert got[name].dtype == getattr(s, name).dtype
        assert got[name].flags.writeable
    assert got["f"].flags.f_contiguous
    np.testing.assert_array_equal(got["nested"]["k"]["values"], [3, 1, 2])
    assert got["nested"]["k"]["nulls"] == 4 and got["nested"]["label"] == "x"


def test_one_op_over_many_columns_finalizes_its_keys_in_parallel(cluster, tmp_path):
    """A Categorify over 12 columns merges and finalizes its vocabularies in several tasks (split
    by key, as dask's split_out), and the client reassembles them in column order: vocabularies
    equal to plain pandas value counts (descending count, ties by ascending value) and to a
    threaded fit's."""
    rng = np.random.default_rng(3)
    cols = [f"c{i:02d}" for i in range(12)]
    for f in range(3):
        pd.DataFrame({c: rng.integers(0, 40 + 7 * i, 4000) for i, c in enumerate(cols)}).to_parquet(
            tmp_path / f"p{f}.parquet", index=False)
    frame = pd.concat([pd.read_parquet(tmp_path / f"p{f}.parquet") for f in range(3)], ignore_index=True)
    threaded = ops.Categorify()
    tp.Workflow(cols >> threaded).fit(tp.Dataset(str(tmp_path), part_size="32kB"))
    cat = ops.Categorify()
    with distributed.Client(cluster) as client, distributed.get_task_stream(client) as ts:
        tp.Workflow(cols >> cat).fit(tp.Dataset(str(tmp_path), part_size="32kB"))
    finals = [t for t in ts.data if "_finalize_stats" in str(t["key"])]
    assert len(finals) > 1, [str(t["key"]) for t in ts.data]
    assert list(cat.stats_) == cols == list(threaded.stats_)
    for c in cols:
        counts = frame[c].value_counts()
        ref = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        np.testing.assert_array_equal(cat.stats_[c]["values"], [v for v, _ in ref])
        np.testing.assert_array_equal(cat.stats_[c]["freqs"], [n for _, n in ref])
        np.testing.assert_array_equal(threaded.stats_[c]["values"], cat.stats_[c]["values"])


def test_partials_combine_on_the_worker_that_computed_them(cluster, tmp_path):
    """Each worker merges the partials it computed (the issue's "partials stay on the workers and
    combine there"); only the merged statistics, cut into the final groups, cross to the other
    worker. Before, a combine task of 8 partials ran on one worker and fetched the other worker's
    partials one after the other (on 2 GPU workers, 1.2-1.7 s of a 2.6-2.9 s fit waited on such
    transfers). Vocabularies equal plain pandas value counts."""
    rng = np.random.default_rng(11)
    frames = []
    for f in range(16):  # 8 partials per worker: more than each keeps unmerged
        df = pd.DataFrame({"a": rng.integers(0, 3000, 2000), "b": rng.integers(0, 50, 2000),
                           "x": rng.normal(0, 1, 2000)})
        df.to_parquet(tmp_path / f"p{f:02d}.parquet", index=False)
        frames.append(df)
    frame = pd.concat(frames, ignore_index=True)
    cat = ops.Categorify()
    wf = tp.Workflow((["a", "b"] >> cat) + (["x"] >> ops.Normalize()))
    with distributed.Client(cluster) as client, distributed.get_task_stream(client) as ts:
        ds = tp.Dataset(str(tmp_path))
        assert ds.npartitions == 16
        seen = _transfer_counts(client)
        # profile=False: the training profile (issue #35) makes each partial several times longer
        # on these tiny partitions, and the scheduler then steals some (a loose restriction), which
        # this test of the combine tree's placement is not about (see the quality branch's report);
        # work stealing off as well: on a CI machine running 4 test processes it still moved one
        # partial to the other worker, whose combine then fetched it (2026-11-28)
        client.run_on_scheduler(_work_stealing, on=False)
        try:
            wf.fit(ds, profile=False)
        finally:
            client.run_on_scheduler(_work_stealing, on=True)
        fetched = _fetched_keys(client, seen)
    tasks = {str(t["key"]): t for t in ts.data}
    partial_worker = {k: t["worker"] for k, t in tasks.items() if "_fit_partition" in k}
    assert len(partial_worker) == 16 and len(set(partial_worker.values())) == 2
    assert any("_combine_" in k for k in tasks), list(tasks)
    moved = [(w, k) for w, k in fetched if "_fit_partition" in k]
    assert not moved, f"partials fetched by another worker before being merged: {moved}"
    for c in ("a", "b"):
        counts = frame[c].value_counts()
        ref = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        np.testing.assert_array_equal(cat.stats_[c]["values"], [v for v, _ in ref])
        np.testing.assert_array_equal(cat.stats_[c]["freqs"], [n for _, n in ref])
    norm = wf.stat_nodes[1].op
    assert norm.stats_["x"]["mean"] == pytest.approx(frame["x"].mean(), rel=1e-12)


def _transfer_counts(client: distributed.Client) -> Dict[str, int]:
    """How many incoming transfers each worker has logged so far."""
    return client.run(lambda dask_worker: len(dask_worker.transfer_incoming_log))


def _fetched_keys(client: distributed.Client, since: Dict[str, int]) -> List[Tuple[str, str]]:
    """(worker, key) of each key a worker fetched from another after ``since`` (from the workers'
    own transfer logs). The task stream's transfer entries are no good for this: a worker files
    a fetch under an arbitrary dependent of the fetched key, so the scattered workflow, fetched
    again where dask's active memory manager dropped a broadcast replica before the graph
    arrived (seen on a loaded CI machine), showed up as a partial "fetching its partition"."""
    logs = client.run(lambda dask_worker: [list(map(str, e["keys"])) for e in dask_worker.transfer_incoming_log])
    return [(w, k) for w, entries in logs.items() for e in entries[since.get(w, 0):] for k in e]


async def _work_stealing(dask_scheduler, on: bool) -> bool:
    """Starts or stops the scheduler's work stealing (runs on the scheduler); False without it."""
    stealing = dask_scheduler.extensions.get("stealing")
    if stealing is None:
        return False
    await (stealing.start() if on else stealing.stop())
    return True


def test_fit_of_a_dask_frame_moves_no_partition(cluster):
    """A dataset made from a dask frame: each of the fit's partials runs on the worker that
    computed its partition, so no partition moves between workers (before, the scheduler placed
    some partials away from their partitions: 2 of 12 here fetched theirs)."""
    import dask.dataframe as dd

    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"a": rng.integers(0, 500, 40_000), "x": rng.normal(0, 1, 40_000)})
    cat = ops.Categorify()
    wf = tp.Workflow((["a"] >> cat) + (["x"] >> ops.Normalize()))
    with distributed.Client(cluster) as client, distributed.get_task_stream(client) as ts:
        # dask's work stealing may move a partial (tabprep places it loosely: allow_other_workers)
        # to the other worker when its own lags, as on a loaded machine (seen with the test files
        # on pytest-xdist workers: 1 of 12 moved); this test is about where tabprep places them
        client.run_on_scheduler(_work_stealing, on=False)
        seen = _transfer_counts(client)
        try:
            wf.fit(tp.Dataset(dd.from_pandas(frame, npartitions=12)))
        finally:
            client.run_on_scheduler(_work_stealing, on=True)
        fetched = _fetched_keys(client, seen)
    partials = [t for t in ts.data if "_fit_partition" in str(t["key"])]
    assert len(partials) == 12 and len({t["worker"] for t in partials}) == 2
    moved = [(w, k) for w, k in fetched if "frompandas" in k]
    assert not moved, f"partitions fetched from another worker: {moved}"
    counts = frame["a"].value_counts()
    ref = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    np.testing.assert_array_equal(cat.stats_["a"]["values"], [v for v, _ in ref])
    np.testing.assert_array_equal(cat.stats_["a"]["freqs"], [n for _, n in ref])


def test_fit_of_a_dask_frame_whose_partitions_share_tasks(cluster):
    """Partitions made from shared tasks (a repartitioned frame, an empty partition): each is
    pinned to its partial's worker with the tasks it depends on, which other partitions need too;
    the statistics equal plain pandas' over the whole frame, and the transform keeps every row."""
    import dask.dataframe as dd

    rng = np.random.default_rng(11)
    frame = pd.DataFrame({"a": rng.integers(0, 300, 30_000), "x": rng.normal(5, 2, 30_000)})
    frame.loc[rng.random(30_000) < 0.1, "x"] = np.nan
    ddf = dd.from_pandas(frame, npartitions=7).repartition(npartitions=4)
    ddf = dd.concat([ddf, dd.from_pandas(frame.iloc[:0], npartitions=1)])
    cat, norm = ops.Categorify(), ops.Normalize()
    wf = tp.Workflow((["a"] >> cat) + (["x"] >> norm))
    with distributed.Client(cluster):
        wf.fit(tp.Dataset(ddf))
        out = wf.transform(tp.Dataset(ddf)).to_ddf().compute()
    counts = frame["a"].value_counts()
    ref = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    np.testing.assert_array_equal(cat.stats_["a"]["values"], [v for v, _ in ref])
    np.testing.assert_array_equal(cat.stats_["a"]["freqs"], [n for _, n in ref])
    x = frame["x"].dropna().to_numpy()
    assert norm.stats_["x"]["mean"] == pytest.approx(x.mean(), rel=1e-12)
    assert norm.stats_["x"]["std"] == pytest.approx(x.std(ddof=1), rel=1e-12)
    assert len(out) == len(frame)


def test_each_pinned_partition_holds_its_own_tasks_for_its_worker():
    """``reduction._pinned``: a dask frame's delayed partitions all share the graph of every
    partition; each pinned partition must keep only the tasks it depends on, restricted (loosely)
    to worker i % W. Restricting the whole shared graph per partition sent every partition to the
    last partition's worker."""
    import dask.dataframe as dd

    from tabprep.workflow.reduction import _pinned

    frame = pd.DataFrame({"a": np.arange(600) % 7})
    parts = dd.from_pandas(frame, npartitions=6).to_delayed()
    assert len(dict(parts[0].__dask_graph__())) == 6  # the shared graph this is about
    workers = ["tcp://w0", "tcp://w1", "tcp://w2"]
    pinned = _pinned(parts, workers)
    for i, (p, q) in enumerate(zip(parts, pinned)):
        assert q.key == p.key
        (layer,) = q.__dask_graph__().layers.values()
        assert set(layer) == {p.key}, (i, list(layer))
        assert layer.annotations == {"workers": [workers[i % 3]], "allow_other_workers": True}
        pd.testing.assert_frame_equal(q.compute(), p.compute())
    readers = [lambda: frame] * 2  # parquet partition readers run inside the partial: untouched
    assert _pinned(readers, workers) is readers and _pinned(parts, workers[:1]) is parts


def test_workers_receive_vocabularies_without_their_counts(cluster, data, tmp_path):
    """The workflow scattered to the workers for a transform carries each vocabulary's values
    (what the transform looks ids up in) but not its counts (only saving and ``inspect`` read
    them, in the client): half the bytes of the Criteo vocabularies, sent once per worker. The
    workflow the user holds keeps its counts and saves them; outputs equal the threaded run's."""
    root, frame = data
    ref = make_workflow()
    ref.fit(tp.Dataset(str(root), part_size="256kB"))
    ref.transform(tp.Dataset(str(root), part_size="256kB")).to_parquet(str(tmp_path / "threads"))
    wf = make_workflow()
    with distributed.Client(cluster) as client:
        ds = tp.Dataset(str(root), part_size="256kB")
        wf.fit(ds)
        lazy = wf.transform(ds)  # holds the scattered workflow until computed

        def held(dask_worker):
            out = []
            for value in list(dask_worker.data.values()):
                if type(value).__name__ == "Workflow":
                    cat = value.stat_nodes[0].op
                    out.append((len(cat.stats_["cat"]["values"]), "freqs" if cat.stats_["cat"]["freqs"] is not None else None))
            return out

        on_workers = client.run(held)
        lazy.to_parquet(str(tmp_path / "cluster"))
    n_values = len(ref.stat_nodes[0].op.stats_["cat"]["values"])
    assert len(on_workers) == 2 and all(got == [(n_values, None)] for got in on_workers.values()), on_workers
    user_cat = wf.stat_nodes[0].op.stats_["cat"]
    np.testing.assert_array_equal(user_cat["freqs"], ref.stat_nodes[0].op.stats_["cat"]["freqs"])
    wf.save(str(tmp_path / "saved"))
    back = tp.Workflow.load(str(tmp_path / "saved"))
    np.testing.assert_array_equal(back.stat_nodes[0].op.stats_["cat"]["freqs"], user_cat["freqs"])
    pd.testing.assert_frame_equal(read_output(tmp_path / "cluster"), read_output(tmp_path / "threads"))


def test_the_workers_copy_shares_arrays_and_unchanged_ops():
    """``for_workers`` (what is scattered) copies only the ops that leave state out for the workers
    (Categorify: counts left out, int values the very same memory; object arrays are copied, as
    pickle copies them); other ops, a LambdaOp's lambda
    included, are the workflow's own objects; the user's ops keep all their state."""
    from tabprep.workflow.tasks import for_workers

    df = pd.DataFrame({"c": [7, 9, 7, 5], "x": [1.0, 2.0, np.nan, 4.0]})
    lam = ops.LambdaOp(lambda s: s * 2)
    wf = tp.Workflow((["c"] >> ops.Categorify()) + (["x"] >> ops.FillMissing() >> lam >> ops.Normalize()))
    wf.op_timer = lambda *a: None  # a local function on the workflow itself: cloudpickle's job
    wf.fit(tp.Dataset(df))
    copy = for_workers(wf)
    cat, ccat = wf.stat_nodes[0].op, copy.stat_nodes[0].op
    assert ccat is not cat and ccat.stats_["c"]["freqs"] is None
    assert np.shares_memory(ccat.stats_["c"]["values"], cat.stats_["c"]["values"])
    assert cat.stats_["c"]["freqs"].tolist() == [2, 1, 1]
    assert copy.stat_nodes[1].op is wf.stat_nodes[1].op  # Normalize: by reference
    assert [n.op for n in copy.nodes if isinstance(n.op, ops.LambdaOp)] == [lam]
    pd.testing.assert_frame_equal(copy.transform_frame(df), wf.transform_frame(df))


def test_profile_on_the_cluster_equals_the_local_one_and_pandas(cluster, data):
    # the profile pass reads each partition column by column on the workers (the pickled readers,
    # tasks._fit_streamed): the same exact figures as the threaded pass and as pandas
    root, df = data
    local = tp.profile(str(root), sample_every=1)
    with distributed.Client(cluster):
        remote = tp.profile(str(root), sample_every=1)
    exact = ("count", "nulls", "nan", "inf", "numeric_count", "min", "max", "distinct", "distinct_exact")
    for c in ("cat", "x", "label"):
        assert {k: remote[c].get(k) for k in exact} == {k: local[c].get(k) for k in exact}, c
        for k in ("mean", "std"):
            assert remote[c].get(k) == pytest.approx(local[c].get(k), rel=1e-12), (c, k)
    assert remote["label"]["frequent"] == local["label"]["frequent"]
    x = df["x"].to_numpy()
    finite = x[np.isfinite(x)]
    assert remote.rows == len(df)
    assert remote["cat"]["nulls"] == int(df["cat"].isna().sum())
    assert (remote["x"]["nulls"], remote["x"]["inf"]) == (int(np.isnan(x).sum()), int(np.isinf(x).sum()))
    assert (remote["x"]["min"], remote["x"]["max"]) == (float(finite.min()), float(finite.max()))
    assert remote["x"]["mean"] == pytest.approx(float(finite.mean()), rel=1e-9)
    assert remote["label"]["mean"] == pytest.approx(float(df["label"].mean()), rel=1e-12)
