"""Shared fixtures and helpers of the tabprep test-suite.

* ``backend`` fixture: ``"cpu"`` and ``"gpu"`` (the latter marked ``gpu`` and skipped when
  cuDF / a CUDA device is not usable, see :func:`tabprep.backend.has_cudf`).
* :func:`random_frame`: a pandas frame of odd dtypes (int8/int32/uint, nullable Int64,
  float32, strings, bool) with nulls.
* :func:`make_dataset`: a :class:`tabprep.Dataset` on a backend whose dask frame has
  several partitions, some of them empty.
* :func:`mmh3_u32` / :func:`ref_murmur3`: the reference MurmurHash3 (``mmh3`` package) of
  values laid out as tabprep documents it (int64 little-endian bytes, UTF-8 strings, float64),
  which is also cuDF's ``hash_values(method="murmur3")``.
* Importable user functions (``double``, ``ratio_to``, ``positive_f64`` ...) for LambdaOp /
  Filter / Rename so workflows using them can be saved by import path (``conftest:<name>``).
* ``s3`` fixture: a fresh bucket on a real local S3 server (``moto`` in server mode on
  127.0.0.1, started once per session and stopped at its end), with fake credentials and the
  endpoint in the environment (``AWS_*``, read by botocore itself, also in subprocesses).

Nothing here calls tabprep to compute an expected value.
"""
from __future__ import annotations

import contextlib
import logging
import struct
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep._frameworks import preload_triton
from tabprep.backend import has_cudf

# Tests import TensorFlow directly, and later ones train torch models in the same process: load
# PyPI torch's triton first, as tabprep's own loaders do, or the first torch optimizer after a
# TensorFlow test aborts the whole run (tabprep/_frameworks.py, tests/test_frameworks_together.py)
preload_triton()

# ---------------------------------------------------------------------------
# pytest-xdist (`-n 4 --dist loadfile`, the README's test command): each file runs whole on one
# worker (module and session fixtures set up once); the files that take longest are handed out
# first, so that no long file starts last and runs alone at the end (order measured on the shared
# 2-core dev machine, 2026-11-27; a file missing from the list only runs later, nothing breaks)
# ---------------------------------------------------------------------------
SLOW_FILES_FIRST = [  # by their time on 4 workers (pytest --durations, summed per file), longest first
    "test_docs_snippets.py", "test_conformance.py", "test_cli_subprocess.py", "test_cli_cluster.py",
    "test_loader_tf.py", "test_keras_backends.py", "test_commit.py", "test_s3.py", "test_serving_parity.py",
    "test_trust_io.py", "test_s3_cli.py", "test_examples.py", "test_serving_keras.py", "test_loader_jax.py",
    "test_tfrecord.py", "test_loader_torch.py", "test_frameworks_together.py", "test_s3_edges.py",
    "test_quality_drift.py", "test_s3_options.py", "test_ops_normalize.py", "test_trust_cli.py",
]


