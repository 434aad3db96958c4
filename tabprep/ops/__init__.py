"""Column ops. Each op lives in its own module; all are re-exported here.

>>> from tabprep import ops
>>> cats = ["C1", "C2"] >> ops.Categorify(freq_threshold=2)
"""
from .base import Operator, StatOperator, register, registered_ops
from .add_metadata import (AddMetadata, AddProperties, AddTags, TagAsItemFeatures, TagAsItemID, TagAsUserFeatures,
                           TagAsUserID)
from .bucketize import Bucketize
from .categorify import Categorify
from .clip import Clip
from .column_similarity import ColumnSimilarity
from .data_stats import DataStats
from .difference_lag import DifferenceLag
from .drop_low_cardinality import DropLowCardinality
from .dropna import Dropna
from .embeddings import embedding_dim_rule, get_embedding_sizes
from .fill_median import FillMedian
from .fill_missing import FillMissing
from .filter import Filter
from .groupby import Groupby, shuffle_by_key
from .hash_bucket import HashBucket
from .hashed_cross import HashedCross
from .join_external import JoinExternal
from .join_groupby import JoinGroupby
from .lambda_op import LambdaOp
from .list_slice import ListSlice
from .log_op import LogOp
from .normalize import Normalize
from .normalize_minmax import NormalizeMinMax
from .reduce_dtype_size import ReduceDtypeSize
from .rename import Rename
from .target_encoding import TargetEncoding
from .value_count import ValueCount

__all__ = [
    "Operator", "StatOperator", "register", "registered_ops",
    "Categorify", "Clip", "FillMedian", "FillMissing", "Filter", "HashBucket", "LambdaOp", "LogOp",
    "Normalize", "NormalizeMinMax", "Rename", "get_embedding_sizes", "embedding_dim_rule",
    "AddMetadata", "AddProperties", "AddTags", "Bucketize", "DifferenceLag", "DropLowCardinality",
    "HashedCross", "ListSlice", "ReduceDtypeSize", "ValueCount",
    "TargetEncoding", "JoinGroupby", "JoinExternal", "ColumnSimilarity", "Groupby", "shuffle_by_key",
    "Dropna", "DataStats", "TagAsUserID", "TagAsItemID", "TagAsUserFeatures", "TagAsItemFeatures",
]
