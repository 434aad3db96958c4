"""The index of ``wf.transform(frame)``'s result, as NVTabular 23.08 gives it (recorded side by side
with nvtabular 23.8.0 on the frame below, index 100..103): merlin-core concatenates columns with
``reset_index(drop=True)`` (``merlin.core.dispatch.concat_columns``), so wherever the graph merges
branches (``+``) or an op reads dependency columns (a target, ``LambdaOp(dependency=)``) the result
has a fresh ``RangeIndex``; Filter, Dropna and JoinExternal reset it too; a chain of ops on one
selection keeps the frame's index. Before, tabprep kept the frame's index everywhere, so
``df.join(out)`` / ``df["c_id"] = out["c"]`` aligned differently from NVTabular, silently."""
from __future__ import annotations

import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

from conftest import frame_on, to_pandas

KEPT = [100, 101, 102, 103]
FRESH = [0, 1, 2, 3]


def _frame() -> pd.DataFrame:
    return pd.DataFrame({"c": ["x", "y", "x", "z"], "w": [1.0, None, 3.0, 4.0], "k": [1, 2, 1, 3]},
                        index=[100, 101, 102, 103])


def _plus_w(col, frame):
    return col + frame["w"]


_SIDE = pd.DataFrame({"k": [1, 2, 3], "e": [10, 20, 30]})

CASES = {
    "one op": (lambda: ["c"] >> ops.Categorify(), KEPT),
    "one op, two columns": (lambda: ["c", "k"] >> ops.Categorify(), KEPT),
    "a chain": (lambda: ["w"] >> ops.FillMissing() >> ops.Normalize(), KEPT),
    "two branches": (lambda: (["c"] >> ops.Categorify()) + ["w"], FRESH),
    "filter": (lambda: ["c", "w"] >> ops.Filter(lambda d: d["w"] > 1), [0, 1]),
    "dropna": (lambda: ["c", "w"] >> ops.Dropna(), [0, 1, 2]),
    "join": (lambda: ["k"] >> ops.JoinExternal(_SIDE, on="k"), FRESH),
    "a dependency": (lambda: ["k"] >> ops.LambdaOp(_plus_w, dependency=["w"]), FRESH),
    "a target": (lambda: ["c"] >> ops.TargetEncoding("k"), FRESH),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_transform_frame_index_is_nvtabulars(case, backend):
    graph, index = CASES[case]
    wf = tp.Workflow(graph()).fit(tp.Dataset(frame_on(_frame(), backend)))
    out = wf.transform(frame_on(_frame(), backend))
    got = out.index.to_pandas() if hasattr(out.index, "to_pandas") else out.index   # (cuDF's index)
    assert list(got) == index


def test_values_are_unchanged_by_the_index(backend):
    """The merged branches' values stay row for row (positional), whatever the frame's index."""
    wf = tp.Workflow((["c"] >> ops.Categorify()) + (["k"] >> ops.LambdaOp(_plus_w, dependency=["w"]))).fit(
        tp.Dataset(frame_on(_frame(), backend)))
    ref = to_pandas(wf.transform(frame_on(_frame().reset_index(drop=True), backend)))
    out = to_pandas(wf.transform(frame_on(_frame(), backend)))
    pd.testing.assert_frame_equal(out, ref)
    assert out["k"].tolist()[::2] == [2.0, 4.0] and pd.isna(out["k"].tolist()[1])
