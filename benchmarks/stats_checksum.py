"""Cost of the statistics checksums of saved workflows (issue #11) on a large vocabulary.

Usage::

    python benchmarks/stats_checksum.py [--distinct 1000000] [--kind str|int] [--repeat 3]

Fits ``["C"] >> Categorify()`` on a column of ``--distinct`` distinct values (each once), then
times, best of ``--repeat``, in this process:

* ``wf.save(path)`` and ``Workflow.load(path)`` as shipped (sha256 of every statistics file
  written at save and checked at load);
* the checksum part alone (``stats_manifest`` at save, ``verify_stats`` at load), so the ratio
  checksum / total is the share the checksums add;
* baselines over the same files: sha256, blake2b, zlib.crc32 and reading the bytes only, to
  show what a cheaper checksum would save.

Printed: the size of the statistics files, each time in ms and the ratios.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
import time
import zlib
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def file_digest(paths, make) -> None:
    for p in paths:
        h = make()
        with open(p, "rb") as fh:
            while True:
                b = fh.read(1 << 20)
                if not b:
                    break
                h.update(b)
        h.digest()


def crc(paths) -> None:
    for p in paths:
        v = 0
        with open(p, "rb") as fh:
            while True:
                b = fh.read(1 << 20)
                if not b:
                    break
                v = zlib.crc32(b, v)


def read_only(paths) -> None:
    for p in paths:
        with open(p, "rb") as fh:
            while fh.read(1 << 20):
                pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--distinct", type=int, default=1_000_000)
    ap.add_argument("--kind", choices=["str", "int"], default="str")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    import numpy as np
    import pandas as pd

    import tabprep as tp
    from tabprep import ops
    from tabprep.workflow.serialize import stats_manifest, verify_stats
    import json

    rng = np.random.default_rng(0)
    ids = rng.permutation(args.distinct).astype("int64") * 7919 + 12345
    col = pd.Series([f"item_{v:012d}" for v in ids]) if args.kind == "str" else pd.Series(ids)
    wf = tp.Workflow(["C"] >> ops.Categorify())
    wf.fit(pd.DataFrame({"C": col}))

    tmp = Path(tempfile.mkdtemp(prefix="tabprep_cksum_"))
    try:
        path = tmp / "wf"

        def save():
            wf.save(str(path))

        t_save = best(save, args.repeat)
        t_load = best(lambda: tp.Workflow.load(str(path)), args.repeat)
        spec = json.loads((path / "workflow.json").read_text())
        files = [path / rel for rel in spec["stats_files"]]
        nbytes = sum(f.stat().st_size for f in files)
        t_manifest = best(lambda: stats_manifest(path), args.repeat)
        t_verify = best(lambda: verify_stats(path, spec), args.repeat)
        t_sha = best(lambda: file_digest(files, hashlib.sha256), args.repeat)
        t_blake = best(lambda: file_digest(files, hashlib.blake2b), args.repeat)
        t_crc = best(lambda: crc(files), args.repeat)
        t_read = best(lambda: read_only(files), args.repeat)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    mb = nbytes / 1e6
    print(f"vocabulary: {args.distinct:,} distinct {args.kind} values; statistics files: {len(files)}, {mb:.1f} MB")
    print(f"save (with checksums)     {t_save * 1e3:8.1f} ms")
    print(f"  of which stats_manifest {t_manifest * 1e3:8.1f} ms  ({t_manifest / t_save:6.1%} of save)")
    print(f"load (with verification)  {t_load * 1e3:8.1f} ms")
    print(f"  of which verify_stats   {t_verify * 1e3:8.1f} ms  ({t_verify / t_load:6.1%} of load)")
    print("baselines over the same files (warm page cache):")
    for name, t in [("sha256", t_sha), ("blake2b", t_blake), ("zlib.crc32", t_crc), ("read only", t_read)]:
        print(f"  {name:10s} {t * 1e3:8.1f} ms  {mb / t:8.0f} MB/s  ({t / t_sha:5.2f} x sha256)")


if __name__ == "__main__":
    main()
