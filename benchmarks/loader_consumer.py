"""Where a loader's epoch goes: the consumer's own time (the framework adapter's conversion, the
training loop's side) apart from its waits for chunks and from the preparing threads' time
(issue 33). The tool that found the JAX loaders' compiles per chunk length.

    python benchmarks/loader_consumer.py --rows 2000000                                  # CPU
    python benchmarks/loader_consumer.py --gpu --rows 20000000 --dir /dev/shm/fl --log-compiles
    python benchmarks/loader_consumer.py --gpu --loaders torch --cprofile torch          # the consumer's functions

Per loader and pass (Criteo-like data and workflow of ``benchmarks/framework_loaders.py``, online
with ``map(wf)``, shuffled): rows/s; ``wait``, the consumer's time in taking the next chunk (its
device work included); ``consumer``, the rest of the epoch (converting batches, handing them
over); ``produce``, the preparing threads' seconds summed (read, transform, blocks; more than the
epoch when threads overlap) and their own CPU seconds (``time.thread_time``: wall seconds well
above them are waits, for the GIL or the device); the process's CPU seconds. ``--log-compiles`` counts JAX's
compilations per pass, ``--cprofile NAME`` profiles the consumer thread in the last pass of
loader NAME. ``--jax-first`` imports JAX before any loader, as a JAX user's program does (the GPU
loader then picks RMM's pool, not the async allocator). ``--time-calls`` times some of the consumer's
functions (:class:`CallTimes`: the joins across chunk boundaries, the JAX loaders' int32 checks,
slices and windows; calls, wall and the consumer thread's CPU seconds, the longest call); ``--switch-interval S`` sets ``sys.setswitchinterval`` (the
GIL's hand-over interval, 0.005 s by default), to see whether the consumer waits for the GIL behind
the preparing threads. Each pass also prints the consumer thread's own CPU seconds (``thread CPU``):
a consumer wall time well above it is time spent waiting (for the GIL, the device or a lock).
"""
from __future__ import annotations

import argparse
import cProfile
import logging
import os
import pstats
import sys
import threading
import time
from typing import Any, Callable, Dict, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__":
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(1, HERE)


class Timings:
    """The consumer's waits and the preparing threads' seconds, by wrapping the loader's chunk
    stream (``tabprep.loader.prefetch``) for the life of the process."""

    def __init__(self) -> None:
        from tabprep.loader import prefetch

        self.wait = self.produce = self.produce_cpu = 0.0
        self.chunks = 0
        self._lock = threading.Lock()
        weak, get = prefetch._weak_producer, prefetch._ChunkStream.get
        timings = self

        def timed_producer(loader: Any, plan: Any, buffers: Any = None) -> Callable[[int], Any]:
            make = weak(loader, plan, buffers)

            def produce(k: int) -> Any:
                t, cpu = time.perf_counter(), time.thread_time()
                out = make(k)
                with timings._lock:
                    timings.produce += time.perf_counter() - t
                    timings.produce_cpu += time.thread_time() - cpu
                    timings.chunks += 1
                return out

            return produce

        def timed_get(stream: Any, k: int) -> Any:
            t = time.perf_counter()
            try:
                return get(stream, k)
            finally:
                timings.wait += time.perf_counter() - t

        prefetch._weak_producer = timed_producer
        prefetch._ChunkStream.get = timed_get

    def reset(self) -> None:
        self.wait = self.produce = self.produce_cpu = 0.0
        self.chunks = 0


class CallTimes:
    """Calls, wall seconds, the calling thread's CPU seconds and the longest call of some of the
    consumer's functions, for the life of the process (each wrapped where its caller looks it up):
    the joins of a chunk's tail to the next chunk's head (``join``, as ``_iter_batches`` calls it),
    and, once a JAX loader is imported, its int32 range checks (``check_int_ranges``), its batch
    slicing (``blocks_columns``) and its chunk windows (``ChunkBlocks._window``)."""

    def __init__(self, jax_too: bool) -> None:
        from tabprep.loader import prefetch

        self.stats: Dict[str, list] = {}
        self._wrap(prefetch, "join", "join")
        if jax_too:
            from tabprep.loader import jax as jl

            self._wrap(jl, "check_int_ranges", "int32 checks")
            self._wrap(jl, "blocks_columns", "slices")
            self._wrap(jl.ChunkBlocks, "_window", "windows")

    def _wrap(self, owner: Any, attr: str, label: str) -> None:
        fn = getattr(owner, attr)
        row = self.stats[label] = [0, 0.0, 0.0, 0.0]

        def timed(*a: Any, **kw: Any) -> Any:
            t, cpu = time.perf_counter(), time.thread_time()
            try:
                return fn(*a, **kw)
            finally:
                wall = time.perf_counter() - t
                row[0] += 1
                row[1] += wall
                row[2] += time.thread_time() - cpu
                row[3] = max(row[3], wall)

        setattr(owner, attr, timed)

    def reset(self) -> None:
        for row in self.stats.values():
            row[:] = [0, 0.0, 0.0, 0.0]

    def __str__(self) -> str:
        return "".join(f"\n    {label} {n}: {wall * 1e3:.1f} ms wall (thread CPU {cpu * 1e3:.1f} ms, longest "
                       f"{longest * 1e3:.1f} ms)" for label, (n, wall, cpu, longest) in self.stats.items() if n)


