"""ListSlice: NVTabular's window per row (a positive start alone is a length, ``row[:start]``;
otherwise ``row[start:end]``), optional right padding."""
from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tabprep as tp
from tabprep import ops

from conftest import make_dataset, to_pandas
from list_helpers import frame_to_backend, list_series, pylists

ROWS = [[1, 2, 3, 4, 5], [6], None, [], [7, None, 9], [10, 11], [12, 13, 14], [15, 16, 17, 18, 19, 20, 21], [22]]
WORDS = [["a", "b", "c"], None, [], ["d"], ["e", None, "f", "g"]]


def frame() -> pd.DataFrame:
    return pd.DataFrame({"l": list_series(ROWS, pa.int64()), "n": range(len(ROWS))})


def nvt_window(start, end):
    """NVTabular's ListSlice.__init__: a positive start without end means the first `start` elements."""
    return (0, start) if start > 0 and end is None else (start, end)


def ref_slice(rows, start, end=None, pad=False, pad_value=0, width=None):
    start, end = nvt_window(start, end)
    out = []
    for r in rows:
        if r is None and not pad:
            out.append(None)
            continue
        w = (r or [])[start:end]
        if pad:
            w = w + [pad_value] * (width - len(w))
        out.append(w)
    return out


def run(df, op, backend="cpu", nparts=3, cols=("l",)):
    wf = tp.Workflow(list(cols) >> op)
    ds = make_dataset(df, backend, nparts=nparts)
    wf.fit(ds)
    return wf, to_pandas(wf.transform(ds))


WINDOWS = [(0, 2), (1, 3), (2, None), (0, None), (-2, None), (-3, -1), (1, -1), (-4, 2), (3, 1), (0, 0), (-100, 100),
           (5, 100), (-1, None)]


@pytest.mark.parametrize("start,end", WINDOWS)
def test_matches_python_slicing(start, end):
    _, out = run(frame(), ops.ListSlice(start, end))
    assert pylists(out["l"]) == ref_slice(ROWS, start, end)


@pytest.mark.parametrize("start,end,width", [(0, 3, 3), (-2, None, 2), (-4, -1, 3), (1, 2, 1), (2, 2, 0)])
def test_pad_gives_fixed_length(start, end, width, backend):
    wf, out = run(frame(), ops.ListSlice(start, end, pad=True, pad_value=-7), backend)
    assert pylists(out["l"]) == ref_slice(ROWS, start, end, pad=True, pad_value=-7, width=width)
    col = wf.output_schema["l"]
    assert col.is_list and not col.is_ragged
    assert col.value_count == {"min": width, "max": width}


def test_strings_and_null_elements(backend):
    df = pd.DataFrame({"w": list_series(WORDS, pa.string())})
    _, out = run(df, ops.ListSlice(-2), backend, cols=("w",))
    assert pylists(out["w"]) == ref_slice(WORDS, -2)
    _, out = run(df, ops.ListSlice(0, 3, pad=True, pad_value=""), backend, cols=("w",))
    assert pylists(out["w"]) == ref_slice(WORDS, 0, 3, pad=True, pad_value="", width=3)


def test_after_categorify_pads_with_padding_id(backend):
    wf, out = run(frame(), ops.Categorify(), backend)
    wf2 = tp.Workflow(["l"] >> ops.Categorify() >> ops.ListSlice(-3, pad=True))
    ds = make_dataset(frame(), backend, nparts=2)
    wf2.fit(ds)
    sliced = to_pandas(wf2.transform(ds))
    assert pylists(sliced["l"]) == ref_slice(pylists(out["l"]), -3, pad=True, pad_value=0, width=3)
    assert wf2.output_schema["l"].cardinality == wf.output_schema["l"].cardinality
    assert wf2.output_schema["l"].is_categorical


