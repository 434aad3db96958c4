"""TargetEncoding against a plain pandas reference: full-data and out-of-fold encodings."""
from __future__ import annotations

import dask
import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

from conftest import make_dataset, split_with_empties, to_pandas

M64 = (1 << 64) - 1


def _frame(seed: int = 0, n: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = pd.array(rng.integers(0, 12, n), dtype="Int64")
    a[rng.random(n) < 0.1] = pd.NA
    s = rng.choice(np.array(["x", "y", "z", "w"], dtype=object), n)
    s[rng.random(n) < 0.1] = None
    y = rng.integers(0, 2, n).astype("float64")
    y[rng.random(n) < 0.1] = np.nan
    return pd.DataFrame({"a": a, "s": pd.Series(s, dtype="str"), "y": y,
                         "y2": rng.normal(3.0, 2.0, n), "idx": np.arange(n)})


# -- reference (pure python / pandas) ----------------------------------------------------------
def ref_fold(row: int, seed: int, k: int) -> int:
    z = (row + seed * 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return (z ^ (z >> 31)) % k


def ref_te(train: pd.DataFrame, data: pd.DataFrame, key, target: str, p: float) -> np.ndarray:
    """(sum + p * global_mean) / (count + p) per category; null / unseen -> global mean."""
    ok = train[target].notna()
    gm = train.loc[ok, target].astype(float).mean()
    t = train[ok]
    stats = {}
    for k, y in zip(_keys(t, key), t[target].astype(float)):
        if k is None:
            continue
        s, c = stats.get(k, (0.0, 0))
        stats[k] = (s + y, c + 1)
    out = []
    for k in _keys(data, key):
        if k is None or k not in stats:
            out.append(gm)
        else:
            s, c = stats[k]
            out.append((s + p * gm) / (c + p) if c + p > 0 else gm)
    return np.array(out, dtype="float64")


def _keys(df: pd.DataFrame, key):
    cols = [key] if isinstance(key, str) else list(key)
    out = []
    for row in zip(*[df[c].astype(object).tolist() for c in cols]):
        isnull = [v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)) for v in row]
        # a combined key is null only when every part is (NVTabular groups with dropna=False)
        out.append(None if all(isnull) else tuple(None if n else v for v, n in zip(row, isnull)))
    return out


def ref_oof(train: pd.DataFrame, pieces, key, target: str, p: float, k: int, seed: int) -> np.ndarray:
    """Out-of-fold: rows of fold f are encoded with the rows of the other folds only."""
    folds = np.concatenate([[ref_fold(i, seed, k) for i in range(len(pc))] for pc in pieces]).astype(int)
    out = np.empty(len(train))
    for f in range(k):
        rows = folds == f
        if not rows.any():
            continue
        others = train[folds != f]
        out[rows] = ref_te(others, train[rows], key, target, p)
    return out


# -- tests -----------------------------------------------------------------------------------------
def test_full_data_encoding_matches_reference():
    train = _frame(0)
    data = _frame(1, 150)
    data.loc[::5, "a"] = 99  # unseen
    data.loc[::4, "s"] = "never"
    wf = tp.Workflow(["a", "s"] >> ops.TargetEncoding("y", p_smooth=7))
    wf.fit(make_dataset(train, nparts=4))
    out = to_pandas(wf.transform(make_dataset(data, nparts=3)))
    assert list(out.columns) == ["TE_a_y", "TE_s_y"]
    assert str(out["TE_a_y"].dtype) == "float32"
    for col in ("a", "s"):
        np.testing.assert_allclose(out[f"TE_{col}_y"], ref_te(train, data, col, "y", 7).astype("float32"), rtol=1e-6)
    # the online path (one frame) agrees
    online = wf.transform(data)
    np.testing.assert_array_equal(online["TE_a_y"].to_numpy(), out["TE_a_y"].to_numpy())


def test_out_of_fold_for_training_rows_matches_reference():
    train = _frame(2)
    nparts = 3
    pieces = split_with_empties(train, nparts)
    wf = tp.Workflow(["a", "s"] >> ops.TargetEncoding("y", kfold=4, p_smooth=3, fold_seed=7))
    ds = make_dataset(train, nparts=nparts)
    oof = to_pandas(wf.fit_transform(ds))
    for col in ("a", "s"):
        np.testing.assert_allclose(oof[f"TE_{col}_y"], ref_oof(train, pieces, col, "y", 3, 4, 7).astype("float32"),
                                   rtol=1e-5, atol=1e-7)
    # the same values from transform(out_of_fold=True) after fit, and they differ from full-data ones
    again = to_pandas(wf.transform(ds, out_of_fold=True))
    pd.testing.assert_frame_equal(again, oof)
    full = to_pandas(wf.transform(ds))
    assert (full["TE_a_y"] != oof["TE_a_y"]).mean() > 0.5


