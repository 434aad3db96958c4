"""What a JAX batch costs the consumer, by the number of arrays it hands out (issue 33).

    python benchmarks/jax_handoff.py --rows 3300000 --columns 26,13,1 --batch 65536

A chunk block per dtype group (``--columns``: columns per block) lives on the GPU as JAX arrays;
each batch is taken from them the ways a loader can, timed over every full batch of the chunk
(best of ``--passes``):

* ``per column``: one jitted dynamic slice per block returning each column as its own array (what
  ``JaxLoader`` hands out: a dict of columns);
* ``per block``: the same slice returning the block's 2-D slice (one array per block);
* ``eager slice``: ``lax.dynamic_slice`` called eagerly per block (no jit).

The difference between the first two is the cost of the per-column array objects.

* ``per column, one call``: every block's columns of a batch from ONE jitted call
  (``tabprep.loader.jax._slicer_many``, what the per-column ``JaxLoader`` and Keras on JAX do on a
  GPU since the fifteenth session). Measured on one H200 (windows of 16 batches of 65,536 rows,
  26 + 13 + 1 columns, 2026-11-28): 576 us a batch with a call per block, 243 us with one call; a
  call costs about 100 us and each output array about 6 us, so 16 batches per call (640 outputs)
  gave 293 us a batch, no better.
* ``one call, device starts``: the same call with each start given as a device scalar made once
  (``jax.device_put``), where ``np.int32`` starts are copied to the device at every call.

``--stacked`` adds the layout of ``JaxLoader(stacked=True)`` (the first block as ``cats``, the second
as ``conts``, the third as the label, transposed to ``(batch, columns)``):

* ``stacked/batch``: one jitted call per batch and group (3 a batch);
* ``stacked/chunk``: as the loader does it, one jitted call per group and up to 16 batches of the
  chunk on a GPU (one batch on the CPU; :mod:`tabprep.loader.jax_stacked`), the batches then handed
  out as they are;
* ``stacked/window``: as the loader does it since windows (a copy of each block's rows of the
  call's batches, then the call on the window: one compile whatever the chunk's length).

All groups in one jitted call per chunk instead of one per group measured 0.038 against 0.042 ms a
batch on an H200 (3.3M rows, 26 + 13 + 1 columns): that variant (``TABPREP_JAX_STACKED_ONE_CALL``)
was removed.

    python benchmarks/jax_handoff.py --rows 3300000 --stacked

``--busy-thread`` times each variant again while another thread runs pure Python (a counting loop,
as the loader's preparing threads run the workflow's Python), with the GIL's hand-over interval at
Python's default (5 ms) and at ``--switch-interval`` seconds, and prints the busy thread's pace
against its pace alone. A call that releases the GIL (JAX's dispatch does) waits for it to come
back; a thread that holds it in bytecode gives it up only when the interval ends. It also times
freeing the batches' per-column arrays, alone and beside the busy thread (on a GPU JAX gives up the
GIL for each array it frees).

    python benchmarks/jax_handoff.py --rows 3300000 --busy-thread
"""
from __future__ import annotations

import argparse
import sys
import threading
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=3_300_000)
    ap.add_argument("--columns", default="26,13,1")
    ap.add_argument("--batch", type=int, default=65536)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--stacked", action="store_true", help="also the stacked layouts (per batch, per chunk)")
    ap.add_argument("--group", type=int, default=None,
                    help="with --stacked: batches per chunk call (default: the loader's, 16 on a GPU, 1 on the CPU)")
    ap.add_argument("--busy-thread", action="store_true", help="also time each variant beside a pure-Python thread")
    ap.add_argument("--switch-interval", type=float, default=0.0005,
                    help="with --busy-thread: the GIL interval of the second busy run (seconds)")
    args = ap.parse_args()
    import jax
    import jax.numpy as jnp

    widths = [int(c) for c in args.columns.split(",")]
    blocks = [jnp.asarray(np.random.default_rng(i).random((w, args.rows), dtype=np.float32)) for i, w in enumerate(widths)]
    bs = args.batch
    starts = list(range(0, args.rows - bs + 1, bs))

    def cols(a, start):
        part = jax.lax.dynamic_slice_in_dim(a, start, bs, axis=1)
        return tuple(part[j] for j in range(a.shape[0]))

    def block(a, start):
        return jax.lax.dynamic_slice_in_dim(a, start, bs, axis=1)

    per_col, per_block = jax.jit(cols), jax.jit(block)

    def run(fn):
        out = None
        for s in starts:
            out = [fn(b, np.int32(s)) for b in blocks]
        jax.block_until_ready(out)

    def eager(_):
        out = None
        for s in starts:
            out = [jax.lax.dynamic_slice_in_dim(b, s, bs, axis=1) for b in blocks]
        jax.block_until_ready(out)

    from tabprep.loader.jax import _slicer_many

    all_cols = _slicer_many(False, bs)

    def one_call():
        out = None
        for s in starts:
            out = all_cols(tuple(blocks), tuple(np.int32(s) for _ in blocks))
        jax.block_until_ready(out)

    held_starts = {s: jax.device_put(np.int32(s)) for s in starts}

    def one_call_device_starts():   # the starts as device scalars made once, not a host scalar per call
        out = None
        for s in starts:
            out = all_cols(tuple(blocks), tuple(held_starts[s] for _ in blocks))
        jax.block_until_ready(out)

    variants = [("per column", lambda: run(per_col)), ("per column, one call", one_call),
                ("one call, device starts", one_call_device_starts),
                ("per block", lambda: run(per_block)), ("eager slice", lambda: eager(None))]
    if args.stacked:
        variants += stacked_variants(blocks, starts, bs, args.group)
    alone = _busy_pace(None) if args.busy_thread else None
    for label, fn in variants:
        fn()   # compile
        best = min(_timed(fn) for _ in range(args.passes))
        n = len(starts)
        print(f"  {label:24s} {best:7.3f} s for {n} batches: {1e3 * best / n:6.3f} ms a batch "
              f"({sum(widths)} columns in {len(widths)} blocks)", flush=True)
        if not args.busy_thread:
            continue
        default = sys.getswitchinterval()
        for interval in (default, args.switch_interval):
            sys.setswitchinterval(interval)
            try:
                seconds, pace = _beside_busy_thread(lambda: _timed(fn))
            finally:
                sys.setswitchinterval(default)
            print(f"  {'':24s} beside a busy Python thread, GIL interval {interval * 1e3:.1f} ms: "
                  f"{1e3 * seconds / n:6.3f} ms a batch; the busy thread at {pace / alone:.2f}x its pace alone",
                  flush=True)
    if args.busy_thread:
        _freeing(lambda: [all_cols(tuple(blocks), tuple(held_starts[s] for _ in blocks)) for s in starts],
                 len(starts), sum(widths), args.switch_interval)


