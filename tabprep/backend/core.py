"""Which backend is available and which one an object lives on; process-wide GPU settings.

Everything here is cheap to import: cuDF, cupy and RMM are imported inside the functions that
need them, and only when the GPU backend is in use.
"""
from __future__ import annotations

import contextlib
import functools
import logging
import os
import sys
from typing import Any, Callable, Iterable, Optional

import numpy as np
import pyarrow as pa

log = logging.getLogger("tabprep.backend")


# ---------------------------------------------------------------------------
# availability
# ---------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def has_cudf() -> bool:
    """True when cuDF imports, dask-cuDF is installed and a CUDA device is visible.

    dask-cuDF is looked up, not imported: importing it imports dask.dataframe (~0.5 s on the CPU,
    more with cuDF's backends), which a parquet job never needs (see ``Dataset.to_ddf``); dask
    imports it itself when a dask frame of cuDF partitions is built."""
    try:
        import importlib.util

        import cudf  # noqa: F401
        import cupy

        if importlib.util.find_spec("dask_cudf") is None:
            log.debug("cuDF backend unavailable: dask_cudf is not installed")
            return False
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception as exc:  # noqa: BLE001 - any import/driver failure means "no GPU backend"
        log.debug("cuDF backend unavailable: %s", exc)
        return False


def resolve_cpu(cpu: Optional[bool]) -> bool:
    """``cpu=None`` picks the GPU when cuDF is usable, else the CPU; True/False force."""
    if cpu is None:
        return not has_cudf()
    if cpu is False and not has_cudf():
        raise RuntimeError(
            "cpu=False asks for the GPU backend, but cuDF/dask-cuDF or a CUDA device is not available; "
            "install the 'gpu' extra (pip install tabprep[gpu]) on a machine with an NVIDIA GPU, or use cpu=True."
        )
    return bool(cpu)


_GPU_PREFIXES = ("cudf", "dask_cudf", "cupy")


def is_gpu(obj: Any) -> bool:
    """True for cuDF / dask-cuDF objects and cupy arrays."""
    return type(obj).__module__.startswith(_GPU_PREFIXES)


def is_cpu(obj: Any) -> bool:
    """True for pandas / numpy / Arrow objects (anything not on the GPU backend)."""
    return not type(obj).__module__.startswith(_GPU_PREFIXES)


def device(obj: Any) -> str:
    """``"gpu:N"`` for cuDF / dask-cuDF / cupy objects, else ``"cpu"``: a key for per-device caches.

    ``N`` is the CUDA device a cupy array lives on, and the current device for cuDF objects
    (cuDF allocates on the current device, and its kernels run there): on a host of several GPUs
    a statistics table cached for one device is then never indexed from another (CuPy would
    silently turn on peer access and read across the link, "Peer access has been activated
    automatically")."""
    mod = type(obj).__module__
    if not mod.startswith(_GPU_PREFIXES):
        return "cpu"
    dev = getattr(obj, "device", None)
    index = getattr(dev, "id", None) if mod.startswith("cupy") else None
    if index is None:
        import cupy

        index = cupy.cuda.runtime.getDevice()
    return f"gpu:{int(index)}"


def probe_array(cpu: bool) -> Any:
    """An empty array of the backend (numpy, or cupy on this thread's current device): what
    dispatches and :func:`device` take to stand for "where this thread's partitions live"
    before one is read."""
    if cpu:
        return np.empty(0, dtype="int64")
    import cupy

    return cupy.empty(0, dtype="int64")


def same_device(objs: Iterable[Any]) -> bool:
    """True when all ``objs`` live on one device (partials that were moved to the host, or made on
    another GPU, mix)."""
    return len({device(o) for o in objs}) <= 1


from .._util import is_frame, switched_off  # noqa: E402,F401 - one definition for the package


# ---------------------------------------------------------------------------
# memory and scheduling
# ---------------------------------------------------------------------------
#: glibc ``mallopt`` parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_malloc_tuned = False


