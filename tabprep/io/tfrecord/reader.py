"""Reading TFRecords written by tabprep with ``tf.data`` (needs TensorFlow): the feature
specs of :func:`tf.io.parse_example` and :func:`read_tfrecord`."""
from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence, Union

from ..._frameworks import preload_triton
from ...schema import Schema
from .spec import LENGTHS_SUFFIX, VALUES_SUFFIX, _check_batch_size, load_spec, spec_for

# --------------------------------------------------------------------------------------
# reading (needs TensorFlow)
# --------------------------------------------------------------------------------------
def _tf() -> Any:
    preload_triton()   # PyTorch's triton before TensorFlow's LLVM (tabprep._frameworks)
    try:
        import tensorflow as tf
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("reading TFRecords needs TensorFlow: pip install 'tabprep[tf]'") from err
    return tf


def _tf_dtype(tf: Any, name: str) -> Any:
    return {"int64": tf.int64, "float32": tf.float32, "string": tf.string}[name]


def _features_of(schema_or_spec: Union[Schema, Dict[str, Any]]) -> List[Dict[str, Any]]:
    if isinstance(schema_or_spec, Schema):
        return spec_for(schema_or_spec)["features"]
    return schema_or_spec["features"]


def feature_spec(schema: Union[Schema, Dict[str, Any]], batch_size: Optional[int] = None,
                 drop_last: bool = False) -> Dict[str, Any]:
    """The ``tf.io`` parse spec of records written for ``schema``, for your own pipelines.

    Args:
        schema: the written schema (or a loaded spec dict).
        batch_size: None for per-example records, else the prebatched record size.
        drop_last: prebatched only: True if the files were written with drop_last, so
            every record holds exactly ``batch_size`` rows and scalars can use a static
            ``FixedLenFeature([batch_size])``.

    Returns:
        ``{column name: feature}``. Per-example (use with ``tf.io.parse_example`` on a
        batch of serialized records): scalars ``FixedLenFeature([], dtype)``, lists
        ``RaggedFeature(dtype)`` (ragged ``[batch, None]``). Prebatched (use with
        ``tf.io.parse_single_example`` on one record): scalars
        ``FixedLenSequenceFeature([], dtype, allow_missing=True)`` giving ``[rows]``
        (accepts the short last record), or ``FixedLenFeature([batch_size])`` when
        ``drop_last``; lists ``RaggedFeature(value_key="<name>__values",
        partitions=[RowLengths("<name>__lengths")])`` giving ragged ``[rows, None]``.
        dtypes are ``tf.int64``, ``tf.float32`` or ``tf.string``.
    """
    tf = _tf()
    batch_size = _check_batch_size(batch_size)
    out: Dict[str, Any] = {}
    for feat in _features_of(schema):
        dtype = _tf_dtype(tf, feat["dtype"])
        name = feat["name"]
        if batch_size is None:
            if feat["is_list"]:
                out[name] = tf.io.RaggedFeature(dtype=dtype, value_key=name, row_splits_dtype=tf.int64)
            else:
                out[name] = tf.io.FixedLenFeature([], dtype)
        elif feat["is_list"]:
            out[name] = tf.io.RaggedFeature(
                dtype=dtype, value_key=name + VALUES_SUFFIX, row_splits_dtype=tf.int64,
                partitions=[tf.io.RaggedFeature.RowLengths(name + LENGTHS_SUFFIX)])
        elif drop_last:
            out[name] = tf.io.FixedLenFeature([batch_size], dtype)
        else:
            out[name] = tf.io.FixedLenSequenceFeature([], dtype, allow_missing=True)
    return out


def _prebatched_parser(tf: Any, features: List[Dict[str, Any]]) -> Any:
    """Parse a vector of prebatched records into one batch (records' rows concatenated)."""
    spec: Dict[str, Any] = {}
    for feat in features:
        dtype = _tf_dtype(tf, feat["dtype"])
        name = feat["name"]
        if feat["is_list"]:
            spec[name] = tf.io.RaggedFeature(dtype=dtype, value_key=name + VALUES_SUFFIX, row_splits_dtype=tf.int64,
                                             partitions=[tf.io.RaggedFeature.RowLengths(name + LENGTHS_SUFFIX)])
        else:
            spec[name] = tf.io.RaggedFeature(dtype=dtype, value_key=name, row_splits_dtype=tf.int64)

    def parse(records: Any) -> Dict[str, Any]:
        parsed = tf.io.parse_example(records, spec)
        out = {}
        for name, value in parsed.items():
            # [records, rows(, values)] -> [rows(, values)]: dense for scalars, ragged
            # (rebuilt from __values/__lengths by the RowLengths partition) for lists
            out[name] = value.values
        return out

    return parse


