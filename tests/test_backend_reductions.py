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
