"""merlin-core's schema API (``merlin.schema.Schema`` / ``ColumnSchema`` / ``Tags``) as NVTabular
23.08 users read it, and what users read back from a Dataset (list cells). References: pyarrow."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

import tabprep as tp
from tabprep import ops


def test_domain_name_and_value_count_in_properties(tmp_path):
    """merlin-core: a categorical column's properties["domain"] = {min, max, name} (the vocabulary's
    name: the column, or its group), and a list column's lengths in properties["value_count"]."""
    df = pd.DataFrame({"a": ["x", "y", None, "x"], "b": ["u", "v", "u", "w"],
                       "l": [[1, 2], [3], [1, 2, 3], []]})
    wf = tp.Workflow((["a"] >> ops.Categorify()) + (["l"] >> ops.ValueCount()))
    wf.fit(tp.Dataset(df))
    a = wf.output_schema["a"]
    assert a.properties["domain"]["name"] == "a"
    assert a.properties["domain"]["max"] == a.cardinality - 1
    assert wf.output_schema["l"].properties["value_count"] == {"min": 0, "max": 3}
    # both spellings agree, and survive a save / load
    wf.save(str(tmp_path / "wf"))
    back = tp.Workflow.load(str(tmp_path / "wf")).output_schema
    assert back["l"].properties["value_count"] == back["l"].value_count == {"min": 0, "max": 3}
    assert back["a"].properties["domain"]["name"] == "a"


def test_value_count_field_wins_over_stale_property():
    col = tp.ColumnSchema("l", dtype="int64", is_list=True, value_count={"min": 1, "max": 4})
    assert col.with_(value_count={"min": 0, "max": 2}).properties["value_count"] == {"min": 0, "max": 2}
    # unknown lengths: merlin-core's open count, not the stale one
    assert col.with_(value_count=None).properties["value_count"] == {"min": 0, "max": None}
    assert "value_count" not in col.with_(is_list=False).properties
    # merlin's construction: the count given in properties only
    merlin_style = tp.ColumnSchema("l", dtype="int64", is_list=True, properties={"value_count": {"min": 2, "max": 2}})
    assert merlin_style.value_count == {"min": 2, "max": 2}


def test_schema_of_names_and_column_schemas():
    """merlin.schema.Schema(["a", "b"]) and Schema.column_schemas (a dict name -> ColumnSchema)."""
    s = tp.Schema(["a", "b"])
    assert s.column_names == ["a", "b"]
    assert list(s.column_schemas) == ["a", "b"]
    assert isinstance(s.column_schemas["a"], tp.ColumnSchema)
    assert tp.Schema(s.column_schemas) == s


def test_select_by_tag_any_of_a_list():
    """merlin-core's Schema.select_by_tag(tags): a column with ANY of the tags; one tag alone too."""
    s = tp.Schema([tp.ColumnSchema("c", tags=(tp.Tags.CATEGORICAL,)),
                   tp.ColumnSchema("x", tags=(tp.Tags.CONTINUOUS, tp.Tags.USER)),
                   tp.ColumnSchema("y", tags=(tp.Tags.TARGET,))])
    assert s.select_by_tag([tp.Tags.CATEGORICAL, tp.Tags.CONTINUOUS]).column_names == ["c", "x"]
    assert s.select_by_tag(tp.Tags.TARGET).column_names == ["y"]
    assert s.excluding_by_tag(tp.Tags.TARGET).column_names == ["c", "x"]
    assert s.select(tp.ColumnSelector(tags=[tp.Tags.USER])).column_names == ["x"]


def test_compute_gives_list_cells_as_numpy_arrays(tmp_path):
    """merlin-core reads list columns to pandas with pyarrow's to_pandas: each cell a numpy array
    (with .dtype), a null row None."""
    table = pa.table({"l": pa.array([[1, 2], None, [], [5]], pa.list_(pa.int32())), "x": [1.0, np.inf, np.nan, 2.0]})
    pq.write_table(table, tmp_path / "d.parquet")
    got = tp.Dataset(str(tmp_path / "d.parquet")).compute()
    want = table.column("l").to_numpy()  # pyarrow's cells
    assert got["l"].iloc[0].dtype == np.int32
    assert got["l"].iloc[1] is None
    for g, w in zip(got["l"], want):
        assert (g is None and w is None) or np.array_equal(g, w)
    assert np.isinf(got["x"].iloc[1]) and np.isnan(got["x"].iloc[2])
    # a transform's output too, and the frame goes back into tabprep as a list column
    wf = tp.Workflow(["l"] >> ops.Categorify())
    out = wf.fit_transform(tp.Dataset(str(tmp_path / "d.parquet"))).compute()
    assert isinstance(out["l"].iloc[0], np.ndarray) and out["l"].iloc[0].dtype == np.int64
    assert tp.Dataset(out).schema["l"].is_list
