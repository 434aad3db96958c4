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
