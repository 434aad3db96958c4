"""The canonical Criteo workflow's output, pinned against a plain pandas/numpy reference.

``C* >> Categorify()``, ``I* >> FillMissing() >> Clip(min_value=0) >> LogOp() >> Normalize(out_dtype="float32")``
and the label, on Criteo-like files of odd dtypes (nullable int64, int32, float64 and float32
with NaN / inf / -inf / negatives / -0.0 / tiny values, bool, pandas category, strings, a
constant and an all-null column), with small row groups, a partition per row group and an
empty file (empty partitions). The speed work on the CPU job (fused element-wise chains,
Arrow-native transform, overlapped writing) must keep these outputs identical: ids exactly,
floats bit for bit (compared as their uint32 bit patterns, so -0.0, NaN and inf count too).

The reference below is written from the ops' documented semantics only:

* Categorify: vocabulary of the fitted (non-null) values by descending count, ties by ascending
  value; ids: null 1, unseen 2, vocabulary from 3; NaN is null, +-inf are values.
* FillMissing(0) fills nulls and NaN; Clip(0) bounds below (ints stay ints); LogOp is
  ``log(float32(x) + 1)`` (NVTabular's float32 sum), the log computed in float64 and rounded to float32; Normalize(out_dtype="float32") (the canonical job's: training
  data stays float32; the default is NVTabular's float64) is ``float32((x - mean) / std)`` in float64
  with the mean and sample std (ddof=1, NVTabular's) of the finite fitted values (a constant column maps to 0).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tabprep as tp
from tabprep import ops

ALL_CATS = ["C1", "C2", "C3", "C4", "C5", "C6", "C7"]
ALL_CONTS = ["I1", "I2", "I3", "I4", "I5", "I6", "I7"]
#: the columns of the "numeric" variant: no strings, categories or bool continuous columns, so the
#: whole job runs on Arrow tables (tabprep.workflow.fusion.transform_table); "mixed" has all of them,
#: and its partitions run on pandas (fused chains where kernels take the column)
KINDS = {"mixed": (ALL_CATS, ALL_CONTS),
         "numeric": (["C1", "C2", "C4", "C6", "C7"], ["I1", "I2", "I3", "I4", "I6", "I7"])}


def criteo_like(n: int, seed: int, unseen: bool = False) -> pd.DataFrame:
    """Criteo-shaped frame of odd dtypes; ``unseen`` draws categorical values the fit never saw."""
    r = np.random.default_rng(seed)
    I1 = pd.array(r.integers(-3, 200, n), dtype="Int64")
    I1[r.random(n) < 0.1] = pd.NA
    I1[:5] = [10 ** 6, 2 ** 40, -1, 65536, 65535]  # past the LogOp table, and its edge
    I2 = r.integers(-5, 70000, n).astype("int32")
    I3 = r.lognormal(1, 2, n)
    I3[r.random(n) < 0.1] = np.nan
    I3[:7] = [np.inf, -np.inf, -2.5, -0.0, 1e-5, 3e-300, 1e300]
    I4 = r.exponential(3, n).astype("float32")
    I4[r.random(n) < 0.1] = np.nan
    I5 = r.random(n) < 0.3
    I6 = np.full(n, 7, dtype="int64")  # constant: std 0, every row 0
    I7 = pd.array([pd.NA] * n, dtype="Int64")  # all null: filled with 0, constant
    C1 = pd.array(r.integers(0, 80 if unseen else 50, n) * 1000003, dtype="Int64")
    C1[r.random(n) < 0.1] = pd.NA
    C2 = r.integers(-10, 14 if unseen else 10, n).astype("int32")
    C3 = pd.Series(r.choice(["a", "b", "ccc", "", "é"] + (["new"] if unseen else []), n), dtype=object)
    C3[r.random(n) < 0.1] = None
    C4 = r.random(n) < 0.5
    C5 = pd.Categorical(r.choice(["x", "y", "z"] + (["w"] if unseen else []), n), categories=["x", "y", "z", "w"])
    C6 = r.choice([0.5, -1.0, np.inf, -np.inf, np.nan, 2.0] + ([7.5] if unseen else []), n)
    C7 = pd.array(r.integers(0, 2 ** 31 - 1 if unseen else 40, n), dtype="Int32")
    C7[r.random(n) < 0.05] = pd.NA
    return pd.DataFrame(dict(I1=I1, I2=I2, I3=I3, I4=I4, I5=I5, I6=I6, I7=I7, C1=C1, C2=C2, C3=C3, C4=C4, C5=C5,
                             C6=C6, C7=C7, label=r.integers(0, 2, n)))


def write_files(df: pd.DataFrame, folder: Path) -> None:
    """Three files, the middle one empty; small row groups (a partition each with part_size 1KB)."""
    folder.mkdir()
    cut = len(df) * 3 // 8
    for name, part, rg in (("a", df.iloc[:cut], 40), ("b", df.iloc[:0], None), ("c", df.iloc[cut:], 100)):
        pq.write_table(pa.Table.from_pandas(part, preserve_index=False), folder / f"{name}.parquet",
                       row_group_size=rg)


def workflow(cats: list, conts: list) -> tp.Workflow:
    return tp.Workflow((cats >> ops.Categorify())
                       + (conts >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp()
                          >> ops.Normalize(out_dtype="float32"))
                       + ["label"])


# -- the reference ------------------------------------------------------------------------------
def _key(v):
    return v.item() if isinstance(v, np.generic) else v


def ref_vocab(s: pd.Series) -> dict:
    """value -> id: descending count, ties by ascending value, from 3."""
    vals = [_key(v) for v in s.astype(object) if not (v is None or v is pd.NA or (isinstance(v, float) and v != v))]
    counts: dict = {}
    for v in vals:
        counts[v] = counts.get(v, 0) + 1
    order = sorted(counts, key=lambda v: (-counts[v], v))
    return {v: 3 + i for i, v in enumerate(order)}


def ref_ids(s: pd.Series, vocab: dict) -> np.ndarray:
    out = []
    for v in s.astype(object):
        if v is None or v is pd.NA or (isinstance(v, float) and v != v):
            out.append(1)
        else:
            out.append(vocab.get(_key(v), 2))
    return np.array(out, dtype=np.int64)


def ref_logs(s: pd.Series) -> np.ndarray:
    """log(float32(clip(fillna(x, 0), 0)) + 1): the float32 sum (NVTabular's), its log in float64
    rounded to float32; ints made float32 from int64 (one rounding)."""
    if s.dtype.kind in "iub" or str(s.dtype) in ("Int64", "Int32"):
        x = s.astype("Int64").fillna(0).to_numpy(dtype=np.int64)
        x32 = np.where(x < 0, 0, x).astype(np.float32)
    else:
        x = s.to_numpy(dtype=np.float64, na_value=np.nan)
        x = np.where(np.isnan(x), 0.0, x)
        x32 = np.where(x < 0, 0.0, x).astype(np.float32)  # -0.0 is not below 0: its sum with 1 is 1, log 0.0
    with np.errstate(over="ignore"):
        return np.log((x32 + np.float32(1)).astype(np.float64)).astype(np.float32)


def ref_moments(logs: np.ndarray) -> tuple:
    x = logs.astype(np.float64)
    x = x[np.isfinite(x)]
    if x.size == 0 or x.min() == x.max():
        return (float(x.min()) if x.size else 0.0), 0.0
    return float(x.mean()), float(x.std(ddof=1))  # NVTabular: the sample std


def ref_normalize(logs: np.ndarray, mean: float, std: float) -> np.ndarray:
    x = logs.astype(np.float64)
    if std == 0:
        return np.where(np.isnan(x), np.nan, 0.0).astype(np.float32)
    return ((x - mean) / std).astype(np.float32)


def reference(train: pd.DataFrame, data: pd.DataFrame) -> dict:
    out = {}
    cats = [c for c in ALL_CATS if c in train]
    for c in cats:
        out[c] = ref_ids(data[c], ref_vocab(train[c]))
    for c in [c for c in ALL_CONTS if c in train]:
        mean, std = ref_moments(ref_logs(train[c]))
        out[c] = ref_normalize(ref_logs(data[c]), mean, std)
    out["label"] = data["label"].to_numpy(dtype=np.int64)
    return out


def assert_pinned(got: pd.DataFrame, want: dict, what: str) -> None:
    assert list(got.columns) == list(want), (what, list(got.columns))
    for c, ref in want.items():
        a = got[c].to_numpy()
        assert a.dtype == ref.dtype, (what, c, a.dtype, ref.dtype)
        if a.dtype.kind == "f":
            bad = np.flatnonzero(a.view(np.uint32) != ref.view(np.uint32))
        else:
            bad = np.flatnonzero(a != ref)
        assert bad.size == 0, (f"{what}: column {c} differs in {bad.size} of {len(a)} rows, e.g. row {bad[0]}: "
                               f"got {a[bad[0]]!r}, reference {ref[bad[0]]!r}")


def read_output(folder: Path) -> pd.DataFrame:
    files = sorted(p for p in folder.glob("*.parquet"))
    return pa.concat_tables([pq.read_table(f) for f in files]).to_pandas()


@pytest.fixture(scope="module", params=list(KINDS))
def fitted(request, tmp_path_factory):
    cats, conts = KINDS[request.param]
    root = tmp_path_factory.mktemp("criteo")
    train = criteo_like(400, seed=1)[cats + conts + ["label"]]
    test = criteo_like(300, seed=2, unseen=True)[cats + conts + ["label"]]
    write_files(train, root / "train")
    write_files(test, root / "test")
    wf = workflow(cats, conts)
    wf.fit(tp.Dataset(str(root / "train"), cpu=True, part_size="1KB"))
    return root, train, test, wf


@pytest.fixture
def paths_taken(monkeypatch):
    """Counts the partitions written from Arrow tables ("arrow") and on pandas ("pandas")."""
    import tabprep.workflow.tasks as W

    counts = {"arrow": 0, "pandas": 0}
    real = W.transform_table

    def spy(wf, table):
        out = real(wf, table)
        counts["arrow" if out is not None else "pandas"] += 1
        return out

    monkeypatch.setattr(W, "transform_table", spy)
    return counts


def test_reference_sees_the_edge_cases(fitted):
    """The data exercise what the pin is about (guards the reference data itself)."""
    _, train, test, _ = fitted
    if "I3" not in train or "C3" not in train:
        pytest.skip("checked on the mixed variant")
    logs = ref_logs(test["I3"])
    # 1e300 gives +inf (beyond float32), -0.0 and 3e-300 give +0.0 (their float32 sums with 1 are 1)
    assert np.isposinf(logs).any() and (logs.view(np.uint32) == 0).sum() >= 2
    assert ref_moments(ref_logs(train["I6"]))[1] == 0 and ref_moments(ref_logs(train["I7"]))[1] == 0
    ids = reference(train, test)
    for c in ALL_CATS:
        assert c == "C4" or (ids[c] == 2).any(), c  # unseen values (a bool column has none)
    assert (ids["C1"] == 1).any() and (ids["C3"] == 1).any() and (ids["C6"] == 1).any()  # nulls / NaN


@pytest.mark.parametrize("which", ["train", "test"])
def test_written_output_is_pinned(fitted, tmp_path, which, paths_taken):
    root, train, test, wf = fitted
    data = train if which == "train" else test
    ds = tp.Dataset(str(root / which), cpu=True, part_size="1KB")
    assert 0 in ds.to_ddf().map_partitions(len).compute().tolist()  # an empty partition is in the job
    meta = wf.transform(ds).to_parquet(str(tmp_path / "out"))
    assert meta["rows"] == len(data)
    got = read_output(tmp_path / "out")
    want = reference(train, data)
    assert_pinned(got, want, f"to_parquet of {which}")
    for f in sorted((tmp_path / "out").glob("*.parquet")):  # every file, empty partitions' included
        schema = pq.read_schema(f)
        assert [str(schema.field(c).type) for c in want] == [str(pa.from_numpy_dtype(v.dtype)) for v in want.values()]
    # the numeric job runs every non-empty partition on Arrow; a string column sends the mixed one to pandas
    numeric = "C3" not in train
    assert paths_taken["arrow"] == (ds.npartitions - 1 if numeric else 0), paths_taken


def test_in_memory_transform_is_pinned(fitted):
    _, train, test, wf = fitted
    assert_pinned(wf.transform(test), reference(train, test), "transform(frame)")


def test_saved_workflow_is_pinned(fitted, tmp_path):
    root, train, test, wf = fitted
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    loaded.transform(tp.Dataset(str(root / "test"), cpu=True, part_size="1KB")).to_parquet(str(tmp_path / "out"))
    assert_pinned(read_output(tmp_path / "out"), reference(train, test), "loaded workflow, to_parquet")
