"""HashBucket's one-kernel ids on the GPU (``tabprep.backend.gpu_hash``): for every int / bool input
type and output dtype, with nulls, sliced columns (an offset into the data and the null mask) and
columns longer than one grid, the ids equal ``mmh3`` of the value's 8 little-endian bytes modulo
the buckets (0 at nulls), written here, and the libcudf path's (``TABPREP_GPU_HASH_KERNEL=0``)."""
from __future__ import annotations

import mmh3
import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.gpu

IN_DTYPES = ["Int64", "Int32", "Int16", "Int8", "UInt64", "UInt32", "UInt16", "UInt8", "boolean"]


def _values(dtype: str, n: int, seed: int = 0) -> pd.Series:
    r = np.random.default_rng(seed)
    if dtype == "boolean":
        v = pd.array(r.random(n) < 0.5, dtype="boolean")
    else:
        info = np.iinfo(pd.api.types.pandas_dtype(dtype).numpy_dtype)
        raw = r.integers(info.min, info.max, n, dtype=pd.api.types.pandas_dtype(dtype).numpy_dtype, endpoint=True)
        raw[:4] = [info.min, info.max, 0, 1][:min(4, n)]
        v = pd.array(raw, dtype=dtype)
    v[r.random(n) < 0.2] = pd.NA
    return pd.Series(v)


def _want(values: pd.Series, buckets: int) -> list:
    out = []
    for v in values:
        if v is pd.NA:
            out.append(0)
            continue
        x = int(v) & ((1 << 64) - 1)  # as libcudf's cast to int64 gives the bits (sign- or zero-extended)
        out.append(mmh3.hash(x.to_bytes(8, "little"), 0, signed=False) % buckets)
    return out


@pytest.fixture
def kernels():
    pytest.importorskip("cudf")
    import pylibcudf as plc

    from tabprep.backend import gpu_hash

    pairs = [(t, np.dtype(o)) for t in gpu_hash._IN for o in ("int32", "int64", "uint32", "int16")]
    gpu_hash.warm(pairs)
    return gpu_hash, plc


@pytest.mark.parametrize("dtype", IN_DTYPES)
@pytest.mark.parametrize("out", ["int32", "int64", "uint32"])
def test_kernel_ids_equal_mmh3_and_libcudf(kernels, monkeypatch, dtype, out):
    import cudf

    from tabprep.backend import gpu_columns

    gpu_hash, _ = kernels
    values = _values(dtype, 300, seed=len(dtype))
    whole = cudf.from_pandas(values.rename("c"))
    for start in (0, 37):   # a slice: the column's data and mask start at an offset (37: mid-word)
        s = whole.iloc[start:]
        col = gpu_columns._plc_column(s)
        monkeypatch.setenv(gpu_hash.ENV, "1")
        assert gpu_hash.bucket_ids(col, 1000, out) is not None   # the kernel is built for this pair
        got = {}
        for env in ("1", "0"):
            monkeypatch.setenv(gpu_hash.ENV, env)
            r = gpu_columns._bucket_ids(s, 1000, out)
            got[env] = r.to_pandas()
            assert str(got[env].dtype) == out and got[env].name == "c"
        want = _want(values.iloc[start:], 1000)
        assert got["1"].tolist() == want, (dtype, out, start)
        assert got["0"].tolist() == want, (dtype, out, start)
        assert got["1"].index.tolist() == list(range(start, 300))


@pytest.mark.parametrize("buckets", [1, 2, 1000003, 2 ** 31 - 1, 2 ** 32 - 1])
def test_kernel_ids_at_bucket_extremes(kernels, monkeypatch, buckets):
    import cudf

    from tabprep.backend import gpu_columns

    gpu_hash, _ = kernels
    values = _values("Int64", 200, seed=3)
    s = cudf.from_pandas(values)
    monkeypatch.setenv(gpu_hash.ENV, "1")
    got = gpu_columns._bucket_ids(s, buckets, "int64").to_pandas().tolist()
    assert got == _want(values, buckets)


def test_a_column_longer_than_one_grid(kernels, monkeypatch):
    # more rows than the kernel's threads (256 x 8192 blocks): the grid-stride loop covers them all
    import cudf

    from tabprep.backend import gpu_columns

    gpu_hash, _ = kernels
    n = 256 * 8192 * 2 + 12345
    r = np.random.default_rng(5)
    raw = r.integers(-2 ** 62, 2 ** 62, n)
    mask = r.random(n) < 0.1
    s = cudf.Series(raw).mask(cudf.Series(mask))
    got = {}
    for env in ("1", "0"):
        monkeypatch.setenv(gpu_hash.ENV, env)
        got[env] = gpu_columns._bucket_ids(s, 100_000, "int32").values.get()
    np.testing.assert_array_equal(got["1"], got["0"])
    assert (got["1"][mask] == 0).all()
    some = r.choice(np.flatnonzero(~mask), 200, replace=False)
    assert got["1"][some].tolist() == [mmh3.hash(int(v).to_bytes(8, "little", signed=True), 0, signed=False) % 100_000
                                       for v in raw[some]]


def test_hash_bucket_on_gpu_equals_cpu_with_the_kernel(kernels, monkeypatch):
    import cudf

    import tabprep as tp
    from tabprep import ops

    gpu_hash, _ = kernels
    monkeypatch.setenv(gpu_hash.ENV, "1")
    df = pd.DataFrame({"a": _values("Int64", 500, 1), "b": _values("Int32", 500, 2),
                       "c": _values("UInt8", 500, 4)})
    wf = tp.Workflow(["a", "b", "c"] >> ops.HashBucket({"a": 97, "b": 2 ** 20, "c": 5}))
    wf.fit(df)
    cpu = wf.transform(df)
    gpu = wf.transform(cudf.from_pandas(df)).to_pandas()
    for c in "abc":
        assert gpu[c].tolist() == cpu[c].tolist(), c
