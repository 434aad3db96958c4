"""Wide frames transform in time linear in the number of columns (issue #30: the input contract
rebuilt ``set(input_columns)`` per column and ``input_columns`` was quadratic: an eager transform
of 200 rows x 5,000 columns took minutes). Bounds are generous: they fail on quadratic code, not
on a slow machine. benchmarks/wide_transform.py gives the figures."""
from __future__ import annotations

import time

import numpy as np
import pandas as pd

import tabprep as tp
from tabprep import ops
from tabprep.workflow import workflow as wfmod


def test_input_columns_of_20000_columns_is_linear():
    names = [f"c{i}" for i in range(20_000)]
    wf = tp.Workflow(names >> ops.Clip(min_value=0.0))
    start = time.perf_counter()
    cols = wf.input_columns
    assert time.perf_counter() - start < 1.0  # quadratic: 2e8 list comparisons, tens of seconds here
    assert cols == names


def test_transform_reads_input_columns_a_constant_number_of_times(monkeypatch):
    n = 300
    names = [f"c{i}" for i in range(n)]
    df = pd.DataFrame(np.random.default_rng(0).normal(size=(20, n)), columns=names)
    df.iloc[3, 5] = np.nan
    wf = tp.Workflow(names >> ops.FillMissing() >> ops.Clip(min_value=0.0))
    wf.fit(tp.Dataset(df))
    calls = []
    original = wfmod.Workflow.input_columns.fget
    monkeypatch.setattr(wfmod.Workflow, "input_columns", property(lambda self: calls.append(1) or original(self)))
    out = wf.transform(df)
    assert len(calls) < 10, f"input_columns computed {len(calls)} times for {n} columns"
    want = df.fillna(0.0).clip(lower=0.0)
    np.testing.assert_allclose(out[names].to_numpy(np.float64), want.to_numpy(np.float64))
