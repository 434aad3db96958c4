"""Exact lookup tables for serving: vocabulary value -> position, built once, read by many threads.

* :class:`IntTable` (int and bool vocabularies): the values sorted, with their positions, in two
  flat numpy arrays (16 bytes per value, no Python object per entry). A batch is looked up with
  one ``searchsorted`` and three elementwise numpy calls, whatever the vocabulary size; one value
  with a ``dict`` when the vocabulary is small (:data:`DICT_MAX` values), else one scalar
  ``searchsorted``.
* :class:`MultiIntTable` (the int vocabularies of many columns at once): one pandas hash index
  over all of them, so a batch of every column is looked up with one call, O(1) per value,
  where binary searches miss the cache about log2(vocabulary) times per value.
* :class:`ObjectTable` (strings, floats): a ``dict``, Python's own hash table; its equality is
  the vocabulary's (``0.0 == -0.0``; NaN never reaches it, it is null).

Both return the position of a value in the vocabulary (the id order of
:class:`~tabprep.ops.Categorify`), or -1. Tables are immutable after construction, so they
are safe to share between threads.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import pandas as pd

#: vocabularies up to this size also get a ``dict`` for one-row lookups (~100 bytes per entry)
DICT_MAX = 1 << 18
#: batches at least this long against vocabularies larger than this are sorted before the search
_SORT_MIN_QUERIES = 64
_SORT_MIN_VOCAB = 4096
#: vocabularies up to this size join a :class:`MultiIntTable` (a hash index costs ~40 bytes per value)
HASH_MAX = 1 << 22
#: odd, so ``value + j * _SALT`` (mod 2**64) is a bijection of int64 for each table j
_SALT = np.uint64(0x9E3779B97F4A7C15)


class IntTable:
    """Exact int64 value -> position table (sorted values + ``searchsorted``).

    Args:
        values: the vocabulary (distinct ints, in id order).
        index: also build the ``dict`` (for vocabularies up to :data:`DICT_MAX` values).
    """

    __slots__ = ("keys", "pos", "size", "index", "_last")

    def __init__(self, values: np.ndarray, index: bool = True) -> None:
        values = np.ascontiguousarray(values, dtype=np.int64)
        order = np.argsort(values, kind="stable")
        self.keys = values[order]
        self.pos = order.astype(np.int64)
        self.size = len(values)
        self._last = self.size - 1
        self.index: Optional[Dict[int, int]] = (dict(zip(values.tolist(), range(self.size)))
                                                if index and self.size <= DICT_MAX else None)
        self.keys.flags.writeable = False
        self.pos.flags.writeable = False

    def lookup(self, q: np.ndarray) -> np.ndarray:
        """Position of each int64 value of ``q`` (a fresh int64 array), -1 when absent."""
        if self.size == 0:
            return np.full(len(q), -1, dtype=np.int64)
        if len(q) >= _SORT_MIN_QUERIES and self.size > _SORT_MIN_VOCAB:
            # sorted queries make numpy's binary searches start where the previous one ended and
            # walk the vocabulary in order: 2.6x faster on 26 Criteo columns of 1000 values whose
            # vocabularies do not stay in cache together
            order = np.argsort(q)  # ties need no order: equal values get the same answer
            qs = q[order]
            i = np.searchsorted(self.keys, qs)
            np.minimum(i, self._last, out=i)
            out = np.empty(len(q), dtype=np.int64)
            out[order] = np.where(self.keys[i] == qs, self.pos[i], -1)
            return out
        i = np.searchsorted(self.keys, q)
        np.minimum(i, self._last, out=i)
        return np.where(self.keys[i] == q, self.pos[i], -1)

    def get(self, v: int, default: int = -1) -> int:
        """Position of one Python int, ``default`` (-1) when absent."""
        if self.index is not None:
            return self.index.get(v, default)
        if not -(1 << 63) <= v < (1 << 63):
            return default
        i = int(self.keys.searchsorted(v))
        if i < self.size and self.keys.item(i) == v:
            return self.pos.item(i)
        return default

    def __len__(self) -> int:
        return self.size


class MultiIntTable:
    """Exact (table j, int64 value) -> position in vocabulary j, for many vocabularies in one hash index.

    Value ``v`` of vocabulary ``j`` is keyed ``v + j * _SALT`` (mod 2**64): distinct within a
    vocabulary, and when two vocabularies' keys collide (improbable) :meth:`build` returns None.
    A query of vocabulary ``j`` may still alias another vocabulary's entry, so a hit is checked
    against the stored value. The index is pandas' (khash); its table is built here, once, so
    that concurrent lookups only read it.

    Args:
        vocabularies: int64 arrays of distinct values, in id order.
    """

    __slots__ = ("index", "values", "starts", "salts")

    def __init__(self, vocabularies: Sequence[np.ndarray]) -> None:
        vocabs = [np.ascontiguousarray(v, dtype=np.int64) for v in vocabularies]
        self.salts = np.arange(len(vocabs), dtype=np.uint64) * _SALT
        sizes = np.array([len(v) for v in vocabs], dtype=np.int64)
        self.starts = np.zeros(len(vocabs), dtype=np.int64)
        np.cumsum(sizes[:-1], out=self.starts[1:])
        self.values = np.concatenate(vocabs) if vocabs else np.zeros(0, dtype=np.int64)
        keys = self.values.view(np.uint64) + np.repeat(self.salts, sizes)
        self.index = pd.Index(keys.view(np.int64))
        self.values.flags.writeable = False

    @classmethod
    def build(cls, vocabularies: Sequence[np.ndarray]) -> Optional["MultiIntTable"]:
        """The table, or None when two vocabularies' keys collide."""
        table = cls(vocabularies)
        if not table.index.is_unique:  # also builds the hash table, before any request
            return None
        table.index.get_indexer(table.index[:1])
        return table

    def lookup(self, queries: List[np.ndarray], which: Sequence[int]) -> np.ndarray:
        """Positions of the int64 ``queries[k]`` in vocabulary ``which[k]`` (-1: absent), concatenated."""
        q = np.concatenate(queries) if len(queries) > 1 else queries[0]
        lengths = [len(x) for x in queries]
        salt = np.repeat(self.salts[which], lengths)
        salt += q.view(np.uint64)
        i = self.index.get_indexer(salt.view(np.int64))
        found = i >= 0
        np.maximum(i, 0, out=i)
        found &= self.values.take(i) == q  # a key of another vocabulary is not a hit
        i -= np.repeat(self.starts[which], lengths)
        return np.where(found, i, -1)


