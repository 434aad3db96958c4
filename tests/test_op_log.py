"""LogOp computes NVTabular's formula, ``log(float32(x) + 1)``, in every path.

NVTabular 23.08 (``nvtabular/ops/logop.py``): ``np.log(col.astype(np.float32) + 1)``: the value is
made float32, 1 is added in float32, and the logarithm is float32's. tabprep computes the same
float32 sum and takes its logarithm in float64, rounded once to float32 (the correctly rounded
float32 logarithm: identical on the CPU and the GPU, where numpy's and CUDA's float32 ``log`` each
miss it on some values -- CUDA's by one unit in the last place, numpy 2.4's by up to three --
and disagree with each other). The references below are written here with numpy, from that
formula; NVTabular's own float32 logarithm (numpy's) is checked to within its error.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

from conftest import is_cpu, make_dataset, to_pandas

FLOATS = [0.0, 1e-9, -1e-9, 3e-8, 5.9e-8, 6e-8, 1e-7, 1e-5, 0.1, 0.3, 1 / 3, np.e - 1, 1.0, 99.0, 1e6,
          16777216.0, 1e30, 1e39, -0.5, -1.0, -1.0 + 1e-9, -2.0, np.nan, np.inf, -np.inf]
INTS = [0, 1, 2, 9, 65534, 65535, 65536, 65537, 2**24 - 1, 2**24, 2**24 + 1, 2**31 - 1, 2**53 + 1, 2**62,
        np.iinfo(np.int64).max, -1, -2, -65536, np.iinfo(np.int64).min]


def reference(values) -> np.ndarray:
    """``float32(log(float64(float32(x) + float32(1))))`` of ``values`` (NaN for None)."""
    x = np.array([np.nan if v is None else v for v in values], dtype=object)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        x32 = np.array([np.float32(v) for v in x], dtype=np.float32)   # each value rounded once to float32
        s = x32 + np.float32(1)                                       # the float32 sum, as NVTabular
        return np.log(s.astype(np.float64)).astype(np.float32)


def nvtabular_cpu(values) -> np.ndarray:
    """NVTabular 23.08's LogOp on the CPU, as its code spells it (numpy's float32 logarithm)."""
    x = pd.Series([np.nan if v is None else v for v in values], dtype="float64")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.log(x.astype(np.float32) + 1).to_numpy()


def _run(frame: pd.DataFrame, node, backend: str = "cpu", nparts: int = 2) -> pd.DataFrame:
    wf = tp.Workflow(node)
    return to_pandas(wf.fit_transform(make_dataset(frame, backend, nparts=nparts)))


def _same_bits(got: np.ndarray, want: np.ndarray, what: str) -> None:
    got = np.asarray(got, dtype=np.float32)
    bad = np.flatnonzero(got.view(np.int32) != want.view(np.int32))
    # every NaN is one NaN here (the bit patterns of NaN may differ between numpy and CUDA)
    bad = [i for i in bad if not (np.isnan(got[i]) and np.isnan(want[i]))]
    assert not bad, f"{what}: {[(i, got[i], want[i]) for i in bad[:5]]}"


@pytest.mark.parametrize("dtype", ["float64", "float32", "Float64"])
def test_float_columns_are_the_float32_formula(backend, dtype):
    rng = np.random.default_rng(0)
    vals = FLOATS + rng.random(400).tolist() + rng.lognormal(0, 3, 400).tolist()
    x = pd.Series(vals, dtype="float64")
    if dtype == "float32":
        with np.errstate(over="ignore"):
            x = x.astype("float32")
    elif dtype == "Float64":
        x = x.astype("Float64")
        x[5] = None
    want = reference(x.astype(object).where(x.notna(), None).tolist())
    filled = reference(x.astype("float64").fillna(0.0).tolist())
    for node, exp in ((["x"] >> ops.LogOp(), want), (["x"] >> ops.FillMissing(fill_val=0.0) >> ops.LogOp(), filled)):
        out = _run(pd.DataFrame({"x": x}), node, backend)["x"]   # alone, and in a fused chain
        assert str(out.dtype) == "float32"
        _same_bits(out.to_numpy("float32", na_value=np.nan), exp, f"{dtype} {node}")


@pytest.mark.parametrize("dtype", ["int64", "Int64", "int32", "uint8", "bool"])
def test_int_columns_are_the_float32_formula(backend, dtype):
    rng = np.random.default_rng(1)
    info = (0, 1) if dtype == "bool" else (np.iinfo(np.dtype(dtype.lower())).min, np.iinfo(np.dtype(dtype.lower())).max)
    vals = [v for v in INTS if info[0] <= v <= info[1]] + rng.zipf(1.3, 300).clip(0, info[1]).tolist()
    x = pd.Series(vals).astype(dtype.lower())
    if dtype == "Int64":
        x = x.astype("Int64")
        x[rng.random(len(x)) < 0.2] = None
    want = reference([None if pd.isna(v) else int(v) for v in x.astype(object)])
    for node in (["x"] >> ops.LogOp(), ["x"] >> ops.FillMissing(fill_val=0) >> ops.LogOp()):
        out = _run(pd.DataFrame({"x": x}), node, backend)["x"]
        exp = want if "FillMissing" not in str(node) else reference([0 if pd.isna(v) else int(v) for v in x.astype(object)])
        _same_bits(out.to_numpy("float32", na_value=np.nan), exp, f"{dtype} {node}")


def test_uint64_beyond_int64(backend):
    vals = [2**63 + 5, 1, 2**64 - 1, 0, 12345, 2**24 + 1]
    df = pd.DataFrame({"u": np.array(vals, dtype="uint64")})
    out = _run(df, ["u"] >> ops.LogOp(), backend)["u"]
    _same_bits(out.to_numpy("float32"), reference(vals), "uint64")


def test_tiny_values_give_zero_as_nvtabular():
    # below about 6e-8 the float32 sum 1 + x is 1: NVTabular gives 0 there (tabprep gave x, from
    # log1p in float64, before 2026-11-29)
    tiny = [1e-9, 3e-8, 5.9e-8, -1e-9, -2.9e-8]
    out = _run(pd.DataFrame({"x": tiny}), ["x"] >> ops.LogOp())["x"].to_numpy()
    assert out.tolist() == [0.0] * len(tiny)
    assert nvtabular_cpu(tiny).tolist() == [0.0] * len(tiny)


def test_within_the_error_of_nvtabulars_float32_logarithm():
    # NVTabular's float32 log on the CPU (numpy's) misses the correctly rounded value on some values:
    # by up to 3 units in the last place with numpy 2.4's AVX-512 log (1 unit for CUDA's logf, on
    # the GPU); never by more, so there is no other formula difference
    rng = np.random.default_rng(2)
    vals = [v for v in FLOATS if np.isfinite(v) and v > -1] + rng.random(5000).tolist() \
        + rng.lognormal(0, 3, 5000).tolist() + list(range(0, 70000, 7))
    got = _run(pd.DataFrame({"x": np.array(vals, dtype="float64")}), ["x"] >> ops.LogOp())["x"].to_numpy()
    nvt = nvtabular_cpu(vals)
    ulps = np.abs(got.view(np.int32).astype(np.int64) - nvt.view(np.int32).astype(np.int64))
    assert ulps.max() <= 3, [(vals[i], got[i], nvt[i]) for i in np.flatnonzero(ulps > 3)[:5]]
    assert (ulps == 0).mean() > 0.5   # most values are NVTabular's bits exactly


def test_serving_and_keras_export_are_the_formula(tmp_path):
    from tabprep.serving import ServingTransform

    rng = np.random.default_rng(3)
    fl = FLOATS + rng.random(50).tolist()
    it = [v for v in INTS if abs(v) < 2**62] + [None]
    n = max(len(fl), len(it))
    frame = pd.DataFrame({"f": pd.Series((fl * 2)[:n], dtype="float64"),
                          "i": pd.Series((it * 4)[:n], dtype="Int64")})
    wf = tp.Workflow(["f", "i"] >> ops.LogOp()).fit(frame)
    want_f = reference(frame["f"].tolist())
    want_i = reference([None if pd.isna(v) else int(v) for v in frame["i"].astype(object)])
    st = ServingTransform(wf)
    batch = st.transform_batch(frame)
    _same_bits(np.ma.filled(np.ma.asarray(batch["f"], dtype=np.float32), np.nan), want_f, "serving batch f")
    _same_bits(np.ma.filled(np.ma.asarray(batch["i"], dtype=np.float32), np.nan), want_i, "serving batch i")
    for k in (0, 1, 6, 21, 24):   # one row at a time
        row = {"f": None if pd.isna(frame["f"][k]) else float(frame["f"][k]),
               "i": None if pd.isna(frame["i"][k]) else int(frame["i"][k])}
        got = st(row)
        for c, want in (("f", want_f[k]), ("i", want_i[k])):
            v = np.ma.filled(np.ma.asarray(got[c], dtype=np.float32), np.nan).reshape(-1)[0]
            _same_bits(np.array([v], dtype=np.float32), np.array([want], dtype=np.float32), f"row {k} {c}")


def test_keras_export_is_the_formula():
    pytest.importorskip("tensorflow")
    from serving_helpers import keras_inputs, keras_outputs
    from tabprep.serving import ServingTransform, to_keras

    rng = np.random.default_rng(4)
    fl = [v for v in FLOATS] + rng.random(50).tolist() + rng.lognormal(0, 3, 50).tolist()
    frame = pd.DataFrame({"f": pd.Series(fl, dtype="float64"),
                          "i": pd.Series(([v for v in INTS if abs(v) < 2**62] * 10)[:len(fl)], dtype="int64")})
    wf = tp.Workflow(["f", "i"] >> ops.LogOp()).fit(frame)
    st = ServingTransform(wf)
    got = keras_outputs(to_keras(wf)(keras_inputs(st, frame)), ["f", "i"])
    _same_bits(np.ma.filled(np.ma.asarray(got["f"], dtype=np.float32), np.nan), reference(frame["f"].tolist()), "keras f")
    _same_bits(np.ma.filled(np.ma.asarray(got["i"], dtype=np.float32), np.nan), reference(frame["i"].tolist()), "keras i")
