"""Keras layers for the loader's batches: embeddings from the workflow's schema.

They replace the deprecated ``tf.feature_column`` + ``DenseFeatures`` path of NVTabular's
Keras examples. Use them as ``tabprep.loader.tensorflow.layers`` (TensorFlow backend).

>>> from tabprep.loader.tensorflow import layers
>>> inputs = train.keras_inputs()
>>> emb = layers.EmbeddingFeatures.from_schema(wf.output_schema, combiner="mean")(inputs)
>>> dense = layers.ContinuousFeatures(train.cont_names)(inputs)

Multi-hot columns are accepted in the three layouts the loader emits: ``<name>__values`` /
``<name>__nnzs`` entries, a ``tf.RaggedTensor`` under ``<name>``, or a dense padded
``(batch, max_len)`` tensor under ``<name>`` in which id 0 is padding (Categorify's padding id).
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, Mapping, Optional, Sequence, Tuple, Union

import keras
import tensorflow as tf

from ..ops.embeddings import embedding_dim_rule
from ..schema import Schema, Tags

_COMBINERS = ("mean", "sum")
_AGGREGATIONS = ("concat", "stack")


class EmbeddingFeatures(keras.layers.Layer):
    """One embedding table per categorical column; single- and multi-hot inputs.

    Args:
        embedding_sizes: ``{column: (cardinality, dim)}``, e.g. from
            :func:`tabprep.get_embedding_sizes`.
        multi_hot: names of the multi-hot (list) columns among them.
        combiner: how the embeddings of one row's values are reduced for multi-hot columns:
            ``"mean"`` (default; an empty row gives zeros) or ``"sum"``; or a dict per column.
        aggregation: ``"concat"`` (default): output ``(batch, sum of dims)``; ``"stack"``:
            output ``(batch, columns, dim)`` (all dims must be equal).
        embeddings_initializer / embeddings_regularizer: passed to each ``keras.layers.Embedding``.

    Output columns are in the order of ``embedding_sizes``.
    """

    def __init__(self, embedding_sizes: Mapping[str, Tuple[int, int]], multi_hot: Iterable[str] = (),
                 combiner: Union[str, Mapping[str, str]] = "mean", aggregation: str = "concat",
                 embeddings_initializer: Any = "uniform", embeddings_regularizer: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not embedding_sizes:
            raise ValueError("embedding_sizes is empty: no categorical column to embed")
        if aggregation not in _AGGREGATIONS:
            raise ValueError(f"aggregation must be one of {_AGGREGATIONS}, got {aggregation!r}")
        self.embedding_sizes = {str(k): (int(v[0]), int(v[1])) for k, v in embedding_sizes.items()}
        self.multi_hot = [c for c in multi_hot if c in self.embedding_sizes]
        unknown = set(multi_hot) - set(self.embedding_sizes)
        if unknown:
            raise ValueError(f"multi_hot columns {sorted(unknown)} have no embedding size")
        self.combiner = dict(combiner) if isinstance(combiner, Mapping) else combiner
        for c in self.embedding_sizes:
            comb = self._combiner(c)
            if comb not in _COMBINERS:
                raise ValueError(f"combiner of {c!r} must be one of {_COMBINERS}, got {comb!r}")
        dims = {d for _, d in self.embedding_sizes.values()}
        if aggregation == "stack" and len(dims) > 1:
            raise ValueError(f"aggregation='stack' needs one embedding dim for all columns, got {sorted(dims)}; "
                             f"pass dim= to from_schema or use aggregation='concat'")
        self.aggregation = aggregation
        self.embeddings_initializer = embeddings_initializer
        self.embeddings_regularizer = embeddings_regularizer
        self.tables = {name: keras.layers.Embedding(card, dim, embeddings_initializer=embeddings_initializer,
                                                    embeddings_regularizer=embeddings_regularizer,
                                                    name=f"embedding_{name}")
                       for name, (card, dim) in self.embedding_sizes.items()}

    @classmethod
    def from_schema(cls, schema: Any, columns: Optional[Sequence[str]] = None, dim: Optional[int] = None,
                    combiner: Union[str, Mapping[str, str]] = "mean", aggregation: str = "concat",
                    **kwargs: Any) -> "EmbeddingFeatures":
        """Build from a fitted workflow's (or a dataset's) schema.

        Args:
            schema: a :class:`tabprep.Schema`, or a fitted :class:`tabprep.Workflow` (its
                ``output_schema``).
            columns: categorical columns to embed (default: every column tagged categorical
                with a cardinality).
            dim: one embedding dim for all (default: the schema's ``embedding_dim`` property,
                else :func:`tabprep.ops.embeddings.embedding_dim_rule`).
        """
        sch: Schema = schema if isinstance(schema, Schema) else schema.output_schema
        names = list(columns) if columns is not None else [c.name for c in sch if Tags.CATEGORICAL in c.tags
                                                             and c.cardinality is not None]
        sizes: Dict[str, Tuple[int, int]] = {}
        for n in names:
            col = sch[n]
            if col.cardinality is None:
                raise ValueError(f"column {n!r} has no cardinality in the schema; is the workflow fitted?")
            d = dim if dim is not None else col.properties.get("embedding_dim") or embedding_dim_rule(col.cardinality)
            sizes[n] = (col.cardinality, int(d))
        multi = [n for n in names if sch[n].is_list]
        return cls(sizes, multi_hot=multi, combiner=combiner, aggregation=aggregation, **kwargs)

    def _combiner(self, name: str) -> str:
        if isinstance(self.combiner, dict):
            return self.combiner.get(name, "mean")
        return self.combiner

    def build(self, input_shape: Any = None) -> None:
        for name, table in self.tables.items():
            if not table.built:
                table.build((None,))
        self.built = True

    def _embed_one(self, name: str, inputs: Mapping[str, Any]) -> tf.Tensor:
        table = self.tables[name]
        dim = self.embedding_sizes[name][1]
        comb = self._combiner(name)
        if name + "__values" in inputs:
            values = tf.reshape(inputs[name + "__values"], [-1])
            lengths = tf.cast(tf.reshape(inputs[name + "__nnzs"], [-1]), tf.int64)
            rows = tf.repeat(tf.range(tf.shape(lengths, out_type=tf.int64)[0]), lengths)
            return self._segment(table(values), rows, lengths, comb, dim)
        if name not in inputs:
            raise KeyError(f"EmbeddingFeatures: no input {name!r} (nor {name}__values / {name}__nnzs); "
                           f"inputs are {sorted(inputs)}")
        x = inputs[name]
        if isinstance(x, tf.RaggedTensor):
            lengths = tf.cast(x.row_lengths(), tf.int64)
            return self._segment(table(x.flat_values), x.value_rowids(), lengths, comb, dim)
        if name in self.multi_hot and len(x.shape) == 2:
            # dense padded: id 0 is padding
            emb = table(x)
            mask = tf.cast(tf.not_equal(x, 0), emb.dtype)[..., None]
            total = tf.reduce_sum(emb * mask, axis=1)
            if comb == "sum":
                return total
            return total / tf.maximum(tf.reduce_sum(mask, axis=1), 1.0)
        ids = tf.reshape(x, [-1])
        emb = table(ids)
        return emb

    @staticmethod
    def _segment(emb: tf.Tensor, rows: tf.Tensor, lengths: tf.Tensor, comb: str, dim: int) -> tf.Tensor:
        n = tf.shape(lengths, out_type=tf.int64)[0]
        total = tf.math.unsorted_segment_sum(emb, rows, num_segments=n)
        if comb == "sum":
            return total
        counts = tf.maximum(tf.cast(lengths, emb.dtype), 1.0)[:, None]
        return total / counts

    def call(self, inputs: Mapping[str, Any]) -> tf.Tensor:
        outs = [self._embed_one(name, inputs) for name in self.embedding_sizes]
        if self.aggregation == "stack":
            return tf.stack(outs, axis=1)
        return tf.concat(outs, axis=1)

    def compute_output_shape(self, input_shape: Any) -> Tuple[Optional[int], ...]:
        dims = [d for _, d in self.embedding_sizes.values()]
        if self.aggregation == "stack":
            return (None, len(dims), dims[0])
        return (None, sum(dims))

    def get_config(self) -> Dict[str, Any]:
        cfg = super().get_config()
        cfg.update({"embedding_sizes": {k: list(v) for k, v in self.embedding_sizes.items()},
                    "multi_hot": list(self.multi_hot), "combiner": self.combiner, "aggregation": self.aggregation,
                    "embeddings_initializer": keras.initializers.serialize(
                        keras.initializers.get(self.embeddings_initializer)),
                    "embeddings_regularizer": keras.regularizers.serialize(self.embeddings_regularizer)
                    if self.embeddings_regularizer is not None else None})
        return cfg

    @classmethod
    def from_config(cls, config: Dict[str, Any]) -> "EmbeddingFeatures":
        config = dict(config)
        config["embedding_sizes"] = {k: tuple(v) for k, v in config["embedding_sizes"].items()}
        return cls(**config)


class ContinuousFeatures(keras.layers.Layer):
    """Concatenates continuous inputs (each ``(batch, 1)`` or ``(batch, k)``) into one float32
    ``(batch, total)`` tensor, in the order of ``columns``."""

    def __init__(self, columns: Sequence[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not columns:
            raise ValueError("ContinuousFeatures needs at least one column")
        self.columns = list(columns)

    def call(self, inputs: Mapping[str, Any]) -> tf.Tensor:
        parts = []
        for name in self.columns:
            x = tf.cast(inputs[name], tf.float32)
            parts.append(tf.reshape(x, [tf.shape(x)[0], -1]))
        return tf.concat(parts, axis=1)

    def compute_output_shape(self, input_shape: Any) -> Tuple[Optional[int], ...]:
        if isinstance(input_shape, Mapping):
            total = 0
            for name in self.columns:
                shape = input_shape[name]
                k = 1
                for d in list(shape)[1:]:
                    if d is None:
                        return (None, None)
                    k *= int(d)
                total += k
            return (None, total)
        return (None, None)

    def get_config(self) -> Dict[str, Any]:
        cfg = super().get_config()
        cfg["columns"] = list(self.columns)
        return cfg


__all__ = ["EmbeddingFeatures", "ContinuousFeatures"]
