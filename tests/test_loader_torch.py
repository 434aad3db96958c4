"""The PyTorch adapter (tabprep.loader.torch): NVTabular's TorchAsyncItr / DLDataLoader names,
batches equal to the offline transform, multi-hot layouts, rank sharding, torch DataLoader use."""
from __future__ import annotations

import os
import subprocess
import sys
from typing import Dict, List

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

import tabprep as tp  # noqa: E402
from tabprep import ops  # noqa: E402
from tabprep.loader.torch import DLDataLoader, TorchAsyncItr, _to_torch  # noqa: E402

N = 3000


def _frame(seed: int, n: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    c1 = pd.array(rng.integers(0, 40, n), dtype="Int64")
    c1[rng.random(n) < 0.1] = pd.NA
    x = rng.normal(size=n)
    x[rng.random(n) < 0.05] = np.nan
    return pd.DataFrame({
        "row": np.arange(n, dtype="int64"),
        "C1": c1,
        "C2": rng.integers(0, 10_000, n),
        "x": x,
        "tags": [list(rng.integers(0, 30, rng.integers(0, 5))) for _ in range(n)],   # empty lists too
        "label": rng.integers(0, 2, n).astype("float32"),
    })


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("torch_loader")
    df = _frame(0, N)
    for i in range(2):
        pq.write_table(pa.Table.from_pandas(df.iloc[i * N // 2:(i + 1) * N // 2], preserve_index=False),
                       str(d / f"part{i}.parquet"), row_group_size=500)
    wf = tp.Workflow((["C1", "tags"] >> ops.Categorify()) + (["C2"] >> ops.HashBucket(num_buckets=50))
                     + (["x"] >> ops.FillMissing() >> ops.Normalize()) + ["row", "label"])
    wf.fit(tp.Dataset(str(d), cpu=True))
    offline = wf.transform(tp.Dataset(str(d), cpu=True)).compute().set_index("row").sort_index()
    return str(d), wf, offline


def _itr(d, wf, **kw):
    args = dict(cats=["C1", "C2", "tags", "row"], conts=["x"], labels=["label"], batch_size=256, shuffle=True,
                seed=3, buffer_size=700, parts_per_chunk=2, device="cpu")
    args.update(kw)
    return TorchAsyncItr(tp.Dataset(d, cpu=True), **args).map(wf)


def _rows_of(x: Dict, name: str, fmt: str = "offsets") -> List[list]:
    values, second = (t.numpy() for t in x[name])
    n = len(x["row"])
    if fmt == "offsets":
        ends = np.append(second[1:], len(values))
        return [values[a:b].tolist() for a, b in zip(second, ends)][:n]
    offs = np.concatenate([[0], np.cumsum(second)])
    return [values[offs[i]:offs[i + 1]].tolist() for i in range(n)]


def test_epoch_matches_offline_transform_with_lists_as_offsets(data):
    d, wf, offline = data
    itr = _itr(d, wf)
    batches = list(itr)
    assert len(batches) == len(itr) == -(-N // 256)
    rows = np.concatenate([x["row"].numpy() for x, _ in batches])
    assert sorted(rows.tolist()) == list(range(N))                       # every row once
    assert rows.tolist() != list(range(N))                                # shuffled
    for x, y in batches:
        assert isinstance(y, torch.Tensor) and y.dtype == torch.float32 and y.shape == x["row"].shape
        assert x["x"].dtype == torch.float32 and x["x"].ndim == 1
        assert x["C1"].dtype == torch.int64
        values, offsets = x["tags"]
        assert offsets.dtype == torch.int64 and len(offsets) == len(x["row"]) and int(offsets[0]) == 0
        ref = offline.loc[x["row"].numpy()]
        np.testing.assert_array_equal(x["C1"].numpy(), ref["C1"].to_numpy())
        np.testing.assert_array_equal(x["C2"].numpy(), ref["C2"].to_numpy())
        np.testing.assert_allclose(x["x"].numpy(), ref["x"].to_numpy().astype("float32"), rtol=1e-6)
        np.testing.assert_array_equal(y.numpy(), ref["label"].to_numpy())
        assert _rows_of(x, "tags") == [list(v) for v in ref["tags"]]


def test_embedding_bag_takes_values_offsets(data):
    d, wf, offline = data
    x, _ = next(iter(_itr(d, wf)))
    card = wf.output_schema["tags"].cardinality
    bag = torch.nn.EmbeddingBag(card, 4, mode="sum")
    out = bag(*x["tags"])
    table = bag.weight.detach().numpy()
    ref = np.stack([table[r].sum(axis=0) if r else np.zeros(4, "float32") for r in _rows_of(x, "tags")])
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-5, atol=1e-6)


def test_nnzs_format_is_int32_and_dense_per_column(data):
    d, wf, offline = data
    x, _ = next(iter(_itr(d, wf, sparse_format="nnzs")))
    values, nnzs = x["tags"]
    assert nnzs.dtype == torch.int32 and int(nnzs.sum()) == len(values)
    ref = offline.loc[x["row"].numpy()]
    assert _rows_of(x, "tags", "nnzs") == [list(v) for v in ref["tags"]]
    x, _ = next(iter(_itr(d, wf, sparse_names=["tags"], sparse_as_dense=True, sparse_max={"tags": 3})))
    dense = x["tags"].numpy()
    assert dense.shape == (256, 3)
    expect = [(list(v)[:3] + [0, 0, 0])[:3] for v in offline.loc[x["row"].numpy()]["tags"]]
    assert dense.tolist() == expect                                       # padded with 0, truncated at 3


@pytest.mark.parametrize("size", [2, 3])
def test_ranks_disjoint_complete_equal_lengths(data, size):
    d, wf, _ = data
    per_rank = []
    for rank in range(size):
        itr = _itr(d, wf, global_size=size, global_rank=rank)
        per_rank.append((len(itr), [r for x, _ in itr for r in x["row"].tolist()]))
    assert len({n for n, _ in per_rank}) == 1                              # same number of batches
    sets = [set(rows) for _, rows in per_rank]
    assert set().union(*sets) == set(range(N))                             # complete (N % size == 0)
    assert sum(len(s) for s in sets) == N                                  # disjoint


def test_torch_dataloader_and_dldataloader(data):
    d, wf, _ = data
    itr = _itr(d, wf)
    seen = [x["row"] for x, _ in torch.utils.data.DataLoader(itr, batch_size=None)]
    assert sorted(torch.cat(seen).tolist()) == list(range(N))
    dl = DLDataLoader(itr)
    assert len(dl) == len(itr) and dl.device == torch.device("cpu")
    first = next(iter(dl))
    assert isinstance(first[0]["tags"], tuple)                              # passed through, not collated
    with pytest.raises(ValueError, match="num_workers=0"):
        DLDataLoader(itr, num_workers=2)
    # worker processes are forked: run that in a fresh interpreter, since forking a process that
    # imported JAX (another test module) can deadlock
    script = (f"import sys, torch, tabprep as tp\n"
              f"from tabprep.loader.torch import TorchAsyncItr\n"
              f"itr = TorchAsyncItr(tp.Dataset({d!r}), cats=['C1'], labels=['label'], batch_size=64)\n"
              f"try:\n    next(iter(torch.utils.data.DataLoader(itr, batch_size=None, num_workers=2)))\n"
              f"except RuntimeError as e:\n    print('REFUSED', e)\n")
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert "REFUSED" in res.stdout and "num_workers=0" in res.stdout, res.stdout + res.stderr


def test_positional_batch_size_and_distributed_defaults(data, monkeypatch):
    d, wf, _ = data
    itr = TorchAsyncItr(tp.Dataset(d, cpu=True), 500, cats=["C1"], conts=["x"], labels="label", device="cpu").map(wf)
    assert itr.batch_size == 500 and len(itr) == N // 500
    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.distributed, "get_world_size", lambda: 4)
    monkeypatch.setattr(torch.distributed, "get_rank", lambda: 3)
    itr = _itr(d, wf)
    assert (itr.global_size, itr.global_rank) == (4, 3) and itr.loader.num_rows == N // 4


def test_stateless_workflow_needs_no_fit(data):
    d, _, offline = data
    wf = tp.Workflow((["C2"] >> ops.HashBucket(num_buckets=50)) + ["row", "label"])
    assert wf.fitted
    itr = TorchAsyncItr(tp.Dataset(d, cpu=True), batch_size=1000, cats=["C2", "row"], labels=["label"],
                        device="cpu").map(wf)
    x, _ = next(iter(itr))
    np.testing.assert_array_equal(x["C2"].numpy(), offline.loc[x["row"].numpy()]["C2"].to_numpy())


def test_to_torch_shares_memory_and_copies_readonly():
    a = np.arange(10, dtype=np.int64)
    t = _to_torch(a)
    a[0] = 42
    assert int(t[0]) == 42                                                  # DLPack: shared
    r = np.arange(5)
    r.flags.writeable = False
    assert _to_torch(r).tolist() == [0, 1, 2, 3, 4]
    assert _to_torch(np.array([True, False])).dtype == torch.bool


def test_small_model_trains(data):
    d, wf, _ = data
    itr = _itr(d, wf, batch_size=500)
    card = wf.output_schema["C1"].cardinality
    emb = torch.nn.Embedding(card, 4)
    bag = torch.nn.EmbeddingBag(wf.output_schema["tags"].cardinality, 4, mode="mean")
    head = torch.nn.Linear(9, 1)
    params = list(emb.parameters()) + list(bag.parameters()) + list(head.parameters())
    opt = torch.optim.Adam(params, lr=0.05)
    torch.manual_seed(0)
    losses = []
    for _ in range(4):
        total = 0.0
        for x, y in itr:
            z = torch.cat([emb(x["C1"]), bag(*x["tags"]), x["x"][:, None]], dim=1)
            # the label is random noise here: the model can only learn its mean; loss must still fall
            loss = torch.nn.functional.binary_cross_entropy_with_logits(head(z)[:, 0], y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach())
        losses.append(total)
    assert losses[-1] < losses[0]


def test_nvtabular_positional_order(data):
    d, wf, _ = data
    itr = TorchAsyncItr(tp.Dataset(d, cpu=True), ["C1"], ["x"], ["label"], 600, device="cpu").map(wf)
    assert (itr.cat_names, itr.cont_names, itr.label_names, itr.batch_size) == (["C1"], ["x"], ["label"], 600)
    with pytest.raises(TypeError, match="both by position and by keyword"):
        TorchAsyncItr(tp.Dataset(d, cpu=True), ["C1"], cats=["C1"])


@pytest.mark.gpu
@pytest.mark.skipif(not tp.backend.has_cudf() or not torch.cuda.is_available(),
                    reason="cuDF, a CUDA device and a CUDA build of torch are needed")
def test_gpu_tensors_stay_on_device_and_equal_cpu(data):
    d, wf, _ = data
    kw = dict(sparse_names=["tags"], sparse_as_dense=True, sparse_max={"tags": 3}, seed=5)
    cpu = list(_itr(d, wf, **kw))
    gpu = list(TorchAsyncItr(tp.Dataset(d, cpu=False), cats=["C1", "C2", "tags", "row"], conts=["x"],
                             labels=["label"], batch_size=256, shuffle=True, buffer_size=700, parts_per_chunk=2,
                             device=0, **kw).map(wf))
    assert len(cpu) == len(gpu)
    for (xc, yc), (xg, yg) in zip(cpu, gpu):
        assert xg["C1"].is_cuda and xg["tags"].is_cuda and yg.is_cuda
        for name in ["row", "C1", "C2", "tags"]:
            assert torch.equal(xg[name].cpu(), xc[name]), name
        torch.testing.assert_close(xg["x"].cpu(), xc["x"], rtol=1e-5, atol=1e-6)
    x = next(iter(TorchAsyncItr(tp.Dataset(d, cpu=False), cats=["tags"], batch_size=256, device=0).map(wf)))  # no labels: features only
    assert x["tags"][0].is_cuda and x["tags"][1].dtype == torch.int64          # (values, offsets) on the GPU


def test_scalar_columns_of_one_dtype_come_from_one_block(data):
    # issue 33: one hand-off per block, not per column: the int64 feature columns of a batch are rows
    # of one 2-D tensor (views of one storage), each a contiguous 1-D tensor; the label is apart
    d, wf, offline = data
    for x, y in _itr(d, wf, batch_size=300):   # 300 does not divide the chunks: joined batches too
        # C1 (Categorify) and row are int64; C2 (HashBucket) is int32 as in NVTabular: a block of its own
        ints = [x[c] for c in ("C1", "row")]
        assert x["C2"].dtype == torch.int32 and x["C1"].dtype == torch.int64
        assert len({t.untyped_storage().data_ptr() for t in ints}) == 1
        assert x["C2"].untyped_storage().data_ptr() != ints[0].untyped_storage().data_ptr()
        assert all(t.is_contiguous() and t.ndim == 1 for t in ints)
        assert y.untyped_storage().data_ptr() != ints[0].untyped_storage().data_ptr()
        ref = offline.loc[x["row"].numpy()]
        np.testing.assert_array_equal(x["C2"].numpy(), ref["C2"].to_numpy())