def pytest_configure(config):
    # xdist's loadfile scheduler otherwise reorders the files by their number of tests
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist only (the order a worker collects is the order files are handed out):
    the files of SLOW_FILES_FIRST first, in that order, the others after them as collected."""
    import os

    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    rank = {name: i for i, name in enumerate(SLOW_FILES_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: test order within a file kept


@pytest.fixture(autouse=True)
def _restore_tabprep_logger():
    """An in-process CLI run sets the ``tabprep`` logger's level (``--quiet``: ERROR) for its
    process; restored after each test, so a later test's ``caplog`` still sees the library's
    warnings whatever ran before it."""
    import logging

    logger = logging.getLogger("tabprep")
    level, handlers = logger.level, list(logger.handlers)
    yield
    logger.setLevel(level)
    logger.handlers[:] = handlers


# ---------------------------------------------------------------------------
# backends
# ---------------------------------------------------------------------------
GPU_SKIP = pytest.mark.skipif(not has_cudf(), reason="cuDF / dask-cuDF / a CUDA device is not available")
BACKENDS = ["cpu", pytest.param("gpu", marks=[pytest.mark.gpu, GPU_SKIP])]


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    """'cpu' or 'gpu' (gpu skipped without cuDF)."""
    return request.param


def is_cpu(backend_name: str) -> bool:
    return backend_name == "cpu"


# ---------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------
WORDS = np.array(["apple", "banana", "cherry", "date", "elder", "fig", "grape", "héllo", "", "zz"], dtype=object)


#: partitions made by the helpers below start at multiples of this many rows, and the ``grp``
#: key column of :func:`random_frame` is constant over such blocks, so a key's rows never
#: straddle two partitions (the precondition of DifferenceLag)
BLOCK = 4


def random_frame(seed: int = 0, n: int = 200, lists: bool = False) -> pd.DataFrame:
    """Random frame of odd dtypes with nulls (one column per dtype family).

    columns: i8 (int8, negatives), i32 (int32), u16 (uint16), u32 (uint32), I64 (nullable
    Int64 with nulls), f32 (float32 with NaN), f64 (float64 with NaN), s (str with nulls),
    b (bool), label (int64 0/1), idx (row number, to check row order), grp (nullable Int64
    key, constant over blocks of BLOCK rows, some nulls), blk (the block number, no nulls);
    with ``lists=True`` also lst
    (list<int64> with null rows, empty lists and null elements).
    """
    rng = np.random.default_rng(seed)
    i64 = pd.array(rng.integers(-3, 12, n), dtype="Int64")
    i64[rng.random(n) < 0.2] = pd.NA
    f32 = rng.normal(2.0, 3.0, n).astype("float32")
    f32[rng.random(n) < 0.15] = np.nan
    f64 = rng.gamma(2.0, 10.0, n)
    f64[rng.random(n) < 0.15] = np.nan
    s = rng.choice(WORDS, n).astype(object)
    s[rng.random(n) < 0.2] = None
    grp = pd.array(np.arange(n) // BLOCK, dtype="Int64")
    grp[rng.random(n) < 0.05] = pd.NA
    frame = pd.DataFrame({
        "i8": rng.integers(-20, 20, n).astype("int8"),
        "i32": rng.integers(0, 30, n).astype("int32"),
        "u16": rng.integers(0, 9, n).astype("uint16"),
        "u32": rng.integers(0, 4_000_000_000, n, dtype="uint64").astype("uint32"),
        "I64": i64,
        "f32": f32,
        "f64": f64,
        "s": pd.Series(s, dtype="str"),
        "b": rng.random(n) < 0.3,
        "label": rng.integers(0, 2, n).astype("int64"),
        "idx": np.arange(n, dtype="int64"),
        "grp": grp,
        "blk": np.arange(n, dtype="int64") // BLOCK,
    })
    if lists:
        rows = []
        for _ in range(n):
            r = rng.random()
            if r < 0.1:
                rows.append(None)
            elif r < 0.2:
                rows.append([])
            else:
                rows.append([None if rng.random() < 0.1 else int(v) for v in rng.integers(0, 9, rng.integers(1, 5))])
        frame["lst"] = list_series(rows, pa_type="int64")
    return frame


def list_series(rows: Sequence[Any], pa_type: str = "int64") -> pd.Series:
    """A pandas list column (ArrowDtype) from Python lists (None = null row)."""
    import pyarrow as pa

    arr = pa.array(list(rows), type=pa.list_(getattr(pa, pa_type)()))
    return pd.Series(pd.arrays.ArrowExtensionArray(arr))


def _cuts(n: int, nparts: int) -> np.ndarray:
    cuts = (np.linspace(0, n, nparts + 1) // BLOCK * BLOCK).astype(int)
    cuts[-1] = n
    return cuts


def split_with_empties(df: pd.DataFrame, nparts: int = 4, seed: int = 0) -> List[pd.DataFrame]:
    """Split ``df`` into ``nparts`` contiguous non-empty pieces, with empty pieces in between
    (first, middle and last position), keeping the row order."""
    n = len(df)
    nparts = max(1, min(nparts, max(n, 1)))
    cuts = _cuts(n, nparts)
    pieces = [df.iloc[cuts[i]:cuts[i + 1]] for i in range(nparts)]
    empty = df.iloc[:0]
    out = [empty]
    for i, p in enumerate(pieces):
        out.append(p)
        if i == len(pieces) // 2:
            out.append(empty)
    out.append(empty)
    return [p.reset_index(drop=True) for p in out]


def frame_on(df: pd.DataFrame, backend_name: str):
    """``df`` on the backend: itself, or a cuDF frame (NaN -> null, as cudf.from_pandas does)."""
    if is_cpu(backend_name):
        return df
    import cudf

    if len(df) == 0:
        # cudf.from_pandas cannot build an empty list column ("list_view type not supported")
        import pyarrow as pa

        return cudf.DataFrame.from_arrow(pa.Table.from_pandas(df, preserve_index=False))
    return cudf.from_pandas(df)


def make_ddf(df: pd.DataFrame, backend_name: str = "cpu", nparts: int = 4, empties: bool = True):
    """A dask (or dask-cuDF) frame of ``df`` with several partitions, empty ones included."""
    import dask.dataframe as dd

    if empties:
        parts = split_with_empties(df, nparts)
    else:
        cuts = _cuts(len(df), nparts)
        parts = [df.iloc[cuts[i]:cuts[i + 1]].reset_index(drop=True) for i in range(nparts)]
    frames = [frame_on(p, backend_name) for p in parts]
    meta = frame_on(df.iloc[:0], backend_name)
    ddf = dd.from_map(lambda f: f, frames, meta=meta, enforce_metadata=False)
    assert ddf.npartitions == len(parts)
    return ddf


def make_dataset(df: pd.DataFrame, backend_name: str = "cpu", nparts: int = 4, empties: bool = True) -> tp.Dataset:
    """Dataset on the requested backend; several partitions, some empty when ``empties``."""
    return tp.Dataset(make_ddf(df, backend_name, nparts, empties), cpu=is_cpu(backend_name))


def partition_lengths(ds: tp.Dataset) -> List[int]:
    return [int(x) for x in ds.to_ddf().map_partitions(len).compute()]


def to_pandas(obj: Any) -> pd.DataFrame:
    """pandas frame of a Dataset / dask frame / cuDF frame, index reset."""
    if isinstance(obj, tp.Dataset):
        # the partitions as tabprep computes them (Arrow list columns: _to_ddf, tabprep's internal
        # frame); Dataset.compute() and to_ddf() hand users numpy cells
        obj = obj._to_ddf().compute()
    elif hasattr(obj, "compute") and hasattr(obj, "npartitions"):
        obj = obj.compute()
    if hasattr(obj, "to_pandas") and not isinstance(obj, pd.DataFrame):
        # cuDF -> pandas: int / bool columns holding nulls become nullable pandas dtypes (Int64,
        # boolean), as tabprep's pandas backend makes them, not float64
        cols = {}
        for c in obj.columns:
            s = obj[c]
            kind = getattr(s.dtype, "kind", "O")
            cols[c] = s.to_pandas(nullable=True) if kind in "iub" and s.null_count else s.to_pandas()
        obj = pd.DataFrame(cols, columns=list(obj.columns))
    return obj.reset_index(drop=True)


def fit_transform(wf: tp.Workflow, ds: tp.Dataset) -> pd.DataFrame:
    wf.fit(ds)
    return to_pandas(wf.transform(ds))


def within(seconds: float, fn: Callable[[], Any]) -> Any:
    """``fn()``'s result (or its exception, raised here), run in a thread given ``seconds``: a
    fit or compute that hangs fails the test instead of hanging CI (the thread is left behind)."""
    import threading

    box: Dict[str, Any] = {}

    def run():
        try:
            box["result"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"did not end within {seconds} s"
    if "error" in box:
        raise box["error"]
    return box["result"]


def saved_workflow(folder: Any, graph: Any, df: pd.DataFrame) -> Tuple[tp.Workflow, Any]:
    """A workflow of ``graph`` fitted on ``df`` and saved to ``folder/wf``: (it, its workflow.json)."""
    wf = tp.Workflow(graph).fit(df)
    wf.save(str(folder / "wf"))
    return wf, folder / "wf" / "workflow.json"


def edit_op_state(spec: Any, fn: Callable[[Dict[str, Any]], None]) -> None:
    """Edit a saved workflow.json by hand, as a user could: ``fn`` changes the first op node's
    ``state`` in place (json writes NaN as NaN, which json.loads reads back)."""
    import json

    doc = json.loads(spec.read_text())
    fn(next(n for n in doc["nodes"] if n.get("kind") == "op")["state"])
    spec.write_text(json.dumps(doc))


# ---------------------------------------------------------------------------
# reference hashing (mmh3, not tabprep)
# ---------------------------------------------------------------------------
def value_bytes(v: Any) -> bytes:
    """Canonical bytes tabprep hashes: ints (and bools) as int64 LE, floats as float64 LE
    (-0.0 -> 0.0), strings as UTF-8."""
    if isinstance(v, (str,)):
        return v.encode("utf-8")
    if isinstance(v, (bool, np.bool_)):
        return struct.pack("<q", int(v))
    if isinstance(v, (int, np.integer)):
        return struct.pack("<q", int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if f == 0.0:
            f = 0.0
        return struct.pack("<d", f)
    raise TypeError(f"no reference byte layout for {type(v).__name__}")


def mmh3_u32(v: Any, seed: int = 0) -> int:
    """Plain MurmurHash3_x86_32 (the ``mmh3`` package) of the value's canonical bytes."""
    import mmh3

    return mmh3.hash(value_bytes(v), seed, signed=False)


