"""The partitioned finalize of Categorify's vocabularies on a dask.distributed cluster (issue #34):
each worker's merged counts of a vocabulary are cut by a hash of the value into parts, part ``j``
of every worker is merged and reduced (threshold, top values) on one worker, and the final task
merges the reduced parts. The vocabularies, saved files, ids and embedding sizes must be those
of the whole-counts finalize and of plain pandas value counts, however the values are grouped.
"""
from __future__ import annotations

import filecmp
import logging
import struct
import warnings

import mmh3
import numpy as np
import pandas as pd
import pytest
from dask.utils import key_split
from hypothesis import given, settings
from hypothesis import strategies as st

import tabprep as tp
from tabprep import backend as B
from tabprep import ops
from tabprep.stats import vocab as V
from tabprep.workflow.reduction import SHARDS_ENV, vocab_shards
from tests.conftest import GPU_SKIP, assert_same_tree, is_cpu

distributed = pytest.importorskip("distributed")


# -- the reference: plain pandas ----------------------------------------------------------------
def _ref_vocab(values: pd.Series, freq_threshold: int = 0, keep: int | None = None):
    """(values, counts) of the non-null values: descending count, ties by ascending value, counts
    below ``freq_threshold`` dropped, the first ``keep`` kept (None: all)."""
    counts = values.dropna().value_counts()
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    items = [(v, n) for v, n in items if n >= max(freq_threshold, 1)]
    if keep is not None:
        items = items[:keep]
    return [v for v, _ in items], [int(n) for _, n in items]


def _sharded_finalize(workers, shards, freq_threshold, keep):
    """What the cluster computes, in one process: each worker's counts cut into ``shards`` parts,
    part j of every worker merged and reduced, the reduced parts merged and finalized."""
    cuts = [V.split_counts(V.combine_counts([V.partial_counts([p]) for p in parts]), shards) for parts in workers]
    reduced = [V.reduce_counts(V.combine_counts([c[j] for c in cuts]), freq_threshold, keep) for j in range(shards)]
    merged = V.combine_counts(reduced)
    values, freqs = V.finalize_vocab(merged, freq_threshold, keep or 0)
    if keep == 0:
        values, freqs = values[:0], freqs[:0]
    return list(values), list(freqs), merged.nulls


@settings(max_examples=60, deadline=None)
@given(data=st.data(), kind=st.sampled_from(["int", "uint64", "str", "float", "datetime"]), shards=st.integers(1, 6),
       workers=st.integers(1, 4), freq_threshold=st.integers(0, 3), keep=st.one_of(st.none(), st.integers(0, 6)))
def test_sharded_finalize_equals_the_whole_one(data, kind, shards, workers, freq_threshold, keep):
    """Property: for any grouping of the partitions into workers and any number of parts, the
    partitioned finalize gives pandas' vocabulary (values, counts, order, nulls), with ties in the
    counts, nulls, empty partitions and an all-null partition; ints (the sorted layout; uint64 values
    on both sides of 2**63, ordered as unsigned values), strings, floats with +-inf and -0.0,
    datetimes (the series layout)."""
    cell = st.one_of(st.none(), st.integers(-3, 12))
    parts = data.draw(st.lists(st.lists(cell, max_size=25), min_size=1, max_size=6))
    floats = {-3: -np.inf, 12: np.inf, 0: -0.0}
    if kind == "str":
        series = [pd.Series([None if v is None else f"s{v}" for v in p], dtype=object) for p in parts]
    elif kind == "float":
        series = [pd.Series([np.nan if v is None else floats.get(v, v / 4) for v in p], dtype="float64") for p in parts]
    elif kind == "datetime":
        series = [pd.Series(pd.to_datetime([None if v is None else 1_600_000_000 + v * 3600 for v in p], unit="s"))
                  for p in parts]
    elif kind == "uint64":
        series = [pd.Series([None if v is None else 2 ** 63 + v for v in p], dtype="UInt64") for p in parts]
    else:
        series = [pd.Series(p, dtype="Int64") for p in parts]
    owner = data.draw(st.lists(st.integers(0, workers - 1), min_size=len(parts), max_size=len(parts)))
    grouped = [[s for s, o in zip(series, owner) if o == w] for w in range(workers)]
    grouped = [g for g in grouped if g]
    values, freqs, nulls = _sharded_finalize(grouped, shards, freq_threshold, keep)
    if kind == "uint64":   # the vocabulary holds the values' int64 bits (what the lookups compare)
        values = np.array(values, dtype="int64").view("uint64").tolist()
    whole = pd.concat(series, ignore_index=True)
    ref_values, ref_freqs = _ref_vocab(whole, freq_threshold, keep)
    assert values == ref_values and freqs == ref_freqs
    assert nulls == int(whole.isna().sum())


