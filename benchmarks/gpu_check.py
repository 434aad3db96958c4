"""CPU/GPU parity check: run the same workflows on pandas and cuDF and compare outputs.

    python benchmarks/gpu_check.py            # needs cuDF + a GPU; prints one line per check

Checks murmur3 hashes against cuDF's, then fits and transforms several workflows (ints,
strings, nulls, lists, every core op) on both backends, comparing ids exactly and floats
to float32 rounding, plus a save on GPU / load on CPU round trip. Exit code 1 if any fails.
"""
from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
import traceback

import numpy as np
import pandas as pd

RESULTS = []


def check(name):
    def deco(fn):
        try:
            fn()
            RESULTS.append((name, "ok", ""))
        except Exception as exc:  # noqa: BLE001 - report every failure and go on
            RESULTS.append((name, "FAIL", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}"))
        return fn
    return deco


def frame(n=5000, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "i64": pd.array(rng.integers(-50, 50, n), dtype="Int64"),
        "i32": rng.integers(0, 30, n).astype("int32"),
        "s": pd.Series(rng.choice(["a", "bb", "ccc", "dddd", "é", ""], n), dtype="str"),
        "f": rng.normal(size=n),
        "g": rng.integers(0, 1000, n).astype("float32"),
        "label": rng.integers(0, 2, n),
    })
    df.loc[rng.random(n) < 0.1, "i64"] = pd.NA
    df.loc[rng.random(n) < 0.1, "s"] = None
    df.loc[rng.random(n) < 0.1, "f"] = np.nan
    return df


def compare(cpu_out, gpu_out):
    gpu_out = gpu_out.to_pandas() if hasattr(gpu_out, "to_pandas") else gpu_out
    assert list(cpu_out.columns) == list(gpu_out.columns), (list(cpu_out.columns), list(gpu_out.columns))
    assert len(cpu_out) == len(gpu_out)
    for c in cpu_out.columns:
        a, b = cpu_out[c], gpu_out[c]
        if str(a.dtype).startswith(("list", "large_list")) or "list" in str(a.dtype):
            import pyarrow as pa

            la, lb = pa.array(a).to_pylist(), pa.array(b).to_pylist()
            assert la == lb, f"{c}: first differences {[(i, u, v) for i, (u, v) in enumerate(zip(la, lb)) if u != v][:5]}"
            continue
        if np.dtype(getattr(a.dtype, "numpy_dtype", "O")).kind == "f":
            x = a.to_numpy(dtype="float64", na_value=np.nan)
            y = b.to_numpy(dtype="float64", na_value=np.nan)
            np.testing.assert_allclose(x, y, rtol=2e-6, atol=1e-6, equal_nan=True, err_msg=c)
        else:
            x = a.to_numpy(dtype="object")
            y = b.to_numpy(dtype="object")
            bad = [(i, u, v) for i, (u, v) in enumerate(zip(x, y)) if not (u == v or (pd.isna(u) and pd.isna(v)))]
            assert not bad, f"{c}: {len(bad)} mismatches, first {bad[:5]}"


