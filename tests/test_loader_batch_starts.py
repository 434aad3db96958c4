"""Issue 33: a list column's per-batch offsets, made once per chunk (``ragged.add_batch_starts``).

The framework adapters hand a ragged batch over as ``(values, offsets)``. The offsets of the
batches cut at a chunk's batch boundaries are views of one array made per chunk on the preparing
thread; batches joined across chunks, or cut elsewhere, make theirs from the lengths. Either way
every batch's offsets must be the exclusive running sum of its rows' lengths, and the rows must
be those of the data (checked here against pyarrow's own lists, in the row order of a ``row``
column the loader carries along).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tabprep.backend import to_numpy
from tabprep.loader import DataLoader
from tabprep.loader.ragged import _RaggedColumn, _RaggedCut, _slice, add_batch_starts


def _write(folder, n: int, seed: int, files: int = 3, row_group: int = 97) -> list:
    """``n`` rows over ``files`` files: a ``row`` id and ``lst``, lists of 0 to 6 values with nulls."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        k = int(rng.integers(0, 7))
        rows.append(None if rng.random() < 0.05 else [int(v) for v in rng.integers(0, 1000, k)])
    per = -(-n // files)
    for f in range(files):
        lo, hi = f * per, min(n, (f + 1) * per)
        table = pa.table({"row": pa.array(np.arange(lo, hi, dtype=np.int64)),
                          "lst": pa.array(rows[lo:hi], pa.list_(pa.int64())),
                          "y": pa.array((np.arange(lo, hi) % 2).astype(np.float32))})
        pq.write_table(table, str(folder / f"p{f}.parquet"), row_group_size=row_group)
    return [r or [] for r in rows]   # the loader gives a null list as an empty row


def _offsets_of(value) -> np.ndarray:
    """What the adapters hand over as offsets: the per-chunk view, or the lengths' running sum."""
    if isinstance(value, _RaggedCut):
        return to_numpy(value.starts)
    lengths = to_numpy(value.lengths)
    return np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) if len(lengths) else lengths


@pytest.mark.parametrize("batch_size,buffer_size,drop_last", [
    (64, 700, False), (63, 700, False), (64, 700, True), (1, 50, False), (500, 300, False), (2000, 700, False)])
def test_offsets_of_every_batch_are_the_running_sum_of_its_lengths(tmp_path, backend, batch_size, buffer_size,
                                                                   drop_last):
    from conftest import is_cpu

    rows = _write(tmp_path, 1500, seed=batch_size)
    loader = DataLoader(str(tmp_path), batch_size, label_names=["y"], cat_names=["row", "lst"],
                        buffer_size=buffer_size, parts_per_chunk=1, shuffle=True, seed=5, drop_last=drop_last,
                        device="cpu" if is_cpu(backend) else 0)
    loader.batch_starts = True     # as the torch and JAX adapters set it
    cuts = seen = 0
    for batch in loader:
        value = batch["lst"]
        ids = to_numpy(batch["row"])
        values, lengths = to_numpy(value.values), to_numpy(value.lengths)
        offsets = _offsets_of(value)
        assert offsets.dtype == np.int64 and len(offsets) == len(ids)
        ends = np.append(offsets[1:], len(values))
        assert [values[a:b].tolist() for a, b in zip(offsets, ends)] == [rows[i] for i in ids]
        np.testing.assert_array_equal(ends - offsets, lengths)
        cuts += isinstance(value, _RaggedCut)
        seen += 1
    # where chunks hold several batches, most batches lie inside one and take the per-chunk
    # offsets (the test is not vacuous); batches larger than a chunk are all joined
    assert seen
    if 2 * batch_size <= buffer_size:
        assert cuts >= seen // 2, (cuts, seen)


def test_without_an_adapter_asking_the_core_makes_no_batch_starts(tmp_path):
    _write(tmp_path, 300, seed=1)
    loader = DataLoader(str(tmp_path), 64, label_names=["y"], cat_names=["row", "lst"], device="cpu")
    assert not any(isinstance(b["lst"], _RaggedCut) for b in loader)


@pytest.mark.parametrize("first", [0, 1, 5, 63, 64])
@pytest.mark.parametrize("batch_size", [1, 2, 7, 64])
def test_slices_across_a_batch_boundary_fall_back_to_the_lengths(first, batch_size):
    # any [a, b): a view only where the rows are one batch of the layout, and then the right one
    lengths = np.arange(200) % 4
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    col = _RaggedColumn(np.arange(int(offsets[-1])), offsets)
    first = min(first, batch_size - 1) if batch_size > 1 else 0
    add_batch_starts(col, first, batch_size)
    for a in range(0, 120, 3):
        for b in (a, a + 1, a + batch_size - 1, a + batch_size, a + batch_size + 1):
            b = min(b, 200)
            out = _slice(col, a, b)
            want = offsets[a:b] - offsets[a]
            np.testing.assert_array_equal(_offsets_of(out), want)
            if isinstance(out, _RaggedCut) and a >= first and batch_size % 2 == 0:
                assert out.starts.ctypes.data % 16 == 0, (a, b)   # the full batches' views are aligned


def test_ragged_cut_unpacks_as_values_and_lengths():
    out = _slice(_with_starts(), 0, 4)
    assert isinstance(out, _RaggedCut)
    values, lengths = out               # the public RaggedBatch contract: two fields
    np.testing.assert_array_equal(lengths, [1, 0, 2, 1])
    np.testing.assert_array_equal(values, [10, 11, 12, 13])


def _with_starts() -> _RaggedColumn:
    offsets = np.array([0, 1, 1, 3, 4, 6], dtype=np.int64)
    col = _RaggedColumn(np.arange(10, 16), offsets)
    add_batch_starts(col, 0, 4)
    return col
