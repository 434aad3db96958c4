"""Serving latency: ServingTransform and `tabprep serve` against `wf.transform(frame)`, same run.

The canonical Criteo workflow (26 Categorify; 13 FillMissing >> Clip(0) >> LogOp >> Normalize),
fitted on synthetic Criteo rows (`tabprep.io.synthetic`), then:

* in process, one row: ``ServingTransform(row_dict)`` p50/p99 over many distinct rows vs
  ``wf.transform(one-row pandas frame)`` (the only way before);
* in process, 1000 rows: ``transform_batch(dict of numpy arrays)`` vs ``wf.transform(frame)``;
* HTTP, one row per request: the real server process (``tabprep serve``) on 127.0.0.1, driven by
  a bounded keep-alive load generator (asyncio, raw HTTP/1.1) with ``--clients`` concurrent
  connections for ``--seconds`` seconds, in another process on the same machine (it shares
  the CPU with the server: on 2 cores it takes about one of them).

Every served output is checked against the offline transform before timing.

    python benchmarks/serving.py                       # 1M rows fitted, defaults below
    python benchmarks/serving.py --rows 200000 --seconds 5 --clients 16 --workers 1
"""
from __future__ import annotations

import argparse
import asyncio
import atexit
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List

import numpy as np


def pct(xs: List[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs), q))


def fmt_us(x: float) -> str:
    return f"{x * 1e6:,.1f} us" if x < 1e-3 else f"{x * 1e3:,.2f} ms"


