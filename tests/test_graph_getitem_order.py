"""``node[["city", "user"]]`` gives the columns in the order asked for, as NVTabular 23.08 (checked
side by side: ``['city', 'user']`` in the output schema and the data for a node whose columns are
``user, item, city``). Before, tabprep kept the node's order (``['user', 'city']``), silently, and
docs/migration.md said so wrongly."""
from __future__ import annotations

import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops


def _frame() -> pd.DataFrame:
    return pd.DataFrame({"user": ["u1", "u2", "u1", "u3"], "item": [1, 2, 2, 3], "city": ["c1", "c1", "c2", "c2"]},
                        index=[10, 11, 12, 13])


def _ids(values):
    """Categorify's ids: 3 + rank by descending count, ties by ascending value."""
    counts = pd.Series(values).value_counts()
    order = sorted(counts.index, key=lambda v: (-counts[v], v))
    return [3 + order.index(v) for v in values]


@pytest.mark.parametrize("asked", [["city", "user"], ["user", "city"], ["item", "city", "user"], ["city"]])
def test_getitem_gives_the_columns_in_the_order_asked(tmp_path, asked):
    node = ["user", "item", "city"] >> ops.Categorify()
    wf = tp.Workflow(node[asked]).fit(tp.Dataset(_frame()))
    assert wf.output_schema.column_names == asked
    out = wf.transform(_frame())
    assert list(out.columns) == asked
    for c in asked:
        assert out[c].tolist() == _ids(_frame()[c].tolist())
    assert list(out.index) == [10, 11, 12, 13]   # a selection keeps the frame's index, as NVTabular's
    wf.save(str(tmp_path / "wf"))
    pd.testing.assert_frame_equal(tp.Workflow.load(str(tmp_path / "wf")).transform(_frame()), out)


def test_getitem_in_another_order_then_an_op():
    node = ["user", "item", "city"] >> ops.Categorify()
    wf = tp.Workflow(node[["city", "user"]] >> ops.Rename(postfix="_id")).fit(tp.Dataset(_frame()))
    assert wf.output_schema.column_names == ["city_id", "user_id"]
