"""KerasSequenceLoader and the layers on Keras 3's JAX and PyTorch backends (one subprocess per
backend: Keras picks its backend once per process)."""
import importlib.util
import os
import subprocess
import sys
from typing import Dict

import pytest

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
    procs = {}
    try:
        for backend in dict.fromkeys(selected):
            if not _installed(backend, "keras"):
                continue
            env = dict(os.environ, KERAS_BACKEND=backend, JAX_PLATFORMS="cpu", CUDA_VISIBLE_DEVICES="",
                       PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
            procs[backend] = subprocess.Popen([sys.executable, os.path.join(ROOT, "tests", "keras_backend_check.py")],
                                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        runs = {}
        for backend, proc in procs.items():
            out, err = proc.communicate(timeout=300)
            runs[backend] = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        return runs
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()


@pytest.mark.parametrize("backend", BACKENDS)
def test_keras_loader_and_layers_on_backend(backend, backend_runs):
    pytest.importorskip(backend)
    pytest.importorskip("keras")
    res = backend_runs[backend]
    assert res.returncode == 0 and f"ok {backend}" in res.stdout, (res.stdout[-2000:], res.stderr[-4000:])
