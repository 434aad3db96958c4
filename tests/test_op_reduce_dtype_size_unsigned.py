"""ReduceDtypeSize as NVTabular 23.08 on unsigned and all-null columns: its compute_output_schema
narrows only columns whose element type is signed int (to int8/16/32/64), so unsigned columns keep
their dtype; it casts every float column to ``float_dtype`` (float32), an all-null one too."""
import warnings

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops


def _run(df, tmp_path=None, **kw):
    wf = tp.Workflow(list(df.columns) >> ops.ReduceDtypeSize(**kw))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wf.fit(tp.Dataset(df, npartitions=2))
        if tmp_path is not None:
            wf.save(str(tmp_path / "wf"))
            wf = tp.Workflow.load(str(tmp_path / "wf"))
        return wf, wf.transform(tp.Dataset(df, npartitions=2)).to_ddf().compute()


def _frame():
    return pd.DataFrame({
        "u64": np.array([1, 5, 7, 100], dtype="uint64"),
        "u64big": np.array([1, 2**64 - 1, 3, 4], dtype="uint64"),
        "u32": np.array([1, 300, 7, 0], dtype="uint32"),
        "u8": np.array([1, 2, 3, 4], dtype="uint8"),
        "U16": pd.array([1, None, 3, 4], dtype="UInt16"),
        "i64": np.array([1, 300, -7, 0], dtype="int64"),
        "fnull": np.array([np.nan] * 4, dtype="float64"),
        "f": np.array([0.5, np.nan, 2.0, 1.0], dtype="float64"),
    })


@pytest.mark.parametrize("saved", [False, True])
def test_unsigned_keep_dtype_signed_narrow_allnull_float32(tmp_path, saved):
    df = _frame()
    wf, out = _run(df, tmp_path if saved else None)
    expect = {"u64": "uint64", "u64big": "uint64", "u32": "uint32", "u8": "uint8", "U16": "UInt16",
              "i64": "int16", "fnull": "float32", "f": "float32"}
    for c, dt in expect.items():
        assert str(out[c].dtype) == dt, (c, out[c].dtype)
        assert str(wf.output_schema[c].dtype).lower() == dt.lower(), (c, wf.output_schema[c].dtype)
    for c in ("u64", "u64big", "u32", "u8", "i64"):
        assert [int(v) for v in out[c]] == [int(v) for v in df[c]]
    assert out["U16"].tolist()[0] == 1 and pd.isna(out["U16"].tolist()[1]) and out["U16"].tolist()[2:] == [3, 4]
    assert np.isnan(out["fnull"].to_numpy()).all()
    assert out["f"].tolist()[0] == 0.5 and np.isnan(out["f"].tolist()[1])


def test_unsigned_list_column_keeps_dtype():
    df = pd.DataFrame({"l": pd.Series([np.array([1, 2], dtype="uint32"), np.array([3], dtype="uint32"),
                                       np.array([], dtype="uint32"), np.array([9], dtype="uint32")])})
    wf, out = _run(df)
    leaves = np.concatenate([np.asarray(v) for v in out["l"]])
    assert leaves.tolist() == [1, 2, 3, 9]


def test_explicit_unsigned_candidates_narrow_unsigned_columns():
    # tabprep's int_dtypes (no NVTabular counterpart): an unsigned column takes the first unsigned candidate
    df = pd.DataFrame({"u32": np.array([1, 300, 7, 0], dtype="uint32"), "i64": np.array([1, 2, 3, 4], dtype="int64")})
    wf, out = _run(df, int_dtypes=["int8", "uint8", "uint16", "int16"])
    assert str(out["u32"].dtype) == "uint16" and out["u32"].tolist() == [1, 300, 7, 0]
    assert str(out["i64"].dtype) == "int8"
    assert str(wf.output_schema["u32"].dtype) == "uint16"
