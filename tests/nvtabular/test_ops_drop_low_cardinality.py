"""DropLowCardinality and NVTabular 23.08's (nvtabular/ops/drop_low_cardinality.py):
``compute_selector`` keeps every column not tagged categorical and every categorical column
without a domain, and drops a categorical column whose ``domain.max`` is below
``min_cardinality`` (default 4). Checked on nvtabular 23.08: on Categorify outputs of 1, 2, 3 and
5 values (``domain.max`` = values + 2), the default keeps those of 2 or more values,
``min_cardinality=3`` keeps all four, ``5`` those of 3 or more. tabprep counts values; where its
choice differs from NVTabular's rule, fitting says so, naming the columns."""
from __future__ import annotations

import warnings

import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops


def _df():
    return pd.DataFrame({"v1": ["a"] * 6, "v2": ["a", "b"] * 3, "v3": ["a", "b", "c"] * 2,
                         "v5": ["a", "b", "c", "d", "e", "a"], "raw": ["k"] * 6})


def _fit(node):
    wf = tp.Workflow(node)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        wf.fit(tp.Dataset(_df()))
    return wf, [str(w.message) for w in caught if issubclass(w.category, tp.NVTabularDifferenceWarning)]


def test_default_keeps_what_nvtabular_keeps_on_categorify_outputs_silently():
    wf, warned = _fit(["v1", "v2", "v3", "v5"] >> ops.Categorify() >> ops.DropLowCardinality())
    assert wf.output_schema.column_names == ["v2", "v3", "v5"]   # NVTabular's default choice
    assert not [m for m in warned if "DropLowCardinality" in m]


@pytest.mark.parametrize("m,nvt_dropped", [(3, []), (5, ["v1", "v2"])])
def test_another_threshold_warns_naming_nvtabulars_choice(m, nvt_dropped):
    """tabprep's min_cardinality=m counts values; NVTabular's compares domain.max = values + 2."""
    wf, warned = _fit(["v1", "v2", "v3", "v5"] >> ops.Categorify() >> ops.DropLowCardinality(m))
    mine = [c for c, n in (("v1", 1), ("v2", 2), ("v3", 3), ("v5", 5)) if n < m]
    assert [c for c in ["v1", "v2", "v3", "v5"] if c not in wf.output_schema.column_names] == mine
    msgs = [w for w in warned if "DropLowCardinality" in w]
    assert len(msgs) == 1 and f"drops {mine}" in msgs[0] and f"drops {nvt_dropped}" in msgs[0]
    assert "min_cardinality" in msgs[0]


def test_a_raw_column_dropped_warns_since_nvtabular_keeps_it():
    wf, warned = _fit(["raw", "v2"] >> ops.DropLowCardinality())
    assert wf.output_schema.column_names == ["v2"]
    msgs = [w for w in warned if "DropLowCardinality" in w]
    assert len(msgs) == 1 and "['raw']" in msgs[0] and "drops []" in msgs[0]


def test_nvtabular_rule_on_the_schema():
    op = ops.DropLowCardinality()
    schema = tp.Schema([
        tp.ColumnSchema("c", dtype="int64", tags=("categorical",), properties={"domain": {"min": 0, "max": 3}}),
        tp.ColumnSchema("d", dtype="int64", tags=("categorical",), properties={"domain": {"min": 0, "max": 4}}),
        tp.ColumnSchema("e", dtype="int64", tags=("categorical",)),
        tp.ColumnSchema("f", dtype="int64", properties={"domain": {"min": 0, "max": 1}}),
    ])
    assert op.nvtabular_dropped(schema, ["c", "d", "e", "f"]) == ["c"]


def test_a_saved_default_op_keeps_nvtabulars_default_after_load(tmp_path):
    """The default's NVTabular threshold (4) survives save/load: the op stores ``min_cardinality``
    as given (None), not the resolved 2, which reloaded as an explicit 2 and compared against
    NVTabular's ``min_cardinality=2``."""
    wf, _ = _fit(["v1", "v2", "v3"] >> ops.Categorify() >> ops.DropLowCardinality())
    wf.save(str(tmp_path / "wf"))
    (op,) = [n.op for n in tp.Workflow.load(str(tmp_path / "wf")).stat_nodes if isinstance(n.op, ops.DropLowCardinality)]
    schema = tp.Schema([tp.ColumnSchema("c", dtype="int64", tags=("categorical",),
                                        properties={"domain": {"min": 0, "max": 3}})])
    assert op.nvtabular_dropped(schema, ["c"]) == ["c"]
    assert op.min_cardinality is None
