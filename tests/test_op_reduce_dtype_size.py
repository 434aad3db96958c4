"""ReduceDtypeSize: smallest dtype holding the fitted [min, max]; values unchanged."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import tabprep as tp
from tabprep import ops

from conftest import canonical_dtype, make_dataset, py_values, random_frame, to_pandas
from list_helpers import frame_to_backend, list_series, pylists


def ref_dtype(values, kind, ints=("int8", "int16", "int32", "int64"), floats=("float32", "float64")):
    vals = [v for v in values if v is not None and not (isinstance(v, float) and not np.isfinite(v))]
    if not vals:
        return None
    lo, hi = min(vals), max(vals)
    for d in (floats if kind == "f" else ints):
        info = np.finfo(d) if kind == "f" else np.iinfo(d)
        if float(info.min) <= lo and hi <= float(info.max):
            return d
    return None


def frame(n: int = 50) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    nullable = pd.array(rng.integers(-100, 100, n), dtype="Int64")
    nullable[::4] = pd.NA
    big_f = rng.normal(size=n)
    big_f[3] = 1e300
    return pd.DataFrame({
        "i8ish": rng.integers(-128, 128, n),
        "i16ish": np.concatenate([[-129], rng.integers(0, 10, n - 1)]),
        "i32ish": np.concatenate([[70000], rng.integers(0, 10, n - 1)]).astype("int64"),
        "i64ish": np.concatenate([[2 ** 40], rng.integers(0, 10, n - 1)]),
        "u32": rng.integers(0, 200, n).astype("uint32"),
        "nullable": nullable,
        "f": rng.normal(size=n),
        "big_f": big_f,
        "b": rng.random(n) < 0.5,
        "s": pd.Series(rng.choice(["x", "y"], n), dtype="str"),
    })


def run(df, op, backend="cpu", nparts=4):
    wf = tp.Workflow(list(df.columns) >> op)
    ds = make_dataset(df, backend, nparts=nparts)
    wf.fit(ds)
    return wf, ds, to_pandas(wf.transform(ds))


def test_picks_smallest_dtypes(backend):
    df = frame()
    wf, ds, out = run(df, ops.ReduceDtypeSize(), backend)
    expected = {
        "i8ish": "int8", "i16ish": "int16", "i32ish": "int32", "i64ish": "int64", "u32": "uint32",  # unsigned: kept, as NVTabular 23.08
        "nullable": "int8", "f": "float32", "big_f": "float64", "b": "bool", "s": "str",
    }
    for c, d in expected.items():
        kind = "f" if df[c].dtype.kind == "f" else "i"
        if c not in ("b", "s", "u32"):
            assert ref_dtype(py_values(df[c]), kind) == d, c
        assert wf.output_schema[c].dtype == d, c
        assert canonical_dtype(out[c].dtype) == d, (c, out[c].dtype)
    # values are unchanged (floats to float32 rounding)
    for c in ("i8ish", "i16ish", "i32ish", "i64ish", "u32", "nullable", "b", "s"):
        assert py_values(out[c]) == py_values(df[c]), c
    np.testing.assert_allclose(out["f"].to_numpy("float64"), df["f"].to_numpy(), rtol=1e-6)
    np.testing.assert_array_equal(out["big_f"].to_numpy(), df["big_f"].to_numpy())
    # the nullable column keeps its nulls in every partition
    for part in wf.transform(ds).to_ddf().to_delayed():
        p = to_pandas(part.compute())
        for c in ("nullable", "i8ish"):
            assert canonical_dtype(p[c].dtype) == wf.output_schema[c].dtype


def test_custom_candidates():
    df = pd.DataFrame({"u": np.array([0, 200, 17], dtype="int64"), "f": [0.5, 1.0, 2.0]})
    wf, _, out = run(df, ops.ReduceDtypeSize(int_dtypes=["uint8", "int16"], float_dtypes=["float16", "float32"]),
                     nparts=2)
    assert str(out["u"].dtype) == "uint8" and str(out["f"].dtype) == "float16"
    assert out["u"].tolist() == [0, 200, 17]


def test_all_null_and_infinite_columns():
    df = pd.DataFrame({"n": pd.array([None, None], dtype="Int64"), "inf": [np.inf, -np.inf],
                       "nan": [np.nan, np.nan]})
    wf, _, out = run(df, ops.ReduceDtypeSize(), nparts=1)
    assert wf.output_schema["n"].dtype == "int64"  # no value: unchanged
    assert str(out["inf"].dtype) == "float32" and out["inf"].tolist() == [np.inf, -np.inf]
    assert wf.output_schema["nan"].dtype == "float32"  # only NaN: float_dtype, as NVTabular 23.08 casts every float column


def test_list_columns_element_wise(backend):
    df = pd.DataFrame({"l": list_series([[1, 300], None, [], [None, -5]], pa.int64()),
                       "lf": list_series([[0.5], [None], None, [2.5, 1.0]], pa.float64())})
    wf, _, out = run(df, ops.ReduceDtypeSize(), backend, nparts=2)
    assert wf.output_schema["l"].dtype == "int16" and wf.output_schema["l"].is_list
    assert wf.output_schema["lf"].dtype == "float32"
    assert pylists(out["l"]) == [[1, 300], None, [], [None, -5]]
    assert pylists(out["lf"]) == [[0.5], [None], None, [2.5, 1.0]]
    if backend == "cpu":  # the element type itself shrank (cuDF's to_pandas loses it: object lists)
        assert out["l"].dtype.pyarrow_dtype.value_type == pa.int16()


def test_after_categorify(backend):
    df = random_frame(seed=21, n=120)
    wf = tp.Workflow(["s", "i32"] >> ops.Categorify() >> ops.ReduceDtypeSize())
    ds = make_dataset(df, backend, nparts=3)
    wf.fit(ds)
    out = to_pandas(wf.transform(ds))
    ref = to_pandas(tp.Workflow(["s", "i32"] >> ops.Categorify()).fit(ds).transform(ds))
    for c in ("s", "i32"):
        assert str(out[c].dtype) == "int8" and out[c].tolist() == ref[c].tolist()
    assert wf.output_schema["s"].cardinality == tp.Workflow(["s"] >> ops.Categorify()).fit(ds).output_schema["s"].cardinality


def test_empty_partitions_and_online_path(backend):
    df = random_frame(seed=22, n=80)[["i8", "i32", "u32", "I64", "f32", "f64", "s", "b"]]
    wf, ds, out = run(df, ops.ReduceDtypeSize(), backend, nparts=5)
    single = tp.Workflow(list(df.columns) >> ops.ReduceDtypeSize())
    single.fit(tp.Dataset(df, npartitions=1))
    assert single.output_schema == wf.output_schema
    online = to_pandas(wf.transform(frame_to_backend(df, backend)))
    for c in df.columns:
        assert canonical_dtype(online[c].dtype) == canonical_dtype(out[c].dtype) == wf.output_schema[c].dtype, c
    empty = to_pandas(wf.transform(frame_to_backend(df.iloc[:0], backend)))
    assert len(empty) == 0 and list(empty.columns) == list(df.columns)


def test_save_load_round_trip(tmp_path, backend):
    df = frame()
    wf, ds, out = run(df, ops.ReduceDtypeSize(), backend)
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    assert loaded.output_schema == wf.output_schema
    pd.testing.assert_frame_equal(to_pandas(loaded.transform(ds)), out)


def test_invalid_candidates():
    with pytest.raises(ValueError):
        ops.ReduceDtypeSize(float_dtypes=["int8"])
    with pytest.raises(ValueError):
        ops.ReduceDtypeSize(int_dtypes=["float32"])
