"""HashBucket: categorical ids by hashing, no vocabulary to fit."""
from __future__ import annotations

from typing import Any, Dict, List, Union

from .. import backend
from ..schema import ColumnSchema, Tags, check_bucket_dtype, without_table_properties
from .base import Operator, bucket_counts, map_elements, note_hash_ids
from .embeddings import embedding_sizes_property


class HashBucket(Operator):
    """``id = murmur3_32(value) % num_buckets``; null -> 0. Output in ``[0, num_buckets)``.

    The hash is MurmurHash3_x86_32 with seed 0 exactly as cuDF computes it
    (``Series.hash_values(method="murmur3")``, which is the plain MurmurHash3 of the value's
    bytes: checked against ``mmh3`` on cuDF 26.10), so CPU and GPU ids are identical. Integer
    columns are hashed as int64 and floats as float64 whatever their width. Unseen values need
    no special handling (every value has a bucket); collisions are expected.

    Schema: ``cardinality`` and ``num_buckets`` are ``num_buckets`` (the embedding table's rows,
    what :func:`tabprep.get_embedding_sizes` returns, as NVTabular's); ``domain`` is
    ``{"min": 0, "max": num_buckets}`` exactly as NVTabular 23.08 writes it (one more than the
    largest id, so a reader sizing a table by ``domain.max + 1``, as Merlin Models does, gets
    the same one unused row on both); ``embedding_sizes`` is ``{"cardinality": num_buckets,
    "dimension": ...}`` as NVTabular 23.08 writes it (the pair ``get_embedding_sizes`` gives).

    Args:
        num_buckets: an int for every column, or ``{column: int}``.
        dtype: output integer dtype (default int32, NVTabular 23.08's ``HashBucket.output_dtype``).
        embedding_dim: overrides the embedding-size heuristic (int or ``{column: int}``).

    Example:
        >>> hashed = ["C3", "C4"] >> HashBucket(num_buckets={"C3": 1000, "C4": 100})
    """

    output_tags = (Tags.CATEGORICAL, Tags.HASHED)
    supports_lists = True
    supports_nested = "leaves"   # nested lists: element-wise on the leaves, structure kept

    def __init__(self, num_buckets: Union[int, Dict[str, int]], dtype: str = "int32",
                 embedding_dim: Union[None, int, Dict[str, int]] = None) -> None:
        bucket_counts("HashBucket", num_buckets)   # whole numbers >= 1 (2.5 hashed into 2 buckets)
        check_bucket_dtype(dtype, num_buckets)  # ids 0 .. num_buckets - 1 must fit the id dtype (issue #30)
        note_hash_ids("HashBucket")
        self.num_buckets = num_buckets
        self.dtype = dtype
        self.embedding_dim = embedding_dim

    def buckets(self, column: str) -> int:
        if isinstance(self.num_buckets, dict):
            if column not in self.num_buckets:
                raise KeyError(f"HashBucket has no num_buckets for column {column!r}; "
                               f"add it to the dict {self.num_buckets}")
            return int(self.num_buckets[column])
        return int(self.num_buckets)

    def transform(self, columns: List[str], df: Any) -> Any:
        out = {}
        for c in columns:
            nb = self.buckets(c)

            def hash_mod(s: Any, nb: int = nb) -> Any:
                h = backend.murmur3(s)  # 0 for nulls, and 0 % nb = 0: nulls need no extra pass
                return backend.mod_buckets(h, nb)

            s = df[c]
            out[c] = (map_elements(s, hash_mod, dtype=self.dtype) if backend.is_list_series(s)
                      else backend.bucket_ids(s, nb, self.dtype))
        return backend.make_frame(out, like=df)

    def column_schema(self, col: ColumnSchema) -> ColumnSchema:
        nb = self.buckets(col.name)
        dim = self.embedding_dim.get(col.name) if isinstance(self.embedding_dim, dict) else self.embedding_dim
        props = {"cardinality": nb, "num_buckets": nb, "domain": {"min": 0, "max": nb},  # NVTabular's, see the docstring
                 "embedding_sizes": embedding_sizes_property(nb, dim)}
        if dim is not None:
            props["embedding_dim"] = int(dim)
        # a new table: the input's (e.g. a Categorify vocabulary's) size and name do not carry over
        return col.with_(dtype=self.dtype, properties=without_table_properties(col.properties),
                         add_tags=self.output_tags, add_properties=props)
