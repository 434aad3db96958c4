"""Groupby's arguments as NVTabular 23.08 reads them (nvtabular/ops/groupby.py), from the user's side.

* ``ascending`` given as a list: pandas' ``sort_values(sort_cols, ascending=[...])``, one direction
  per sort column; ``first`` / ``last`` then take the ends of the sorted lists (``_first_or_last``
  reads a non-empty list as true), unlike ``ascending=False``;
* ``min`` / ``max`` of string, datetime and timedelta columns: the values, in the column's dtype
  (pandas' ``groupby.agg``); ``sum`` / ``mean`` / ``median`` / ``std`` / ``var`` of them raise;
* a dict ``aggs`` aggregates only the selected non-key columns (``_get_agg_dicts``): other keys
  are ignored, with a warning naming them.

The reference, :func:`nvt_groupby`, follows NVTabular's ``Groupby.__init__`` / ``transform`` /
``_apply_aggs`` / ``_get_agg_dicts`` / ``_first_or_last`` with plain pandas (its int32 / float32
casts are left out: tabprep's count / sum dtypes are a documented difference, not checked here).
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

from conftest import make_dataset, to_pandas

_LIST_AGGS = ("list", "first", "last")


def nvt_groupby(df, selected, groupby_cols, sort_cols=(), aggs="list", ascending=True, name_sep="_"):
    """NVTabular 23.08's Groupby on one partition, written with pandas (no tabprep code)."""
    groupby_cols, sort_cols = list(groupby_cols), list(sort_cols)
    # __init__: a str / list applies to every column ("__all__"); list-type aggs need a `list`
    if isinstance(aggs, str):
        aggs = {"__all__": [aggs]}
    elif isinstance(aggs, list):
        aggs = {"__all__": aggs}
    list_aggs, conv_aggs = {}, {}
    for col, v in aggs.items():
        v = v if isinstance(v, list) else [v]
        conv = [a for a in v if a not in _LIST_AGGS]
        if any(a in _LIST_AGGS for a in v):
            list_aggs[col] = [a for a in v if a in _LIST_AGGS]
            conv.append(list)
        if conv:
            conv_aggs[col] = conv
    # transform: sort the whole partition
    if sort_cols:
        df = df.sort_values(sort_cols, ascending=ascending, ignore_index=True)
    # _get_agg_dicts / _ensure_agg_dict: only selected columns that are not group-by keys
    allowed = [c for c in selected if c not in groupby_cols]

    def ensure(d):
        return {c: d["__all__"] for c in allowed} if "__all__" in d else {k: v for k, v in d.items() if k in allowed}

    list_aggs, conv_aggs = ensure(list_aggs), ensure(conv_aggs)
    # _apply_aggs
    cols = list(dict.fromkeys(groupby_cols + list(conv_aggs) + list(list_aggs)))
    out = df[cols].groupby(groupby_cols).agg(conv_aggs).reset_index()
    out.columns = [name_sep.join(n for n in name if n != "") for name in out.columns.to_flat_index()]
    for col, la in list_aggs.items():
        for a in la:
            if a in ("first", "last"):
                # _first_or_last: "first" and ascending, or "last" and not ascending -> element 0
                take_first = (a == "first" and ascending) or (a == "last" and not ascending)
                out[f"{col}{name_sep}{a}"] = out[f"{col}{name_sep}list"].apply(
                    lambda y, f=take_first: y[0] if f else y[-1])
        if "list" not in la:
            out = out.drop(columns=[f"{col}{name_sep}list"])
    # column_mapping: a key column is output only when selected
    return out.drop(columns=[k for k in groupby_cols if k not in selected])


def _cell(v):
    if isinstance(v, (list, tuple, np.ndarray)):
        return [_cell(x) for x in list(v)]
    if v is None or v is pd.NA or v is pd.NaT or (isinstance(v, float) and np.isnan(v)):
        return None
    return v.item() if isinstance(v, np.generic) else v


def _run(sel, op, df, backend="cpu", empties=True):
    wf = tp.Workflow(sel >> op)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # Groupby's dtype note
        out = to_pandas(wf.fit_transform(make_dataset(df, backend, nparts=1, empties=empties)))
    return wf, out


