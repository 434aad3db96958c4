"""tabprep.io.planning: the one grouping rule (pieces) and the row splits, as properties."""
from __future__ import annotations

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tabprep.io.planning import group_runs, shard_rows, split_rows  # noqa: E402


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 500), st.integers(0, 2)), max_size=40), st.integers(-5, 1200),
       st.booleans())
def test_group_runs_greedy_cover(items, budget, use_keys):
    sizes = [s for s, _ in items]
    keys = [k for _, k in items] if use_keys else None
    runs = group_runs(sizes, budget, keys)
    # a cover of all items, in order, by non-empty runs
    assert [i for a, b in runs for i in range(a, b)] == list(range(len(sizes)))
    assert all(b > a for a, b in runs)
    cap = max(budget, 1)
    for j, (a, b) in enumerate(runs):
        total = sum(sizes[a:b])
        assert total <= cap or b - a == 1, "only a single oversized item may exceed the budget"
        if keys is not None:
            assert len(set(keys[a:b])) == 1
        if j + 1 < len(runs):  # greedy: the next item could not have joined
            nxt = b
            assert total + sizes[nxt] > cap or (keys is not None and keys[nxt] != keys[b - 1])


def test_group_runs_examples():
    # the loader's case: units of groups (files) of rows, target 250 rows
    assert group_runs([100, 100, 500, 50, 50], 250, keys=[0, 0, 0, 1, 1]) == [(0, 2), (2, 3), (3, 5)]
    assert group_runs([], 10) == []
    assert group_runs([0, 0, 0], 0) == [(0, 3)]


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 5000), st.integers(1, 40), st.sampled_from([1, 1, 2, 3, 7, 64]))
def test_split_rows_even_and_aligned(total, parts, align):
    ranges = split_rows(total, parts, align)
    assert len(ranges) == parts
    assert ranges[0][0] == 0 and ranges[-1][1] == total
    assert all(ranges[k][1] == ranges[k + 1][0] for k in range(parts - 1)), "consecutive"
    units = [-(-(b - a) // align) for a, b in ranges]  # whole or partial units per range
    assert max(units) - min(units) <= 1
    for a, b in ranges[:-1]:
        assert b == total or b % align == 0, "cuts fall on whole units"


def test_split_rows_rejects_no_parts():
    with pytest.raises(ValueError, match="parts"):
        split_rows(10, 0)


@pytest.mark.parametrize("drop_last", [False, True])
def test_shard_rows_equal_counts_and_cover(drop_last):
    for n in (0, 1, 7, 10, 11, 12, 1000):
        for size in (1, 2, 3, 4):
            ranges = [shard_rows(n, size, r, drop_last) for r in range(size)]
            counts = {sum(b - a for a, b in rs) for rs in ranges}
            assert len(counts) == 1, (n, size, drop_last, ranges)
            rows = [i for rs in ranges for a, b in rs for i in range(a, b)]
            if drop_last:
                assert len(rows) == len(set(rows)) == (n // size) * size
            else:
                assert set(rows) == set(range(n)) and len(rows) - n <= size - 1
    with pytest.raises(ValueError, match="global_rank"):
        shard_rows(10, 2, 2, False)


def test_file_row_group_memory_per_column_kind(tmp_path):
    """Per file, classified once: fixed-width columns count (bytes + a null byte) per row, the
    others (strings, lists, bools, dictionaries) their uncompressed parquet size, at least 8
    bytes per row; row groups of different sizes each get their own figure."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tabprep.io.planning import file_row_group_memory, row_group_memory

    n = 1000
    rng = np.random.default_rng(3)
    words = np.array(["a" * k for k in range(1, 60)])
    table = pa.table({
        "i64": pa.array(rng.integers(0, 9, n), pa.int64()),
        "f32": pa.array(rng.normal(size=n).astype(np.float32)),
        "i8": pa.array(rng.integers(0, 9, n).astype(np.int8)),
        "flag": pa.array(rng.integers(0, 2, n).astype(bool)),
        "s": pa.array(words[rng.integers(0, len(words), n)]),
        "tags": pa.array([[1, 2][: k % 3] for k in range(n)], pa.list_(pa.int64())),
        "d": pa.array(words[rng.integers(0, 3, n)]).dictionary_encode(),
    })
    path = tmp_path / "f.parquet"
    pq.write_table(table, path, row_group_size=300)  # groups of 300, 300, 300, 100 rows
    md = pq.read_metadata(path)
    schema = pq.read_schema(path)
    rows, sizes = file_row_group_memory(schema, md)
    assert rows == [300, 300, 300, 100]
    for i, (r, size) in enumerate(zip(rows, sizes)):
        rg = md.row_group(i)
        by_path = {rg.column(j).path_in_schema: rg.column(j).total_uncompressed_size for j in range(rg.num_columns)}
        var = sum(max(by_path[p], r * 8) for p in by_path if p.split(".")[0] in ("flag", "s", "tags", "d"))
        assert size == r * (9 + 5 + 2) + var
        assert size == row_group_memory(schema, rg)
