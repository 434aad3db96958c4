"""The order of a column group's combined keys (``Categorify(encode_type="combo")``): ties in a
vocabulary are broken by the group's tuple of values, as NVTabular orders them (it sorts the unique
combinations by the group's columns, nulls first), not by the key strings tabprep counts.

The keys are :func:`tabprep.ops._combo.combo_key`'s formats 3 and 4: ``"<len>:<part>\x1f"`` per present
part, :data:`NULL_PART` per null part.
"""
from __future__ import annotations

from typing import Any, List, Optional

#: a null part in formats 3 and 4 (a present part starts with its length's digits)
NULL_PART = "\x1e\x1f"


def combo_parts(key: str) -> List[Optional[str]]:
    """The parts (None for a null part) of a combined key of format 3 or 4 (:func:`tabprep.ops._combo.combo_key`)."""
    parts: List[Optional[str]] = []
    i, n = 0, len(key)
    while i < n:
        if key.startswith(NULL_PART, i):
            parts.append(None)
            i += len(NULL_PART)
            continue
        j = key.index(":", i)
        size = int(key[i:j])
        parts.append(key[j + 1:j + 1 + size])
        i = j + 2 + size   # past the part and its "\x1f"
    return parts


_BOOLS = {"True": 1, "False": 0, "true": 1, "false": 0}


def combo_sort_key(key: str, kinds: Any) -> tuple:
    """The sort key of a combined key (format 3 or 4) that orders combinations as NVTabular does (it sorts
    the group's columns, nulls first): per part, a null first, then ints and floats by value,
    strings by code point (``kinds``: :func:`tabprep.ops._combo.part_kind` of each column)."""
    out = []
    for part, kind in zip(combo_parts(key), kinds):
        if part is None:
            out.append((0, 0))
        elif kind in ("int", "float"):
            out.append((1, _number(part, kind)))
        else:
            out.append((1, part))
    return tuple(out)


def _number(part: str, kind: str) -> Any:
    """A number part's value: an int column's as an int (a bool's as 0 / 1), a float column's as a
    float; an int column read as floats in some partition ("5.0") as a float."""
    if kind == "int":
        if part in _BOOLS:
            return _BOOLS[part]
        try:
            return int(part)
        except ValueError:
            pass
    return float(part)


def combo_order(values: Any, kinds: Any) -> Any:
    """The stable ascending order (int64 positions) of distinct combined keys (format 3 or 4) by their
    tuples of values: :func:`combo_sort_key`'s order. :func:`arrow_order` where Arrow can (a
    finalize of a million combinations costs what the key strings' own sort did: 0.83-1.02x, where
    the Python sort key took 3.8-4.9x; ``benchmarks/combo_order.py``); otherwise (a part holding the
    separator) the Python sort key."""
    import numpy as np
    import pyarrow as pa

    try:
        return arrow_order(values, kinds)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
        sort_keys = [combo_sort_key(v, kinds) for v in values]
        return np.array(sorted(range(len(values)), key=sort_keys.__getitem__), dtype=np.int64)


def arrow_order(values: Any, kinds: Any) -> Any:
    """:func:`combo_order` with Arrow's string kernels: the keys split into their parts, each
    column's parts ranked (numbers by value, strings by code point, which is UTF-8 byte order; a
    null part first) and the ranks sorted together (``numpy.lexsort``, last column first).
    ``ValueError`` where a key does not have one ``"\x1f"`` per part (a part holds that byte)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n, k = len(values), len(kinds)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    keys = pa.array(values, type=pa.large_string())
    if k == 0 or not pc.all(pc.equal(pc.count_substring(keys, "\x1f"), k)).as_py():
        raise ValueError("a part of a combined key holds the separator")
    fields = pc.split_pattern(keys, "\x1f", max_splits=k)
    ranks = []
    for j, kind in enumerate(kinds):
        field = pc.list_element(fields, j)
        null = pc.equal(field, NULL_PART[0])
        # a present part is "<len>:<text>" (the text may hold ':'); a null part becomes "0:" first
        text = pc.list_element(pc.split_pattern(pc.if_else(null, "0:", field), ":", max_splits=1), 1)
        if kind == "int":
            text = pc.if_else(null, "0", text)
            text = _ints(pc.if_else(pc.equal(text, "True"), "1", pc.if_else(pc.equal(text, "False"), "0", text)))
        elif kind == "float":
            text = pc.cast(pc.if_else(null, "0", text), pa.float64())
        rank = pc.rank(text, sort_keys="ascending", tiebreaker="dense").to_numpy().astype(np.int64)
        rank[null.to_numpy(zero_copy_only=False)] = 0   # a null part before every value of its column
        ranks.append(rank)
    return np.lexsort(ranks[::-1]).astype(np.int64)


def _ints(text: Any) -> Any:
    """Arrow strings of an int column's parts as int64, or uint64 where they pass 2**63 - 1."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        return pc.cast(text, pa.int64())
    except pa.ArrowInvalid:
        return pc.cast(text, pa.uint64())
