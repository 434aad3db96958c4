"""KerasSequenceLoader and the layers on Keras 3's JAX and PyTorch backends (one subprocess per
backend: Keras picks its backend once per process)."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_keras_loader_and_layers_on_backend(backend):
    pytest.importorskip(backend)
    pytest.importorskip("keras")
    env = dict(os.environ, KERAS_BACKEND=backend, JAX_PLATFORMS="cpu", CUDA_VISIBLE_DEVICES="",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "keras_backend_check.py")], env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and f"ok {backend}" in res.stdout, (res.stdout[-2000:], res.stderr[-4000:])