def read_tfrecord(path: str, batch_size: Optional[int] = None, shuffle: bool = False,
                  num_parallel_reads: Optional[int] = None, *, columns: Optional[Sequence[str]] = None,
                  shuffle_buffer: Optional[int] = None, seed: Optional[int] = None,
                  drop_remainder: bool = False, deterministic: Optional[bool] = None) -> Any:
    """Read TFRecords written by :class:`TFRecordSink` as a ``tf.data.Dataset`` of dicts.

    Args:
        path: one output folder (with ``tfrecord_spec.json``, e.g. one worker's shard)
            or a top folder whose subfolders each hold one (all shards are read).
        batch_size: rows per element; every element but the last holds exactly
            ``batch_size`` rows. None: per-example files yield single rows (scalars
            ``[]``, lists 1-D); prebatched files yield one element per record (the
            written batch; a file's last record may be short). Per-example: records are
            batched, then parsed with one vectorized ``tf.io.parse_example`` per batch.
            Prebatched, ``batch_size`` a multiple ``m`` of the written size (the fast
            path): groups of ``m`` full records are parsed together and passed on
            without copying; the leftover full records and the files' short last
            records are read last (skipping to them, not re-reading) and rebatched.
            Prebatched, any other size: every row is rebatched (``Dataset.rebatch``,
            one extra copy, about half the speed).
        shuffle: shuffle file order each epoch and records within a buffer
            (prebatched: whole batches are shuffled, rows inside a record are not; on
            the fast path the rebatched tail still comes last).
        num_parallel_reads: files read concurrently (interleaved); default
            ``tf.data.AUTOTUNE``.
        columns: read only these columns (others are skipped by the parser).
        shuffle_buffer: records in the shuffle buffer; default 10_000 per-example,
            16 prebatched. Ignored unless ``shuffle``.
        seed: shuffle seed.
        drop_remainder: drop a final batch smaller than ``batch_size``.
        deterministic: element order is deterministic; default ``not shuffle``.

    Returns:
        A dataset of ``{column: tensor}``: ``tf.int64`` / ``tf.float32`` / ``tf.string``
        dense tensors ``[batch]`` for scalar columns and ``tf.RaggedTensor``
        ``[batch, None]`` for list columns (per-example, ``batch_size=None``: rows).

    Raises:
        FileNotFoundError / ValueError: see :func:`load_spec`; unknown ``columns``.
    """
    tf = _tf()
    spec = load_spec(path)
    batch_size = _check_batch_size(batch_size)
    autotune = tf.data.AUTOTUNE
    num_parallel_reads = autotune if num_parallel_reads is None else num_parallel_reads
    deterministic = (not shuffle) if deterministic is None else deterministic
    features = spec["features"]
    if columns is not None:
        by_name = {f["name"]: f for f in features}
        unknown = [c for c in columns if c not in by_name]
        if unknown:
            raise ValueError(f"columns {unknown} are not in the TFRecord spec; it has {list(by_name)}")
        features = [by_name[c] for c in columns]
    entries = [f for f in spec["files"] if int(f["records"]) > 0]
    compression = spec.get("compression") or ""
    prebatched = spec["layout"] == "prebatched"
    written = int(spec["batch_size"]) if prebatched else 0
    # prebatched + a multiple of the written size: the bulk is read as whole groups of
    # full records (no copy) and only the tail (leftover full records and the short
    # last record of each file) is rebatched
    split_tail = prebatched and batch_size is not None and batch_size % written == 0
    group = (batch_size // written) if split_tail else 1
    take = [int(f["rows"]) // written if split_tail else int(f["records"]) for f in entries]
    if split_tail:
        leftover = sum(take) % group
        for i in range(len(take) - 1, -1, -1):  # leftover full records come from the last files
            cut = min(leftover, take[i])
            take[i] -= cut
            leftover -= cut
    main_files = [(f["path"], k) for f, k in zip(entries, take) if k > 0]
    tail_files = [(f["path"], k) for f, k in zip(entries, take) if int(f["records"]) > k]

    def open_file(path_: Any, count: Any) -> Any:
        return tf.data.TFRecordDataset(path_, compression_type=compression).take(count)

    files_ds = tf.data.Dataset.from_tensor_slices((
        tf.constant([p for p, _ in main_files], dtype=tf.string),
        tf.constant([k for _, k in main_files], dtype=tf.int64)))
    if shuffle and len(main_files) > 1:
        files_ds = files_ds.shuffle(len(main_files), seed=seed, reshuffle_each_iteration=True)
    cycle = None if num_parallel_reads == autotune else max(1, min(int(num_parallel_reads), max(1, len(main_files))))
    records = files_ds.interleave(open_file, cycle_length=cycle, block_length=1,
                                  num_parallel_calls=num_parallel_reads, deterministic=deterministic)
    if shuffle:
        buf = shuffle_buffer if shuffle_buffer is not None else (16 if prebatched else 10_000)
        if buf > 1:
            records = records.shuffle(buf, seed=seed, reshuffle_each_iteration=True)
    if not prebatched:
        parse_spec = feature_spec({"features": features})
        parse = lambda rec: tf.io.parse_example(rec, parse_spec)  # noqa: E731
        ds = records.batch(batch_size or 1024, drop_remainder=drop_remainder and batch_size is not None)
        ds = ds.map(parse, num_parallel_calls=autotune, deterministic=deterministic)
        if batch_size is None:
            ds = ds.unbatch()
        return ds.prefetch(autotune)
    parse = _prebatched_parser(tf, features)
    if batch_size is None:
        ds = records.batch(1).map(parse, num_parallel_calls=autotune, deterministic=deterministic)
    elif not split_tail:
        # any other size: parse records and rebatch every row to exact sizes (copies)
        ds = records.batch(max(1, batch_size // written)).map(parse, num_parallel_calls=autotune,
                                                                 deterministic=deterministic)
        ds = ds.rebatch(batch_size, drop_remainder=drop_remainder)
    else:
        ds = records.batch(group, drop_remainder=True).map(parse, num_parallel_calls=autotune,
                                                           deterministic=deterministic)
        if tail_files:
            tail = tf.data.Dataset.from_tensor_slices((
                tf.constant([p for p, _ in tail_files], dtype=tf.string),
                tf.constant([k for _, k in tail_files], dtype=tf.int64)))
            tail = tail.flat_map(lambda p, k: tf.data.TFRecordDataset(p, compression_type=compression).skip(k))
            tail = tail.batch(group).map(parse).rebatch(batch_size, drop_remainder=drop_remainder)
            ds = ds.concatenate(tail)
    return ds.prefetch(autotune)