def ref_murmur3(v: Any) -> int:
    """The hash of HashBucket / Categorify OOV buckets / HashedCross, per value: the plain
    MurmurHash3_x86_32 (seed 0) of the value's canonical bytes, which is also what cuDF's
    ``hash_values(method="murmur3")`` returns (seen on an H100 with cuDF 26.10: equal to mmh3,
    no hash_combine with the seed)."""
    return mmh3_u32(v)


def is_missing(v: Any) -> bool:
    if v is None or v is pd.NA:
        return True
    try:
        return bool(isinstance(v, float) and np.isnan(v)) or bool(isinstance(v, np.floating) and np.isnan(v))
    except TypeError:
        return False


def py_values(s: pd.Series) -> List[Any]:
    """Python scalars of a pandas series, None for nulls (ints stay ints, strings strings)."""
    if isinstance(s.dtype, pd.ArrowDtype):
        import pyarrow as pa

        return [_py(v) for v in pa.array(s.array).to_pylist()]
    return [_py(v) for v in s.astype(object).tolist()]


def _py(v: Any) -> Any:
    if isinstance(v, (list, tuple, np.ndarray)):  # a list cell: a Python list, None for nulls
        return [_py(x) for x in list(v)]
    if is_missing(v):
        return None
    return v.item() if isinstance(v, np.generic) else v


