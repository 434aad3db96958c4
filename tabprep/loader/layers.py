"""Keras 3 layers for the loader's batches, on any Keras backend (TensorFlow, JAX, PyTorch).

They replace the deprecated ``tf.feature_column`` + ``DenseFeatures`` path of NVTabular's
Keras examples and are written with ``keras.ops`` only (a ``tf.RaggedTensor`` input is
accepted on the TensorFlow backend). All three are registered Keras serializables (package
``tabprep``): a saved ``.keras`` model reloads with ``keras.saving.load_model(path)`` and no
``custom_objects``, once ``tabprep.loader.layers`` is imported.

>>> from tabprep.loader import layers
>>> inputs = train.keras_inputs()
>>> emb = layers.EmbeddingFeatures.from_schema(wf.output_schema, combiner="mean")(inputs)
>>> dense = layers.ContinuousFeatures(train.cont_names)(inputs)

Multi-hot columns are accepted in the layouts the loaders emit: ``<name>__values`` /
``<name>__nnzs`` entries, a ``(values, nnzs)`` tuple under ``<name>`` (NVTabular's layout), a
``tf.RaggedTensor`` under ``<name>``, or a dense padded ``(batch, max_len)`` tensor under
``<name>`` in which id 0 is padding (Categorify's padding id).
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, Mapping, Optional, Sequence, Tuple, Union

from .._frameworks import preload_triton

preload_triton()   # before Keras imports TensorFlow: see tabprep._frameworks

import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import ops  # noqa: E402

from ..ops.embeddings import embedding_dim_rule  # noqa: E402
from ..schema import Schema, Tags

_COMBINERS = ("mean", "sum")
_AGGREGATIONS = ("concat", "stack")
_INTERACTION_TYPES = (None, "field_all", "field_each")
_register = keras.saving.register_keras_serializable(package="tabprep")


def _is_tf_ragged(x: Any) -> bool:
    return type(x).__name__ == "RaggedTensor" and keras.backend.backend() == "tensorflow"


@_register
class EmbeddingFeatures(keras.layers.Layer):
    """One embedding table per categorical column; single- and multi-hot inputs.

    Args:
        embedding_sizes: ``{column: (cardinality, dim)}``, e.g. from
            :func:`tabprep.get_embedding_sizes`.
        multi_hot: names of the multi-hot (list) columns among them.
        combiner: how the embeddings of one row's values are reduced for multi-hot columns:
            ``"mean"`` (default; an empty row gives zeros) or ``"sum"``; or a dict per column.
        aggregation: ``"concat"`` (default): output ``(batch, sum of dims)``; ``"stack"``:
            output ``(batch, columns, dim)`` (all dims must be equal), as DLRM's interaction needs.
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
        multi_hot = list(multi_hot)
        unknown = set(multi_hot) - set(self.embedding_sizes)
        if unknown:
            raise ValueError(f"multi_hot columns {sorted(unknown)} have no embedding size")
        self.multi_hot = [c for c in multi_hot if c in self.embedding_sizes]
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
        for table in self.tables.values():
            if not table.built:
                table.build((None,))
        self.built = True

    def _embed_one(self, name: str, inputs: Mapping[str, Any]) -> Any:
        table = self.tables[name]
        comb = self._combiner(name)
        if name + "__values" in inputs:
            return self._bag(table, inputs[name + "__values"], inputs[name + "__nnzs"], comb)
        if name not in inputs:
            raise KeyError(f"EmbeddingFeatures: no input {name!r} (nor {name}__values / {name}__nnzs); "
                           f"inputs are {sorted(inputs)}")
        x = inputs[name]
        if isinstance(x, (tuple, list)):
            if len(x) != 2:
                raise ValueError(f"EmbeddingFeatures: input {name!r} is a sequence of {len(x)}; a multi-hot input "
                                 f"tuple is (values, nnzs)")
            return self._bag(table, x[0], x[1], comb)
        if _is_tf_ragged(x):
            return self._bag(table, x.flat_values, x.row_lengths(), comb)
        if name in self.multi_hot and len(x.shape) == 2:
            # dense padded: id 0 is padding
            emb = table(x)
            mask = ops.cast(ops.not_equal(x, 0), emb.dtype)[..., None]
            total = ops.sum(emb * mask, axis=1)
            if comb == "sum":
                return total
            return total / ops.maximum(ops.sum(mask, axis=1), 1.0)
        return table(ops.reshape(x, (-1,)))

    @staticmethod
    def _bag(table: Any, values: Any, nnzs: Any, comb: str) -> Any:
        """Sum / mean of the embeddings of each row's values (flat values, counts per row)."""
        values = ops.reshape(values, (-1,))
        lengths = ops.cast(ops.reshape(nnzs, (-1,)), "int32")
        ends = ops.cumsum(lengths)
        # row of each value: rows ending at or before value i lie before it
        rows = ops.searchsorted(ends, ops.arange(ops.shape(values)[0], dtype="int32"), side="right")
        emb = table(values)
        total = ops.segment_sum(emb, rows, num_segments=ops.shape(lengths)[0])
        if comb == "sum":
            return total
        return total / ops.maximum(ops.cast(lengths, emb.dtype), 1.0)[:, None]

    def call(self, inputs: Mapping[str, Any]) -> Any:
        outs = [self._embed_one(name, inputs) for name in self.embedding_sizes]
        if self.aggregation == "stack":
            return ops.stack(outs, axis=1)
        return ops.concatenate(outs, axis=1)

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


