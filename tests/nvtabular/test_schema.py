"""merlin-core's schema API (``merlin.schema.Schema`` / ``ColumnSchema`` / ``Tags``) as NVTabular
23.08 users read it, and what users read back from a Dataset (list cells). References: pyarrow."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

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


def _merlin_col():
    return tp.ColumnSchema("a", dtype="int64", tags=(tp.Tags.CONTINUOUS,),
                           properties={"domain": {"min": 0, "max": 9, "name": "a"}, "x": 1})


def test_column_schema_merlin_with_methods():
    """merlin-core 23.08's ColumnSchema.with_name / with_tags (TagSet.override: the new tags added,
    the existing ones they collide with dropped, compound tags such as user_id expanded) /
    with_properties (merged) / with_dtype (tags kept); expected values from merlin-core 23.8.0."""
    col = _merlin_col()
    assert col.with_name("b").name == "b" and col.with_name("b").dtype == "int64"
    assert set(col.with_tags(tp.Tags.CATEGORICAL).tags) == {"categorical"}
    assert set(col.with_tags([tp.Tags.USER_ID]).tags) == {"id", "user"}
    assert set(col.with_tags("user").tags) == {"continuous", "user"}
    assert col.with_properties({"y": 2}).properties == {"domain": {"min": 0, "max": 9, "name": "a"}, "x": 1, "y": 2}
    with pytest.raises(TypeError, match="dict"):
        col.with_properties([("y", 2)])
    f32 = col.with_dtype("float32")
    assert f32.dtype == "float32" and f32.tags == col.tags and f32.properties == col.properties
    assert col.with_dtype(np.int32, is_list=True).is_list
    assert col == _merlin_col()  # copies: the original is unchanged


def test_column_schema_int_and_float_domain():
    """merlin-core's ColumnSchema.int_domain / float_domain: the domain (min, max, name) of an int
    (float) column, None for the other kind or without a domain."""
    d = _merlin_col().int_domain
    assert (d.min, d.max, d.name) == (0, 9, "a")
    f = tp.ColumnSchema("f", dtype="float32", properties={"domain": {"min": 0.0, "max": 1.0}})
    assert f.int_domain is None and (f.float_domain.min, f.float_domain.max, f.float_domain.name) == (0.0, 1.0, None)
    assert _merlin_col().float_domain is None and tp.ColumnSchema("n", dtype="int64").int_domain is None


def test_schema_merlin_selection_methods():
    """merlin-core 23.08's Schema.select_by_name (names in the order given, unknown ones skipped),
    excluding_by_name, remove_col, remove_by_tag, excluding(selector), get, first, copy; expected
    values from merlin-core 23.8.0."""
    s = tp.Schema([_merlin_col(), tp.ColumnSchema("b", tags=(tp.Tags.CATEGORICAL,)),
                   tp.ColumnSchema("c", tags=(tp.Tags.TARGET,))])
    assert s.select_by_name(["c", "a", "zz"]).column_names == ["c", "a"]
    assert s.select_by_name("b").column_names == ["b"]
    assert s.excluding_by_name(["a", "zz"]).column_names == ["b", "c"]
    assert s.remove_col("b").column_names == ["a", "c"]
    assert s.remove_by_tag(tp.Tags.TARGET).column_names == ["a", "b"]
    assert s.excluding(tp.ColumnSelector(["a"], tags=[tp.Tags.TARGET])).column_names == ["b"]
    assert s.get("b").name == "b" and s.get("zz") is None and s.get("zz", "d") == "d"
    assert s.first.name == "a"
    with pytest.raises(ValueError, match="first"):
        tp.Schema([]).first
    c = s.copy()
    assert c == s and c is not s


def test_schema_apply_and_apply_inverse():
    """merlin-core's Schema.apply(selector) (names, then tagged columns; None: the whole schema) and
    apply_inverse(selector) (= excluding); values from merlin-core 23.8.0."""
    s = tp.Schema([tp.ColumnSchema("a", tags=(tp.Tags.CATEGORICAL,)), tp.ColumnSchema("b"),
                   tp.ColumnSchema("c", tags=(tp.Tags.TARGET,))])
    assert s.apply(tp.ColumnSelector(["b"], tags=[tp.Tags.TARGET])).column_names == ["b", "c"]
    assert s.apply_inverse(tp.ColumnSelector(["b"])).column_names == ["a", "c"]
    assert s.apply(None).column_names == ["a", "b", "c"]
