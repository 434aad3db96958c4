"""Pre-build, in background threads, the CuPy kernels of tabprep's GPU hot paths.

A fresh GPU worker (a new cloud node, a container, CI) starts with an empty CuPy kernel cache,
and CuPy compiles every element-wise, reduction and indexing kernel with NVRTC the first time a
process uses it: 0.1-3 s each (a reduction such as ``any`` pulls in CUB's headers). Measured by
``benchmarks/cold_start.py`` on an H200, 50M Criteo rows, empty ``CUPY_CACHE_DIR``: fit 20.3 s
and job 24.9 s, against 1.9 s and 6.0 s with the cache warm.

Two measures, both in ``tabprep.backend``:

* the fit and the simple transforms use libcudf's precompiled operations, not CuPy kernels:
  finite moments and extrema (:mod:`tabprep.backend.reductions`), integer value counts, their
  merge and their vocabulary order (pylibcudf sorts and group-bys), Clip (libcudf's clamp),
  Categorify's unseen check (:func:`tabprep.backend.any_true`);
* the rest keeps its faster CuPy kernels (Categorify's sorted lookup, LogOp's fused float64
  log, Normalize), and this module compiles them on tiny arrays in a pool of threads started
  when the GPU backend is first loaded, while the first partitions are being read (NVRTC runs
  outside the GIL). :data:`READY` is set when it is done.

History (``benchmarks/cold_start.py``, H200, 50M rows; cold = empty ``CUPY_CACHE_DIR``): one
warm-up thread, cold job 11.6 s against 5.2 s warm (2.2x); with ``any_true`` on libcudf and the
kernel groups compiled side by side, 1.28x with one cold run and 1.50x over two. The job's own
threads still compiled what they reached before the pool: CuPy's ``unique`` (multi-block scan
variants that tiny arrays never build), ``clip`` with one bound, the count merge. Warming more
kernels measured worse (1.64-1.76x: the job compiled them again while the pool was busy), so
those moved to libcudf instead: a warm-up races the job, and fewer run-time compiled kernels on
the hot paths is what bounds the cold cost.

``TABPREP_GPU_WARMUP=0`` turns the warm-up off (the hot paths then compile their kernels when
they first need them).

The kernels warmed here follow the hot paths (Categorify's lookup and encoding, LogOp,
Normalize, HashBucket's one-kernel ids and the fused element-wise chains, which the GPU backend runs only once they are built); ``benchmarks/cold_start.py`` lists any kernel still compiled on the
job's own threads, with its call site. A failure here only logs: the hot paths then compile
their kernels when they first need them, as before.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, List, Tuple

import numpy as np

from .._util import switched_off

log = logging.getLogger("tabprep.backend")

#: threads compiling at once (at most the machine's cores)
THREADS = 8
#: set when the warm-up thread has finished (successfully or not)
READY = threading.Event()
_started = threading.Lock()
_thread: "threading.Thread | None" = None


def _a(values: list, dtype: Any) -> Any:
    """A small device array copied from the host (a copy: no kernel to compile)."""
    import cupy

    return cupy.asarray(np.asarray(values, dtype=dtype))


# One task per kernel (or per short chain of kernels that no other task shares), so the pool
# compiles them side by side: the first version ran Categorify's ~10 kernels one after another
# in one task, and the job's threads reached them first (compiling them again). Inputs come
# from host copies, so a task compiles only its own kernel. The kernels mirror the GPU paths:
# SortedVocab.lookup and _int_positions (tabprep.backend.lookup), Categorify._encode, LogOp,
# Normalize, the murmur3 null fill; test_gpu_transform_after_warmup_compiles_nothing checks
# that a job compiles nothing the warm-up has not.
def _k_argsort() -> None:
    import cupy

    cupy.argsort(_a([3, 1, 2], np.int64))


def _k_take() -> None:
    _a([3, 1, 2], np.int64)[_a([2, 0, 1], np.int64)]  # q[qo], keys[pos], ids[pos]


def _k_searchsorted() -> None:
    import cupy

    cupy.searchsorted(_a([1, 2, 7], np.int64), _a([2, 5, 9], np.int64))


def _k_minimum() -> None:
    import cupy

    pos = _a([0, 4], np.int64)
    cupy.minimum(pos, 2, out=pos)


def _k_equal_where() -> None:
    import cupy

    cupy.where(_a([1, 2], np.int64) == _a([1, 3], np.int64), _a([5, 6], np.int64), -1)


def _k_scatter() -> None:
    import cupy

    out = cupy.empty(3, dtype=np.int64)
    out[_a([2, 0, 1], np.int64)] = _a([5, 6, 7], np.int64)


def _k_keyed_order() -> None:
    """The shuffled loader's row-order kernel (CudaDevice.row_order), on a tiny output."""
    import cupy

    from .core import keyed_order_kernel

    out = cupy.empty(3, dtype=np.int32)
    keyed_order_kernel()(_a([1, 1, 0] * 4, np.uint32), np.uint32(3), np.uint32(1), np.uint32(3), np.int32(4), out)


def _k_copyto(dtype: Any, fill: Any = 0) -> None:
    import cupy

    cupy.copyto(_a([1, 2], dtype), fill, where=_a([True, False], bool))


def _k_add_less() -> None:
    pos = _a([1, -1], np.int64)
    pos + 3
    pos < 0


def _k_astype(src: Any, dst: Any) -> None:
    _a([1, 2], src).astype(dst)


def _log1p(dtype: str) -> None:
    from . import arrays as A

    A.log1p_float(_a([0, 1, 2], dtype))   # LogOp's one kernel for this input dtype (backend/gpu.py)