@_register
class ContinuousFeatures(keras.layers.Layer):
    """Concatenates continuous inputs (each ``(batch,)``, ``(batch, 1)`` or ``(batch, k...)``)
    into one float32 ``(batch, total)`` tensor, in the order of ``columns``.

    The width ``total`` is static whenever the inputs' widths are (also when the layer is
    called inside another layer's ``call``), so Dense layers after it can be built.
    """

    def __init__(self, columns: Sequence[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not columns:
            raise ValueError("ContinuousFeatures needs at least one column")
        self.columns = list(columns)

    def call(self, inputs: Mapping[str, Any]) -> Any:
        parts = []
        for name in self.columns:
            if name not in inputs:
                raise KeyError(f"ContinuousFeatures: no input {name!r}; inputs are {sorted(inputs)}")
            x = ops.cast(inputs[name], "float32")
            shape = tuple(x.shape)
            if len(shape) == 1:
                x = ops.expand_dims(x, -1)
            elif len(shape) > 2:
                width = int(np.prod(shape[1:])) if all(d is not None for d in shape[1:]) else -1
                x = ops.reshape(x, (-1, width))
            parts.append(x)
        return parts[0] if len(parts) == 1 else ops.concatenate(parts, axis=1)

    def compute_output_shape(self, input_shape: Any) -> Tuple[Optional[int], ...]:
        if isinstance(input_shape, Mapping):
            total = 0
            for name in self.columns:
                shape = list(input_shape[name])
                k = 1
                for d in shape[1:]:
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


@_register
class DotProductInteraction(keras.layers.Layer):
    """DLRM's pairwise dot-product interaction (as NVTabular's layer of the same name).

    Maps ``(batch, features, dim)`` to ``(batch, features * (features - 1) // 2)``: the dot
    product of every pair ``i < j``, in row-major order of the upper triangle. With
    ``self_interaction=True`` the pairs ``i <= j`` (``features * (features + 1) // 2`` entries).

    Args:
        interaction_type: ``None`` (plain dot products, DLRM / FM), ``"field_all"`` (one
            learned ``(dim, dim)`` bilinear kernel, ``v_i W . v_j``) or ``"field_each"`` (one
            kernel per field), FiBiNet's bilinear forms with a dot product.
        self_interaction: also the dot product of each feature with itself.

    Note: NVTabular's layer documents ``features ** 2`` outputs with ``self_interaction`` but
    returns the upper triangle with the diagonal; this layer returns (and documents) the latter.
    Its ``"field_interaction"`` type is not provided.
    """

    def __init__(self, interaction_type: Optional[str] = None, self_interaction: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if interaction_type not in _INTERACTION_TYPES:
            raise ValueError(f"interaction_type must be one of {_INTERACTION_TYPES}, got {interaction_type!r}")
        self.interaction_type = interaction_type
        self.self_interaction = bool(self_interaction)

    def build(self, input_shape: Any) -> None:
        if len(input_shape) != 3 or input_shape[1] is None or input_shape[2] is None:
            raise ValueError(f"DotProductInteraction needs (batch, features, dim) with known features and dim, got "
                             f"{tuple(input_shape)}: stack the embeddings (EmbeddingFeatures(aggregation='stack'))")
        f, d = int(input_shape[1]), int(input_shape[2])
        rows, cols = np.triu_indices(f, k=0 if self.self_interaction else 1)
        self._pairs = (rows * f + cols).astype("int32")
        self._features = f
        if self.interaction_type == "field_all":
            self.kernel = self.add_weight(name="bilinear_interaction_kernel", shape=(d, d),
                                          initializer="glorot_normal")
        elif self.interaction_type == "field_each":
            self.kernel = self.add_weight(name="bilinear_interaction_kernel", shape=(f, d, d),
                                          initializer="glorot_normal")
        self.built = True

    def call(self, value: Any) -> Any:
        if self.interaction_type == "field_all":
            left = ops.matmul(value, self.kernel)
        elif self.interaction_type == "field_each":
            left = ops.einsum("bfk,fkj->bfj", value, self.kernel)
        else:
            left = value
        dots = ops.matmul(left, ops.transpose(value, (0, 2, 1)))              # (batch, f, f)
        flat = ops.reshape(dots, (-1, self._features * self._features))
        return ops.take(flat, self._pairs, axis=1)

    def compute_output_shape(self, input_shape: Any) -> Tuple[Optional[int], ...]:
        f = input_shape[1]
        n = f * (f + 1) // 2 if self.self_interaction else f * (f - 1) // 2
        return (input_shape[0], n)

    def get_config(self) -> Dict[str, Any]:
        cfg = super().get_config()
        cfg.update({"interaction_type": self.interaction_type, "self_interaction": self.self_interaction})
        return cfg


__all__ = ["EmbeddingFeatures", "ContinuousFeatures", "DotProductInteraction"]
