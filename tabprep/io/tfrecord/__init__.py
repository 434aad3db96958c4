"""TFRecord output: ``tf.train.Example`` records written without TensorFlow, and readers.

Two layouts are supported:

* **per-example** (``batch_size=None``): one ``tf.train.Example`` per row. Scalar
  columns become one-value lists, list (multi-hot) columns variable-length lists.
* **prebatched** (``batch_size=B``): one ``tf.train.Example`` per batch of ``B`` rows.
  A scalar column ``x`` becomes one feature ``x`` holding the ``B`` values; a list
  column ``x`` becomes two features, ``x__values`` (the flat values of the ``B`` rows)
  and ``x__lengths`` (``B`` int64 row lengths), so the batch is rebuilt with
  ``tf.RaggedTensor.from_row_lengths`` (or ``tf.sparse``). The last record of a file
  holds the ``n_rows % B`` remaining rows (a *short* record) unless ``drop_last=True``,
  which drops those rows instead. Prebatched records are ~5x smaller than
  per-example ones (feature names are not repeated per row) and parse much faster.

Type mapping (schema dtype -> feature list): integers and bool -> ``int64_list``
(bool as 0/1; ``uint64`` values >= 2**63 are rejected), floats -> ``float_list``
(float32: float64 values are rounded to float32; finite ones beyond float32's range, which would
become inf, are rejected naming the column and file), ``str``/binary -> ``bytes_list``
(UTF-8 bytes). Readers return ``tf.int64``, ``tf.float32`` and ``tf.string``.

Nulls: a ``tf.train.Example`` cannot express a missing value that
``tf.io.FixedLenFeature`` would accept, so any null (a null scalar, a null list, or
a null inside a list) raises :class:`ValueError` naming the column; fill them before
writing (``FillMissing`` for continuous columns, ``Categorify`` for categorical ones).
NaN floats are values, not nulls, and are written as NaN. Empty lists are allowed.

Files use the standard TFRecord framing (uint64 length, masked crc32c of the length,
data, masked crc32c of the data) around standard ``tf.train.Example`` protobuf
bytes, optionally inside a GZIP or ZLIB stream (TF's ``TFRecordOptions`` names), so
``tf.data.TFRecordDataset`` + ``tf.io.parse_example`` read them. Encoding is
vectorized with numpy and pyarrow (no TensorFlow, no per-row protobuf objects): the
only per-row Python work is one ``crc32c`` call per record. Per-example records of
scalar int/float columns are filled into one byte template per block of rows
(``benchmarks/tfrecord.py``: ~0.5M Criteo-like rows/s on one core of the 2-core
development machine, ~100x a ``tf.train.Example`` + ``TFRecordWriter`` loop).

Every output folder gets a ``tfrecord_spec.json`` (see :func:`spec_for` and
:func:`write_spec`), written last and atomically; :func:`read_tfrecord` uses it.

Modules: :mod:`.spec` (layout and ``tfrecord_spec.json``), :mod:`.encoder` (vectorized
protobuf encoding), :mod:`.fixed` (its byte-template path for scalar int/float records),
:mod:`.wire` (varints, masked crc32c), :mod:`.sink` (:class:`TFRecordSink`, the
TensorFlow-free writer of one file) and :mod:`.reader` (``tf.data`` readers, need
TensorFlow). Their public names are
re-exported here.
"""
from .reader import feature_spec, read_tfrecord
from .sink import TFRecordSink
from .spec import LENGTHS_SUFFIX, SPEC_FILE, SPEC_VERSION, VALUES_SUFFIX, load_spec, spec_for, write_spec

__all__ = [
    "SPEC_FILE",
    "TFRecordSink",
    "feature_spec",
    "load_spec",
    "read_tfrecord",
    "spec_for",
    "write_spec",
]
