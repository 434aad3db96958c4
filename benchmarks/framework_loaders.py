"""Framework loaders' throughput next to the raw parquet read and the framework-neutral core
loader, in one process (issue 14: "the loaders' rows/s next to the raw parquet read rate").

    python benchmarks/framework_loaders.py --rows 2000000                 # CPU
    python benchmarks/framework_loaders.py --gpu --rows 20000000          # GPU: cuDF read + transform
    KERAS_BACKEND=jax python benchmarks/framework_loaders.py --gpu --keras  # also KerasSequenceLoader

Data: raw Criteo-like parquet (``tabprep.io.synthetic.generate_criteo``), the Criteo workflow
(``C* >> HashBucket``, ``I* >> FillMissing >> Clip(0) >> LogOp >> Normalize``; fitted
beforehand, not timed) attached online with ``map(wf)``. Pipelines, each one epoch of
``--batch`` rows, shuffled, the fastest of ``--passes`` counting:

* **raw read**: the parquet files read once, no transform (pyarrow on the CPU, ``cudf.read_parquet``
  on the GPU, synchronized): the I/O floor;
* **core**: ``tabprep.loader.DataLoader`` (numpy / cupy batches);
* **torch**: ``TorchAsyncItr`` (tensors through DLPack; CUDA tensors on the GPU), when torch is
  installed;
* **jax**: ``JaxLoader`` (``jax.Array``), when JAX is installed;
* **keras** (``--keras``): ``KerasSequenceLoader`` on Keras' backend (``KERAS_BACKEND``);
* ``--stacked``: also each framework loader with ``stacked=True`` (batches of ``{"cats": (B, 26),
  "conts": (B, 13)}`` and a label array; rows ``jax_stacked``, ``torch_stacked``,
  ``keras_<backend>_stacked``), beside its per-column row.

Prints rows/s and each loader's ratio to the core loader and to the raw read, and rows per second
of the process's CPU time (all threads, best pass: less noisy than the wall clock on a shared
machine); ``--no-workflow`` adds the same table on data transformed beforehand (the raw read then
reads those files), ``--train`` the samples/s of ``examples/torch_dlrm.py``'s training step fed by ``TorchAsyncItr`` against the
same steps on one batch held on the device (constant inputs): near 1, training is not input-bound.

    python benchmarks/framework_loaders.py --gpu --rows 20000000 --no-workflow --train
    KERAS_BACKEND=jax python benchmarks/framework_loaders.py --gpu --rows 20000000 --loaders none --train-keras

``--train-keras``: the same ratio for examples/criteo_dlrm.py's Keras DLRM on Keras' backend, fed by
``KerasSequenceLoader`` (``train_on_batch`` steps, which read the loss back as the torch step does).
``--train-transformed`` (diagnostic): the training loaders read the data transformed beforehand by
the training workflow (written once, not timed) with nothing online, so no cuDF kernel of the
loader shares the GPU with the training step: what the online transform costs the ratio.
``--train-stacked``: ``--train-keras`` on stacked batches, with the example's ``StackedDLRM``
(``examples/criteo_dlrm.py --stacked``).
``--held N`` (diagnostic): also the same steps cycling over the first N loader batches held on the
device (distinct inputs, no loader running): near the constant-input rate, the constant batch is not
faster by itself and what the ratio loses is the loader beside the steps.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import sys
import tempfile
import time
from typing import Any, Callable, Dict, Iterable, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__":
    # this script's folder leaves the import path: a benchmark named like a standard library module
    # shadows it (benchmarks/profile.py did, before it became data_profile.py; cProfile imports it)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
sys.path.insert(0, os.path.dirname(HERE))

import tabprep as tp  # noqa: E402
from tabprep import ops  # noqa: E402
from tabprep.io.synthetic import generate_criteo  # noqa: E402

def _examples_on_path() -> None:
    """Put examples/ (torch_dlrm.py, criteo_dlrm.py: the models the --train options time) first on
    ``sys.path``, once."""
    examples = os.path.join(os.path.dirname(HERE), "examples")
    if examples not in sys.path:
        sys.path.insert(0, examples)


CATS = [f"C{i}" for i in range(1, 27)]
CONTS = [f"I{i}" for i in range(1, 14)]


def raw_data(work: str, rows: int, files: int, row_group: int) -> list:
    """The parquet files of ``rows`` Criteo-like rows in ``work/criteo_{rows}`` (seed 0, ``files``
    files, row groups of ``row_group`` rows), generated once (a ``_DONE`` marker; an unfinished
    folder is generated again). The loader benchmarks share this data."""
    data = os.path.join(work, f"criteo_{rows}")
    if not os.path.exists(os.path.join(data, "_DONE")):
        shutil.rmtree(data, ignore_errors=True)
        generate_criteo(rows, data, files=files, seed=0, row_group_size=row_group)
        open(os.path.join(data, "_DONE"), "w").close()
    return sorted(glob.glob(os.path.join(data, "*.parquet")))


def add_data_args(ap: argparse.ArgumentParser, rows: int, directory: Optional[str],
                  dir_help: str = "work folder of the data (made once)") -> None:
    """The options of the loader benchmarks' data (:func:`raw_data`'s layout): ``--rows``,
    ``--files``, ``--row-group`` and ``--dir`` (defaults ``rows``, 8, 100,000, ``directory``)."""
    ap.add_argument("--rows", type=int, default=rows)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--row-group", type=int, default=100_000)
    ap.add_argument("--dir", default=directory, help=dir_help)


def criteo_workflow(buckets: int) -> tp.Workflow:
    cats = CATS >> ops.HashBucket(num_buckets=buckets)
    conts = CONTS >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize(out_dtype="float32")
    return tp.Workflow(cats + conts + ["label"])


def _sync(gpu: bool) -> None:
    if gpu:
        import cupy

        cupy.cuda.Device(0).synchronize()


def time_epochs(make: Callable[[int], Iterable[Any]], rows_of: Callable[[Any], int], passes: int,
                gpu: bool, label: str) -> Dict[str, float]:
    best: Dict[str, float] = {}
    for p in range(passes):
        it = make(p)
        _sync(gpu)
        start, cpu = time.perf_counter(), time.process_time()
        rows = 0
        for batch in it:
            rows += rows_of(batch)
        _sync(gpu)
        seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
        print(f"  {label} pass {p}: {rows / seconds:,.0f} rows/s, {rows / cpu_seconds:,.0f} rows per CPU s",
              file=sys.stderr)
        if not best or seconds < best["seconds"]:
            best = {"seconds": seconds, "rows": rows, "rows_per_s": rows / seconds}
        # the process's CPU time (all its threads): on a shared machine, less noisy than the wall clock
        best["rows_per_cpu_s"] = max(best.get("rows_per_cpu_s", 0.0), rows / cpu_seconds)
    return best


def raw_read(files: list, gpu: bool, passes: int) -> Dict[str, float]:
    def read(_p: int) -> Iterable[Any]:   # a generator: the reads happen inside the timed loop
        if gpu:
            import cudf

            yield cudf.read_parquet(files)
            return
        import pyarrow.parquet as pq

        for f in files:
            yield pq.read_table(f)

    return time_epochs(read, lambda t: t.num_rows if hasattr(t, "num_rows") else len(t), passes, gpu, "raw read")


def loader_table(files: list, wf: Optional[tp.Workflow], args: argparse.Namespace,
                 common: Dict[str, Any]) -> Dict[str, Any]:
    """Rows/s of the raw read and of every loader over ``files``, with ``wf`` attached online (or none)."""
    def attach(loader: Any) -> Any:
        return loader.map(wf) if wf is not None else loader

    results: Dict[str, Any] = {"raw_read": raw_read(files, args.gpu, args.passes)}
    from tabprep.loader import DataLoader

    results["core"] = time_epochs(
        lambda p: attach(DataLoader(files, args.batch, label_names=["label"], cat_names=CATS, cont_names=CONTS,
                                    seed=p, **common)),
        lambda b: len(b["label"]), args.passes, args.gpu, "core")
    layouts = (False, True) if args.stacked else (False,)   # each stacked row right after its per-column one
    try:
        from tabprep.loader.torch import TorchAsyncItr
    except ImportError:
        TorchAsyncItr = None
    if TorchAsyncItr is not None and "torch" in args.loaders:
        for stacked in layouts:
            results["torch" + ("_stacked" if stacked else "")] = time_epochs(
                lambda p, stacked=stacked: attach(TorchAsyncItr(files, batch_size=args.batch, cats=CATS, conts=CONTS,
                                                                labels=["label"], seed=p, stacked=stacked, **common)),
                lambda b: len(b[1]), args.passes, args.gpu, "torch" + (" stacked" if stacked else ""))
    try:
        from tabprep.loader.jax import JaxLoader
    except ImportError:
        JaxLoader = None
    if JaxLoader is not None and "jax" in args.loaders:
        for stacked in layouts:
            results["jax" + ("_stacked" if stacked else "")] = time_epochs(
                lambda p, stacked=stacked: attach(JaxLoader(files, batch_size=args.batch, cats=CATS, conts=CONTS,
                                                            labels=["label"], seed=p, stacked=stacked, **common)),
                lambda b: int(b[1].shape[0]), args.passes, args.gpu, "jax" + (" stacked" if stacked else ""))
    if args.keras:
        from tabprep.loader.keras import BACKEND, KerasSequenceLoader

        for stacked in layouts:
            results[f"keras_{BACKEND}" + ("_stacked" if stacked else "")] = time_epochs(
                lambda p, stacked=stacked: iter(attach(KerasSequenceLoader(
                    files, args.batch, label_names=["label"], cat_names=CATS, cont_names=CONTS, seed=p,
                    stacked=stacked, **common))),
                lambda b: int(b[1].shape[0]), args.passes, args.gpu,
                f"keras ({BACKEND})" + (" stacked" if stacked else ""))
    return results


def print_table(title: str, results: Dict[str, Any]) -> None:
    raw, core = results["raw_read"]["rows_per_s"], results["core"]["rows_per_s"]
    print(title)
    for name, r in results.items():
        if isinstance(r, dict) and "rows_per_s" in r:
            print(f"  {name:16s} {r['rows_per_s']:>14,.0f} rows/s   {r['rows_per_s'] / core:5.2f}x core   "
                  f"{r['rows_per_s'] / raw:5.2f}x raw read   {r['rows_per_cpu_s']:>12,.0f} rows per CPU s")


def ahead(batches: Any, n: int) -> Any:
    """``batches`` as they are (``n`` 0), or taken from them by a thread, up to ``n`` ahead."""
    if not n:
        yield from batches
        return
    import queue
    import threading

    q: "queue.Queue" = queue.Queue(n)
    end = object()

    def fill() -> None:
        try:
            for b in batches:
                q.put(b)
            q.put(end)
        except BaseException as e:   # raised again on the training thread
            q.put(e)

    t = threading.Thread(target=fill, daemon=True)
    t.start()
    while True:
        b = q.get()
        if b is end:
            break
        if isinstance(b, BaseException):
            raise b
        yield b
    t.join()


def train_source(wf: Any, files: list, args: argparse.Namespace, work: str) -> tuple:
    """``(files, workflow to map or None)`` the training loader reads: the raw files with ``wf`` online,
    or (``--train-transformed``) those files transformed by ``wf`` beforehand (once per run and
    workflow layout), nothing online."""
    if not args.train_transformed:
        return files, wf
    done = os.path.join(work, f"criteo_{args.rows}_train_{args.train_buckets}")
    shutil.rmtree(done, ignore_errors=True)
    wf.transform(tp.Dataset(files, cpu=not args.gpu)).to_parquet(done, row_group_size=args.row_group)
    return sorted(glob.glob(os.path.join(done, "*.parquet"))), None


def torch_dlrm_step(wf: tp.Workflow, dim: int, device: Any) -> Callable[[Dict[str, Any], Any], float]:
    """``step(x, y)``: one training step of examples/torch_dlrm.py's DLRM (sized by ``wf``'s output
    schema, embeddings of ``dim``, on ``device``) with Adam, its loss read back as the example does."""
    import torch
    from torch import nn

    _examples_on_path()
    from torch_dlrm import DLRM

    model = DLRM([wf.output_schema[c].cardinality for c in CATS], len(CONTS), dim).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)

    def step(x: Dict[str, Any], y: Any) -> float:
        loss = nn.functional.binary_cross_entropy_with_logits(model(x), y.float())
        opt.zero_grad()
        loss.backward()
        opt.step()
        return float(loss.detach())

    return step


def train_ratio(files: list, args: argparse.Namespace, common: Dict[str, Any], work: str) -> Dict[str, float]:
    """examples/torch_dlrm.py's model and training step fed by ``TorchAsyncItr`` (the workflow online)
    against the same number of steps on one batch already on the device (constant inputs)."""
    import torch

    _examples_on_path()
    from torch_dlrm import criteo_workflow as dlrm_workflow
    from tabprep.loader.torch import TorchAsyncItr

    torch.manual_seed(0)
    wf = dlrm_workflow(args.train_buckets)
    wf.fit(tp.Dataset(files, cpu=not args.gpu))
    source, online = train_source(wf, files, args, work)
    itr = TorchAsyncItr(source, batch_size=args.batch, cats=CATS, conts=CONTS, labels=["label"], seed=0, **common)
    if online is not None:
        itr = itr.map(online)
    step = torch_dlrm_step(wf, args.train_dim, itr.device)
    x0, y0 = itr.peek()
    x0 = {k: v.clone() for k, v in x0.items()}
    y0 = y0.clone()
    for _ in range(5):   # warm-up: kernels, allocator, Adam's state
        step(x0, y0)
    _sync(args.gpu)
    out: Dict[str, float] = {}
    for p in range(args.passes):
        t = time.perf_counter()
        rows = steps = 0
        for x, y in ahead(itr, args.ahead):
            step(x, y)
            rows += len(y)
            steps += 1
        _sync(args.gpu)
        fed = rows / (time.perf_counter() - t)
        t = time.perf_counter()
        for _ in range(steps):
            step(x0, y0)
        _sync(args.gpu)
        const = steps * len(y0) / (time.perf_counter() - t)
        held = held_rate(step, itr, steps, lambda b: len(b[1]), lambda: _sync(args.gpu), args.held)
        print(f"  train pass {p}: loader-fed {fed:,.0f} rows/s, constant inputs {const:,.0f} rows/s"
              + (f", {args.held} batches held {held:,.0f} rows/s" if held else ""), file=sys.stderr)
        if not out or fed / const > out["ratio"]:
            out = {"fed_rows_per_s": fed, "constant_rows_per_s": const, "ratio": fed / const, "held_rows_per_s": held}
    return out


def held_note(t: Dict[str, float], held: int) -> str:
    """The ``--held`` figures of a training result, for its summary line."""
    if not t.get("held_rows_per_s"):
        return ""
    h = t["held_rows_per_s"]
    return (f"; {held} batches held {h:,.0f} rows/s ({h / t['constant_rows_per_s']:.2f}x constant; "
            f"loader-fed {t['fed_rows_per_s'] / h:.2f}x held)")


def held_rate(step: Callable, batches: Iterable, steps: int, rows_of: Callable, sync: Callable, held: int) -> float:
    """(``--held N``) rows/s of ``steps`` training steps cycling over the first ``N`` batches of
    ``batches``, taken beforehand and held on the device (0: not measured): distinct inputs, as the
    loader's, with no loader running beside the steps. Near the loader-fed rate, the loader is not
    what the ratio to constant inputs loses (the same batch every step is faster by itself)."""
    if not held:
        return 0.0
    kept = []
    for b in batches:
        kept.append(b)
        if len(kept) == held:
            break
    for x, y in kept[:2]:   # (a shape not met yet compiles outside the clock)
        step(x, y)
    sync()
    t = time.perf_counter()
    rows = 0
    for k in range(steps):
        x, y = kept[k % len(kept)]
        step(x, y)
        rows += rows_of((x, y))
    sync()
    return rows / (time.perf_counter() - t)


def train_keras_ratio(files: list, args: argparse.Namespace, common: Dict[str, Any], work: str) -> Dict[str, float]:
    """examples/criteo_dlrm.py's Keras DLRM (on Keras' backend, ``KERAS_BACKEND``) trained step by step
    (``train_on_batch``, which reads the loss back, as the torch step does) on the batches of
    ``KerasSequenceLoader`` (the workflow online) against the same steps on one batch (constant inputs)."""
    _examples_on_path()
    from criteo_dlrm import build_dlrm, criteo_workflow as keras_workflow
    from tabprep.loader.keras import KerasSequenceLoader

    wf = keras_workflow(args.train_buckets)
    wf.fit(tp.Dataset(files, cpu=not args.gpu))
    source, online = train_source(wf, files, args, work)
    loader = KerasSequenceLoader(source, args.batch, label_names=["label"], cat_names=CATS, cont_names=CONTS, seed=0,
                                 stacked=args.train_stacked, **common)
    if online is not None:
        loader = loader.map(online)
    model = build_dlrm(wf.output_schema, args.train_dim, jit="auto" if args.gpu else False, stacked=args.train_stacked)
    x0, y0 = loader[0]
    for _ in range(5):   # warm-up: compiles, optimizer state
        model.train_on_batch(x0, y0)
    out: Dict[str, float] = {}
    for p in range(args.passes):
        t = time.perf_counter()
        rows = steps = 0
        for x, y in ahead(loader, args.ahead):
            model.train_on_batch(x, y)
            rows += int(y.shape[0])
            steps += 1
        fed = rows / (time.perf_counter() - t)
        t = time.perf_counter()
        for _ in range(steps):
            model.train_on_batch(x0, y0)
        const = steps * int(y0.shape[0]) / (time.perf_counter() - t)
        held = held_rate(model.train_on_batch, loader, steps, lambda b: int(b[1].shape[0]), lambda: None, args.held)
        print(f"  keras train pass {p}: loader-fed {fed:,.0f} rows/s, constant inputs {const:,.0f} rows/s"
              + (f", {args.held} batches held {held:,.0f} rows/s" if held else ""), file=sys.stderr)
        if not out or fed / const > out["ratio"]:
            out = {"fed_rows_per_s": fed, "constant_rows_per_s": const, "ratio": fed / const, "held_rows_per_s": held}
    return out


def add_switch_interval(ap: argparse.ArgumentParser) -> None:
    """``--switch-interval S`` (this script's and train_contention.py's)."""
    ap.add_argument("--switch-interval", type=float, default=None, metavar="SECONDS",
                    help="sys.setswitchinterval(S) in this process (Python hands the GIL to a waiting thread "
                         "after S seconds; default 0.005): how much the training thread waits on the loader's")


def apply_switch_interval(args: argparse.Namespace) -> None:
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)


def main(argv: Optional[list] = None) -> Dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_args(ap, 2_000_000, None, "work folder (default: a temporary one, removed)")
    ap.add_argument("--batch", type=int, default=65536)
    ap.add_argument("--buffer-size", type=float, default=None,
                    help="loader buffer_size (rows per piece, or a fraction of memory); default 250k CPU / 2M GPU")
    ap.add_argument("--buckets", type=int, default=1_000_000)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--gpu", action="store_true", help="read and transform with cuDF on GPU 0")
    ap.add_argument("--keras", action="store_true", help="also time KerasSequenceLoader on Keras' backend")
    ap.add_argument("--no-workflow", action="store_true",
                    help="also time the loaders on already transformed data (written once, not timed)")
    ap.add_argument("--train", action="store_true",
                    help="also the DLRM training of examples/torch_dlrm.py fed by TorchAsyncItr against constant "
                         "inputs on the device (ratio of samples/s; >= 0.9: training is not input-bound)")
    ap.add_argument("--train-keras", action="store_true",
                    help="also examples/criteo_dlrm.py's Keras DLRM (on KERAS_BACKEND) trained on KerasSequenceLoader "
                         "batches against constant inputs (ratio of samples/s; >= 0.9: not input-bound)")
    ap.add_argument("--train-buckets", type=int, default=100_000, help="HashBucket buckets of the --train models")
    ap.add_argument("--train-dim", type=int, default=16, help="embedding size of the --train model")
    ap.add_argument("--stacked", action="store_true",
                    help="also the framework loaders with stacked=True ({cats, conts} 2-D arrays; jax, torch, keras)")
    ap.add_argument("--loaders", default="core,torch,jax", help="framework loaders to time besides core")
    ap.add_argument("--threads", type=int, default=None, help="loader threads preparing chunks (default: the loader's)")
    ap.add_argument("--json", default=None, help="also write the results here")
    add_switch_interval(ap)
    ap.add_argument("--ahead", type=int, default=0,
                    help="--train/--train-keras: converted batches taken from the loader by a thread of the "
                         "benchmark, N ahead of the training loop (diagnostic: is the conversion on the "
                         "training thread what the ratio loses?)")
    ap.add_argument("--train-transformed", action="store_true",
                    help="--train/--train-keras: the loaders read data transformed beforehand by the training "
                         "workflow, nothing online (diagnostic: what the online transform on the GPU costs the ratio)")
    ap.add_argument("--train-stacked", action="store_true",
                    help="--train-keras: stacked batches (stacked=True) into the example's StackedDLRM (python "
                         "examples/criteo_dlrm.py --stacked), the fast layout on JAX")
    ap.add_argument("--held", type=int, default=0,
                    help="--train/--train-keras: also the steps cycling over the first N batches held on the device "
                         "(distinct inputs, no loader beside the steps; diagnostic: is the constant batch faster by itself?)")
    args = ap.parse_args(argv)
    apply_switch_interval(args)
    device: Any = 0 if args.gpu else "cpu"
    buffer_size = args.buffer_size or (2_000_000 if args.gpu else 250_000)

    work = args.dir or tempfile.mkdtemp(prefix="tabprep-fw-bench-")
    try:
        files = raw_data(work, args.rows, args.files, args.row_group)
        wf = criteo_workflow(args.buckets)
        wf.fit(tp.Dataset(files, cpu=not args.gpu))
        common = dict(shuffle=True, buffer_size=buffer_size, parts_per_chunk=2, device=device, threads=args.threads)
        where = f"{'GPU' if args.gpu else 'CPU'}, {args.rows:,} rows, batch {args.batch:,}"
        fed_by = "data transformed beforehand" if args.train_transformed else "workflow online"
        results: Dict[str, Any] = {"rows": args.rows, "batch": args.batch, "gpu": args.gpu}
        results["workflow"] = online = loader_table(files, wf, args, common)
        if args.no_workflow:
            done = os.path.join(work, f"criteo_{args.rows}_transformed")
            shutil.rmtree(done, ignore_errors=True)
            wf.transform(tp.Dataset(files, cpu=not args.gpu)).to_parquet(done, row_group_size=args.row_group)
            results["no_workflow"] = loader_table(sorted(glob.glob(os.path.join(done, "*.parquet"))), None, args,
                                                  common)
        if args.train:
            results["train"] = train_ratio(files, args, common, work)
        if args.train_keras:
            results["train_keras"] = train_keras_ratio(files, args, common, work)
        print_table(f"{where}, workflow online:", online)
        if args.no_workflow:
            print_table(f"{where}, no workflow (data transformed beforehand):", results["no_workflow"])
        if args.train:
            t = results["train"]
            print(f"{where}, DLRM training (examples/torch_dlrm.py's model, {args.train_buckets:,} buckets, {fed_by}): "
                  f"loader-fed {t['fed_rows_per_s']:,.0f} rows/s, constant inputs {t['constant_rows_per_s']:,.0f} "
                  f"rows/s: {t['ratio']:.2f}x" + held_note(t, args.held))
        if args.train_keras:
            from tabprep.loader.keras import BACKEND

            t = results["train_keras"]
            print(f"{where}, Keras DLRM training (examples/criteo_dlrm.py's {'StackedDLRM, stacked batches' if args.train_stacked else 'model'} on {BACKEND}, {args.train_buckets:,} "
                  f"buckets, {fed_by}): loader-fed {t['fed_rows_per_s']:,.0f} rows/s, constant inputs "
                  f"{t['constant_rows_per_s']:,.0f} rows/s: {t['ratio']:.2f}x" + held_note(t, args.held))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)
        return results
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
