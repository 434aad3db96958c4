"""Every array stays on its own GPU (issue 34): on a host of several GPUs, CuPy reads an array
that lives on another device than the current one through peer access, and says so with a
PerformanceWarning ("Peer access has been activated automatically"). Here that warning is an
error, in the three places where tabprep computes on a GPU:

* a transform in this process, of data on GPU 1 after the workflow already ran on GPU 0;
* dask-cuda workers (one GPU each) fitting and transforming;
* the loaders (core, PyTorch) on GPU 1, consumed from a thread whose current device is GPU 0.

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


def test_transform_in_process_on_a_second_gpu(peer_access_is_an_error):
    import cudf
    import cupy

    data = _frame(0)
    wf = _workflow()
    wf.fit(tp.Dataset(data, cpu=False))
    expected = _host(wf.transform_frame(data))  # the CPU path: pandas in, pandas out
    on0 = _host(wf.transform_frame(cudf.from_pandas(data)))  # tables cached on GPU 0
    with cupy.cuda.Device(1):
        gdf1 = cudf.from_pandas(data)
        on1 = wf.transform_frame(gdf1)
        assert all(on1[n].values.device.id == 1 for n in on1.columns), "an output column is not on GPU 1"
        on1 = _host(on1)
    pd.testing.assert_frame_equal(on0, expected, check_dtype=False, rtol=1e-5)
    pd.testing.assert_frame_equal(on1, expected, check_dtype=False, rtol=1e-5)


def _error_on_peer_access() -> None:
    import warnings as w

    w.filterwarnings("error", message=PEER)


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
    got = tp.Dataset(str(tmp_path / "out"), cpu=True).compute().reset_index(drop=True)
    pd.testing.assert_frame_equal(got[expected.columns], expected, check_dtype=False, rtol=1e-5)


def _loader_data(tmp_path):
    data = _frame(2, 30_011)
    wf = _workflow().fit(tp.Dataset(data, cpu=True))
    for i, part in enumerate(np.array_split(np.arange(len(data)), 3)):
        data.iloc[part].to_parquet(tmp_path / f"part-{i}.parquet", index=False, row_group_size=4_000)
    return str(tmp_path), wf


def test_core_loader_on_a_second_gpu(tmp_path, peer_access_is_an_error):
    import cupy

    from tabprep.loader import DataLoader

    path, wf = _loader_data(tmp_path)
    kw = dict(batch_size=3_000, label_names=["label"], cat_names=["cat", "cat2", "cat2_h", "TE_cat_label"],
              cont_names=["x"], seed=3, buffer_size=7_000, parts_per_chunk=2)
    cpu = [b for b in DataLoader(path, device="cpu", **kw).map(wf)]
    with cupy.cuda.Device(0):   # the consumer's current device is not the loader's
        gpu = [b for b in DataLoader(path, device=1, **kw).map(wf)]
    assert len(cpu) == len(gpu) == -(-30_011 // 3_000)
    for bc, bg in zip(cpu, gpu):
        for name in bc:
            assert bg[name].device.id == 1, name
            np.testing.assert_allclose(cupy.asnumpy(bg[name]), bc[name], rtol=1e-5, err_msg=name)


def test_torch_loader_on_a_second_gpu(tmp_path, peer_access_is_an_error):
    torch = pytest.importorskip("torch")
    from tabprep.loader.torch import TorchAsyncItr

    path, wf = _loader_data(tmp_path)
    kw = dict(batch_size=3_000, labels=["label"], cats=["cat", "cat2", "cat2_h", "TE_cat_label"], conts=["x"],
              seed=4, shuffle=True, buffer_size=7_000, parts_per_chunk=2)
    cpu = list(TorchAsyncItr(path, device="cpu", **kw).map(wf))
    torch.cuda.set_device(0)
    gpu = list(TorchAsyncItr(path, device=1, **kw).map(wf))
    assert len(cpu) == len(gpu)
    for (xc, yc), (xg, yg) in zip(cpu, gpu):
        assert yg.device == torch.device("cuda", 1)
        torch.testing.assert_close(yg.cpu(), yc)
        for name in xc:
            assert xg[name].device == torch.device("cuda", 1), name
            torch.testing.assert_close(xg[name].cpu(), xc[name], check_dtype=False, rtol=1e-5, atol=1e-6)
