"""Vocabulary lookups: position of each value of a column in a learned vocabulary.

CPU: a ``pandas.Index`` (hash table built once per vocabulary, one O(1) probe per value).
GPU (:mod:`tabprep.backend.gpu`): a binary search on the device; integer vocabularies use
:class:`SortedVocab` (array code, the same on numpy and cupy).
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np
import pandas as pd

from .arrays import _numpy_kind_dtype, array_module, int_data, is_int_like, is_string_series, isnull
from .core import device
from .dispatch import Dispatch, register_gpu_lazy


class SortedVocab:
    """An integer vocabulary sorted by value, with each value's position in the vocabulary.

    Searched with ``searchsorted`` (numpy or cupy): no hash table, 16 bytes per value.
    """

    __slots__ = ("keys", "ids", "values", "_generic")

    def __init__(self, values: np.ndarray, like: Any) -> None:
        # sorted where the lookups run (on the GPU: CuPy's precompiled thrust sort, ms for
        # millions of values, where numpy's stable sort of a 10M-value vocabulary took ~1-2 s of
        # host CPU); vocabulary values are distinct, so every sort gives the same order
        xp = array_module(like)
        v = xp.asarray(values)
        order = xp.argsort(v)
        self.keys = v[order]
        self.ids = order.astype("int64", copy=False)
        self.values = values  # id order, host: for the fallback path
        self._generic: dict = {}

    def __len__(self) -> int:
        return len(self.keys)

    def lookup(self, q: Any) -> Any:
        """Position in the vocabulary of each int64 value of ``q`` (same array module), -1 if absent."""
        xp = array_module(q)
        n = len(self.keys)
        if n == 0 or len(q) == 0:
            return xp.full(len(q), -1, dtype="int64")
        # sorted queries make the binary searches walk the vocabulary in order (cache friendly)
        qo = xp.argsort(q)
        qs = q[qo]
        pos = xp.searchsorted(self.keys, qs)
        xp.minimum(pos, n - 1, out=pos)
        res = xp.where(self.keys[pos] == qs, self.ids[pos], -1)
        out = xp.empty_like(res)
        out[qo] = res
        return out

    def generic(self, like: Any) -> Any:
        """The lookup structure of the same vocabulary for columns that are not integers
        (e.g. a float or string column against an integer vocabulary), built once."""
        dev = device(like)
        out = self._generic.get(dev)
        if out is None:
            out = self._generic[dev] = _vocab_lookup(like, self.values)
        return out


_vocab_lookup = Dispatch("vocab_lookup")


@_vocab_lookup.register(object)
def _vocab_lookup_pandas(like: Any, values: np.ndarray) -> Any:
    # CPU: a hash table (pandas.Index, built once per vocabulary) answers in O(1) per value,
    # ~8x faster than sorting each partition's values for a binary search
    index = pd.Index(values)
    index.is_unique  # noqa: B018 - builds the hash table now, once, not in each thread's first lookup
    return index


#: the structure for a vocabulary of any dtype: the generic one, or on the GPU a
#: :class:`SortedVocab` for integer vocabularies (sort + binary search is what the device does best)
_vocab_structure = Dispatch("vocab_structure")
_vocab_structure.register(object, _vocab_lookup_pandas)


def vocab_lookup(values: Any, like: Any) -> Any:
    """Build once per vocabulary (host array in id order) the structure :func:`index_of`
    searches for columns on ``like``'s backend.

    CPU: a ``pandas.Index`` (hash table built lazily, then reused for every partition).
    GPU: :class:`SortedVocab` for integer vocabularies, else the vocabulary sorted on the device.
    """
    values = np.asarray(values) if not isinstance(values, np.ndarray) else values
    return _vocab_structure(like, values)


_index_of = Dispatch("index_of")


def _int_positions(find: Any, series: Any, data: Optional[Tuple[Any, Any]]) -> Any:
    """``find`` (a vocabulary's int64 lookup) over the int64 values of an int-like ``series``
    (``data``: its :func:`int_data` when the caller has it), -1 where the series is null."""
    values, mask = data if data is not None else int_data(series)
    pos = find(values)
    if mask is not None:
        # copyto(where=) rather than pos[mask] = -1: on cupy a boolean-mask assignment is a scan
        # whose kernels differ with the array's size (compiled on a fresh worker's job thread);
        # copyto is one element-wise kernel, the same for every size (pre-built by gpu_warmup)
        array_module(pos).copyto(pos, -1, where=mask)
    return pos


@_index_of.register(object)
def _index_of_pandas(series: Any, vocab: Any, data: Optional[Tuple[Any, Any]] = None):
    if not isinstance(vocab, pd.Index):
        vocab = pd.Index(vocab)
    if not is_string_series(series) and _numpy_kind_dtype(series.dtype).kind in "iub":
        # int64 values (an int32 column must find int64 vocabulary entries) and the null mask,
        # straight from the column's buffers
        return _int_positions(vocab.get_indexer, series, data)
    pos = vocab.get_indexer(series)
    mask = isnull(series)
    if mask.any():
        pos[mask] = -1
    return pos


def index_of(series: Any, vocab: Any, data: Optional[Tuple[Any, Any]] = None):
    """Position of each value of ``series`` in the vocabulary, -1 when absent or null.

    ``vocab`` is what :func:`vocab_lookup` returns (or, on the CPU, any array of unique values,
    or a :class:`SortedVocab`). ``data``: :func:`int_data` of an int ``series`` when the caller
    has it already.
    """
    if isinstance(vocab, SortedVocab):
        if is_int_like(series):
            return _int_positions(vocab.lookup, series, data)
        # e.g. a float or string column against an integer vocabulary: generic path
        vocab = vocab.generic(series)
    return _index_of(series, vocab, data)


def index_of_values(values: np.ndarray, vocab: Any) -> np.ndarray:
    """:func:`index_of` for a host numpy array (int64 values of an int-like column, or floats):
    position in the vocabulary, -1 when absent (NaN is never in a vocabulary). A fresh array."""
    if isinstance(vocab, SortedVocab):
        if values.dtype == np.int64:
            return vocab.lookup(values)
        vocab = vocab.generic(values)
    if not isinstance(vocab, pd.Index):
        vocab = pd.Index(vocab)
    return vocab.get_indexer(values)


register_gpu_lazy(_vocab_lookup, _vocab_structure, _index_of)
