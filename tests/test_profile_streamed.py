"""A profile pass on CPU parquet reads each partition one column at a time (``tasks._fit_streamed``,
``io.dataset.piece_columns``): the same profile as the whole-table path, each read of one column,
the reads timed as a partition's read (a corrupt page met by a profile: ``tests/test_trust_io.py``)."""
import json
from typing import Any, List

import dask
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tabprep as tp
from tabprep.workflow import tasks


def _data(folder: Any) -> pd.DataFrame:
    """Three files of 40 rows in row groups of 10: nulls, NaN, inf, strings, bools, lists, ids."""
    folder.mkdir()
    rng = np.random.default_rng(7)
    n = 120
    df = pd.DataFrame({
        "i": pd.array(np.where(rng.random(n) < 0.2, None, rng.integers(-50, 50, n)), dtype="Int64"),
        "f": np.where(rng.random(n) < 0.1, np.nan, rng.normal(size=n)),
        "c": rng.integers(0, 9, n),
        "s": np.where(rng.random(n) < 0.1, None, rng.choice(["a", "b", "ccc"], n)).astype(object),
        "b": rng.random(n) < 0.3,
        "l": [None if k % 11 == 0 else list(range(k % 4)) for k in range(n)],
    })
    df.loc[5, "f"], df.loc[17, "f"] = np.inf, -np.inf
    for k in range(3):
        part = df.iloc[k * 40:(k + 1) * 40]
        table = pa.Table.from_pandas(part, preserve_index=False)
        table = table.set_column(1, "f", pa.array(part["f"].to_numpy()))  # NaN as NaN, not as null
        pq.write_table(table, folder / f"p{k}.parquet", row_group_size=10)
    return df


def _reads(monkeypatch: Any) -> List[Any]:
    seen: List[Any] = []
    orig = pq.ParquetFile.read_row_groups

    def spy(self: Any, row_groups: Any, columns: Any = None, **kw: Any) -> Any:
        seen.append(None if columns is None else list(columns))
        return orig(self, row_groups, columns=columns, **kw)
    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", spy)
    return seen


@pytest.mark.parametrize("part_size", [None, "1KB"])
def test_a_streamed_profile_equals_the_whole_table_one(tmp_path: Any, monkeypatch: Any, part_size: Any) -> None:
    df = _data(tmp_path / "d")
    ds = tp.Dataset(str(tmp_path / "d"), part_size=part_size)
    vocabs = {"c": [0, 1, 2, 3], "s": ["a", "b"]}
    seen = _reads(monkeypatch)
    with dask.config.set(scheduler="sync"):  # (merge order fixed: the same sketches' bytes)
        streamed = tp.profile(ds, categorical=["c"], vocabs=vocabs, sample_every=1)
        one_by_one = list(seen)
        seen.clear()
        monkeypatch.setattr(tasks, "_fit_streamed", lambda *a: None)
        whole = tp.profile(ds, categorical=["c"], vocabs=vocabs, sample_every=1)
    assert json.loads(streamed.to_json()) == json.loads(whole.to_json())
    # every read of the streamed pass was of one column; the other pass read whole row groups
    assert one_by_one and all(c is not None and len(c) == 1 for c in one_by_one)
    assert len(one_by_one) == ds.npartitions * len(df.columns)
    assert seen and all(c is None or len(c) == len(df.columns) for c in seen)
    # and it is the data's profile (pandas, written here)
    assert streamed.rows == len(df)
    assert streamed["i"]["nulls"] == int(df["i"].isna().sum())
    assert streamed["i"]["mean"] == pytest.approx(float(df["i"].dropna().astype(float).mean()))
    assert streamed["f"]["inf"] == 2 and streamed["f"]["nan"] == int(df["f"].isna().sum())
    assert streamed["c"]["oov"] == int((~df["c"].isin(vocabs["c"])).sum())
    assert streamed["s"]["oov"] == int((df["s"].notna() & ~df["s"].isin(vocabs["s"])).sum())


def test_the_streamed_reads_are_timed_as_one_read_a_partition(tmp_path: Any) -> None:
    df = _data(tmp_path / "d")
    ds = tp.Dataset(str(tmp_path / "d"))
    calls: List[Any] = []
    wf = tp.Workflow(list(df.columns))  # no op to fit: the profile alone, streamed
    wf.op_timer = lambda nid, label, kind, seconds, rows: calls.append((nid, label, kind, rows, seconds))
    wf.fit(ds, profile=True)
    reads = [c for c in calls if c[0] == "(io)"]
    assert [c[1:3] for c in reads] == [("read parquet", "read")] * ds.npartitions
    assert sum(c[3] for c in reads) == len(df) and all(c[4] >= 0 for c in reads)
    assert wf.profile_["rows"] == len(df)

