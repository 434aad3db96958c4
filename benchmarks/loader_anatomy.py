"""Where a loader epoch's wall time goes: chunk preparation against batch consumption (issue 33).

    python benchmarks/loader_anatomy.py --gpu --rows 20000000 --dir /dev/shm/fl [--workflow] [--profile]
    python benchmarks/loader_anatomy.py --rows 2000000                    # CPU

On the framework benchmark's data (``framework_loaders.py``'s layout: ``--files`` files, row groups of
``--row-group`` rows; with ``--workflow`` the raw data and the Criteo workflow online, else the data
transformed beforehand), one shuffled epoch of the core loader timed four ways, each the best of
``--passes``:

* ``epoch``: the loader as users run it (``threads`` and ``prefetch`` defaults);
* ``epoch threads=1``: one preparation thread;
* ``prepare``: every chunk prepared on this thread (``_prepare_chunk``'s steps), stage by stage: read,
  transform, columns to arrays, the row order on the device, gather into blocks;
* ``consume``: batches cut from chunks prepared beforehand (the consumer's own cost), and the same
  with each batch handed to PyTorch (``--torch``: one DLPack import per block, as ``TorchAsyncItr``)
  or to JAX (``--jax``: as ``JaxLoader``, chunk blocks imported once, and with a copy per batch;
  ``--stacked``: as ``JaxLoader(stacked=True)``, a chunk's batches stacked by one jitted call per
  up to 16 batches).

``--profile``: cProfile (own time, top 18) of ``prepare`` and ``consume``.
"""
from __future__ import annotations

import argparse
import cProfile
import glob
import os
import pstats
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)