def tune_malloc() -> bool:
    """Let glibc's heap serve partition-sized arrays again in a dask worker process (once per process).

    dask's nanny starts workers with ``MALLOC_TRIM_THRESHOLD_=65536``. Setting any such
    parameter switches off glibc's dynamic mmap threshold, which stays at 128 KiB: every
    numpy/pandas temporary over 128 KiB is then a fresh ``mmap`` whose pages fault on first
    touch and are unmapped on free. A CPU fit partial of a 250k-row Criteo partition took 0.37-0.49
    CPU s in a worker against 0.21-0.23 s in the client process; with the mmap threshold at glibc's
    dynamic maximum (32 MiB) and the trim threshold at 64 MiB, 0.16-0.18 s in the same worker.
    :func:`release_memory` still hands freed pages back after each partition. Returns whether
    the parameters were set (False off glibc).
    """
    global _malloc_tuned
    if _malloc_tuned:
        return True
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        ok = bool(libc.mallopt(_M_MMAP_THRESHOLD, 32 << 20)) and bool(libc.mallopt(_M_TRIM_THRESHOLD, 64 << 20))
    except (OSError, AttributeError):
        ok = False
    _malloc_tuned = True
    return ok


def tune_malloc_in_worker() -> None:
    """:func:`tune_malloc` when running in a dask.distributed worker (cheap after the first call);
    elsewhere nothing: the user's own process keeps its allocator settings."""
    if _malloc_tuned:
        return
    try:
        from distributed import get_worker

        get_worker()
    except (ImportError, ValueError):
        return
    tune_malloc()


def release_memory(collect: bool = True) -> None:
    """Give freed heap memory back to the OS (glibc ``malloc_trim``, Arrow's pool).

    pandas/numpy/Arrow free their buffers, but the C allocators keep the pages for reuse;
    after a pass over the data that is ~1 GB of RSS per 10M Criteo rows that nothing uses.
    Cheap (milliseconds); a no-op where the calls are unavailable.
    """
    if collect:
        import gc

        gc.collect()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    pa.default_memory_pool().release_unused()


#: dask worker threads for GPU partitions under the local threaded scheduler: two overlap one
#: partition's Python and I/O with the other's kernels; more only contend for the one device
#: (16 threads on an H100 host ran the Criteo job 1.6x slower than one)
GPU_THREADS = 2


def compute_options(gpu: bool) -> dict:
    """Extra ``dask.compute`` arguments: on the GPU with dask's default threaded scheduler,
    :data:`GPU_THREADS` workers; nothing otherwise (a distributed client or a scheduler the
    user chose is left alone)."""
    if not gpu:
        return {}
    import dask

    if dask.config.get("scheduler", None) not in (None, "threads", "threading"):
        return {}
    try:
        from distributed import default_client

        default_client()
        return {}
    except (ImportError, ValueError):
        pass
    return {"pool": _gpu_pool()}


_GPU_POOLS: dict = {}


def _gpu_pool() -> Any:
    """dask's threads for an in-process GPU computation: :data:`GPU_THREADS` threads whose current
    CUDA device is the caller's (a new thread starts on device 0: a process training on GPU 1, as
    data-parallel rank 1 does, would read and transform its partitions on GPU 0, beside statistics
    and batches on GPU 1). One pool per device, kept for the process."""
    import concurrent.futures

    import cupy

    index = int(cupy.cuda.runtime.getDevice())
    pool = _GPU_POOLS.get(index)
    if pool is None:
        pool = _GPU_POOLS[index] = concurrent.futures.ThreadPoolExecutor(
            GPU_THREADS, thread_name_prefix=f"tabprep-gpu{index}", initializer=lambda: cupy.cuda.Device(index).use())
    return pool


def compute_options_for(meta: Any) -> dict:
    """:func:`compute_options` for a computation on ``meta``'s backend (a dask ``_meta`` frame)."""
    return compute_options(is_gpu(meta))