class ObjectTable:
    """Exact value -> position table for strings and floats (a ``dict``)."""

    __slots__ = ("index", "size")

    def __init__(self, values: Any) -> None:
        vals = list(values.tolist() if isinstance(values, np.ndarray) else values)
        self.index: Dict[Any, int] = {}
        for i, v in enumerate(vals):
            self.index.setdefault(v, i)
        self.size = len(vals)

    def lookup(self, q: np.ndarray) -> np.ndarray:
        get = self.index.get
        return np.fromiter((get(v, -1) if v is not None else -1 for v in q.tolist()), dtype=np.int64, count=len(q))

    def get(self, v: Any, default: int = -1) -> int:
        return self.index.get(v, default)

    def __len__(self) -> int:
        return self.size


def getter(table: Any) -> Any:
    """The fastest ``get(value, default)`` of a table (the dict's own method when it has one)."""
    index = getattr(table, "index", None)
    return index.get if index is not None else table.get


def make_table(values: Any, index: bool = True) -> Any:
    """The lookup table of a vocabulary (host array in id order); ``index=False``: an int table
    without its ``dict`` (the caller keeps its own for one-value lookups)."""
    values = np.asarray(values)
    if values.dtype.kind in "iub":
        return IntTable(values.astype(np.int64, copy=False), index=index)
    return ObjectTable(values)
