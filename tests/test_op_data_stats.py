"""NVTabular 23.08's ``DataStats`` op (nvtabular/ops/data_stats.py): its fit stores in ``op.output``,
per column, ``dtype``, ``min``, ``max``, ``mean``, ``std`` (sample std), ``per_nan`` (percent of
null rows) and, for non-float columns, ``cardinality`` (distinct non-null values); string columns'
min / max / mean / std are those of their lengths. Its transform returns the columns unchanged.

References: the exact dict nvtabular 23.08 printed for the frame of ``test_nvtabular_23_08_output``
(run in /tmp/nvt2), and pandas in the other tests.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops
from tabprep.testing import check_op

from conftest import make_dataset, to_pandas


def _nvt_frame():
    return pd.DataFrame({"i": [1, 2, 2, 5, 7, 3], "f": [1.5, np.nan, 2.5, 4.0, np.nan, -1.0],
                         "s": ["a", "bb", None, "a", "cccc", "bb"]})


#: what nvtabular 23.08 gives for _nvt_frame() in 2 partitions (DataStats().output after fit)
NVT_OUTPUT = {
    "f": {"dtype": "float64", "max": 4.0, "mean": 1.75, "min": -1.0, "per_nan": 33.333333333333336,
          "std": 2.101586702153082},
    "i": {"cardinality": 5, "dtype": "int64", "max": 7, "mean": 3.3333333333333335, "min": 1, "per_nan": 0.0,
          "std": 2.2509257354845507},
    "s": {"cardinality": 3, "dtype": "object", "max": 4.0, "mean": 2.0, "min": 1.0, "per_nan": 16.666666666666664,
          "std": 1.224744871391589},
}


def _close(got, expected):
    assert set(got) == set(expected), (sorted(got), sorted(expected))
    for col, stats in expected.items():
        assert set(got[col]) == set(stats), (col, sorted(got[col]), sorted(stats))
        for k, v in stats.items():
            if isinstance(v, str):
                assert got[col][k] == v, (col, k)
            elif v is None or (isinstance(v, float) and math.isnan(v)):
                assert got[col][k] is None, (col, k, got[col][k])
            else:
                assert got[col][k] == pytest.approx(v, rel=1e-12, abs=1e-12), (col, k, got[col][k], v)


def test_nvtabular_23_08_output(backend):
    """The fitted ``output`` is nvtabular 23.08's dict for the same frame."""
    op = ops.DataStats()
    wf = tp.Workflow(["i", "f", "s"] >> op)
    wf.fit(make_dataset(_nvt_frame(), backend, nparts=2))
    _close(op.output, NVT_OUTPUT)
    assert isinstance(op.output["i"]["min"], int) and isinstance(op.output["i"]["cardinality"], int)


def _pandas_stats(df):
    out = {}
    for c in df.columns:
        s = df[c]
        kind = "str" if s.dtype == object or pd.api.types.is_string_dtype(s.dtype) else s.dtype.kind
        numpy_dtype = getattr(s.dtype, "numpy_dtype", s.dtype)   # Int64 -> int64
        entry = {"dtype": "object" if kind == "str" else str(np.dtype(numpy_dtype)),
                 "per_nan": 100 * (1 - s.count() / len(s))}
        if kind != "f":
            entry["cardinality"] = int(s.nunique())
        v = s.str.len() if kind == "str" else s.astype("float64")
        v = v.astype("float64").dropna()
        entry.update({"min": v.min() if len(v) else None, "max": v.max() if len(v) else None,
                      "mean": v.mean() if len(v) else None, "std": v.std() if len(v) > 1 else None})
        out[c] = entry
    return out


def test_matches_pandas_with_nulls_bools_and_empty_partitions(backend):
    """Nullable ints, bools, an all-null float column and empty partitions; values as pandas'
    (``nunique``, ``count``, ``std`` with ddof=1, string lengths)."""
    df = pd.DataFrame({"n": pd.array([1, None, 3, 3, None, 9, 9, 9], dtype="Int64"),
                       "b": [True, False, True, True, False, True, True, False],
                       "z": np.full(8, np.nan),
                       "s": ["x", "yy", "", None, "x", "zzz", None, "yy"],
                       "g": np.linspace(-2, 5, 8, dtype="float32")})
    op = ops.DataStats()
    wf = tp.Workflow(list(df.columns) >> op)
    wf.fit(make_dataset(df, backend, nparts=4, empties=True))
    expected = _pandas_stats(df)
    expected["g"]["dtype"] = "float32"
    got = op.output
    # float32 values: compared at float32 precision
    for k in ("min", "max", "mean", "std"):
        assert got["g"][k] == pytest.approx(expected["g"][k], rel=1e-6)
    del got["g"], expected["g"]
    _close(got, expected)
    assert got["z"]["per_nan"] == 100.0 and "cardinality" not in got["z"]


def test_transform_is_identity_and_schema_unchanged(backend):
    df = _nvt_frame()
    wf = tp.Workflow(["i", "f", "s"] >> ops.DataStats())
    out = to_pandas(wf.fit_transform(make_dataset(df, backend, nparts=2)))
    pd.testing.assert_series_equal(out["i"], df["i"], check_dtype=False)
    np.testing.assert_array_equal(out["f"].to_numpy(), df["f"].to_numpy())
    assert out["s"].isna().tolist() == df["s"].isna().tolist()
    assert out["s"].dropna().tolist() == df["s"].dropna().tolist()
    assert [c.name for c in wf.output_schema] == ["i", "f", "s"]
    assert wf.output_schema["i"].dtype == "int64" and wf.output_schema["f"].dtype == "float64"


