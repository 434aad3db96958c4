"""ValueCount: min / max list lengths of the fitted data into the schema; values unchanged."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import tabprep as tp
from tabprep import ops

from conftest import make_dataset, to_pandas
from list_helpers import list_series, pylists

ROWS = [[1, 2, 3], [4], None, [], [5, None, 6, 7], [8, 9]]
SAME = [[1, 2], [3, 4], None, [5, None]]


def fit(df, backend="cpu", nparts=3):
    wf = tp.Workflow(list(df.columns) >> ops.ValueCount())
    ds = make_dataset(df, backend, nparts=nparts)
    wf.fit(ds)
    return wf, ds


def ref_bounds(rows):
    lengths = [len(r) for r in rows if r is not None]
    return {"min": min(lengths), "max": max(lengths)} if lengths else None


def test_records_min_max_and_raggedness(backend):
    df = pd.DataFrame({"l": list_series(ROWS, pa.int64()), "s": list_series(SAME + [[1, 1], [2, 2]], pa.int64()),
                       "x": np.arange(len(ROWS))})
    wf, ds = fit(df, backend)
    sch = wf.output_schema
    assert sch["l"].value_count == ref_bounds(ROWS) == {"min": 0, "max": 4}
    assert sch["l"].is_ragged
    assert sch["s"].value_count == {"min": 2, "max": 2}
    assert not sch["s"].is_ragged
    assert sch["x"].value_count is None and not sch["x"].is_list
    out = to_pandas(wf.transform(ds))
    assert pylists(out["l"]) == ROWS
    assert out["x"].tolist() == list(range(len(ROWS)))


def test_null_rows_are_not_counted():
    df = pd.DataFrame({"l": list_series([None, [1, 2], None, [3, 4, 5]], pa.int64())})
    wf, _ = fit(df, nparts=2)
    assert wf.output_schema["l"].value_count == {"min": 2, "max": 3}


def test_all_null_column_keeps_no_value_count():
    df = pd.DataFrame({"l": list_series([None, None, None], pa.int64())})
    wf, _ = fit(df, nparts=2)
    assert wf.output_schema["l"].value_count is None


def test_empty_partitions_do_not_change_bounds(backend):
    df = pd.DataFrame({"l": list_series(ROWS, pa.int64())})
    a, _ = fit(df, backend, nparts=5)
    b = tp.Workflow(["l"] >> ops.ValueCount())
    b.fit(tp.Dataset(df, npartitions=1))
    assert a.output_schema == b.output_schema


def test_string_lists_after_categorify(backend):
    words = [["a", "b"], None, ["c"], ["a", "a", "a"]]
    df = pd.DataFrame({"w": list_series(words, pa.string())})
    wf = tp.Workflow(["w"] >> ops.Categorify() >> ops.ValueCount())
    wf.fit(make_dataset(df, backend, nparts=2))
    col = wf.output_schema["w"]
    assert col.value_count == {"min": 1, "max": 3} and col.is_categorical and col.cardinality == 6


def test_save_load_round_trip(tmp_path, backend):
    df = pd.DataFrame({"l": list_series(ROWS, pa.int64())})
    wf, ds = fit(df, backend)
    before = to_pandas(wf.transform(ds))
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    assert loaded.output_schema == wf.output_schema
    assert loaded.output_schema["l"].value_count == {"min": 0, "max": 4}
    pd.testing.assert_frame_equal(to_pandas(loaded.transform(ds)), before)


def test_needs_fit():
    wf = tp.Workflow(["l"] >> ops.ValueCount())
    with pytest.raises(RuntimeError, match="not fitted"):
        wf.transform(pd.DataFrame({"l": list_series(ROWS, pa.int64())}))
