"""ColumnSimilarity as NVTabular 23.08's (nvtabular/ops/column_similarity.py): for each pair
``[a, b]`` of id columns, the inner product of row ``a`` of ``left_features`` and row ``b`` of
``right_features`` (the left matrix when None) after ``metric`` weighting ("tfidf": ``log(N /
column count)`` then L2 row normalisation, "cosine": L2 row normalisation, "inner": as given);
the output is ``<a>_<b>_sim``, float64. References are dense numpy computed here."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import tabprep as tp
from tabprep import ops
from tabprep.testing import check_op

from conftest import make_dataset, to_pandas

DENSE_L = np.array([[1, 0, 2, 0], [0, 3, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0], [0, 0, 5, 1]], dtype=float)
DENSE_R = np.array([[0, 2, 0, 0], [1, 0, 0, 1], [4, 4, 0, 0], [0, 0, 1, 0], [1, 0, 2, 0]], dtype=float)


def _weighted(dense, metric):
    x = dense.copy()
    if metric == "tfidf":
        counts = (x != 0).sum(axis=0)
        with np.errstate(divide="ignore"):
            idf = np.log(x.shape[0] / counts)
        x = np.where(x != 0, x * idf, 0.0)
    if metric in ("tfidf", "cosine"):
        norms = np.sqrt((x ** 2).sum(axis=1, keepdims=True))
        x = np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)
    return x


def _ref(a, b, metric, right=DENSE_R):
    lw, rw = _weighted(DENSE_L, metric), _weighted(right, metric)
    return [float("nan") if pd.isna(i) or pd.isna(j) else float(lw[int(i)] @ rw[int(j)]) for i, j in zip(a, b)]


def _frame():
    return pd.DataFrame({"a": pd.array([0, 1, 2, 3, 4, None, 2], dtype="Int64"),
                         "b": pd.array([0, 4, 2, 1, 4, 1, None], dtype="Int64")})


@pytest.mark.parametrize("metric", ["tfidf", "cosine", "inner"])
def test_values_and_name(backend, metric):
    """Row-wise similarity of each pair (nulls give null), output named ``a_b_sim`` (float64)."""
    df = _frame()
    op = ops.ColumnSimilarity(sp.csr_matrix(DENSE_L), sp.coo_matrix(DENSE_R), metric=metric, on_device=False)
    wf = tp.Workflow([["a", "b"]] >> op)
    out = to_pandas(wf.fit_transform(make_dataset(df, backend, nparts=2)).to_ddf().compute())
    assert list(out.columns) == ["a_b_sim"]
    assert str(out["a_b_sim"].dtype) == "float64"
    assert wf.output_schema["a_b_sim"].dtype == np.dtype("float64")
    np.testing.assert_allclose(out["a_b_sim"].to_numpy(dtype=float), _ref(df["a"], df["b"], metric),
                               rtol=1e-12, atol=1e-12, equal_nan=True)


def test_default_metric_is_tfidf_and_right_defaults_to_left(tmp_path):
    """metric defaults to "tfidf"; right_features=None uses the left matrix; save/load keeps the
    matrices (the loaded workflow gives the same values)."""
    df = _frame()
    wf = tp.Workflow([["a", "b"]] >> ops.ColumnSimilarity(sp.csr_matrix(DENSE_L)))
    out = wf.fit_transform(tp.Dataset(df)).to_ddf().compute()
    ref = _ref(df["a"], df["b"], "tfidf", right=DENSE_L)
    np.testing.assert_allclose(out["a_b_sim"].to_numpy(dtype=float), ref, rtol=1e-12, equal_nan=True)
    wf.save(tmp_path / "wf")
    again = tp.Workflow.load(tmp_path / "wf").transform(tp.Dataset(df)).to_ddf().compute()
    np.testing.assert_allclose(again["a_b_sim"].to_numpy(dtype=float), ref, rtol=1e-12, equal_nan=True)


def test_bad_input_is_named():
    """An id outside the matrix, a group that is not a pair, an unknown metric: errors naming them."""
    df = pd.DataFrame({"a": [0, 9], "b": [0, 1]})
    with pytest.raises(ValueError, match="'a'.*9"):
        tp.Workflow([["a", "b"]] >> ops.ColumnSimilarity(sp.csr_matrix(DENSE_L))).fit_transform(
            tp.Dataset(df)).to_ddf().compute()
    with pytest.raises(ValueError, match="pair"):
        tp.Workflow(["a", "b"] >> ops.ColumnSimilarity(sp.csr_matrix(DENSE_L))).fit(tp.Dataset(df))
    with pytest.raises(ValueError, match="metric"):
        ops.ColumnSimilarity(sp.csr_matrix(DENSE_L), metric="jaccard")


@pytest.mark.filterwarnings("ignore::scipy.sparse.SparseEfficiencyWarning")  # check_op compares the matrices
def test_check_op():
    data = pd.DataFrame({"a": np.arange(20) % 5, "b": (np.arange(20) * 3) % 5}).astype("float64")
    check_op(ops.ColumnSimilarity(sp.csr_matrix(DENSE_L)), data=data, columns=[["a", "b"]])
