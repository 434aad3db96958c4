"""The element-wise column kernels (FillMissing, Clip, LogOp, Normalize) written once for any array
namespace: numpy on the CPU, CuPy on cuDF frames (``DeviceColumn``).

* CPU: the kernels on host columns against a pandas reference written here (nulls, NaN, +-inf,
  ints, bools, empty columns);
* a fake device namespace: arrays that numpy refuses to compute on (as it refuses CuPy arrays),
  whose only arithmetic is a namespace object registered in the backend's dispatchers, run
  through the same kernels: the result must equal the pandas reference and stay in that
  namespace (a kernel calling ``np.`` directly on a device array fails here);
* GPU (``gpu`` marker, ``backend`` fixture): the Criteo chain on cuDF frames, fused, equals the
  CPU output and the unfused cuDF output, and the fused path did take DeviceColumns.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
import tabprep.backend as tb
from tabprep import backend, ops
from tabprep.backend import DeviceColumn, HostColumn

from conftest import GPU_SKIP, frame_on, is_cpu, to_pandas

FILL, LO, HI = -1, 0, 200


def frame(n: int = 40) -> pd.DataFrame:
    r = np.random.default_rng(7)
    f = r.choice([0.0, -0.0, 1e-5, -1e-5, -0.99, -1.5, 2.5, 1e6, np.inf, -np.inf, np.nan, 3.0, 70000.0], n)
    i = pd.array(r.choice([0, 1, 7, 100, 65535, 65536, 2 ** 40, -1, -3], n), dtype="Int64")
    i[r.random(n) < 0.25] = pd.NA
    return pd.DataFrame({
        "f64": f, "f32": f.astype("float32"), "i64": i,
        "i32": r.integers(-5, 400, n).astype("int32"), "u8": r.integers(0, 255, n).astype("uint8"),
        "b": r.random(n) < 0.5,
    })


COLS = ["f64", "f32", "i64", "i32", "u8", "b"]


def criteo_ops(df: pd.DataFrame, cols=COLS, fill=FILL) -> list:
    """FillMissing >> Clip >> LogOp >> Normalize fitted on ``df``: the ops (with their statistics)."""
    wf = tp.Workflow(cols >> ops.FillMissing(fill_val=fill) >> ops.Clip(min_value=LO, max_value=HI)
                     >> ops.LogOp() >> ops.Normalize())
    wf.fit(df)
    return [n.op for n in wf.nodes if n.kind == "op"]


def nvt_log(x: np.ndarray) -> np.ndarray:
    """LogOp's formula: ``float32(log(float64(float32(x) + float32(1))))`` (NVTabular's float32 sum)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log((np.asarray(x).astype(np.float32) + np.float32(1)).astype(np.float64)).astype(np.float32)


def pandas_reference(s: pd.Series, upto: int, mean: float, std: float, out_dtype: str, fill=FILL) -> pd.Series:
    """The chain's first ``upto`` ops in plain pandas / numpy (not tabprep's code)."""
    if upto >= 1:
        s = s.fillna(fill)
        if str(s.dtype) == "Int64":
            s = s.astype("int64")
    if upto >= 2 and s.dtype != bool:
        s = s.clip(LO, HI)
    if upto >= 3:
        s = pd.Series(nvt_log(s.to_numpy(dtype="float32", na_value=np.nan)))
    if upto >= 4:
        x = s.to_numpy("float64")
        # tabprep's documented rule: a std of 0 maps every value to 0 (docs/migration.md); NaN stays NaN
        z = (x - mean) / std if std else np.where(np.isnan(x), np.nan, 0.0)
        s = pd.Series(z.astype(out_dtype))
    return s


def values_of(col) -> tuple:
    """(values as a plain numpy array, null positions) of a kernel column."""
    v = np.asarray(col.values.view(np.ndarray))
    nulls = np.isnan(v) if v.dtype.kind == "f" else np.zeros(len(v), bool)
    if col.mask is not None:
        nulls = nulls | np.asarray(col.mask.view(np.ndarray))
    return v, nulls


