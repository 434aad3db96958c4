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


def test_nvtabular_keyword_names(tmp_path):
    """NVTabular's keywords ``df_ext=``, ``on=``, ``columns_ext=``, ``how=`` (join_external.py's
    ``__init__``); tabprep's ``df_or_path=`` stays an alias."""
    side = _side().assign(w=[1, 2, 3])
    op = ops.JoinExternal(df_ext=side, on="k", columns_ext=["v"], how="inner")
    wf = tp.Workflow(["k"] >> op)
    out = wf.fit_transform(tp.Dataset(_data())).to_ddf().compute()
    assert list(out.columns) == ["k", "v"]
    assert out["k"].tolist() == [1, 2, 2] and out["v"].tolist() == [10.0, 20.0, 20.0]
    wf.save(tmp_path / "wf")
    again = tp.Workflow.load(tmp_path / "wf").transform(tp.Dataset(_data())).to_ddf().compute()
    assert again["v"].tolist() == [10.0, 20.0, 20.0]
    alias = tp.Workflow(["k"] >> ops.JoinExternal(df_or_path=_side(), on="k"))
    assert alias.fit_transform(tp.Dataset(_data())).to_ddf().compute()["v"].tolist()[:2] == [10.0, 20.0]


def test_both_side_table_names_is_an_error():
    """Giving ``df_ext`` and ``df_or_path`` together is ambiguous: an error naming both."""
    with pytest.raises(TypeError, match="df_ext.*df_or_path|df_or_path.*df_ext"):
        ops.JoinExternal(_side(), on="k", df_ext=_side())
    with pytest.raises(TypeError, match="df_ext"):
        ops.JoinExternal(on="k")


def test_int_side_column_with_misses_keeps_its_dtype_and_says_so(backend, monkeypatch):
    """NVTabular 23.08 (pandas merge) gives an integer side column float64 NaN where a row has no
    match; tabprep keeps it integer (nullable) and says so once per column."""
    import warnings

    from conftest import make_dataset, to_pandas
    from tabprep import _warn

    monkeypatch.setattr(_warn, "_ONCE", set())   # once per process: as in a fresh one
    side = pd.DataFrame({"k": [1, 2, 4], "n": [10, 20, 40], "f": [1.5, 2.5, 4.5]})

    def run(data):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            wf = tp.Workflow(["k"] >> ops.JoinExternal(side, on="k"))
            out = to_pandas(wf.fit_transform(make_dataset(data, backend, nparts=2, empties=False)))
        return out, [str(w.message) for w in rec if "JoinExternal" in str(w.message) and "match" in str(w.message)]

    out, notes = run(pd.DataFrame({"k": [1, 2, 3, 2]}))
    assert len(notes) == 1 and "'n'" in notes[0] and "float64" in notes[0], notes
    assert out["n"].dtype.kind == "i" and out["n"].isna().tolist() == [False, False, True, False]
    assert out["n"].dropna().tolist() == [10, 20, 20]
    monkeypatch.setattr(_warn, "_ONCE", set())   # once per process: as in a fresh one
    _, notes = run(pd.DataFrame({"k": [1, 2, 4, 2]}))       # every row matches: nothing said
    assert notes == []
