"""Keras 3 entry point of the loader, for any Keras backend (``KERAS_BACKEND`` = tensorflow, jax
or torch): the same objects as :mod:`tabprep.loader.tensorflow`, under a name that does not
suggest TensorFlow. TensorFlow is imported only on its own backend.

>>> import os; os.environ["KERAS_BACKEND"] = "jax"          # before keras is imported
>>> from tabprep.loader.keras import KerasSequenceLoader, KerasSequenceValidater, layers
"""
from .tensorflow import BACKEND, KerasSequenceLoader, KerasSequenceValidater, layers

__all__ = ["BACKEND", "KerasSequenceLoader", "KerasSequenceValidater", "layers"]
