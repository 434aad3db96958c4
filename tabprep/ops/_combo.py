"""Combined keys of column groups (``encode_type="combo"`` of Categorify, TargetEncoding and
JoinGroupby groups): one string per row standing for the row's tuple of values."""
from __future__ import annotations

from typing import Any, List, Optional

from .. import backend
from ..stats.combo_order import NULL_PART  # noqa: F401 - the null part's marker, defined with its parser

#: the combined-key format of column groups. 4 (current): as 3, with a float part's -0.0 written
#: as 0.0 (the same value: NVTabular's group-by, and tabprep's single-column vocabularies, count
#: them as one; format 3 made two combinations of them). 3: every part is length-prefixed and a
#: null part has its own marker, so a row is null only when all its parts are null (NVTabular 23.08
#: groups with ``dropna=False``: ``(NaN, "User_C")`` is a combination of its own); 2: injective but
#: null when any part is null; 1, the format of workflows saved before 2, joined the parts with
#: ``\x1f`` alone, so values containing that byte collided. Saved ops record the format they were
#: fitted with and keep using it when loaded (same ids as before).
COMBO_KEY_FORMAT = 4


def combo_key(parts: List[Optional[str]], key_format: int = COMBO_KEY_FORMAT) -> Optional[str]:
    """The combined key of one row's parts (strings; None for a null part): the reference for
    :func:`_combo_series` and the serving kernels. Format 3:
    ``"<len(p0)>:<p0>\x1f<len(p1)>:<p1>\x1f..."`` with :data:`NULL_PART` for a null part, None when
    every part is null; formats 1 and 2: None when any part is null."""
    if key_format >= 3:
        if all(p is None for p in parts):
            return None
        return "".join(NULL_PART if p is None else f"{len(p)}:{p}\x1f" for p in parts)
    if any(p is None for p in parts):
        return None
    if key_format == 1:
        return "\x1f".join(parts)
    return "".join(f"{len(p)}:{p}\x1f" for p in parts[:-1]) + parts[-1]


def _combo_series(df: Any, cols: List[str], key_format: int = COMBO_KEY_FORMAT) -> Any:
    """One string key per row combining several columns' values (:func:`combo_key`).

    Injective: ``("x\x1fy", "z")`` and ``("x", "y\x1fz")`` get different keys. Lengths count
    characters on pandas and cuDF alike (``.str.len()``), as Python's ``len``."""
    # (format 4: x + 0 is x, except that -0.0 becomes 0.0; NaN stays a null. The zero is of the
    # column's own dtype, so that no backend widens a float32 column, which would write other digits)
    parts = [(df[c] + df[c].dtype.type(0) if key_format >= 4 and backend.is_float_series(df[c]) else df[c])
             .astype("str") for c in cols]
    part_nulls = [backend.isnull(df[c]) for c in cols]
    if key_format == 1:
        key = parts[0]
        for p in parts[1:]:
            key = key + "\x1f" + p
    elif key_format == 2:
        key = None
        for p in parts[:-1]:
            piece = p.str.len().astype("str") + ":" + p + "\x1f"
            key = piece if key is None else key + piece
        key = key + parts[-1]
    else:
        key = None
        for p, isnull in zip(parts, part_nulls):
            # lengths as ints whatever the partition holds: with a null in the column pandas' str.len()
            # is float ("1.0"), which made format 2's keys depend on the partition's nulls
            length = p.str.len().fillna(0).astype("int64").astype("str")
            piece = length + ":" + p + "\x1f"
            piece = piece.where(~backend.new_series(isnull, like=piece).astype(bool), NULL_PART)
            key = piece if key is None else key + piece
    nulls = part_nulls[0]
    for m in part_nulls[1:]:
        nulls = (nulls & m) if key_format >= 3 else (nulls | m)
    key = key.where(~backend.new_series(nulls, like=key).astype(bool))
    return key.rename("_".join(cols))


def part_kind(series: Any) -> str:
    """How a combined key's part of this column is ordered
    (:func:`tabprep.stats.combo_order.combo_sort_key`): ``"int"``
    (ints, bools), ``"float"``, or ``"str"`` (strings, and anything else, by its text)."""
    if backend.is_int_like(series):
        return "int"
    if backend.is_float_series(series):
        return "float"
    return "str"