def _assert_as_reference(out, ref):
    """Same columns (NVTabular's order within a column follows a Python set: compared as a set),
    same values row by row."""
    assert sorted(out.columns) == sorted(ref.columns), (list(out.columns), list(ref.columns))
    assert len(out) == len(ref)
    for c in ref.columns:
        assert [_cell(v) for v in out[c]] == [_cell(v) for v in ref[c]], c


# -- 1. ascending as a list -------------------------------------------------------------------
def test_ascending_list_of_one_sorts_descending_and_first_is_the_lists_first(backend, tmp_path):
    df = pd.DataFrame({"u": [1, 1, 1, 2, 2], "t": [1, 2, 3, 5, 4], "v": [10, 20, 30, 40, 50]})
    aggs = {"v": ["list", "first", "last"]}
    op = ops.Groupby("u", sort_cols=["t"], ascending=[False], aggs=aggs)
    wf, out = _run(["u", "t", "v"], op, df, backend)
    ref = nvt_groupby(df, ["u", "t", "v"], ["u"], ["t"], aggs, ascending=[False])
    _assert_as_reference(out, ref)
    assert [_cell(v) for v in out["v_list"]] == [[30, 20, 10], [40, 50]]
    assert out["v_first"].tolist() == [30, 40] and out["v_last"].tolist() == [10, 50]
    # the saved workflow keeps the list
    wf.save(tmp_path / "wf")
    again = to_pandas(tp.Workflow.load(tmp_path / "wf").transform(make_dataset(df, backend, nparts=1)))
    _assert_as_reference(again, ref)


def test_ascending_mixed_list_sorts_each_column_its_way(backend):
    """[True, False]: a ascending, then b descending (ties of a); ``first`` / ``last`` are the ends
    of those lists, as for any non-empty list; ``ascending=False`` (a bool) swaps them instead."""
    df = pd.DataFrame({"u": [1, 1, 1, 1, 2, 2, 2],
                       "a": [2, 1, 1, 2, 9, 8, 8],
                       "b": [5, 6, 7, 8, 1, 2, 3],
                       "v": ["p", "q", "r", "s", "x", "y", "z"]})
    aggs = {"v": ["list", "first", "last"], "b": ["first", "last"]}
    sel = ["u", "v", "b"]
    wf, out = _run(sel, ops.Groupby("u", sort_cols=["a", "b"], ascending=[True, False], aggs=aggs), df, backend)
    ref = nvt_groupby(df, sel, ["u"], ["a", "b"], aggs, ascending=[True, False])
    _assert_as_reference(out, ref)
    assert [list(v) for v in out["v_list"]] == [["r", "q", "s", "p"], ["z", "y", "x"]]
    assert out["v_first"].tolist() == ["r", "z"] and out["v_last"].tolist() == ["p", "x"]
    assert wf.output_schema["v_first"].dtype == "str" and wf.output_schema["b_last"].dtype == "int64"
    # the bool False: same lists, first / last the other way round (NVTabular's _first_or_last)
    _, desc = _run(sel, ops.Groupby("u", sort_cols=["a", "b"], ascending=False, aggs=aggs), df, backend)
    _assert_as_reference(desc, nvt_groupby(df, sel, ["u"], ["a", "b"], aggs, ascending=False))
    assert desc["v_first"].tolist() == ["q", "y"]


@pytest.mark.parametrize("ascending", [[True, False], [], (False, True, True)])
def test_ascending_list_of_another_length_is_refused(ascending):
    """pandas refuses it (``Length of ascending (2) != length of by (1)``): so does Groupby, naming
    the argument and the sort columns, when it is built."""
    df = pd.DataFrame({"u": [1], "t": [1], "v": [1]})
    with pytest.raises(ValueError):
        df.sort_values(["t"], ascending=ascending)
    with pytest.raises(ValueError, match=r"ascending.*sort_cols.*\['t'\]"):
        ops.Groupby("u", sort_cols=["t"], ascending=ascending, aggs="list")


