"""ListSlice as NVTabular 23.08's (nvtabular/ops/list_slice.py ``ListSlice.__init__`` and
``ListSlice.transform``): ``ListSlice(n)`` keeps the first n elements, ``ListSlice(-n)`` the last n,
``ListSlice(a, b)`` ``row[a:b]``; ``pad=True`` right-pads to ``max_elements`` with ``pad_value``."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import tabprep as tp
from tabprep import ops
from tabprep.testing import check_op

from conftest import make_dataset, to_pandas
from list_helpers import list_series, pylists

ROWS = [list(range(12)), [5, 6], [], [7, 8, 9], list(range(20, 31))]


def _run(op, backend="cpu"):
    df = pd.DataFrame({"l": list_series(ROWS, pa.int64())})
    wf = tp.Workflow(["l"] >> op)
    return wf, pylists(to_pandas(wf.fit_transform(make_dataset(df, backend, nparts=2)))["l"])


def test_positive_start_alone_is_a_length(backend):
    """ListSlice(10) truncates to the first 10 elements (docstring: "truncate a list column to
    only include the first 10 elements per row"; __init__ turns start into end)."""
    _, out = _run(ops.ListSlice(10), backend)
    assert out == [r[:10] for r in ROWS]
    op = ops.ListSlice(10)
    assert (op.start, op.end) == (0, 10)


def test_negative_start_and_window(backend):
    """ListSlice(-10): the last 10; ListSlice(1, 11): the first 10 but the first element."""
    _, out = _run(ops.ListSlice(-10), backend)
    assert out == [r[-10:] for r in ROWS]
    _, out = _run(ops.ListSlice(1, 11), backend)
    assert out == [r[1:11] for r in ROWS]


@pytest.mark.parametrize("args, width", [((3,), 3), ((-4,), 4), ((1, 4), 3), ((-4, 2), 4), ((-5, -2), 3)])
def test_pad_to_max_elements(backend, args, width):
    """pad=True pads each row to max_elements with pad_value (start < 0: -start when end > 0 or
    unset, else end - start; start >= 0: end - start)."""
    wf, out = _run(ops.ListSlice(*args, pad=True, pad_value=-1), backend)
    start, end = (0, args[0]) if len(args) == 1 and args[0] > 0 else (args[0], args[1] if len(args) > 1 else None)
    assert out == [r[start:end] + [-1] * (width - len(r[start:end])) for r in ROWS]
    assert wf.output_schema["l"].value_count == {"min": width, "max": width}


def test_default_pad_value_is_zero():
    """pad_value defaults to 0.0 (cast to the int elements: 0)."""
    _, out = _run(ops.ListSlice(4, pad=True))
    assert out == [r[:4] + [0] * (4 - len(r[:4])) for r in ROWS]


@pytest.mark.parametrize("args", [(0,), (1, -1)])
def test_pad_without_a_length_is_an_error(args):
    """NVTabular pads to 2**63 - 1 elements for ListSlice(0, pad=True) and silently skips padding
    for a negative max_elements; tabprep refuses both, naming the window."""
    with pytest.raises(ValueError, match="pad=True"):
        ops.ListSlice(*args, pad=True)


def test_transform_pandas_python_lists():
    """ListSlice.transform on a pandas column of Python lists (NVTabular's CPU path slices each
    row) gives the sliced lists."""
    df = pd.DataFrame({"l": [[0, 1, 2, 2, 767], [1, 2], []]})
    out = ops.ListSlice(3).transform(["l"], df)
    assert pylists(out["l"]) == [[0, 1, 2], [1, 2], []]
    out = ops.ListSlice(-2, pad=True, pad_value=9).transform(["l"], df)
    assert pylists(out["l"]) == [[2, 767], [1, 2], [9, 9]]


def test_check_op():
    """The conformance battery on a list column."""
    df = pd.DataFrame({"lst": list_series([[1, 2, 3], None, [], [4, None, 6, 7]] * 10, pa.int64())})
    check_op(ops.ListSlice(2), data=df, columns=["lst"])


# -- output schema: value_count and is_ragged -----------------------------------------------------
INT64_MAX = 2**63 - 1


def nvt_value_count(start, end=None, pad=False):
    """NVTabular 23.08's output ``value_count`` and ``is_ragged`` of ListSlice, written from
    nvtabular/ops/list_slice.py: ``__init__`` (``max_elements``), ``_compute_properties`` (min 0,
    max ``max_elements`` when bounded; min ``max_elements`` too with pad) and ``_compute_shape``
    (merlin's shape ``(None, (min, max))``: ragged unless min == max). The input's lengths play
    no part."""
    if start > 0 and end is None:
        start, end = 0, start
    if end is None:
        end = INT64_MAX
    max_elements = -(start if end > 0 else start - end) if start < 0 else end - start
    vc = {"min": 0, "max": None}
    if max_elements != INT64_MAX:
        vc["max"] = max_elements
        if pad:
            vc["min"] = max_elements
    return vc, not (vc["max"] is not None and vc["min"] == vc["max"])


# NVTabular's max_elements is >= 0 for these (a negative one is merlin's ValueError: see below)
SCHEMA_WINDOWS = [((2,), False), ((2,), True), ((0,), False), ((-2,), False), ((-2,), True), ((1, 3), False),
                  ((1, 3), True), ((-4, 2), False), ((-4, 2), True), ((-3, -1), False), ((-3, -1), True),
                  ((2, 2), False), ((5, 100), False), ((-100, 100), False)]


@pytest.mark.parametrize("args, pad", SCHEMA_WINDOWS)
@pytest.mark.parametrize("value_count_first", [False, True])
def test_output_value_count_and_raggedness_are_nvtabulars(args, pad, value_count_first):
    """value_count {min, max} and is_ragged as NVTabular's compute_output_schema, whatever the
    input's lengths (after ValueCount, whose fixed length 3 must not make the slice fixed-length)."""
    df = pd.DataFrame({"l": list_series([[1, 2, 3], [4, 5, 6], [7, 8, 9]], pa.int64())})
    first = ["l"] >> ops.ValueCount() if value_count_first else ["l"]
    wf = tp.Workflow(first >> ops.ListSlice(*args, pad=pad))
    wf.fit(tp.Dataset(df))
    col = wf.output_schema["l"]
    vc, ragged = nvt_value_count(*args, pad=pad)
    assert col.is_list
    assert col.properties["value_count"] == vc
    assert col.is_ragged is ragged


def test_after_value_count_the_slice_stays_multi_hot():
    """The review's case: Categorify >> ValueCount >> ListSlice(2) of fixed-length rows. NVTabular
    resets value_count min to 0, so the column stays ragged and get_embedding_sizes gives the
    (single-hot, multi-hot) pair with the column multi-hot."""
    df = pd.DataFrame({"l": list_series([[1, 2, 3], [4, 5, 6]], pa.int64())})
    wf = tp.Workflow(["l"] >> ops.Categorify() >> ops.ValueCount() >> ops.ListSlice(2))
    wf.fit(tp.Dataset(df))
    col = wf.output_schema["l"]
    assert col.value_count == {"min": 0, "max": 2} and col.is_ragged
    assert tp.get_embedding_sizes(wf) == ({}, {"l": (9, 16)})


@pytest.mark.parametrize("args", [(1, -1), (3, 1), (-1, -3)])
def test_negative_max_elements_without_pad_has_unknown_lengths(args):
    """NVTabular's max_elements is negative for these windows (ListSlice(1, -1): end - start = -2),
    and merlin-core's Dimension refuses a negative max: NVTabular 23.08 raises computing the
    schema. tabprep slices them (Python slicing) and records unknown lengths: merlin's open
    value_count {min: 0, max: None}, ragged (docs/migration.md, ListSlice row)."""
    wf, out = _run(ops.ListSlice(*args))
    assert out == [r[args[0]:args[1]] for r in ROWS]
    col = wf.output_schema["l"]
    assert col.properties["value_count"] == {"min": 0, "max": None} and col.value_count is None
    assert col.is_ragged


def test_loader_pads_an_unpadded_slice_to_its_max(tmp_path):
    """A loader with sparse_as_dense pads to value_count max (min 0 does not matter): rows shorter
    than the window come out right-padded with 0."""
    from tabprep.loader import DataLoader

    rows = [[1, 2, 3], [4], [], [5, 6]]
    pd.DataFrame({"l": list_series(rows, pa.int64())}).to_parquet(tmp_path / "part.parquet")
    wf = tp.Workflow(["l"] >> ops.ValueCount() >> ops.ListSlice(2))
    wf.fit(tp.Dataset(str(tmp_path / "part.parquet")))
    loader = DataLoader(str(tmp_path / "part.parquet"), batch_size=4, cat_names=["l"], shuffle=False,
                        sparse_as_dense=True, device="cpu").map(wf)
    assert loader.sparse_max == {"l": 2}
    dense = np.concatenate([b["l"] for b in loader])
    assert dense.tolist() == [(r[:2] + [0, 0])[:2] for r in rows]