def assert_col_equals(col, ref: pd.Series, what: str) -> None:
    v, nulls = values_of(col)
    ref_nulls = ref.isna().to_numpy()
    assert v.dtype == np.dtype(str(ref.dtype).lower()), (what, v.dtype, ref.dtype)
    assert (nulls == ref_nulls).all(), (what, "nulls differ", nulls, ref_nulls)
    rv = ref[~ref_nulls].to_numpy(dtype=v.dtype)
    got = v[~nulls]
    if v.dtype.kind == "f":  # bits, inf and -0.0 included
        got, rv = got.view(f"u{v.itemsize}"), rv.view(f"u{v.itemsize}")
    assert np.array_equal(got, rv), (what, v[~nulls][:8], ref[~ref_nulls].to_numpy()[:8])


def run_kernels(op_list: list, c: str, col):
    for op in op_list:
        kernel = op.column_kernel(c)
        assert kernel is not None
        col = kernel(col)
        if col is None:
            return None
    return col


@pytest.mark.parametrize("upto", [1, 2, 3, 4])
@pytest.mark.parametrize("rows", [40, 0])
def test_host_kernels_equal_a_pandas_reference(upto, rows):
    """Every prefix of the chain, every column kind, an empty column too: the numpy kernels give
    the reference's dtype, nulls and bits."""
    df = frame()
    chain = criteo_ops(df)
    test = df.iloc[:rows].reset_index(drop=True)
    for c in COLS:
        col = run_kernels(chain[:upto], c, backend.host_column(test[c]))
        if upto >= 2 and c == "b":
            assert col is None  # Clip declines bools (the ops' transform clips them)
            continue
        st = chain[3].stats_[c]
        assert isinstance(col, HostColumn)
        assert_col_equals(col, pandas_reference(test[c], upto, st["mean"], st["std"], chain[3].output_dtype), f"{c} upto {upto}")


def test_clip_declines_a_bound_the_dtype_cannot_hold_and_the_workflow_still_clips():
    df = pd.DataFrame({"x": np.array([1.0, np.nan, 3e38, -3e38], dtype="float32")})
    assert backend.clip_host(backend.host_column(df["x"]), -1e300, None) is None
    assert backend.clip_host(backend.host_column(df["x"]), None, 1e300) is None
    out = tp.Workflow(["x"] >> ops.Clip(min_value=0, max_value=1e300)).fit(df).transform(df)
    ref = df["x"].clip(0, 1e300)
    assert str(out["x"].dtype) == str(ref.dtype)
    np.testing.assert_array_equal(out["x"].to_numpy(), ref.to_numpy())


# -- a fake device namespace -------------------------------------------------------------------
class FakeDeviceArray(np.ndarray):
    """An array numpy refuses to compute on, as it refuses CuPy arrays: only :class:`FakeXP` and
    the methods below compute on it (by numpy on a plain view, results wrapped again)."""

    def __array_ufunc__(self, *args, **kwargs):
        raise TypeError("numpy called on a fake device array (use the array's namespace)")

    def __array_function__(self, *args, **kwargs):
        raise TypeError("numpy called on a fake device array (use the array's namespace)")

    def astype(self, dtype, copy=True):
        return wrap(host(self).astype(dtype, copy=copy))

    def any(self):
        return wrap(np.asarray(host(self).any()))

    def __bool__(self):
        return bool(host(self))


def host(a):
    return a.view(np.ndarray) if isinstance(a, FakeDeviceArray) else a


def wrap(a):
    return a.view(FakeDeviceArray) if isinstance(a, np.ndarray) and not isinstance(a, FakeDeviceArray) else a


class FakeXP:
    """The namespace of :class:`FakeDeviceArray`: numpy's functions on plain views; records its calls."""

    calls: list = []

    def __getattr__(self, name):
        fn = getattr(np, name)

        def call(*args, **kwargs):
            FakeXP.calls.append(name)
            args = [host(a) for a in args]
            kwargs = {k: host(v) for k, v in kwargs.items()}
            return wrap(fn(*args, **kwargs))
        return call


XP = FakeXP()


@pytest.fixture
def fake_device():
    """Registers the fake namespace in the dispatchers the kernels use (array_module and the
    two log1p dispatchers, which compute as the GPU's kernel: the float32 sum, its log in float64)."""
    regs = {
        backend.array_module: lambda a: XP,
        backend.log1p_int: lambda v: wrap(nvt_log(host(v))),
        backend.log1p_float: lambda x, overwrite=False: wrap(nvt_log(host(x))),
    }
    for d, fn in regs.items():
        d.register(FakeDeviceArray, fn)
    FakeXP.calls = []
    yield
    for d in regs:
        d._lookup.pop(FakeDeviceArray, None)