def use_rmm_pool(initial_size: Optional[int] = None) -> bool:
    """Give cuDF/cupy a pooled RMM allocator (as NVTabular and dask-cuda do); True if enabled.

    Without a pool every device allocation is a ``cudaMalloc``; tabprep's GPU ops allocate many
    temporaries per partition, and a pool makes the GPU path ~2x faster. Call it once, before
    any data is on the device. ``initial_size`` in bytes (default: RMM's, half the free memory).
    """
    if not has_cudf():
        return False
    import rmm

    import cupy

    # on the caller's current device (RMM's default is device 0 whatever the current one)
    rmm.reinitialize(pool_allocator=True, initial_pool_size=initial_size, devices=int(cupy.cuda.runtime.getDevice()))
    return True


#: environment variable: ``0`` keeps RMM's default allocator in the online loader (no switch)
ASYNC_ALLOCATOR_ENV = "TABPREP_RMM_ASYNC"


class _HeldUntilDone:
    """A CUDA event and an object kept alive until the event has completed: ``synchronize()``
    waits, then releases it; dropped without a wait (a loader closed mid-epoch), it waits first.

    Why: device memory freed by the stream-ordered allocator is free in the order of the stream
    it was allocated on. A frame read on a stream of its own (``TABPREP_GPU_READ_STREAM``) and
    freed while kernels on the default stream still read it could be handed to that stream's next
    read and overwritten under them."""

    __slots__ = ("event", "obj")

    def __init__(self, event: Any, obj: Any) -> None:
        self.event, self.obj = event, obj

    def synchronize(self) -> None:
        self.event.synchronize()
        self.obj = None

    def __del__(self) -> None:
        if self.obj is not None:
            try:
                self.event.synchronize()
            except Exception:  # noqa: BLE001 - interpreter shutdown: the device is going away
                pass
            self.obj = None


def use_pooled_allocator(index: int) -> bool:
    """Give GPU ``index`` a pooled RMM resource if it has RMM's default one; True if switched.

    cuDF and CuPy (through RMM) allocate every temporary of a transform with the device's current
    RMM resource; RMM's default, a plain ``cudaMalloc`` per allocation (and a ``cudaFree``, which
    waits for the whole device), made the online Criteo workflow cost ~150 ms per chunk whatever
    its rows on an H100, against ~80 ms with the driver's stream-ordered pool
    (``benchmarks/framework_loaders.py --gpu``). So the loader switches to:

    * ``CudaAsyncMemoryResource`` (the CUDA driver's pool, ``cudaMallocAsync``, sized on demand, so
      memory other libraries need is not reserved up front as ``rmm.reinitialize(pool_allocator=True)``
      would);
    * in a process that has imported JAX, RMM's ``PoolMemoryResource`` over plain ``cudaMalloc``
      blocks instead (:data:`JAX_POOL_INITIAL` to start, grown as needed, kept until the process
      ends): on a 4x H200 host (cuDF 26.10, jax 0.11.2 with its CUDA 13 plugin) the async switch,
      made by a GPU loader in a process that had imported JAX, made every later cuDF device-to-host
      copy fail (``to_arrow_host.cu: cudaErrorInvalidValue``; docs/benchmarks.md, "RMM's async
      allocator and JAX"), and leaving the default made a JAX user's loader 1.7x slower with the
      Criteo workflow online (33 against 56M rows/s on an H200). ``TABPREP_RMM_ASYNC=1`` forces the
      async resource there too.

    A resource the user or dask-cuda chose (any other type) is kept, and ``TABPREP_RMM_ASYNC=0``
    keeps the default.
    """
    if switched_off(ASYNC_ALLOCATOR_ENV) or not has_cudf():
        return False
    forced = os.environ.get(ASYNC_ALLOCATOR_ENV, "").strip().lower() in ("1", "true", "yes", "on")
    import rmm

    import cupy

    current = rmm.mr.get_per_device_resource(index)
    if type(current) is not rmm.mr.CudaMemoryResource:
        return False
    pooled = "jax" in sys.modules and not forced
    with cupy.cuda.Device(index):   # the resource belongs to the device current when it is made
        if pooled:
            resource = rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(), initial_pool_size=JAX_POOL_INITIAL)
        else:
            resource = rmm.mr.CudaAsyncMemoryResource()
        rmm.mr.set_per_device_resource(index, resource)
    if pooled:
        log.info("GPU %d: RMM allocator switched to a PoolMemoryResource (JAX is imported in this process, where "
                 "CudaAsyncMemoryResource broke cuDF's device-to-host copies; %s=1 forces that one, %s=0 keeps "
                 "RMM's default)", index, ASYNC_ALLOCATOR_ENV, ASYNC_ALLOCATOR_ENV)
    else:
        log.info("GPU %d: RMM allocator switched to CudaAsyncMemoryResource (set %s=0 to keep RMM's default)",
                 index, ASYNC_ALLOCATOR_ENV)
    return True


