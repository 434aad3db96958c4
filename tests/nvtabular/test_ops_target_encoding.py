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


# -- NVTabular 23.08's defaults and its transform-time folds ---------------------------------------
M64 = (1 << 64) - 1


def _fold(row: int, seed: int, k: int) -> int:
    """tabprep's documented fold of a row (splitmix64 of row + seed * golden ratio), written out here."""
    z = (row + seed * 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return (z ^ (z >> 31)) % k


def test_default_kfold_is_nvtabulars_three():
    """NVTabular 23.08: ``kfold=None`` -> ``self.kfold = kfold or 3``. The out-of-fold encoding
    of the training rows (p_smooth=0: each row gets its category's target mean over the rows of
    the other folds) follows three folds, checked against pandas."""
    import warnings

    df = _df(300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tp.NVTabularDifferenceWarning)
        op = ops.TargetEncoding("t", p_smooth=0, out_dtype="float64")
        none = ops.TargetEncoding("t", kfold=None)
    assert op.kfold == 3 and none.kfold == 3
    got = tp.Workflow(["c"] >> op).fit_transform(tp.Dataset(df)).compute()["TE_c_t"].to_numpy()
    folds = np.array([_fold(i, 42, 3) for i in range(len(df))])
    assert set(folds) == {0, 1, 2}
    want = np.empty(len(df))
    for i in range(len(df)):
        other = (folds != folds[i]) & (df["c"].to_numpy() == df["c"].iloc[i])
        want[i] = df["t"].to_numpy()[other].mean()
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_build_warns_that_transform_uses_all_the_fitted_data(tmp_path):
    """NVTabular 23.08 applies the k-fold encoding in every ``transform`` (also of new data, with
    folds drawn per partition); tabprep's ``transform`` gives the full-data statistics unless
    ``out_of_fold=True`` (``fit_transform`` sets it). Loud where a migrating user meets it: the op
    warns when built, naming the option; a saved workflow loads quietly."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        wf = tp.Workflow(["c"] >> ops.TargetEncoding("t"))
    msgs = [str(w.message) for w in caught if issubclass(w.category, tp.NVTabularDifferenceWarning)]
    assert len(msgs) == 1 and "out_of_fold=True" in msgs[0] and "TargetEncoding" in msgs[0], msgs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wf.fit(tp.Dataset(_df()))
    wf.save(str(tmp_path / "wf"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tp.Workflow.load(str(tmp_path / "wf"))
    assert not [w for w in caught if issubclass(w.category, tp.NVTabularDifferenceWarning)]


def test_kfold_one_builds_quietly():
    """With ``kfold=1`` there are no folds, in NVTabular and in tabprep: nothing differs, no warning."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", tp.NVTabularDifferenceWarning)
        ops.TargetEncoding("t", kfold=1)


def test_outputs_are_continuous_not_the_targets_tags():
    # NVTabular 23.08 copies the target's tags to TE_* outputs (its column mapping lists the target
    # first): a target tagged `target` gives TE outputs tagged `target`. tabprep does not (documented)
    df = pd.DataFrame({"a": ["x", "y", "x", "y"], "click": [1, 0, 1, 1]})
    target = ["click"] >> ops.AddMetadata(tags=[tp.Tags.TARGET])
    wf = tp.Workflow(["a"] >> ops.TargetEncoding(target, kfold=1)).fit(df)
    tags = {str(t) for t in wf.output_schema["TE_a_click"].tags}
    assert "continuous" in tags and "target" not in tags
    assert "TE_a_click" not in wf.output_schema.select_by_tag(tp.Tags.TARGET).column_names
