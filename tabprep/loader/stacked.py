"""Stacked batches (``stacked=True`` on the framework loaders): a few 2-D arrays per batch.

The default batch layout (:mod:`tabprep.loader._adapter`) hands out one array per column, and
each array a framework makes costs Python time (about 6 us per ``jax.Array`` on an H200: 40
Criteo columns cost more than cutting the batch). With ``stacked=True`` a batch is::

    ({"cats": (B, len(cats)), "conts": (B, len(conts)), <list column>: as unstacked...}, labels)

* ``"cats"`` / ``"conts"``: the scalar categorical / continuous columns, in the order given in
  ``cats`` / ``conts``; a key only when its group has a scalar column;
* list (multi-hot) columns stay per column under their own names, in the unstacked layout
  (``(values, offsets)``, padded ``(B, max_len)``...);
* labels: ``(B,)`` for one label and ``(B, n)`` for several in the PyTorch / JAX loaders (the
  unstacked layout gives a 1-D array for one label and a dict for several); the Keras loader
  gives ``(B, n)`` always (its unstacked single label is ``(B, 1)``);
* dtypes: a group is cast to the numpy ``result_type`` of its columns' batch dtypes (int32 and
  int64 ids give int64; ids and float32 give float64); integer columns without a common integer
  type (uint64 with a signed type) are refused, and a group mixing integers and floats is logged
  once (ids above 2**24 / 2**53 are not exact in float32 / float64).

This module is framework-neutral: the layout of a batch's groups over its blocks
(:func:`stack_layout`) and the stacking with numpy / cupy (:func:`stack_arrays`, used by the
PyTorch and Keras adapters); the JAX loaders stack whole chunks at once
(:mod:`tabprep.loader.jax_stacked`).
"""
from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Sequence, Tuple

import numpy as np

from .. import backend

log = logging.getLogger(__name__)

#: the keys of the stacked groups, in batch order
GROUP_KEYS = ("cats", "conts", "labels")


@dataclass(frozen=True)
class Group:
    """One stacked output: ``names`` (in the user's order) are rows ``runs`` of the batch's blocks.

    ``runs``: ``(block index, first row, end row)`` of consecutive block rows, in column order;
    ``dtype``: the numpy dtype the group is cast to; ``squeeze``: a single column handed out as
    ``(B,)`` (one label in the PyTorch / JAX layout) instead of ``(B, 1)``."""

    key: str
    names: Tuple[str, ...]
    runs: Tuple[Tuple[int, int, int], ...]
    dtype: str
    squeeze: bool


def _runs(places: Sequence[Tuple[int, int]]) -> Tuple[Tuple[int, int, int], ...]:
    """``(block, row)`` places merged into runs of consecutive rows of one block."""
    runs: List[List[int]] = []
    for blk, row in places:
        if runs and runs[-1][0] == blk and runs[-1][2] == row:
            runs[-1][2] += 1
        else:
            runs.append([blk, row, row + 1])
    return tuple(tuple(r) for r in runs)   # type: ignore[misc]


def group_dtype(key: str, names: Sequence[str], dtypes: Sequence[np.dtype]) -> np.dtype:
    """The dtype a group of columns is stacked in: numpy's ``result_type`` of theirs. Integers
    without a common integer type (uint64 beside a signed integer: numpy's answer is float64,
    which rounds ids above 2**53) are refused with the columns named."""
    out = np.result_type(*dtypes)
    if out.kind == "f" and all(d.kind in "iub" for d in dtypes):
        shown = ", ".join(f"{n} ({d})" for n, d in zip(names, dtypes))
        raise TypeError(f"stacked=True: the {key} columns {shown} have no common integer dtype (numpy's result_type is "
                        f"{out}, which rounds large ids). Fix: cast them to one integer type in the workflow "
                        f"(e.g. ops.LambdaOp(lambda c: c.astype('int64'))), or use stacked=False")
    if out.kind == "f" and any(d.kind in "iu" for d in dtypes):
        log.warning("stacked=True: the %s group mixes integer and float columns (%s) and is stacked as %s; "
                    "integers above 2**24 (float32) / 2**53 (float64) are not exact there", key,
                    ", ".join(f"{n} ({d})" for n, d in zip(names, dtypes)), out)
    return out


@functools.lru_cache(maxsize=256)
def stack_layout(blocks: Tuple[Tuple[Tuple[str, ...], str], ...], cats: Tuple[str, ...], conts: Tuple[str, ...],
                 labels: Tuple[str, ...], squeeze_label: bool) -> Tuple[Group, ...]:
    """The stacked groups of a batch whose blocks are ``blocks`` (``(names, dtype str)`` each).

    Columns not in any block (list columns) are left out of the groups; a label not in a block is
    a list column and refused, as in the unstacked layout."""
    place = {n: (i, j) for i, (names, _) in enumerate(blocks) for j, n in enumerate(names)}
    dtypes = [np.dtype(dt) for _, dt in blocks]
    for name in labels:
        if name not in place:
            raise TypeError(f"label {name!r} is a list column; labels must be single-valued")
    listed = [n for n in cats + conts if n not in place]
    clash = sorted(set(listed) & {"cats", "conts"})
    if clash:
        raise ValueError(f"stacked=True: the list column(s) {clash} would share the batch key of the stacked "
                         f"group of that name; rename the column in the workflow, or use stacked=False")
    out = []
    for key, names in zip(GROUP_KEYS, (cats, conts, labels)):
        names = tuple(n for n in names if n in place)
        if not names:
            continue
        places = [place[n] for n in names]
        dtype = group_dtype(key, names, [dtypes[b] for b, _ in places])
        out.append(Group(key, names, _runs(places), dtype.str, squeeze_label and key == "labels" and len(names) == 1))
    return tuple(out)


