"""JoinExternal side tables as NVTabular 23.08 takes them (nvtabular/ops/join_external.py:
``df_ext`` a path (parquet or csv, ``kind_ext``), a DataFrame, a pyarrow Table, a dask frame or a
Dataset); an unknown file format is an error naming it."""
from __future__ import annotations

import dask.dataframe as dd
import pandas as pd
import pyarrow as pa
import pytest

import tabprep as tp
from tabprep import ops


def _data():
    return pd.DataFrame({"k": [1, 2, 3, 2]})


def _side():
    return pd.DataFrame({"k": [1, 2, 4], "v": [10.0, 20.0, 40.0]})


def _join(side):
    wf = tp.Workflow(["k"] >> ops.JoinExternal(side, on="k"))
    out = wf.fit_transform(tp.Dataset(_data())).to_ddf().compute()
    return [None if pd.isna(v) else v for v in out["v"]]


EXPECT = [10.0, 20.0, None, 20.0]


def test_csv_path(tmp_path):
    """A .csv side table is read as csv."""
    path = tmp_path / "side.csv"
    _side().to_csv(path, index=False)
    assert _join(str(path)) == EXPECT


@pytest.mark.parametrize("kind", ["arrow", "dask", "dataset"])
def test_in_memory_kinds(kind):
    """A pyarrow Table, a dask DataFrame and a tabprep Dataset join like a pandas frame."""
    side = {"arrow": lambda: pa.Table.from_pandas(_side()),
            "dask": lambda: dd.from_pandas(_side(), npartitions=2),
            "dataset": lambda: tp.Dataset(_side())}[kind]()
    assert _join(side) == EXPECT


def test_unknown_format_is_named(tmp_path):
    """A side table of another format is an error naming the suffix."""
    path = tmp_path / "side.json"
    _side().to_json(path)
    with pytest.raises(ValueError, match=r"\.json"):
        _join(str(path))
