"""``Normalize(out_dtype=None)`` / ``NormalizeMinMax(out_dtype=None)``, as NVTabular 23.08
(nvtabular/ops/normalize.py: ``output_dtype`` is ``self.out_dtype or numpy.float64``): float64 by
default, float32 on request; the output schema says what the data holds; the values are a numpy
reference written here, at the requested precision; every path that outputs them (the fused host
kernels of parquet jobs, save/load, specs, serving, Keras, loaders) keeps the dtype. A workflow
folder saved by a tabprep without ``out_dtype`` was fitted with float32 output and keeps it."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tabprep as tp
from tabprep import ops

from conftest import frame_on, make_dataset, to_pandas
from list_helpers import list_series, pylists

TRAIN_X = [1.5, -2.0, None, 4.25, np.inf, 0.0, -np.inf, 10.0, np.nan, 3.0, 7.5, -0.5]
DATA_X = [0.1, None, np.inf, -np.inf, np.nan, 100.0, -3.3, 4.25, 1e-300, -0.0]


def _frame(xs):
    """``x`` float64 with nulls/NaN/+-inf, ``i`` nullable Int64, ``k`` a constant float column."""
    n = len(xs)
    return pd.DataFrame({
        "x": pd.Series([np.nan if v is None else v for v in xs], dtype="float64"),
        "i": pd.array([None if j % 4 == 1 else (j * 7) % 11 - 3 for j in range(n)], dtype="Int64"),
        "k": np.full(n, 0.1),
    })


def _f64(s: pd.Series) -> np.ndarray:
    return s.to_numpy(dtype="float64", na_value=np.nan)


# -- numpy references (independent of tabprep) ----------------------------------------------------
def ref_normalize(train: pd.Series, data: pd.Series, dtype: str) -> np.ndarray:
    """(x - mean) / sample std (ddof=1) of the finite fitted values, in float64, rounded to dtype;
    a constant column maps to 0 (tabprep's documented std == 0 rule); NaN stays NaN, inf stays inf."""
    x = _f64(train)
    x = x[np.isfinite(x)]
    y = _f64(data)
    if x.size < 2 or x.min() == x.max():
        return np.where(np.isnan(y), np.nan, 0.0).astype(dtype)
    return ((y - x.mean()) / x.std(ddof=1)).astype(dtype)


def ref_minmax(train: pd.Series, data: pd.Series, dtype: str) -> np.ndarray:
    x = _f64(train)
    x = x[np.isfinite(x)]
    y = _f64(data)
    if x.size == 0 or x.min() == x.max():
        return np.where(np.isnan(y), np.nan, 0.0).astype(dtype)
    return ((y - x.min()) / (x.max() - x.min())).astype(dtype)


REFS = {"Normalize": ref_normalize, "NormalizeMinMax": ref_minmax}
# out_dtype as the user writes it -> the dtype of the output
DTYPES = [(None, "float64"), ("float64", "float64"), (np.float64, "float64"), ("float32", "float32"),
          (np.float32, "float32"), (np.dtype("float32"), "float32")]


def _op(name, out_dtype="__default__"):
    cls = getattr(ops, name)
    return cls() if out_dtype == "__default__" else cls(out_dtype=out_dtype)


def _assert_values(got: pd.Series, want: np.ndarray, what: str) -> None:
    """Same dtype, same NaN / +-inf positions; finite values equal at the dtype's precision (the
    fitted mean may differ from numpy's in its last bit: a few ulps of float64, 1 ulp of float32)."""
    g = got.to_numpy()
    assert g.dtype == want.dtype, f"{what}: dtype {g.dtype}, expected {want.dtype}"
    np.testing.assert_array_equal(np.isnan(g), np.isnan(want), err_msg=f"{what}: NaN positions")
    np.testing.assert_array_equal(g[np.isinf(want)], want[np.isinf(want)], err_msg=f"{what}: inf")
    fin = np.isfinite(want)
    rtol = 1e-12 if want.dtype == np.float64 else 1.2e-7
    np.testing.assert_allclose(g[fin], want[fin], rtol=rtol, atol=1e-300, err_msg=what)


# -- defaults, out_dtype, values ------------------------------------------------------------------
@pytest.mark.parametrize("name", ["Normalize", "NormalizeMinMax"])
def test_default_output_is_float64_as_nvtabular(name, backend):
    train, data = _frame(TRAIN_X), _frame(DATA_X)
    wf = tp.Workflow(["x", "i", "k"] >> _op(name))
    wf.fit(make_dataset(train, backend, nparts=3))
    out = to_pandas(wf.transform(make_dataset(data, backend, nparts=2)))
    for c in ["x", "i", "k"]:
        assert wf.output_schema[c].dtype == "float64"
        _assert_values(out[c], REFS[name](train[c], data[c], "float64"), f"{name}()[{c}] on {backend}")
    assert _op(name).output_dtype == "float64"  # NVTabular's property name


@pytest.mark.parametrize("out_dtype,expected", DTYPES, ids=[f"{a!r}" for a, _ in DTYPES])
@pytest.mark.parametrize("name", ["Normalize", "NormalizeMinMax"])
def test_out_dtype_sets_data_and_schema(name, out_dtype, expected, backend):
    train, data = _frame(TRAIN_X), _frame(DATA_X)
    op = _op(name, out_dtype)
    assert op.out_dtype is out_dtype  # stored verbatim (get_params, repr)
    wf = tp.Workflow(["x", "i", "k"] >> op)
    wf.fit(make_dataset(train, backend, nparts=3))
    out = to_pandas(wf.transform(make_dataset(data, backend, nparts=2)))
    online = to_pandas(wf.transform(frame_on(data, backend)))  # a pandas / cuDF frame in, a frame out
    for c in ["x", "i", "k"]:
        assert wf.output_schema[c].dtype == expected == str(out[c].dtype) == str(online[c].dtype)
        _assert_values(out[c], REFS[name](train[c], data[c], expected), f"{name}({out_dtype!r})[{c}]")
        np.testing.assert_array_equal(online[c].to_numpy(), out[c].to_numpy())


@pytest.mark.parametrize("name", ["Normalize", "NormalizeMinMax"])
def test_float32_is_the_float64_result_rounded_once(name):
    """out_dtype='float32' rounds the float64 result, bit for bit (no float32 arithmetic)."""
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"x": rng.lognormal(0, 3, 500)})
    a = tp.Workflow(["x"] >> _op(name)).fit_transform(tp.Dataset(df)).compute()["x"].to_numpy()
    b = tp.Workflow(["x"] >> _op(name, "float32")).fit_transform(tp.Dataset(df)).compute()["x"].to_numpy()
    assert a.dtype == np.float64 and b.dtype == np.float32
    np.testing.assert_array_equal(b, a.astype(np.float32))


