"""A folder NVTabular 23.08 wrote (``to_parquet``) reads as the parquet data it holds, as
merlin-core reads it. merlin-core writes its own ``_metadata.json`` (``{"file_stats": [{"file_name",
"num_rows"}], "cats", "conts", "labels"}``), ``_file_list.txt``, a parquet ``_metadata`` summary,
``schema.pbtxt`` and ``.merlin/schema.json`` (layout seen side by side with nvtabular 23.8.0).
Before, tabprep took any folder holding a ``_metadata.json`` for a tabprep output and refused it
("an incomplete tabprep output ... no _SUCCESS file"), so data preprocessed by NVTabular could not
be reused. A tabprep output missing its ``_SUCCESS`` is still refused."""
from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tabprep as tp


def _nvtabular_like_output(folder, frames):
    folder.mkdir()
    (folder / ".merlin").mkdir()
    stats, metas = [], []
    for i, frame in enumerate(frames):
        name = f"part_{i}.parquet"
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), folder / name,
                       metadata_collector=metas)
        metas[-1].set_file_path(name)
        stats.append({"file_name": name, "num_rows": len(frame)})
    summary = metas[0]
    for m in metas[1:]:
        summary.append_row_groups(m)
    summary.write_metadata_file(str(folder / "_metadata"))
    (folder / "_metadata.json").write_text(json.dumps({"file_stats": stats, "cats": ["c"], "conts": ["x"],
                                                        "labels": []}))
    (folder / "_file_list.txt").write_text(f"{len(frames)}\n" + "".join(f"{folder}/part_{i}.parquet\n"
                                                                        for i in range(len(frames))))
    (folder / "schema.pbtxt").write_text('feature {\n  name: "c"\n  type: INT\n}\n')
    (folder / ".merlin" / "schema.json").write_text("{}")
    return folder


def test_a_folder_nvtabular_wrote_reads_as_its_parquet_data(tmp_path):
    frames = [pd.DataFrame({"c": [1, 2], "x": [0.5, 1.5]}), pd.DataFrame({"c": [3], "x": [2.5]})]
    out = _nvtabular_like_output(tmp_path / "nvt_out", frames)
    expect = pd.concat(frames, ignore_index=True)
    for src in (str(out), str(out / "*.parquet"), [str(out / "part_0.parquet"), str(out / "part_1.parquet")]):
        got = tp.Dataset(src).to_ddf().compute().reset_index(drop=True)
        pd.testing.assert_frame_equal(got, expect, check_dtype=False)
        assert got["c"].tolist() == [1, 2, 3]
    wf = tp.Workflow(["c"] >> tp.ops.Categorify()).fit(tp.Dataset(str(out)))
    assert wf.output_schema["c"].cardinality == 3 + 3


def test_a_tabprep_output_without_its_success_file_is_still_refused(tmp_path):
    frame = pd.DataFrame({"c": [1, 2, 3]})
    tp.Workflow(["c"]).fit_transform(tp.Dataset(frame)).to_parquet(str(tmp_path / "out"))
    (tmp_path / "out" / "_SUCCESS").unlink()
    with pytest.raises(ValueError, match="incomplete tabprep output"):
        tp.Dataset(str(tmp_path / "out"))


_MERLIN_SCHEMA = {"feature": [
    {"name": "c", "type": "INT", "intDomain": {"name": "c", "max": "9", "isCategorical": True},
     "annotation": {"tag": ["user", "categorical", "id"],
                    "extraMetadata": [{"num_buckets": None, "freq_threshold": 0.0, "max_size": 0.0,
                                       "cat_path": ".//categories/unique.c.parquet",
                                       "embedding_sizes": {"cardinality": 10.0, "dimension": 16.0},
                                       "_dims": [[0.0, None]], "is_list": False, "is_ragged": False,
                                       "dtype_item_size": 64.0}]}},
    {"name": "g", "valueCount": {"min": "1", "max": "4"}, "type": "INT",
     "intDomain": {"name": "g", "max": "7", "isCategorical": True},
     "annotation": {"tag": ["item", "categorical"],
                    "extraMetadata": [{"embedding_sizes": {"cardinality": 8.0, "dimension": 16.0},
                                       "_dims": [[0.0, None], [1.0, 4.0]], "is_list": True, "is_ragged": True}]}},
    {"name": "x", "type": "FLOAT", "floatDomain": {"name": "x", "min": -1.5, "max": 2.5},
     "annotation": {"tag": ["continuous"], "extraMetadata": [{"_dims": [[0.0, None]], "is_list": False,
                                                              "is_ragged": False, "dtype_item_size": 64.0}]}},
]}


def test_the_tags_and_properties_of_nvtabulars_schema_file_are_read(tmp_path):
    """merlin-core writes ``.merlin/schema.json`` (TensorFlow metadata's JSON, layout as nvtabular
    23.8.0 writes it): tags from ``annotation.tag``, the domain from ``intDomain`` / ``floatDomain``,
    the rest of the properties from ``annotation.extraMetadata``. NVTabular reading its own folder gets
    them; tabprep read the files' names and dtypes only (no tags, no embedding sizes)."""
    frames = [pd.DataFrame({"c": [1, 2], "x": [0.5, 1.5], "g": [[3, 4], [5, 6, 7, 3]]}),
              pd.DataFrame({"c": [3], "x": [2.5], "g": [[4]]})]
    out = _nvtabular_like_output(tmp_path / "nvt_out", frames)
    (out / ".merlin" / "schema.json").write_text(json.dumps(_MERLIN_SCHEMA))
    schema = tp.Dataset(str(out)).schema
    assert set(schema["c"].tags) == {"user", "categorical", "id"} and schema["c"].dtype == "int64"
    assert schema["c"].properties["domain"] == {"min": 0, "max": 9, "name": "c"}
    assert schema["c"].properties["embedding_sizes"] == {"cardinality": 10, "dimension": 16}
    assert schema["c"].properties["cat_path"] == ".//categories/unique.c.parquet"
    assert schema.select_by_tag(tp.Tags.USER_ID).column_names == ["c"]
    assert schema.select_by_tag(tp.Tags.CONTINUOUS).column_names == ["x"]
    assert schema["x"].properties["domain"] == {"min": -1.5, "max": 2.5, "name": "x"}
    assert schema["g"].is_list and schema["g"].value_count == {"min": 1, "max": 4}   # merlin's measured lengths
    assert schema["g"].properties["value_count"] == {"min": 1, "max": 4}
    wf = tp.Workflow(tp.ColumnSelector(tags=[tp.Tags.CATEGORICAL])).fit(tp.Dataset(str(out)))
    assert wf.output_schema.column_names == ["c", "g"]
    assert tp.get_embedding_sizes(wf) == ({"c": (10, 16)}, {"g": (8, 16)})   # g: multi-hot


def test_an_unreadable_nvtabular_schema_file_is_named(tmp_path):
    out = _nvtabular_like_output(tmp_path / "nvt_out", [pd.DataFrame({"c": [1]})])
    (out / ".merlin" / "schema.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"schema\.json"):
        tp.Dataset(str(out)).schema
