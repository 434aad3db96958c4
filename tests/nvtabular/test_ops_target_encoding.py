"""TargetEncoding(fold_seed=None) as NVTabular 23.08 accepts it (nvtabular/ops/target_encoding.py:
unseeded random folds): one fold assignment per fitted op, kept across save/load."""
from __future__ import annotations

import numpy as np
import pandas as pd

import tabprep as tp
from tabprep import ops
from tabprep.testing import check_op


def _df(n=200):
    rng = np.random.default_rng(0)
    return pd.DataFrame({"c": rng.integers(0, 5, n), "t": rng.random(n)})


def test_fold_seed_none_builds_and_keeps_its_folds(tmp_path):
    """fold_seed=None works; the out-of-fold encoding uses the same folds after save/load."""
    op = ops.TargetEncoding("t", kfold=3, fold_seed=None)
    assert op.fold_seed is None
    wf = tp.Workflow(["c"] >> op)
    ds = tp.Dataset(_df())
    first = wf.fit_transform(ds).to_ddf().compute()["TE_c_t"].to_numpy()
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    again = loaded.transform(ds, out_of_fold=True).to_ddf().compute()["TE_c_t"].to_numpy()
    np.testing.assert_allclose(again, first)
    full = wf.transform(ds).to_ddf().compute()["TE_c_t"].to_numpy()
    assert not np.allclose(full, first)  # out-of-fold differs from the full-data encoding


def test_two_unseeded_ops_draw_different_folds():
    """Unseeded: two ops get different fold assignments (NVTabular: random folds)."""
    a, b = ops.TargetEncoding("t", fold_seed=None), ops.TargetEncoding("t", fold_seed=None)
    df = _df(50)
    assert not np.array_equal(a.folds(df), b.folds(df))


def test_check_op_unseeded():
    """The conformance battery with fold_seed=None."""
    check_op(ops.TargetEncoding("label", fold_seed=None), columns=["i", "s"])