# ---------------------------------------------------------------------------
# comparison helpers
# ---------------------------------------------------------------------------
def canonical_dtype(dtype: Any) -> str:
    """Canonical name of a pandas / cuDF dtype, written independently of tabprep.schema."""
    name = str(dtype)
    low = name.lower()
    if low in ("object", "str", "string") or low.startswith("string"):
        return "str"
    if low == "boolean":
        return "bool"
    if low[:1] == "u" and low[:4] == "uint":
        return low.replace("[pyarrow]", "")
    if name[:1] in ("I", "U", "F") and low in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                               "uint64", "float32", "float64"):
        return low
    return low.replace("[pyarrow]", "")


def assert_matches_schema(df: pd.DataFrame, schema: Any, where: str = "") -> None:
    """Columns (names, order) and dtypes of ``df`` equal the workflow's output schema."""
    names = [c.name for c in schema]
    assert list(df.columns) == names, f"{where}: columns {list(df.columns)} != schema {names}"
    for c in schema:
        if c.is_list:
            continue
        got = canonical_dtype(df[c.name].dtype)
        assert got == c.dtype, f"{where}: column {c.name!r} has dtype {df[c.name].dtype} ({got}), schema says {c.dtype}"


def assert_series_equal_ref(got: pd.Series, expected: Sequence[Any], kind: str = "exact",
                            rtol: float = 2e-6, atol: float = 2e-6, what: str = "") -> None:
    """Compare a column with a reference list/array; ``None``/NaN in the reference = null.

    kind: "exact" (ids, ints, strings) or "float" (float32 tolerance).
    """
    got_vals = py_values(got)
    exp_vals = [None if is_missing(v) else (v.item() if isinstance(v, np.generic) else v) for v in list(expected)]
    assert len(got_vals) == len(exp_vals), f"{what}: {len(got_vals)} rows, expected {len(exp_vals)}"
    got_null = np.array([v is None for v in got_vals], dtype=bool)
    exp_null = np.array([v is None for v in exp_vals], dtype=bool)
    bad = np.nonzero(got_null != exp_null)[0]
    assert bad.size == 0, (f"{what}: null pattern differs at rows {bad[:10].tolist()}: "
                           f"got {[got_vals[i] for i in bad[:5]]}, expected {[exp_vals[i] for i in bad[:5]]}")
    keep = ~exp_null
    g = [v for v, k in zip(got_vals, keep) if k]
    e = [v for v, k in zip(exp_vals, keep) if k]
    if kind == "float":
        g_arr = np.asarray(g, dtype="float64")
        e_arr = np.asarray(e, dtype="float64")
        np.testing.assert_allclose(g_arr, e_arr, rtol=rtol, atol=atol, err_msg=what)
    else:
        diff = [i for i, (a, b) in enumerate(zip(g, e)) if a != b]
        assert not diff, f"{what}: {len(diff)} values differ, e.g. got {[g[i] for i in diff[:5]]}, " \
                         f"expected {[e[i] for i in diff[:5]]}"


