"""LambdaOp as NVTabular 23.08's (``nvtabular/ops/lambdaop.py`` is ``merlin.dag.ops.udf.UDF``):
the result's dtype is what ``f`` returns, the output schema says that dtype, and
``LambdaOp(f, dependency, label, dtype, tags, properties)`` takes NVTabular's arguments."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops
from tabprep.testing import check_op

from conftest import make_dataset, to_pandas


def _run(op, df, backend="cpu", cols=("a",)):
    wf = tp.Workflow(list(cols) >> op)
    out = to_pandas(wf.fit_transform(make_dataset(df, backend, nparts=2)).to_ddf().compute())
    return wf, out


@pytest.mark.parametrize("f, expect", [
    (lambda c: c / 2, [0.5, 1.0, 1.5, 2.0]),
    (lambda c: c.astype(float), [1.0, 2.0, 3.0, 4.0]),
    (np.sqrt, list(np.sqrt(np.array([1, 2, 3, 4], dtype="float64")))),
])
def test_result_dtype_is_what_f_returns(backend, f, expect):
    """UDF.transform returns ``f``'s Series as is (merlin/dag/ops/udf.py UDF.transform) and the
    executor records that dtype in the output schema (UDF.dynamic_dtypes): ``c / 2`` of int64 is
    float64, not int64 truncated."""
    df = pd.DataFrame({"a": np.array([1, 2, 3, 4], dtype="int64")})
    wf, out = _run(ops.LambdaOp(f), df, backend)
    assert out["a"].tolist() == expect
    assert str(out["a"].dtype) == "float64"
    assert wf.output_schema["a"].dtype == "float64"


def test_float32_input_schema_matches_data():
    """The schema's dtype equals the data's (UDF.dynamic_dtypes): float32 * 2.0 stays float32,
    astype('float64') is float64 in data and schema."""
    df = pd.DataFrame({"a": np.array([1.5, 2.5, np.nan], dtype="float32")})
    wf, out = _run(ops.LambdaOp(lambda c: c.astype("float64") * 2), df)
    assert wf.output_schema["a"].dtype == "float64" == str(out["a"].dtype)
    np.testing.assert_array_equal(out["a"].to_numpy(), np.array([3.0, 5.0, np.nan]))


def test_dtype_tags_properties_arguments():
    """UDF(f, dependency=None, label=None, dtype=None, tags=None, properties=None)
    (merlin/dag/ops/udf.py UDF.__init__): tags and properties land in the output schema."""
    df = pd.DataFrame({"a": np.array([1, 2, 3], dtype="int64"), "b": [2.0, 4.0, 8.0]})
    op = ops.LambdaOp(lambda c, d: c / d["b"], ["b"], "ratio", "float32", ["continuous"], {"unit": "x"})
    wf, out = _run(op, df)
    assert op.label == "ratio"
    col = wf.output_schema["a"]
    assert col.dtype == "float32" and str(out["a"].dtype) == "float32"
    assert "continuous" in col.tags and col.properties["unit"] == "x"
    np.testing.assert_allclose(out["a"].to_numpy(), [0.5, 0.5, 0.375])


def test_strings_and_nullable_ints():
    """f's result type carries over for strings (str.len -> int64) and nullable ints
    (Int64 / 2 -> Float64 with the nulls kept)."""
    df = pd.DataFrame({"s": ["ab", None, "c"], "n": pd.array([1, None, 3], dtype="Int64")})
    wf, out = _run(ops.LambdaOp(lambda c: c.str.len()), df, cols=("s",))
    assert out["s"].tolist()[0] == 2 and pd.isna(out["s"].tolist()[1])
    assert wf.output_schema["s"].dtype == "float64"  # pandas: str.len() with a null is float64
    wf, out = _run(ops.LambdaOp(lambda c: c / 2), df, cols=("n",))
    assert wf.output_schema["n"].dtype == "float64"
    assert out["n"].tolist()[0] == 0.5 and pd.isna(out["n"].tolist()[1])


def test_value_dependent_dtype_warns_naming_dtype():
    """A dtype the probe cannot know (it depends on the values) is not changed silently:
    the op warns and names ``dtype=``."""
    df = pd.DataFrame({"s": ["x", "y", "x"]})
    with pytest.warns(UserWarning, match="dtype="):
        _run(ops.LambdaOp(lambda c: c.map({"x": 1, "y": 2})), df, cols=("s",))


def test_explicit_dtype_casts():
    """With ``dtype=`` the column is that dtype (the schema's dtype, NVTabular's output_dtype)."""
    df = pd.DataFrame({"a": [1.7, 2.2]})
    wf, out = _run(ops.LambdaOp(lambda c: c * 2, dtype="int32"), df)
    assert str(out["a"].dtype) == "int32" and out["a"].tolist() == [3, 4]


def halve(col):
    return col / 2


def test_check_op():
    """The conformance battery, with a dtype-changing function (int -> float)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check_op(ops.LambdaOp(halve))
