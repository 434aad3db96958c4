"""What a loader running beside a training loop costs the loop (issue 33: "training is not
input-bound"), apart from handing batches over.

    python benchmarks/train_contention.py --gpu --rows 20000000 --dir /dev/shm/fl   # one GPU
    python benchmarks/train_contention.py --rows 300000 --steps 5                    # CPU (smoke)

For each training loop, the steps/s of training on one batch held on the device (constant
inputs) alone, then the same steps while a background thread runs the core ``DataLoader`` (the
Criteo workflow of ``benchmarks/framework_loaders.py`` online, shuffled) flat out, its batches
dropped; and the loader's batches/s meanwhile. Loops (``--loops``):

* ``torch``: ``examples/torch_dlrm.py``'s model and step (the loss read back each step) on
  PyTorch's current stream (its default stream: the legacy one, which cuDF uses too);
* ``torch-side``: the same on a ``torch.cuda.Stream()`` of its own;
* ``keras``: ``examples/criteo_dlrm.py``'s Keras DLRM, ``train_on_batch`` (``KERAS_BACKEND``,
  default jax).

A loop beside a loader running at ``r`` of its full rate is expected to keep about
``1 - r * (1 - ratio)`` of its steps/s: at the training rate the loader runs a fraction of the
time, so the ratio printed here bounds what the loader's own work (GPU kernels, GIL, host copies)
takes from training, whatever the hand-off. Timing starts once the loader has made its first
batch (its start-up is not contention).
"""
from __future__ import annotations

import argparse
import atexit
import os
import shutil
import sys
import threading
import time
from typing import Any, Callable, List

HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__":
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(1, HERE)
sys.path.insert(2, os.path.join(os.path.dirname(HERE), "examples"))
os.environ.setdefault("KERAS_BACKEND", "jax")

import tabprep as tp  # noqa: E402
from framework_loaders import (CATS, CONTS, add_switch_interval, apply_switch_interval, raw_data,  # noqa: E402
                               torch_dlrm_step)


def run_loader(files: List[str], wf: Any, device: Any, batch: int, stop: threading.Event, made: List[int]) -> None:
    """Epochs of the core loader (``wf`` online), batches dropped, until ``stop``; ``made[0]``
    counts them."""
    from tabprep.loader import DataLoader

    seed = 0
    while not stop.is_set():
        loader = DataLoader(files, batch, label_names=["label"], cat_names=CATS, cont_names=CONTS, seed=seed,
                            shuffle=True, buffer_size=2_000_000 if device != "cpu" else 250_000, parts_per_chunk=2,
                            device=device).map(wf)
        try:
            for _ in loader:
                made[0] += 1
                if stop.is_set():
                    break
        finally:
            loader.close()
        seed += 1


def measure(name: str, step: Callable[[], Any], sync: Callable[[], Any], files: List[str], wf: Any,
            args: argparse.Namespace) -> dict:
    """Steps/s of ``step`` alone and beside the loader, and the loader's batches/s meanwhile."""
    for _ in range(5):   # warm-up: kernels, compiles, optimizer state
        step()
    sync()
    t = time.perf_counter()
    for _ in range(args.steps):
        step()
    sync()
    alone = args.steps / (time.perf_counter() - t)
    stop, made = threading.Event(), [0]
    device = 0 if args.gpu else "cpu"
    th = threading.Thread(target=run_loader, args=(files, wf, device, args.batch, stop, made), daemon=True)
    th.start()
    deadline = time.monotonic() + 120
    while not made[0] and time.monotonic() < deadline:   # the loader's start-up is not contention
        time.sleep(0.01)
    time.sleep(args.settle)
    c0, t = made[0], time.perf_counter()
    for _ in range(args.steps):
        step()
    sync()
    dt = time.perf_counter() - t
    c1 = made[0]
    stop.set()
    th.join()
    beside = args.steps / dt
    out = {"alone_steps_per_s": alone, "beside_steps_per_s": beside, "ratio": beside / alone,
           "loader_batches_per_s": (c1 - c0) / dt}
    print(f"  {name:24s} alone {alone:8.1f} steps/s, beside the loader {beside:8.1f} steps/s "
          f"({beside / alone:.2f}x); the loader meanwhile {out['loader_batches_per_s']:8.1f} batches/s", flush=True)
    return out


def main(argv: Any = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--row-group", type=int, default=100_000)
    ap.add_argument("--dir", default=None, help="work folder of the data (made once; default: a temporary one)")
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--batch", type=int, default=65536)
    ap.add_argument("--steps", type=int, default=200, help="timed steps, alone and beside the loader")
    ap.add_argument("--settle", type=float, default=1.0, help="seconds the loader runs before the clock starts")
    ap.add_argument("--buckets", type=int, default=100_000, help="HashBucket buckets of the models' workflows")
    ap.add_argument("--loops", default="torch,torch-side,keras")
    add_switch_interval(ap)
    args = ap.parse_args(argv)
    apply_switch_interval(args)
    import tempfile

    work = args.dir or tempfile.mkdtemp(prefix="tabprep-contention-")
    if not args.dir:   # (its own temporary folder: gone at exit)
        atexit.register(shutil.rmtree, work, True)
    files = raw_data(work, args.rows, args.files, args.row_group)
    loops = [x for x in args.loops.split(",") if x]
    results = {}
    print(f"{'GPU' if args.gpu else 'CPU'}, {args.rows:,} rows, batch {args.batch:,}, {args.steps} steps:")
    if any(x.startswith("torch") for x in loops):
        import torch
        from torch_dlrm import criteo_workflow

        from tabprep.loader.torch import TorchAsyncItr

        wf = criteo_workflow(args.buckets)
        wf.fit(tp.Dataset(files, cpu=not args.gpu))
        itr = TorchAsyncItr(files, batch_size=args.batch, cats=CATS, conts=CONTS, labels=["label"], seed=0,
                            device=0 if args.gpu else "cpu").map(wf)
        x0, y0 = itr.peek()
        x0, y0 = {k: v.clone() for k, v in x0.items()}, y0.clone()
        itr.close()
        torch.manual_seed(0)
        train = torch_dlrm_step(wf, 16, y0.device)
        sync = torch.cuda.synchronize if args.gpu else (lambda: None)

        def step() -> float:
            return train(x0, y0)

        if "torch" in loops:
            results["torch"] = measure("torch, current stream", step, sync, files, wf, args)
        if "torch-side" in loops and args.gpu:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())

            def side_step() -> float:
                with torch.cuda.stream(side):
                    return step()

            results["torch_side"] = measure("torch, a stream of its own", side_step, sync, files, wf, args)
    if "keras" in loops:
        from criteo_dlrm import build_dlrm, criteo_workflow as keras_workflow

        from tabprep.loader.keras import BACKEND, KerasSequenceLoader

        wf = keras_workflow(args.buckets)
        wf.fit(tp.Dataset(files, cpu=not args.gpu))
        loader = KerasSequenceLoader(files, args.batch, label_names=["label"], cat_names=CATS, cont_names=CONTS,
                                     seed=0, device=0 if args.gpu else "cpu").map(wf)
        x0, y0 = loader[0]
        loader.close()
        model = build_dlrm(wf.output_schema, 16, jit="auto" if args.gpu else False)
        results["keras"] = measure(f"keras ({BACKEND})", lambda: model.train_on_batch(x0, y0), lambda: None,
                                   files, wf, args)
    return results


if __name__ == "__main__":
    main()