def assert_frames_close(a: pd.DataFrame, b: pd.DataFrame, float_tol: float = 0.0, what: str = "") -> None:
    """Same columns and null patterns; ints/strings exact; floats within ``float_tol`` relative
    (0: exact). Used for CPU/GPU parity (ids exact, floats to float32 rounding)."""
    assert list(a.columns) == list(b.columns), f"{what}: {list(a.columns)} != {list(b.columns)}"
    assert len(a) == len(b), f"{what}: {len(a)} != {len(b)} rows"
    for c in a.columns:
        fa = canonical_dtype(a[c].dtype).startswith("float")
        kind = "float" if (fa and float_tol) else "exact"
        assert_series_equal_ref(a[c], py_values(b[c]), kind=kind, rtol=float_tol, atol=float_tol,
                                what=f"{what} column {c!r}")


# ---------------------------------------------------------------------------
# importable user functions (saved by import path 'conftest:<name>')
# ---------------------------------------------------------------------------
def double(col):
    """LambdaOp f(col): 2 * col."""
    return col * 2


def ratio_to(col, df):
    """LambdaOp f(col, df): col / (1 + |label|) -- uses a dependency column."""
    return col.astype("float64") / (1.0 + df["label"].astype("float64").abs())


def positive_f64(df):
    """Filter f(df): rows whose f64 is > 10 (null -> dropped)."""
    return df["f64"] > 10


def upper_name(name):
    """Rename f(name)."""
    return name.upper() + "_X"


# saved workflows name these functions; loading resolves only registered ones (issue #11)
for _f in (double, ratio_to, positive_f64, upper_name):
    tp.register_function(_f)


def norm_strings(df: pd.DataFrame) -> pd.DataFrame:
    """String columns as pandas' default ``str`` dtype (dask turns ``str`` into ``string[pyarrow]``;
    the two flavours hold the same values)."""
    out = df.copy()
    for c in out.columns:
        if canonical_dtype(out[c].dtype) == "str":
            out[c] = out[c].astype(object).where(out[c].notna(), None).astype("str")
    return out


