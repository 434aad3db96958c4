"""ListSlice as NVTabular 23.08's (nvtabular/ops/list_slice.py ``ListSlice.__init__`` and
``ListSlice.transform``): ``ListSlice(n)`` keeps the first n elements, ``ListSlice(-n)`` the last n,
``ListSlice(a, b)`` ``row[a:b]``; ``pad=True`` right-pads to ``max_elements`` with ``pad_value``."""
from __future__ import annotations

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
