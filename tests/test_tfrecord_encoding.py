"""Byte-level tests of the TFRecord encoders (the per-block template path of
``tabprep.io.tfrecord.fixed`` and the generic pieces of ``encoder``) against references
independent of them: records serialized by TF's own ``tf.train.Example`` and framed here
(length, masked crc32c written in this file with the ``crc32c`` package), TF's record
reader (which checks both crcs) and TF's parsers."""
from __future__ import annotations

import os
import struct
from typing import Any, Dict, List, Optional

import numpy as np
import pyarrow as pa
import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tabprep.io.tfrecord import TFRecordSink, encoder as tfe, fixed as tff
from tabprep.schema import ColumnSchema, Schema

I64 = np.iinfo(np.int64)
SETTINGS = settings(max_examples=30, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


# --------------------------------------------------------------------------------------
# references (TF serialization, framing written here)
# --------------------------------------------------------------------------------------
def masked_crc(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def framed(records: List[bytes]) -> bytes:
    out = []
    for rec in records:
        length = struct.pack("<Q", len(rec))
        out += [length, struct.pack("<I", masked_crc(length)), rec, struct.pack("<I", masked_crc(rec))]
    return b"".join(out)


def tf_feature(tf: Any, kind: str, values: list) -> Any:
    if kind == "int64":
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))
    if kind == "float32":
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[v.encode() for v in values]))


def kind_of(typ: pa.DataType) -> str:
    typ = typ.value_type if pa.types.is_list(typ) else typ
    if pa.types.is_floating(typ):
        return "float32"
    return "string" if pa.types.is_string(typ) else "int64"


def tf_examples(tf: Any, table: pa.Table) -> List[bytes]:
    """One deterministic ``tf.train.Example`` per row (map keys sorted, as the table's
    columns are in these tests)."""
    names = table.column_names
    assert names == sorted(names), "deterministic serialization sorts keys: keep columns sorted"
    kinds = {n: kind_of(table.schema.field(n).type) for n in names}
    out = []
    for row in table.to_pylist():
        feats = {n: tf_feature(tf, kinds[n], row[n] if isinstance(row[n], list) else [row[n]]) for n in names}
        out.append(tf.train.Example(features=tf.train.Features(feature=feats)).SerializeToString(deterministic=True))
    return out


def write(path: str, table: pa.Table, chunks: List[int], batch_size: Optional[int] = None) -> Dict[str, int]:
    sink = TFRecordSink(path, Schema.from_arrow(table.schema), batch_size=batch_size)
    pos, k = 0, 0
    while pos < table.num_rows:
        size = chunks[k % len(chunks)]
        sink.write(table.slice(pos, size))
        pos, k = pos + size, k + 1
    return sink.close()


@pytest.fixture(scope="module")
def tf() -> Any:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return pytest.importorskip("tensorflow")


@pytest.fixture
def fast_path_calls(monkeypatch: Any) -> Dict[str, int]:
    """Counts the blocks the template path encoded (and those it declined)."""
    calls = {"fast": 0, "declined": 0}
    real = tfe.encode_fixed

    def spy(cols: Any, n: int) -> Any:
        out = real(cols, n)
        calls["fast" if out is not None else "declined"] += 1
        return out

    monkeypatch.setattr(tfe, "encode_fixed", spy)
    return calls


# --------------------------------------------------------------------------------------
# strategies
# --------------------------------------------------------------------------------------
INT_RANGES = {
    "ids": (0, (1 << 28) - 1),        # the template path's table lookups
    "wide": (0, I64.max),             # up to 9-byte varints
    "any": (int(I64.min), int(I64.max)),  # negatives: 10-byte varints
    "label": (0, 1),
}
KEYS = st.sampled_from(["a", "b1", "c23", "label", "x" * 20, "y" * 117, "z" * 130])


