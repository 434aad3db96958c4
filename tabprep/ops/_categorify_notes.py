"""Categorify's checks and notes where it differs from NVTabular 23.08 (NVTabularDifferenceWarning):
a column selected alone and inside a group, a null list row."""
from __future__ import annotations

from typing import Any, Dict, List

from .. import backend
from .._warn import first_time, warn_difference


def check_singled(op: Any, both: List[str], columns: List[str]) -> None:
    """Columns ``both`` are selected alone and inside a group of Categorify ``op``: an error with
    ``encode_type="joint"`` (one output per column), a note once per op with ``"combo"``."""
    if both and op.encode_type == "joint":
        raise ValueError(f"Categorify(encode_type='joint'): column(s) {both} are selected alone and inside a "
                         f"group; joint encoding writes one output per column, so it cannot give {both[0]!r} "
                         f"both its own vocabulary and the group's. Select it once, or use encode_type='combo'")
    if both and op.encode_type == "combo" and not getattr(op, "_singled_noted", False):
        op._singled_noted = True   # once per op (a workflow binds its schema more than once)
        note_singled_in_combo(both, op._vocab_keys(columns))


def note_singled_in_combo(both: List[str], keys: Dict[str, List[str]]) -> None:
    """Categorify(encode_type="combo") with columns ``both`` selected alone and inside a group
    (``keys``: vocabulary name -> columns). NVTabular 23.08 (checked on 23.8.0) writes the group's
    ``domain`` into their schemas, so its ``get_embedding_sizes`` sizes their tables by the group's
    vocabulary (rows no id reaches); tabprep gives each output its own. The ids are the same, so this
    is said where the graph is built (``at_build``), not when a saved workflow is loaded."""
    groups = {key: cols for key, cols in keys.items() if len(cols) > 1}
    pairs = ", ".join(f"{c!r} (group {key!r})" for c in both for key, cols in groups.items() if c in cols)
    warn_difference(f"Categorify(encode_type='combo'): column(s) {pairs} are selected alone and inside a group. "
                    f"The ids are the same as NVTabular 23.08's, but NVTabular writes the group's domain into the "
                    f"single columns' schema, so its get_embedding_sizes sizes their embedding tables by the group's "
                    f"vocabulary; tabprep gives each output its own vocabulary's domain and cardinality "
                    f"(docs/migration.md). No option gives NVTabular's oversized tables: for them, size these columns "
                    f"from the group's cardinality (workflow.output_schema[<group>])", stacklevel=6, at_build=True)


def note_null_list_rows(op: Any, column: str, s: Any) -> None:
    """Once per op and column: a null list row stays null, where NVTabular 23.08 raises on the
    CPU (``TypeError``) and gives an empty list on the GPU (docs/migration.md)."""
    warned = op.__dict__.setdefault("_warned_null_rows", set())
    if column not in warned and backend.any_true(backend.isnull(s)) and first_time(warned, column):
        warn_difference(f"Categorify: list column {column!r} has null rows; they stay null rows here. NVTabular "
                        f"23.08 raises a TypeError on them on the CPU and gives an empty list on the GPU. Put "
                        f"ops.FillMissing(fill_val=[]) on {column!r} before Categorify for empty lists "
                        f"(docs/migration.md)", stacklevel=3)