import tabprep as tp  # noqa: E402
from framework_loaders import CATS, CONTS, add_data_args, criteo_workflow, raw_data  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    add_data_args(ap, 2_000_000, "/tmp/tabprep-anatomy")
    ap.add_argument("--batch", type=int, default=65536)
    ap.add_argument("--buffer-size", type=float, default=None)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--workflow", action="store_true", help="raw data with the Criteo workflow online")
    ap.add_argument("--torch", action="store_true", help="also consume with a DLPack hand-off per block")
    ap.add_argument("--jax", action="store_true",
                    help="also consume as JaxLoader does (chunk blocks imported once, a jitted slice per block)")
    ap.add_argument("--stacked", action="store_true",
                    help="with --jax: also hand batches over stacked (JaxLoader(stacked=True): a jitted call per chunk)")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--variants", action="store_true",
                    help="also the epoch with each loader change of issue 33 switched back (GPU: orders drawn on the "
                         "host, a stream wait per chunk, cudf.read_parquet, frames by the constructor, columns through "
                         "cuDF series; one at a time "
                         "and all five), with no shuffle and with 3 threads")
    ap.add_argument("--ab", default=None, metavar="NAME=VALUE",
                    help="then alternate epochs with and without the environment variable NAME=VALUE, "
                         "--rounds times each, and print both medians and their ratio")
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args()

    gpu = args.gpu
    bs = args.buffer_size or (2_000_000 if gpu else 250_000)
    files = raw_data(args.dir, args.rows, args.files, args.row_group)
    wf = criteo_workflow(1_000_000)
    wf.fit(tp.Dataset(files, cpu=not gpu))
    if not args.workflow:
        done = os.path.join(args.dir, f"criteo_{args.rows}_transformed")
        if not os.path.exists(os.path.join(done, "_DONE")):
            shutil.rmtree(done, ignore_errors=True)
            wf.transform(tp.Dataset(files, cpu=not gpu)).to_parquet(done, row_group_size=args.row_group)
            open(os.path.join(done, "_DONE"), "w").close()
        files = sorted(glob.glob(os.path.join(done, "*.parquet")))

    def sync() -> None:
        if gpu:
            import cupy
            cupy.cuda.Device().synchronize()

    from tabprep.loader import DataLoader
    from tabprep.loader.blocks import build_blocks, cut

    def make(seed: int, **kw):
        kw = {"shuffle": True, **kw}
        ld = DataLoader(files, args.batch, label_names=["label"], cat_names=CATS, cont_names=CONTS, seed=seed,
                        buffer_size=bs, parts_per_chunk=2, device=0 if gpu else "cpu", **kw)
        return ld.map(wf) if args.workflow else ld

    def best(fn) -> float:
        out = []
        for p in range(args.passes):
            sync()
            t = time.perf_counter()
            fn(p)
            sync()
            out.append(time.perf_counter() - t)
        return min(out)

    rows = args.rows
    what = "workflow online" if args.workflow else "transformed data"
    print(f"{'GPU' if gpu else 'CPU'}, {rows:,} rows, {what}, batch {args.batch:,}, buffer {bs:g}", flush=True)

    def report(label: str, s: float) -> None:
        print(f"  {label:34s} {s:7.3f} s  {rows / s / 1e6:8.2f} M rows/s", flush=True)

    def epoch(p: int, **kw) -> None:
        for _ in make(p, **kw):
            pass

    epoch(9)  # warm-up
    report("epoch", best(lambda p: epoch(p)))
    report("epoch threads=1", best(lambda p: epoch(p, threads=1)))

    if args.variants:
        variants(make, epoch, best, report, gpu, files)
    if args.ab:
        alternate(args.ab, args.rounds, epoch, sync, report)

    ld = make(0, prefetch=0)
    ld._ensure_ready()
    plan = ld.plan(0)
    stages = dict(read=0.0, transform=0.0, columns=0.0, permutation=0.0, blocks=0.0)

    def prepare(collect: list) -> None:
        for k in range(len(plan.chunks)):
            t0 = time.perf_counter()
            raw = ld._source.read_pieces(plan.chunks[k], ld._read_columns)
            if raw is None:
                parts = [ld._read_piece(p) for p in plan.chunks[k]]
                raw = ld._source.stack(parts) if ld._transform is not None else ld._source.stack_columns(parts)
            sync()
            t1 = time.perf_counter()
            df = ld._transform(raw) if ld._transform is not None else raw
            sync()
            t2 = time.perf_counter()
            cols = ld._to_columns(df, raw)
            sync()
            t3 = time.perf_counter()
            perm = ld._device.index_array(ld._device.row_order(len(df), plan.chunk_seed(k)))
            sync()
            t4 = time.perf_counter()
            chunk = build_blocks(cols, ld._label_names, perm, 0, len(df))
            sync()
            t5 = time.perf_counter()
            for key, a, b in (("read", t0, t1), ("transform", t1, t2), ("columns", t2, t3),
                              ("permutation", t3, t4), ("blocks", t4, t5)):
                stages[key] += b - a
            collect.append(chunk)

    chunks: list = []
    prepare([])   # warm
    for key in stages:
        stages[key] = 0.0
    t = time.perf_counter()
    prepare(chunks)
    report("prepare (all chunks, one thread)", time.perf_counter() - t)
    for key, s in stages.items():
        print(f"    {key:32s} {s:7.3f} s", flush=True)

    def consume(p: int, hand=None) -> None:
        for ch in chunks:
            n = ch.num_rows
            for a in range(0, n - args.batch + 1, args.batch):
                b = cut(ch, a, a + args.batch)
                if hand is not None:
                    hand(b)

    report("consume (cut batches)", best(consume))
    if args.torch:
        import torch

        def to_torch(b):
            for _, arr in b.blocks:
                t = torch.from_dlpack(arr)
                [t[j] for j in range(t.shape[0])]

        report("consume + torch DLPack per block", best(lambda p: consume(p, to_torch)))
    if args.jax:
        from tabprep.loader.jax import ChunkBlocks, block_columns

        def to_jax(b, chunks=ChunkBlocks()):
            out = []
            for i, ((_, arr), span) in enumerate(zip(b.blocks, b.spans)):
                out += block_columns(arr, span=span, chunks=chunks, index=i)
            return out

        def to_jax_copy(b):
            return [c for _, arr in b.blocks for c in block_columns(arr)]

        report("consume + jax, chunk blocks", best(lambda p: consume(p, to_jax)))
        report("consume + jax, a copy per batch", best(lambda p: consume(p, to_jax_copy)))
        if args.stacked:
            import jax

            from tabprep.loader.jax_stacked import StackedBatches

            stacked, last = StackedBatches(squeeze_label=True), []

            def to_jax_stacked(b):
                last[:] = stacked.convert(b, CATS, CONTS, ["label"], args.batch)[1]

            def consume_stacked(p):
                consume(p, to_jax_stacked)
                jax.block_until_ready(last)   # the jitted calls run asynchronously

            report("consume + jax, stacked per chunk", best(consume_stacked))
    if args.profile:
        for label, fn in (("prepare", lambda: prepare([])), ("consume", lambda: consume(0))):
            prof = cProfile.Profile()
            prof.enable()
            fn()
            sync()
            prof.disable()
            print(f"--- cProfile: {label}")
            pstats.Stats(prof).sort_stats("tottime").print_stats(18)
    if args.profile and args.workflow:
        raws = []
        for k in range(len(plan.chunks)):
            raw = ld._source.read_pieces(plan.chunks[k], ld._read_columns)
            if raw is None:
                raw = ld._source.stack([ld._read_piece(p) for p in plan.chunks[k]])
            raws.append(raw)
        prof = cProfile.Profile()
        prof.enable()
        for raw in raws:
            ld._transform(raw)
        sync()
        prof.disable()
        print("--- cProfile: the transform alone, by cumulative time (tabprep's functions)")
        pstats.Stats(prof).sort_stats("cumtime").print_stats("tabprep", 30)
        if gpu:   # what waits for the device (each waits for the other thread's queued reads too)
            print("--- who calls the device synchronisations (scalar copies, reductions pulled back)")
            pstats.Stats(prof).print_callers(r"from_py|_reduce|element_indexing|synchronize|\bget\b|__bool__")