@st.composite
def scalar_tables(draw: Any, max_rows: int = 40) -> pa.Table:
    n = draw(st.integers(1, max_rows))
    keys = sorted(draw(st.sets(KEYS, min_size=1, max_size=5)))
    cols = {}
    for key in keys:
        if draw(st.booleans()):
            lo, hi = INT_RANGES[draw(st.sampled_from(sorted(INT_RANGES)))]
            values = draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n))
            cols[key] = pa.array(values, pa.int64())
        else:
            # NaN only as Python's quiet NaN: TF's FloatList takes Python floats, and a
            # signalling NaN would be quietened on the way (a reference artefact)
            floats = st.one_of(st.floats(width=32, allow_nan=False), st.sampled_from([float("nan"), -0.0]))
            values = draw(st.lists(floats, min_size=n, max_size=n))
            cols[key] = pa.array(np.array(values, dtype=np.float32))
    return pa.table(cols)


@st.composite
def mixed_tables(draw: Any, max_rows: int = 25) -> pa.Table:
    """Lists (empty ones too), strings and scalars: the generic encoder."""
    n = draw(st.integers(1, max_rows))
    cols: Dict[str, Any] = {}
    cols["a_ids"] = pa.array(draw(st.lists(st.lists(st.integers(0, 1 << 40), max_size=4), min_size=n, max_size=n)),
                             pa.list_(pa.int64()))
    cols["b_f"] = pa.array(draw(st.lists(st.lists(st.floats(width=32, allow_nan=False), max_size=4),
                                         min_size=n, max_size=n)), pa.list_(pa.float32()))
    cols["c_s"] = pa.array(draw(st.lists(st.text(max_size=6), min_size=n, max_size=n)))
    cols["d_ls"] = pa.array(draw(st.lists(st.lists(st.text(max_size=3), max_size=3), min_size=n, max_size=n)),
                            pa.list_(pa.string()))
    cols["e_i"] = pa.array(draw(st.lists(st.integers(int(I64.min), int(I64.max)), min_size=n, max_size=n)), pa.int64())
    keep = sorted(draw(st.sets(st.sampled_from(sorted(cols)), min_size=1)))
    return pa.table({k: cols[k] for k in keep})


CHUNKS = st.lists(st.integers(1, 17), min_size=1, max_size=3)


# --------------------------------------------------------------------------------------
# per-example bytes against TF's serialization
# --------------------------------------------------------------------------------------
@SETTINGS
@given(table=scalar_tables(), chunks=CHUNKS, tiny_blocks=st.booleans())
def test_template_path_bytes_equal_tf(tf: Any, tmp_path: Any, monkeypatch: Any, fast_path_calls: Dict[str, int],
                                      table: pa.Table, chunks: List[int], tiny_blocks: bool) -> None:
    """Scalar int64/float32 columns (short and long keys, 1..10-byte varints, NaN/inf/-0):
    the file is exactly TF's records framed here, and the template path wrote it."""
    fast_path_calls.update(fast=0, declined=0)
    path = str(tmp_path / "x.tfrecord")
    with monkeypatch.context() as patch:
        if tiny_blocks:  # several blocks per chunk
            patch.setattr(tfe, "_BLOCK_BYTES", 1000)
        stats = write(path, table, chunks)
    with open(path, "rb") as fh:
        blob = fh.read()
    assert blob == framed(tf_examples(tf, table))
    assert stats["records"] == stats["rows"] == table.num_rows
    # long keys whose header length moves with the varint length go to the generic path
    linear = all(tff._int_header_linear(k.encode())[0] >= 10 for k in table.column_names)
    assert fast_path_calls["fast"] > 0 or not linear
    os.remove(path)


@SETTINGS
@given(table=mixed_tables(), chunks=CHUNKS)
def test_generic_path_bytes_equal_tf(tf: Any, tmp_path: Any, table: pa.Table, chunks: List[int]) -> None:
    """Lists (empty ones too), strings, negative ints: exactly TF's records, framed here."""
    path = str(tmp_path / "x.tfrecord")
    write(path, table, chunks)
    with open(path, "rb") as fh:
        assert fh.read() == framed(tf_examples(tf, table))
    os.remove(path)


