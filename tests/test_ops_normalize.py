"""Normalize ((x - mean) / sample std (ddof=1, as NVTabular 23.08), float64 by default as NVTabular's
``out_dtype=None``) and NormalizeMinMax against numpy."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tabprep as tp
from tabprep import ops

from conftest import make_dataset, to_pandas

HYP = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False, width=64)


def np_normalize(train, data, dtype="float64"):
    x = np.array([v for v in train if v is not None and not np.isnan(v)], dtype="float64")
    mean, std = (x.mean(), x.std(ddof=1)) if x.size > 1 else (0.0, 0.0)
    y = np.array([np.nan if v is None else v for v in data], dtype="float64")
    if std == 0 or x.min() == x.max():  # constant: std is 0 (numpy may say 1e-17)
        return np.where(np.isnan(y), np.nan, 0.0).astype(dtype)
    return ((y - mean) / std).astype(dtype)


def np_minmax(train, data, dtype="float64"):
    x = np.array([v for v in train if v is not None and not np.isnan(v)], dtype="float64")
    y = np.array([np.nan if v is None else v for v in data], dtype="float64")
    if x.size == 0 or x.max() == x.min():
        return np.where(np.isnan(y), np.nan, 0.0).astype(dtype)
    return ((y - x.min()) / (x.max() - x.min())).astype(dtype)


def fit_apply(op, train, data, backend="cpu", nparts=3):
    wf = tp.Workflow(list(train.columns) >> op)
    wf.fit(make_dataset(train, backend, nparts=nparts))
    return wf, to_pandas(wf.transform(make_dataset(data, backend, nparts=2)))


def test_normalize_hand_values(backend):
    df = pd.DataFrame({"x": [1.0, 2.0, np.nan, 3.0, 4.0], "i": pd.array([1, None, 1, 1, 1], dtype="Int64")})
    wf, out = fit_apply(ops.Normalize(), df, df, backend)
    std = np.std([1.0, 2.0, 3.0, 4.0], ddof=1)  # sample std of 1..4 (NVTabular's)
    np.testing.assert_allclose(out["x"].to_numpy(), np.array([-1.5, -0.5, np.nan, 0.5, 1.5]) / std, rtol=1e-6)
    # constant column: std 0 -> 0, null stays null
    assert out["i"].isna().tolist() == [False, True, False, False, False]
    assert out["i"].fillna(-9).tolist() == [0.0, -9, 0.0, 0.0, 0.0]
    assert str(out["x"].dtype) == "float64" and wf.output_schema["x"].dtype == "float64"  # NVTabular's default
    assert "continuous" in wf.output_schema["x"].tags


@pytest.mark.parametrize("value", [0.1, 0.7, 1e-300, -3.3e15, 123456.789])
def test_constant_column_maps_to_zero(value):
    # the float mean of [0.1] * 6 is 0.10000000000000002: a naive std is ~1e-17, not 0,
    # and every value would come out as -1
    df = pd.DataFrame({"x": [value] * 6 + [np.nan]})
    for nparts in (1, 3):
        _, out = fit_apply(ops.Normalize(), df, df, nparts=nparts)
        assert out["x"].tolist()[:6] == [0.0] * 6 and np.isnan(out["x"].iloc[6])


def test_normalize_sample_std_as_nvtabular():
    """NVTabular 23.08 divides by the sample std (nvtabular/ops/moments.py, ddof=1)."""
    df = pd.DataFrame({"x": [0.0, 2.0]})
    _, out = fit_apply(ops.Normalize(), df, df, nparts=1)
    np.testing.assert_allclose(out["x"].to_numpy("float64"), [-1 / np.sqrt(2), 1 / np.sqrt(2)], rtol=1e-6)


def test_normalize_stable_merge_of_large_offset_values():
    rng = np.random.default_rng(0)
    x = 1e9 + rng.normal(0, 1, 5000)
    df = pd.DataFrame({"x": x})
    _, out = fit_apply(ops.Normalize(), df, df, nparts=7)
    np.testing.assert_allclose(out["x"].to_numpy("float64"), (x - x.mean()) / x.std(ddof=1), rtol=1e-4, atol=1e-4)


def test_minmax_hand_values_and_out_of_range(backend):
    train = pd.DataFrame({"x": [2.0, np.nan, 4.0, 6.0], "u": np.array([5, 5, 5, 5], dtype="uint8")})
    test = pd.DataFrame({"x": [0.0, 4.0, np.nan, 10.0], "u": np.array([5, 6, 0, 5], dtype="uint8")})
    wf, out = fit_apply(ops.NormalizeMinMax(), train, test, backend)
    assert out["x"].isna().tolist() == [False, False, True, False]
    assert out["x"].dropna().tolist() == [-0.5, 0.5, 2.0]
    assert out["u"].tolist() == [0.0, 0.0, 0.0, 0.0]  # max == min -> 0
    assert str(out["u"].dtype) == "float64"  # NVTabular's default


def test_list_column_normalized_elementwise():
    arr = pa.array([[1.0, 3.0], None, [], [5.0, None]], type=pa.list_(pa.float64()))
    df = pd.DataFrame({"l": pd.Series(pd.arrays.ArrowExtensionArray(arr))})
    wf = tp.Workflow(["l"] >> ops.Normalize())
    wf.fit(df)
    got = wf.transform(df)["l"].tolist()
    std = np.std([1.0, 3.0, 5.0], ddof=1)
    assert got[1] is None or got[1] is pd.NA
    np.testing.assert_allclose(list(got[0]), [(1 - 3) / std, 0.0], rtol=1e-6)
    assert list(got[2]) == []
    assert got[3][1] is None or np.isnan(got[3][1])


@HYP
@given(train=st.lists(st.one_of(st.none(), finite), min_size=0, max_size=40),
       data=st.lists(st.one_of(st.none(), finite), min_size=0, max_size=20), nparts=st.integers(1, 4))
def test_property_normalize_matches_numpy(train, data, nparts):
    tr = pd.DataFrame({"x": pd.Series([np.nan if v is None else v for v in train], dtype="float64")})
    te = pd.DataFrame({"x": pd.Series([np.nan if v is None else v for v in data], dtype="float64")})
    _, out = fit_apply(ops.Normalize(), tr, te, nparts=nparts)
    exp = np_normalize(train, data)
    got = out["x"].to_numpy("float64")
    assert out["x"].dtype == np.float64
    np.testing.assert_array_equal(np.isnan(got), np.isnan(exp))
    scale = max(1.0, float(np.nanmax(np.abs(exp))) if exp.size and not np.all(np.isnan(exp)) else 1.0)
    np.testing.assert_allclose(got, exp, rtol=1e-5, atol=1e-5 * scale)


@HYP
@given(train=st.lists(st.one_of(st.none(), finite), min_size=0, max_size=40),
       data=st.lists(st.one_of(st.none(), finite), min_size=0, max_size=20), nparts=st.integers(1, 4))
def test_property_minmax_matches_numpy(train, data, nparts):
    tr = pd.DataFrame({"x": pd.Series([np.nan if v is None else v for v in train], dtype="float64")})
    te = pd.DataFrame({"x": pd.Series([np.nan if v is None else v for v in data], dtype="float64")})
    _, out = fit_apply(ops.NormalizeMinMax(), tr, te, nparts=nparts)
    exp = np_minmax(train, data)
    got = out["x"].to_numpy("float64")
    np.testing.assert_array_equal(np.isnan(got), np.isnan(exp))
    np.testing.assert_allclose(got, exp, rtol=1e-5, atol=1e-5)
    # on the training data itself, values lie in [0, 1]
    _, self_out = fit_apply(ops.NormalizeMinMax(), tr, tr, nparts=nparts)
    v = self_out["x"].dropna().to_numpy("float64")
    assert np.all((v >= 0) & (v <= 1))


@HYP
@given(chunks=st.lists(st.lists(finite, min_size=0, max_size=12), min_size=1, max_size=10), seed=st.integers(0, 10_000))
def test_merged_moments_do_not_depend_on_grouping(chunks, seed):
    """The fit merges partial moments in a tree whose shape follows the cluster (each worker first
    merges the partitions it fitted), so a grouping that depends on the number of workers must not
    change the statistics: any order and any tree of merges gives the same mean and M2, bit for
    bit, and they equal the exactly rounded values of Chan's formula (computed here with
    fractions from the partials' own numbers)."""
    from fractions import Fraction

    from tabprep.stats.moments import combine_moments, partial_moments

    parts = [partial_moments(pd.Series(c, dtype="float64")) for c in chunks]
    flat = combine_moments(parts)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(parts))
    shuffled = [parts[i] for i in order]
    cut = sorted(rng.choice(np.arange(1, len(parts)), size=min(2, len(parts) - 1), replace=False)) if len(parts) > 1 else []
    groups = np.split(np.arange(len(parts)), cut)
    tree = combine_moments([combine_moments([shuffled[i] for i in g]) for g in groups])
    assert (tree.count, tree.mean, tree.m2) == (flat.count, flat.mean, flat.m2)
    n = sum(p.count for p in parts)
    assert flat.count == n
    if n:
        s1 = sum(Fraction(p.count) * Fraction(p.mean) for p in parts)
        s2 = sum(Fraction(p.m2) + p.count * Fraction(p.mean) ** 2 for p in parts)
        assert flat.mean == float(s1 / n)
        assert flat.m2 == float(s2 - s1 * s1 / n)