def main() -> int:
    import cudf

    import tabprep as tp
    from tabprep import backend, ops
    from tabprep.hashing import murmur3_32

    print("cudf", cudf.__version__, "has_cudf", backend.has_cudf())

    @check("murmur3 int64 vs cuDF")
    def _():
        v = np.array([0, 1, -1, 2 ** 62, -2 ** 63, 12345678901, 7], dtype="int64")
        gpu = cudf.Series(v).hash_values(method="murmur3").to_numpy().astype("uint32")
        np.testing.assert_array_equal(murmur3_32(v), gpu)

    @check("murmur3 float64 vs cuDF")
    def _():
        v = np.array([0.0, -0.0, 1.5, np.inf, -np.inf, np.nan, 1e300], dtype="float64")
        s = cudf.Series(v, nan_as_null=False)
        gpu = s.hash_values(method="murmur3").to_numpy().astype("uint32")
        np.testing.assert_array_equal(murmur3_32(v), gpu)

    @check("murmur3 strings vs cuDF")
    def _():
        v = np.array(["", "a", "ab", "abc", "abcd", "abcde", "é", "日本語テキスト", "x" * 37], dtype=object)
        gpu = cudf.Series(v).hash_values(method="murmur3").to_numpy().astype("uint32")
        np.testing.assert_array_equal(murmur3_32(v), gpu)

    def both(build, df, npart=3):
        out = []
        for cpu in (True, False):
            wf = tp.Workflow(build())
            ds = tp.Dataset(df, cpu=cpu, npartitions=npart)
            wf.fit(ds)
            out.append((wf, wf.transform(ds).compute()))
        return out

    df = frame()

    @check("Categorify ints/strings/nulls parity")
    def _():
        (w1, a), (w2, b) = both(lambda: ["i64", "i32", "s"] >> ops.Categorify(freq_threshold=3), df)
        compare(a, b)
        assert w1.output_schema == w2.output_schema, (w1.output_schema, w2.output_schema)

    @check("Categorify num_oov_buckets=4 + max_size parity")
    def _():
        (w1, a), (w2, b) = both(lambda: ["i64", "s"] >> ops.Categorify(num_oov_buckets=4, max_size=9), df)
        compare(a, b)

    @check("HashBucket parity")
    def _():
        (_, a), (_, b) = both(lambda: ["i64", "i32", "s", "g"] >> ops.HashBucket(97), df)
        compare(a, b)

    @check("continuous chain parity")
    def _():
        (_, a), (_, b) = both(lambda: ["f", "g", "i64"] >> ops.FillMissing() >> ops.Clip(min_value=0)
                              >> ops.LogOp() >> ops.Normalize(), df)
        compare(a, b)

    @check("NormalizeMinMax / FillMedian parity")
    def _():
        (_, a), (_, b) = both(lambda: (["f"] >> ops.FillMedian(add_binary_cols=True)) + (["g"] >> ops.NormalizeMinMax()), df)
        compare(a, b)

    @check("Dataset parquet on GPU + save(GPU)/load(CPU)")
    def _():
        d = tempfile.mkdtemp()
        atexit.register(shutil.rmtree, d, True)   # (its own temporary folder: gone at exit)
        df.to_parquet(f"{d}/x.parquet", row_group_size=1000)
        wf = tp.Workflow((["i64", "s"] >> ops.Categorify()) + (["f"] >> ops.FillMissing() >> ops.Normalize()) + ["label"])
        wf.fit(tp.Dataset(f"{d}/x.parquet", cpu=False, part_size=20000))
        gpu = wf.transform(tp.Dataset(f"{d}/x.parquet", cpu=False)).compute()
        wf.save(f"{d}/wf")
        wf2 = tp.Workflow.load(f"{d}/wf")
        cpu = wf2.transform(tp.Dataset(f"{d}/x.parquet", cpu=True)).compute()
        compare(cpu, gpu)
        wf2.transform(tp.Dataset(f"{d}/x.parquet", cpu=False)).to_parquet(f"{d}/out")

    @check("list column Categorify parity")
    def _():
        rng = np.random.default_rng(1)
        n = 2000
        import pyarrow as pa

        vals = [None if rng.random() < 0.05 else list(rng.choice(["x", "y", "z", "w"], rng.integers(0, 4))) for _ in range(n)]
        ldf = pd.DataFrame({"genres": pd.Series(pd.arrays.ArrowExtensionArray(pa.array(vals, type=pa.list_(pa.string()))))})
        g = cudf.from_pandas(ldf)
        print("  [diag] cudf list dtype:", type(g["genres"].dtype), g["genres"].dtype)
        (_, a), (_, b) = both(lambda: ["genres"] >> ops.Categorify(), ldf, npart=2)
        compare(a, b)

    fails = 0
    for name, status, detail in RESULTS:
        print(f"{status:4} {name}")
        if status != "ok":
            fails += 1
            print("     " + detail.replace("\n", "\n     "))
    print(f"{len(RESULTS) - fails} passed, {fails} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
