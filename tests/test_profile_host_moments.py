"""The exact part of a profile's int64 column (count, mean, M2, min, max over the non-null
values), computed from views of Arrow's buffers whatever the null slots hold: checked against
Python ints and ``fractions`` written here."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabprep.stats.profile_numeric import _chunks, _host_moments


def _reference(valid):
    n = len(valid)
    mean = Fraction(sum(valid), n)
    m2 = sum((Fraction(x) - mean) ** 2 for x in valid)
    return n, float(mean), float(m2), float(min(valid)), float(max(valid))


def _check(values, mask, seen=None):
    arr = pa.array(values, mask=mask, type=pa.int64())
    valid = [int(x) for x, m in zip(values, mask) if not m]
    mom, mm = _host_moments(arr, 0, _chunks(arr), seen)
    if not valid:
        assert mom.count == 0 and mm.min is None
        return
    n, mean, m2, lo, hi = _reference(valid)
    assert (mom.count, mm.min, mm.max) == (n, lo, hi)
    assert mom.mean == pytest.approx(mean, rel=1e-15, abs=1e-300)
    assert mom.m2 == pytest.approx(m2, rel=1e-12, abs=1e-9)


@settings(max_examples=150, deadline=None)
@given(data=st.lists(st.tuples(st.integers(-40, 40), st.booleans(), st.integers(-50, 50)), min_size=1, max_size=80),
       zero_slots=st.booleans(), shift=st.sampled_from([0, 1, -1, 7]))
def test_host_moments_whatever_the_null_slots_hold(data, zero_slots, shift):
    """Null slots holding zeros (what Arrow's parquet reader writes) or other values, zeros among
    the valid values or not, all-positive / all-negative columns whose only zeros are null slots."""
    values = np.array([v + shift if not z or v else v for v, _, z in data], dtype=np.int64)
    mask = np.array([m for _, m, _ in data], dtype=bool)
    values[mask] = 0 if zero_slots else np.array([z for _, _, z in data], dtype=np.int64)[mask]
    _check(values, mask)
    pos = np.where(mask, 0 if zero_slots else values, np.abs(values) + 1)  # valid > 0: 0 only in null slots
    _check(pos, mask)
    _check(-pos, mask)


def test_host_moments_of_a_parquet_column_with_nulls(tmp_path):
    """A column read back from parquet (the null slots as the reader leaves them), large enough
    for several blocks: the exact figures of numpy's / Python's ints."""
    r = np.random.default_rng(4)
    n = 300_000
    v = r.integers(1, 1 << 20, n)
    mask = r.random(n) < 0.3
    pq.write_table(pa.table({"x": pa.array(v, mask=mask)}), tmp_path / "x.parquet")
    col = pq.read_table(tmp_path / "x.parquet").column("x")
    mom, mm = _host_moments(col, 0)
    valid = v[~mask]
    s1, s2 = int(valid.sum()), sum(int(x) * int(x) for x in valid.tolist())
    k = valid.size
    assert (mom.count, mm.min, mm.max) == (k, float(valid.min()), float(valid.max()))
    assert mom.mean == s1 / k and mom.m2 == (k * s2 - s1 * s1) / k