@pytest.mark.parametrize("bad", ["int32", np.int64, "float16", "banana", "str", bool])
@pytest.mark.parametrize("name", ["Normalize", "NormalizeMinMax"])
def test_non_float_out_dtype_is_refused_naming_op_and_argument(name, bad):
    with pytest.raises(ValueError, match=rf"{name}\(out_dtype=.*float32' or 'float64'"):
        _op(name, bad)


# -- parquet jobs: the fused host kernels (tabprep.workflow.fusion) give the same dtype and values ----
@pytest.mark.parametrize("out_dtype", [None, "float32"])
def test_parquet_job_fused_chain_keeps_out_dtype(tmp_path, out_dtype):
    """``FillMissing >> Clip >> LogOp >> Normalize`` on parquet runs as fused host kernels
    (``column_kernel``); their output equals the pandas path's and the reference."""
    rng = np.random.default_rng(5)
    n = 400
    x = rng.exponential(5, n)
    x[rng.random(n) < 0.1] = np.nan
    df = pd.DataFrame({"f64": x, "f32": x.astype("float32"), "i64": rng.integers(-3, 90, n)})
    (tmp_path / "d").mkdir()
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "d" / "a.parquet", row_group_size=100)
    cols = ["f64", "f32", "i64"]
    wf = tp.Workflow(cols >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp()
                     >> ops.Normalize(out_dtype=out_dtype))
    wf.fit(tp.Dataset(str(tmp_path / "d"), cpu=True))
    fused = to_pandas(wf.transform(tp.Dataset(str(tmp_path / "d"), cpu=True)))
    frame = to_pandas(wf.transform(df))
    expected = out_dtype or "float64"
    for c in cols:
        clipped = np.clip(np.nan_to_num(df[c].to_numpy("float64"), nan=0.0), 0, None)
        # LogOp: the float32 sum with 1 (NVTabular's), its log in float64, rounded to float32
        logged = np.log((clipped.astype("float32") + np.float32(1)).astype("float64")).astype("float32")
        want = ref_normalize(pd.Series(logged), pd.Series(logged), expected)
        assert wf.output_schema[c].dtype == expected
        _assert_values(fused[c], want, f"fused {c}")
        np.testing.assert_array_equal(fused[c].to_numpy(), frame[c].to_numpy())


