"""tabprep.backend.reductions (per-partition finite moments, extrema, integer counts) on pandas and
cuDF, against plain numpy references written here: nulls, NaN, +-inf, bool, narrow ints, empty."""
import numpy as np
import pandas as pd
import pytest

from tabprep import backend as B

from conftest import GPU_SKIP

FLOATS = [
    pd.Series([1.5, np.nan, np.inf, -2.0, None, -np.inf, 7.25], dtype="float64"),
    pd.Series([1, 2, None, 4], dtype="Int32"),
    pd.Series(np.arange(10, dtype="int16")),
    pd.Series([np.inf, -np.inf, np.nan], dtype="float32"),
    pd.Series([], dtype="float64"),
    pd.Series([True, False, True], dtype="bool"),
]
INTS = [
    pd.Series([3, 1, 3, None, 7, 1, 3], dtype="Int64"),
    pd.Series([5, -2, 5, 0], dtype="int32"),
    pd.Series([True, False, True, True]),
    pd.Series([], dtype="int64"),
    pd.Series([None, None], dtype="Int16"),
]


def _on(series, backend_name):
    if backend_name == "gpu":
        import cudf

        return cudf.from_pandas(series)
    return series


def _finite_ref(series):
    x = np.array([np.nan if v is pd.NA or v is None else float(v) for v in series.tolist()], dtype=np.float64)
    return x[np.isfinite(x)]


@pytest.mark.parametrize("i", range(len(FLOATS)))
def test_finite_moments_and_minmax(backend, i):
    s = FLOATS[i]
    x = _finite_ref(s)
    n, mean, m2 = B.finite_moments(_on(s, backend))
    assert n == x.size
    if x.size:
        assert mean == pytest.approx(x.mean(), rel=1e-12)
        assert m2 == pytest.approx(((x - x.mean()) ** 2).sum(), rel=1e-9, abs=1e-12)
        assert B.finite_minmax(_on(s, backend)) == (x.min(), x.max())
    else:
        assert (mean, m2) == (0.0, 0.0)
        assert B.finite_minmax(_on(s, backend)) == (None, None)


@pytest.mark.parametrize("i", range(len(INTS)))
def test_int_counts(backend, i):
    s = INTS[i]
    vals = [int(v) for v in s.tolist() if v is not pd.NA and v is not None]
    ref = pd.Series(vals, dtype="int64").value_counts().sort_index()
    keys, counts, nulls = B.int_counts(_on(s, backend))
    assert nulls == len(s) - len(vals)
    assert B.to_numpy(keys).dtype == np.int64 and B.to_numpy(counts).dtype == np.int64
    assert B.to_numpy(keys).tolist() == ref.index.tolist()
    assert B.to_numpy(counts).tolist() == ref.tolist()


I64 = np.iinfo(np.int64)


@pytest.mark.parametrize("lo,span", [(0, 5), (-1000, 2_000), (7, 300_000), (-(1 << 31), (1 << 32) - 1),
                                     (0, 1 << 32), (I64.min, 10), (I64.max - 10, 10), (I64.min, None)])
@pytest.mark.parametrize("null_every", [0, 3])
def test_int_counts_every_value_span(backend, lo, span, null_every):
    # the CPU counts pick a dense bincount, a 32-bit sort or a 64-bit sort by the values' span:
    # each must give the counts a Counter gives, up to the int64 extremes
    from collections import Counter

    rng = np.random.default_rng(abs(lo) % 1000 + (span or 0) % 1000 + null_every)
    n = 5_000
    if span is None:  # the whole int64 range
        vals = rng.integers(I64.min, I64.max, n, dtype=np.int64, endpoint=True)
        vals[:3] = [I64.min, I64.max, 0]
    else:
        vals = lo + rng.integers(0, span, n, dtype=np.int64, endpoint=True)
        vals[:2] = [lo, lo + span]
        vals[2:1000] = vals[2:1000] % 7 + lo  # repeats
    s = pd.Series(pd.array(vals, dtype="Int64"))
    if null_every:
        s[::null_every] = None
    ref = Counter(int(v) for v in s.dropna())
    keys, counts, nulls = B.int_counts(_on(s, backend))
    assert nulls == int(s.isna().sum())
    assert B.to_numpy(keys).dtype == np.int64 and B.to_numpy(counts).dtype == np.int64
    assert B.to_numpy(keys).tolist() == sorted(ref)
    assert B.to_numpy(counts).tolist() == [ref[k] for k in sorted(ref)]