def alternate(spec: str, rounds: int, epoch, sync, report) -> None:
    """Epochs alternately without and with the environment variable of ``spec`` (``NAME=VALUE``),
    ``rounds`` of each: the medians and their ratio (drifts of a shared machine hit both alike)."""
    import statistics

    name, _, value = spec.partition("=")
    times = {"without": [], "with": []}
    old = os.environ.get(name)
    try:
        for r in range(rounds):
            for label in (("without", "with") if r % 2 == 0 else ("with", "without")):
                if label == "with":
                    os.environ[name] = value
                elif old is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = old
                sync()
                t = time.perf_counter()
                epoch(100 + r)
                sync()
                times[label].append(time.perf_counter() - t)
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old
    a, b = statistics.median(times["without"]), statistics.median(times["with"])
    report(f"epoch, median of {rounds}, without {name}", a)
    report(f"epoch, median of {rounds}, {spec}", b)
    print(f"  with / without: {b / a:.3f} (times without {', '.join(f'{x:.3f}' for x in times['without'])}; "
          f"with {', '.join(f'{x:.3f}' for x in times['with'])})", flush=True)


def variants(make, epoch, best, report, gpu, files) -> None:
    """The epoch with each of issue 33's loader changes switched back to what came before, one at a
    time and all together (environment switches; on the GPU, and a benchmark-only patch for the
    host-drawn orders), then with no shuffle and with 3 threads."""
    import contextlib

    from tabprep.backend import permute
    from tabprep.backend.core import CudaDevice

    @contextlib.contextmanager
    def env(name, value):
        old = os.environ.get(name)
        os.environ[name] = value
        try:
            yield
        finally:
            if old is None:
                del os.environ[name]
            else:
                os.environ[name] = old

    @contextlib.contextmanager
    def host_orders():   # the orders drawn with numpy's shuffle on the host, then copied (before 9b915b4)
        saved = CudaDevice.row_order, CudaDevice.host_orders
        CudaDevice.row_order = lambda self, n, seed: None if n <= 1 else self.index_array(permute.shuffled(n, seed))
        CudaDevice.host_orders = True
        from tabprep.loader import planning
        real = planning.chunk_permutation
        planning.chunk_permutation = lambda plan, k, n: None if n <= 1 else permute.shuffled(n, plan.chunk_seed(k))
        try:
            yield
        finally:
            CudaDevice.row_order, CudaDevice.host_orders = saved
            planning.chunk_permutation = real

    @contextlib.contextmanager
    def constructor_frames():
        from tabprep.backend import gpu as g
        saved = g._FAST_FRAMES
        g._FAST_FRAMES = False
        try:
            yield
        finally:
            g._FAST_FRAMES = saved

    @contextlib.contextmanager
    def series_columns():   # columns through cuDF's Series API (TABPREP_GPU_FAST_COLUMNS=0)
        from tabprep.backend import gpu_columns as g
        saved = g._FAST_COLUMNS
        g._FAST_COLUMNS = False
        try:
            yield
        finally:
            g._FAST_COLUMNS = saved

    if gpu:
        olds = {"orders drawn on the host": host_orders, "stream wait per chunk": lambda: env(
                    "TABPREP_LOADER_STREAM_WAIT", "1"),
                "cudf.read_parquet": lambda: env("TABPREP_GPU_DIRECT_READ", "0"),
                "frames by the constructor": constructor_frames,
                "columns through cuDF series": series_columns}
        for label, ctx in olds.items():
            with ctx():
                report(f"epoch, {label}", best(lambda p: epoch(p)))
        with contextlib.ExitStack() as stack:
            for ctx in olds.values():
                stack.enter_context(ctx())
            report("epoch, all five as before", best(lambda p: epoch(p)))
    if gpu:   # (off by default) each preparing thread's reads on a non-blocking stream of its own
        with env("TABPREP_GPU_READ_STREAM", "1"):
            report("epoch, reads on their own streams", best(lambda p: epoch(p)))
    report("epoch shuffle=False", best(lambda p: epoch(p, shuffle=False)))
    report("epoch threads=3", best(lambda p: epoch(p, threads=3)))


if __name__ == "__main__":
    main()
