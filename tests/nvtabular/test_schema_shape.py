"""merlin-core 23.08's ``ColumnSchema.shape`` / ``.dims`` / ``.with_shape(...)`` and
``Schema.to_pandas()``, on tabprep's schema.

The expected shapes are those merlin-core gives (checked with nvtabular 23.08 in /tmp/nvt2):
a scalar column of a dataset is ``((0, None),)``, a list column ``((0, None), (min, max))`` of its
row lengths (a fixed length ``n`` reads ``n``), unknown lengths ``(0, None)``, and a nested column one
more dimension per level; ``with_shape`` makes the column a scalar / list / nested one of that shape,
its ``value_count`` property the second dimension. Lengths are measured with pandas in the tests.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tabprep as tp
from tabprep import ops
from tabprep.schema import ColumnSchema, Schema, Tags


def test_shape_of_scalar_list_and_nested_columns():
    """merlin: scalar ``((0, None),)``; list of unknown lengths ``((0, None), (0, None))``; fixed
    length 3 ``((0, None), 3)``; nested ``[[..] x 4] of 1..5`` one dimension per level."""
    assert ColumnSchema("a", "int64").shape.as_tuple == ((0, None),)
    assert ColumnSchema("l", "int64", is_list=True, is_ragged=True).shape.as_tuple == ((0, None), (0, None))
    fixed = ColumnSchema("f", "int64", is_list=True, value_count={"min": 3, "max": 3})
    assert fixed.shape.as_tuple == ((0, None), 3)
    assert fixed.shape.is_list and not fixed.shape.is_ragged and fixed.shape.dims[1].is_fixed
    nested = ColumnSchema("n", "list<float32>", is_list=True, is_ragged=True, value_count={"min": 4, "max": 4},
                          value_counts=[{"min": 4, "max": 4}, {"min": 1, "max": 5}])
    assert nested.shape.as_tuple == ((0, None), 4, (1, 5))
    assert nested.shape.is_ragged
    # dims: the shape's dimensions
    assert nested.dims == nested.shape.dims
    assert [(d.min, d.max) for d in nested.dims] == [(0, None), (4, 4), (1, 5)]


def test_with_shape_sets_list_flags_value_count_and_dtype():
    """merlin's ``with_shape``: ``(None, 3)`` makes a fixed list of 3 (``value_count`` 3..3, not
    ragged), ``((0, None), (2, 5))`` a ragged list, ``(None,)`` a scalar again, three dims a nested list."""
    a = ColumnSchema("a", "int64", tags=("categorical",), properties={"cardinality": 9})
    f = a.with_shape((None, 3))
    assert f.is_list and not f.is_ragged and f.dtype == "int64"
    assert f.value_count == {"min": 3, "max": 3} and f.properties["value_count"] == {"min": 3, "max": 3}
    assert f.tags == a.tags and f.properties["cardinality"] == 9
    r = a.with_shape(((0, None), (2, 5)))
    assert r.is_list and r.is_ragged and r.properties["value_count"] == {"min": 2, "max": 5}
    s = f.with_shape((None,))
    assert not s.is_list and "value_count" not in s.properties and s.shape.as_tuple == ((0, None),)
    n = a.with_shape((None, 4, (1, 5)))
    assert n.is_list and n.depth == 2 and n.leaf_dtype == "int64"
    assert n.shape.as_tuple == ((0, None), 4, (1, 5))
    assert n.value_count == {"min": 4, "max": 4}
    fixed = a.with_shape(tp.Shape((None, 100, 10)))
    assert fixed.fixed_shape == [100, 10] and not fixed.is_ragged
    # a nested column made flat again keeps its leaf dtype
    assert n.with_shape((None, 2)).dtype == "int64" and n.with_shape((None, 2)).depth == 1


def test_shape_errors_name_the_problem():
    """merlin's Dimension checks: a max below its min, a negative size, a malformed dimension."""
    col = ColumnSchema("a", "int64")
    with pytest.raises(ValueError, match="at least as large as the minimum"):
        col.with_shape((None, (5, 2)))
    with pytest.raises(ValueError, match="non-negative"):
        col.with_shape((None, (-1, 2)))
    with pytest.raises(ValueError, match="Invalid shape"):
        col.with_shape((None, "x"))


def test_shape_round_trips_through_workflow_save_and_load(tmp_path):
    """A ValueCount-ed list column's shape is its lengths (pandas), and it survives wf.save / load;
    one given with ``with_shape`` survives the schema's JSON and a parquet dataset's ``_schema.json``."""
    df = pd.DataFrame({"l": [[1, 2], [3], [4, 5, 6], None], "f": [[1, 2], [3, 4], [5, 6], [7, 8]],
                       "x": [1.0, np.nan, np.inf, 2.0]})
    wf = tp.Workflow(["l", "f"] >> ops.ValueCount())
    wf.fit(tp.Dataset(df))
    lengths = df["l"].dropna().map(len)
    assert wf.output_schema["l"].shape.as_tuple == ((0, None), (int(lengths.min()), int(lengths.max())))
    assert wf.output_schema["f"].shape.as_tuple == ((0, None), 2)
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    assert loaded.output_schema["l"].shape == wf.output_schema["l"].shape
    assert loaded.output_schema["f"].shape.as_tuple == ((0, None), 2)
    schema = Schema([ColumnSchema("n", "int64").with_shape((None, 4, (1, 5))), ColumnSchema("x", "float64")])
    back = Schema.from_json(schema.to_json())
    assert back["n"].shape.as_tuple == ((0, None), 4, (1, 5))
    assert back["x"].shape.as_tuple == ((0, None),)


