"""Run in a subprocess with KERAS_BACKEND set (see test_keras_gpu.py): KerasSequenceLoader batches read
on GPU 0 equal those read on the CPU, batch by batch, with a multi-hot column (ragged or padded),
shuffled, in chunks smaller than the data (batches joined across chunks)."""
import os
import sys
import tempfile

import numpy as np
import pandas as pd

import tabprep as tp
from tabprep.loader.keras import BACKEND, KerasSequenceLoader

import keras


def _numpy(value):
    if isinstance(value, (tuple, list)):
        return [_numpy(v) for v in value]
    if isinstance(value, dict):
        return {k: _numpy(v) for k, v in value.items()}
    return keras.ops.convert_to_numpy(value)


def _equal(a, b, where):
    if isinstance(a, dict):
        assert sorted(a) == sorted(b), (where, sorted(a), sorted(b))
        for k in a:
            _equal(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, list):
        assert len(a) == len(b), (where, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            _equal(x, y, f"{where}[{i}]")
    else:
        assert a.shape == b.shape and a.dtype == b.dtype, (where, a.shape, b.shape, a.dtype, b.dtype)
        assert np.array_equal(a, b), (where, a[:5], b[:5])


def main() -> None:
    assert BACKEND == os.environ["KERAS_BACKEND"] == keras.backend.backend()
    work = tempfile.mkdtemp()
    rng = np.random.default_rng(7)
    n = 5003
    frame = pd.DataFrame({"user": rng.integers(0, 1000, n).astype("int32"),
                          "tags": [list(rng.integers(0, 50, rng.integers(1, 5)).astype("int32")) for _ in range(n)],
                          "a": rng.normal(size=n).astype("float32"), "label": rng.integers(0, 2, n).astype("float32")})
    path = os.path.join(work, "d.parquet")
    frame.to_parquet(path, row_group_size=500)
    layouts = {"padded": dict(sparse_names=["tags"], sparse_as_dense=True, sparse_max={"tags": 4})}
    if BACKEND == "torch":
        layouts["ragged"] = dict(sparse_format="tuple")
    batches = 0
    for name, layout in layouts.items():
        def read(device):
            return [_numpy(b) for b in KerasSequenceLoader(
                path, batch_size=700, label_names=["label"], cat_names=["user", "tags"], cont_names=["a"],
                shuffle=True, seed=3, buffer_size=1500, device=device, **layout)]
        cpu, gpu = read("cpu"), read(0)
        assert len(cpu) == len(gpu) == -(-n // 700), (len(cpu), len(gpu))
        for i, (c, g) in enumerate(zip(cpu, gpu)):
            _equal(c, g, f"{name} batch {i}")
        batches += len(gpu)
    print(f"ok {BACKEND} gpu {batches} batches")


if __name__ == "__main__":
    sys.exit(main())
