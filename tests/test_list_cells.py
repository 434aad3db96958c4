"""lists_to_numpy: the Arrow list columns of a frame handed to users (``Dataset.compute`` /
``to_ddf``, ``Workflow.transform(frame)``) as numpy cells, exact. pyarrow's ``to_numpy`` turns every
cell of a list<int64> chunk holding one null element into float64 (9007199254740993 became
9007199254740992.0, and ``[1, 2]`` became ``[1., 2.]``): a silently different number."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabprep.backend.frames import lists_to_numpy
from tabprep.backend.list_cells import numpy_cells

BIG = 2**53 + 1   # not a float64


def _frame(rows, type_):
    return pd.DataFrame({"x": pd.Series(pd.arrays.ArrowExtensionArray(pa.chunked_array([pa.array(rows, type_)]))),
                         "k": np.arange(len(rows))})


def _cells(frame):
    return list(lists_to_numpy(frame)["x"])


def _check(cells, rows, int_kind=True):
    assert len(cells) == len(rows)
    for cell, row in zip(cells, rows):
        if row is None:
            assert cell is None
            continue
        assert isinstance(cell, np.ndarray) and len(cell) == len(row)
        if None not in row and int_kind:
            assert cell.dtype.kind in "iu", (cell, row)   # a cell without nulls keeps its integer dtype
        for v, w in zip(cell.tolist(), row):
            assert (v is None) if w is None else (v == w and isinstance(v, int)), (cell, row)


def test_int64_cells_with_a_null_stay_exact():
    rows = [[BIG, None], [1, 2], None, [], [3]]
    cells = _cells(_frame(rows, pa.list_(pa.int64())))
    _check(cells, rows)
    assert cells[0].dtype == object and cells[1].dtype == np.int64


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.one_of(st.none(), st.lists(st.one_of(st.none(), st.integers(-2**63, 2**63 - 1)), max_size=5)),
                     max_size=10),
       large=st.booleans(), start=st.integers(0, 3), chunks=st.integers(1, 3))
def test_matches_the_python_lists(rows, large, start, chunks):
    type_ = pa.large_list(pa.int64()) if large else pa.list_(pa.int64())
    arr = pa.array(rows, type_)[start:]   # a slice: offsets that do not start at 0
    pieces = [arr[i * len(arr) // chunks:(i + 1) * len(arr) // chunks] for i in range(chunks)]
    frame = pd.DataFrame({"x": pd.Series(pd.arrays.ArrowExtensionArray(pa.chunked_array(pieces, type_)))})
    _check(list(lists_to_numpy(frame)["x"]), rows[start:])


@pytest.mark.parametrize("type_", [pa.list_(pa.int32()), pa.list_(pa.uint64()), pa.list_(pa.int8(), 2)])
def test_other_integer_types_and_fixed_size_lists(type_):
    top = 2**64 - 1 if type_.value_type == pa.uint64() else 5
    rows = [[top, None], [1, 2], None]
    _check(_cells(_frame(rows, type_)), rows)


def test_cells_without_nulls_are_what_pyarrow_gives():
    rows = [[BIG, 1], [2], None]
    cells = _cells(_frame(rows, pa.list_(pa.int64())))
    assert [c.dtype for c in cells[:2]] == [np.int64, np.int64] and cells[2] is None
    floats = _cells(_frame([[1.5, None], [2.0]], pa.list_(pa.float64())))
    assert np.isnan(floats[0][1]) and floats[0].dtype == np.float64   # floats: NaN, as pyarrow gives


def test_nested_lists_of_ints_with_a_null_leaf_stay_exact():
    rows = [[[BIG, None], [4]], None, [[1, 2]], [None, [5]]]
    cells = _cells(_frame(rows, pa.list_(pa.list_(pa.int64()))))
    assert cells[1] is None
    for cell, row in zip(cells, rows):
        if row is None:
            continue
        assert cell.dtype == object and len(cell) == len(row)
        for inner, want in zip(cell, row):
            if want is None:
                assert inner is None
                continue
            assert [v if v is None else int(v) for v in inner.tolist()] == want
            assert all(v is None or isinstance(v, int) for v in inner.tolist())
    assert cells[2][0].dtype == np.int64   # no null in it: its integer dtype


def test_a_null_row_over_hidden_null_values_stays_exact():
    # pyarrow's to_numpy also goes float64 for nulls it keeps under a null row (a fixed-size list's
    # null row has null slots; a list's null row may cover values), which flatten() does not show
    fixed = pa.array([[BIG, 1], None, [3, 4]], pa.list_(pa.int64(), 2))
    _check(list(numpy_cells(pa.chunked_array([fixed]))), [[BIG, 1], None, [3, 4]])
    covered = pa.ListArray.from_arrays(pa.array([0, 2, 4], pa.int32()), pa.array([7, None, BIG, 2]),
                                       mask=pa.array([True, False]))
    _check(list(numpy_cells(covered)), [None, [BIG, 2]])
    nested = numpy_cells(pa.array([[[BIG, 1], None]], pa.list_(pa.list_(pa.int64(), 2))))
    assert nested[0][1] is None and nested[0][0].dtype == np.int64 and nested[0][0].tolist() == [BIG, 1]
    frame = pd.DataFrame({"v": pd.Series([[BIG, 1], None, [3, 4]], dtype=pd.ArrowDtype(pa.list_(pa.int64(), 2)))})
    import tabprep as tp

    _check(list(tp.Dataset(frame, npartitions=1).compute()["v"]), [[BIG, 1], None, [3, 4]])