#: bytes the loader's RMM pool starts with in a process that has imported JAX (:func:`use_pooled_allocator`;
#: it grows as the transform needs, and JAX, which the JAX loader keeps from preallocating, keeps the rest)
JAX_POOL_INITIAL = 1 << 30


def host_memory_bytes() -> int:
    """Total bytes of RAM."""
    try:
        import psutil

        return int(psutil.virtual_memory().total)
    except ImportError:  # pragma: no cover - psutil is a dev dependency; sysconf is POSIX
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


#: default partition size (uncompressed bytes of the columns read) on the CPU
PART_SIZE_CPU = 128 * 1024 ** 2
#: GPU floor; the default is 1/16 of the device's memory when larger (5 GB on an 80 GB H100):
#: every cuDF call costs ~0.1-1 ms of Python whatever the rows, so fewer, bigger partitions
#: go faster, and 1/16 leaves room for two partitions in flight with their temporaries
PART_SIZE_GPU = 1024 * 1024 ** 2


class HostDevice:
    """Where the CPU backend computes: host memory, nothing to synchronize."""

    cpu = True
    name = "cpu"
    #: csv block size and parquet partition size by default (bytes in memory)
    csv_block_size = PART_SIZE_CPU
    #: a parquet partition stays within one file
    pieces_span_files = False

    def default_part_size(self) -> int:
        return PART_SIZE_CPU

    def total_memory(self) -> int:
        return host_memory_bytes()

    def default_threads(self) -> int:
        """Chunk-preparation threads by default: two where there are two cores (Arrow's read and
        take, numpy and the hashing release the GIL; pandas' bookkeeping does not). Half the cores
        before, which gave one thread on 2 cores: measured there (``benchmarks/framework_loaders.py
        --rows 2000000 --no-workflow --threads N``, 2026-11-28) one thread gave 1.08M rows/s with the
        Criteo workflow online and 3.49M without (0.32x pyarrow's threaded read), two 1.80M and 5.90M
        (0.58x), at the same rows per CPU second: the second thread used the idle core."""
        return max(1, min(2, os.cpu_count() or 1))

    def synchronize(self) -> None:
        """Nothing queued on the CPU."""

    def thread_init(self) -> Optional[Callable[[], None]]:
        """A function each worker thread runs first (None: nothing to set up)."""
        return None

    def asarray(self, arr: Any) -> Any:
        """``arr`` (a numpy array) on this device."""
        return arr

    def context(self) -> Any:
        """A context manager making this device current (nothing to do on the CPU)."""
        return contextlib.nullcontext()

    def index_array(self, perm: np.ndarray) -> Any:
        """A row permutation (numpy int64) as the gathers on this device take it: as it is."""
        return perm

    def mark_ready(self, keep: Any = None) -> Any:
        """A token the consumer of a loader chunk waits on (``token.synchronize()``) before using the
        chunk's arrays: None on the host, where the work is done when the call returns (``keep``
        needs no holding)."""
        return None

    #: a chunk's row order is drawn on the host, in the loader's permutation threads, while the
    #: chunk is read (numpy releases the GIL)
    host_orders = True

    def row_order(self, n: int, seed: Any) -> Optional[np.ndarray]:
        """The seeded row order of a chunk of ``n`` rows (:func:`tabprep.backend.permute.row_order`)."""
        from .permute import row_order

        return row_order(n, seed)

    def prepare_allocator(self) -> bool:
        """Nothing to set up for host memory (see :meth:`CudaDevice.prepare_allocator`)."""
        return False

    #: whether a loader with a fractional ``buffer_size`` gathers files smaller than a piece into
    #: chunks of up to ``parts_per_chunk`` pieces' rows: not on the host, where a share of RAM is
    #: millions of rows and one chunk of a whole dataset costs 2x per row (cache) and 2x the
    #: memory (docs/benchmarks.md); ``buffer_size`` in rows plans alike on every device
    gathers_small_files = False