def device_column(s: pd.Series, float_nulls: bool = False) -> DeviceColumn:
    """A DeviceColumn as the GPU backend makes one of a cuDF column: ints with nulls as values + mask;
    floats with NaN in the values (and, with ``float_nulls``, cuDF-style nulls marked in the mask too)."""
    if str(s.dtype) == "Int64":
        mask = s.isna().to_numpy()
        return DeviceColumn(wrap(s.to_numpy("int64", na_value=0)), wrap(mask) if mask.any() else None, owned=True)
    v = s.to_numpy().copy()
    mask = np.isnan(v) if (float_nulls and v.dtype.kind == "f") else None
    return DeviceColumn(wrap(v), None if mask is None or not mask.any() else wrap(mask))


@pytest.mark.parametrize("upto", [1, 2, 3, 4])
@pytest.mark.parametrize("float_nulls", [False, True])
def test_kernels_run_in_a_device_namespace(fake_device, upto, float_nulls):
    """The same kernels on device columns: what the pandas reference gives (the fake device's
    log1p is numpy's, so bit for bit), output arrays of the device namespace, inputs not owned
    left unchanged, nulls of a float column kept by a chain that ends in Clip."""
    df = frame()
    chain = criteo_ops(df)
    for c in COLS:
        col = device_column(df[c], float_nulls)
        before = host(col.values).copy()
        out = run_kernels(chain[:upto], c, col)
        if upto >= 2 and c == "b":
            assert out is None
            continue
        st = chain[3].stats_[c]
        assert type(out) is DeviceColumn and isinstance(out.values, FakeDeviceArray), (c, type(out.values))
        assert out.mask is None or isinstance(out.mask, FakeDeviceArray)
        assert_col_equals(out, pandas_reference(df[c], upto, st["mean"], st["std"], chain[3].output_dtype), f"{c} upto {upto}")
        if not col.owned:
            assert np.array_equal(host(col.values), before, equal_nan=True), f"{c}: input written"
    used = {1: {"isnan", "where"}, 2: {"clip"}, 3: {"copyto"}, 4: {"subtract", "divide"}}[upto]
    assert used <= set(FakeXP.calls), sorted(set(FakeXP.calls))


def test_clip_keeps_a_device_columns_nulls(fake_device):
    """A chain ending in Clip keeps a cuDF column's nulls as nulls (the mask), ints and floats."""
    df = frame()
    clip = ops.Clip(min_value=LO, max_value=HI)
    for c, float_nulls in (("i64", False), ("f64", True), ("f32", True)):
        col = device_column(df[c], float_nulls)
        assert col.mask is not None
        out = clip.column_kernel(c)(col)
        assert type(out) is DeviceColumn and np.array_equal(host(out.mask), host(col.mask)), c
        ref = df[c].clip(LO, HI)
        assert_col_equals(out, ref.astype("int64") if c == "i64" else ref, c) if c != "i64" else None
        kept = ~host(col.mask)
        assert np.array_equal(host(out.values)[kept], ref[kept].to_numpy(dtype=host(out.values).dtype)), c


def test_categorify_kernel_declines_device_columns(fake_device):
    """Categorify's kernel is numpy's lookup: a device column goes through its transform."""
    df = pd.DataFrame({"x": [1, 2, 2, 3]})
    wf = tp.Workflow(["x"] >> ops.Categorify()).fit(df)
    (cat,) = [n.op for n in wf.nodes if n.kind == "op"]
    assert cat.column_kernel("x")(DeviceColumn(wrap(df["x"].to_numpy()))) is None
    assert cat.column_kernel("x")(backend.host_column(df["x"])) is not None


class FakeDeviceSeries(pd.Series):
    """A series whose kernel column is a fake device column (as a cuDF series' is a DeviceColumn)."""

    @property
    def _constructor(self):
        return FakeDeviceSeries


class FakeDeviceFrame(pd.DataFrame):
    @property
    def _constructor(self):
        return FakeDeviceFrame

    @property
    def _constructor_sliced(self):
        return FakeDeviceSeries


