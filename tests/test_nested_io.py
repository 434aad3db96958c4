"""Nested list columns (issue #31): schema (depth, value counts per level), parquet in / out,
splits and shuffles, TFRecord read back by TensorFlow's own parser, bad input. References are
pyarrow reads and plain Python on the rows."""
from __future__ import annotations

import glob
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tabprep as tp
from tabprep import ops

NESTED = pa.list_(pa.list_(pa.int64()))
# nulls at each level (null row, null inner list, null leaf), empty rows and empty inner lists
ROWS = [[[1, 2], [3]], [[4]], [], None, [[5, 6, 7], [], None], [[8, None]], [[9], [10, 11], [12]]]


def _write(path, rows, ids=None, **pq_kw):
    ids = np.arange(len(rows)) if ids is None else ids
    pq.write_table(pa.table({"x": pa.array(rows, type=NESTED), "row": ids}), path, **pq_kw)


def _read_rows(folder):
    table = pa.concat_tables([pq.read_table(f) for f in sorted(glob.glob(os.path.join(folder, "**", "*.parquet"),
                                                                           recursive=True))])
    return dict(zip(table.column("row").to_pylist(), table.column("x").to_pylist())), table


@pytest.mark.parametrize("kw", [dict(out_files_per_proc=3), dict(split_per_worker=2), dict(shuffle="full", seed=1),
                                dict(output_files=2, shuffle="partition", seed=2)])
def test_parquet_passthrough_keeps_rows_structure_and_nulls(tmp_path, kw):
    rows = ROWS * 9
    _write(str(tmp_path / "in.parquet"), rows, row_group_size=10)
    ds = tp.Dataset(str(tmp_path / "in.parquet"), part_size=2000)
    wf = tp.Workflow(["x", "row"])
    wf.fit(ds)
    wf.transform(ds).to_parquet(str(tmp_path / "out"), **kw)
    got, table = _read_rows(str(tmp_path / "out"))
    assert table.schema.field("x").type.equals(NESTED)
    assert got == dict(enumerate(rows))   # every row once, structure and nulls as written
    if "shuffle" not in kw:               # no shuffle: file order is row order
        assert table.column("row").to_pylist() == list(range(len(rows)))


def test_schema_records_depth_and_value_counts_per_level(tmp_path):
    keys = np.arange(6 * 4 * 3).reshape(6, 4, 3).tolist()
    pq.write_table(pa.table({"x": pa.array(keys, type=NESTED), "r": pa.array(ROWS[:6], type=NESTED)}),
                   str(tmp_path / "d.parquet"))
    wf = tp.Workflow(["x", "r"] >> ops.ValueCount())
    wf.fit(tp.Dataset(str(tmp_path / "d.parquet")))
    x, r = wf.output_schema["x"], wf.output_schema["r"]
    assert (x.depth, x.leaf_dtype, x.fixed_shape, x.is_ragged) == (2, "int64", [4, 3], False)
    assert x.value_counts == [{"min": 4, "max": 4}, {"min": 3, "max": 3}] and x.value_count == {"min": 4, "max": 4}
    # ragged: rows (null row not counted) 0..3 lists; inner lists (null inner list not counted) 0..3 leaves
    rows = [row for row in ROWS[:6] if row is not None]
    inner = [len(i) for row in rows for i in row if i is not None]
    assert r.value_counts == [{"min": min(map(len, rows)), "max": max(map(len, rows))},
                              {"min": min(inner), "max": max(inner)}]
    assert r.is_ragged and r.fixed_shape is None
    wf.save(str(tmp_path / "wf"))
    assert tp.Workflow.load(str(tmp_path / "wf")).output_schema == wf.output_schema
    wf.transform(tp.Dataset(str(tmp_path / "d.parquet"))).to_parquet(str(tmp_path / "out"))
    on_disk = {c["name"]: c for c in json.load(open(tmp_path / "out" / "_schema.json"))["columns"]}
    assert on_disk["x"]["depth"] == 2 and on_disk["x"]["value_counts"] == [{"min": 4, "max": 4}, {"min": 3, "max": 3}]
    assert "depth" not in json.dumps(wf.output_schema.select([]).to_dict())