def test_infinite_values_are_left_out_and_warned():
    """+-inf: tabprep's statistics are over the finite values (NVTabular's max would be inf), and
    the fit warns naming the column (docs/migration.md, 'Non-finite values in statistics')."""
    df = pd.DataFrame({"x": [1.0, np.inf, 3.0, -np.inf, np.nan, 5.0]})
    op = ops.DataStats()
    with pytest.warns(UserWarning, match=r"DataStats.*\['x'\].*\+-inf"):
        tp.Workflow(["x"] >> op).fit(tp.Dataset(df))
    finite = df["x"][np.isfinite(df["x"])]
    assert op.output["x"]["max"] == finite.max() and op.output["x"]["min"] == finite.min()
    assert op.output["x"]["mean"] == pytest.approx(finite.mean())
    assert op.output["x"]["std"] == pytest.approx(finite.std())
    assert op.output["x"]["per_nan"] == pytest.approx(100 / 6)


def test_save_load_keeps_output_and_clear(tmp_path):
    op = ops.DataStats()
    wf = tp.Workflow(["i", "f", "s"] >> op)
    wf.fit(tp.Dataset(_nvt_frame()))
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    (stats_op,) = [o for o in loaded.ops if isinstance(o, ops.DataStats)]
    _close(stats_op.output, NVT_OUTPUT)
    op.clear()
    assert op.output == {}


def test_list_columns_are_refused_naming_the_column():
    df = pd.DataFrame({"l": [[1, 2], [3], []]})
    with pytest.raises(TypeError, match="'l'"):
        tp.Workflow(["l"] >> ops.DataStats()).fit(tp.Dataset(df))


@pytest.mark.filterwarnings("ignore::tabprep.NVTabularDifferenceWarning")   # the battery's data holds +-inf
def test_check_op():
    check_op(ops.DataStats())


def test_cardinality_is_exact_beyond_small_vocabularies():
    """NVTabular's ``nunique`` is exact; so is tabprep's (the profile's distinct count alone is an
    estimate above 1024 values)."""
    n = 5000
    df = pd.DataFrame({"i": np.arange(n) % 4999, "s": (np.arange(n) % 3001).astype(str)})
    df.loc[::7, "s"] = None
    op = ops.DataStats()
    tp.Workflow(["i", "s"] >> op).fit(tp.Dataset(df, npartitions=3))
    assert op.output["i"]["cardinality"] == df["i"].nunique()
    assert op.output["s"]["cardinality"] == df["s"].nunique()


def test_string_lengths_with_and_without_nulls_across_partitions(backend):
    """Partitions with a null string (pandas' lengths float64) and without one or empty (int64): the
    lengths' statistics merge (the conformance battery's data failed here)."""
    df = pd.DataFrame({"s": ["a", "bb", "ccc", None, "dddd", "ee"]})
    op = ops.DataStats()
    tp.Workflow(["s"] >> op).fit(make_dataset(df, backend, nparts=3, empties=True))
    # the stat protocol on pandas partitions as a fit may hand them (check_op does): str dtype
    direct = ops.DataStats()
    parts = [direct.fit_partial(["s"], p) for p in (df.iloc[:3], df.iloc[3:], df.iloc[:0])]
    direct.fit_finalize(["s"], direct.fit_combine(parts))
    assert direct.output == op.output
    lengths = df["s"].dropna().str.len()
    assert (op.output["s"]["min"], op.output["s"]["max"]) == (1.0, 4.0)
    assert op.output["s"]["mean"] == pytest.approx(lengths.mean())
    assert op.output["s"]["std"] == pytest.approx(lengths.std())
    assert op.output["s"]["cardinality"] == 5 and op.output["s"]["per_nan"] == pytest.approx(100 / 6)


def test_serving_passes_the_columns_through():
    """A workflow holding DataStats serves (its transform is the identity, as NVTabular's Triton
    export runs it): ServingTransform's output equals the offline transform."""
    from tabprep.serving import ServingTransform

    df = pd.DataFrame({"i": [1, 2, 3], "c": ["a", "b", "a"]})
    wf = tp.Workflow((["i"] >> ops.DataStats()) + (["c"] >> ops.Categorify()))
    wf.fit(tp.Dataset(df))
    offline = wf.transform(df)
    got = ServingTransform(wf)(df)
    np.testing.assert_array_equal(np.asarray(got["i"]).ravel(), offline["i"].to_numpy())
    np.testing.assert_array_equal(np.asarray(got["c"]).ravel(), offline["c"].to_numpy())


@pytest.mark.tf
def test_keras_export_passes_the_columns_through():
    pytest.importorskip("tensorflow")
    from serving_helpers import keras_inputs, keras_outputs

    from tabprep.serving import ServingTransform, to_keras

    df = pd.DataFrame({"i": [1, 2, 3], "x": [0.5, np.nan, 2.0]})
    wf = tp.Workflow(["i", "x"] >> ops.DataStats())
    wf.fit(tp.Dataset(df))
    new = pd.DataFrame({"i": [4, 5], "x": [1.5, np.nan]})
    out = keras_outputs(to_keras(wf)(keras_inputs(ServingTransform(wf), new)), ["i", "x"])
    np.testing.assert_array_equal(np.asarray(out["i"]).ravel(), [4, 5])
    np.testing.assert_array_equal(np.asarray(out["x"]).ravel(), [1.5, np.nan])
