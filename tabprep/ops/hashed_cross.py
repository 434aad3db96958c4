"""HashedCross: one categorical id per combination of several columns' values, by hashing."""
from __future__ import annotations

from typing import Any, Dict, List, Sequence, Union

import numpy as np

from .. import backend
from .._warn import first_time, warn_difference
from ..schema import ColumnSchema, Schema, Tags, check_bucket_dtype
from .base import Operator, bucket_counts, note_hash_ids
from .embeddings import embedding_sizes_property

#: Boost's ``hash_combine`` constant (the golden ratio in 32 bits)
GOLDEN = 0x9E3779B9
_MASK32 = 0xFFFFFFFF

Groups = Union[None, Sequence[str], Sequence[Sequence[str]]]

#: separator of a cross's output name (NVTabular: ``"_X_".join(cross)``)
SEP = "_X_"


def hash_combine(hashes: Sequence[Any]) -> Any:
    """Fold uint32 hash arrays (numpy or cupy, same length) into one uint32 array.

    ``h = 0``, then for each column hash ``k``: ``h = h ^ (k + 0x9E3779B9 + (h << 6) + (h >> 2))``
    modulo 2**32 (Boost's ``hash_combine``). Computed in uint64 and masked to 32 bits, so numpy
    and cupy give the same bits. Order matters: ``(a, b)`` and ``(b, a)`` differ.
    """
    xp = backend.array_module(hashes[0])
    mask = xp.uint64(_MASK32)
    h = xp.zeros(len(hashes[0]), dtype="uint64")
    for k in hashes:
        k = xp.asarray(k).astype("uint64") & mask
        mixed = (k + xp.uint64(GOLDEN) + ((h << xp.uint64(6)) & mask) + (h >> xp.uint64(2))) & mask
        h = h ^ mixed
    return h.astype("uint32")


