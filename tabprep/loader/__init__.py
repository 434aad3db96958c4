"""Online data loaders: parquet chunks transformed by a workflow, batched for training.

* :mod:`tabprep.loader.core`: the framework-neutral :class:`DataLoader` (chunking, shuffling,
  sharding, transform, background prefetch; numpy / cupy batches).
* :mod:`tabprep.loader.tensorflow` (and :mod:`tabprep.loader.keras`, the same for any Keras 3
  backend): ``KerasSequenceLoader`` / ``KerasSequenceValidater``; :mod:`tabprep.loader.layers`:
  ``EmbeddingFeatures``, ``ContinuousFeatures``, ``DotProductInteraction`` (``keras.ops``).
* :mod:`tabprep.loader.torch`: ``TorchAsyncItr`` / ``DLDataLoader`` (PyTorch).
* :mod:`tabprep.loader.jax`: ``JaxLoader`` (JAX).

Framework modules are imported on demand, never by this package.
"""
from .core import DataLoader, RaggedBatch

__all__ = ["DataLoader", "RaggedBatch"]