class Compiles(logging.Handler):
    """Counts JAX's ``Compiling ...`` log lines (``jax_log_compiles``)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("Compiling "):
            self.count += 1


def main() -> None:
    from framework_loaders import CATS, CONTS, add_data_args, criteo_workflow, raw_data

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_args(ap, 2_000_000, "/tmp/tabprep-bench-consumer")
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--loaders", default="core,jax_stacked,jax,torch",
                    help="comma list of core, torch, torch_stacked, jax, jax_stacked")
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--batch", type=int, default=65536)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--no-workflow", action="store_true", help="the raw columns, no map(wf)")
    ap.add_argument("--jax-first", action="store_true", help="import JAX before any loader")
    ap.add_argument("--log-compiles", action="store_true", help="count JAX's compilations per pass")
    ap.add_argument("--cprofile", default=None, help="profile the consumer in the last pass of this loader")
    ap.add_argument("--time-calls", action="store_true", help="time the consumer's joins, int32 checks, slices")
    ap.add_argument("--switch-interval", type=float, default=None, help="sys.setswitchinterval (seconds)")
    args = ap.parse_args()
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)
    if args.jax_first:
        import tabprep.loader.jax  # noqa: F401

    import tabprep as tp

    files = raw_data(args.dir, args.rows, args.files, args.row_group)
    wf = None if args.no_workflow else criteo_workflow(1_000_000)
    if wf is not None:
        wf.fit(tp.Dataset(files, cpu=not args.gpu))
    timings = Timings()
    joins = CallTimes(any(n.startswith("jax") for n in args.loaders.split(","))) if args.time_calls else None
    common = dict(shuffle=True, buffer_size=2_000_000 if args.gpu else 250_000, parts_per_chunk=2,
                  device=0 if args.gpu else "cpu", threads=args.threads)

    def make(name: str, seed: int) -> Tuple[Any, Callable[[Any], int]]:
        stacked = name.endswith("_stacked")
        if name == "core":
            from tabprep.loader import DataLoader

            ld: Any = DataLoader(files, args.batch, label_names=["label"], cat_names=CATS, cont_names=CONTS,
                                 seed=seed, **common)
            rows_of: Callable[[Any], int] = lambda b: len(b["label"])
        elif name.startswith("jax"):
            from tabprep.loader.jax import JaxLoader

            ld = JaxLoader(files, batch_size=args.batch, cats=CATS, conts=CONTS, labels=["label"], seed=seed,
                           stacked=stacked, **common)
            rows_of = lambda b: int(b[1].shape[0])
        elif name.startswith("torch"):
            from tabprep.loader.torch import TorchAsyncItr

            ld = TorchAsyncItr(files, batch_size=args.batch, cats=CATS, conts=CONTS, labels=["label"], seed=seed,
                               stacked=stacked, **common)
            rows_of = lambda b: len(b[1])
        else:
            raise SystemExit(f"unknown loader {name!r}")
        return (ld.map(wf) if wf is not None else ld), rows_of

    def sync() -> None:
        if args.gpu:
            import cupy

            cupy.cuda.Device(0).synchronize()

    compiles = None
    if args.log_compiles:
        import jax

        jax.config.update("jax_log_compiles", True)
        compiles = Compiles()
        logging.getLogger("jax").addHandler(compiles)
    results: Dict[str, Any] = {}
    for name in args.loaders.split(","):
        for p in range(args.passes):
            it, rows_of = make(name, p)
            sync()
            timings.reset()
            if joins is not None:
                joins.reset()
            if compiles is not None:
                compiles.count = 0
            prof = cProfile.Profile() if args.cprofile == name and p == args.passes - 1 else None
            t, cpu, rows, mine = time.perf_counter(), time.process_time(), 0, time.thread_time()
            if prof is not None:
                prof.enable()
            for batch in it:
                rows += rows_of(batch)
            sync()
            if prof is not None:
                prof.disable()
            s = time.perf_counter() - t
            mine = time.thread_time() - mine
            extra = "" if compiles is None else f"  compiles {compiles.count}"
            extra += "" if joins is None else str(joins)
            print(f"{name:14s} pass {p}: {rows / s / 1e6:7.2f}M rows/s  epoch {s:.3f} s  wait {timings.wait:.3f} s  "
                  f"consumer {s - timings.wait:.3f} s (thread CPU {mine:.3f} s)  produce {timings.produce:.3f} s (thread CPU {timings.produce_cpu:.3f} s) "
                  f"/ {timings.chunks} chunks  "
                  f"CPU {time.process_time() - cpu:.2f} s{extra}", flush=True)
            results[name] = {"seconds": s, "consumer": s - timings.wait, "rows": rows}
            if prof is not None:
                stats = pstats.Stats(prof)
                stats.sort_stats("tottime").print_stats(25)
                stats.sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
