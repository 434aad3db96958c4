"""The loader's seeded row orders (tabprep.backend.permute): the documented keyed order against a
plain-Python reference, every row once, randomness checks, and the GPU's kernel equal to the host."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from tabprep.backend import permute
from tabprep.backend.core import HostDevice


def reference_order(n: int, seed) -> list:
    """The module docstring's algorithm, element by element with Python integers."""
    k = max(1, (n - 1).bit_length())
    word_bits = 32 if k <= 32 else 64
    mask = (1 << k) - 1
    s = (k + 1) // 2
    state = [int(v) for v in np.random.SeedSequence(seed).generate_state(
        3 * permute.ROUNDS, np.uint32 if word_bits == 32 else np.uint64)]
    keys = []
    for r in range(permute.ROUNDS):
        keys.append((state[3 * r] & mask, state[3 * r + 1] | 1, state[3 * r + 2] & mask))
    wrap = (1 << word_bits) - 1

    def f(x: int) -> int:
        for a, m, b in keys:
            x ^= a
            x = (x * m) & wrap
            x &= mask
            x ^= x >> s
            x = (x + b) & wrap
            x &= mask
        return x

    out = []
    for i in range(n):
        x = f(i)
        while x >= n:
            x = f(x)
        out.append(x)
    return out


@pytest.mark.parametrize("n", [2, 3, 5, 64, 1000, 4097, permute.KEYED_MIN_ROWS + 7])
def test_keyed_order_equals_the_documented_algorithm(n):
    for seed in ([0, 0, 1], [12345, 3, 7]):
        got = permute.keyed_order_host(n, seed)
        assert got.dtype == np.int32
        assert got.tolist() == reference_order(n, seed)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 20_000), seed=st.lists(st.integers(0, 2 ** 63 - 1), min_size=1, max_size=3))
def test_keyed_order_is_a_permutation(n, seed):
    order = permute.keyed_order_host(n, seed)
    assert len(order) == n
    np.testing.assert_array_equal(np.sort(order), np.arange(n))
    np.testing.assert_array_equal(order, permute.keyed_order_host(n, seed))   # reproducible


def test_row_order_below_the_threshold_is_numpys_permutation_and_above_it_keyed():
    n = permute.KEYED_MIN_ROWS - 1
    np.testing.assert_array_equal(permute.row_order(n, [4, 2]), np.random.default_rng([4, 2]).permutation(n))
    n = permute.KEYED_MIN_ROWS
    np.testing.assert_array_equal(permute.row_order(n, [4, 2]), permute.keyed_order_host(n, [4, 2]))
    assert permute.row_order(1, [4, 2]) is None and permute.row_order(0, [4, 2]) is None
    np.testing.assert_array_equal(HostDevice().row_order(n, [4, 2]), permute.keyed_order_host(n, [4, 2]))
    assert not np.array_equal(permute.row_order(n, [4, 2]), permute.row_order(n, [4, 3]))


def test_keyed_order_looks_like_a_uniform_shuffle():
    n, b = 1_000_003, 4096
    order = permute.keyed_order_host(n, [7, 0, 1]).astype(np.int64)
    # a batch-sized window is a uniform sample of the chunk: its mean and spread, and its spread over
    # 64 bins of the rows, as a uniform sample's (without replacement)
    windows = order[: (n // b) * b].reshape(-1, b)
    sd = np.sqrt((n ** 2 - 1) / 12 / b * (1 - b / n))
    z = (windows.mean(axis=1) - (n - 1) / 2) / sd
    assert abs(z.mean()) < 4 / np.sqrt(len(z)) and 0.85 < z.std() < 1.15
    counts = np.array([np.bincount(w * 64 // n, minlength=64) for w in windows[:100]])
    assert stats.chisquare(counts.sum(axis=0)).pvalue > 1e-4
    # neighbours and positions are not related
    assert abs(np.corrcoef(order[:-1], order[1:])[0, 1]) < 0.01
    assert abs(stats.spearmanr(np.arange(n), order).statistic) < 0.01
    # the first value over seeds: uniform over deciles
    m = permute.KEYED_MIN_ROWS + 123
    firsts = [permute.keyed_order_host(m, [s])[0] * 10 // m for s in range(800)]
    assert stats.chisquare(np.bincount(firsts, minlength=10)).pvalue > 1e-4


def test_loader_epoch_with_big_chunks_serves_every_row_once_in_the_keyed_order(tmp_path):
    import pandas as pd

    from tabprep.loader import DataLoader

    n = 150_000
    pd.DataFrame({"x": np.arange(n, dtype=np.int64), "y": np.zeros(n, np.float32)}).to_parquet(
        tmp_path / "a.parquet", row_group_size=50_000)
    ld = DataLoader(str(tmp_path / "a.parquet"), 8192, cat_names=["x"], label_names=["y"], shuffle=True,
                    seed=3, buffer_size=n, device="cpu")
    got = np.concatenate([b["x"] for b in ld])
    np.testing.assert_array_equal(np.sort(got), np.arange(n))
    plan = ld.plan(0)
    assert len(plan.chunks) == 1
    np.testing.assert_array_equal(got, np.asarray(reference_order(n, plan.chunk_seed(0)), np.int64))


@pytest.mark.gpu
@pytest.mark.parametrize("n", [2, 1000, permute.KEYED_MIN_ROWS, permute.KEYED_MIN_ROWS + 1, (1 << 20) + 3, 3_333_333])
def test_gpu_row_order_equals_the_host(n):
    cupy = pytest.importorskip("cupy")
    from tabprep.backend.core import CudaDevice

    dev = CudaDevice(0)
    for seed in ([0, 1, 2], [2 ** 40, 9]):
        got = dev.row_order(n, seed)
        assert isinstance(got, cupy.ndarray) and got.dtype == np.int32
        np.testing.assert_array_equal(cupy.asnumpy(got), permute.row_order(n, seed))


@pytest.mark.gpu
def test_gpu_loader_batches_with_keyed_orders_equal_the_cpus(tmp_path):
    cupy = pytest.importorskip("cupy")
    import pandas as pd

    from tabprep.loader import DataLoader

    n = 300_001
    rng = np.random.default_rng(0)
    pd.DataFrame({"x": rng.integers(0, 1 << 40, n), "f": rng.normal(size=n).astype(np.float32),
                  "y": rng.integers(0, 2, n).astype(np.float32)}).to_parquet(tmp_path / "a.parquet",
                                                                             row_group_size=70_000)

    def batches(device):
        ld = DataLoader(str(tmp_path / "a.parquet"), 10_000, cat_names=["x"], cont_names=["f"], label_names=["y"],
                        shuffle=True, seed=11, buffer_size=140_000, parts_per_chunk=1, device=device)
        return [{k: (cupy.asnumpy(v) if isinstance(v, cupy.ndarray) else np.asarray(v)) for k, v in b.items()}
                for b in ld]

    cpu, gpu = batches("cpu"), batches(0)
    assert len(cpu) == len(gpu)
    for a, b in zip(cpu, gpu):
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])