def _normalize() -> None:
    import cupy

    f = _a([0.5, np.nan, 2.0], np.float64)
    ((f - 1.5) / 2.0).astype("float32")
    cupy.where(cupy.isnan(f), np.nan, 0.0).astype("float32")


def _fused_chain(dtype: str) -> None:
    """The CuPy kernels of a fused FillMissing >> Clip >> LogOp >> Normalize chain on a device
    column (workflow/fusion.py), each variant the online Criteo transform reaches: a column with
    nulls and one without (owned arrays written in place, views not), one-sided and two-sided
    Clip, float32 and float64 Normalize output. The GPU backend fuses chains only once this has run
    (``gpu_columns._host_columns_supported``)."""
    import cupy

    from .columns import DeviceColumn, clip_host, fill_host, log1p_host, normalize_host

    kind = np.dtype(dtype).kind
    raw = [1, np.nan, 3] if kind == "f" else [1, 0, 3]
    mask = cupy.asarray([False, True, False]) if kind != "f" else None
    for owned in (True, False):
        col = DeviceColumn(_a(raw, dtype), mask, owned=owned)
        for lo, hi in ((0, None), (0, 2)):
            clipped = clip_host(fill_host(DeviceColumn(col.values.copy(), mask, owned=True) if owned else col, 0),
                                lo, hi)
            for out in ("float32", "float64"):
                normalize_host(log1p_host(clipped), 1.0, 2.0, out)
                normalize_host(log1p_host(clipped), 1.0, 0.0, out)
        log1p_host(col)  # LogOp on the raw column (nulls -> NaN), as LogOp >> Normalize runs
        normalize_host(col, 1.0, 2.0, "float32")


def _hash_buckets() -> None:
    """HashBucket's one-kernel ids (:mod:`tabprep.backend.gpu_hash`), which run only once built here."""
    from . import gpu_hash

    gpu_hash.warm()


def _tasks() -> List[Tuple[Callable[..., None], tuple]]:
    # Categorify's kernels first (its lookup is the first op of most recommender workflows);
    # the fit compiles none: it runs on libcudf
    tasks: List[Tuple[Callable[..., None], tuple]] = [
        (_k_take, ()), (_k_searchsorted, ()), (_k_equal_where, ()), (_k_scatter, ()), (_k_minimum, ()),
        (_k_copyto, (np.int64,)), (_k_add_less, ()), (_k_argsort, ()),
        (_log1p, ("int64",)), (_normalize, ()), (_k_astype, (np.float32, np.float64)),
        (_log1p, ("float64",)), (_k_copyto, (np.float32, np.nan)), (_k_copyto, (np.uint32,)),
        (_k_astype, (np.int32, np.int64)), (_k_astype, (np.int64, np.float64)),
        (_k_astype, (np.float64, np.float64)),
        (_log1p, ("int32",)), (_log1p, ("float32",)), (_k_keyed_order, ()), (_hash_buckets, ()),
    ]
    if device_fusion():
        tasks += [(_fused_chain, ("int64",)), (_fused_chain, ("float32",)), (_fused_chain, ("float64",))]
    return tasks


def _run(task: Callable[..., None], args: tuple) -> None:
    import cupy

    try:
        task(*args)
        cupy.cuda.Device().synchronize()
    except Exception as exc:  # noqa: BLE001 - a warm-up must never fail a job
        log.debug("CuPy kernel warm-up %s%s failed (%s); it compiles on first use", task.__name__, args, exc)


def _warm() -> None:
    t = time.perf_counter()
    try:
        # NVRTC compiles outside the GIL, so independent kernels compile side by side; a few
        # threads suffice (each kernel takes 0.1-1 s; there are about 20 tasks)
        workers = max(1, min(THREADS, os.cpu_count() or 1))
        with ThreadPoolExecutor(workers, thread_name_prefix="tabprep-cupy-warmup") as pool:
            for fut in [pool.submit(_run, task, args) for task, args in _tasks()]:
                fut.result()
        log.debug("CuPy kernels pre-built in %.2fs", time.perf_counter() - t)
    except Exception as exc:  # noqa: BLE001 - a warm-up must never fail a job
        log.debug("CuPy kernel warm-up failed (%s); kernels compile on first use", exc)
    finally:
        READY.set()


#: environment variable: ``1`` lets the GPU backend run fused element-wise chains on cuDF frames
DEVICE_FUSION_ENV = "TABPREP_DEVICE_FUSION"


def device_fusion() -> bool:
    """False when ``TABPREP_DEVICE_FUSION`` is 0 / false / no / off: fused chains on cuDF frames run
    by default. They were opt-in until a GPU run showed them equal to the unfused path: on
    2026-11-28 (2x H200) the whole gpu suite ran with them on (517 passed), and on the Criteo
    workflow's online transform they took 64 ms against 85 ms per 65k-row chunk
    (``benchmarks/device_fusion.py``). The switch is the way back should a GPU differ."""
    return not switched_off(DEVICE_FUSION_ENV)


def enabled() -> bool:
    """False when the environment sets ``TABPREP_GPU_WARMUP`` to 0 / false / no / off."""
    return not switched_off("TABPREP_GPU_WARMUP")


def start() -> None:
    """Start the warm-up thread once per process (idempotent); with ``TABPREP_GPU_WARMUP=0``
    only set :data:`READY`."""
    global _thread
    with _started:
        if _thread is not None or READY.is_set():
            return
        if not enabled():
            log.debug("TABPREP_GPU_WARMUP=0: no CuPy kernel warm-up")
            READY.set()
            return
        _thread = threading.Thread(target=_warm, name="tabprep-cupy-warmup", daemon=True)
        _thread.start()