def _backend_array(backend_name, a):
    if is_cpu(backend_name):
        return a
    import cupy

    return cupy.asarray(a)


def test_parts_follow_murmur3_of_the_value_on_the_backend(backend):
    """A value's part is ``murmur3(value's int64 bytes) % parts`` (mmh3 here), the same on both
    backends, so every worker sends it to the same part; each part keeps its values ascending
    with their counts; nulls go with part 0. Strings (the series layout) hash their UTF-8 bytes."""
    keys = np.array([-(1 << 62), -7, 0, 3, 4, 5, 1 << 40, (1 << 63) - 1], dtype="int64")
    counts = np.arange(1, len(keys) + 1, dtype="int64")
    c = V.Counts(_backend_array(backend, counts), 5, _backend_array(backend, keys))
    parts = V.split_counts(c, 3)
    want = [mmh3.hash(struct.pack("<q", int(k)), 0, signed=False) % 3 for k in keys]
    for j, part in enumerate(parts):
        got_keys, got_counts = B.to_host(part.keys), B.to_host(part.counts)
        np.testing.assert_array_equal(got_keys, keys[[w == j for w in want]])
        np.testing.assert_array_equal(got_counts, counts[[w == j for w in want]])
        assert part.nulls == (5 if j == 0 else 0)
    words = ["apple", "héllo", "", "zz", "fig"]
    if is_cpu(backend):
        series = pd.Series([1, 2, 3, 4, 5], index=pd.Index(words))
    else:
        import cudf

        series = cudf.Series([1, 2, 3, 4, 5], index=cudf.Index(words))
    parts = V.split_counts(V.Counts(series, 2), 4)
    want = {w: mmh3.hash(w.encode(), 0, signed=False) % 4 for w in words}
    for j, part in enumerate(parts):
        got = B.to_host(part.counts)
        assert sorted(got.index) == sorted(w for w in words if want[w] == j)
        assert all(got[w] == series_value for w, series_value in zip(words, [1, 2, 3, 4, 5]) if want[w] == j)
        assert part.nulls == (2 if j == 0 else 0)


def test_the_number_of_parts_comes_from_the_environment(monkeypatch):
    """Off by default and without two workers; TABPREP_VOCAB_SHARDS=auto gives one part per worker,
    a number that many, 0 turns it off; a bad value is refused naming the variable."""
    monkeypatch.delenv(SHARDS_ENV, raising=False)
    assert [vocab_shards(w) for w in (0, 1, 2, 4)] == [0, 0, 0, 0]
    monkeypatch.setenv(SHARDS_ENV, "auto")
    assert [vocab_shards(w) for w in (0, 1, 2, 4)] == [0, 0, 2, 4]
    monkeypatch.setenv(SHARDS_ENV, "0")
    assert vocab_shards(4) == 0
    monkeypatch.setenv(SHARDS_ENV, "5")
    assert vocab_shards(2) == 5 and vocab_shards(1) == 0
    for bad in ("many", "-2", "1000"):
        monkeypatch.setenv(SHARDS_ENV, bad)
        with pytest.raises(ValueError, match=SHARDS_ENV):
            vocab_shards(2)


