"""Categorify's checks and notes where it differs from NVTabular 23.08 (NVTabularDifferenceWarning):
a column selected alone and inside a group, a null list row, a ``category`` column's unused levels
and ties. Also the id of a null element inside a list row (:data:`NULL_ELEMENT_ID`).

* A null element of a list column (the row itself is not null) gets the out-of-vocabulary id 2, as
  in NVTabular 23.08 (CPU and, by the same code, GPU): its ``_encode`` merges the flattened leaves
  with the vocabulary file, which holds no null row, fills what found no match with the OOV id,
  and writes the null id 1 only at null *rows*. A null scalar keeps id 1.
* A ``category`` column's unused levels: tabprep learns the values rows hold, whatever the dtype,
  reader or backend (:func:`observed_counts`), and says where NVTabular 23.08 differs, as it does
  for ties (:func:`note_category_ties`: ordered by value here, by the category order there).
"""
from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from .. import backend
from .._warn import first_time, warn_difference

#: the id of a null element inside a list row (Categorify's OOV_START; a null row stays null)
NULL_ELEMENT_ID = 2
#: at most this many values named in a note
_SHOWN = 8


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


def _category_index(counts: Any) -> Any:
    """The index of a series-layout :class:`~tabprep.stats.vocab.Counts` when it is a categorical
    one (a pandas / cuDF ``category`` column's value counts), else None."""
    if counts.keys is not None:
        return None
    index = getattr(counts.counts, "index", None)
    return index if index is not None and str(getattr(index, "dtype", "")) == "category" else None


def _plain(value: Any) -> Any:
    """A numpy scalar as its Python value (shown as users wrote it); anything else as it is."""
    return value.item() if hasattr(value, "item") else value


def _shown(values: List[Any]) -> str:
    more = f", ... ({len(values)} in all)" if len(values) > _SHOWN else ""
    return ", ".join(repr(_plain(v)) for v in values[:_SHOWN]) + more


def observed_counts(op: Any, key: str, counts: Any) -> Any:
    """``counts`` without the zero counts of unused ``category`` levels (pandas' and cuDF's
    ``value_counts`` of a categorical list every level of its dtype), so that the vocabulary is the
    values the rows hold, as for the same column read as strings. Says so once per op and column
    (``NVTabularDifferenceWarning``): NVTabular 23.08 on the CPU keeps them (its pandas groupby is
    ``observed=False``)."""
    if _category_index(counts) is None:
        return counts
    c = counts.counts
    unused = c == 0
    if not backend.any_true(unused.to_numpy() if hasattr(unused, "to_numpy") else unused.values):
        return counts
    levels = list(backend.to_host(c[unused]).index)
    counts.counts = c[~unused]
    if first_time(op.__dict__.setdefault("_warned_unused_levels", set()), key):
        warn_difference(
            f"Categorify: column {key!r} is a pandas 'category' column whose dtype lists {len(levels)} level(s) no "
            f"row holds ({_shown(levels)}). tabprep learns only the values the rows hold (the ids of the column cast "
            f"to strings, on CPU and GPU, from memory or parquet): those levels are out of vocabulary (id 2). "
            f"NVTabular 23.08 on the CPU gives them ids after the seen values (its embedding table is "
            f"{len(levels)} row(s) larger, freq_threshold keeps them, new rows holding them get those ids); its GPU "
            f"path does not. Drop them before fitting (df[{key!r}] = df[{key!r}].cat.remove_unused_categories()) "
            f"to silence this, or give NVTabular's CPU vocabulary with Categorify(vocabs={{{key!r}: [seen values in "
            f"id order, then the unused levels]}}) (docs/migration.md)", stacklevel=4)
    return counts


def note_category_ties(op: Any, key: str, counts: Any, values: Any, freqs: Any) -> None:
    """Once per op and column: values of a ``category`` column seen equally often are ordered by
    ascending value here (the documented tie rule), where NVTabular 23.08 on the CPU sorts the
    column by its categories' order first (pandas sorts a categorical by its codes)."""
    index = _category_index(counts)
    if index is None or len(values) < 2:
        return
    categories = backend.to_host(index.categories) if hasattr(index, "categories") else None
    if categories is None:
        return
    import pandas as pd

    codes = pd.Index(categories).get_indexer(pd.Index(backend.to_host(values)))
    freqs = np.asarray(backend.to_host(freqs))
    crossed = np.flatnonzero((freqs[1:] == freqs[:-1]) & (codes[1:] < codes[:-1]) & (codes[1:] >= 0))
    if not len(crossed) or not first_time(op.__dict__.setdefault("_warned_category_ties", set()), key):
        return
    shown = "; ".join(f"{_plain(values[i])!r} before {_plain(values[i + 1])!r}" for i in crossed[:_SHOWN])
    warn_difference(
        f"Categorify: column {key!r} is a pandas 'category' column whose values seen equally often get ids in "
        f"ascending value order here ({shown}), while NVTabular 23.08 on the CPU orders such a tie by the dtype's "
        f"category order, which lists them the other way round: the ids of these values differ. Put the categories "
        f"in ascending order (df[{key!r}] = df[{key!r}].cat.reorder_categories(sorted(df[{key!r}].cat.categories))) "
        f"or cast the column to its values' type for the same ids in both (docs/migration.md)", stacklevel=4)
