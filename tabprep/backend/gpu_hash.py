"""HashBucket's ids of an int column on the GPU in one CUDA kernel (``murmur3_x86_32 % buckets``,
nulls to 0, cast to the output dtype), where libcudf takes four to six calls per column.

Why: the online Criteo transform's 26 HashBucket columns took about 0.53 ms each per chunk on an
H200 through libcudf (a cast to int64, the hash, the modulo, the cast to the output type, the null
test and the replacement of the null rows: each call a launch plus its Python), 14 ms of a
chunk's 23 ms transform (``benchmarks/loader_anatomy.py --gpu --workflow --profile``). One kernel
reads the values and the null mask where cuDF keeps them and writes the ids.

The same ids as the libcudf path (:func:`tabprep.backend.gpu_columns._bucket_ids`) and the host's
(``mmh3`` of the value's 8 bytes, little-endian, as int64: ints are sign- or zero-extended as
libcudf's cast to INT64 gives them, bools hash as 0 / 1): ``tests/test_gpu_hash.py`` checks both.

A fresh GPU worker compiles nothing on its own threads for this: the kernels are NVRTC-compiled
by the warm-up pool (:mod:`tabprep.backend.gpu_warmup`, :func:`warm`) for the input and output
types a recommender workflow reaches (:data:`WARMED`); a type pair not built yet, or any while the
warm-up runs, takes the libcudf path. ``TABPREP_GPU_HASH_KERNEL=0`` (read at each call) always
takes it.
"""
from __future__ import annotations

import threading
from typing import Any, Dict, Optional, Tuple

import cupy
import numpy as np
import pylibcudf as plc

from .._util import switched_off
from .gpu_reductions import _plc_column

#: environment variable: ``0`` takes libcudf's calls for every HashBucket column
ENV = "TABPREP_GPU_HASH_KERNEL"

#: libcudf input type -> its C type and numpy dtype
_IN = {plc.TypeId.INT64: ("long long", np.int64), plc.TypeId.INT32: ("int", np.int32),
       plc.TypeId.INT16: ("short", np.int16), plc.TypeId.INT8: ("signed char", np.int8),
       plc.TypeId.UINT64: ("unsigned long long", np.uint64), plc.TypeId.UINT32: ("unsigned int", np.uint32),
       plc.TypeId.UINT16: ("unsigned short", np.uint16), plc.TypeId.UINT8: ("unsigned char", np.uint8),
       plc.TypeId.BOOL8: ("unsigned char", np.uint8)}
#: output numpy dtype -> its C type
_OUT = {np.dtype(np.int32): "int", np.dtype(np.int64): "long long", np.dtype(np.uint32): "unsigned int",
        np.dtype(np.int16): "short", np.dtype(np.int8): "signed char", np.dtype(np.uint64): "unsigned long long",
        np.dtype(np.uint16): "unsigned short", np.dtype(np.uint8): "unsigned char"}
#: (input type, output dtype) pairs the warm-up builds: Criteo-like id columns (int64, int32) into
#: HashBucket's default int32 ids and int64 ones
WARMED = ((plc.TypeId.INT64, np.dtype(np.int32)), (plc.TypeId.INT64, np.dtype(np.int64)),
          (plc.TypeId.INT32, np.dtype(np.int32)), (plc.TypeId.INT32, np.dtype(np.int64)))

