"""Background preparation of a loader's chunks (threads, in order) and the batches cut from them.

Part of :mod:`tabprep.loader.core` (see its docstring for the loader's data flow).
"""
from __future__ import annotations

import bisect
import logging
import threading
import weakref
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from ..backend.batch_arrays import BufferPool
from .planning import _EpochPlan
from .blocks import Batch, cut, join
from .ragged import _Chunk, _concat_batches, _slice  # noqa: F401 - re-exported

if TYPE_CHECKING:  # pragma: no cover
    from .core import DataLoader

log = logging.getLogger("tabprep.loader.core")


# ---------------------------------------------------------------------------------------
# background preparation of chunks
# ---------------------------------------------------------------------------------------
class _Prefetcher:
    """Produces ``produce(k)`` for ``k`` in ``indices`` in ``workers`` daemon threads, in order.

    A slot is taken before a chunk is produced and given back when the consumer takes it, so at
    most ``max(depth, workers)`` chunks are being built or waiting while the consumer uses one.
    Chunks are handed over in the order of ``indices`` whatever thread finished first. A thread's
    exception is re-raised by :meth:`get` when the consumer reaches that chunk; :meth:`close`
    stops the threads.
    """

    def __init__(self, produce: Callable[[int], Any], indices: Sequence[int], depth: int,
                 init: Optional[Callable[[], None]] = None, owner: Any = None, workers: int = 1) -> None:
        # the threads hold no strong reference to their owner: when the owner (a chunk stream) is
        # garbage-collected, they notice and end
        self._owner = weakref.ref(owner) if owner is not None else (lambda: True)
        self._produce = produce
        self._indices = list(indices)
        self._init = init
        workers = max(1, min(int(workers), len(self._indices) or 1))
        self._slots = threading.Semaphore(max(int(depth), workers, 1))
        self._stop = threading.Event()
        self._cond = threading.Condition()
        self._ready: Dict[int, Tuple[str, Any]] = {}
        self._claimed = 0      # indices handed to workers
        self._pos = 0          # indices handed to the consumer
        self._threads = [threading.Thread(target=self._run, name="tabprep-loader-prefetch", daemon=True)
                         for _ in range(workers)]
        for t in self._threads:
            t.start()

    def _gone(self) -> bool:
        return self._stop.is_set() or self._owner() is None

    def _run(self) -> None:
        try:
            if self._init is not None:
                self._init()
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, which re-raises
            with self._cond:
                self._ready.setdefault(self._indices[0] if self._indices else -1, ("err", exc))
                self._cond.notify_all()
            return
        while True:
            while not self._slots.acquire(timeout=0.05):
                if self._gone():
                    return
            if self._gone():
                return
            with self._cond:
                if self._claimed >= len(self._indices):
                    self._slots.release()
                    return
                k = self._indices[self._claimed]
                self._claimed += 1
            try:
                result: Tuple[str, Any] = ("ok", self._produce(k))
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer, which re-raises
                result = ("err", exc)
            with self._cond:
                self._ready[k] = result
                self._cond.notify_all()
            if result[0] == "err":
                return

    def get(self) -> Tuple[int, Any]:
        """The next ``(k, chunk)`` in order; raises what a thread raised for that chunk."""
        if self._pos >= len(self._indices):
            raise RuntimeError("the loader asked its prefetch threads for a chunk past the end of the epoch")
        k = self._indices[self._pos]
        with self._cond:
            while k not in self._ready:
                if not any(t.is_alive() for t in self._threads):
                    errors = [v for v in self._ready.values() if v[0] == "err"]
                    if errors:
                        kind, item = errors[0]
                        break
                    raise RuntimeError("the loader's prefetch threads stopped without a result")
                self._cond.wait(0.5)
            else:
                kind, item = self._ready.pop(k)
        if kind == "err":
            try:
                item.add_note("(raised while preparing a chunk in tabprep's loader prefetch thread)")
            except AttributeError:  # pragma: no cover - Python < 3.11
                pass
            raise item
        self._pos += 1
        self._slots.release()
        return k, item

    def close(self) -> None:
        self._stop.set()
        with self._cond:
            self._ready.clear()
        me = threading.current_thread()
        for t in self._threads:
            if t is me:
                continue  # the loader was freed by this thread itself: it ends after this chunk
            t.join(timeout=10)
            if t.is_alive():  # pragma: no cover - a read stuck in I/O
                log.warning("a loader prefetch thread did not stop within 10 s; leaving it (daemon)")


