"""DropLowCardinality: columns with fewer than min_cardinality distinct values are dropped."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import tabprep as tp
from tabprep import ops

from conftest import make_dataset, py_values, random_frame, to_pandas
from list_helpers import frame_to_backend, list_series, pylists


def frame(n: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({
        "const": pd.Series(["z"] * n, dtype="str"),
        "const_nulls": pd.array([7 if i % 3 else None for i in range(n)], dtype="Int64"),
        "all_null": pd.array([None] * n, dtype="Int64"),
        "two": rng.integers(0, 2, n),
        "many": pd.Series(rng.choice(["a", "b", "c", "d", None], n), dtype="str"),
        "f": rng.normal(size=n),
    })


def ref_kept(df, cols, min_card):
    return [c for c in cols if len({v for v in py_values(df[c]) if v is not None}) >= min_card]


def run(df, op, cols, backend="cpu", nparts=4):
    wf = tp.Workflow(cols >> op)
    ds = make_dataset(df, backend, nparts=nparts)
    wf.fit(ds)
    return wf, ds, to_pandas(wf.transform(ds))


@pytest.mark.parametrize("min_card", [1, 2, 3, 5])
def test_counted_on_raw_columns(min_card, backend):
    df = frame()
    cols = list(df.columns)
    wf, ds, out = run(df, ops.DropLowCardinality(min_card), cols, backend)
    kept = ref_kept(df, cols, min_card)
    assert wf.output_columns == kept == list(out.columns)
    assert wf.output_schema.column_names == kept
    for c in kept:
        assert py_values(out[c]) == py_values(df[c]) or c == "f"
    if "f" in kept:
        np.testing.assert_array_equal(out["f"].to_numpy(), df["f"].to_numpy())


def test_default_drops_constant_and_empty_columns():
    df = frame()
    wf, _, out = run(df, ops.DropLowCardinality(), list(df.columns))
    assert list(out.columns) == ["two", "many", "f"]


def test_uses_categorify_vocabulary_size(backend):
    df = frame()
    cols = ["const", "const_nulls", "all_null", "two", "many"]
    wf = tp.Workflow(cols >> ops.Categorify() >> ops.DropLowCardinality())
    ds = make_dataset(df, backend, nparts=3)
    wf.fit(ds)
    out = to_pandas(wf.transform(ds))
    # vocabularies: const 1, const_nulls 1 (nulls are not a value), all_null 0, two 2, many 4
    assert list(out.columns) == ["two", "many"]
    ref = tp.Workflow(["two", "many"] >> ops.Categorify())
    expected = to_pandas(ref.fit(ds).transform(ds))
    pd.testing.assert_frame_equal(out, expected)
    assert wf.output_schema["many"].cardinality == 3 + 4


def test_schema_cardinality_of_hash_bucket():
    df = frame()
    wf = tp.Workflow(["const", "two"] >> ops.HashBucket({"const": 5, "two": 1}) >> ops.DropLowCardinality(2))
    wf.fit(df)
    assert wf.output_columns == ["const"]  # num_buckets 5 >= 2 although one value only; 1 bucket < 2


def test_continuous_columns_are_kept():
    df = pd.DataFrame({"c": [1.0, 1.0, 1.0], "k": ["a", "a", "a"]})
    wf = tp.Workflow((["c"] >> ops.Normalize() >> ops.DropLowCardinality()) + (["k"] >> ops.DropLowCardinality()))
    wf.fit(df)
    assert wf.output_columns == ["c"]  # a constant continuous column stays, a constant string goes


def test_list_columns_count_elements(backend):
    df = pd.DataFrame({"one": list_series([[1, 1], None, [1], []], pa.int64()),
                       "two": list_series([[1], [None], [2, 2], None], pa.int64())})
    wf, _, out = run(df, ops.DropLowCardinality(), ["one", "two"], backend, nparts=2)
    assert list(out.columns) == ["two"]
    assert pylists(out["two"]) == [[1], [None], [2, 2], None]


def test_later_fit_levels_see_the_kept_columns(backend):
    df = frame()
    wf = tp.Workflow(list(df.columns[:5]) >> ops.DropLowCardinality() >> ops.Categorify() >> ops.ValueCount())
    ds = make_dataset(df, backend, nparts=3)
    wf.fit(ds)
    out = to_pandas(wf.transform(ds))
    assert list(out.columns) == ["two", "many"]
    ref = tp.Workflow(["two", "many"] >> ops.Categorify())
    pd.testing.assert_frame_equal(out, to_pandas(ref.fit(ds).transform(ds)))


def test_empty_partitions_and_online_path(backend):
    df = random_frame(seed=20, n=60)
    cols = ["i8", "u16", "s", "b", "label"]
    wf, ds, out = run(df, ops.DropLowCardinality(3), cols, backend, nparts=5)
    assert list(out.columns) == ref_kept(df, cols, 3) == ["i8", "u16", "s"]
    online = to_pandas(wf.transform(frame_to_backend(df, backend)))
    assert list(online.columns) == list(out.columns)
    single = tp.Workflow(cols >> ops.DropLowCardinality(3))
    single.fit(tp.Dataset(df, npartitions=1))
    assert single.output_schema == wf.output_schema


def test_save_load_round_trip(tmp_path, backend):
    df = frame()
    cols = ["const", "two", "many"]
    wf = tp.Workflow(cols >> ops.DropLowCardinality())
    ds = make_dataset(df, backend, nparts=3)
    wf.fit(ds)
    out = to_pandas(wf.transform(ds))
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    assert loaded.output_columns == ["two", "many"]
    assert loaded.output_schema == wf.output_schema
    pd.testing.assert_frame_equal(to_pandas(loaded.transform(ds)), out)


def test_invalid_min_cardinality():
    with pytest.raises(ValueError):
        ops.DropLowCardinality(0)