@pytest.mark.parametrize("start,end", WINDOWS)
def test_value_count_ignores_the_input_bounds_and_holds_the_data(start, end):
    """NVTabular's value_count (tests/nvtabular/test_ops_list_slice.py) does not read the input's
    lengths: the same after ValueCount as without; and it bounds the lengths the slice gives."""
    with_vc = tp.Workflow(["l"] >> ops.ValueCount() >> ops.ListSlice(start, end))
    with_vc.fit(tp.Dataset(frame(), npartitions=2))
    plain = tp.Workflow(["l"] >> ops.ListSlice(start, end))
    plain.fit(tp.Dataset(frame(), npartitions=2))
    col = with_vc.output_schema["l"]
    assert col == plain.output_schema["l"].with_(properties=col.properties)
    assert col.properties["value_count"] == plain.output_schema["l"].properties["value_count"]
    lengths = [len(r) for r in ref_slice(ROWS, start, end) if r is not None]
    vc = col.properties["value_count"]
    assert vc["min"] <= min(lengths) and (vc["max"] is None or max(lengths) <= vc["max"])
    assert col.is_ragged is (vc["max"] is None or vc["min"] != vc["max"])


def test_value_count_without_input_bounds():
    wf = tp.Workflow(["l"] >> ops.ListSlice(-5))
    wf.fit(frame())
    assert wf.output_schema["l"].value_count == {"min": 0, "max": 5}
    wf = tp.Workflow(["l"] >> ops.ListSlice(2, 100))
    wf.fit(frame())
    assert wf.output_schema["l"].value_count == {"min": 0, "max": 98}
    wf = tp.Workflow(["l"] >> ops.ListSlice(0))
    wf.fit(frame())
    assert wf.output_schema["l"].value_count is None


@pytest.mark.parametrize("start,end", [(0, None), (1, -1), (3, 1)])
def test_pad_without_fixed_length_is_refused(start, end):
    with pytest.raises(ValueError, match="fixed length"):
        ops.ListSlice(start, end, pad=True)


def test_scalar_columns_are_one_element_lists(backend):
    df = pd.DataFrame({"a": pd.array([1, None, 3], dtype="Int64"), "f": [0.5, float("nan"), 2.0]})
    wf, out = run(df, ops.ListSlice(0, 2, pad=True), backend, nparts=2, cols=("a", "f"))
    assert pylists(out["a"]) == [[1, 0], [0, 0], [3, 0]]
    assert pylists(out["f"]) == [[0.5, 0.0], [0.0, 0.0], [2.0, 0.0]]
    assert wf.output_schema["a"].is_list and wf.output_schema["a"].value_count == {"min": 2, "max": 2}
    _, out = run(df, ops.ListSlice(0), backend, nparts=2, cols=("a",))
    assert pylists(out["a"]) == [[1], [], [3]]


def test_empty_partitions_and_online_path(backend):
    df = frame()
    wf, out = run(df, ops.ListSlice(1, 3), backend, nparts=4)
    online = wf.transform(frame_to_backend(df, backend))
    assert pylists(online["l"]) == pylists(out["l"]) == ref_slice(ROWS, 1, 3)
    empty = wf.transform(frame_to_backend(df.iloc[:0], backend))
    assert len(empty) == 0 and list(empty.columns) == ["l"]


def test_save_load_round_trip(tmp_path, backend):
    wf, out = run(frame(), ops.ListSlice(-3, -1, pad=True, pad_value=99), backend)
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    assert loaded.output_schema == wf.output_schema
    again = to_pandas(loaded.transform(make_dataset(frame(), backend, nparts=2)))
    pd.testing.assert_frame_equal(again, out)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.one_of(st.none(), st.lists(st.integers(-5, 5), max_size=6)), min_size=1, max_size=8),
       start=st.integers(-8, 8), end=st.one_of(st.none(), st.integers(-8, 8)))
def test_property_python_slices(rows, start, end):
    df = pd.DataFrame({"l": list_series(rows, pa.int64())})
    out = tp.Workflow(["l"] >> ops.ListSlice(start, end)).transform(df)
    assert pylists(out["l"]) == ref_slice(rows, start, end)
