"""KerasSequenceLoader on Keras' JAX and PyTorch backends reading on a GPU: every batch equals the
CPU's (one subprocess per backend: Keras picks its backend once per process)."""
import importlib.util
import os
import subprocess
import sys

import pytest

import tabprep as tp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _installed(*names: str) -> bool:
    return all(importlib.util.find_spec(n) is not None for n in names)


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_keras_gpu_batches_equal_cpu(backend):
    if not (tp.backend.has_cudf() and _installed(backend, "keras")):
        pytest.skip(f"needs cuDF, keras and {backend}")
    env = dict(os.environ, KERAS_BACKEND=backend, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "keras_gpu_check.py")], env=env,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0 and f"ok {backend} gpu" in res.stdout, (res.stdout[-2000:], res.stderr[-4000:])