def _freeing(make, n: int, columns: int, interval: float) -> None:
    """The time to free ``n`` batches' per-column arrays (``make()``'s), alone and beside a busy
    Python thread at Python's default GIL interval and at ``interval``: on a GPU JAX gives up the
    GIL for each array it frees (one H200: 0.06 ms a batch of 40 alone, 188 ms beside the thread)."""
    import jax

    def free_once() -> float:
        made = make()
        jax.block_until_ready(made)
        t = time.perf_counter()
        del made[:]
        return time.perf_counter() - t

    print(f"  {'freeing a batch':24s} alone {1e3 * free_once() / n:8.3f} ms a batch ({columns} arrays)", flush=True)
    default = sys.getswitchinterval()
    for value in (default, interval):
        sys.setswitchinterval(value)
        try:
            seconds, _ = _beside_busy_thread(free_once)
        finally:
            sys.setswitchinterval(default)
        print(f"  {'':24s} beside a busy Python thread, GIL interval {value * 1e3:.1f} ms: "
              f"{1e3 * seconds / n:8.3f} ms a batch", flush=True)


def _busy_pace(run) -> float:
    """Counts per second of a pure-Python counting thread while ``run()`` runs (None: 0.5 s alone)."""
    stop = threading.Event()
    count = [0]

    def spin() -> None:
        n = 0
        while not stop.is_set():
            n += 1
        count[0] = n

    thread = threading.Thread(target=spin, daemon=True)
    t = time.perf_counter()
    thread.start()
    if run is None:
        time.sleep(0.5)
    else:
        run()
    stop.set()
    thread.join()
    return count[0] / (time.perf_counter() - t)


def _beside_busy_thread(measure) -> "tuple[float, float]":
    """(``measure()``'s seconds, taken while a pure-Python thread counts, that thread's counts per second)."""
    took = [0.0]

    def run() -> None:
        took[0] = measure()

    pace = _busy_pace(run)
    return took[0], pace


def stacked_variants(blocks, starts, bs, group=None):
    """``JaxLoader(stacked=True)``'s hand-off over the same blocks: per batch, and per chunk."""
    import jax

    from tabprep.loader import jax_stacked
    from tabprep.loader.stacked import stack_layout

    names = [tuple(f"b{i}_{j}" for j in range(b.shape[0])) for i, b in enumerate(blocks)]
    meta = tuple((n, np.dtype(b.dtype).str) for n, b in zip(names, blocks))
    groups = stack_layout(meta, *(names + [()] * (3 - len(names)))[:3], True)
    rows = int(blocks[0].shape[1])

    def per_batch():
        out = None
        for s in starts:
            out = jax_stacked._run(groups, blocks, bs, [s])
        jax.block_until_ready(out)

    def per_chunk():
        count = group or jax_stacked._group_size(rows, bs, blocks[0].devices().pop().platform == "cpu")
        out = None
        for g in range(0, len(starts), count):
            part = starts[g:g + count]
            out = jax_stacked._run(groups, blocks, bs, part + [part[-1]] * (count - len(part)))
        jax.block_until_ready(out)

    def per_window():   # the loader's: the rows of the call's batches copied out, the call on them
        count = group or jax_stacked._group_size(rows, bs, blocks[0].devices().pop().platform == "cpu")
        out = None
        for g in range(0, len(starts), count):
            part = starts[g:g + count]
            ws = jax_stacked.window_start(part[0], count * bs, rows)
            windows = [jax.lax.dynamic_slice_in_dim(b, np.int32(ws), count * bs, axis=1) for b in blocks]
            out = jax_stacked._run(groups, windows, bs, [s - ws for s in part + [part[-1]] * (count - len(part))])
        jax.block_until_ready(out)

    return [("stacked/batch", per_batch), ("stacked/chunk", per_chunk), ("stacked/window", per_window)]


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