@pytest.mark.parametrize("values", [[1e200, -1e200, 3e200], [1.7e308, 1.7e308, -1.7e308], [1e-320, 3e-320]])
def test_merged_moments_of_extreme_values_match_numpy(values):
    """Values near the float64 limits (squares beyond float64, subnormals) merge without an error:
    mean as numpy's where it is finite, M2 inf where numpy's is."""
    from tabprep.stats.moments import combine_moments, partial_moments

    parts = [partial_moments(pd.Series([v], dtype="float64")) for v in values]
    got = combine_moments(parts[:1] + [combine_moments(parts[1:])])
    x = np.array(values)
    with np.errstate(over="ignore"):  # numpy's own mean and M2 overflow here: that is the reference
        ref_mean = x.mean()
        ref_m2 = float(((x - ref_mean) ** 2).sum()) if np.isfinite(ref_mean) else np.inf
    assert got.count == len(values)
    if np.isfinite(ref_mean):
        assert got.mean == pytest.approx(ref_mean, rel=1e-12, abs=1e-330)
    assert np.isinf(got.m2) == np.isinf(ref_m2)
    if np.isfinite(ref_m2):
        assert got.m2 == pytest.approx(ref_m2, rel=1e-12, abs=1e-330)


def test_normalize_warns_once_on_a_zero_std_column(backend):
    """NVTabular 23.08 outputs x - mean where tabprep outputs 0 (docs/migration.md): loud at fit."""
    import warnings

    df = pd.DataFrame({"const": [5.0] * 6, "x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
    wf = tp.Workflow(["const", "x"] >> ops.Normalize())
    with pytest.warns(UserWarning, match=r"Normalize: column\(s\) \['const'\] have a fitted std of 0") as rec:
        wf.fit(make_dataset(df, backend, nparts=3))
    assert sum("std of 0" in str(w.message) for w in rec) == 1  # once per op, not per partition
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning where every std is non-zero
        tp.Workflow(["x"] >> ops.Normalize()).fit(make_dataset(df, backend, nparts=3))


def test_minmax_warns_once_on_a_flat_column(backend):
    """max == min: tabprep outputs 0, NVTabular 23.08 ``x / (2 * x)`` (0.5, NaN for 0;
    nvtabular/ops/normalize.py NormalizeMinMax.transform): a documented difference, loud at fit."""
    import warnings

    df = pd.DataFrame({"flat": [2.5] * 6, "x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
    wf = tp.Workflow(["flat", "x"] >> ops.NormalizeMinMax())
    with pytest.warns(UserWarning, match=r"NormalizeMinMax: column\(s\) \['flat'\] have a fitted max equal") as rec:
        wf.fit(make_dataset(df, backend, nparts=3))
    assert sum("fitted max equal" in str(w.message) for w in rec) == 1  # once per op, not per partition
    assert to_pandas(wf.transform(make_dataset(df, backend, nparts=2)))["flat"].tolist() == [0.0] * 6
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning where every column has a range
        tp.Workflow(["x"] >> ops.NormalizeMinMax()).fit(make_dataset(df, backend, nparts=3))
