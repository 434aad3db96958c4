"""TensorFlow and PyTorch in one process (issue #32): PyPI's Linux ``torch`` brings ``triton``,
whose native library carries its own LLVM. TensorFlow loads its native library with
``RTLD_GLOBAL``, so a triton loaded *after* TensorFlow registers LLVM's command-line options a
second time and the process aborts (``LLVM ERROR: inconsistency in registered CommandLine
options``) the moment anything imports ``torch._dynamo`` -- every ``torch.optim`` optimizer does.

tabprep loads triton's library before it imports TensorFlow or PyTorch itself, and warns when
the user's own ``import tensorflow`` came first. The end-to-end cases run in fresh interpreters
(an abort would take the test process with it); on a torch build without triton (the CPU-only
wheels) they pass as well, there being nothing to clash with.
"""
from __future__ import annotations

import importlib.util
import logging
import os
import subprocess
import sys
import types
import warnings
from pathlib import Path

import pytest
from process_helpers import run_side_by_side

REPO = Path(__file__).resolve().parent.parent

#: one Adam step on a parameter of zeros whose gradient is 1: Adam moves it by -lr (its first
#: step is lr * m_hat / (sqrt(v_hat) + eps) = lr * 1 / (1 + 1e-8))
ADAM_STEP = """
import torch
p = torch.nn.Parameter(torch.zeros(2))
opt = torch.optim.Adam([p], lr=0.1)
p.sum().backward()
opt.step()
print("after one Adam step:", [round(v, 6) for v in p.tolist()])
"""


def _start(code: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO)] + [p for p in [os.environ.get("PYTHONPATH")] if p]),
               TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)


#: the end-to-end cases: (the modules each needs, the code its fresh interpreter runs)
CASES = {
    "tf_then_torch": (("tensorflow", "torch"), "import tabprep.loader.tensorflow\n" + ADAM_STEP),
    "torch_loader": (("torch",), "import tabprep.loader.torch, sys\n"
                                 "maps = open('/proc/self/maps').read() if sys.platform == 'linux' else ''\n"
                                 "print('libtriton loaded:', 'libtriton.so' in maps, '| tensorflow imported:', "
                                 "'tensorflow' in sys.modules)"),
}


@pytest.fixture(scope="module")
def runs():
    """Each end-to-end case whose modules are installed, in its own interpreter; the
    interpreters run side by side (each mostly imports, on one core)."""
    return run_side_by_side({name: (lambda c=code: _start(c)) for name, (modules, code) in CASES.items()
                             if all(importlib.util.find_spec(m) is not None for m in modules)})


def _need(*modules: str) -> None:
    # found, not imported: the check runs in the child, and importing TensorFlow here costs seconds
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (extras tf / torch)")


def _assert_stepped(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 0, f"rc {proc.returncode}:\n{proc.stderr[-3000:]}"
    assert "after one Adam step: [-0.1, -0.1]" in proc.stdout, proc.stdout


@pytest.mark.tf
@pytest.mark.torch
def test_tensorflow_loader_then_torch_optimizer_in_one_process(runs) -> None:
    _need("tensorflow", "torch")
    # TensorFlow comes in through tabprep's Keras loader, then the user trains a torch model
    _assert_stepped(runs["tf_then_torch"])


@pytest.mark.torch
def test_torch_loader_loads_triton_before_any_tensorflow(runs) -> None:
    # the order the test above proves safe, applied by the PyTorch loader too, so that the user's
    # `import tensorflow` after it is harmless (checked on the process's own memory map: a
    # second TensorFlow interpreter would double this test's time)
    _need("torch")
    proc = runs["torch_loader"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    has_triton = importlib.util.find_spec("triton") is not None and sys.platform == "linux"
    assert f"libtriton loaded: {has_triton} | tensorflow imported: False" in proc.stdout, proc.stdout


# -- the helper itself, on fakes (no TensorFlow needed) ----------------------------------------
def _fake_triton(tmp_path: Path, monkeypatch) -> Path:
    """A ``triton`` package on sys.path whose native library is not a library at all."""
    pkg = tmp_path / "triton"
    (pkg / "_C").mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise ImportError('the fake triton must never be imported')\n")
    lib = pkg / "_C" / "libtriton.so"
    lib.write_text("not an ELF file")
    monkeypatch.syspath_prepend(str(tmp_path))
    return lib


@pytest.fixture
def frameworks(monkeypatch):
    from tabprep import _frameworks

    monkeypatch.setattr(_frameworks, "_preloaded", None)
    monkeypatch.setattr(_frameworks, "_warned", False)
    # as if triton were not imported yet (earlier tests in this process may have trained torch models)
    for name in ("triton", "triton._C.libtriton"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return _frameworks


def test_preload_skips_quietly_without_triton(frameworks, monkeypatch) -> None:
    monkeypatch.setattr(frameworks, "_triton_library", lambda: None)
    assert frameworks.preload_triton() is False


@pytest.mark.skipif(sys.platform != "linux", reason="the clash and its remedy are Linux's (RTLD_GLOBAL)")
def test_preload_survives_an_unloadable_library(frameworks, tmp_path, monkeypatch, caplog) -> None:
    lib = _fake_triton(tmp_path, monkeypatch)
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)
    assert frameworks._triton_library() == lib
    with caplog.at_level(logging.DEBUG, logger="tabprep"):
        assert frameworks.preload_triton() is False        # logged, not raised: tabprep works on
    assert "could not preload" in caplog.text and str(lib) in caplog.text


@pytest.mark.skipif(sys.platform != "linux", reason="the clash and its remedy are Linux's (RTLD_GLOBAL)")
def test_tensorflow_first_warns_with_the_fix_and_loads_nothing(frameworks, tmp_path, monkeypatch) -> None:
    _fake_triton(tmp_path, monkeypatch)
    monkeypatch.setitem(sys.modules, "tensorflow", types.ModuleType("tensorflow"))
    loaded = []
    monkeypatch.setattr(frameworks.ctypes, "CDLL", lambda *a, **k: loaded.append(a))
    with pytest.warns(RuntimeWarning) as record:
        assert frameworks.preload_triton(warn=True) is False
    # loading triton now would abort the process on the spot: it must not be tried
    assert loaded == []
    text = str(record[0].message)
    assert "LLVM ERROR" in text and "torch.optim" in text
    assert "before TensorFlow" in text and "download.pytorch.org/whl/cpu" in text
    # said once per process
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        frameworks.preload_triton(warn=True)


def test_tensorflow_first_without_warn_is_silent(frameworks, tmp_path, monkeypatch) -> None:
    _fake_triton(tmp_path, monkeypatch)
    monkeypatch.setitem(sys.modules, "tensorflow", types.ModuleType("tensorflow"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert frameworks.preload_triton() is False


@pytest.mark.skipif(sys.platform != "linux", reason="the clash and its remedy are Linux's (RTLD_GLOBAL)")
def test_preload_loads_the_library_locally_once(frameworks, tmp_path, monkeypatch) -> None:
    lib = _fake_triton(tmp_path, monkeypatch)
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)
    loaded = []
    monkeypatch.setattr(frameworks.ctypes, "CDLL", lambda path, mode: loaded.append((path, mode)))
    assert frameworks.preload_triton() is True
    assert frameworks.preload_triton() is True
    # RTLD_LOCAL: triton's LLVM symbols stay its own, TensorFlow's RTLD_GLOBAL ones cannot replace them
    assert loaded == [(str(lib), os.RTLD_LOCAL)]
    assert "triton" not in sys.modules          # loading the library is not importing the package