# -- list columns (element-wise, statistics over all elements) ---------------------------------------
@pytest.mark.parametrize("out_dtype", [None, "float32"])
@pytest.mark.parametrize("name", ["Normalize", "NormalizeMinMax"])
def test_list_column_leaves_have_the_out_dtype(name, out_dtype):
    rows = [[1.0, 2.5], None, [], [4.0, None, -1.0], [np.inf, 3.0]]
    df = pd.DataFrame({"l": list_series(rows, pa.float64())})
    wf = tp.Workflow(["l"] >> _op(name, out_dtype))
    out = to_pandas(wf.fit_transform(tp.Dataset(df)))
    expected = out_dtype or "float64"
    assert out["l"].dtype.pyarrow_dtype.value_type == pa.from_numpy_dtype(np.dtype(expected))
    assert wf.output_schema["l"].dtype == expected and wf.output_schema["l"].is_list
    leaves = pd.Series([v for r in rows if r for v in r], dtype="float64")
    want = REFS[name](leaves, leaves, expected)
    got = [v for r in pylists(out["l"]) if r for v in r]
    assert [r is None for r in pylists(out["l"])] == [r is None for r in rows]
    assert [len(r) for r in pylists(out["l"]) if r is not None] == [len(r) for r in rows if r is not None]
    _assert_values(pd.Series(np.array([np.nan if v is None else v for v in got], dtype=expected)), want,
                   f"{name} list leaves")


@pytest.mark.parametrize("out_dtype", [None, "float32"])
def test_nested_list_leaves_have_the_out_dtype(out_dtype):
    """list<list<float64>>: Normalize runs on the leaves; the nesting is kept, the leaves and the
    schema (``list<float64>`` names the inner level) take the output dtype."""
    rows = [[[1.0, 2.0], [3.0]], None, [[], [4.0]]]
    df = pd.DataFrame({"n": pd.Series(pd.arrays.ArrowExtensionArray(pa.array(rows, pa.list_(pa.list_(pa.float64())))))})
    wf = tp.Workflow(["n"] >> ops.Normalize(out_dtype=out_dtype)).fit(df)
    out = wf.transform(df)
    expected = out_dtype or "float64"
    assert wf.output_schema["n"].dtype == f"list<{expected}>" and wf.output_schema["n"].leaf_dtype == expected
    leaf = pa.from_numpy_dtype(np.dtype(expected))
    assert out["n"].dtype.pyarrow_dtype == pa.list_(pa.list_(leaf))
    want = ref_normalize(pd.Series([1.0, 2.0, 3.0, 4.0]), pd.Series([1.0, 2.0, 3.0, 4.0]), expected)
    got = out["n"].array._pa_array.to_pylist()
    assert got[1] is None and [len(r) for r in got[0]] == [2, 1] and got[2][0] == []
    _assert_values(pd.Series(np.array([v for r in (got[0], got[2]) for inner in r for v in inner], dtype=expected)),
                   want, "nested leaves")


# -- save / load, specs, old folders ------------------------------------------------------------------
def _fitted(op):
    wf = tp.Workflow(["x"] >> op)
    wf.fit(_frame(TRAIN_X))
    return wf


@pytest.mark.parametrize("out_dtype,saved", [(None, None), ("float32", "float32"), (np.float32, "float32"),
                                             (np.float64, "float64")])