class HashedCross(Operator):
    """Cross several columns: ``id = hash_combine(murmur3(a), murmur3(b), ...) % num_buckets``.

    Each group of columns gives one new int column named by joining the group's names with
    ``"_X_"`` (``["a", "b"]`` -> ``"a_X_b"``, NVTabular 23.08's name); only the crossed columns
    are output. ``HashedCross(10)`` (NVTabular's positional ``num_buckets``) crosses the op's
    input columns. The per-column
    hash is :func:`tabprep.backend.murmur3`, the value hash of :class:`HashBucket` (cuDF's
    ``hash_values(method="murmur3")`` with seed 0, reproduced bit for bit on the CPU; ints as
    int64, floats as float64, strings as UTF-8), and the combination is :func:`hash_combine`
    (Boost's formula on uint32, the same numpy and cupy code), so CPU and GPU give the same ids.
    Collisions are expected, as for :class:`HashBucket`; unseen combinations need no handling.

    Schema: tags ``categorical`` and ``hashed``, ``cardinality`` and ``num_buckets`` =
    ``num_buckets``, ``embedding_sizes`` ``{"cardinality": num_buckets, "dimension": ..}`` (what
    :func:`tabprep.get_embedding_sizes` gives), and no ``domain``, as NVTabular 23.08 writes none
    for a cross. NVTabular's cross has no tags and no properties, so its ``get_embedding_sizes``
    leaves it out; tabprep's sizes its table (docs/migration.md).

    Nulls: a null (or NaN) value hashes to 0 and is crossed like any other value, so
    ``(null, "x")`` is a regular combination (its own id); the output has no nulls.

    Args:
        columns: the columns to cross: a list of names (one cross), a list of lists (several
            crosses), or None to cross the op's input columns, or each ``[["a", "b"]]`` group of
            the selection, as NVTabular does. An int or dict here is ``num_buckets``
            (NVTabular's ``HashedCross(num_buckets)``).
        num_buckets: number of ids, an int for every cross or ``{output_name: int}``
            (``{"a_X_b": 100}``; the name tabprep used before, ``"a_b"``, is still accepted, with
            a warning).
        dtype: output integer dtype (default int32, NVTabular's ``HashedCross.output_dtype``).
        embedding_dim: overrides the embedding-size heuristic (int or ``{output_name: int}``).

    Example:
        >>> cross = ["country", "device"] >> HashedCross(1000)          # country_X_device
        >>> crosses = [["a", "b"], ["a", "c"]] >> HashedCross(num_buckets={"a_X_b": 100, "a_X_c": 50})
    """

    output_tags = (Tags.CATEGORICAL, Tags.HASHED)
    supports_groups = True

    def __init__(self, columns: Groups = None, num_buckets: Union[None, int, Dict[str, int]] = None,
                 dtype: str = "int32", embedding_dim: Union[None, int, Dict[str, int]] = None) -> None:
        if isinstance(columns, (int, np.integer, dict)) and not isinstance(columns, bool):
            if num_buckets is not None:
                raise TypeError(f"HashedCross got num_buckets twice ({columns!r} and num_buckets={num_buckets!r})")
            columns, num_buckets = None, columns  # NVTabular's HashedCross(num_buckets)
        if num_buckets is None:
            raise TypeError("HashedCross needs num_buckets: HashedCross(10) or HashedCross(num_buckets={'a_X_b': 10})")
        bucket_counts("HashedCross", num_buckets)   # whole numbers >= 1
        if np.dtype(dtype).kind not in "iu":
            raise ValueError(f"HashedCross dtype must be an integer dtype, got {dtype!r}")
        note_hash_ids("HashedCross")
        check_bucket_dtype(dtype, num_buckets, "HashedCross")  # ids 0 .. num_buckets - 1 must fit (issue #30)
        if columns is not None:
            if isinstance(columns, str):
                raise TypeError(f"HashedCross columns must be a list of names (or of lists of names), got {columns!r}")
            groups = _as_groups(columns)
            if any(len(g) < 2 for g in groups):
                raise ValueError(f"each HashedCross group needs at least 2 columns, got {columns!r}")
        self.columns = columns
        self.num_buckets = num_buckets
        self.dtype = dtype
        self.embedding_dim = embedding_dim
        self.input_groups: List[List[str]] = []
        self._warned: set = set()

    # -- columns -----------------------------------------------------------------------------
    def groups(self, columns: List[str]) -> List[List[str]]:
        """The column groups crossed, for the op's input ``columns``."""
        if self.columns is not None:
            return _as_groups(self.columns)
        groups = [list(g) for g in self.input_groups if len(g) > 1 and all(c in columns for c in g)]
        return groups or [list(columns)]

    def output_column_names(self, columns: List[str]) -> List[str]:
        return [SEP.join(g) for g in self.groups(columns)]

    def buckets(self, name: str) -> int:
        if isinstance(self.num_buckets, dict):
            if name in self.num_buckets:
                return int(self.num_buckets[name])
            legacy = name.replace(SEP, "_")
            if legacy in self.num_buckets:
                warn_difference(f"HashedCross: num_buckets key {legacy!r} is the output name tabprep used before; the "
                                f"cross is now named {name!r} (NVTabular's name): key num_buckets by {name!r}",
                                stacklevel=3, at_build=True)
                return int(self.num_buckets[legacy])
            raise KeyError(f"HashedCross has no num_buckets for cross {name!r}; add it to {self.num_buckets}")
        return int(self.num_buckets)

    def check_input(self, input_schema: Schema, columns: List[str]) -> None:
        super().check_input(input_schema, columns)
        for g in self.groups(columns):
            missing = [c for c in g if c not in columns]
            if missing:
                raise KeyError(f"HashedCross crosses {g} but {missing} are not among its input columns {columns}; "
                               f"select them before the op: {g} >> HashedCross(...)")

    # -- transform ---------------------------------------------------------------------------
    def transform(self, columns: List[str], df: Any) -> Any:
        out = {}
        for g in self.groups(columns):
            name = SEP.join(g)
            for c in g:
                if backend.is_list_series(df[c]):
                    raise TypeError(f"HashedCross does not support list column {c!r}")
            h = hash_combine([backend.murmur3(df[c]) for c in g])
            ids = h.astype("int64") % self.buckets(name)
            out[name] = backend.new_series(ids, like=df[g[0]], name=name, dtype=self.dtype)
        return backend.make_frame(out, like=df)

    # -- schema ------------------------------------------------------------------------------
    def compute_output_schema(self, input_schema: Schema, columns: List[str]) -> Schema:
        out = []
        for g in self.groups(columns):
            name = SEP.join(g)
            nb = self.buckets(name)
            dim = self.embedding_dim.get(name) if isinstance(self.embedding_dim, dict) else self.embedding_dim
            # no "domain": NVTabular 23.08 writes none for a cross; the table's size is in
            # cardinality / embedding_sizes, what tabprep's embedding-size export reads
            props: Dict[str, Any] = {"cardinality": nb, "num_buckets": nb, "crossed_columns": list(g),
                                     "embedding_sizes": embedding_sizes_property(nb, dim)}
            if dim is not None:
                props["embedding_dim"] = int(dim)
            out.append(ColumnSchema(name, dtype=self.dtype, tags=self.output_tags, properties=props))
            self._announce_first_column_size(name, g[0], input_schema, props["embedding_sizes"])
        return Schema(out)

    def _announce_first_column_size(self, name: str, first: str, input_schema: Schema, mine: Dict[str, int]) -> None:
        """NVTabular 23.08's cross copies its first column's properties: where that column has a
        table size (a Categorify output), its get_embedding_sizes sizes the cross by it, a table
        the cross's ids overflow. Loud once per op and cross, since the numbers differ."""
        theirs = input_schema[first].properties.get("embedding_sizes") if first in input_schema else None
        if not isinstance(theirs, dict) or theirs.get("cardinality") is None:
            return   # NVTabular's cross then has no size at all (nothing differs, one more entry here)
        pair = (int(theirs["cardinality"]), int(theirs.get("dimension") or 0))
        if pair == (mine["cardinality"], mine["dimension"]) or not first_time(self._warned, (name, pair)):
            return
        warn_difference(f"HashedCross: the cross {name!r} has {mine['cardinality']} ids, embedding size "
                        f"({mine['cardinality']}, {mine['dimension']}) here; NVTabular 23.08 copies its first column "
                        f"{first!r}'s properties onto it, so its get_embedding_sizes gives {first!r}'s {pair}, a table "
                        f"the cross's ids do not fit (see docs/migration.md)", stacklevel=3, at_build=True)


def _as_groups(columns: Sequence[Any]) -> List[List[str]]:
    cols = list(columns)
    if cols and all(isinstance(c, str) for c in cols):
        return [cols]
    if all(isinstance(g, (list, tuple)) and all(isinstance(c, str) for c in g) for g in cols) and cols:
        return [list(g) for g in cols]
    raise TypeError(f"HashedCross columns must be a list of names or a list of lists of names, got {columns!r}")
