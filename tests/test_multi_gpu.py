"""Every array stays on its own GPU (issue 34): on a host of several GPUs, CuPy reads an array
that lives on another device than the current one through peer access, and says so with a
PerformanceWarning ("Peer access has been activated automatically"). Here that warning is an
error, in the three places where tabprep computes on a GPU:

* a process working on GPU 1 (its current device set first, as a data-parallel rank does): the
  fit and transform in that process (dask's threads), and the core and PyTorch loaders on
  ``device=1`` (run in a subprocess, so that no earlier test has touched GPU 0 in it);
* dask-cuda workers (one GPU each) fitting and transforming.

Expected values come from pandas / numpy on the host (the CPU backend's results, which the
CPU tests check against references of their own)."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

from conftest import GPU_SKIP

PEER = r".*[Pp]eer access.*"


def _gpus() -> int:
    try:
        import cupy

        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # noqa: BLE001 - no CUDA here
        return 0


pytestmark = [pytest.mark.gpu, GPU_SKIP,
              pytest.mark.skipif(_gpus() < 2, reason="needs a host with 2 or more GPUs")]


@pytest.fixture
def peer_access_is_an_error():
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=PEER)
        yield


def _frame(seed: int, n: int = 20_000) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    cat = pd.Series(rng.integers(0, 300, n)).astype("Int64")
    cat[rng.random(n) < 0.05] = pd.NA
    x = rng.normal(2.0, 3.0, n)
    x[rng.random(n) < 0.05] = np.nan
    return pd.DataFrame({"cat": cat, "cat2": rng.integers(0, 50, n), "x": x,
                         "label": rng.integers(0, 2, n).astype("int64")})


def _workflow() -> tp.Workflow:
    cats = ["cat", "cat2"] >> ops.Categorify()
    te = ["cat"] >> ops.TargetEncoding("label", p_smooth=5)
    hashed = ["cat2"] >> ops.HashBucket(num_buckets=17) >> ops.Rename(postfix="_h")
    conts = ["x"] >> ops.FillMissing() >> ops.Normalize()
    return tp.Workflow(cats + te + hashed + conts + ["label"])


def _host(df) -> pd.DataFrame:
    return df.to_pandas().reset_index(drop=True) if hasattr(df, "to_pandas") else df.reset_index(drop=True)


RANK1 = r"""
import sys, warnings
warnings.filterwarnings("error", message=PEER)
import cupy
cupy.cuda.Device(1).use()             # as data-parallel rank 1 does, before any work
import numpy as np, pandas as pd
sys.path.insert(0, TESTS)
from test_multi_gpu import _frame, _workflow, _host
import tabprep as tp

data = _frame(0)
data.to_parquet(WORK + "/in.parquet", index=False, row_group_size=6_000)
wf = _workflow().fit(tp.Dataset(WORK + "/in.parquet", cpu=False))    # in process: dask threads

# the lookups built ahead (a background thread, which starts on device 0) are built on device 1
import time
from tabprep.ops import _lookups as lookups
ahead = _workflow().fit(tp.Dataset(WORK + "/in.parquet", cpu=False))
assert ahead.build_lookups_ahead(cpu=False) and lookups.started == {"gpu:1": 1}, lookups.started
cat_op = [n.op for n in ahead.stat_nodes if type(n.op).__name__ == "Categorify"][0]
for _ in range(1000):
    if ("cat2", "gpu:1") in cat_op._index_cache:
        break
    time.sleep(0.01)
assert cat_op._index_cache[("cat", "gpu:1")].keys.device.id == 1
assert cat_op._index_cache[("cat2", "gpu:1")].keys.device.id == 1
expected = _host(_workflow().fit(tp.Dataset(WORK + "/in.parquet", cpu=True)).transform_frame(data))
import cudf
out = wf.transform_frame(cudf.from_pandas(data))
assert all(out[c].values.device.id == 1 for c in out.columns)
pd.testing.assert_frame_equal(_host(out), expected, check_dtype=False, rtol=1e-5)
wf.transform(tp.Dataset(WORK + "/in.parquet", cpu=False)).to_parquet(WORK + "/out")
got = tp.Dataset(WORK + "/out", cpu=True).compute().reset_index(drop=True)
pd.testing.assert_frame_equal(got[expected.columns], expected, check_dtype=False, rtol=1e-5)