def _arr(values, backend):
    arr = np.asarray(values, dtype=np.int64)
    if backend == "gpu":
        import cupy

        return cupy.asarray(arr)
    return arr


# runs of sorted distinct int64 keys with their counts, as per-partition value counts give them
MERGES = [
    [([1, 5, 9], [2, 1, 4])],
    [([1, 5, 9], [2, 1, 4]), ([0, 5, 10], [1, 1, 1])],
    [([-(2 ** 62), -3, 2 ** 62], [1, 2, 3]), ([-3], [5]), ([7, 2 ** 62], [1, 1])],
    [([2, 4], [1, 1]), ([1, 3], [1, 1]), ([5, 6], [1, 1])],  # disjoint, interleaved
    [([4, 8], [3, 3]), ([4, 8], [3, 3]), ([4, 8], [3, 3])],  # identical runs
    [([3], [1]), ([], [])],  # an empty run among others
]


@pytest.mark.parametrize("i", range(len(MERGES)))
def test_merge_counts(backend, i):
    runs = MERGES[i]
    ref = (pd.concat([pd.Series(c, index=k, dtype="int64") for k, c in runs if k])
           .groupby(level=0).sum().sort_index())
    keys, counts = B.merge_counts([_arr(k, backend) for k, _ in runs], [_arr(c, backend) for _, c in runs])
    assert B.to_numpy(keys).dtype == np.int64 and B.to_numpy(counts).dtype == np.int64
    assert B.to_numpy(keys).tolist() == ref.index.tolist()
    assert B.to_numpy(counts).tolist() == ref.tolist()


def _order_ref(keys, counts, freq_threshold, max_size):
    pairs = [(k, c) for k, c in zip(keys, counts) if not freq_threshold or c >= freq_threshold]
    pairs.sort(key=lambda kc: (-kc[1], kc[0]))  # descending count, ties by ascending value
    if max_size:
        pairs = pairs[:max_size]
    return [k for k, _ in pairs], [c for _, c in pairs]


ORDERS = [
    ([1, 2, 3, 4], [1, 5, 5, 2], 0, 0),
    ([1, 2, 3, 4], [1, 5, 5, 2], 2, 0),  # counts below the threshold are dropped
    ([1, 2, 3, 4], [1, 5, 5, 2], 0, 2),  # at most 2 kept: the tie 2/3 keeps both
    ([1, 2, 3, 4], [1, 5, 5, 2], 0, 1),  # the tie is broken by the smaller value
    ([-5, 0, 7], [70000, 70000, 3], 0, 0),  # counts above 16 bits
    ([-5, 0, 7], [1, 1, 1], 9, 0),  # nothing reaches the threshold
    ([], [], 0, 0),
]


@pytest.mark.parametrize("i", range(len(ORDERS)))
def test_count_order(backend, i):
    keys, counts, threshold, max_size = ORDERS[i]
    values, freqs = B.count_order(_arr(keys, backend), _arr(counts, backend), threshold, max_size)
    assert isinstance(values, np.ndarray) and isinstance(freqs, np.ndarray)  # host arrays on both backends
    assert values.dtype == np.int64 and freqs.dtype == np.int64
    assert (values.tolist(), freqs.tolist()) == _order_ref(keys, counts, threshold, max_size)


@pytest.mark.parametrize("values", [[], [False], [True], [False, False, True], [False] * 1000 + [True], [False] * 1001])
def test_any_true(backend, values):
    arr = np.array(values, dtype=bool)
    if backend == "gpu":
        import cupy

        arr = cupy.asarray(arr)
    got = B.any_true(arr)
    assert type(got) is bool
    assert got == (True in values)


@pytest.mark.gpu
@GPU_SKIP
def test_gpu_warmup_compiles_every_task():
    """The warm-up pool runs every kernel group without error and sets READY."""
    from tabprep.backend import gpu_warmup

    failures = []
    for task, args in gpu_warmup._tasks():
        try:
            task(*args)
        except Exception as exc:  # noqa: BLE001 - collected and reported below
            failures.append(f"{task.__name__}{args}: {exc}")
    assert failures == []
    gpu_warmup.start()
    assert gpu_warmup.READY.wait(120)