_dim = st.one_of(st.none(), st.integers(0, 50),
                 st.tuples(st.integers(0, 20), st.integers(0, 30)).map(lambda t: (t[0], t[0] + t[1])),
                 st.tuples(st.integers(0, 20), st.none()))


@settings(max_examples=60, deadline=None)
@given(dims=st.lists(_dim, min_size=1, max_size=4), dtype=st.sampled_from(["int64", "float32", "str"]))
def test_with_shape_then_shape_round_trips(dims, dtype):
    """``col.with_shape(dims).shape`` is ``Shape(dims)`` (merlin's), up to what tabprep does not
    store: the rows' dimension reads ``(0, None)`` and a list dimension of unknown maximum keeps no
    minimum; the same after the schema's JSON; ``is_list`` / ``is_ragged`` are the shape's."""
    col = ColumnSchema("c", dtype, properties={"p": 1}).with_shape(tuple(dims))
    given_shape = tp.Shape(tuple(dims))
    expected = tuple([(0, None)] + [(0, None) if d.max is None else (d.min, d.max) for d in given_shape.dims[1:]])
    got = tuple((d.min, d.max) for d in col.shape.dims)
    assert got == expected
    assert col.is_list == given_shape.is_list and col.leaf_dtype == dtype and col.properties["p"] == 1
    assert col.is_ragged == tp.Shape(expected).is_ragged
    back = Schema.from_json(Schema([col]).to_json())["c"]
    assert back.shape == col.shape and back.shape.as_tuple == col.shape.as_tuple


def test_shape_equality_and_unknown_wildcard():
    """merlin: an unknown shape (``Shape()``) equals any shape; known shapes compare by dims."""
    assert tp.Shape() == tp.Shape((None, 3))
    assert tp.Shape((None, 3)) == tp.Shape(((0, None), (3, 3)))
    assert tp.Shape((None, 3)) != tp.Shape((None, 4))
    assert tp.Shape((None, 3)).with_dim_max(1, 5).as_tuple == ((0, None), (3, 5))
    assert tp.Shape((None, (1, 4))).max == (None, 4) and tp.Shape((None, (1, 4))).min == (0, 1)
    assert int(tp.Shape((None, 3))[1]) == 3
    with pytest.raises(ValueError, match="fixed size"):
        int(tp.Shape((None, (1, 3)))[1])


def test_schema_to_pandas_has_merlins_columns():
    """merlin's ``Schema.to_pandas()``: one row per column, ``name``, ``tags``, ``dtype``,
    ``is_list``, ``is_ragged`` then the properties flattened (``properties.domain.min``...),
    NaN where a column lacks one."""
    schema = Schema([
        ColumnSchema("a", "int64", tags=(Tags.CATEGORICAL, "x"),
                     properties={"cardinality": 5, "domain": {"min": 0, "max": 4, "name": "a"}}),
        ColumnSchema("b", "str"),
        ColumnSchema("l", "int64", is_list=True, value_count={"min": 2, "max": 2}),
    ])
    df = schema.to_pandas()
    assert list(df.columns[:5]) == ["name", "tags", "dtype", "is_list", "is_ragged"]
    assert set(df.columns[5:]) == {"properties.cardinality", "properties.domain.min", "properties.domain.max",
                                   "properties.domain.name", "properties.value_count.min",
                                   "properties.value_count.max"}
    assert df["name"].tolist() == ["a", "b", "l"]
    assert df["tags"].tolist() == [{"categorical", "x"}, set(), set()]
    assert df["dtype"].tolist() == ["int64", "str", "int64"]
    assert df["is_list"].tolist() == [False, False, True] and df["is_ragged"].tolist() == [False, False, False]
    assert df.loc[0, "properties.domain.max"] == 4 and df.loc[0, "properties.domain.name"] == "a"
    assert np.isnan(df.loc[1, "properties.cardinality"])
    assert df.loc[2, "properties.value_count.max"] == 2
    assert Schema().to_pandas().empty


def test_workflow_schemas_shapes_are_nvtabulars():
    """nvtabular 23.08 for ``(["a"] >> LogOp()) + (["c", "l"] >> Categorify())`` fitted on a frame:
    input and output ``a`` / ``c`` ``((0, None),)``, ``l`` ``((0, None), (0, None))``, ragged."""
    df = pd.DataFrame({"a": [1.0, 2.0, 3.0], "c": ["x", "y", "x"], "l": [[1, 2], [3], [4, 5, 6]]})
    wf = tp.Workflow((["a"] >> ops.LogOp()) + (["c", "l"] >> ops.Categorify()))
    wf.fit(tp.Dataset(df))
    for schema in (wf.input_schema, wf.output_schema):
        assert [(c.name, c.shape.as_tuple) for c in schema] == [("a", ((0, None),)), ("c", ((0, None),)),
                                                                 ("l", ((0, None), (0, None)))]
        assert schema["l"].shape.is_ragged and not schema["c"].shape.is_list