@SETTINGS
@given(table=scalar_tables(max_rows=60), chunks=CHUNKS)
def test_template_path_equals_generic_path(tmp_path: Any, monkeypatch: Any, table: pa.Table,
                                           chunks: List[int]) -> None:
    """The two encoders give the same file (no TF needed)."""
    fast, generic = str(tmp_path / "fast.tfrecord"), str(tmp_path / "generic.tfrecord")
    write(fast, table, chunks)
    with monkeypatch.context() as patch:
        patch.setattr(tfe, "encode_fixed", lambda cols, n: None)
        write(generic, table, chunks)
    with open(fast, "rb") as a, open(generic, "rb") as b:
        assert a.read() == b.read()
    os.remove(fast)
    os.remove(generic)


def test_template_path_declines_and_falls_back(tmp_path: Any, fast_path_calls: Dict[str, int]) -> None:
    """List and string columns are not fixed-layout: the generic encoder writes them."""
    table = pa.table({"a": pa.array([[1], [], [2, 3]], pa.list_(pa.int64())), "b": pa.array(["x", "", "yz"])})
    write(str(tmp_path / "x.tfrecord"), table, [3])
    assert fast_path_calls == {"fast": 0, "declined": 1}


def test_template_path_after_other_layouts(tmp_path: Any) -> None:
    """The per-thread scratch of the template path holds one layout's constant bytes:
    switching layouts and block sizes back and forth keeps every file exact."""
    rng = np.random.default_rng(7)
    tables = [pa.table({"a": rng.integers(0, 1 << 20, 50), "b": rng.standard_normal(50).astype(np.float32)}),
              pa.table({"a": rng.integers(-5, 5, 30), "c": rng.integers(0, 1 << 62, 30)}),
              pa.table({"zz": rng.standard_normal(70).astype(np.float32)})]
    expected = []
    for i, table in enumerate(tables):
        write(str(tmp_path / f"ref{i}"), table, [table.num_rows])
        expected.append((tmp_path / f"ref{i}").read_bytes())
    for rep, (i, chunk) in enumerate([(0, 7), (1, 30), (0, 50), (2, 3), (1, 1), (0, 49)]):
        write(str(tmp_path / f"x{rep}"), tables[i], [chunk])
        assert (tmp_path / f"x{rep}").read_bytes() == expected[i]


def large_table(n: int = 6000) -> pa.Table:
    """Big enough that every compaction takes pyarrow's filter (> 64 KiB per block or
    varint stream): ids, labels, floats, full-range int64 and lists of both."""
    rng = np.random.default_rng(11)
    lens = rng.integers(0, 8, n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lens, out=offsets[1:])
    return pa.table({
        "a_label": rng.integers(0, 2, n),
        "b_id": (rng.random(n) ** 3 * (1 << 28)).astype(np.int64),
        "c_f": rng.standard_normal(n).astype(np.float32),
        "d_any": rng.integers(I64.min, I64.max, n, dtype=np.int64, endpoint=True) >> rng.integers(0, 64, n),
        "e_ids": pa.ListArray.from_arrays(pa.array(offsets), pa.array(rng.integers(0, 1 << 28, int(offsets[-1])))),
        "f_any": pa.ListArray.from_arrays(pa.array(offsets), pa.array(rng.integers(I64.min, I64.max, int(offsets[-1]),
                                                                                dtype=np.int64, endpoint=True))),
    })