class _ChunkStream:
    """The chunks of one epoch, in order, prepared ahead by a :class:`_Prefetcher`.

    ``get(k)`` is cheap for the chunk it returned last and for the next one; any other ``k``
    restarts preparation at ``k`` (the cost of random access). Holds its loader weakly, so a
    loader that is dropped mid-epoch is freed at once and its thread stops.
    """

    def __init__(self, loader: "DataLoader", plan: _EpochPlan) -> None:
        self._loader = weakref.ref(loader)
        self.plan = plan
        self.prefetch = loader.prefetch
        self.threads = loader.threads
        self._init = loader._device.thread_init()
        #: makes the loader's device current (array work on the consumer's thread)
        self.context = loader._device.context
        self._pf: Optional[_Prefetcher] = None
        self._next = -1
        self._last: Tuple[int, Optional[_Chunk]] = (-1, None)
        #: host memory of the epoch's chunks, reused once their batches are gone (CPU)
        self._buffers = BufferPool()

    def get(self, k: int) -> _Chunk:
        if self._last[0] == k and self._last[1] is not None:
            return self._last[1]
        if self.prefetch <= 0:
            loader = self._loader()
            if loader is None:
                raise RuntimeError("the loader was garbage-collected")
            chunk = loader._prepare_chunk(self.plan, k, self._buffers)
        else:
            if self._pf is None or self._next != k:
                self.close()
                loader = self._loader()
                if loader is None:
                    raise RuntimeError("the loader was garbage-collected")
                self._pf = _Prefetcher(_weak_producer(loader, self.plan, self._buffers),
                                       range(k, len(self.plan.chunks)), self.prefetch, init=self._init, owner=self,
                                       workers=self.threads)
            got, chunk = self._pf.get()
            assert got == k, (got, k)
            self._next = k + 1
        ready = getattr(chunk, "ready", None)
        if ready is not None:   # the chunk's device work (see DataLoader._prepare_chunk), once per chunk
            ready.synchronize()
            chunk.ready = None
        self._last = (k, chunk)
        return chunk

    def close(self) -> None:
        if self._pf is not None:
            self._pf.close()
            self._pf = None
            self._next = -1

    def __del__(self) -> None:
        if self._pf is not None:
            self._pf._stop.set()


def _weak_producer(loader: "DataLoader", plan: _EpochPlan, buffers: Optional[BufferPool] = None
                   ) -> Callable[[int], _Chunk]:
    ref = weakref.ref(loader)

    def produce(k: int) -> _Chunk:
        obj = ref()
        if obj is None:
            raise RuntimeError("the loader was garbage-collected")
        return obj._prepare_chunk(plan, k, buffers)

    return produce


def _iter_batches(stream: _ChunkStream, start_batch: int, batch_size: int, drop_last: bool,
                  exact: bool, views: bool = True) -> Iterator[Dict[str, Any]]:
    """Batches of ``stream``'s epoch from batch ``start_batch`` on (a plain function, so a
    suspended generator does not keep its loader alive). ``views=False``: batches cut without
    their block columns' views (:func:`~tabprep.loader.blocks.cut`), for framework adapters."""
    plan = stream.plan
    bs = batch_size
    nchunks = len(plan.chunks)
    if exact:
        start_row = start_batch * bs
        k = max(bisect.bisect_right(plan.offsets, start_row) - 1, 0)
        pos = start_row - plan.offsets[k]
        skip = 0
    else:
        k, pos, skip = 0, 0, start_batch
    pending: List[Dict[str, Any]] = []
    pending_rows = 0
    while k < nchunks:
        chunk = stream.get(k)
        n = chunk.num_rows
        while pos < n:
            if not pending_rows and pos + bs <= n:
                batch = cut(chunk, pos, pos + bs, views) if not skip else Batch()
                pos += bs
            else:
                take = min(bs - pending_rows, n - pos)
                pending.append(cut(chunk, pos, pos + take, views))
                pending_rows += take
                pos += take
                if pending_rows < bs:
                    continue
                with stream.context():   # on the loader's device, whatever this thread's current one
                    batch = join(pending)
                pending, pending_rows = [], 0
            if skip:
                skip -= 1
                continue
            yield batch
        pos = 0
        k += 1
    if pending_rows and not drop_last and not skip:
        with stream.context():
            batch = join(pending)
        yield batch
