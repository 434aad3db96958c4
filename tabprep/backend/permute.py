"""Seeded row orders of a loader's chunks, the same on the CPU and the GPU.

A shuffled loader reorders each chunk's rows with a permutation drawn from the chunk's seed.
Drawing it with numpy's ``Generator.shuffle`` on the host takes 55-300 ms per 3.3M rows (a random
walk through memory) and the GPU then waits for it and for its copy: on an H200, 20M rows of
transformed Criteo data, the shuffled core loader read 36-45M rows/s, and 90M with the
permutations drawn beforehand (``benchmarks/loader_anatomy.py --gpu --variants``). With the keyed
order the epoch took 0.138 s (145M rows/s) against 0.481 s with numpy's shuffle on the host.

So a chunk of at least :data:`KEYED_MIN_ROWS` rows is ordered by a keyed bijection instead, which
both devices compute element by element with the same integer arithmetic, so their batches stay
identical:

* ``k`` = bits of ``n - 1`` (at least 1), ``mask`` = ``2**k - 1``, ``s`` = ``(k + 1) // 2``; words
  are uint32 where ``k <= 32``, else uint64 (arithmetic wraps at the word size, then ``& mask``);
* :data:`ROUNDS` rounds, each with three keys ``a, m, b`` drawn from the seed
  (``numpy.random.SeedSequence(seed).generate_state(3 * ROUNDS, word)``; ``a`` and ``b`` masked,
  ``m`` made odd): ``x ^= a; x *= m; x &= mask; x ^= x >> s; x += b; x &= mask``. Each step is a
  bijection of ``[0, 2**k)`` (xor, multiplication by an odd number and addition modulo ``2**k``,
  a right xor-shift), so the rounds are one;
* ``order[i]`` is the first value below ``n`` of ``f(i), f(f(i)), ...`` ("cycle walking"): a
  bijection of ``[0, n)``. In all, the walks apply ``f`` ``2**k < 2n`` times.

The CPU computes it with numpy (68-120 ms per 3.3M rows on this project's 2-core machine, where
``Generator.shuffle`` took 260-370 ms), the GPU with one CUDA kernel (no copy from the host).
Smaller chunks keep numpy's ``Generator.shuffle`` of an int32 ``arange`` (drawn on the host, copied
to the device): the keyed order of a few bits' domain mixes less, and its cost does not matter there.

How random the keyed order is, checked by ``tests/test_row_order.py``: every value once; windows
of a batch's size have the mean and spread of a uniform sample; neighbours and positions are not
correlated; the first value of the order is uniform over seeds. It is a shuffle for training, not
a cryptographic permutation.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

#: rounds of the keyed bijection (4: windows, neighbours and first values pass the tests' checks)
ROUNDS = 4
#: chunks of fewer rows keep numpy's Generator.shuffle (drawn on the host)
KEYED_MIN_ROWS = 1 << 16


def index_dtype(n: int) -> np.dtype:
    """int32 for positions below ``2**31`` (half the bytes the gathers read), else int64."""
    return np.dtype(np.int32) if n < 2 ** 31 else np.dtype(np.int64)


def shuffled(n: int, seed: Any) -> np.ndarray:
    """numpy's ``Generator.shuffle`` of ``arange(n)`` seeded with ``seed`` (the order of chunks of
    fewer than :data:`KEYED_MIN_ROWS` rows). Shuffling an int32 ``arange`` makes the same draws as
    ``Generator.permutation(n)``, so the order is the same, in half the bytes."""
    order = np.arange(n, dtype=index_dtype(n))
    np.random.default_rng(seed).shuffle(order)
    return order


def keyed_params(n: int, seed: Any) -> "tuple[np.dtype, np.ndarray, int, int]":
    """``(word, keys, mask, s)`` of the keyed order of ``n >= 2`` rows (see the module docstring):
    ``keys`` holds ``a, m, b`` of each round, in order."""
    k = max(1, int(n - 1).bit_length())
    word = np.dtype(np.uint32) if k <= 32 else np.dtype(np.uint64)
    mask = (1 << k) - 1
    keys = np.random.SeedSequence(seed).generate_state(3 * ROUNDS, word).astype(word)
    keys[0::3] &= word.type(mask)
    keys[1::3] |= word.type(1)
    keys[2::3] &= word.type(mask)
    return word, keys, mask, (k + 1) // 2


def _rounds(x: np.ndarray, keys: np.ndarray, mask: Any, s: Any) -> np.ndarray:
    """The keyed bijection applied to ``x`` in place (numpy; see the module docstring)."""
    with np.errstate(over="ignore"):
        for r in range(ROUNDS):
            x ^= keys[3 * r]
            x *= keys[3 * r + 1]
            x &= mask
            x ^= x >> s
            x += keys[3 * r + 2]
            x &= mask
    return x


def keyed_order_host(n: int, seed: Any) -> np.ndarray:
    """The keyed order of ``n >= 2`` rows with numpy (vectorized cycle walking)."""
    word, keys, mask, s = keyed_params(n, seed)
    m, sh, limit = word.type(mask), word.type(s), word.type(n)
    x = _rounds(np.arange(n, dtype=word), keys, m, sh)
    todo = np.flatnonzero(x >= limit)
    while todo.size:
        y = _rounds(x[todo], keys, m, sh)
        x[todo] = y
        todo = todo[y >= limit]
    return x.astype(index_dtype(n))


def row_order(n: int, seed: Any) -> Optional[np.ndarray]:
    """The row order of a chunk of ``n`` rows on the host: None below 2 rows, numpy's shuffle below
    :data:`KEYED_MIN_ROWS`, else the keyed order."""
    if n <= 1:
        return None
    return shuffled(n, seed) if n < KEYED_MIN_ROWS else keyed_order_host(n, seed)


#: the CUDA source of the keyed order's kernel (one thread per output position; ``T`` the word,
#: ``O`` the index dtype): the same arithmetic as :func:`_rounds`, walked until below ``n``
KEYED_ORDER_KERNEL = """
T x = (T)i;
do {
    for (int r = 0; r < rounds; r++) {
        x ^= keys[3 * r];
        x *= keys[3 * r + 1];
        x &= mask;
        x ^= x >> s;
        x += keys[3 * r + 2];
        x &= mask;
    }
} while (x >= n);
y = (O)x;
"""


__all__ = ["KEYED_MIN_ROWS", "ROUNDS", "index_dtype", "keyed_order_host", "keyed_params", "row_order", "shuffled"]
