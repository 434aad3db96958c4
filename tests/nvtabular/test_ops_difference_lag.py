"""DifferenceLag as NVTabular 23.08's (nvtabular/ops/difference_lag.py): ``output_dtype`` is
numpy.float32, so the data and the output schema are float32 whatever the input dtype; the
outputs are ordered by ``column_mapping`` (for each input column, its shifts in the order given:
``t_difference_lag_1, t_difference_lag_-1, p_difference_lag_1, ...``); a row whose partition key
differs from the row ``shift`` before (or after, for a negative shift) is null."""
from __future__ import annotations

import numpy as np
import pandas as pd

import tabprep as tp
from tabprep import ops

from conftest import make_dataset, to_pandas


def _df() -> pd.DataFrame:
    return pd.DataFrame({"u": [1, 1, 1, 2, 2, 2, 3, 3],
                         "t": np.array([10, 12, 20, 5, 9, 9, 1_700_000_000, 1_700_003_600], dtype="int64"),
                         "p": np.array([1.5, np.nan, 2.0, 3.0, 4.25, np.inf, -1.0, 0.5], dtype="float32")})


def _ref(df: pd.DataFrame, col: str, k: int) -> np.ndarray:
    """Plain pandas: the difference within a key, in float64 (exact for these values)."""
    x = df[col].astype("float64")
    same = df["u"].eq(df["u"].shift(k))
    return (x - x.shift(k)).where(same).to_numpy()


def test_difference_lag_output_dtype_is_float32(backend, tmp_path):
    """DifferenceLag.output_dtype is numpy.float32: int64 and float32 inputs both give float32
    data and a float32 output schema, also after save/load; values are the lagged differences."""
    df = _df()
    wf = tp.Workflow(["t", "p"] >> ops.DifferenceLag("u", shift=[1, -1]))
    wf.fit(make_dataset(df, backend, nparts=1))
    names = ["t_difference_lag_1", "t_difference_lag_-1", "p_difference_lag_1", "p_difference_lag_-1"]
    assert wf.output_schema.column_names == names
    assert [wf.output_schema[c].dtype for c in names] == ["float32"] * 4
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    assert [loaded.output_schema[c].dtype for c in names] == ["float32"] * 4
    for w in (wf, loaded):
        out = to_pandas(w.transform(make_dataset(df, backend, nparts=1)))
        assert list(out.columns) == names
        assert [str(out[c].dtype) for c in names] == ["float32"] * 4
        for c in ("t", "p"):
            for k in (1, -1):
                got = out[f"{c}_difference_lag_{k}"].to_numpy("float64", na_value=np.nan)
                np.testing.assert_array_equal(got, _ref(df, c, k).astype("float32").astype("float64"))


def test_difference_lag_parquet_output_is_float32(backend, tmp_path):
    """The written parquet holds float32 columns (what NVTabular's to_parquet writes)."""
    import pyarrow.parquet as pq

    df = _df()
    wf = tp.Workflow(["t"] >> ops.DifferenceLag("u"))
    wf.fit_transform(make_dataset(df, backend, nparts=2, empties=False)).to_parquet(str(tmp_path / "out"))
    files = sorted((tmp_path / "out").glob("*.parquet"))
    assert files
    for f in files:
        assert str(pq.read_schema(f).field("t_difference_lag_1").type) == "float"
