"""HashedCross: one categorical id per combination of several columns' values, by hashing."""
from __future__ import annotations

import os
import sys
from typing import Any, Dict, List, Sequence, Union

import numpy as np

from .. import backend
from .._warn import first_time, warn_difference
from ..schema import ColumnSchema, Schema, Tags, check_bucket_dtype
from .base import Operator, _json_params, bucket_counts, note_hash_ids
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
            the selection. An int or dict here is ``num_buckets`` (NVTabular's
            ``HashedCross(num_buckets)``). Several groups in the selection
            (``[["a", "b"], ["c", "d"]] >> HashedCross(10)``) give one cross each here, where
            NVTabular 23.08 flattens the selection into ONE cross of all its columns
            (``a_X_b_X_c_X_d``, an accident of its ``col_selector.names``): tabprep warns
            (``NVTabularDifferenceWarning``) when such a graph is built, naming both outputs.
        num_buckets: number of ids, an int for every cross or a dict keyed per cross by the
            tuple of its columns (``{("a", "b"): 100}``, NVTabular's key) or by its output name
            (``{"a_X_b": 100}``); the name tabprep used before, ``"a_b"``, is still accepted,
            with a warning. A tuple and a name of one cross must give the same number.
        dtype: output integer dtype (default int32, NVTabular's ``HashedCross.output_dtype``).
        embedding_dim: overrides the embedding-size heuristic (int, or a dict keyed as
            ``num_buckets``).

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
        by_name(num_buckets, "num_buckets")           # tuple keys name columns; one number per cross
        by_name(embedding_dim, "embedding_dim")
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
        groups = groups or [list(columns)]
        self._note_nvt_flattening(columns, groups)
        return groups

    def _note_nvt_flattening(self, columns: List[str], groups: List[List[str]]) -> None:
        """NVTabular 23.08 crosses ``_nest_columns(col_selector.names)``, and merlin-core's
        ``names`` flattens the selection's groups: ONE cross of all the input columns, whatever
        the groups. An accident (its ``_nest_columns`` keeps a branch for groups, its older API
        took a list of crosses, its feature-column converter keys ``num_buckets`` per cross and
        then fails): tabprep crosses each group, loudly, once per op, when the graph is built."""
        theirs = SEP.join(columns)
        mine = [SEP.join(g) for g in groups]
        if mine == [theirs] or not first_time(self._warned, ("nvt flattening", tuple(columns))):
            return   # (consumed while Workflow.load rebuilds the graph too: a loaded op stays quiet)
        alone = [c for c in columns if not any(c in g for g in groups)]
        left = f"; column(s) {alone} of no group are not crossed" if alone else ""
        keyed = (f" (with a num_buckets dict, NVTabular looks up the key {tuple(columns)!r} and raises KeyError "
                 f"without it)") if isinstance(self.num_buckets, dict) else ""
        warn_difference(f"HashedCross: the selection's column groups {groups} give one cross each here, {mine}{left}; "
                        f"NVTabular 23.08 flattens the selection (col_selector.names) and outputs ONE column "
                        f"{theirs!r}, the cross of all its columns{keyed}. tabprep keeps one cross per group (what "
                        f"NVTabular's _nest_columns and its older API meant); for NVTabular's column select the "
                        f"columns as one group: [{list(columns)}] >> HashedCross(...) (docs/migration.md)",
                        stacklevel=_outside_tabprep(), at_build=True)

    def output_column_names(self, columns: List[str]) -> List[str]:
        return [SEP.join(g) for g in self.groups(columns)]

    def buckets(self, name: str) -> int:
        if isinstance(self.num_buckets, dict):
            named = by_name(self.num_buckets, "num_buckets")
            if name in named:
                return int(named[name])
            legacy = name.replace(SEP, "_")
            if legacy in named:
                warn_difference(f"HashedCross: num_buckets key {legacy!r} is the output name tabprep used before; the "
                                f"cross is now named {name!r} (NVTabular's name): key num_buckets by {name!r}",
                                stacklevel=3, at_build=True)
                return int(named[legacy])
            raise KeyError(f"HashedCross has no num_buckets for cross {name!r}; add it to {self.num_buckets} "
                           f"(keyed by {tuple(name.split(SEP))!r}, as NVTabular, or by {name!r})")
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
            dim = by_name(self.embedding_dim, "embedding_dim").get(name) if isinstance(self.embedding_dim, dict) \
                else self.embedding_dim
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

    # -- persistence ---------------------------------------------------------------------------
    def to_config(self) -> Dict[str, Any]:
        # a dict keyed by tuples of columns (NVTabular's key) is saved keyed by the crosses' names,
        # which JSON holds and buckets() reads alike
        params = self.get_params()
        for p in ("num_buckets", "embedding_dim"):
            if isinstance(params[p], dict):
                params[p] = by_name(params[p], p)
        return _json_params(params, self.label)


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _outside_tabprep() -> int:
    """The ``stacklevel`` (of :func:`warn_difference` called by this function's caller) of the
    first frame outside the tabprep package: the user's line that built the graph (a
    ``Workflow(...)``, a ``node.output_columns``), however deep tabprep called the op from."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    return level


def by_name(mapping: Any, what: str) -> Any:
    """A per-cross dict (``num_buckets``, ``embedding_dim``) keyed by output names: a tuple key
    ``("a", "b")`` (NVTabular's form) becomes ``"a_X_b"``; other keys stay. A tuple of other than
    column names is a ``TypeError``; a cross given two different numbers a ``ValueError``.
    Anything but a dict is returned as it is."""
    if not isinstance(mapping, dict):
        return mapping
    out: Dict[Any, Any] = {}
    for key, value in mapping.items():
        if isinstance(key, tuple):
            if len(key) < 2 or not all(isinstance(c, str) for c in key):
                raise TypeError(f"HashedCross {what} key {key!r}: a tuple key names the crossed columns, "
                                f"e.g. ('a', 'b'); or key by the cross's name 'a_X_b'")
            key = SEP.join(key)
        if key in out and out[key] != value:
            raise ValueError(f"HashedCross {what} gives the cross {key!r} two values ({out[key]!r} and {value!r}), "
                             f"keyed by its tuple of columns and by its name; give it once")
        out[key] = value
    return out


def _as_groups(columns: Sequence[Any]) -> List[List[str]]:
    cols = list(columns)
    if cols and all(isinstance(c, str) for c in cols):
        return [cols]
    if all(isinstance(g, (list, tuple)) and all(isinstance(c, str) for c in g) for g in cols) and cols:
        return [list(g) for g in cols]
    raise TypeError(f"HashedCross columns must be a list of names or a list of lists of names, got {columns!r}")
