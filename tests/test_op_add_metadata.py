"""AddMetadata / AddTags / AddProperties: schema changes only, values pass through untouched."""
from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

import tabprep as tp
from tabprep import ops

from conftest import assert_same_frame, make_dataset, random_frame, to_pandas
from list_helpers import list_series, pylists

COLS = ["i8", "I64", "f32", "s", "b"]


def run(op, backend="cpu", cols=COLS, df=None):
    df = random_frame(seed=30, n=90) if df is None else df
    wf = tp.Workflow(cols >> op)
    ds = make_dataset(df, backend, nparts=4)
    wf.fit(ds)
    return wf, ds, df, to_pandas(wf.transform(ds))


@pytest.mark.parametrize("make", [lambda: ops.AddMetadata(tags=["user", "id"], properties={"domain_name": "users"}),
                                  lambda: ops.AddTags(["user", "id"]),
                                  lambda: ops.AddProperties({"domain_name": "users", "n": 3})])
def test_values_unchanged(make, backend):
    wf, ds, df, out = run(make(), backend)
    assert_same_frame(out, df[COLS].reset_index(drop=True), "AddMetadata output")
    raw = tp.Workflow(list(COLS)).fit(ds).output_schema
    for c in COLS:
        assert wf.output_schema[c].dtype == raw[c].dtype


def test_tags_and_properties_are_added():
    wf, _, _, _ = run(ops.AddMetadata(tags=["user", "target"], properties={"domain_name": "users"}))
    for c in COLS:
        col = wf.output_schema[c]
        assert {"user", "target"} <= set(col.tags)
        assert col.properties["domain_name"] == "users"


def test_merges_with_upstream_metadata():
    df = random_frame(seed=31, n=60)
    wf = tp.Workflow(["s"] >> ops.Categorify() >> ops.AddTags(["item"]) >> ops.AddProperties({"embedding_dim": 12}))
    wf.fit(df)
    col = wf.output_schema["s"]
    assert set(col.tags) == {"categorical", "item"}
    assert col.cardinality is not None and col.properties["embedding_dim"] == 12
    assert tp.get_embedding_sizes(wf)["s"] == (col.cardinality, 12)
    assert wf.output_schema.select_by_tag("item").column_names == ["s"]


def test_list_columns(backend):
    rows = [[1, 2], None, [], [None]]
    df = pd.DataFrame({"l": list_series(rows, pa.int64())})
    wf, _, _, out = run(ops.AddTags(["list_feature"]), backend, cols=["l"], df=df)
    assert pylists(out["l"]) == rows
    assert wf.output_schema["l"].is_list and "list_feature" in wf.output_schema["l"].tags


def test_invalid_arguments():
    with pytest.raises(TypeError, match="list of strings"):
        ops.AddTags("user")
    with pytest.raises(TypeError):
        ops.AddTags([1])
    with pytest.raises(TypeError):
        ops.AddProperties(["x"])


def test_save_load_round_trip(tmp_path, backend):
    wf, ds, _, out = run(ops.AddMetadata(tags=["user"], properties={"nested": {"a": [1, 2]}}), backend)
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    assert loaded.output_schema == wf.output_schema
    assert loaded.output_schema["s"].properties["nested"] == {"a": [1, 2]}
    assert_same_frame(to_pandas(loaded.transform(ds)), out, "after load")
    for cls, arg in ((ops.AddTags, ["x"]), (ops.AddProperties, {"k": 1})):
        w = tp.Workflow(["i8"] >> cls(arg))
        w.fit(random_frame(seed=32, n=10))
        w.save(str(tmp_path / cls.__name__))
        assert tp.Workflow.load(str(tmp_path / cls.__name__)).output_schema == w.output_schema


def test_tag_as_ops_nvtabular():
    """NVTabular 23.08's TagAsUserID / TagAsItemID / TagAsUserFeatures / TagAsItemFeatures
    (nvtabular/ops/add_metadata.py): AddTags with [ID, USER], [ID, ITEM], [USER], [ITEM]."""
    import pandas as pd

    import tabprep as tp
    from tabprep import ops

    df = pd.DataFrame({"u": [1, 2], "i": [3, 4], "uf": [0.5, 1.0], "if_": ["a", "b"]})
    wf = tp.Workflow((["u"] >> ops.TagAsUserID()) + (["i"] >> ops.TagAsItemID())
                     + (["uf"] >> ops.TagAsUserFeatures()) + (["if_"] >> ops.TagAsItemFeatures()))
    out = wf.fit_transform(tp.Dataset(df)).to_ddf().compute()
    assert out["u"].tolist() == [1, 2]
    sch = wf.output_schema
    assert set(sch["u"].tags) >= {"id", "user"} and set(sch["i"].tags) >= {"id", "item"}
    assert "user" in sch["uf"].tags and "item" in sch["if_"].tags
    assert sch.select_by_tag("user").column_names == ["u", "uf"]
