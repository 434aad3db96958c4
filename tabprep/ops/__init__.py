"""Column ops. Each op lives in its own module; all are re-exported here.

>>> from tabprep import ops
>>> cats = ["C1", "C2"] >> ops.Categorify(freq_threshold=2)
"""
from .base import Operator, StatOperator, register, registered_ops
from .categorify import Categorify
from .clip import Clip
from .embeddings import embedding_dim_rule, get_embedding_sizes
from .fill_median import FillMedian
from .fill_missing import FillMissing
from .filter import Filter
from .hash_bucket import HashBucket
from .lambda_op import LambdaOp
from .log_op import LogOp
from .normalize import Normalize
from .normalize_minmax import NormalizeMinMax
from .rename import Rename

__all__ = [
    "Operator", "StatOperator", "register", "registered_ops",
    "Categorify", "Clip", "FillMedian", "FillMissing", "Filter", "HashBucket", "LambdaOp", "LogOp",
    "Normalize", "NormalizeMinMax", "Rename", "get_embedding_sizes", "embedding_dim_rule",
]