def test_run_chain_asks_the_backend_for_device_columns(fake_device):
    """fusion.run_chain on a frame whose columns the backend turns into device columns (registered
    here for the fake device, as gpu.py registers cuDF's): the kernels run in the device namespace,
    a column they decline (a nullable bool FillMissing cannot fill exactly) goes through the ops'
    transforms, and the frame equals the CPU workflow's output."""
    from tabprep.workflow import fusion

    df = frame()
    df["nb"] = pd.array([True, None, False, True] * 10, dtype="boolean")
    cols = COLS + ["nb"]
    wf = tp.Workflow(cols >> ops.FillMissing(fill_val=0) >> ops.Clip(min_value=LO, max_value=HI) >> ops.LogOp()
                     >> ops.Normalize()).fit(df)
    chain = [n.op for n in wf.nodes if n.kind == "op"]
    made = []

    def to_device(series):
        col = device_column(pd.Series(series), float_nulls=True) if str(series.dtype) != "boolean" else None
        made.append(type(col).__name__)
        return col

    def to_series(col, like, name):
        values, mask = host(col.values), None if col.mask is None else host(col.mask)
        assert mask is None  # FillMissing and Normalize leave no mask
        return pd.Series(values, index=like.index, name=name)

    saved = backend.host_series._lookup.get(DeviceColumn)
    backend.host_column.register(FakeDeviceSeries, to_device)
    backend.host_series.register(DeviceColumn, to_series)
    try:
        got = fusion.run_chain(chain, cols, FakeDeviceFrame(df))
    finally:
        backend.host_column._lookup.pop(FakeDeviceSeries, None)
        backend.host_series._lookup.pop(DeviceColumn, None)
        if saved is not None:  # the GPU backend's, where it was loaded
            backend.host_series.register(DeviceColumn, saved)
    assert made.count("DeviceColumn") == len(COLS) and made.count("NoneType") == 1, made
    assert {"isnan", "clip", "subtract"} <= set(FakeXP.calls)
    ref = wf.transform(df)
    assert list(got.columns) == cols
    for c in cols:
        assert_col_equals(HostColumn(got[c].to_numpy()), ref[c], c)


# -- on the GPU: the chain on cuDF frames --------------------------------------------------------
def assert_frames_same(got: pd.DataFrame, ref: pd.DataFrame, what: str) -> None:
    """Same columns, dtypes, missing positions (NaN and null alike: tabprep's convention) and
    values (floats compared by value: -0.0 == 0.0 between libcudf and CuPy)."""
    assert list(got.columns) == list(ref.columns), what
    for c in ref.columns:
        a, b = got[c], ref[c]
        assert str(a.dtype) == str(b.dtype), (what, c, a.dtype, b.dtype)
        na_a, na_b = a.isna().to_numpy(), b.isna().to_numpy()
        assert (na_a == na_b).all(), (what, c, "missing values differ")
        va, vb = a[~na_a].to_numpy(), b[~na_b].to_numpy()
        assert np.array_equal(va, vb), (what, c, va[:8], vb[:8])


@pytest.mark.parametrize("chain", [["fill", "clip", "log", "norm"], ["clip"], ["clip", "log"], ["log", "norm"],
                                   ["fill"], ["norm"]])
def test_criteo_chain_on_the_backend_equals_cpu_and_unfused(backend, monkeypatch, chain):
    """Fitted on the CPU; transformed on the backend fused and unfused (host_columns_supported
    answering False), and on the CPU: all three the same. On cuDF, the fused run must have made
    DeviceColumns (the device path ran: the GPU backend fuses once the kernel warm-up is done)."""
    if not is_cpu(backend):
        from tabprep.backend import gpu_warmup

        # (its first GPU runs, 2026-11-28: the Int64 column of this frame, which cuDF 26 keeps as
        # pd.Int64Dtype() after from_pandas, gave no device column; host_column reads the numpy dtype)
        monkeypatch.delenv("TABPREP_GPU_WARMUP", raising=False)
        monkeypatch.setenv("TABPREP_DEVICE_FUSION", "1")   # (the default; set in case the environment turned it off)
        gpu_warmup.start()
        assert gpu_warmup.READY.wait(300)
    df = frame(64)
    made = {"fill": lambda: ops.FillMissing(fill_val=FILL), "clip": lambda: ops.Clip(min_value=LO, max_value=HI),
            "log": ops.LogOp, "norm": ops.Normalize}
    node = COLS
    for k in chain:
        node = node >> made[k]()
    wf = tp.Workflow(node).fit(df)
    cpu = to_pandas(wf.transform(df))
    data = frame_on(df, backend)
    if not is_cpu(backend):  # a float column holding NaN and +-inf (not nulls) next to one with nulls
        import cudf

        data["f32"] = cudf.Series(df["f32"].to_numpy(), nan_as_null=False)
    made_columns, seen = [], []   # seen: (column, dtype, what host_column made), for the message
    real = tb.host_column

    def spy(series):
        col = real(series)
        made_columns.append(type(col).__name__)
        seen.append((getattr(series, "name", None), str(getattr(series, "dtype", "?")), type(col).__name__))
        return col

    monkeypatch.setattr(tb, "host_column", spy)
    fused = to_pandas(wf.transform(data))
    monkeypatch.setattr(tb, "host_column", real)
    with monkeypatch.context() as m:
        m.setattr(tb, "host_columns_supported", lambda frame: False)
        unfused = to_pandas(wf.transform(data))
    assert set(made_columns) <= {"HostColumn", "DeviceColumn"} and made_columns, seen
    assert ("HostColumn" if is_cpu(backend) else "DeviceColumn") in made_columns, made_columns
    assert_frames_same(fused, unfused, f"{backend} fused vs unfused {chain}")
    assert_frames_same(fused, cpu, f"{backend} vs cpu {chain}")