_SOURCE = r"""
__device__ __forceinline__ unsigned int rotl32(unsigned int x, int r) { return (x << r) | (x >> (32 - r)); }
__device__ __forceinline__ unsigned int mix_block(unsigned int h, unsigned int k) {
    k *= 0xcc9e2d51u; k = rotl32(k, 15); k *= 0x1b873593u;
    h ^= k; h = rotl32(h, 13); return h * 5u + 0xe6546b64u;
}
extern "C" __global__ void hash_buckets(const IN_T* values, const unsigned int* mask, long long offset,
                                        long long n, unsigned int buckets, OUT_T* out) {
    long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        long long j = i + offset;
        if (mask != 0 && !((mask[j >> 5] >> (j & 31)) & 1u)) { out[i] = 0; continue; }
        // murmur3_x86_32 (seed 0) of the value's 8 bytes as int64, little-endian: 2 blocks, length 8
        unsigned long long v = (unsigned long long)(long long)values[j];
        unsigned int h = mix_block(mix_block(0u, (unsigned int)v), (unsigned int)(v >> 32));
        h ^= 8u;
        h ^= h >> 16; h *= 0x85ebca6bu; h ^= h >> 13; h *= 0xc2b2ae35u; h ^= h >> 16;
        out[i] = (OUT_T)(h % buckets);
    }
}
"""

_kernels: Dict[Tuple[Any, np.dtype], Any] = {}
#: pairs whose kernel has been compiled (by :func:`warm`): only these run on a job's threads
_built: set = set()
_lock = threading.Lock()
_THREADS = 256
_MAX_BLOCKS = 8192


def _kernel(pair: Tuple[Any, np.dtype]) -> Any:
    with _lock:
        k = _kernels.get(pair)
        if k is None:
            src = _SOURCE.replace("IN_T", _IN[pair[0]][0]).replace("OUT_T", _OUT[pair[1]])
            k = _kernels[pair] = cupy.RawKernel(src, "hash_buckets")
        return k


def _view(ptr: int, count: int, dtype: Any, owner: Any) -> Any:
    """A cupy array of ``count`` ``dtype`` values at device address ``ptr`` (memory ``owner`` keeps)."""
    dtype = np.dtype(dtype)
    mem = cupy.cuda.UnownedMemory(ptr, max(count, 1) * dtype.itemsize, owner)
    return cupy.ndarray(count, dtype, cupy.cuda.MemoryPointer(mem, 0))


def _launch(pair: Tuple[Any, np.dtype], col: Any, buckets: int) -> Any:
    n, offset = col.size(), col.offset()
    if n == 0:
        return cupy.empty(0, dtype=pair[1])
    in_dtype = _IN[pair[0]][1]
    values = _view(col.data().ptr, offset + n, in_dtype, col)
    mask = col.null_mask() if col.null_count() else None
    # (the mask's words up to the last row's: bit j of word j // 32, j counted from the buffer's start)
    words = _view(mask.ptr, (offset + n + 31) // 32, np.uint32, col) if mask is not None else None
    out = cupy.empty(n, dtype=pair[1])
    blocks = min((n + _THREADS - 1) // _THREADS, _MAX_BLOCKS)
    _kernel(pair)((blocks,), (_THREADS,), (values, words if words is not None else np.uint64(0),
                                          np.int64(offset), np.int64(n), np.uint32(buckets), out))
    return out


def bucket_ids(col: Any, buckets: int, dtype: Any) -> Optional[Any]:
    """``murmur3(value) % buckets`` of each row of the int / bool pylibcudf column ``col`` as a
    cupy array of ``dtype`` (0 at null rows), from one kernel; None where that kernel is not built
    (the caller then takes libcudf's calls) or ``TABPREP_GPU_HASH_KERNEL=0``. ``buckets``: 1 to
    ``2**32 - 1``."""
    pair = (col.type().id(), np.dtype(dtype))
    if pair not in _built or not 0 < int(buckets) < 1 << 32 or switched_off(ENV):
        return None
    return _launch(pair, col, int(buckets))


def warm(pairs: Any = WARMED) -> None:
    """Compile and run the kernels of ``pairs`` on a few rows, then let
    :func:`bucket_ids` use them (the warm-up pool calls this)."""
    for pair in pairs:
        in_dtype = _IN[pair[0]][1]
        col = _plc_column(cupy.asarray(np.array([1, 0, 3], dtype=in_dtype)))
        _launch(pair, col, 7)
        cupy.cuda.Device().synchronize()
        with _lock:
            _built.add(pair)
