"""The fit's statistics exchange on a dask.distributed cluster (issue #34): the partials and the
merged pieces that move between workers are sized as what they hold (dask's ``sizeof``, which the
scheduler's placement and work stealing, the workers' transfer batching and the off-event-loop
serialization of large messages all read), each combine tree starts from one worker's partials,
and a 3-worker fit gives the statistics and saved files of an in-process fit.
"""
from __future__ import annotations

import filecmp
import functools
import logging
import os

import numpy as np
import pandas as pd
import pytest
from dask.sizeof import sizeof
from hypothesis import given, settings
from hypothesis import strategies as st

import tabprep as tp
import tabprep.workflow.tasks  # noqa: F401 - what a worker imports to run a fit task
from tabprep import ops
from tabprep.stats import vocab as V
from tabprep.stats.moments import MinMax, Moments, Sketch
from tabprep.stats.sketches import HLL, Frequent
from tests.conftest import assert_same_tree, is_cpu

distributed = pytest.importorskip("distributed")


def _series(backend_name: str, values) -> object:
    if is_cpu(backend_name):
        return pd.Series(values)
    import cudf

    return cudf.Series(values)


def test_statistics_partials_report_their_bytes_to_dask(backend):
    """A Categorify partial over 200k distinct ints holds two 1.6 MB arrays (values, counts): dask
    sizes it (and a combine piece, a dict of them) at least that; before, ``sizeof`` saw the
    object's 56-byte shell, so the workers serialized multi-MB pieces on their event loop and the
    scheduler took moving them for free. Strings (the series layout) likewise; GPU partials are
    sized as device arrays (dask's own cupy/cuDF sizes)."""
    ints = V.partial_counts([_series(backend, np.arange(200_000, dtype="int64") % 200_000)])
    assert ints.sorted_layout and len(ints) == 200_000
    floor = 2 * 200_000 * 8  # int64 values + int64 counts, computed here
    assert sizeof(ints) >= floor
    piece = {("node-1", 0, 8): {"c0": ints, "c1": ints}, ("node-2", 0, 1): {"x": (Moments(3, 1.0, 2.0), MinMax(0.0, 1.0))}}
    assert sizeof(piece) >= 2 * floor
    words = _series(backend, [f"w{i:06d}" for i in range(50_000)] + [None])
    strings = V.partial_counts([words])
    assert not strings.sorted_layout and strings.nulls == 1
    assert sizeof(strings) >= 50_000 * 8  # at least the counts (int64), besides the strings


def test_frames_and_series_of_either_backend_report_their_bytes_to_dask(backend):
    """TargetEncoding's and JoinGroupby's partials are small frames indexed by category: dask sizes
    them (and series) as the bytes they hold on their backend, also on a GPU worker that never
    imported dask_cudf (where cuDF's own dask sizes are registered)."""
    n = 100_000
    s = _series(backend, np.arange(n, dtype="int64"))
    assert sizeof(s) >= 8 * n
    frame = s.to_frame("sum")
    frame["count"] = s
    assert sizeof(frame) >= 16 * n
    assert sizeof({"partial": frame}) >= 16 * n


def test_sketches_report_their_bytes_to_dask():
    """The other mergeable statistics holding arrays (FillMedian's quantile sketch, the profile's
    HyperLogLog registers and frequent-value counters) are sized as their arrays."""
    sketch = Sketch(np.arange(100_000, dtype="float64"), np.ones(100_000))
    assert sizeof(sketch) >= 1_600_000
    hll = HLL(np.zeros(1 << 14, dtype=np.uint8))
    assert sizeof(hll) >= 1 << 14
    freq = Frequent(np.arange(50_000), np.ones(50_000, dtype="int64"), 50_000)
    assert sizeof(freq) >= 800_000


