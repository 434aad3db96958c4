"""Online data loaders: parquet chunks transformed by a workflow, batched for training.

* :mod:`tabprep.loader.core`: the framework-neutral :class:`DataLoader` (chunking, shuffling,
  sharding, transform, background prefetch; numpy / cupy batches).
* :mod:`tabprep.loader.tensorflow`: ``KerasSequenceLoader`` / ``KerasSequenceValidater`` and
  Keras layers (imports TensorFlow).
"""
from .core import DataLoader, RaggedBatch

__all__ = ["DataLoader", "RaggedBatch"]