@pytest.mark.gpu
@GPU_SKIP
def test_device_chain_checks_its_columns_for_nan_together(monkeypatch):
    """A fused chain's float outputs are checked for NaN together (one copy to the host): a column
    without NaN is made without cuDF's own NaN count (a wait for the device each), a column with NaN
    (in its input, or made by LogOp of values below -1) still has them made nulls. The frames equal
    those of ``TABPREP_GPU_BATCH_NAN_CHECK=0`` (cuDF's check per column) and the CPU's."""
    import cudf
    from cudf.core.column.numerical import NumericalColumn

    from tabprep.backend import gpu_warmup

    monkeypatch.delenv("TABPREP_GPU_WARMUP", raising=False)
    monkeypatch.setenv("TABPREP_DEVICE_FUSION", "1")
    gpu_warmup.start()
    assert gpu_warmup.READY.wait(300)
    r = np.random.default_rng(5)
    n = 1000
    df = pd.DataFrame({"clean": r.uniform(0, 10, n), "below": r.uniform(-3, 3, n),
                       "nan": np.where(r.random(n) < 0.2, np.nan, r.uniform(0, 5, n))})
    wf = tp.Workflow(["clean", "below", "nan"] >> ops.LogOp()).fit(df)
    data = cudf.from_pandas(df, nan_as_null=False)
    calls = []
    real = NumericalColumn.nans_to_nulls

    def counted(self):
        calls.append(len(self))
        return real(self)

    monkeypatch.setattr(NumericalColumn, "nans_to_nulls", counted)
    batched = to_pandas(wf.transform(data))
    n_batched = len(calls)
    monkeypatch.setenv("TABPREP_GPU_BATCH_NAN_CHECK", "0")
    calls.clear()
    each = to_pandas(wf.transform(data))
    # (cuDF also checks columns elsewhere, e.g. a column made by a kernel with a mask: counted in both runs)
    assert n_batched < len(calls), (n_batched, len(calls))
    assert batched["below"].isna().sum() > 0 and batched["nan"].isna().sum() >= (df["nan"].isna()).sum()
    assert_frames_same(batched, each, "batched NaN check vs cuDF's per column")
    assert_frames_same(batched, to_pandas(wf.transform(df)), "GPU vs CPU")


def test_device_fusion_is_on_by_default_and_off_with_0(monkeypatch):
    """Fused chains on cuDF frames run by default since the GPU run of 2026-11-28 (2x H200: the
    whole gpu suite with fusion on, 517 passed; the cases above equal to the CPU and the unfused
    path); ``TABPREP_DEVICE_FUSION=0`` turns them off, and the CuPy warm-up then builds no kernel of
    theirs."""
    from tabprep.backend import gpu_warmup

    for off in ("0", "no", "false", "off"):
        monkeypatch.setenv("TABPREP_DEVICE_FUSION", off)
        assert not gpu_warmup.device_fusion()
        assert gpu_warmup._fused_chain not in [task for task, _ in gpu_warmup._tasks()]
    for on in ("1", "yes"):
        monkeypatch.setenv("TABPREP_DEVICE_FUSION", on)
        assert gpu_warmup.device_fusion()
    monkeypatch.delenv("TABPREP_DEVICE_FUSION", raising=False)
    assert gpu_warmup.device_fusion()
    assert [args for task, args in gpu_warmup._tasks() if task is gpu_warmup._fused_chain] == [
        ("int64",), ("float32",), ("float64",)]