def scalar_blocks(batch: Dict[str, Any], names: Sequence[str]) -> List[Tuple[Tuple[str, ...], Any]]:
    """Blocks ``(names, (columns, rows) array)`` of a batch's scalar columns grouped by dtype, for
    a batch that has none (joined from chunks whose dtypes differ): one stack per dtype."""
    groups: Dict[str, List[str]] = {}
    for n in names:
        value = batch[n]
        if getattr(value, "ndim", 0) == 1:
            groups.setdefault(value.dtype.str, []).append(n)
    out = []
    for cols in groups.values():
        xp = backend.array_module(batch[cols[0]])
        out.append((tuple(cols), xp.stack([batch[n] for n in cols])))
    return out


def batch_blocks(batch: Any, names: Sequence[str]) -> List[Tuple[Tuple[str, ...], Any]]:
    """The blocks of a loader batch (:attr:`Batch.blocks`), or its scalar columns stacked per dtype."""
    blocks = list(getattr(batch, "blocks", None) or ())
    return blocks if blocks else scalar_blocks(batch, names)


def layout_of(blocks: Sequence[Tuple[Tuple[str, ...], Any]], cats: Sequence[str], conts: Sequence[str],
              labels: Sequence[str], squeeze_label: bool) -> Tuple[Group, ...]:
    """:func:`stack_layout` of blocks given as ``(names, array)``."""
    meta = tuple((tuple(names), arr.dtype.str) for names, arr in blocks)
    return stack_layout(meta, tuple(cats), tuple(conts), tuple(labels), bool(squeeze_label))


def stack_arrays(blocks: Sequence[Tuple[Tuple[str, ...], Any]], groups: Sequence[Group]) -> Dict[str, Any]:
    """The groups of one batch as numpy / cupy arrays ``(B, n)`` (``(B,)`` when squeezed): one
    allocation and one transposing copy per run of block rows (a squeezed group of a block of its
    dtype is a view)."""
    out: Dict[str, Any] = {}
    for g in groups:
        dtype = np.dtype(g.dtype)
        if g.squeeze:
            blk, row, _ = g.runs[0]
            out[g.key] = blocks[blk][1][row].astype(dtype, copy=False)
            continue
        first = blocks[g.runs[0][0]][1]
        xp = backend.array_module(first)
        arr = xp.empty((first.shape[1], len(g.names)), dtype=dtype)
        j = 0
        for blk, r0, r1 in g.runs:
            arr[:, j:j + r1 - r0] = blocks[blk][1][r0:r1].T
            j += r1 - r0
        out[g.key] = arr
    return out


def stack_batch(batch: Any, cats: Sequence[str], conts: Sequence[str], labels: Sequence[str], squeeze_label: bool,
                convert: Callable[[Any], Any]) -> Tuple[Tuple[Group, ...], tuple]:
    """The groups of a loader batch stacked with numpy / cupy, each handed to a framework by
    ``convert`` (one hand-off per group)."""
    blocks = batch_blocks(batch, list(cats) + list(conts) + list(labels))
    groups = layout_of(blocks, cats, conts, labels, squeeze_label)
    arrays = stack_arrays(blocks, groups)
    return groups, tuple(convert(arrays[g.key]) for g in groups)


def split_groups(groups: Sequence[Group], arrays: Sequence[Any]) -> Tuple[Dict[str, Any], Any]:
    """``({"cats": ..., "conts": ...}, labels)`` of a batch's stacked groups (labels None without)."""
    out = {g.key: a for g, a in zip(groups, arrays)}
    return {k: out[k] for k in ("cats", "conts") if k in out}, out.get("labels")


def group_inputs(batch: Any, loader: Any, jax_dtypes: bool, make_input: Callable[..., Any]) -> Tuple[Dict[str, Any], List[str]]:
    """Keras inputs of a loader's stacked feature groups, ``make_input(shape=(n,), dtype=, name=)``
    (``keras.Input``; dtypes as JAX gives them with ``jax_dtypes``: 32-bit with x64 off), and the
    feature columns left per column (list columns)."""
    cats, conts, labels = loader.cat_names, loader.cont_names, loader.label_names
    groups = layout_of(batch_blocks(batch, cats + conts + labels), cats, conts, labels, False)
    inputs = {}
    for g in groups:
        if g.key != "labels":
            dtype = np.dtype(g.dtype)
            if jax_dtypes:
                import jax

                dtype = np.dtype(jax.dtypes.canonicalize_dtype(dtype))
            inputs[g.key] = make_input(shape=(len(g.names),), dtype=str(dtype), name=g.key)
    return inputs, list_names(groups, cats, conts)


def list_names(groups: Sequence[Group], cats: Sequence[str], conts: Sequence[str]) -> List[str]:
    """Feature columns handed out per column beside the stacked groups (list columns)."""
    stacked = {n for g in groups for n in g.names}
    return [n for n in list(cats) + list(conts) if n not in stacked]


__all__ = ["Group", "GROUP_KEYS", "stack_layout", "layout_of", "batch_blocks", "scalar_blocks", "stack_arrays",
           "stack_batch", "split_groups", "group_inputs", "group_dtype", "list_names"]