@pytest.mark.parametrize("with_lists", [False, True], ids=["template", "generic"])
def test_large_blocks_bytes_equal_tf(tf: Any, tmp_path: Any, fast_path_calls: Dict[str, int], with_lists: bool) -> None:
    table = large_table()
    if not with_lists:
        table = table.select(["a_label", "b_id", "c_f", "d_any"])
    path = str(tmp_path / "x.tfrecord")
    write(path, table, [table.num_rows])
    with open(path, "rb") as fh:
        assert fh.read() == framed(tf_examples(tf, table))
    assert (fast_path_calls["fast"] > 0) != with_lists


def test_large_prebatched_records_equal_tf(tf: Any, tmp_path: Any) -> None:
    """Prebatched records of 5000 rows (varint streams of 5000..20000 values): TF's bytes
    of each scalar feature's map entry, TF's parse for the lists (written __values then
    __lengths, an order TF's deterministic serialization does not use)."""
    table = large_table()
    path = str(tmp_path / "x.tfrecord")
    write(path, table, [1700], batch_size=5000)
    scalars = ["a_label", "b_id", "c_f", "d_any"]
    kinds = {n: kind_of(table.schema.field(n).type) for n in table.column_names}
    records = list(tf.compat.v1.io.tf_record_iterator(path))
    assert len(records) == 2  # 5000 rows and a short record of 1000
    for i, record in enumerate(records):
        part = table.slice(i * 5000, 5000)
        example = tf.train.Example.FromString(record).features.feature
        for name in ("e_ids", "f_any"):
            values = part.column(name).to_pylist()
            assert list(example[name + "__lengths"].int64_list.value) == [len(v) for v in values]
            assert list(example[name + "__values"].int64_list.value) == [x for v in values for x in v]
        for name in scalars:  # TF's bytes of the map entry of each scalar feature, verbatim
            entry = tf.train.Features(feature={name: tf_feature(tf, kinds[name], part.column(name).to_pylist())})
            assert entry.SerializeToString() in record


# --------------------------------------------------------------------------------------
# TF's reader and parsers get the input values back
# --------------------------------------------------------------------------------------
@SETTINGS
@given(table=scalar_tables(), chunks=CHUNKS)
def test_tf_parses_template_records(tf: Any, tmp_path: Any, table: pa.Table, chunks: List[int]) -> None:
    path = str(tmp_path / "x.tfrecord")
    write(path, table, chunks)
    spec = {n: tf.io.FixedLenFeature([], tf.float32 if kind_of(table.schema.field(n).type) == "float32" else tf.int64)
            for n in table.column_names}
    records = [r.numpy() for r in tf.data.TFRecordDataset(path)]  # eager: no tracing per example
    parsed = tf.io.parse_example(tf.constant(records), spec)
    for name in table.column_names:
        got = parsed[name].numpy()
        want = table.column(name).to_numpy()
        if got.dtype == np.float32:
            assert got.view(np.uint32).tolist() == want.view(np.uint32).tolist()  # NaN, -0.0
        else:
            assert got.tolist() == want.tolist()
    single = tf.io.parse_single_example(records[-1], spec)
    for name in table.column_names:
        assert single[name].numpy().tobytes() == parsed[name].numpy()[-1:].tobytes()
    os.remove(path)


# --------------------------------------------------------------------------------------
# prebatched records
# --------------------------------------------------------------------------------------
@SETTINGS
@given(table=scalar_tables(max_rows=30), batch=st.integers(1, 12), chunks=CHUNKS)
def test_prebatched_scalars_bytes_equal_tf(tf: Any, tmp_path: Any, table: pa.Table, batch: int,
                                           chunks: List[int]) -> None:
    """One Example per ``batch`` rows, each feature the batch's values: TF's bytes."""
    path = str(tmp_path / "x.tfrecord")
    write(path, table, chunks, batch_size=batch)
    kinds = {n: kind_of(table.schema.field(n).type) for n in table.column_names}
    records = []
    for start in range(0, table.num_rows, batch):
        part = table.slice(start, batch)
        feats = {n: tf_feature(tf, kinds[n], part.column(n).to_pylist()) for n in table.column_names}
        example = tf.train.Example(features=tf.train.Features(feature=feats))
        records.append(example.SerializeToString(deterministic=True))
    with open(path, "rb") as fh:
        assert fh.read() == framed(records)
    os.remove(path)