def test_folds_do_not_depend_on_the_scheduler():
    train = _frame(3)
    outs = []
    for scheduler in ("synchronous", "threads"):
        with dask.config.set(scheduler=scheduler):
            wf = tp.Workflow(["a"] >> ops.TargetEncoding("y"))
            outs.append(to_pandas(wf.fit_transform(make_dataset(train, nparts=5))))
    pd.testing.assert_frame_equal(outs[0], outs[1])
    # in-memory frames: folds come from the row labels, so the partition count does not matter
    a = to_pandas(tp.Workflow(["a"] >> ops.TargetEncoding("y")).fit_transform(tp.Dataset(train, npartitions=1)))
    b = to_pandas(tp.Workflow(["a"] >> ops.TargetEncoding("y")).fit_transform(tp.Dataset(train, npartitions=4)))
    pd.testing.assert_frame_equal(a, b)


def test_column_group_and_several_targets():
    train = _frame(4)
    wf = tp.Workflow([["a", "s"]] >> ops.TargetEncoding(["y", "y2"], p_smooth=2))
    wf.fit(make_dataset(train, nparts=3))
    out = to_pandas(wf.transform(make_dataset(train, nparts=2)))
    assert list(out.columns) == ["TE_a_s_y", "TE_a_s_y2"]
    for t in ("y", "y2"):
        np.testing.assert_allclose(out[f"TE_a_s_{t}"], ref_te(train, train, ["a", "s"], t, 2).astype("float32"),
                                   rtol=1e-5)
    assert wf.output_schema["TE_a_s_y"].dtype == "float32"
    assert "continuous" in wf.output_schema["TE_a_s_y"].tags


def test_kfold_one_and_no_smoothing():
    train = _frame(5)
    wf = tp.Workflow(["a"] >> ops.TargetEncoding("y", kfold=1, p_smooth=0, out_dtype="float64"))
    ds = make_dataset(train, nparts=2)
    oof = to_pandas(wf.fit_transform(ds))
    full = to_pandas(wf.transform(ds))
    pd.testing.assert_frame_equal(oof, full)
    np.testing.assert_allclose(full["TE_a_y"], ref_te(train, train, "a", "y", 0))
    assert str(full["TE_a_y"].dtype) == "float64"


def test_downstream_ops_are_fitted_on_out_of_fold_values():
    train = _frame(6)
    te = ops.TargetEncoding("y", p_smooth=1)
    norm = ops.Normalize()
    wf = tp.Workflow(["a"] >> te >> norm)
    ds = make_dataset(train, nparts=3)
    wf.fit(ds)
    oof = to_pandas(tp.Workflow(["a"] >> ops.TargetEncoding("y", p_smooth=1)).fit_transform(ds))
    assert norm.stats_["TE_a_y"]["mean"] == pytest.approx(float(oof["TE_a_y"].astype("float64").mean()), rel=1e-6)


def test_save_load_round_trip(tmp_path):
    train = _frame(7)
    data = _frame(8, 120)
    data.loc[::3, "s"] = "unseen"
    wf = tp.Workflow((["a", "s"] >> ops.TargetEncoding("y", kfold=3)) + ([["a", "s"]] >> ops.TargetEncoding("y2")))
    ds = make_dataset(train, nparts=3)
    oof = to_pandas(wf.fit_transform(ds))
    before = to_pandas(wf.transform(make_dataset(data, nparts=2)))
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    assert loaded.output_schema == wf.output_schema
    pd.testing.assert_frame_equal(to_pandas(loaded.transform(make_dataset(data, nparts=2))), before)
    pd.testing.assert_frame_equal(to_pandas(loaded.transform(ds, out_of_fold=True)), oof)


def test_invalid_parameters_and_inputs():
    with pytest.raises(ValueError):
        ops.TargetEncoding("y", kfold=0)
    with pytest.raises(ValueError):
        ops.TargetEncoding("y", p_smooth=-1)
    with pytest.raises(ValueError):
        ops.TargetEncoding("y", out_dtype="int32")
    train = _frame(9)
    with pytest.raises(KeyError, match="nope"):
        tp.Workflow(["a"] >> ops.TargetEncoding("nope")).fit(tp.Dataset(train))
    with pytest.raises(TypeError, match="numeric"):
        tp.Workflow(["a"] >> ops.TargetEncoding("s")).fit(tp.Dataset(train))
    allnull = train.assign(y=np.nan)
    with pytest.raises(ValueError, match="no non-null"):
        tp.Workflow(["a"] >> ops.TargetEncoding("y")).fit(tp.Dataset(allnull))
