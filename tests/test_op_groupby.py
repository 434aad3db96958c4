"""Groupby (one row per group, list features) against a plain pandas / python reference."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

from conftest import make_dataset, split_with_empties, to_pandas

AGGS = {"item": ["list", "count", "first", "last", "sum", "mean"], "price": ["sum", "mean", "min", "max", "list"],
        "name": ["list", "last"]}


def _events(seed: int = 0, n: int = 120) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    sess = pd.array(rng.integers(0, 8, n), dtype="Int64")
    sess[rng.random(n) < 0.08] = pd.NA
    item = pd.array(rng.integers(0, 50, n), dtype="Int64")
    item[rng.random(n) < 0.15] = pd.NA
    price = rng.normal(10, 2, n)
    price[rng.random(n) < 0.1] = np.nan
    name = rng.choice(np.array(["a", "b", "c"], dtype=object), n)
    name[rng.random(n) < 0.1] = None
    ts = rng.permutation(n).astype("float64")
    ts[rng.random(n) < 0.05] = np.nan
    return pd.DataFrame({"sess": sess, "item": item, "price": price, "name": pd.Series(name, dtype="str"), "ts": ts})


def _py(v):
    if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
        return None
    return v.item() if isinstance(v, np.generic) else v


def reference(df: pd.DataFrame, aggs, key="sess", sort="ts") -> dict:
    """key -> {output: value}: rows ordered by (sort, nulls last; then input order) within a group."""
    groups: dict = {}
    rows = [dict(zip(df.columns, r)) for r in df.astype(object).itertuples(index=False)]
    for pos, r in enumerate(rows):
        groups.setdefault(_py(r[key]), []).append((pos, r))
    out = {}
    for k, members in groups.items():
        members.sort(key=lambda pr: (_py(pr[1][sort]) is None, _py(pr[1][sort]) or 0, pr[0]))
        res = {}
        for c, names in aggs.items():
            vals = [_py(r[c]) for _, r in members]
            nn = [v for v in vals if v is not None]
            for a in names:
                if a == "list":
                    res[f"{c}_{a}"] = vals
                elif a in ("first", "last"):
                    res[f"{c}_{a}"] = vals[0] if a == "first" else vals[-1]
                elif a == "count":
                    res[f"{c}_{a}"] = len(nn)
                elif a == "sum":
                    res[f"{c}_{a}"] = sum(nn) if nn else 0
                elif a == "mean":
                    res[f"{c}_{a}"] = sum(nn) / len(nn) if nn else None
                else:
                    res[f"{c}_{a}"] = (min(nn) if a == "min" else max(nn)) if nn else None
        out[k] = res
    return out


def check(out: pd.DataFrame, ref: dict, key="sess") -> None:
    keys = [_py(v) for v in out[key].astype(object).tolist()]
    assert sorted(keys, key=lambda v: (v is None, v or 0)) == keys, "groups in ascending key order, null last"
    assert sorted(keys, key=lambda v: (v is None, v or 0)) == sorted(ref, key=lambda v: (v is None, v or 0))
    for i, k in enumerate(keys):
        for name, exp in ref[k].items():
            got = out[name].iloc[i]
            if isinstance(exp, list):
                got = [_py(v) for v in list(got)]
                assert len(got) == len(exp) and all(
                    (g is None and e is None) or (g == pytest.approx(e)) for g, e in zip(got, exp)), (k, name, got, exp)
            elif exp is None:
                assert _py(got) is None, (k, name, got)
            else:
                assert _py(got) == pytest.approx(exp), (k, name, got, exp)


def test_one_partition_matches_reference_and_schema():
    df = _events(0)
    wf = tp.Workflow(["sess", "item", "price", "name"] >> ops.Groupby("sess", sort_cols="ts", aggs=AGGS))
    out = to_pandas(wf.transform(tp.Dataset(df, npartitions=1)))
    check(out, reference(df, AGGS))
    assert list(out.columns) == wf.output_columns
    schema = wf.output_schema
    assert schema["item_list"].is_list and schema["item_list"].dtype == "int64" and "list" in schema["item_list"].tags
    assert schema["name_list"].is_list and schema["name_list"].dtype == "str"
    assert [schema[c].dtype for c in ("item_count", "item_first", "item_sum", "item_mean", "price_sum",
                                      "name_last")] == ["int64", "int64", "int64", "float64", "float64", "str"]


def test_descending_sort_and_list_aggs_for_all_columns():
    df = _events(1)
    wf = tp.Workflow(["sess", "item", "ts"] >> ops.Groupby(["sess"], sort_cols=["ts"], ascending=False,
                                                         aggs=["list", "count"], name_sep="-"))
    out = to_pandas(wf.transform(df))
    assert wf.output_columns == ["sess", "item-list", "ts-list", "item-count", "ts-count"]  # NVTabular's order
    for k, grp in df.groupby("sess", dropna=False):
        row = out[out["sess"].isna()] if pd.isna(k) else out[out["sess"] == k]
        assert len(row) == 1
        ts = [_py(v) for v in list(row["ts-list"].iloc[0])]
        nn = [v for v in ts if v is not None]
        assert nn == sorted(nn, reverse=True) and ts[:len(nn)] == nn  # nulls last


def test_each_partition_is_grouped_on_its_own():
    df = _events(2, 90)
    wf = tp.Workflow(["sess", "item"] >> ops.Groupby("sess", sort_cols="ts", aggs={"item": ["list", "count"]}))
    parts = [to_pandas(p.compute()) for p in wf.transform(make_dataset(df, nparts=3)).to_ddf().to_delayed()]
    pieces = split_with_empties(df, 3)
    assert len(parts) == len(pieces)
    for part, piece in zip(parts, pieces):
        if len(piece) == 0:
            assert len(part) == 0 and list(part.columns) == wf.output_columns
            continue
        check(part, reference(piece, {"item": ["list", "count"]}))


def test_shuffle_by_key_makes_groups_whole(tmp_path):
    df = _events(3, 200)
    df["ts"] = np.random.default_rng(3).permutation(len(df)).astype("float64")  # no ties: shuffles reorder rows
    wf = tp.Workflow(["sess", "item"] >> ops.Groupby("sess", sort_cols="ts", aggs={"item": ["list", "count"]}))
    ds = ops.shuffle_by_key(make_dataset(df, nparts=4), "sess", npartitions=3)
    result = wf.transform(ds)
    out = to_pandas(result)
    keys = [_py(v) for v in out["sess"].astype(object)]
    assert len(keys) == len(set(keys)) == df["sess"].nunique(dropna=False)
    out = out.sort_values("sess", na_position="last").reset_index(drop=True)
    check(out, reference(df, {"item": ["list", "count"]}))
    # list columns are parquet-writable and read back as lists
    result.to_parquet(str(tmp_path / "out"))
    back = tp.Dataset(str(tmp_path / "out")).compute()
    assert back["item_list"].map(len).sum() == len(df)
    assert sorted(back["item_count"].tolist()) == sorted(out["item_count"].tolist())


def test_dataset_shuffle_by_keys_then_groupby_as_nvtabular(tmp_path):
    """NVTabular's recipe: ``ds.shuffle_by_keys(keys)`` before a Groupby (which groups each partition
    on its own). tabprep raised NotImplementedError saying Groupby shuffled by itself, so a script
    that dropped the call got one session split over several rows."""
    df = _events(3, 200)
    df["ts"] = np.random.default_rng(5).permutation(len(df)).astype("float64")
    wf = tp.Workflow(["sess", "item"] >> ops.Groupby("sess", sort_cols="ts", aggs={"item": ["list", "count"]}))
    ds = make_dataset(df, nparts=4)
    shuffled = ds.shuffle_by_keys("sess")
    assert shuffled.npartitions == ds.npartitions
    assert ds.shuffle_by_keys(["sess"], npartitions=2).npartitions == 2
    out = to_pandas(wf.transform(shuffled))
    keys = [_py(v) for v in out["sess"].astype(object)]
    assert len(keys) == len(set(keys)) == df["sess"].nunique(dropna=False)
    out = out.sort_values("sess", na_position="last").reset_index(drop=True)
    check(out, reference(df, {"item": ["list", "count"]}))
    # hive_data (merlin-core: the keys are in the folder layout) is taken; the rows are shuffled anyway
    assert len(to_pandas(wf.transform(ds.shuffle_by_keys("sess", hive_data=True)))) == len(keys)
    with pytest.raises(KeyError, match=r"shuffle_by_keys: keys \['sesion'\] are not columns"):
        ds.shuffle_by_keys(["sess", "sesion"])
    with pytest.raises(ValueError, match=r"npartitions=...\) must be an int >= 1"):
        ds.shuffle_by_keys("sess", npartitions=0)


def test_empty_input_and_save_load(tmp_path):
    df = _events(4)
    wf = tp.Workflow(["sess", "item", "price"] >> ops.Groupby("sess", sort_cols="ts",
                                                            aggs={"item": ["list", "sum"], "price": ["mean"]}))
    empty = wf.transform(df.iloc[:0])
    assert len(empty) == 0 and list(empty.columns) == wf.output_columns
    before = to_pandas(wf.transform(make_dataset(df, nparts=1, empties=False)))
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    after = to_pandas(loaded.transform(make_dataset(df, nparts=1, empties=False)))
    pd.testing.assert_frame_equal(after, before)


def test_invalid_aggs():
    with pytest.raises(ValueError, match="aggregations"):
        ops.Groupby("sess", aggs={"item": ["mode"]})
    with pytest.raises(ValueError):
        ops.Groupby([], aggs="list")
