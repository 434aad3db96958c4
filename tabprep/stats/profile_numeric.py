"""The exact part of a data profile's partial of a primitive numeric column, with numpy on views
of Arrow's buffers (:mod:`tabprep.stats.profile` builds the partial): the chunks' values and
null masks, the strided sample, and the exact count, mean, M2, min and max (the sample's sorted
runs: ``tabprep.backend.sorted_sample``). The min and max of an int column are Python ints
(exact beyond 2**53), of a float column floats."""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .moments import MinMax, Moments


#: Arrow types whose values buffer numpy reads as it is
_HOST_TYPES = {pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64,
               pa.uint8(): np.uint8, pa.uint16(): np.uint16, pa.uint32(): np.uint32, pa.uint64(): np.uint64,
               pa.float32(): np.float32, pa.float64(): np.float64}


def _host_type(t: pa.DataType) -> Optional[np.dtype]:
    dt = _HOST_TYPES.get(t)
    return None if dt is None else np.dtype(dt)


#: (values, null mask or None) of one chunk of a primitive numeric column: a numpy view of its
#: values buffer and its validity bitmap unpacked (True = null)
Chunk = Tuple[np.ndarray, Optional[np.ndarray]]


def _chunks(arr: Any) -> List[Chunk]:
    """The :data:`Chunk` of every non-empty chunk of a primitive numeric Arrow array or chunked
    array: views of Arrow's values buffers (no copy), each bitmap unpacked once (the exact part
    and the sample both read it)."""
    from ..backend.columns import null_mask

    dtype = _host_type(arr.type)
    out: List[Chunk] = []
    for c in (arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]):
        if len(c):
            values = np.frombuffer(c.buffers()[1], dtype=dtype, count=len(c), offset=c.offset * dtype.itemsize)
            out.append((values, null_mask(c) if c.null_count else None))
    return out


def _host_values(chunks: List[Chunk], step: int) -> np.ndarray:
    """The non-null values of every ``step``-th row (rows 0, step, 2 step...) of a column's
    :data:`Chunk` list, as numpy: strided views of the values (no copy of the rows left out, no
    concatenation of the chunks first), their nulls dropped (the unpacked mask strided alike)."""
    return _host_values_owned(chunks, step)[0]


def _host_values_owned(chunks: List[Chunk], step: int) -> "tuple[np.ndarray, bool]":
    """(:func:`_host_values`, whether that array is a new one: nulls dropped or chunks joined, so
    the caller may sort it in place; else it is a view of a buffer others read)."""
    out, start = [], 0
    for values, mask in chunks:
        first = (-start) % step  # the chunk's first sampled row
        start += len(values)
        if first >= len(values):
            continue
        if step > 1:
            values = values[first::step]
        if mask is not None:
            values = values[~(mask[first::step] if step > 1 else mask)]
        out.append((values, mask is not None))
    if not out:
        return np.zeros(0, dtype=chunks[0][0].dtype if chunks else np.float64), True
    if len(out) == 1:
        return out[0]
    return np.concatenate([v for v, _ in out]), True


def _finite(values: np.ndarray, owned: bool = False) -> "tuple[np.ndarray, bool]":
    """(the finite values of a float array, whether that array is a new one): ``values`` itself
    (``owned`` as given) when all are finite: no copy."""
    ok = np.isfinite(values)
    return (values, owned) if ok.all() else (values[ok], True)


#: fewest rows in one block of the int64 sums of :func:`_host_moments`: values so large that a
#: block must be shorter go to Arrow's float kernels (:func:`_exact_moments`)
_MIN_BLOCK = 4096


def _host_moments(col: Any, non_finite: int, chunks: Optional[List[Chunk]] = None,
                  seen: Optional[Tuple[Any, Any]] = None) -> "tuple[Moments, MinMax]":
    """:func:`_exact_moments` of a primitive numeric Arrow column, in fewer passes for 64-bit
    ints, from its :data:`Chunk` list (read from ``col`` when None): the min and max of every slot
    of a values buffer (numpy, no copy), checked against the null slots' values; the sum and the
    sum of squares of every slot less those of the null slots (nothing when they all hold 0, as
    Arrow's parquet reader leaves them: :func:`_null_slots`; else a small gather), in int64 over
    blocks short enough that no block's sum of squares can reach ``2**63`` (the blocks' sums
    added as Python ints), so the mean and M2 are the exact rationals rounded once (Python's int
    division rounds correctly). Other columns (floats, NaN/inf to drop, narrow ints, a slot of
    magnitude ``2**25.5`` (4.7e7) or more, where blocks would be shorter than :data:`_MIN_BLOCK`
    rows): :func:`_exact_moments`. A gather of the non-null values into a new array cost more
    than these passes (fresh pages). ``seen``: the smallest and largest of some valid values
    (the sample's), which need no check. The sum of squares is numpy's ``einsum`` (int64, ~1.5x
    faster than ``dot``'s integer loop)."""
    if non_finite or col.type not in (pa.int64(), pa.uint64()):
        exact = pc.filter(col, pc.is_finite(col)) if non_finite else col
        return _exact_moments(exact)
    if chunks is None:
        chunks = _chunks(col)
    n = len(col) - col.null_count
    if n == 0:
        return Moments(0, 0.0, 0.0), MinMax(None, None)
    lo = hi = None
    s1 = s2 = 0
    for values, mask in chunks:
        amin, amax = int(values.min()), int(values.max())  # (of every slot: null slots too)
        big = max(abs(amin), abs(amax))
        if big >= 1 << 31 or (_MIN_BLOCK * big * big >= 1 << 63):  # no useful block length
            return _exact_moments(col)
        v = values.view(np.int64) if values.dtype == np.uint64 else values  # (< 2**31: same numbers)
        junk, zero_slots = _null_slots(v, mask)
        if zero_slots is not None:  # every null slot holds 0: nothing to subtract
            if zero_slots[0] == v.size:
                continue
            clo, chi = _zero_slot_extrema(v, amin, amax, zero_slots[1], seen)
        else:
            if junk.size == v.size:
                continue
            clo, chi = _valid_extrema(v, mask, junk, amin, amax, seen)
        lo = clo if lo is None else min(lo, clo)
        hi = chi if hi is None else max(hi, chi)
        block = (1 << 63) // (big * big + 1) if big else v.size
        for part, sign in ((v, 1), (junk, -1)) if junk is not None else ((v, 1),):
            for i in range(0, part.size, block):
                b = part[i:i + block]
                s1 += sign * int(b.sum())
                s2 += sign * int(np.einsum("i,i->", b, b))
    return Moments(n, s1 / n, (n * s2 - s1 * s1) / n), MinMax(int(lo), int(hi))  # (exact ints: beyond 2**53 too)