def test_a_part_keeps_its_values_above_the_threshold_and_its_first_ones(backend):
    """A reduced part (sorted layout, on its device): the values counted at least freq_threshold
    times and, with max_size, the first max_size of them by descending count, ties by ascending
    value, still ascending; pandas computes the reference."""
    rng = np.random.default_rng(3)
    keys = np.unique(rng.integers(-50, 5_000, 800)).astype("int64")
    counts = rng.integers(1, 6, len(keys)).astype("int64")  # many ties
    for threshold, keep in [(0, None), (3, None), (0, 17), (2, 40), (0, 0), (9, 5)]:
        c = V.Counts(_backend_array(backend, counts), 4, _backend_array(backend, keys))
        got = V.reduce_counts(c, threshold, keep)
        ref = pd.Series(counts, index=keys)
        ref = ref[ref >= max(threshold, 1)]
        ref = ref.reset_index().sort_values([0, "index"], ascending=[False, True]).head(len(ref) if keep is None else keep)
        ref = ref.sort_values("index")
        np.testing.assert_array_equal(B.to_host(got.keys), ref["index"].to_numpy())
        np.testing.assert_array_equal(B.to_host(got.counts), ref[0].to_numpy())
        assert got.nulls == 4


# -- on a cluster -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """6 parquet files (one empty): a high-cardinality int column with ties, strings with nulls
    (one file of only nulls), a column of nulls only, a low-cardinality int pair for a combo."""
    root = tmp_path_factory.mktemp("shards")
    rng = np.random.default_rng(7)
    frames = []
    for i, n in enumerate([9_000, 7_000, 0, 8_000, 15, 6_000]):
        big = pd.Series(rng.integers(0, 20_000, n), dtype="Int64")
        big[rng.random(n) < 0.05] = None
        word = pd.Series([f"w{v}" for v in rng.integers(0, 900, n)], dtype=object)
        word[rng.random(n) < 0.1] = None
        if i == 4:
            word[:] = None
        df = pd.DataFrame({"big": big, "word": word, "void": pd.Series([None] * n, dtype="Int64"),
                           "a": rng.integers(0, 7, n), "b": rng.integers(0, 5, n)})
        df.to_parquet(root / f"part-{i}.parquet", index=False)
        frames.append(df)
    return root, pd.concat(frames, ignore_index=True)


def _workflow() -> tp.Workflow:
    plain = ["big", "word", "void"] >> ops.Categorify()
    limited = (["big", "word"] >> ops.Rename(postfix="_t")
               >> ops.Categorify(freq_threshold={"big_t": 3, "word_t": 20}, max_size={"big_t": 500}))
    capped = ["big"] >> ops.Rename(postfix="_m") >> ops.Categorify(max_size=40, num_buckets=3)
    combo = [["a", "b"]] >> ops.Categorify(encode_type="combo")
    given = ["word"] >> ops.Rename(postfix="_v") >> ops.Categorify(vocabs={"word_v": ["w5", "w1", "w77"]})
    with warnings.catch_warnings():  # (single_table's note on NVTabular's ids: not this test's subject)
        warnings.simplefilter("ignore", tp.NVTabularDifferenceWarning)
        shared = ["a", "big"] >> ops.Rename(postfix="_s") >> ops.Categorify(single_table=True, freq_threshold=2)
    return tp.Workflow(plain + limited + capped + combo + given + shared)


@pytest.fixture(scope="module")
def fitted_here(files):
    """The in-process fit on the CPU (local scheduler: the whole-counts finalize) and its output (a
    pandas frame: on a GPU machine a Dataset would default to cuDF)."""
    root, _ = files
    ds = tp.Dataset(str(root), cpu=True)
    wf = _workflow().fit(ds)
    return wf, wf.transform(ds).to_ddf().compute()


@pytest.fixture(scope="module", params=[(2, "auto"), (4, "3")], ids=lambda p: f"{p[0]}w-parts{p[1]}")
def cluster_fit(request, files):
    """The fit on a cluster of 2 worker processes (one part per worker) and of 4 (3 parts: not
    one per worker), its output, and the names of the tasks it ran. (A cluster of one worker
    finalizes whole, as the in-process fit: tests/test_distributed.py.)"""
    workers, parts = request.param
    root, _ = files
    mp = pytest.MonkeyPatch()
    mp.setenv(SHARDS_ENV, parts)
    try:
        with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                      dashboard_address=None, silence_logs=logging.ERROR) as cluster:
            with distributed.Client(cluster) as client:
                ds = tp.Dataset(str(root))
                wf = _workflow()
                with distributed.get_task_stream(client) as ts:
                    wf.fit(ds)
                names = {key_split(t["key"]) for t in ts.data}
                out = wf.transform(ds).to_ddf().compute()
    finally:
        mp.undo()
    return workers, wf, out, names


def test_cluster_fit_equals_the_in_process_fit_and_pandas(cluster_fit, fitted_here, files, tmp_path):
    """Fitted on 2 and 4 worker processes with the partitioned finalize (plain, freq_threshold,
    max_size with num_buckets, combo, given vocabs, single_table), the
    vocabularies (values, counts, nulls), the ids of the transformed data, the embedding sizes
    and the saved workflow's files equal the in-process fit's; the vocabularies equal pandas'
    value counts with freq_threshold and max_size applied (ties by ascending value, a column of
    nulls only, an empty file, a file of nulls only)."""
    workers, wf, out, names = cluster_fit
    ref, ref_out = fitted_here
    _, frame = files
    assert "reduce_shard" in names, names  # the parts were reduced on workers
    for got, want in zip([n.op for n in wf.stat_nodes], [n.op for n in ref.stat_nodes]):
        assert list(got.stats_) == list(want.stats_)
        for key in got.stats_:
            g, w = got.stats_[key], want.stats_[key]
            np.testing.assert_array_equal(g["values"], w["values"])
            np.testing.assert_array_equal(g["freqs"], w["freqs"])
            assert g["values"].dtype == w["values"].dtype, key
            assert g["nulls"] == w["nulls"], key
    stats = {key: st for n in wf.stat_nodes for key, st in n.op.stats_.items()}
    for key, column, threshold, keep in [("big", "big", 0, None), ("word", "word", 0, None), ("void", "void", 0, None),
                                         ("big_t", "big", 3, 500 - 3), ("word_t", "word", 20, None),
                                         ("big_m", "big", 0, 40 - 2 - 3)]:
        values, freqs = _ref_vocab(frame[column], threshold, keep)
        assert list(stats[key]["values"]) == values, key
        assert list(stats[key]["freqs"]) == freqs, key
        assert stats[key]["nulls"] == int(frame[column].isna().sum()), key
    assert len(stats["void"]["values"]) == 0
    pd.testing.assert_frame_equal(out.reset_index(drop=True), ref_out.reset_index(drop=True))
    assert ops.get_embedding_sizes(wf) == ops.get_embedding_sizes(ref)
    wf.save(str(tmp_path / "cluster"))
    ref.save(str(tmp_path / "local"))
    assert_same_tree(filecmp.dircmp(tmp_path / "cluster", tmp_path / "local"))


@pytest.mark.gpu
@GPU_SKIP
def test_gpu_cluster_fit_equals_the_cpu_fit_and_pandas(files, fitted_here, monkeypatch):
    """On cuDF workers (2 processes sharing GPU 0: the parts are cut by libcudf's murmur3 and
    compacted on the device), the partitioned finalize gives the CPU in-process fit's
    vocabularies, ids and embedding sizes, and pandas' value counts."""
    root, frame = files
    ref, ref_out = fitted_here
    monkeypatch.setenv(SHARDS_ENV, "auto")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")  # (inherited by the worker processes)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=logging.ERROR) as cluster, distributed.Client(cluster) as client:
        ds = tp.Dataset(str(root), cpu=False)
        wf = _workflow()
        with distributed.get_task_stream(client) as ts:
            wf.fit(ds)
        out = wf.transform(ds).to_ddf().compute()
    assert "reduce_shard" in {key_split(t["key"]) for t in ts.data}
    for got, want in zip([n.op for n in wf.stat_nodes], [n.op for n in ref.stat_nodes]):
        for key in want.stats_:
            np.testing.assert_array_equal(B.to_host(got.stats_[key]["values"]), want.stats_[key]["values"])
            np.testing.assert_array_equal(B.to_host(got.stats_[key]["freqs"]), want.stats_[key]["freqs"])
            assert got.stats_[key]["nulls"] == want.stats_[key]["nulls"], key
    values, freqs = _ref_vocab(frame["big"], 3, 497)
    stats = {key: st for n in wf.stat_nodes for key, st in n.op.stats_.items()}
    assert list(B.to_host(stats["big_t"]["values"])) == values
    assert list(B.to_host(stats["big_t"]["freqs"])) == freqs
    host = out.to_pandas() if hasattr(out, "to_pandas") else out
    pd.testing.assert_frame_equal(host.reset_index(drop=True), ref_out.reset_index(drop=True), check_dtype=False)
    assert ops.get_embedding_sizes(wf) == ops.get_embedding_sizes(ref)