from tabprep.loader import DataLoader
kw = dict(batch_size=3_000, label_names=["label"], cat_names=["cat", "cat2", "cat2_h", "TE_cat_label"],
          cont_names=["x"], seed=3, buffer_size=7_000, parts_per_chunk=2)
cpu = list(DataLoader(WORK + "/in.parquet", device="cpu", **kw).map(wf))
gpu = list(DataLoader(WORK + "/in.parquet", device=1, **kw).map(wf))
assert len(cpu) == len(gpu) == -(-len(data) // 3_000)
for bc, bg in zip(cpu, gpu):
    for name in bc:
        assert bg[name].device.id == 1, name
        np.testing.assert_allclose(cupy.asnumpy(bg[name]), bc[name], rtol=1e-5, err_msg=name)
try:
    import torch
except ImportError:
    torch = None
if torch is not None:
    torch.cuda.set_device(1)
    from tabprep.loader.torch import TorchAsyncItr
    tkw = dict(batch_size=3_000, labels=["label"], cats=["cat", "cat2", "cat2_h", "TE_cat_label"], conts=["x"],
               seed=4, shuffle=True, buffer_size=7_000, parts_per_chunk=2)
    tc = list(TorchAsyncItr(WORK + "/in.parquet", device="cpu", **tkw).map(wf))
    tg = list(TorchAsyncItr(WORK + "/in.parquet", device=1, **tkw).map(wf))
    assert len(tc) == len(tg)
    for (xc, yc), (xg, yg) in zip(tc, tg):
        assert yg.device == torch.device("cuda", 1)
        assert torch.equal(yg.cpu(), yc)
        for name in xc:
            assert xg[name].device == torch.device("cuda", 1), name
            np.testing.assert_allclose(xg[name].cpu().numpy(), xc[name].numpy(), rtol=1e-5, err_msg=name)
print("RANK1-OK")
"""


def test_rank_on_the_second_gpu_keeps_everything_there(tmp_path):
    """A process that works on GPU 1 (current device set first, as a data-parallel rank does): the
    in-process fit (dask threads) and transform, the core and PyTorch loaders on ``device=1`` all
    compute there, give the CPU's values, and never read another GPU's memory."""
    import os
    import subprocess
    import sys

    tests = os.path.dirname(os.path.abspath(__file__))
    code = RANK1.replace("PEER", repr(PEER)).replace("TESTS", repr(tests)).replace("WORK", repr(str(tmp_path)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(tests), env.get("PYTHONPATH", "")])
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240, env=env)
    assert res.returncode == 0 and "RANK1-OK" in res.stdout, res.stdout[-3000:] + res.stderr[-6000:]


def _error_on_peer_access() -> None:
    import warnings as w

    w.filterwarnings("error", message=PEER)


def _lookups_started() -> dict:
    from tabprep.ops import _lookups as lookups

    return dict(lookups.started)


def test_workers_fit_and_transform_without_peer_access(tmp_path, peer_access_is_an_error):
    from tabprep.cli import cluster as cli_cluster

    data = _frame(1, 40_000)
    for i in range(4):
        data.iloc[i * 10_000:(i + 1) * 10_000].to_parquet(tmp_path / f"part-{i}.parquet", index=False)
    wf_cpu = _workflow().fit(tp.Dataset(str(tmp_path / "*.parquet"), cpu=True))
    expected = _host(wf_cpu.transform_frame(data))
    with cli_cluster.dask_cluster(None, 2, None, False, True) as client:
        client.run(_error_on_peer_access)
        wf = _workflow().fit(tp.Dataset(str(tmp_path / "*.parquet"), cpu=False))
        wf.transform(tp.Dataset(str(tmp_path / "*.parquet"), cpu=False)).to_parquet(str(tmp_path / "out"))
        started = client.run(_lookups_started)
    # each worker that transformed built its lookups ahead once, on its own GPU (device 0 there)
    assert max(w.get("gpu:0", 0) for w in started.values()) == 1 and all(set(w) <= {"gpu:0"} for w in started.values()), started
    got = tp.Dataset(str(tmp_path / "out"), cpu=True).compute().reset_index(drop=True)
    pd.testing.assert_frame_equal(got[expected.columns], expected, check_dtype=False, rtol=1e-5)