class CudaDevice:
    """A CUDA device of the GPU backend (cupy imported on first use)."""

    cpu = False
    csv_block_size = PART_SIZE_GPU
    #: a parquet partition continues into the next files until it is full: many small files still
    #: make few, big partitions (cuDF reads them in one call)
    pieces_span_files = True
    #: a chunk gathers files smaller than a piece (fixed per-chunk costs; see HostDevice)
    gathers_small_files = True

    def default_part_size(self) -> int:
        """:data:`PART_SIZE_GPU` or 1/16 of the current device's memory, the larger."""
        return max(PART_SIZE_GPU, gpu_total_memory() // 16)  # 0 without a usable device

    def __init__(self, index: int) -> None:
        self.index = index
        self.name = f"gpu:{index}"

    def default_threads(self) -> int:
        """Two chunk-preparation threads: one reads (libcudf, GIL released) while the other runs the
        workflow's Python; on an H100, 20M Criteo rows (``benchmarks/framework_loaders.py --gpu
        --threads N``): no workflow 20M -> 39M rows/s from 1 to 2 threads, with the workflow 17M ->
        20M; 3 threads gained nothing more (17M with the workflow)."""
        return 2

    def total_memory(self) -> int:
        import cupy

        with cupy.cuda.Device(self.index):
            return int(cupy.cuda.runtime.memGetInfo()[1])

    def synchronize(self) -> None:
        """Wait for the GPU work this thread queued on this device (before arrays are handed to
        another thread)."""
        import cupy

        with cupy.cuda.Device(self.index):
            cupy.cuda.get_current_stream().synchronize()

    def thread_init(self) -> Optional[Callable[[], None]]:
        device = self.index

        def init() -> None:
            import cupy

            cupy.cuda.Device(device).use()

        return init

    def asarray(self, arr: Any) -> Any:
        import cupy

        with cupy.cuda.Device(self.index):
            return cupy.asarray(arr)

    def mark_ready(self, keep: Any = None) -> Any:
        """A CUDA event recorded on this thread's current stream after a loader chunk's work: the
        consumer's ``event.synchronize()`` waits for that work only, where a stream synchronize here
        held the preparing thread until the device was idle (on an H200, 20M transformed Criteo
        rows, the shuffled epoch took 0.138 s against 0.194 s with that wait, 0.607 s against
        0.682 s with the workflow online: ``benchmarks/loader_anatomy.py --variants``).
        ``TABPREP_LOADER_STREAM_WAIT=1`` restores the wait (and returns None). ``keep``: an object
        (the chunk's raw frame, read on a stream of its own) held until the event is waited on,
        then released: its memory goes back to its own stream's pool only once the work queued
        on this stream, which reads it, is done."""
        import cupy

        if os.environ.get("TABPREP_LOADER_STREAM_WAIT") == "1":
            self.synchronize()
            return None
        with cupy.cuda.Device(self.index):
            event = cupy.cuda.Event(disable_timing=True)
            event.record()
            return event if keep is None else _HeldUntilDone(event, keep)

    #: a chunk's row order is computed on the device (one kernel, no copy from the host): see
    #: :meth:`row_order`
    host_orders = False

    def row_order(self, n: int, seed: Any) -> Any:
        """The seeded row order of a chunk of ``n`` rows on this device, equal to the host's
        (:mod:`tabprep.backend.permute`): the keyed order computed by one CUDA kernel, or below
        ``KEYED_MIN_ROWS`` rows numpy's shuffle copied to the device; None below 2 rows."""
        from . import permute

        if n <= 1:
            return None
        if n < permute.KEYED_MIN_ROWS:
            return self.index_array(permute.shuffled(n, seed))
        import cupy

        word, keys, mask, s = permute.keyed_params(n, seed)
        with cupy.cuda.Device(self.index):
            out = cupy.empty(n, dtype=permute.index_dtype(n))
            keyed_order_kernel()(cupy.asarray(keys), word.type(mask), word.type(s), word.type(n),
                                 np.int32(permute.ROUNDS), out)
            return out

    def index_array(self, perm: Any) -> Any:
        """A row permutation (numpy int64) on this device, as int32 where it fits: half the bytes
        to copy to the device and for the gathers to read."""
        import cupy

        if len(perm) < 2 ** 31:
            perm = perm.astype(np.int32, copy=False)
        with cupy.cuda.Device(self.index):
            return cupy.asarray(perm)

    def prepare_allocator(self) -> bool:
        """Give this device a pooled RMM resource (the CUDA driver's stream-ordered pool, or RMM's
        pool in a process that has imported JAX) where RMM still has its default plain
        ``CudaMemoryResource``; True if switched. See :func:`use_pooled_allocator`."""
        return use_pooled_allocator(self.index)

    def context(self) -> Any:
        """A context manager making this device current: array work of a loader's consumer (the
        join of two chunks' rows, list offsets) runs on the loader's GPU, not on whichever
        device the calling thread has current."""
        import cupy

        return cupy.cuda.Device(self.index)


def compute_device(cpu: bool, index: int = 0) -> Any:
    """The device a dataset or loader computes on: :class:`HostDevice` (``cpu``) or :class:`CudaDevice` ``index``."""
    return HostDevice() if cpu else CudaDevice(index)


def gpu_count() -> int:
    """Number of visible CUDA devices (NVML, else the CUDA runtime through cupy); 0 without any."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return int(pynvml.nvmlDeviceGetCount())
    except Exception:  # noqa: BLE001
        try:
            import cupy

            return int(cupy.cuda.runtime.getDeviceCount())
        except Exception:  # noqa: BLE001
            return 0


def gpu_total_memory() -> int:
    """Total bytes of the current GPU; 0 where no device is usable."""
    try:
        import cupy

        return int(cupy.cuda.Device().mem_info[1])
    except Exception:  # noqa: BLE001 - no usable device here
        return 0


def gpu_free_memory_mb(index: int) -> Optional[float]:
    """Free MiB on GPU ``index``; None where it cannot be measured (no cupy / no driver)."""
    try:
        import cupy

        with cupy.cuda.Device(index):
            free, _total = cupy.cuda.runtime.memGetInfo()
        return free / 1024 ** 2
    except Exception:  # noqa: BLE001 - no cupy / no driver: caller falls back to memory growth
        return None


@functools.lru_cache(maxsize=None)
def keyed_order_kernel() -> Any:
    """The CuPy kernel of :data:`tabprep.backend.permute.KEYED_ORDER_KERNEL` (built once)."""
    import cupy

    from .permute import KEYED_ORDER_KERNEL

    return cupy.ElementwiseKernel("raw T keys, T mask, T s, T n, int32 rounds", "O y", KEYED_ORDER_KERNEL,
                                  "tabprep_keyed_order")
