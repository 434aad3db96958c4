"""The GPU backend's column shortcuts (``TABPREP_GPU_FAST_COLUMNS``, ``gpu_columns._FAST_COLUMNS``): device
columns of cuDF series, series of device columns, HashBucket's id series and frames concatenated
from their columns, taken without cuDF's Series layer. Each must equal what the Series API gives
(the path it replaced, ``_FAST_COLUMNS`` off) and a pandas reference written here: values, null
masks, dtypes, names and indexes, on ints / floats / bools with nulls, NaN and +-inf."""
from __future__ import annotations

import mmh3
import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.gpu


def _pandas_columns(n: int = 9) -> dict:
    return {
        "i64": pd.array([1, None, 3, -4, None, 6, 7, 2 ** 40, 0], dtype="Int64"),
        "i32": pd.array([None, 2, 3, 4, 5, 6, 7, 8, 9], dtype="Int32"),
        "u8": pd.array([1, 2, None, 4, 5, 6, 7, 8, 255], dtype="UInt8"),
        "f64": np.array([0.5, np.nan, np.inf, -np.inf, 2, 3, 4, -0.0, 1e300]),
        "f32": np.array([0.5, np.nan, np.inf, -1, 2, 3, 4, 5, 6], np.float32),
        "b": pd.array([True, None, False, True, None, True, False, False, True], dtype="boolean"),
    }


def _on_gpu(cudf, name, values, nulls_at=()):
    s = cudf.Series(values, name=name, nan_as_null=False) if isinstance(values, np.ndarray) \
        else cudf.from_pandas(pd.Series(values, name=name))
    if nulls_at:   # float nulls next to NaN (cuDF keeps them apart)
        mask = np.zeros(len(s), bool)
        mask[list(nulls_at)] = True
        s = s.mask(cudf.Series(mask))
    return s


@pytest.mark.parametrize("name", ["i64", "i32", "u8", "f64", "f32", "b"])
def test_device_column_fast_equals_the_series_path_and_pandas(monkeypatch, name):
    cudf = pytest.importorskip("cudf")
    from tabprep.backend import gpu_columns as gpu

    raw = _pandas_columns()[name]
    s = _on_gpu(cudf, name, raw, nulls_at=(5,) if name.startswith("f") else ())
    got = {}
    for fast in (True, False):
        monkeypatch.setattr(gpu, "_FAST_COLUMNS", fast)
        col = gpu._device_column(s)
        got[fast] = (col.values.get(), None if col.mask is None else col.mask.get(), col.values.dtype)
    ref = s.to_pandas()
    # the mask holds the nulls and, in a float column that has nulls, its NaN too (as cuDF's isna),
    # so that a chain ending in Clip writes both as nulls, as the pandas path writes NaN
    want_mask = ref.isna().to_numpy()
    for fast, (values, mask, dtype) in got.items():
        assert mask is not None and mask.tolist() == want_mask.tolist(), (fast, mask)
        assert dtype == got[False][2], (dtype, got[False][2])
        keep = ~mask
        np.testing.assert_array_equal(values[keep], ref.to_numpy()[keep].astype(dtype))
        if name.startswith("f"):   # a float null is NaN in the values (as to_cupy(na_value=nan))
            assert np.isnan(values[mask]).all()
        np.testing.assert_array_equal(values, got[False][0])


@pytest.mark.parametrize("with_mask", [False, True])
def test_device_series_fast_keeps_values_name_index_and_nulls(monkeypatch, with_mask):
    cudf = pytest.importorskip("cudf")
    import cupy

    from tabprep.backend import columns as C
    from tabprep.backend import gpu_columns as gpu

    like = cudf.Series(np.arange(6.0), index=np.arange(10, 16), name="x")
    values = cupy.asarray(np.array([1.5, -2, np.nan, 4, 5, 6], np.float32))
    mask = cupy.asarray(np.array([False, True, False, False, False, True])) if with_mask else None
    out = {}
    for fast in (True, False):
        monkeypatch.setattr(gpu, "_FAST_COLUMNS", fast)
        out[fast] = gpu._device_series(C.DeviceColumn(values, mask), like, "y").to_pandas()
    for fast, got in out.items():
        assert got.name == "y" and got.index.tolist() == list(range(10, 16)), fast
        assert str(got.dtype) == "float32", (fast, got.dtype)
        assert got.isna().tolist() == ([False, True, True, False, False, True] if with_mask
                                      else [False, False, True, False, False, False]), fast
        kept = ~got.isna().to_numpy()
        np.testing.assert_array_equal(got.to_numpy()[kept], values.get()[kept])
        pd.testing.assert_series_equal(got, out[False])


def test_bucket_ids_keep_name_and_index_and_follow_mmh3(monkeypatch):
    cudf = pytest.importorskip("cudf")
    from tabprep.backend import gpu_columns as gpu

    vals = pd.array([5, None, -3, 2 ** 40, 0, 7], dtype="Int64")
    s = cudf.from_pandas(pd.Series(vals, index=np.arange(20, 26), name="C1"))
    out = {}
    for fast in (True, False):
        monkeypatch.setattr(gpu, "_FAST_COLUMNS", fast)
        out[fast] = gpu._bucket_ids(s, 1000, "int32").to_pandas()
    want = [0 if v is pd.NA else mmh3.hash(int(v).to_bytes(8, "little", signed=True), 0, signed=False) % 1000
            for v in vals]
    for fast, got in out.items():
        assert got.name == "C1" and got.index.tolist() == list(range(20, 26)), fast
        assert str(got.dtype) == "int32" and got.tolist() == want, (fast, got.tolist(), want)


def test_concat_columns_fast_equals_the_series_path(monkeypatch):
    cudf = pytest.importorskip("cudf")
    from tabprep import backend
    from tabprep.backend import gpu, gpu_columns

    cols = _pandas_columns()
    a = cudf.from_pandas(pd.DataFrame({k: cols[k] for k in ("i64", "f64")}, index=np.arange(30, 39)))
    b = cudf.from_pandas(pd.DataFrame({"b": cols["b"], "s": ["x", None, "y", "", "z", "w", "v", "u", "t"],
                                       "f64": np.arange(9.0)}))   # a repeated name: the last frame's wins
    c = cudf.DataFrame({"l": cudf.Series([[1], [], None, [2, 3], [4], [5], [6], [7], [8]])})
    out = {}
    for fast in (True, False):
        monkeypatch.setattr(gpu_columns, "_FAST_COLUMNS", fast)
        out[fast] = backend.concat_columns([a, b, c])
    got, want = out[True], out[False]
    assert list(got.columns) == ["i64", "f64", "b", "s", "l"] == list(want.columns)
    assert got.index.to_pandas().tolist() == list(range(30, 39)) == want.index.to_pandas().tolist()
    for name in got.columns:
        assert got[name].dtype == want[name].dtype, name
    pd.testing.assert_frame_equal(got.to_pandas(), want.to_pandas())
    assert got["f64"].to_pandas().tolist() == list(np.arange(9.0))   # positional, from b
    # frames of different lengths still go the old way (an error or an alignment, as before)
    monkeypatch.setattr(gpu_columns, "_FAST_COLUMNS", True)
    short = cudf.DataFrame({"z": [1, 2]})
    try:
        old = gpu._gpu_frame({"i64": a["i64"], "z": short["z"]}, a.index)
    except Exception as exc:  # noqa: BLE001
        with pytest.raises(type(exc)):
            backend.concat_columns([a[["i64"]], short])
    else:
        pd.testing.assert_frame_equal(backend.concat_columns([a[["i64"]], short]).to_pandas(), old.to_pandas())