@SETTINGS
@given(table=mixed_tables(), batch=st.integers(1, 8), chunks=CHUNKS)
def test_prebatched_lists_parse_back(tf: Any, tmp_path: Any, table: pa.Table, batch: int, chunks: List[int]) -> None:
    """Lists become ``x__values`` + ``x__lengths`` (written in that order, which TF's
    deterministic serialization does not use: values are compared after TF parses them)."""
    path = str(tmp_path / "x.tfrecord")
    write(path, table, chunks, batch_size=batch)
    records = list(tf.compat.v1.io.tf_record_iterator(path))  # checks both crcs
    assert len(records) == -(-table.num_rows // batch)
    for i, record in enumerate(records):
        example = tf.train.Example.FromString(record).features.feature
        part = table.slice(i * batch, batch)
        for name in table.column_names:
            typ = table.schema.field(name).type
            values = part.column(name).to_pylist()
            if pa.types.is_list(typ):
                assert list(example[name + "__lengths"].int64_list.value) == [len(v) for v in values]
                flat = [x for v in values for x in v]
                got = feature_values(example[name + "__values"], kind_of(typ))
            else:
                flat, got = values, feature_values(example[name], kind_of(typ))
            assert got == [x.encode() if isinstance(x, str) else x for x in flat]
    os.remove(path)


def feature_values(feature: Any, kind: str) -> list:
    if kind == "int64":
        return list(feature.int64_list.value)
    if kind == "float32":
        return [float(np.float32(v)) for v in feature.float_list.value]
    return list(feature.bytes_list.value)


# --------------------------------------------------------------------------------------
# refusals
# --------------------------------------------------------------------------------------
@SETTINGS
@given(n=st.integers(1, 20), data=st.data(), batch_size=st.sampled_from([None, 3]))
def test_nulls_refused_in_every_layout(tmp_path: Any, n: int, data: Any, batch_size: Optional[int]) -> None:
    """A null anywhere (scalar int/float, list, list element) raises, naming the column
    and its null count; a table without nulls writes."""
    kind = data.draw(st.sampled_from(["int", "float", "list"]))
    nulls = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    if kind == "int":
        column = pa.array([None if z else i for i, z in enumerate(nulls)], pa.int64())
    elif kind == "float":
        column = pa.array([None if z else float(i) for i, z in enumerate(nulls)], pa.float32())
    else:
        column = pa.array([[1, None] if z else [i] for i, z in enumerate(nulls)], pa.list_(pa.int64()))
    table = pa.table({"ok": pa.array(np.arange(n)), "col": column})
    sink = TFRecordSink(str(tmp_path / "x.tfrecord"), Schema.from_arrow(table.schema), batch_size=batch_size)
    if any(nulls):
        what = "list elements" if kind == "list" else "values"
        with pytest.raises(ValueError, match=rf"column 'col' has {sum(nulls)} null {what}"):
            sink.write(table)
        sink.abort()
    else:
        sink.write(table)
        assert sink.close()["rows"] == n


def test_refusals_name_the_column(tmp_path: Any) -> None:
    schema = Schema([ColumnSchema("u", "uint64")])
    with pytest.raises(ValueError, match="column 'u': uint64 values >= 2\\*\\*63"):
        TFRecordSink(str(tmp_path / "a"), schema).write(pa.table({"u": pa.array([1, 2**63], pa.uint64())}))
    with pytest.raises(TypeError, match="column 'f': schema says an integer type"):
        TFRecordSink(str(tmp_path / "b"), Schema([ColumnSchema("f", "int64")])).write(
            pa.table({"f": pa.array([1.5], pa.float32())}))
