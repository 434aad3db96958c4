"""Bucketize: id = np.digitize(x, boundaries) (number of boundaries <= x); nulls stay null."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import tabprep as tp
from tabprep import ops

from conftest import make_dataset, py_values, random_frame, to_pandas
from list_helpers import frame_to_backend, list_series, pylists

B = [0.0, 1.5, 10.0, 25.0]


def ref(values, boundaries):
    out = []
    for v in values:
        if v is None or (isinstance(v, float) and np.isnan(v)):
            out.append(None)
        else:
            out.append(int(np.digitize([float(v)], boundaries)[0]))
    return out


def run(df, op, backend="cpu", nparts=4):
    wf = tp.Workflow(list(df.columns) >> op)
    ds = make_dataset(df, backend, nparts=nparts)
    wf.fit(ds)
    return wf, to_pandas(wf.transform(ds))


def test_matches_digitize_with_nulls(backend):
    df = random_frame(seed=1, n=150)[["f64", "f32", "I64", "i8", "u16"]]
    wf, out = run(df, ops.Bucketize(B), backend)
    for c in df.columns:
        assert py_values(out[c]) == ref(py_values(df[c]), B), c
    for c in wf.output_schema:
        assert c.dtype == "int32" and c.cardinality == len(B) + 1 and c.is_categorical  # NVTabular's int32
        assert c.properties["domain"] == {"min": 0, "max": len(B)}


def test_boundary_values_go_right():
    df = pd.DataFrame({"x": [-1.0, 0.0, 0.1, 1.5, 9.99, 10.0, 25.0, 1e9, -np.inf, np.inf, np.nan]})
    _, out = run(df, ops.Bucketize(B), nparts=2)
    assert py_values(out["x"]) == [0, 1, 1, 2, 2, 3, 4, 4, 0, 4, None]


def test_dict_boundaries_and_missing_column():
    df = pd.DataFrame({"a": [1, 5, 9], "b": [0.1, 0.5, 0.9]})
    _, out = run(df, ops.Bucketize({"a": [5], "b": [0.2, 0.4, 0.6, 0.8]}), nparts=1)
    assert out["a"].tolist() == [0, 1, 1]
    assert out["b"].tolist() == [0, 2, 4]
    with pytest.raises(KeyError, match="no boundaries for column 'b'"):
        tp.Workflow(["a", "b"] >> ops.Bucketize({"a": [1]})).fit(df)


def test_no_nulls_gives_plain_int32_and_continuous_tag_is_dropped():
    df = pd.DataFrame({"x": [0.5, 2.0, 30.0]})
    wf = tp.Workflow(["x"] >> ops.Normalize() >> ops.Bucketize([0.0]))
    out = wf.fit(df).transform(df)
    assert str(out["x"].dtype) == "int32"
    assert "continuous" not in wf.output_schema["x"].tags and wf.output_schema["x"].is_categorical


def test_list_columns_element_wise(backend):
    rows = [[0.5, 12.0], None, [], [None, 30.0, -1.0]]
    df = pd.DataFrame({"l": list_series(rows, pa.float64())})
    wf, out = run(df, ops.Bucketize(B), backend, nparts=2)
    assert pylists(out["l"]) == [None if r is None else ref(r, B) for r in rows]
    assert wf.output_schema["l"].is_list and wf.output_schema["l"].cardinality == len(B) + 1
    single, multi = tp.get_embedding_sizes(wf, multihot=True)
    assert multi["l"][0] == len(B) + 1


def test_empty_partitions_and_online_path(backend):
    df = random_frame(seed=2, n=90)[["f64", "I64"]]
    wf, out = run(df, ops.Bucketize([5.0, 20.0]), backend, nparts=5)
    online = to_pandas(wf.transform(frame_to_backend(df, backend)))
    for c in df.columns:
        assert py_values(online[c]) == py_values(out[c]) == ref(py_values(df[c]), [5.0, 20.0])
    empty = to_pandas(wf.transform(frame_to_backend(df.iloc[:0], backend)))
    assert len(empty) == 0 and list(empty.columns) == ["f64", "I64"]


@pytest.mark.parametrize("bad", [[], [1.0, 1.0], [3.0, 2.0], [0.0, float("nan")]])
def test_invalid_boundaries(bad):
    with pytest.raises(ValueError, match="boundaries"):
        ops.Bucketize(bad)


def test_save_load_round_trip(tmp_path, backend):
    df = random_frame(seed=3, n=100)[["f32", "i8"]]
    wf, out = run(df, ops.Bucketize({"f32": [0.0, 2.0], "i8": [-5, 0, 5]}), backend)
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    assert loaded.output_schema == wf.output_schema
    again = to_pandas(loaded.transform(make_dataset(df, backend, nparts=2)))
    for c in df.columns:
        assert py_values(again[c]) == py_values(out[c])


def test_null_input_warns_once_naming_the_column(backend):
    """NVTabular 23.08 puts NaN in the last bucket; tabprep keeps it null: loud (docs/migration.md)."""
    import warnings

    df = pd.DataFrame({"age": [1.0, np.nan, 30.0, np.nan, 2.0, np.nan, 7.0, 40.0]})
    op = ops.Bucketize(B)
    wf = tp.Workflow(["age"] >> op)
    ds = make_dataset(df, backend, nparts=4)
    wf.fit(ds)
    with pytest.warns(UserWarning, match=r"Bucketize: column 'age' has null/NaN.*last bucket.*FillMissing") as rec:
        out = to_pandas(wf.transform(ds))
    assert sum("Bucketize" in str(w.message) for w in rec) == 1  # once per op, not per partition
    assert py_values(out["age"]) == ref(py_values(df["age"]), B)
    # filled first: no warning
    clean = tp.Workflow(["age"] >> ops.FillMissing(fill_val=-1.0) >> ops.Bucketize(B))
    clean.fit(ds)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        to_pandas(clean.transform(ds))


def test_null_warning_once_when_partitions_race(monkeypatch):
    """The once-per-op null warning holds when partitions run side by side: on a GPU the null check
    (a device sync) releases the GIL between the test and the flag, and dask's threads all warned
    (found on an H100, 16 threads). A slow ``any_true`` widens that window here."""
    import time

    import dask

    real = tp.backend.any_true

    def slow_any_true(x):
        time.sleep(0.05)   # releases the GIL, as a device synchronization does
        return real(x)

    monkeypatch.setattr(tp.backend, "any_true", slow_any_true)
    df = pd.DataFrame({"age": [1.0, np.nan, 30.0, np.nan, 2.0, np.nan, 7.0, np.nan]})
    wf = tp.Workflow(["age"] >> ops.Bucketize(B))
    ds = tp.Dataset(df, npartitions=4)
    wf.fit(ds)
    with dask.config.set(scheduler="threads", num_workers=4):
        with pytest.warns(UserWarning, match="Bucketize: column 'age'") as rec:
            out = wf.transform(ds).compute()
    assert sum("Bucketize" in str(w.message) for w in rec) == 1
    assert py_values(out["age"]) == ref(py_values(df["age"]), B)
