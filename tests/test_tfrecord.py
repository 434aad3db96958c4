"""Tests of tabprep.io.tfrecord: the TFRecord sink (no TF needed) and the TF readers."""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import pyarrow as pa
import pytest

import tabprep.io.tfrecord as tfr
from tabprep.io.tfrecord import encoder as tfe
from tabprep.io.tfrecord import spec as tfs
from tabprep.io.tfrecord import SPEC_FILE, TFRecordSink, load_spec, spec_for, write_spec
from tabprep.schema import ColumnSchema, Schema

I64 = np.iinfo(np.int64)


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------
def write_output(folder: str, table: pa.Table, schema: Schema, batch_size: Optional[int] = None,
                 compression: Optional[str] = None, drop_last: bool = False,
                 chunk_rows: Sequence[int] = (), files: int = 1) -> List[Dict[str, Any]]:
    """Stand-in for the dataset writer: ``files`` record files + the spec in ``folder``.

    ``chunk_rows`` gives the sizes of the successive ``write`` chunks (cycled).
    """
    os.makedirs(folder, exist_ok=True)
    bounds = np.linspace(0, table.num_rows, files + 1).astype(int)
    entries = []
    for i in range(files):
        name = f"part_{i}.tfrecord" + (".gz" if (compression or "").upper() == "GZIP" else "")
        sink = TFRecordSink(os.path.join(folder, name), schema, batch_size=batch_size,
                            compression=compression, drop_last=drop_last)
        pos, k = int(bounds[i]), 0
        while pos < bounds[i + 1]:
            size = chunk_rows[k % len(chunk_rows)] if chunk_rows else int(bounds[i + 1]) - pos
            sink.write(table.slice(pos, min(size, int(bounds[i + 1]) - pos)))
            pos += size
            k += 1
        entries.append(dict(file=name, **sink.close()))
    write_spec(folder, spec_for(schema, batch_size, compression, drop_last), entries)
    return entries


def write_workers(root: str, table: pa.Table, schema: Schema, workers: int, **kwargs: Any) -> None:
    """One folder per worker with near-equal row counts (what split_per_worker plans)."""
    bounds = np.linspace(0, table.num_rows, workers + 1).astype(int)
    for rank in range(workers):
        write_output(os.path.join(root, f"worker_{rank}"), table.slice(bounds[rank], bounds[rank + 1] - bounds[rank]),
                     schema, **kwargs)