# -- 2. min / max of strings, datetimes, timedeltas ---------------------------------------------
def _times_frame():
    return pd.DataFrame({
        "u": [1, 1, 1, 2, 2, 3],
        "s": pd.Series(["b", None, "a", "zz", "c", None], dtype="str"),
        "d": pd.to_datetime(["2021-03-01", "2020-01-02", None, "1999-12-31", "2000-01-01", None]),
        "dz": pd.to_datetime(["2021-03-01 10:00", None, "2021-03-01 09:00", "2001-01-01 00:00", "2000-01-01 00:00", None],
                             utc=True),
        "td": pd.to_timedelta(["1h", "2h", None, "3s", "-1s", None]),
    })


@pytest.mark.parametrize("col", ["s", "d", "dz", "td"])
def test_min_max_of_strings_and_times_are_values_in_the_columns_dtype(backend, col):
    df = _times_frame()
    aggs = {col: ["min", "max"]}
    wf, out = _run(["u", col], ops.Groupby("u", aggs=aggs), df, backend)
    ref = nvt_groupby(df, ["u", col], ["u"], aggs=aggs)
    _assert_as_reference(out, ref)
    ds = tp.Dataset(df)   # the column as tabprep reads it (strings: pandas' "string" dtype)
    for name in (f"{col}_min", f"{col}_max"):
        assert wf.output_schema[name].dtype == ds.schema[col].dtype, name
        assert out[name].dtype == to_pandas(ds)[col].dtype, name
        assert "continuous" not in wf.output_schema[name].tags   # not a number


@pytest.mark.parametrize("agg", ["sum", "mean", "median", "std", "var"])
@pytest.mark.parametrize("col", ["s", "d", "td"])
def test_numeric_aggs_of_strings_and_times_raise_naming_column_and_agg(col, agg):
    """NVTabular 23.08 raises here (pandas refuses, or its float32 cast of the result does)."""
    df = _times_frame()
    with pytest.raises((TypeError, ValueError)):
        nvt_reference = nvt_groupby(df, ["u", col], ["u"], aggs={col: [agg]})
        nvt_reference[f"{col}_{agg}"].astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # Groupby's dtype note
        op = ops.Groupby("u", aggs={col: [agg]})
    with pytest.raises(TypeError, match=rf"Groupby.*'{col}'.*{agg}"):
        _run(["u", col], op, df)


# -- 3. dict aggs: only selected non-key columns ------------------------------------------------
def test_dict_aggs_of_unselected_columns_and_keys_are_ignored_and_warned(backend):
    from tabprep import _warn
    import tabprep.ops.groupby as G

    df = pd.DataFrame({"u": [1, 1, 2], "v": [1.5, 2.0, 4.0], "w": [1, 2, 3]})
    aggs = {"v": "sum", "w": "sum", "u": "count"}
    ref = nvt_groupby(df, ["u", "v"], ["u"], aggs=aggs)
    assert list(ref.columns) == ["u", "v_sum"]
    _warn._ONCE.discard((G._IGNORED_AGGS_NOTE, ("w", "u")))
    with pytest.warns(tp.NVTabularDifferenceWarning, match=r"aggs.*\['w', 'u'\].*ignored"):
        wf = tp.Workflow(["u", "v"] >> ops.Groupby("u", aggs=aggs))
        out = to_pandas(wf.fit_transform(make_dataset(df, backend, nparts=1)))
    assert list(out.columns) == wf.output_schema.column_names == ["u", "v_sum"]
    _assert_as_reference(out, ref)
    # said once; a column the data lacks is not read (NVTabular never reads it)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tp.NVTabularDifferenceWarning)
        _, again = _run(["u", "v"], ops.Groupby("u", aggs=aggs), df.drop(columns=["w"]), backend)
    _assert_as_reference(again, ref)
    # the key aggregated through a list of aggs is left out too (NVTabular's "__all__")
    _, listed = _run(["u", "v"], ops.Groupby("u", aggs=["sum"]), df, backend)
    _assert_as_reference(listed, nvt_groupby(df, ["u", "v"], ["u"], aggs=["sum"]))