@pytest.mark.parametrize("name", ["Normalize", "NormalizeMinMax"])
def test_save_load_keeps_out_dtype(tmp_path, name, out_dtype, saved):
    wf = _fitted(_op(name, out_dtype))
    data = _frame(DATA_X)
    before = wf.transform(data)
    wf.save(str(tmp_path / "wf"))
    doc = json.loads((tmp_path / "wf" / "workflow.json").read_text())
    entry = next(e for e in doc["nodes"] if e.get("op") == name)
    assert entry["params"] == {"out_dtype": saved}  # the key is always written (see the old-folder rule)
    expected = np.dtype(out_dtype or "float64").name
    assert doc["output_schema"]["columns"][0]["dtype"] == expected  # the dtype itself is recorded too
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    assert loaded.output_schema["x"].dtype == expected
    after = loaded.transform(data)
    assert after["x"].dtype == expected
    np.testing.assert_array_equal(after["x"].to_numpy(), before["x"].to_numpy())


@pytest.mark.parametrize("name", ["Normalize", "NormalizeMinMax"])
def test_folder_saved_before_out_dtype_keeps_float32(tmp_path, name):
    """A folder saved by a tabprep without out_dtype has no ``out_dtype`` key: it was fitted (and
    its output schema written) with float32 output, so it loads with float32, not the new default."""
    data = _frame(DATA_X)
    wf = _fitted(_op(name, "float32"))
    want = wf.transform(data)["x"].to_numpy()
    wf.save(str(tmp_path / "wf"))
    path = tmp_path / "wf" / "workflow.json"
    doc = json.loads(path.read_text())
    for e in doc["nodes"]:
        if e.get("op") == name:
            e["params"] = {}  # what the older tabprep wrote
    path.write_text(json.dumps(doc))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    op = next(n.op for n in loaded.nodes if n.kind == "op")
    assert op.out_dtype == "float32" and loaded.output_schema["x"].dtype == "float32"
    got = loaded.transform(data)["x"].to_numpy()
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)
    # a new op without the argument is NVTabular's float64, also when built from a spec
    assert _op(name).output_dtype == "float64"


@pytest.mark.parametrize("name", ["Normalize", "NormalizeMinMax"])
def test_spec_round_trip_keeps_out_dtype(tmp_path, name):
    wf = tp.Workflow((["x"] >> _op(name, np.float32)) + (["i"] >> _op(name)))
    spec = wf.to_spec(str(tmp_path / "spec.yaml"))
    assert [f["ops"] for f in spec["features"]] == [[{name: {"out_dtype": "float32"}}], [name]]  # default unwritten
    assert "out_dtype: float32" in (tmp_path / "spec.yaml").read_text()
    back = tp.Workflow.from_spec(str(tmp_path / "spec.yaml"))
    back.fit(_frame(TRAIN_X))
    assert back.output_schema["x"].dtype == "float32" and back.output_schema["i"].dtype == "float64"
    out = back.transform(_frame(DATA_X))
    assert out["x"].dtype == np.float32 and out["i"].dtype == np.float64
    (tmp_path / "bare.yaml").write_text(f"features:\n  - columns: [x]\n    ops: [{name}]\n")
    assert tp.Workflow.from_spec(str(tmp_path / "bare.yaml")).fit(_frame(TRAIN_X)).output_schema["x"].dtype == "float64"
    (tmp_path / "bad.yaml").write_text(f"features:\n  - columns: [x]\n    ops: [{{{name}: {{out_dtype: int8}}}}]\n")
    with pytest.raises(Exception, match="out_dtype"):
        tp.Workflow.from_spec(str(tmp_path / "bad.yaml"))


@pytest.mark.parametrize("out_dtype", [None, "float32"])
@pytest.mark.parametrize("name", ["Normalize", "NormalizeMinMax"])
def test_check_op_passes(name, out_dtype):
    from tabprep.testing import check_op

    check_op(_op(name, out_dtype))


# -- serving: ServingTransform batches and single rows, Keras ----------------------------------------
@pytest.mark.parametrize("out_dtype", [None, "float32"])
@pytest.mark.parametrize("name", ["Normalize", "NormalizeMinMax"])
def test_serving_transform_keeps_out_dtype(name, out_dtype):
    from tabprep.serving import ServingTransform

    wf = tp.Workflow(["x"] >> ops.FillMissing(fill_val=-1.0) >> _op(name, out_dtype))
    wf.fit(_frame(TRAIN_X))
    data = _frame(DATA_X)[["x"]]
    offline = wf.transform(data)["x"].to_numpy()
    st = ServingTransform(wf)
    batch = st({"x": [None if np.isnan(v) else float(v) for v in data["x"]]})["x"]
    assert batch.dtype == offline.dtype == np.dtype(out_dtype or "float64")
    np.testing.assert_array_equal(batch, offline)
    for v, want in zip(data["x"], offline):
        one = st({"x": None if np.isnan(v) else float(v)})["x"]
        assert one.dtype == offline.dtype
        np.testing.assert_array_equal(one, np.array([want]))