def raw_records(path: str) -> List[bytes]:
    """Pure-Python TFRecord reader that checks both masked CRCs (no TF)."""
    def masked(data: bytes) -> int:
        return tfe._masked_crc_one(data)

    out = []
    with open(path, "rb") as fh:
        blob = fh.read()
    pos = 0
    while pos < len(blob):
        header = blob[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (len_crc,) = struct.unpack("<I", blob[pos + 8:pos + 12])
        assert len_crc == masked(header)
        data = blob[pos + 12:pos + 12 + length]
        (data_crc,) = struct.unpack("<I", blob[pos + 12 + length:pos + 16 + length])
        assert data_crc == masked(data)
        out.append(data)
        pos += 16 + length
    assert pos == len(blob)
    return out


def mixed_table(n: int = 37, seed: int = 0) -> pa.Table:
    """Every supported kind, incl. int64 extremes, float32 specials, unicode/empty
    strings, empty lists and a list long enough for multi-byte length varints."""
    rng = np.random.default_rng(seed)
    ints = rng.integers(I64.min, I64.max, n, dtype=np.int64, endpoint=True)
    ints[:6] = [0, 1, -1, I64.max, I64.min, 300]
    floats = rng.standard_normal(n).astype(np.float32)
    floats[:4] = [np.float32(1e-45), np.float32(3.4028235e38), np.float32(-0.0), np.nan]
    strs = [("é" * int(k)) + str(i) for i, k in enumerate(rng.integers(0, 5, n))]
    strs[0] = ""
    strs[1] = "x" * 300
    lens = rng.integers(0, 4, n)
    lens[2] = 200  # 800-byte float payload: two-byte length varints
    lens[3] = 0
    li = [rng.integers(-1000, 1 << 40, int(k)).tolist() for k in lens]
    lf = [rng.standard_normal(int(k)).astype(np.float32).tolist() for k in lens]
    ls = [[f"s{i}_{j}" for j in range(int(k) % 3)] for i, k in enumerate(lens)]
    return pa.table({
        "id": pa.array(np.arange(n), pa.int64()),
        "i64": pa.array(ints),
        "i8": pa.array(rng.integers(-128, 127, n).astype(np.int8)),
        "u32": pa.array(rng.integers(0, 1 << 32, n).astype(np.uint32)),
        "f32": pa.array(floats),
        "f64": pa.array(rng.standard_normal(n) * 1e10),
        "flag": pa.array(rng.random(n) < 0.5),
        "s": pa.array(strs),
        "li": pa.array(li, pa.list_(pa.int64())),
        "lf": pa.array(lf, pa.list_(pa.float32())),
        "ls": pa.array(ls, pa.list_(pa.string())),
    })


def expected_columns(table: pa.Table) -> Dict[str, list]:
    """What the readers must return (int64 / float32 / bytes)."""
    out: Dict[str, list] = {}
    for name in table.column_names:
        values = table.column(name).to_pylist()
        typ = table.schema.field(name).type
        value_type = typ.value_type if pa.types.is_list(typ) else typ
        if pa.types.is_floating(value_type):
            conv = lambda v: np.float32(v)  # noqa: E731
        elif pa.types.is_string(value_type):
            conv = lambda v: v.encode()  # noqa: E731
        else:
            conv = int
        out[name] = [[conv(x) for x in v] for v in values] if pa.types.is_list(typ) else [conv(v) for v in values]
    return out


def assert_same(actual: list, expected: list) -> None:
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        if isinstance(e, list):
            assert len(a) == len(e)
            for x, y in zip(a, e):
                assert_same([x], [y])
        elif isinstance(e, np.float32):
            assert np.float32(a).tobytes() == e.tobytes() or (np.isnan(a) and np.isnan(e))
        else:
            assert a == e


def collect(dataset: Any) -> Dict[str, list]:
    """Concatenate the rows of a dataset of dict batches (or of single rows)."""
    rows: Dict[str, list] = {}
    for element in dataset:
        for name, value in element.items():
            value = to_py(value)
            if element[name].shape.rank == 0 or (not isinstance(value, list)):
                value = [value]
            elif name in ("li", "lf", "ls") and value and not isinstance(value[0], list):
                value = [value]  # one row of a list column
            rows.setdefault(name, []).extend(value)
    return rows


def to_py(value: Any) -> Any:
    """A TF tensor / ragged tensor as Python values."""
    if hasattr(value, "to_list"):
        return value.to_list()
    value = value.numpy()
    return value.tolist() if hasattr(value, "tolist") else value


def sort_by_id(rows: Dict[str, list]) -> Dict[str, list]:
    order = np.argsort(rows["id"], kind="stable")
    return {k: [v[i] for i in order] for k, v in rows.items()}


@pytest.fixture(scope="module")
def tf() -> Any:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return pytest.importorskip("tensorflow")


TABLE = mixed_table()
SCHEMA = Schema.from_arrow(TABLE.schema)


# --------------------------------------------------------------------------------------
# no TensorFlow needed
# --------------------------------------------------------------------------------------
def test_varint_matches_reference() -> None:
    values = np.array([0, 1, 127, 128, 300, 16383, 16384, 2**35, I64.max, -1, I64.min], dtype=np.int64)
    flat, lens = tfe._varint_flat(values)
    expected = b"".join(tfe._varint_bytes(int(v) & 0xFFFFFFFFFFFFFFFF) for v in values)
    assert flat.tobytes() == expected
    assert lens.tolist() == [len(tfe._varint_bytes(int(v) & 0xFFFFFFFFFFFFFFFF)) for v in values]


def test_framing_and_crcs_pure_python(tmp_path: Any) -> None:
    entries = write_output(str(tmp_path), TABLE, SCHEMA)
    records = raw_records(str(tmp_path / "part_0.tfrecord"))
    assert len(records) == TABLE.num_rows == entries[0]["records"] == entries[0]["rows"]
    assert entries[0]["bytes"] == os.path.getsize(tmp_path / "part_0.tfrecord")


def test_protobuf_python_parses_records(tmp_path: Any) -> None:
    """Records decode as tf.train.Example with the protobuf runtime alone (no TF)."""
    pytest.importorskip("google.protobuf")
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    proto = descriptor_pb2.FileDescriptorProto(name="ex_test.proto", package="t", syntax="proto3")
    for name, fields in [("BytesList", [("value", 1, "TYPE_BYTES")]), ("FloatList", [("value", 1, "TYPE_FLOAT")]),
                         ("Int64List", [("value", 1, "TYPE_INT64")])]:
        msg = proto.message_type.add(name=name)
        for fname, num, typ in fields:
            msg.field.add(name=fname, number=num, type=getattr(descriptor_pb2.FieldDescriptorProto, typ),
                          label=descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED)
    feature = proto.message_type.add(name="Feature")
    feature.oneof_decl.add(name="kind")
    for fname, num, typ in [("bytes_list", 1, ".t.BytesList"), ("float_list", 2, ".t.FloatList"),
                            ("int64_list", 3, ".t.Int64List")]:
        feature.field.add(name=fname, number=num, type_name=typ, oneof_index=0,
                          type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
                          label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    features = proto.message_type.add(name="Features")
    entry = features.nested_type.add(name="FeatureEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                    label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
                    type_name=".t.Feature", label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    features.field.add(name="feature", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
                       type_name=".t.Features.FeatureEntry", label=descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED)
    example = proto.message_type.add(name="Example")
    example.field.add(name="features", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
                      type_name=".t.Features", label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    Example = message_factory.GetMessageClass(pool.FindMessageTypeByName("t.Example"))

    write_output(str(tmp_path), TABLE, SCHEMA)
    expected = expected_columns(TABLE)
    for i, data in enumerate(raw_records(str(tmp_path / "part_0.tfrecord"))):
        msg = Example.FromString(data)
        feats = msg.features.feature
        assert set(feats) == set(SCHEMA.column_names)
        assert list(feats["li"].int64_list.value) == expected["li"][i]
        assert feats["i64"].int64_list.value[0] == expected["i64"][i]
        assert list(feats["s"].bytes_list.value) == [expected["s"][i]]
        assert_same([list(feats["lf"].float_list.value)], [expected["lf"][i]])
        assert msg.SerializeToString(deterministic=False) and len(msg.SerializeToString()) == len(data)


def test_writing_does_not_import_tensorflow(tmp_path: Any) -> None:
    code = (
        "import sys; sys.modules['tensorflow'] = None\n"
        "import pyarrow as pa\n"
        "from tabprep.io.tfrecord import TFRecordSink, spec_for, write_spec\n"
        "from tabprep.schema import Schema\n"
        "t = pa.table({'a': [1, 2, 3], 'b': [[1.0], [], [2.0, 3.0]]})\n"
        f"s = TFRecordSink({str(tmp_path / 'x.tfrecord')!r}, Schema.from_arrow(t.schema), batch_size=2)\n"
        "s.write(t); st = s.close()\n"
        f"write_spec({str(tmp_path)!r}, spec_for(Schema.from_arrow(t.schema), 2), [dict(path='x.tfrecord', **st)])\n"
        "assert 'tensorflow' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
        "print(st)\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "'records': 2" in out.stdout


@pytest.mark.parametrize("column, values, typ, what", [
    ("i", [1, None, 3], pa.int64(), "null values"),
    ("f", [1.0, None], pa.float32(), "null values"),
    ("s", ["a", None], pa.string(), "null values"),
    ("l", [[1], None], pa.list_(pa.int64()), "null lists"),
    ("l", [[1, None], [2]], pa.list_(pa.int64()), "null list elements"),
])
@pytest.mark.parametrize("batch_size", [None, 2])
def test_nulls_raise_clear_error(tmp_path: Any, column: str, values: list, typ: Any, what: str,
                                 batch_size: Optional[int]) -> None:
    table = pa.table({column: pa.array(values, typ)})
    sink = TFRecordSink(str(tmp_path / "x.tfrecord"), Schema.from_arrow(table.schema), batch_size=batch_size)
    with pytest.raises(ValueError, match=rf"column '{column}' has 1 {what}.*FillMissing.*Categorify"):
        sink.write(table)
    sink.abort()


def test_type_errors(tmp_path: Any) -> None:
    table = pa.table({"a": pa.array([1.5, 2.5])})
    with pytest.raises(TypeError, match="column 'a'"):
        TFRecordSink(str(tmp_path / "x"), Schema([ColumnSchema("a", "int64")])).write(table)
    with pytest.raises(TypeError, match="is_list"):
        TFRecordSink(str(tmp_path / "y"), Schema([ColumnSchema("a", "float32", is_list=True)])).write(table)
    with pytest.raises(ValueError, match="2\\*\\*63"):
        TFRecordSink(str(tmp_path / "z"), Schema([ColumnSchema("u", "uint64")])).write(
            pa.table({"u": pa.array([2**63], pa.uint64())}))
    with pytest.raises(ValueError, match="lacks schema columns"):
        TFRecordSink(str(tmp_path / "w"), Schema([ColumnSchema("b", "int64")])).write(table)
    with pytest.raises(ValueError, match="collides"):
        spec_for(Schema([ColumnSchema("x", "int64", is_list=True), ColumnSchema("x__values", "int64")]), 4)
    with pytest.raises(TypeError, match="cannot be written"):
        spec_for(Schema([ColumnSchema("t", "datetime64[ns]")]))


def test_prebatched_record_sizes_across_chunks(tmp_path: Any) -> None:
    """Batches of exactly B rows whatever the chunking; short last batch or drop_last."""
    table = TABLE.slice(0, 23)
    for drop_last, expected in [(False, [5, 5, 5, 5, 3]), (True, [5, 5, 5, 5])]:
        folder = str(tmp_path / f"drop{drop_last}")
        (entry,) = write_output(folder, table, SCHEMA, batch_size=5, drop_last=drop_last, chunk_rows=(1, 7, 2, 4, 9))
        assert entry["records"] == len(expected) and entry["rows"] == sum(expected)
        assert entry["dropped_rows"] == 23 - sum(expected)
        records = raw_records(os.path.join(folder, "part_0.tfrecord"))
        assert len(records) == len(expected)
        spec = load_spec(folder)
        assert spec["rows"] == sum(expected) and spec["drop_last"] is drop_last


def test_spec_file(tmp_path: Any) -> None:
    write_output(str(tmp_path), TABLE, SCHEMA, batch_size=8, compression="gzip", files=2)
    with open(tmp_path / SPEC_FILE) as fh:
        spec = json.load(fh)
    assert spec["layout"] == "prebatched" and spec["batch_size"] == 8 and spec["compression"] == "GZIP"
    assert [f["file"] for f in spec["files"]] == ["part_0.tfrecord.gz", "part_1.tfrecord.gz"]
    assert spec["rows"] == TABLE.num_rows and spec["records"] == sum(f["records"] for f in spec["files"])
    by_name = {f["name"]: f for f in spec["features"]}
    assert by_name["li"] == {"name": "li", "dtype": "int64", "source_dtype": "int64", "is_list": True,
                             "shape": [8, None], "keys": ["li__values", "li__lengths"]}
    assert by_name["f64"]["dtype"] == "float32" and by_name["flag"]["dtype"] == "int64"
    assert by_name["s"]["shape"] == [8] and by_name["s"]["dtype"] == "string"
    assert not any(name.endswith(".tmp") for name in os.listdir(tmp_path))
    per = spec_for(SCHEMA)
    assert {f["name"]: f["shape"] for f in per["features"]}["ls"] == [None]
    assert per["layout"] == "example" and per["batch_size"] is None


def test_load_spec_errors(tmp_path: Any) -> None:
    with pytest.raises(FileNotFoundError, match="did not finish"):
        load_spec(str(tmp_path))
    write_output(str(tmp_path / "w0"), TABLE, SCHEMA, batch_size=4)
    write_output(str(tmp_path / "w1"), TABLE, SCHEMA, batch_size=8)
    with pytest.raises(ValueError, match="batch_size differs"):
        load_spec(str(tmp_path))
    os.remove(tmp_path / "w0" / "part_0.tfrecord")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_spec(str(tmp_path / "w0"))


def _long_key_table() -> pa.Table:
    rng = np.random.default_rng(3)
    values = rng.integers(I64.min, I64.max, 60, dtype=np.int64) >> rng.integers(0, 64, 60)
    values[:4] = [0, 127, 128, -1]
    return pa.table({"id": pa.array(np.arange(60)),
                     "a" * 117: pa.array(values),  # entry length crosses 127 -> generic path
                     "b" * 130: pa.array(values[::-1].copy()),  # two-byte entry lengths, fast path
                     "lf": pa.array([[0.5] * (i % 5) for i in range(60)], pa.list_(pa.float32()))})


def test_fast_paths_match_generic(tmp_path: Any, monkeypatch: Any) -> None:
    """The int fast path and multi-block encoding give the same bytes as the generic
    path in one block, including keys long enough to need multi-byte lengths."""
    table = _long_key_table()
    schema = Schema.from_arrow(table.schema)
    assert tfe._int_scalar_entry(tfe._to_column(table.column("a" * 117), schema["a" * 117], "int64"), 60) is None
    assert tfe._int_scalar_entry(tfe._to_column(table.column("b" * 130), schema["b" * 130], "int64"), 60) is not None
    write_output(str(tmp_path / "fast"), table, schema)
    monkeypatch.setattr(tfe, "_BLOCK_BYTES", 2000)
    monkeypatch.setattr(tfe, "_int_scalar_entry", lambda col, n: None)
    monkeypatch.setattr(tfe, "encode_fixed", lambda cols, n: None)  # the scalar-only template path
    write_output(str(tmp_path / "generic"), table, schema)
    fast = (tmp_path / "fast" / "part_0.tfrecord").read_bytes()
    assert fast == (tmp_path / "generic" / "part_0.tfrecord").read_bytes()
    assert len(raw_records(str(tmp_path / "fast" / "part_0.tfrecord"))) == 60


def test_empty_output(tmp_path: Any) -> None:
    sink = TFRecordSink(str(tmp_path / "e.tfrecord"), SCHEMA, batch_size=4)
    sink.write(TABLE.slice(0, 0))
    stats = sink.close()
    assert stats == {"rows": 0, "records": 0, "bytes": 0, "dropped_rows": 0}
    assert sink.close() == stats


# --------------------------------------------------------------------------------------
# TensorFlow: TF's own reader and parsers
# --------------------------------------------------------------------------------------
def _tf_example(tf: Any, row: Dict[str, Any], schema: Schema) -> Any:
    feats = {}
    for col in schema:
        value = row[col.name]
        values = value if col.is_list else [value]
        kind = tfs._feature_dtype(col)
        if kind == "int64":
            feats[col.name] = tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))
        elif kind == "float32":
            feats[col.name] = tf.train.Feature(float_list=tf.train.FloatList(value=values))
        else:
            feats[col.name] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[v.encode() for v in values]))
    return tf.train.Example(features=tf.train.Features(feature=feats))


@pytest.mark.parametrize("table", [TABLE, _long_key_table()], ids=["mixed", "long_keys"])
@pytest.mark.parametrize("int_fast_path", [True, False])
def test_bytes_equal_tf_serialization(tf: Any, tmp_path: Any, monkeypatch: Any, table: pa.Table,
                                      int_fast_path: bool) -> None:
    """Per-example records are byte-identical to TF's (deterministic) serialization and
    pass TF's own record reader, which checks both CRCs."""
    if not int_fast_path:
        monkeypatch.setattr(tfe, "_int_scalar_entry", lambda col, n: None)
    full = Schema.from_arrow(table.schema)
    schema = full.select(sorted(full.column_names))  # deterministic serialization sorts map keys
    write_output(str(tmp_path), table, schema)
    path = str(tmp_path / "part_0.tfrecord")
    records = list(tf.compat.v1.io.tf_record_iterator(path))
    assert len(records) == table.num_rows
    for record, row in zip(records, table.to_pylist()):
        assert record == _tf_example(tf, row, schema).SerializeToString(deterministic=True)


def test_tf_reader_rejects_corruption(tf: Any, tmp_path: Any) -> None:
    write_output(str(tmp_path), TABLE.slice(0, 3), SCHEMA)
    path = tmp_path / "part_0.tfrecord"
    blob = bytearray(path.read_bytes())
    blob[40] ^= 0x01
    path.write_bytes(bytes(blob))
    with pytest.raises(tf.errors.DataLossError):
        list(tf.compat.v1.io.tf_record_iterator(str(path)))


@pytest.mark.parametrize("compression", [None, "GZIP", "ZLIB"])
def test_plain_tf_parse_per_example(tf: Any, tmp_path: Any, compression: Optional[str]) -> None:
    write_output(str(tmp_path), TABLE, SCHEMA, compression=compression, chunk_rows=(10, 3))
    files = [f["path"] for f in load_spec(str(tmp_path))["files"]]
    ds = tf.data.TFRecordDataset(files, compression_type=compression or "")
    options = tf.io.TFRecordOptions(compression or "")
    assert len(list(tf.compat.v1.io.tf_record_iterator(files[0], options))) == TABLE.num_rows
    spec = tfr.feature_spec(SCHEMA)
    parsed = next(iter(ds.batch(1000).map(lambda r: tf.io.parse_example(r, spec))))
    expected = expected_columns(TABLE)
    for name in SCHEMA.column_names:
        value = parsed[name]
        assert_same(to_py(value), expected[name])
    single = next(iter(ds.map(lambda r: tf.io.parse_single_example(r, spec))))
    assert single["i64"].numpy() == expected["i64"][0] and single["li"].shape.rank == 1


@pytest.mark.parametrize("drop_last", [False, True])
def test_plain_tf_parse_prebatched(tf: Any, tmp_path: Any, drop_last: bool) -> None:
    write_output(str(tmp_path), TABLE, SCHEMA, batch_size=8, drop_last=drop_last, chunk_rows=(5,))
    (path,) = [f["path"] for f in load_spec(str(tmp_path))["files"]]
    spec = tfr.feature_spec(SCHEMA, batch_size=8, drop_last=drop_last)
    batches = list(tf.data.TFRecordDataset(path).map(lambda r: tf.io.parse_single_example(r, spec)))
    assert [int(b["id"].shape[0]) for b in batches] == ([8, 8, 8, 8] if drop_last else [8, 8, 8, 8, 5])
    expected = expected_columns(TABLE)
    rows = sum(int(b["id"].shape[0]) for b in batches)
    for name in SCHEMA.column_names:
        got: list = []
        for b in batches:
            got.extend(to_py(b[name]))
        assert_same(got, expected[name][:rows])
    # the raw __values/__lengths features rebuild the ragged batch
    raw = tf.io.parse_single_example(next(iter(tf.data.TFRecordDataset(path))), {
        "li__values": tf.io.VarLenFeature(tf.int64), "li__lengths": tf.io.FixedLenFeature([8], tf.int64)})
    ragged = tf.RaggedTensor.from_row_lengths(raw["li__values"].values, raw["li__lengths"])
    assert ragged.to_list() == expected["li"][:8]


@pytest.mark.parametrize("batch_size, compression", [(None, None), (4, "GZIP"), (7, None)])
@pytest.mark.parametrize("read_batch", [None, 4, 8, 6])
def test_read_tfrecord_round_trip(tf: Any, tmp_path: Any, batch_size: Optional[int],
                                  compression: Optional[str], read_batch: Optional[int]) -> None:
    write_output(str(tmp_path), TABLE, SCHEMA, batch_size=batch_size, compression=compression,
                 chunk_rows=(3, 11), files=2)
    ds = tfr.read_tfrecord(str(tmp_path), batch_size=read_batch, num_parallel_reads=1)
    sizes = []
    rows: Dict[str, list] = {}
    for element in ds:
        sizes.append(int(tf.shape(element["id"])[0]) if element["id"].shape.rank else 1)
        for name, value in element.items():
            value = to_py(value)
            if element["id"].shape.rank == 0:
                value = [value]
            rows.setdefault(name, []).extend(value)
        assert isinstance(element["li"], tf.RaggedTensor) == (element["id"].shape.rank == 1)
        assert element["f64"].dtype == tf.float32 and element["i8"].dtype == tf.int64
        assert element["s"].dtype == tf.string
    if read_batch is not None:
        assert all(s == read_batch for s in sizes[:-1]) and 0 < sizes[-1] <= read_batch
    if batch_size is not None and read_batch is not None and read_batch % batch_size == 0:
        rows = sort_by_id(rows)  # fast path: leftover and short records come last
    else:
        assert rows["id"] == list(range(TABLE.num_rows))
    expected = expected_columns(TABLE)
    for name in SCHEMA.column_names:
        assert_same(rows[name], expected[name])


def test_read_several_workers(tf: Any, tmp_path: Any) -> None:
    big = pa.concat_tables([mixed_table(40, seed) for seed in range(5)])
    big = big.set_column(0, "id", pa.array(np.arange(big.num_rows)))
    write_workers(str(tmp_path), big, SCHEMA, workers=3, batch_size=4, chunk_rows=(6,), files=2)
    shard_rows = [load_spec(str(tmp_path / f"worker_{r}"))["rows"] for r in range(3)]
    assert sum(shard_rows) == big.num_rows and max(shard_rows) - min(shard_rows) <= 1
    expected = expected_columns(big)
    rows = sort_by_id(collect(tfr.read_tfrecord(str(tmp_path), batch_size=16, shuffle=True, seed=1)))
    for name in SCHEMA.column_names:
        assert_same(rows[name], expected[name])
    # one worker opens its own shard
    mine = collect(tfr.read_tfrecord(str(tmp_path / "worker_1"), num_parallel_reads=1))
    lo = shard_rows[0]
    assert mine["id"] == list(range(lo, lo + shard_rows[1]))
    # column selection
    only = next(iter(tfr.read_tfrecord(str(tmp_path), batch_size=8, columns=["lf", "id"])))
    assert set(only) == {"lf", "id"}
    # a top-level spec listing every shard's files (as the dataset writer adds) wins over the shards'
    entries = [dict(f, file=f"worker_{r}/{f['file']}") for r in range(3)
               for f in load_spec(str(tmp_path / f"worker_{r}"))["files"]]
    write_spec(str(tmp_path), spec_for(SCHEMA, 4), entries)
    top = load_spec(str(tmp_path))
    assert top["rows"] == big.num_rows and top["shards"] == [str(tmp_path)]
    assert sorted(collect(tfr.read_tfrecord(str(tmp_path), batch_size=50))["id"]) == list(range(big.num_rows))


def test_dataset_writer_integration(tf: Any, tmp_path: Any) -> None:
    """The dataset writer drives TFRecordSink and writes specs read_tfrecord understands."""
    pd = pytest.importorskip("pandas")
    from tabprep.io import Dataset

    n = 1000
    frame = pd.DataFrame({"id": np.arange(n), "x": np.linspace(0, 1, n, dtype=np.float32),
                          "c": np.arange(n) % 7})
    for batch_size in (None, 64):
        out = str(tmp_path / f"out_{batch_size}")
        Dataset(frame, npartitions=3).to_tfrecord(out, batch_size=batch_size, output_files=2, split_per_worker=2)
        rows = collect(tfr.read_tfrecord(out, batch_size=128))
        assert sorted(rows["id"]) == list(range(n))
        order = np.argsort(rows["id"])
        assert [rows["x"][i] for i in order] == frame["x"].tolist()
        mine = collect(tfr.read_tfrecord(os.path.join(out, "worker_1"), num_parallel_reads=1))
        # prebatched: workers are dealt whole batches (16 batches of 64 -> 8 each: rows 512..999)
        start = n // 2 if batch_size is None else (-(-n // batch_size) // 2) * batch_size
        assert sorted(mine["id"]) == list(range(start, n))


def test_read_drop_remainder_and_empty(tf: Any, tmp_path: Any) -> None:
    write_output(str(tmp_path / "a"), TABLE, SCHEMA, batch_size=5)
    sizes = [int(b["id"].shape[0]) for b in tfr.read_tfrecord(str(tmp_path / "a"), batch_size=10, drop_remainder=True)]
    assert sizes == [10, 10, 10]
    write_output(str(tmp_path / "e"), TABLE.slice(0, 0), SCHEMA)
    assert list(tfr.read_tfrecord(str(tmp_path / "e"), batch_size=4)) == []