def test_each_part_is_cut_where_its_counts_are_and_reduced_round_robin(monkeypatch):
    """The fit graph for 3 workers with 3 parts: every cut takes only its own worker's pieces, and
    its parts (getitem) stay on that worker; the reduce tasks of a final task take one part from
    each worker and are spread over the 3 workers; a final task takes the reduced parts and one
    piece per worker of the ops not cut (Normalize), never a worker's whole counts."""
    import functools

    from dask.core import get_dependencies
    from dask.highlevelgraph import HighLevelGraph

    from tabprep.workflow.reduction import fit_graph

    class FakeClient:
        def nthreads(self):
            return {"tcp://w0": 1, "tcp://w1": 1, "tcp://w2": 1}

    class Handle:  # what _graph_handle returns with a client: a scattered future with .client
        client = FakeClient()

    monkeypatch.setenv(SHARDS_ENV, "3")
    cols = [f"c{i}" for i in range(10)]
    wf = tp.Workflow((cols >> ops.Categorify()) + (["x"] >> ops.Normalize()))
    wf._bind(tp.Dataset(pd.DataFrame({**{c: [1, 2] for c in cols}, "x": [0.5, 1.0]})).schema, None)
    nodes = {wf.node_id(n): n for n in wf.stat_nodes}
    finals, _ = fit_graph(Handle(), nodes, [functools.partial(_never, i) for i in range(40)], None)
    hlg = dict(HighLevelGraph.merge(*[f.__dask_graph__() for f in finals]))
    where = {}
    for f in finals:
        for layer in f.__dask_graph__().layers.values():
            for key in layer:
                where[key] = tuple((layer.annotations or {}).get("workers") or ())
    deps = {k: set(get_dependencies(hlg, k)) for k in hlg}
    names = {k: key_split(k) for k in hlg}
    cuts = [k for k in hlg if names[k] == "cut_shards"]
    assert len(cuts) == 8 * 3  # one per final task and worker
    for k in cuts:
        assert {where[d] for d in deps[k]} == {where[k]}, k
    reduces = [k for k in hlg if names[k] == "reduce_shard"]
    assert len(reduces) == 8 * 3
    assert {where[k] for k in reduces} == {("tcp://w0",), ("tcp://w1",), ("tcp://w2",)}
    for k in reduces:
        parts = deps[k]
        assert len(parts) == 3 and all(names[p] == "getitem" for p in parts), k
        for p in parts:
            (cut,) = deps[p]
            assert names[cut] == "cut_shards" and where[p] == where[cut]  # the part is taken where it was cut
        assert len({where[p] for p in parts}) == 3
    for f in finals:
        inputs = deps[f.key]
        assert sum(names[d] == "reduce_shard" for d in inputs) == 3
        rest = [d for d in inputs if names[d] != "reduce_shard"]
        assert all(names[d] == "getitem" and names[next(iter(deps[d]))] == "cut_shards" for d in rest)
        assert len(rest) in (0, 3)


def _never(i: int) -> None:
    raise AssertionError("the graph test computes nothing")


def test_a_subclass_with_its_own_finalize_is_finalized_whole():
    """A user's Categorify subclass overriding fit_finalize (which may look at all counts at once)
    is not cut by hash; one declaring keyed_statistics, fit_split and fit_reduce again is;
    Normalize (keyed, no parts) never is."""
    from tabprep.workflow.reduction import splits_by_hash

    class OwnFinalize(ops.Categorify):
        def fit_finalize(self, columns, combined):
            super().fit_finalize(columns, combined)

    class OwnAll(OwnFinalize):
        keyed_statistics = True  # (claimed again below its own fit_finalize: see splits_by_key)

        def fit_split(self, combined, shards):
            return super().fit_split(combined, shards)

        def fit_reduce(self, combined):
            return super().fit_reduce(combined)

    assert splits_by_hash(ops.Categorify())
    assert not splits_by_hash(OwnFinalize())
    assert splits_by_hash(OwnAll())
    assert not splits_by_hash(ops.Normalize())