_NO_COMPILE_SCRIPT = r"""
import json, sys, threading, time, traceback
import numpy as np, pandas as pd
import cupy.cuda.compiler as comp
sys.path.insert(0, sys.argv[1])
from conftest import make_dataset
import tabprep as tp
from tabprep import ops

phase = {"now": "import"}
sites = []
for name in ("_compile_module_with_cache", "compile_with_cache"):
    fn = getattr(comp, name, None)
    if fn is None:
        continue
    def wrapped(*a, _fn=fn, _name=name, **k):
        t = time.perf_counter()
        try:
            return _fn(*a, **k)
        finally:
            if time.perf_counter() - t > 0.02:  # a compile (a cache hit takes ~1 ms)
                where = [f"{fr.filename.split('/')[-1]}:{fr.lineno} {fr.name}" for fr in traceback.extract_stack()
                         if "tabprep" in fr.filename and "/tests/" not in fr.filename]
                sites.append([phase["now"], _name, where[-1:]])
    setattr(comp, name, wrapped)

rng = np.random.default_rng(0)
n = 3000
df = pd.DataFrame({
    "i": pd.array(rng.integers(0, 50, n), dtype="Int64"),
    "j": rng.integers(-5, 5, n).astype("int32"),
    "x": rng.normal(size=n),
    "k": rng.integers(0, 1000, n),
})
df.loc[::7, "i"] = None
df.loc[::11, "x"] = np.nan
df.loc[5, "x"] = np.inf
ds = make_dataset(df, "gpu", nparts=4)
wf = tp.Workflow((["i", "j"] >> ops.Categorify(freq_threshold=2))
                 + (["x", "k"] >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.Normalize()))
if sys.argv[2] == "fit":
    phase["now"] = "fit"
    wf.fit(ds)
    phase["now"] = "clip-transform"
    tp.Workflow(["x", "k"] >> ops.FillMissing() >> ops.Clip(min_value=0, max_value=3)).fit(ds).transform(ds).compute()
else:  # after the warm-up: a Criteo-like job on partitions large enough for multi-block kernels
    from tabprep.backend import gpu_warmup
    gpu_warmup.start()
    assert gpu_warmup.READY.wait(300)
    n = 600_000
    big = pd.DataFrame({"c": pd.array(rng.integers(0, 1 << 31, n), dtype="Int64"),
                        "d": rng.integers(0, 1 << 20, n).astype("int32"),
                        "i": pd.array(rng.integers(-3, 10_000, n), dtype="Int64"),
                        "f": rng.normal(size=n).astype("float32")})
    big.loc[::13, "c"] = None
    big.loc[::17, "i"] = None
    ds = make_dataset(big, "gpu", nparts=2, empties=False)
    fit_on = make_dataset(big.iloc[: n // 2], "gpu", nparts=1, empties=False)  # unseen ids in the second half
    job = tp.Workflow((["c", "d"] >> ops.Categorify())
                      + (["i"] >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize())
                      + (["f"] >> ops.LogOp() >> ops.Normalize()))
    phase["now"] = "job"
    job.fit(fit_on).transform(ds).compute()
print("SITES " + json.dumps(sites))
"""


@pytest.mark.gpu
@GPU_SKIP
def test_gpu_fit_compiles_no_cupy_kernel(tmp_path):
    """A fresh GPU worker (empty CuPy kernel cache, warm-up off) fits Categorify (nullable and
    narrow ints, a frequency threshold, 4 partitions merged), FillMissing, Clip and Normalize, and
    runs FillMissing >> Clip, without one NVRTC compile: these run on libcudf (cold start, #16)."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, CUPY_CACHE_DIR=str(tmp_path / "cupy-cache"), TABPREP_GPU_WARMUP="0")
    here = os.path.dirname(os.path.abspath(__file__))
    proc = subprocess.run([sys.executable, "-c", _NO_COMPILE_SCRIPT, here, "fit"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("SITES ")][-1]
    compiled = [s for s in __import__("json").loads(line[6:]) if s[0] != "import"]
    assert compiled == []


@pytest.mark.gpu
@GPU_SKIP
def test_gpu_transform_after_warmup_compiles_nothing(tmp_path):
    """Once the warm-up pool is done (READY), a fresh worker's Criteo-like job (Categorify with
    nulls and unseen ids, FillMissing >> Clip >> LogOp >> Normalize on ints, LogOp >> Normalize
    on float32; 300k-row partitions) compiles no CuPy kernel on its own threads: every kernel of
    the hot paths is one the warm-up builds (cold start, #16)."""
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, CUPY_CACHE_DIR=str(tmp_path / "cupy-cache"))
    env.pop("TABPREP_GPU_WARMUP", None)
    here = os.path.dirname(os.path.abspath(__file__))
    proc = subprocess.run([sys.executable, "-c", _NO_COMPILE_SCRIPT, here, "job"], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("SITES ")][-1]
    assert [s for s in json.loads(line[6:]) if s[0] == "job"] == []