def assert_same_frame(a: pd.DataFrame, b: pd.DataFrame, what: str = "DataFrame") -> None:
    """Exactly equal frames (values, dtypes, column order), up to the string dtype flavour."""
    pd.testing.assert_frame_equal(norm_strings(a), norm_strings(b), check_dtype=True, obj=what)


# ---------------------------------------------------------------------------
# a local S3 server (object storage tests)
# ---------------------------------------------------------------------------
class S3Bucket:
    """A bucket on the test S3 server: ``url(key)`` -> ``s3://bucket/key``; ``fs`` is the test's own
    s3fs client (explicit endpoint and credentials: it does not rely on what tabprep reads)."""

    def __init__(self, fs: Any, bucket: str, endpoint: str) -> None:
        self.fs, self.bucket, self.endpoint = fs, bucket, endpoint

    def url(self, key: str = "") -> str:
        return f"s3://{self.bucket}/{key}".rstrip("/")

    def keys(self, prefix: str) -> List[str]:
        """Every key under ``prefix`` (relative to it), sorted, read fresh from the server."""
        self.fs.invalidate_cache()
        base = f"{self.bucket}/{prefix.strip('/')}/"
        return sorted(p[len(base):] for p in self.fs.find(base))

    def put_frame(self, key: str, frame: pd.DataFrame) -> None:
        with self.fs.open(f"{self.bucket}/{key}", "wb") as fh:
            frame.to_parquet(fh, index=False)

    def read_frame(self, key: str) -> pd.DataFrame:
        self.fs.invalidate_cache()
        with self.fs.open(f"{self.bucket}/{key}", "rb") as fh:
            return pd.read_parquet(fh)


S3_ENV = {"AWS_ACCESS_KEY_ID": "tabprep-test-key", "AWS_SECRET_ACCESS_KEY": "tabprep-test-secret",
          "AWS_DEFAULT_REGION": "us-east-1"}


@pytest.fixture(scope="session")
def s3_endpoint():
    """``http://127.0.0.1:PORT`` of a moto S3 server running for the session (a free port)."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request in the test output
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def s3(s3_endpoint, monkeypatch, tmp_path) -> S3Bucket:
    """A new bucket; ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` (fake) and ``AWS_ENDPOINT_URL``
    point every S3 client of this process and its children at the test server, and no user
    configuration (profiles, ~/.aws) can redirect them."""
    import uuid

    import s3fs

    for k, v in S3_ENV.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    for k in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    s3fs.S3FileSystem.clear_instance_cache()  # clients made by earlier tests read another environment
    fs = s3fs.S3FileSystem(key=S3_ENV["AWS_ACCESS_KEY_ID"], secret=S3_ENV["AWS_SECRET_ACCESS_KEY"],
                           endpoint_url=s3_endpoint, skip_instance_cache=True)
    bucket = f"tabprep-{uuid.uuid4().hex[:12]}"
    fs.mkdir(bucket)
    return S3Bucket(fs, bucket, s3_endpoint)


def assert_same_tree(cmp: "filecmp.dircmp") -> None:
    """Two folders (``filecmp.dircmp(a, b)``) hold the same files with the same bytes, recursively."""
    import filecmp

    assert not cmp.left_only and not cmp.right_only, (cmp.left_only, cmp.right_only)
    _, mismatch, errors = filecmp.cmpfiles(cmp.left, cmp.right, cmp.common_files, shallow=False)
    assert not mismatch and not errors, (mismatch, errors)
    for sub in cmp.subdirs.values():
        assert_same_tree(sub)


@contextlib.contextmanager
def jax_compiles():
    """Counts XLA compilations inside the block: yields a list that gets one entry (the message)
    per ``Compiling ...`` line JAX logs with ``jax.log_compiles``."""
    import jax

    seen: List[str] = []

    class _Counter(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            msg = record.getMessage()
            if msg.startswith("Compiling "):
                seen.append(msg)

    handler, logger = _Counter(level=logging.WARNING), logging.getLogger("jax")
    logger.addHandler(handler)
    try:
        with jax.log_compiles(True):
            yield seen
    finally:
        logger.removeHandler(handler)