def _null_slots(v: np.ndarray, mask: Optional[np.ndarray]) -> "tuple[Optional[np.ndarray], Optional[tuple[int, int]]]":
    """What the null slots of the int64 values ``v`` hold: ``(None, (null slots, valid zeros))``
    when every null slot holds 0 (what Arrow's parquet reader writes there: checked, two cheap
    passes over ``v != 0``), else ``(their values, None)`` (a gather of their positions, ~5x the
    cost of the check: ``flatnonzero`` of a bool mask runs at ~1 ns a row). No mask: no slot."""
    if mask is None:
        return v[:0], None
    nz = v != 0
    zeros = v.size - int(np.count_nonzero(nz))
    np.logical_and(nz, mask, out=nz)
    if not nz.any():
        nulls = int(np.count_nonzero(mask))
        return None, (nulls, zeros - nulls)
    return v.take(np.flatnonzero(mask)), None


def _zero_slot_extrema(v: np.ndarray, amin: int, amax: int, valid_zeros: int,
                       seen: Optional[Tuple[Any, Any]] = None) -> "tuple[int, int]":
    """The min and max of the non-null slots of ``v`` (some are), given ``amin`` / ``amax`` of every
    slot, when every null slot holds 0 and ``valid_zeros`` valid slots do: an extreme other than 0
    is a valid value's; 0 is one when a valid slot holds it (or ``seen`` has it). Else the valid
    values are all > 0 (0 is ``amin``) or all < 0 (0 is ``amax``), and the extreme is the smallest
    of ``v - 1`` (resp. ``-v - 1``) read as unsigned, where the zeros wrap to the largest value."""
    if 0 not in (amin, amax) or valid_zeros > 0 or (seen is not None and 0 in (int(seen[0]), int(seen[1]))):
        return amin, amax
    if amin == 0:
        return int(np.subtract(v, 1).view(np.uint64).min()) + 1, amax
    return amin, -(int(np.subtract(-1, v).view(np.uint64).min()) + 1)


def _valid_extrema(v: np.ndarray, mask: Optional[np.ndarray], junk: np.ndarray, amin: int, amax: int,
                   seen: Optional[Tuple[Any, Any]] = None) -> "tuple[int, int]":
    """The min and max of the non-null slots of ``v`` (some are), given ``amin`` / ``amax`` of
    every slot and ``junk``, the null slots' values: an extreme of every slot is the valid one
    unless a null slot holds it and no valid slot does; a valid slot holds it when ``seen`` (the
    extremes of some valid values) has it, else the slots holding it are counted; else the valid
    values are gathered (rare: null slots hold zeros, which a valid value rarely ties at an
    extreme alone)."""
    if mask is None or junk.size == 0:
        return amin, amax
    ok = True
    for ext in {amin, amax}:
        if seen is not None and ext in (int(seen[0]), int(seen[1])):
            continue
        if (junk == ext).any() and np.count_nonzero(v == ext) == np.count_nonzero(junk == ext):
            ok = False
    if ok:
        return amin, amax
    valid = v[~mask]
    return int(valid.min()), int(valid.max())


def _exact_moments(col: Any) -> "tuple[Moments, MinMax]":
    """Count, mean, M2, min and max of the non-null values of a numeric Arrow array (finite
    already), with Arrow's kernels (one pass each, no numpy copy)."""
    n = len(col) - col.null_count
    if n == 0:
        return Moments(0, 0.0, 0.0), MinMax(None, None)
    mm = pc.min_max(col)
    mean = float(pc.mean(col).as_py())
    var = float(pc.variance(col, ddof=0).as_py())
    return Moments(n, mean, var * n), MinMax(extreme(mm["min"].as_py()), extreme(mm["max"].as_py()))


def extreme(v: Any) -> Any:
    """A column's min or max as the profile keeps it: a Python int for an int value (exact
    beyond 2**53: int64 / uint64 ids, microsecond times), a float otherwise (floats, decimals);
    None stays None."""
    if v is None:
        return None
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v)
    return float(v)