def test_inspect_shows_nested_shape(tmp_path):
    from click.testing import CliRunner

    from tabprep.cli.main import cli

    keys = np.arange(6 * 4 * 3).reshape(6, 4, 3).tolist()
    pq.write_table(pa.table({"x": pa.array(keys, type=NESTED)}), str(tmp_path / "d.parquet"))
    wf = tp.Workflow(["x"] >> ops.ValueCount())
    wf.fit(tp.Dataset(str(tmp_path / "d.parquet")))
    wf.transform(tp.Dataset(str(tmp_path / "d.parquet"))).to_parquet(str(tmp_path / "out"))
    res = CliRunner().invoke(cli, ["inspect", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert "int64[4][3]" in res.output


def test_mixed_depths_across_files_name_both_files(tmp_path):
    _write(str(tmp_path / "a.parquet"), [[[1]], [[2, 3]]])
    pq.write_table(pa.table({"x": pa.array([[[[1]]]], type=pa.list_(NESTED)), "row": [0]}), str(tmp_path / "b.parquet"))
    with pytest.raises(ValueError, match=r"(?s)'x'.*b\.parquet.*a\.parquet"):
        tp.Dataset(str(tmp_path)).schema


def test_deeper_nesting_than_fitted_is_refused(tmp_path):
    _write(str(tmp_path / "a.parquet"), [[[1]], [[2, 3]]])
    pq.write_table(pa.table({"x": pa.array([[[[1]]]], type=pa.list_(NESTED)), "row": [0]}), str(tmp_path / "b.parquet"))
    wf = tp.Workflow(["x"] >> ops.ValueCount())
    wf.fit(tp.Dataset(str(tmp_path / "a.parquet")))
    with pytest.raises(TypeError, match=r"'x' holds lists nested 3 levels deep.*fitted on 2 level.*deeper nesting"):
        wf.transform(tp.Dataset(str(tmp_path / "b.parquet"))).compute()


# -- TFRecord -----------------------------------------------------------------------------------
ROWS_NO_NULLS = [[[1, 2], [3]], [[4]], [], [[5, 6, 7], []], [[8]], [[9], [10, 11], [12]], [[]]]


@pytest.fixture(scope="module")
def tf():
    return pytest.importorskip("tensorflow")


def test_tfrecord_examples_parse_to_nested_ragged(tmp_path, tf):
    _write(str(tmp_path / "d.parquet"), ROWS_NO_NULLS)
    tp.Dataset(str(tmp_path / "d.parquet")).to_tfrecord(str(tmp_path / "tfr"), output_files=2)
    spec = json.load(open(tmp_path / "tfr" / "tfrecord_spec.json"))
    feat = {f["name"]: f for f in spec["features"]}
    assert feat["x"]["nested"] == {"depth": 2, "row_lengths": ["x__row_lengths_1"]}
    files = sorted(glob.glob(str(tmp_path / "tfr" / "*.tfrecord*")))
    raw = next(iter(tf.data.TFRecordDataset(files).batch(100)))
    parsed = tf.io.parse_example(raw, {
        "x": tf.io.RaggedFeature(tf.int64, value_key="x",
                                 partitions=[tf.io.RaggedFeature.RowLengths("x__row_lengths_1")]),
        "row": tf.io.FixedLenFeature([], tf.int64)})
    assert [ROWS_NO_NULLS[i] for i in parsed["row"].numpy()] == parsed["x"].to_list()
    # the same from the plain features and from_nested_row_lengths
    plain = tf.io.parse_example(raw, {"x": tf.io.RaggedFeature(tf.int64),
                                      "x__row_lengths_1": tf.io.RaggedFeature(tf.int64)})
    rebuilt = tf.RaggedTensor.from_nested_row_lengths(
        plain["x"].flat_values, [tf.cast(plain["x__row_lengths_1"].row_lengths(), tf.int64),
                                 plain["x__row_lengths_1"].flat_values])
    assert rebuilt.to_list() == parsed["x"].to_list()


def test_tfrecord_prebatched_rebuilds_batches(tmp_path, tf):
    _write(str(tmp_path / "d.parquet"), ROWS_NO_NULLS)
    tp.Dataset(str(tmp_path / "d.parquet")).to_tfrecord(str(tmp_path / "tfr"), batch_size=3)
    files = sorted(glob.glob(str(tmp_path / "tfr" / "*.tfrecord*")))
    got = []
    for raw in tf.data.TFRecordDataset(files):
        f = tf.io.parse_single_example(raw, {k: tf.io.VarLenFeature(tf.int64) for k in
                                             ("x__values", "x__lengths", "x__row_lengths_1__values",
                                              "x__row_lengths_1__lengths")})
        d = {k: tf.sparse.to_dense(v) for k, v in f.items()}
        assert int(tf.reduce_sum(d["x__lengths"])) == int(tf.size(d["x__values"]))   # leaves per row
        batch = tf.RaggedTensor.from_nested_row_lengths(
            d["x__values"], [d["x__row_lengths_1__lengths"], d["x__row_lengths_1__values"]])
        got += batch.to_list()
    assert got == ROWS_NO_NULLS


def test_tfrecord_refuses_nulls_in_nested_column(tmp_path):
    _write(str(tmp_path / "d.parquet"), [[[1]], None])
    with pytest.raises(ValueError, match=r"'x'.*null rows"):
        tp.Dataset(str(tmp_path / "d.parquet")).to_tfrecord(str(tmp_path / "tfr"))
    _write(str(tmp_path / "e.parquet"), [[[1], None]])
    with pytest.raises(ValueError, match=r"'x'.*null lists at level 1"):
        tp.Dataset(str(tmp_path / "e.parquet")).to_tfrecord(str(tmp_path / "tfr2"))
