"""TensorFlow and PyTorch in one process: load ``triton``'s native library before TensorFlow.

PyPI's Linux ``torch`` depends on ``triton``, whose ``libtriton.so`` (~0.5 GB) carries its own
copy of LLVM with default symbol visibility. TensorFlow loads its native library with
``RTLD_GLOBAL`` (``tensorflow/python/pywrap_dlopen_global_flags.py``), which puts TensorFlow's
LLVM symbols ahead of triton's for every library loaded later. When triton comes second, its
static initializers register LLVM's command-line options in TensorFlow's registry a second time
and the process aborts::

    : CommandLine Error: Option 'bitcode-mdindex-threshold' registered more than once!
    LLVM ERROR: inconsistency in registered CommandLine options

That happens the first time anything imports ``torch._dynamo`` (every ``torch.optim``
optimizer, ``torch.compile``), long after both imports, with no Python traceback. Loaded the
other way round, triton first and with ``RTLD_LOCAL``, both work: triton's references are
already bound to its own LLVM when TensorFlow arrives.

So tabprep calls :func:`preload_triton` right before it imports TensorFlow or Keras itself, and
before PyTorch in :mod:`tabprep.loader.torch` (where it warns if the user's own ``import
tensorflow`` already came first, since nothing can repair that order any more). The cost is
one ``dlopen`` (~0.1-0.2 s, ~70 MB of mostly shared pages) and only where triton is installed;
CPU-only torch wheels (``https://download.pytorch.org/whl/cpu``) have no triton and skip it.
"""
from __future__ import annotations

import ctypes
import importlib.util
import logging
import os
import sys
import warnings
from pathlib import Path
from typing import Optional

log = logging.getLogger(__name__)

#: None: not tried yet; True: triton's library is loaded; False: tried and it could not be
_preloaded: Optional[bool] = None
#: the TensorFlow-came-first warning is given once per process
_warned = False

TENSORFLOW_FIRST = (
    "TensorFlow was imported before PyTorch's triton: the first torch.optim optimizer or "
    "torch.compile in this process will abort it with 'LLVM ERROR: inconsistency in registered "
    "CommandLine options' (TensorFlow exports its LLVM symbols globally and triton's copy of "
    "LLVM then registers into them). Import tabprep.loader.torch (or torch._dynamo) before TensorFlow, "
    "run the two frameworks in separate processes, or install the CPU-only torch build, which "
    "has no triton (pip install torch --index-url https://download.pytorch.org/whl/cpu)."
)


def _triton_library() -> Optional[Path]:
    """Path of triton's native library when triton is installed (found without importing it)."""
    try:
        spec = importlib.util.find_spec("triton")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        lib = Path(location, "_C", "libtriton.so")
        if lib.is_file():
            return lib
    return None


def preload_triton(warn: bool = False) -> bool:
    """Load triton's native library (``RTLD_LOCAL``) unless TensorFlow is already loaded.

    Args:
        warn: warn (``RuntimeWarning``, once per process) when triton is installed but TensorFlow
            was imported first, so that torch's optimizers will abort the process. The PyTorch
            loader passes True; the TensorFlow side passes False (its users may never touch torch).

    Returns:
        True when triton's library is loaded (now or before), False when there is nothing to
        load (no triton, not Linux), it cannot be loaded safely (TensorFlow came first) or
        loading failed (logged at DEBUG; tabprep goes on either way).
    """
    global _preloaded, _warned
    if _preloaded or sys.platform != "linux":
        return bool(_preloaded)
    if "triton._C.libtriton" in sys.modules:   # torch already imported triton itself
        _preloaded = True
        return True
    lib = _triton_library()
    if lib is None:
        return False
    if "tensorflow" in sys.modules:
        # loading triton now would abort on the spot: leave it to torch (which may never need it)
        if warn and not _warned:
            _warned = True
            warnings.warn(TENSORFLOW_FIRST, RuntimeWarning, stacklevel=3)
        return False
    try:
        ctypes.CDLL(str(lib), mode=os.RTLD_LOCAL)
    except OSError as exc:
        log.debug("could not preload triton's library %s (%s); TensorFlow imported later in this "
                  "process may clash with it", lib, exc)
        _preloaded = False
        return False
    _preloaded = True
    return True
