"""Batches cut without their block columns' views (``DataLoader.iterate(views=False)``, what the
framework adapters read): the same rows as the whole batches, which users still get."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tabprep as tp
from tabprep import ops
from tabprep.backend import to_numpy
from tabprep.loader import DataLoader, RaggedBatch
from tabprep.loader.blocks import with_views

N = 2_300


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("block_views")
    rng = np.random.default_rng(5)
    start = 0
    for f, n in enumerate((700, 1_000, 600)):   # chunks of 2 files: batches cross chunk ends (joined)
        df = pd.DataFrame({
            "row": np.arange(start, start + n, dtype="int64"),
            "C1": rng.integers(0, 50, n),
            "I1": rng.normal(size=n).astype("float32"),
            "tags": [list(rng.integers(0, 9, rng.integers(0, 4))) for _ in range(n)],
            "label": rng.integers(0, 2, n).astype("int32"),
        })
        pq.write_table(pa.Table.from_pandas(df, preserve_index=False), str(d / f"p{f}.parquet"))
        start += n
    return str(d)


def _loader(path: str, **kw) -> DataLoader:
    args = dict(batch_size=256, label_names=["label"], cat_names=["row", "C1", "tags"], cont_names=["I1"],
                buffer_size=500, parts_per_chunk=2, seed=3, shuffle=True, device="cpu")
    args.update(kw)
    return DataLoader(path, **args)


def _plain(batch) -> dict:
    """{column: list of values} (list columns as lists of lists), from a whole batch."""
    out = {}
    for name, value in batch.items():
        if isinstance(value, RaggedBatch):
            values, lengths = to_numpy(value.values), to_numpy(value.lengths)
            ends = np.cumsum(lengths)
            out[name] = [values[e - n:e].tolist() for e, n in zip(ends, lengths)]
        else:
            out[name] = to_numpy(value).tolist()
    return out


def test_users_still_get_whole_batches(data):
    for batch in _loader(data):
        assert set(batch) == {"row", "C1", "I1", "tags", "label"} and batch.order is None


@pytest.mark.parametrize("wf", [False, True])
def test_batches_without_views_made_whole_equal_the_whole_batches(data, wf):
    """Every batch of an epoch (joined ones, the short last one) without its block columns: the
    blocks hold them, the list column stays, and ``with_views`` gives the batch a user gets, in
    the same column order."""
    whole_loader, lean_loader = _loader(data), _loader(data)
    if wf:   # (online: the chunks are the workflow's output frames)
        workflow = tp.Workflow((["C1"] >> ops.HashBucket(num_buckets=7)) + (["I1"] >> ops.Clip(min_value=0))
                               + ["row", "tags", "label"])
        whole_loader, lean_loader = whole_loader.map(workflow), lean_loader.map(workflow)
    whole = list(whole_loader)
    lean = list(lean_loader.iterate(views=False))
    assert len(whole) == len(lean) == -(-N // 256)
    joined = 0
    for w, b in zip(whole, lean):
        block_names = {n for names, _ in b.blocks for n in names}
        if b.joined:
            joined += 1
            assert b.order is None and set(b) == set(w)   # (a joined batch is made whole)
        else:
            assert block_names == {"row", "C1", "I1", "label"}
            assert set(b) == {"tags"} and b.order == tuple(w)
        got = with_views(b)
        assert list(got) == list(w) and got.order is None
        assert _plain(got) == _plain(w)
    assert joined >= 1
    rows = np.concatenate([to_numpy(w["row"]) for w in whole])
    np.testing.assert_array_equal(np.sort(rows), np.arange(N))


def test_random_access_switches_between_whole_and_lean_batches(data):
    """``batch_at(i, views=False)`` then ``batch_at(i + 1)`` (whole): the same batches as whole
    access throughout (the batch generator restarts when the kind changes)."""
    ref = [_plain(b) for b in _loader(data)]
    loader = _loader(data)
    for i in range(len(ref)):
        b = loader.batch_at(i, views=bool(i % 2))
        assert (b.order is None) == (bool(i % 2) or b.joined)
        assert _plain(with_views(b)) == ref[i], i


@pytest.mark.torch
def test_framework_batches_equal_the_core_batches(data):
    """An adapter reading lean batches (torch, per column and stacked) hands out the core's values."""
    from tabprep.loader.torch import TorchAsyncItr

    ref = list(_loader(data))
    kw = dict(batch_size=256, cats=["row", "C1"], conts=["I1"], labels=["label"], buffer_size=500,
              parts_per_chunk=2, seed=3, shuffle=True, device="cpu")
    per_col = list(TorchAsyncItr(data, **kw))
    stacked = list(TorchAsyncItr(data, stacked=True, **kw))
    assert len(per_col) == len(stacked) == len(ref)
    for w, (x, y), (xs, ys) in zip(ref, per_col, stacked):
        for name in ("row", "C1", "I1"):
            np.testing.assert_array_equal(x[name].numpy(), to_numpy(w[name]))
        np.testing.assert_array_equal(y.numpy(), to_numpy(w["label"]))
        np.testing.assert_array_equal(xs["cats"].numpy(), np.stack([to_numpy(w["row"]), to_numpy(w["C1"])], axis=1))
        np.testing.assert_array_equal(xs["conts"].numpy()[:, 0], to_numpy(w["I1"]))
        np.testing.assert_array_equal(ys.numpy().reshape(-1), to_numpy(w["label"]))
