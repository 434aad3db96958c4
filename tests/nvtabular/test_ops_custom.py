"""Custom ops written against NVTabular 23.08's ``Operator`` / ``StatOperator`` API
(merlin/dag/operator.py: ``transform(col_selector, df)`` reading ``col_selector.names``,
``column_mapping(col_selector)`` naming the outputs; nvtabular's ``StatOperator.fit(col_selector,
ddf)`` returning dask statistics). tabprep's op API is another (``transform(columns, df)`` with a
list of names, ``output_column_names``, ``fit_partial`` / ``fit_combine`` / ``fit_finalize``), so
a ported class is announced when it is defined, naming what tabprep calls instead, rather than
failing later with ``'list' object has no attribute 'names'`` or silently never being called."""
from __future__ import annotations

import warnings

import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops


def test_nvtabular_style_custom_op_warns_when_defined_naming_tabprep_api():
    """A class with NVTabular's transform(col_selector, df) and column_mapping warns at the
    class statement, naming the op, the NVTabular members and tabprep's replacements."""
    with pytest.warns(tp.NVTabularDifferenceWarning) as rec:
        class PlusOne(ops.Operator):
            def transform(self, col_selector, df):
                return pd.DataFrame({f"{c}_p": df[c] + 1 for c in col_selector.names})

            def column_mapping(self, col_selector):
                return {f"{c}_p": [c] for c in col_selector.names}
    msg = str(rec[0].message)
    for word in ("PlusOne", "column_mapping", "col_selector", "output_column_names", "transform(columns, df)",
                 "docs/migration.md"):
        assert word in msg


def test_nvtabular_style_stat_op_fit_warns():
    """StatOperator.fit(col_selector, ddf) / fit_finalize(dask_stats) is NVTabular's; tabprep calls
    fit_partial / fit_combine / fit_finalize(columns, combined), so the class is announced."""
    with pytest.warns(tp.NVTabularDifferenceWarning, match="fit_partial"):
        class MyMean(ops.StatOperator):
            def fit(self, col_selector, ddf):
                return ddf[col_selector.names].mean()


def test_tabprep_style_custom_op_is_quiet_and_works():
    """A custom op written to tabprep's API defines quietly and transforms."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", tp.NVTabularDifferenceWarning)

        class Double(ops.Operator):
            def transform(self, columns, df):
                return df[columns] * 2

    out = tp.Workflow(["a"] >> Double()).transform(pd.DataFrame({"a": [1, 2, None]}))
    assert out["a"].tolist()[:2] == [2, 4] and pd.isna(out["a"].tolist()[2])


class _Half(ops.Operator):
    """tabprep's API, but the result's dtype (float64) is not declared: the schema says int64."""

    def transform(self, columns, df):
        return df[columns] / 2


class _HalfDeclared(_Half):
    def column_schema(self, col):
        return col.with_(dtype="float64")


def test_undeclared_float_result_of_an_int_column_is_an_error_not_truncated(tmp_path):
    """NVTabular keeps what a custom op's transform returns (checked on nvtabular 23.8.0: halving
    int64 [1, 2, 3] gives [0.5, 1.0, 1.5]); tabprep cast it back to the declared int64, [0, 1, 1],
    silently. Now an error naming the column and column_schema, in memory and through a Dataset."""
    df = pd.DataFrame({"a": [1, 2, 3]})
    wf = tp.Workflow(["a"] >> _Half())
    with pytest.raises(ValueError, match="'a'.*column_schema"):
        wf.fit_transform(tp.Dataset(df)).compute()
    with pytest.raises(ValueError, match="'a'.*column_schema"):
        wf.transform(df)
    with pytest.raises(ValueError, match="'a'"):
        wf.transform(tp.Dataset(df)).to_parquet(str(tmp_path / "out"))


def test_declared_float_result_keeps_its_values():
    df = pd.DataFrame({"a": [1, 2, 3]})
    wf = tp.Workflow(["a"] >> _HalfDeclared())
    assert wf.fit_transform(tp.Dataset(df)).compute()["a"].tolist() == [0.5, 1.0, 1.5]
    assert wf.output_schema["a"].dtype == "float64"


def test_integral_float_result_is_still_cast_to_the_declared_int():
    """A float result whose values are whole numbers (e.g. an empty-partition or NaN-free drift)
    is cast to the declared int dtype, as before."""
    class _Same(ops.Operator):
        def transform(self, columns, df):
            return df[columns] * 1.0

    out = tp.Workflow(["a"] >> _Same()).transform(pd.DataFrame({"a": [1, 2, 3]}))
    assert str(out["a"].dtype) == "int64" and out["a"].tolist() == [1, 2, 3]