@pytest.mark.tf
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("out_dtype", [None, "float32"])
def test_keras_export_keeps_out_dtype(out_dtype, tmp_path):
    """The in-graph ops and a SavedModel (whose graph grappler rewrites) give the offline values,
    bit for bit, in the op's dtype."""
    import tensorflow as tf

    from tabprep.serving import to_keras

    wf = tp.Workflow((["x"] >> ops.Normalize(out_dtype=out_dtype))
                     + (["i"] >> ops.FillMissing() >> ops.NormalizeMinMax(out_dtype=out_dtype)))
    wf.fit(_frame(TRAIN_X))
    data = _frame(DATA_X)
    offline = wf.transform(data)
    model = to_keras(wf)
    inputs = {"x": data["x"].to_numpy(), "i": data["i"].to_numpy("int64", na_value=0),
              "i__null": data["i"].isna().to_numpy()}
    outs = [("model", model(inputs))]
    if out_dtype is None:  # float64 shows a one-ulp difference that float32 rounding hides
        model.export(str(tmp_path / "sm"), verbose=False)
        outs.append(("SavedModel", tf.saved_model.load(str(tmp_path / "sm")).serve(inputs)))
    for where, got in outs:
        for c in ["x", "i"]:
            g = np.asarray(got[c])
            assert g.dtype == np.dtype(out_dtype or "float64") == offline[c].dtype, where
            np.testing.assert_array_equal(g, offline[c].to_numpy(), err_msg=where)


# -- loaders: float64 continuous columns come as float32 (docs/migration.md) -------------------------
def _loader_data(tmp_path):
    rng = np.random.default_rng(7)
    n = 300
    x = rng.lognormal(2, 1.5, n)
    x[::17] = np.nan
    df = pd.DataFrame({"row": np.arange(n, dtype="int64"), "x": x, "label": rng.integers(0, 2, n)})
    (tmp_path / "d").mkdir()
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "d" / "a.parquet", row_group_size=64)
    wf = tp.Workflow((["x"] >> ops.Normalize()) + ["row", "label"])
    wf.fit(tp.Dataset(str(tmp_path / "d"), cpu=True))
    offline = wf.transform(tp.Dataset(str(tmp_path / "d"), cpu=True)).compute().set_index("row")["x"]
    assert offline.dtype == np.float64
    return str(tmp_path / "d"), wf, offline


def test_loader_batches_of_float64_normalize_are_float32(tmp_path):
    from tabprep.loader import DataLoader

    d, wf, offline = _loader_data(tmp_path)
    seen = []
    for batch in DataLoader(d, batch_size=70, cat_names=["row"], cont_names=["x"], label_names=["label"],
                            shuffle=False, device="cpu").map(wf):
        x, rows = np.asarray(batch["x"]).reshape(-1), np.asarray(batch["row"]).reshape(-1)
        assert x.dtype == np.float32
        np.testing.assert_array_equal(x, offline.loc[rows].to_numpy().astype(np.float32))
        seen += rows.tolist()
    assert sorted(seen) == list(range(300))


@pytest.mark.jax
def test_jax_loader_float64_normalize_gives_float32_without_warning(tmp_path):
    jax = pytest.importorskip("jax")
    from tabprep.loader.jax import JaxLoader

    assert not jax.config.jax_enable_x64  # the default: a float64 array would be truncated, with a warning
    d, wf, offline = _loader_data(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # the loader's own notice of its float32 batches (NVTabular keeps float64) is not JAX's truncation warning
        warnings.filterwarnings("ignore", category=tp.NVTabularDifferenceWarning, message="loader: continuous column")
        for x, _ in JaxLoader(d, batch_size=100, cats=["row"], conts=["x"], labels=["label"], shuffle=False,
                              device="cpu").map(wf):
            assert x["x"].dtype == np.float32
            got = np.asarray(x["x"]).reshape(-1)
            np.testing.assert_array_equal(got, offline.loc[np.asarray(x["row"])].to_numpy().astype(np.float32))
