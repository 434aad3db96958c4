"""Exact lookup tables for serving: vocabulary value -> position, built once, read by many threads.

* :class:`IntTable`: an open-addressing hash table (linear probing, load factor <= 1/2) held
  in two flat numpy arrays (``16 x 2 x D`` bytes for ``D`` values): a batch is looked up with a
  handful of vectorized numpy calls (one gather per probe round), one value with a few Python
  integer operations and two array reads. No Python object per vocabulary entry, so a
  20M-value vocabulary costs ~640 MB, not the ~2 GB of a ``dict``.
* :class:`ObjectTable`: a ``dict`` (strings, floats): Python's own hash table; its equality
  is the vocabulary's (``0.0 == -0.0``; NaN never reaches it, it is null).

Both return the position of a value in the vocabulary (the id order of
:class:`~tabprep.ops.Categorify`), or -1. Tables are immutable after construction, so they
are safe to share between threads.
"""
from __future__ import annotations

from typing import Any, Dict

import numpy as np

_MULT = 0x9E3779B97F4A7C15  # 2**64 / golden ratio: Fibonacci hashing spreads consecutive ids
_MASK64 = (1 << 64) - 1
_EMPTY = -1
#: below this many unresolved values, a batch lookup finishes them one at a time
_SCALAR_TAIL = 16


class IntTable:
    """Exact int64 value -> position table (open addressing, linear probing).

    Args:
        values: the vocabulary (int64 array, distinct values, in id order).
    """

    __slots__ = ("bits", "shift", "mask", "keys", "pos", "size", "_keys_item", "_pos_item")

    def __init__(self, values: np.ndarray) -> None:
        values = np.ascontiguousarray(values, dtype=np.int64)
        n = len(values)
        bits = max(4, int(np.ceil(np.log2(max(2 * n, 2)))))  # load factor <= 1/2: short probe runs
        self.bits = bits
        self.shift = 64 - bits
        self.mask = (1 << bits) - 1
        self.size = n
        self.keys = np.zeros(1 << bits, dtype=np.int64)
        self.pos = np.full(1 << bits, _EMPTY, dtype=np.int64)
        pending = np.arange(n, dtype=np.int64)
        slots = self._slots(values)
        while len(pending):
            free = self.pos[slots] == _EMPTY
            # several pending values may want the same free slot: the first one of each takes it
            cand = np.flatnonzero(free)
            _, first = np.unique(slots[cand], return_index=True)
            take = cand[first]
            self.keys[slots[take]] = values[pending[take]]
            self.pos[slots[take]] = pending[take]
            left = np.ones(len(pending), dtype=bool)
            left[take] = False
            pending = pending[left]
            slots = (slots[left] + 1) & self.mask
        self.keys.flags.writeable = False
        self.pos.flags.writeable = False
        self._keys_item = self.keys.item
        self._pos_item = self.pos.item

    def _slots(self, q: np.ndarray) -> np.ndarray:
        h = q.view(np.uint64) * np.uint64(_MULT)  # wraps modulo 2**64 (array arithmetic never warns)
        return (h >> np.uint64(self.shift)).astype(np.int64)

    def lookup(self, q: np.ndarray) -> np.ndarray:
        """Position of each int64 value of ``q`` (a fresh int64 array), -1 when absent."""
        q = np.ascontiguousarray(q, dtype=np.int64)
        slots = self._slots(q)
        out = np.full(len(q), _EMPTY, dtype=np.int64)
        todo = np.arange(len(q))
        while len(todo):
            if len(todo) <= _SCALAR_TAIL:
                # the few values with long probe runs: finishing them one by one beats more
                # rounds of numpy calls over a handful of elements
                get = self.get
                for i, v in zip(todo.tolist(), q[todo].tolist()):
                    out[i] = get(v)
                break
            p = self.pos[slots]
            hit = (self.keys[slots] == q[todo]) & (p != _EMPTY)
            out[todo[hit]] = p[hit]
            more = ~hit & (p != _EMPTY)  # an empty slot ends the probe run: absent
            if not more.any():
                break
            todo = todo[more]
            slots = (slots[more] + 1) & self.mask
        return out

    def get(self, v: int) -> int:
        """Position of one Python int, -1 when absent."""
        slot = (((v & _MASK64) * _MULT) & _MASK64) >> self.shift
        keys_item, pos_item, mask = self._keys_item, self._pos_item, self.mask
        while True:
            p = pos_item(slot)
            if p == _EMPTY:
                return -1
            if keys_item(slot) == v:
                return p
            slot = (slot + 1) & mask

    def __len__(self) -> int:
        return self.size


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

    def get(self, v: Any) -> int:
        return self.index.get(v, -1)

    def __len__(self) -> int:
        return self.size


def make_table(values: Any) -> Any:
    """The lookup table of a vocabulary (host array in id order)."""
    values = np.asarray(values)
    if values.dtype.kind in "iub":
        return IntTable(values.astype(np.int64, copy=False))
    return ObjectTable(values)
