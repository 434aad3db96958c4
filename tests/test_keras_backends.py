"""KerasSequenceLoader and the layers on Keras 3's JAX and PyTorch backends (one subprocess per
backend: Keras picks its backend once per process)."""
import importlib.util
import os
import subprocess
import sys
from typing import Dict

import pytest
from process_helpers import run_side_by_side

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BACKENDS = ["jax", "torch"]


def _installed(*names: str) -> bool:
    return all(importlib.util.find_spec(n) is not None for n in names)


@pytest.fixture(scope="module")
def backend_runs(request: pytest.FixtureRequest) -> Dict[str, subprocess.CompletedProcess]:
    """The check script once per selected backend, the processes side by side (each mostly
    imports and traces on one core); a backend whose packages are absent is not started (its test
    skips)."""
    selected = [item.callspec.params["backend"] for item in request.session.items
                if item.originalname == "test_keras_loader_and_layers_on_backend"]
    def start(backend: str) -> subprocess.Popen:
        env = dict(os.environ, KERAS_BACKEND=backend, JAX_PLATFORMS="cpu", CUDA_VISIBLE_DEVICES="",
                   PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        return subprocess.Popen([sys.executable, os.path.join(ROOT, "tests", "keras_backend_check.py")],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    return run_side_by_side({backend: (lambda b=backend: start(b)) for backend in dict.fromkeys(selected)
                             if _installed(backend, "keras")})


@pytest.mark.parametrize("backend", BACKENDS)
def test_keras_loader_and_layers_on_backend(backend, backend_runs):
    pytest.importorskip(backend)
    pytest.importorskip("keras")
    res = backend_runs[backend]
    assert res.returncode == 0 and f"ok {backend}" in res.stdout, (res.stdout[-2000:], res.stderr[-4000:])
