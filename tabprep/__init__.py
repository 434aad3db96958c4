"""tabprep: tabular data preparation for deep learning and recommender systems.

>>> import tabprep as tp
>>> from tabprep import ops
>>> wf = tp.Workflow((["C1"] >> ops.Categorify()) + ["label"])
"""
from ._version import __version__
from . import ops  # noqa: E402
from .io.commit import Transaction  # noqa: E402
from .io.dataset import Dataset  # noqa: E402
from .ops.embeddings import get_embedding_sizes  # noqa: E402
from .registry import UntrustedCodeError, register_function  # noqa: E402
from .schema import ColumnSchema, ColumnSelector, Schema, Tags  # noqa: E402
from .ops.node import Subgraph  # noqa: E402
from .workflow import Workflow  # noqa: E402
from .serving import ServingTransform  # noqa: E402 - numpy only; the HTTP server and Keras export import lazily
from .quality import DriftReport, Profile, drift, profile  # noqa: E402

__all__ = ["Dataset", "Transaction", "Workflow", "ops", "Schema", "ColumnSchema", "ColumnSelector", "Subgraph", "Tags",
           "get_embedding_sizes", "register_function", "UntrustedCodeError", "ServingTransform", "__version__",
           "profile", "drift", "Profile", "DriftReport"]
