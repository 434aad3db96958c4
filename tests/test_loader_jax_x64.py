"""JAX with 64-bit types off (its default) turns int64 into int32 by dropping the high bits: the
JAX loader must refuse such values by name instead of handing training silently different ids."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

jax = pytest.importorskip("jax")
pytestmark = pytest.mark.jax

import tabprep as tp  # noqa: E402
from tabprep import ops  # noqa: E402
from tabprep.loader.jax import JaxLoader  # noqa: E402

BIG = 2**40 + 3


def _frame(big_value: int) -> pd.DataFrame:
    return pd.DataFrame({"user": np.array([1, big_value, 7, 9], dtype="int64"),
                         "x": np.array([0.5, 1.5, 2.5, 3.5]),
                         "y": np.array([0.0, 1.0, 0.0, 1.0], dtype="float32")})


@pytest.mark.parametrize("role", ["cats", "conts"])
def test_int64_beyond_int32_is_refused_naming_column_and_fix(role):
    assert not jax.config.jax_enable_x64   # the default this test is about
    names = {"cats": ["user"], "conts": ["x"]} if role == "cats" else {"cats": [], "conts": ["user", "x"]}
    loader = JaxLoader(tp.Dataset(_frame(BIG)), batch_size=4, labels=["y"], **names)
    with pytest.raises(OverflowError) as err:
        next(iter(loader))
    msg = str(err.value)
    assert "'user'" in msg and "jax_enable_x64" in msg and str(BIG) in msg


def test_int64_within_int32_passes_with_the_same_values():
    loader = JaxLoader(tp.Dataset(_frame(2**31 - 1)), batch_size=4, cats=["user"], conts=["x"], labels=["y"])
    x, y = next(iter(loader))
    assert np.asarray(x["user"]).tolist() == [1, 2**31 - 1, 7, 9]
    assert np.asarray(y).tolist() == [0.0, 1.0, 0.0, 1.0]


def test_categorify_ids_need_no_check_and_pass():
    # ids of a fitted Categorify are bounded by its vocabulary (the schema's domain): within int32
    df = _frame(BIG)
    wf = tp.Workflow((["user"] >> ops.Categorify()) + ["x", "y"])
    out = wf.fit_transform(tp.Dataset(df)).compute()
    loader = JaxLoader(tp.Dataset(out), batch_size=4, cats=["user"], conts=["x"], labels=["y"])
    x, _ = next(iter(loader))
    assert np.asarray(x["user"]).tolist() == out["user"].tolist()


def test_list_leaves_beyond_int32_are_refused():
    df = pd.DataFrame({"tags": pd.Series([[1, 2], [BIG], [3]]), "y": np.array([0.0, 1.0, 0.0], dtype="float32")})
    loader = JaxLoader(tp.Dataset(df), batch_size=3, cats=["tags"], labels=["y"])
    with pytest.raises(OverflowError, match="'tags'.*jax_enable_x64"):
        next(iter(loader))



_GPU = pytest.param(0, marks=[pytest.mark.gpu, pytest.mark.skipif(
    not tp.backend.has_cudf() or not any(dv.platform == "gpu" for dv in jax.devices()),
    reason="needs cuDF and JAX on a GPU")])


@pytest.mark.parametrize("device", ["cpu", _GPU])
def test_list_column_checked_at_every_batch_of_a_chunk(device):
    # the scalar columns of a chunk are checked once, at its first batch; a list column is not in
    # the chunk's blocks and must still be checked batch by batch (the names left to check are kept
    # per chunk, not dropped after the first batch)
    tags = [[1], [2], [3], [4], [5], [6], [7, BIG]]
    df = pd.DataFrame({"tags": pd.Series(tags), "user": np.arange(7, dtype="int64"),
                       "y": np.zeros(7, dtype="float32")})
    loader = JaxLoader(tp.Dataset(df, cpu=device == "cpu"), batch_size=2, cats=["tags", "user"], labels=["y"],
                       device=device)
    it = iter(loader)
    seen = [np.asarray(next(it)[0]["user"]).tolist() for _ in range(3)]
    assert seen == [[0, 1], [2, 3], [4, 5]]
    with pytest.raises(OverflowError, match="'tags'.*jax_enable_x64"):
        next(it)


@pytest.mark.parametrize("device", ["cpu", _GPU])
def test_scalar_beyond_int32_late_in_a_chunk_is_refused_at_its_first_batch(device):
    user = np.arange(8, dtype="int64")
    user[7] = BIG
    df = pd.DataFrame({"user": user, "y": np.zeros(8, dtype="float32")})
    loader = JaxLoader(tp.Dataset(df, cpu=device == "cpu"), batch_size=2, cats=["user"], labels=["y"], device=device)
    with pytest.raises(OverflowError, match=f"'user' holds {BIG}"):
        next(iter(loader))