# -- load generator ---------------------------------------------------------------------------------
async def _client(host: str, port: int, bodies: List[bytes], deadline: float, max_requests: int,
                  lat: List[float], errors: List[str], counter: List[int]) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    i = 0
    try:
        while time.perf_counter() < deadline and counter[0] < max_requests:
            counter[0] += 1
            body = bodies[i % len(bodies)]
            i += 1
            req = (b"POST /transform HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
                   b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            t0 = time.perf_counter()
            writer.write(req)
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            payload = await reader.readexactly(length)
            lat.append(time.perf_counter() - t0)
            if not head.startswith(b"HTTP/1.1 200"):
                errors.append(head.split(b"\r\n", 1)[0].decode() + " " + payload[:200].decode())
    finally:
        writer.close()


def load(host: str, port: int, bodies: List[bytes], clients: int, seconds: float, max_requests: int) -> Dict[str, Any]:
    """Bounded load: ``clients`` keep-alive connections, until ``seconds`` pass or ``max_requests`` are sent."""
    lat: List[float] = []
    errors: List[str] = []
    counter = [0]

    async def main() -> float:
        deadline = time.perf_counter() + seconds
        t0 = time.perf_counter()
        await asyncio.gather(*[_client(host, port, bodies[k::clients] or bodies, deadline, max_requests, lat,
                                       errors, counter) for k in range(clients)])
        return time.perf_counter() - t0

    try:
        import uvloop  # noqa: F401 - a faster event loop for the client, when installed

        wall = uvloop.run(main())
    except ImportError:
        wall = asyncio.run(main())
    return {"requests": len(lat), "seconds": wall, "rps": len(lat) / wall, "errors": errors[:3],
            "n_errors": len(errors), "p50": pct(lat, 50), "p90": pct(lat, 90), "p99": pct(lat, 99),
            "p999": pct(lat, 99.9), "max": max(lat)}


# -- the benchmark --------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv: Any = None) -> Dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="synthetic Criteo rows to fit on")
    ap.add_argument("--calls", type=int, default=20000, help="one-row ServingTransform calls timed")
    ap.add_argument("--baseline-calls", type=int, default=200, help="one-row wf.transform calls timed")
    ap.add_argument("--batch-calls", type=int, default=300, help="1000-row transform_batch calls timed (each input)")
    ap.add_argument("--seconds", type=float, default=10.0, help="HTTP load duration")
    ap.add_argument("--clients", type=int, default=16, help="concurrent HTTP connections")
    ap.add_argument("--workers", type=int, default=1, help="server processes (tabprep serve --workers)")
    ap.add_argument("--max-requests", type=int, default=500_000, help="HTTP requests at most")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--no-http", action="store_true", help="skip the HTTP part")
    ap.add_argument("--only-http", action="store_true", help="skip the in-process part")
    ap.add_argument("--stats", action="store_true",
                    help="also time one-row calls with the live skew counters (ServingTransform(stats=True)), "
                         "interleaved with calls without them")
    args = ap.parse_args(argv)

    import pandas as pd

    import tabprep as tp
    from tabprep.cli.main import CRITEO_SPEC
    from tabprep.io.synthetic import generate_criteo
    from tabprep.serving import ServingTransform

    wd = args.workdir or tempfile.mkdtemp(prefix="tabprep-serving-bench-")
    if not args.workdir:   # (its own temporary folder: gone at exit, where it stayed with the data)
        atexit.register(shutil.rmtree, wd, True)
    raw, valid, wf_dir = os.path.join(wd, "train"), os.path.join(wd, "valid"), os.path.join(wd, "wf")
    res: Dict[str, Any] = {"rows": args.rows}
    if not os.path.exists(os.path.join(wf_dir, "workflow.json")):
        t0 = time.perf_counter()
        generate_criteo(args.rows, raw, files=2, seed=0)
        generate_criteo(20000, valid, seed=1)
        wf = tp.Workflow.from_spec(CRITEO_SPEC)
        wf.fit(tp.Dataset(raw))
        wf.save(wf_dir)
        print(f"generated + fitted {args.rows:,} rows in {time.perf_counter() - t0:.1f}s", flush=True)
    wf = tp.Workflow.load(wf_dir)
    st = ServingTransform(wf, exclude=["label"])
    frame = tp.Dataset(valid).compute().reset_index(drop=True)
    feats = [c for c in frame.columns if c != "label"]
    n_rows = min(len(frame), 5000)
    rows = [{c: (None if pd.isna(v) else int(v)) for c, v in zip(feats, vals)}
            for vals in frame[feats].iloc[:n_rows].itertuples(index=False)]
    offline = wf.transform(frame.iloc[:n_rows])
    # parity before timing: every row, one row at a time and as one batch
    batch = st.transform_batch({c: frame[c].iloc[:n_rows] for c in feats})
    for c in st.output_names:
        ref = offline[c].to_numpy()
        assert np.array_equal(batch[c], ref, equal_nan=ref.dtype.kind == "f"), c
    for i in range(0, n_rows, 97):
        out = st(rows[i])
        for c in st.output_names:
            ref = offline[c].to_numpy()[i:i + 1]
            assert np.array_equal(out[c], ref, equal_nan=ref.dtype.kind == "f"), (i, c)
    print(f"parity: {n_rows} rows as a batch and every 97th row alone equal wf.transform(frame)", flush=True)

    if not args.only_http:
        _in_process(args, st, wf, frame, rows, feats, n_rows, res)
    if not args.no_http:
        _http(args, st, wf_dir, rows, res)
    return res


def _in_process(args: Any, st: Any, wf: Any, frame: Any, rows: List[Any], feats: List[str], n_rows: int,
                res: Dict[str, Any]) -> None:
    # -- in process, one row
    for r in rows[:200]:
        st(r)
    times = []
    pc = time.perf_counter
    for k in range(args.calls):
        r = rows[k % n_rows]
        t0 = pc()
        st(r)
        times.append(pc() - t0)
    base = []
    for k in range(args.baseline_calls):
        one = frame.iloc[k % n_rows:k % n_rows + 1]
        t0 = pc()
        wf.transform(one)
        base.append(pc() - t0)
    res["one_row"] = {"p50": pct(times, 50), "p99": pct(times, 99), "baseline_p50": pct(base, 50),
                      "baseline_p99": pct(base, 99)}
    res["one_row"]["speedup_p50"] = res["one_row"]["baseline_p50"] / res["one_row"]["p50"]
    if args.stats:  # the counters' cost: the same rows through two transforms, call after call
        from tabprep.serving import ServingTransform

        on = ServingTransform(wf, exclude=["label"], stats=True)
        for r in rows[:200]:
            on(r)
        t_off, t_on = [], []
        for k in range(args.calls):
            r = rows[k % n_rows]
            t0 = pc()
            st(r)
            t1 = pc()
            on(r)
            t_on.append(pc() - t1)
            t_off.append(t1 - t0)
        t0 = pc()
        on.stats.to_dict()  # (counts what is still buffered)
        res["one_row_stats"] = {"p50_off": pct(t_off, 50), "p50_on": pct(t_on, 50), "p99_off": pct(t_off, 99),
                                "p99_on": pct(t_on, 99), "mean_off": float(np.mean(t_off)),
                                "mean_on": float(np.mean(t_on)), "final_flush_s": pc() - t0}
        res["one_row_stats"]["p50_extra_us"] = (res["one_row_stats"]["p50_on"] - res["one_row_stats"]["p50_off"]) * 1e6
        res["one_row_stats"]["mean_extra_us"] = (res["one_row_stats"]["mean_on"] - res["one_row_stats"]["mean_off"]) * 1e6

    # -- in process, 1000 rows
    # numpy arrays hold no nulls (the frame's nulls read as 0 here); the frame path reads pandas' masks
    arrays = {c: frame[c].iloc[:1000].to_numpy(dtype="int64", na_value=0) for c in feats}
    bt, bf, bb = [], [], []
    chunk = frame.iloc[:1000]
    for _ in range(20):  # warm up
        st.transform_batch(arrays)
    for _ in range(args.batch_calls):  # many repetitions: the p50 of a shared machine is noisy
        t0 = pc()
        st.transform_batch(arrays)
        bt.append(pc() - t0)
    for _ in range(max(10, args.batch_calls // 5)):
        t0 = pc()
        st.transform_batch(chunk)
        bf.append(pc() - t0)
    for _ in range(10):
        t0 = pc()
        wf.transform(chunk)
        bb.append(pc() - t0)
    res["rows_1000"] = {"arrays_p50": pct(bt, 50), "arrays_min": min(bt), "arrays_p99": pct(bt, 99),
                        "frame_p50": pct(bf, 50), "baseline_p50": pct(bb, 50)}

    load_avg = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    res["load_average"] = os.getloadavg()
    print(f"\nCriteo workflow fitted on {args.rows:,} rows; in process (same run; {os.cpu_count()} cores, "
          f"load average {load_avg}):")
    o = res["one_row"]
    print(f"  1 row    ServingTransform p50 {fmt_us(o['p50'])}  p99 {fmt_us(o['p99'])}   |  wf.transform(frame) "
          f"p50 {fmt_us(o['baseline_p50'])}  p99 {fmt_us(o['baseline_p99'])}   -> {o['speedup_p50']:,.0f}x")
    b = res["rows_1000"]
    print(f"  1000 rows transform_batch(numpy arrays) p50 {fmt_us(b['arrays_p50'])} (min {fmt_us(b['arrays_min'])}, "
          f"p99 {fmt_us(b['arrays_p99'])}), (pandas frame) p50 {fmt_us(b['frame_p50'])}  |  wf.transform(frame) "
          f"{fmt_us(b['baseline_p50'])}")
    if "one_row_stats" in res:
        s = res["one_row_stats"]
        print(f"  1 row    stats=True p50 {fmt_us(s['p50_on'])} vs stats=False {fmt_us(s['p50_off'])} "
              f"(+{s['p50_extra_us']:.1f} us; mean +{s['mean_extra_us']:.1f} us; p99 {fmt_us(s['p99_on'])} vs "
              f"{fmt_us(s['p99_off'])})")


def _http(args: Any, st: Any, wf_dir: str, rows: List[Any], res: Dict[str, Any]) -> None:
    if True:
        port = free_port()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd()] + sys.path))
        proc = subprocess.Popen([sys.executable, "-m", "tabprep.cli", "serve", wf_dir, "--port", str(port),
                                 "--workers", str(args.workers), "--exclude", "label", "-q"], env=env)
        try:
            import httpx

            deadline = time.time() + 120
            while True:
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.time() > deadline or proc.poll() is not None:
                    raise RuntimeError("the server did not start")
                time.sleep(0.2)
            check = httpx.post(f"http://127.0.0.1:{port}/transform", content=json.dumps(rows[0])).json()
            ref = st.row_values(rows[0])
            assert all(check[c] == ref[c] or (ref[c] != ref[c]) for c in ref), "HTTP output differs"
            bodies = [json.dumps(r).encode() for r in rows[:2000]]
            load("127.0.0.1", port, bodies, args.clients, 1.0, 2000)  # warm up
            h = load("127.0.0.1", port, bodies, args.clients, args.seconds, args.max_requests)
            res["http"] = h
            print(f"\nHTTP, 1 row per request, {args.clients} keep-alive clients, {args.workers} server worker(s), "
                  f"{h['seconds']:.1f}s: {h['rps']:,.0f} req/s, {h['requests']:,} requests, {h['n_errors']} errors")
            print("  latency p50 {}  p90 {}  p99 {}  p99.9 {}  max {}".format(
                *(fmt_us(h[k]) for k in ("p50", "p90", "p99", "p999", "max"))))
            if h["errors"]:
                print("  errors:", h["errors"])
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
