"""Nested list columns (``list<list<...>>``) in serving: requests send nested lists per row; the
kernels run on one flat list of leaves per row (the ops that serve nested columns are
element-wise on the leaves), and the structure comes back around the outputs of the same name.

Outputs of a nested column ``x``: ``x__values`` (leaves) and ``x__nnzs`` (leaves per row), the
loader's (NVTabular's) layout, plus ``x__row_lengths_0`` (lists per row) and ``x__row_lengths_k``
(lengths of the level-``k`` lists) for ``tf.RaggedTensor.from_nested_row_lengths``. One row
(``row_values``) gives the nested Python list. Null rows and null inner lists read as empty.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..schema import ColumnSchema, Schema
from .columns import ServingInputError
from .kernels import ServingBuildError

#: Structure of one nested value: per level, the lengths of its lists (outermost first)
Structure = List[List[int]]


def flat_schema(schema: Schema) -> Schema:
    """``schema`` with nested columns described by their leaves (one list level)."""
    if not any(c.depth > 1 for c in schema):
        return schema
    return Schema(c.with_(dtype=c.leaf_dtype, value_counts=None) if c.depth > 1 else c for c in schema)


def nested_columns(schema: Schema) -> Dict[str, int]:
    return {c.name: c.depth for c in schema if c.depth > 1}


def flatten_value(name: str, v: Any, depth: int) -> Tuple[Optional[List[Any]], Structure]:
    """(leaves, per-level lengths) of one row's nested value (None stays None)."""
    if v is None:
        return None, [[0]] + [[] for _ in range(depth - 1)]
    levels: Structure = []
    cur = [v]
    for level in range(depth):
        lengths, nxt = [], []
        for item in cur:
            if item is None:
                lengths.append(0)
                continue
            if isinstance(item, np.ndarray):
                item = item.tolist()
            if not isinstance(item, (list, tuple)):
                raise ServingInputError(f"column {name!r} holds lists nested {depth} levels deep: level {level} of a "
                                        f"row must be a list, got {type(item).__name__} {item!r}", name)
            lengths.append(len(item))
            nxt.extend(item)
        levels.append(lengths)
        cur = nxt
    for x in cur:
        if isinstance(x, (list, tuple, np.ndarray)):
            raise ServingInputError(f"column {name!r}: deeper nesting than fitted ({depth} levels)", name)
    # levels[0] == [len(row)]; levels[k] lengths of the level-k lists
    return cur, levels


def value_depth(v: Any) -> int:
    """List levels of a request value, following its first non-empty lists (0 for a scalar or None)."""
    depth = 0
    while isinstance(v, (list, tuple, np.ndarray)):
        depth += 1
        v = next((x for x in v if x is not None and not (isinstance(x, (list, tuple)) and not x)),
                 next((x for x in v if x is not None), None))
    return depth


def renest(leaves: Optional[List[Any]], structure: Structure) -> Optional[List[Any]]:
    """The nested Python value of ``leaves`` cut by ``structure`` (see :func:`flatten_value`)."""
    if leaves is None:
        return None
    cur = list(leaves)
    for lengths in reversed(structure[1:]):
        out, pos = [], 0
        for n in lengths:
            out.append(cur[pos:pos + n])
            pos += n
        cur = out
    return cur


def flatten_row(row: Any, nested: Dict[str, int]) -> Tuple[Dict[str, Any], Dict[str, Structure]]:
    """A request row with its nested columns flattened to leaves, and their structures."""
    out = dict(row)
    structures = {}
    for c, depth in nested.items():
        if c in out:
            out[c], structures[c] = flatten_value(c, out[c], depth)
    return out, structures


def flatten_batch(data: Any, nested: Dict[str, int]) -> Tuple[Dict[str, Any], Dict[str, List[Structure]]]:
    """A request batch (column -> rows) with its nested columns flattened row by row."""
    out = {c: data[c] for c in data} if not hasattr(data, "columns") else {c: data[c] for c in data.columns}
    structures: Dict[str, List[Structure]] = {}
    for c, depth in nested.items():
        if c not in out:
            continue
        rows = out[c].tolist() if hasattr(out[c], "tolist") else list(out[c])
        flat = [flatten_value(c, v, depth) for v in rows]
        out[c] = [f for f, _ in flat]
        structures[c] = [s for _, s in flat]
    return out, structures


def row_lengths_outputs(name: str, structures: Sequence[Structure]) -> Dict[str, np.ndarray]:
    """``name__row_lengths_k`` arrays of a batch (k = 0: lists per row)."""
    if not structures:
        return {}
    depth = len(structures[0])
    out = {f"{name}__row_lengths_0": np.array([s[0][0] for s in structures], dtype=np.int64)}
    for k in range(1, depth):
        out[f"{name}__row_lengths_{k}"] = np.array([n for s in structures for n in s[k]], dtype=np.int64)
    return out


def check_elementwise(op: Any, columns: Sequence[str], schema: Schema) -> None:
    """Refuse an op that is not element-wise on the leaves of a nested input (serving runs on leaves)."""
    nested = [c for c in columns if c in schema and schema[c].depth > 1]
    if nested and getattr(op, "supports_nested", False) != "leaves" and type(op).__name__ != "ValueCount":
        raise ServingBuildError(f"cannot serve {op.label} on the nested list column(s) {nested}: serving runs "
                                f"nested columns as one list of leaves per row, which only ops element-wise on "
                                f"the leaves keep right")


def output_names(name: str, col: ColumnSchema) -> List[str]:
    return [f"{name}__row_lengths_{k}" for k in range(col.depth)]