def test_packed_integer_arrays_travel_narrow_and_come_back_int64():
    """The client receives a vocabulary's int64 values and counts in the narrowest integer dtype
    that holds them (a 10M-row Criteo fit sent 56 MB of int64s to the client; counts are mostly
    small numbers), and unpacks them as the int64 arrays the worker had: equal values, int64,
    writeable. Arrays whose values need 64 bits, other dtypes, short arrays and object arrays
    come back as they were."""
    from tabprep.workflow.tasks import pack_state, unpack_state

    rng = np.random.default_rng(0)
    n = 200_000
    state = {"stats_": {
        "a": {"values": rng.integers(0, 400_000, n), "freqs": rng.integers(1, 200, n), "nulls": 3},
        "neg": {"values": rng.integers(-30_000, 30_000, n), "freqs": np.full(n, 70_000, dtype="int64"), "nulls": 0},
        "wide": {"values": np.array([np.iinfo("int64").min, 0, np.iinfo("int64").max] * (n // 3)),
                 "freqs": np.ones(3 * (n // 3), dtype="int64"), "nulls": 0},
        "short": {"values": np.array([5, 1 << 40]), "freqs": np.array([2, 1]), "nulls": 0},
        "words": {"values": np.array(["x", "y"], dtype=object), "freqs": np.array([1, 1]), "nulls": 1},
        "f": np.linspace(0, 1, n),
        "u": np.arange(n, dtype="uint64"),
        "empty": np.array([], dtype="int64"),
    }}
    frames = pack_state(state)
    sent = sum(f.nbytes for f in frames)
    int64_bytes = 8 * (4 * n + 2 * 3 * (n // 3) + n)  # a, neg (values + freqs), wide, u: as int64
    assert sent < 8 * n + int64_bytes * 0.75, sent  # the float array as it is, the ints narrowed
    got = unpack_state([f.copy() for f in frames])["stats_"]
    for key in ("a", "neg", "wide", "short", "words"):
        for name in ("values", "freqs"):
            want = state["stats_"][key][name]
            have = got[key][name]
            assert have.dtype == want.dtype, (key, name, have.dtype)
            np.testing.assert_array_equal(have, want)
            assert have.flags.writeable
        assert got[key]["nulls"] == state["stats_"][key]["nulls"]
    for name in ("f", "u", "empty"):
        assert got[name].dtype == state["stats_"][name].dtype
        np.testing.assert_array_equal(got[name], state["stats_"][name])


def test_counts_travel_between_workers_narrowed(backend):
    """A combined piece crosses to the final task's worker pickled: its int64 counts (mostly small
    numbers) and values travel in the narrowest integer dtype holding them, and arrive as the
    int64 arrays they were (values, dtype, backend); the series layout (strings) as it was."""
    import pickle

    n = 300_000
    keys = np.arange(n, dtype="int64") * 7 - 1_000_000  # fit int32
    ints = V.partial_counts([_series(backend, np.concatenate([keys, keys[: n // 2]]))])
    assert ints.sorted_layout and str(ints.keys.dtype) == "int64" and str(ints.counts.dtype) == "int64"
    data = pickle.dumps(ints, protocol=5)
    assert len(data) < 0.5 * 16 * n, len(data)  # int32 values + uint8 counts, against 16 bytes each
    back = pickle.loads(data)
    assert type(back.keys) is type(ints.keys) and back.keys.dtype == ints.keys.dtype
    assert back.counts.dtype == ints.counts.dtype and back.nulls == ints.nulls
    to_np = (lambda a: a) if is_cpu(backend) else (lambda a: a.get())
    np.testing.assert_array_equal(to_np(back.keys), np.sort(keys))
    np.testing.assert_array_equal(to_np(back.counts), np.where(np.sort(keys) < keys[n // 2], 2, 1))
    wide = V.Counts(np.array([1] * 5000 + [1 << 40], dtype="int64"), 0, np.arange(5001, dtype="int64"))
    back = pickle.loads(pickle.dumps(wide, protocol=5))
    assert back.counts.dtype == np.int64 and int(back.counts[-1]) == 1 << 40
    words = V.partial_counts([_series(backend, ["a", "b", "a", None])])
    back = pickle.loads(pickle.dumps(words, protocol=5))
    assert not back.sorted_layout and back.nulls == 1 and int(back.counts.sum()) == 3


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1), max_size=40),
       unsigned=st.booleans())
def test_narrowed_integers_round_trip_exactly(values, unsigned):
    """Any 64-bit integer array narrowed to travel comes back with its values and dtype, and is
    narrowed only to a dtype holding every value (checked against numpy's own conversion)."""
    dtype = "uint64" if unsigned else "int64"
    vals = [v % (1 << 64) for v in values] if unsigned else values
    arr = np.array(vals, dtype=dtype)
    old = V.NARROW_MIN
    V.NARROW_MIN = 1  # (the property holds at any length; the default skips short arrays)
    try:
        small, back_dtype = V.narrow_ints(arr)
    finally:
        V.NARROW_MIN = old
    if back_dtype is not None:
        assert small.dtype.itemsize < 8
        np.testing.assert_array_equal(small.astype(object), arr.astype(object))  # exact, as Python ints
    back = V.widen_ints(small, back_dtype)
    assert back.dtype == arr.dtype
    np.testing.assert_array_equal(back, arr)


@pytest.fixture(scope="module")
def cluster3():
    with distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=logging.ERROR) as c:
        yield c


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """7 parquet files (one empty): a high-cardinality int column (about 30k distinct values in each
    file), strings with nulls (a file of only nulls), floats with NaN and +-inf."""
    root = tmp_path_factory.mktemp("exchange")
    rng = np.random.default_rng(34)
    frames = []
    for i, n in enumerate([40_000, 35_000, 0, 30_000, 38_000, 12, 33_000]):
        big = rng.integers(0, 400_000, n)
        word = pd.Series([f"w{v}" for v in rng.integers(0, 3_000, n)], dtype=object)
        word[rng.random(n) < 0.1] = None
        if i == 5:
            word[:] = None
        # rounded: FillMedian's sketch stays exact (<= 65536 distinct values); a compressed sketch
        # depends on the merge tree's shape (reported on issue #34)
        x = np.round(rng.normal(2.0, 3.0, n), 2)
        x[rng.random(n) < 0.05] = np.nan
        if n > 10:
            x[:2] = [np.inf, -np.inf]
        df = pd.DataFrame({"big": big.astype("int64"), "word": word, "x": x,
                           "y": rng.integers(-5, 5, n).astype("int32")})
        df.to_parquet(root / f"part-{i}.parquet", index=False)
        frames.append(df)
    return root, pd.concat(frames, ignore_index=True)


def _workflow() -> tp.Workflow:
    cats = ["big", "word"] >> ops.Categorify()
    # two fit passes: Normalize's moments are of the values FillMedian's median filled
    conts = ["x"] >> ops.FillMedian() >> ops.Clip(min_value=-100.0, max_value=100.0) >> ops.Normalize()
    minmax = ["y"] >> ops.NormalizeMinMax()
    return tp.Workflow(cats + conts + minmax)


def _moved(log: dict) -> tuple:
    """(names of the results that moved between workers, their bytes as the workers sized them)."""
    from dask.utils import key_split

    names, total = set(), 0
    for entries in log.values():
        for e in entries:
            for key, nbytes in e["keys"].items():
                names.add(key_split(key))
                total += nbytes or 0
    return names, total


def _transfer_log(dask_worker) -> list:
    return [{"keys": dict(e["keys"])} for e in dask_worker.transfer_incoming_log]


def _clear(dask_worker) -> None:
    dask_worker.transfer_incoming_log.clear()


def test_three_worker_fit_equals_the_in_process_fit(cluster3, files, tmp_path):
    """Fitted on 3 worker processes, the statistics (vocabularies with their counts and null
    counts, moments, extrema, medians) and the saved workflow's files equal an in-process fit's,
    on data with nulls, an empty and an all-null partition, inf and a high-cardinality column;
    the vocabularies also equal plain pandas value counts. The bytes the workers logged for the
    pieces moved to the final tasks are at least what the high-cardinality vocabulary's pieces
    hold (before, dask sized them at a few hundred bytes in all)."""
    root, frame = files
    ref = _workflow().fit(tp.Dataset(str(root)))
    wf = _workflow()
    with distributed.Client(cluster3) as client:
        client.run(_clear)
        wf.fit(tp.Dataset(str(root)))
        log = client.run(_transfer_log)
    for got, want in zip([n.op for n in wf.stat_nodes], [n.op for n in ref.stat_nodes]):
        assert type(got) is type(want)
        if isinstance(got, ops.Categorify):
            assert list(got.stats_) == list(want.stats_) == ["big", "word"]
            for key in got.stats_:
                g, w = got.stats_[key], want.stats_[key]
                np.testing.assert_array_equal(g["values"], w["values"])
                np.testing.assert_array_equal(g["freqs"], w["freqs"])
                assert g["nulls"] == w["nulls"]
                counts = frame[key].value_counts()
                ref_vocab = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
                np.testing.assert_array_equal(g["values"], [v for v, _ in ref_vocab])
                np.testing.assert_array_equal(g["freqs"], [n for _, n in ref_vocab])
                assert g["nulls"] == int(frame[key].isna().sum())
        else:
            assert got.stats_ == want.stats_, type(got).__name__
    minmax = [n.op for n in wf.stat_nodes if isinstance(n.op, ops.NormalizeMinMax)][0]
    assert minmax.stats_["y"]["min"] == frame["y"].min() and minmax.stats_["y"]["max"] == frame["y"].max()
    wf.save(str(tmp_path / "cluster"))
    ref.save(str(tmp_path / "local"))
    cmp = filecmp.dircmp(tmp_path / "cluster", tmp_path / "local")
    assert_same_tree(cmp)
    names, nbytes = _moved(log)
    high_card = (frame["big"].nunique() // 3) * 16  # one worker's share of one vocabulary, int64 values + counts
    assert nbytes >= high_card, (names, nbytes)


def test_each_combine_tree_starts_from_one_workers_partials():
    """The fit graph for 3 workers: every first-level combine task takes only partials placed on
    its own worker, every merge only pieces of its own worker, and each final task takes at
    most one piece per group from each worker (the leaves of the tree are local)."""
    from dask.utils import key_split

    from tabprep.workflow.reduction import fit_graph

    class FakeClient:
        def nthreads(self):
            return {"tcp://w0": 1, "tcp://w1": 1, "tcp://w2": 1}

    class Handle:  # what _graph_handle returns with a client: a scattered future with .client
        client = FakeClient()

    cols = [f"c{i}" for i in range(10)]
    wf = tp.Workflow((cols >> ops.Categorify()) + (["x"] >> ops.Normalize()))
    wf._bind(tp.Dataset(pd.DataFrame({**{c: [1, 2] for c in cols}, "x": [0.5, 1.0]})).schema, None)
    nodes = {wf.node_id(n): n for n in wf.stat_nodes}
    parts = [functools.partial(_reader, i) for i in range(40)]  # 40 partition readers (never called)
    finals, packed = fit_graph(Handle(), nodes, parts, None)
    assert packed
    from dask.highlevelgraph import HighLevelGraph

    hlg = dict(HighLevelGraph.merge(*[f.__dask_graph__() for f in finals]))
    annotations = {}
    for f in finals:
        for layer in f.__dask_graph__().layers.values():
            for key in layer:
                annotations[key] = (layer.annotations or {}).get("workers")
    deps = {k: set(v) for k, v in _dependencies(hlg).items()}
    combines = [k for k in hlg if key_split(k) in ("combine_group", "combine_pieces")]
    assert combines
    for k in combines:
        inputs = [d for d in deps[k] if key_split(d) in ("fit_partition", "combine_group", "combine_pieces")]
        assert inputs, k
        assert {tuple(annotations[d]) for d in inputs} == {tuple(annotations[k])}, k
    for k in (f.key for f in finals):
        inputs = list(deps[k])
        by_worker = {}
        for d in inputs:
            w = tuple(annotations[d])
            by_worker[w] = by_worker.get(w, 0) + 1
        assert set(by_worker) == {("tcp://w0",), ("tcp://w1",), ("tcp://w2",)}, by_worker
        assert max(by_worker.values()) <= 8 // 3, by_worker


def _reader(i: int) -> None:
    raise AssertionError("the graph test computes nothing")


def _dependencies(dsk) -> dict:
    from dask.core import get_dependencies

    return {k: get_dependencies(dsk, k) for k in dsk}
