"""One conformance battery for every registered op (like scikit-learn's common estimator checks).

Each registered op name (``tabprep.ops.registered_ops()``) must have an entry in
:data:`CASES`: how to build it, which input columns of :func:`conftest.random_frame` to
give it, and a plain pandas/numpy reference of its output written here. An op missing from
the table makes every check of the battery FAIL for it, so new ops get covered.

Checks, each on random data with nulls, several partitions and empty partitions, over the
``cpu`` and ``gpu`` backends:

* output equals the in-test reference (values, null pattern, row order);
* output columns / order / dtypes equal ``wf.output_schema``, in every partition, empty ones too;
* nulls: heavily-null and entirely-null input columns (nullable Int8/UInt16 too);
* empty partitions do not change statistics or output; an empty frame transforms to the schema;
* save / load round trip transforms new data identically and keeps the schema;
* backend parity (GPU vs CPU: ids exact, floats to float32 rounding).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops
from tabprep.ops import registered_ops

from conftest import (BACKENDS, GPU_SKIP, assert_frames_close, assert_same_frame, assert_matches_schema,
                      assert_series_equal_ref, canonical_dtype, double, frame_on, list_series,
                      is_cpu, make_dataset, ref_murmur3, positive_f64, py_values, random_frame, ratio_to, to_pandas,
                      upper_name)


# ---------------------------------------------------------------------------
# plain references (pandas / numpy / mmh3 only)
# ---------------------------------------------------------------------------
def _nonnull_f64(s: pd.Series) -> np.ndarray:
    return np.array([float(v) for v in py_values(s) if v is not None], dtype="float64")


def _f64_with_nan(s: pd.Series) -> np.ndarray:
    return np.array([np.nan if v is None else float(v) for v in py_values(s)], dtype="float64")


def ref_categorify(train: pd.Series, data: pd.Series, num_oov_buckets: int = 1, freq_threshold: int = 0,
                   max_size: int = 0) -> List[int]:
    counts = Counter(v for v in py_values(train) if v is not None)
    items = [(v, c) for v, c in counts.items() if c >= freq_threshold]
    items.sort(key=lambda vc: (-vc[1], vc[0]))
    if max_size:  # NVTabular: max_size bounds the ids (padding, null and OOV ids included)
        items = items[:max_size - 2 - num_oov_buckets]
    vocab = {v: 2 + num_oov_buckets + i for i, (v, _) in enumerate(items)}
    out = []
    for v in py_values(data):
        if v is None:
            out.append(1)
        elif v in vocab:
            out.append(vocab[v])
        elif num_oov_buckets == 1:
            out.append(2)
        else:
            out.append(2 + ref_murmur3(v) % num_oov_buckets)
    return out


def ref_categorify_cardinality(train: pd.Series, num_oov_buckets: int = 1, freq_threshold: int = 0,
                               max_size: int = 0) -> int:
    counts = Counter(v for v in py_values(train) if v is not None)
    n = sum(1 for c in counts.values() if c >= freq_threshold)
    if max_size:
        n = min(n, max_size - 2 - num_oov_buckets)
    return 2 + num_oov_buckets + n


def ref_hash(data: pd.Series, num_buckets: int) -> List[int]:
    return [0 if v is None else ref_murmur3(v) % num_buckets for v in py_values(data)]


def ref_normalize(train: pd.Series, data: pd.Series, dtype: str = "float64") -> np.ndarray:
    x = _nonnull_f64(train)
    mean = x.mean() if x.size else 0.0
    std = x.std(ddof=1) if x.size > 1 else 0.0  # NVTabular: the sample std
    y = _f64_with_nan(data)
    if std == 0 or x.min() == x.max():  # constant column: std is 0 (numpy may say 1e-17)
        return np.where(np.isnan(y), np.nan, 0.0).astype(dtype)
    return ((y - mean) / std).astype(dtype)  # NVTabular: out_dtype or float64


def ref_minmax(train: pd.Series, data: pd.Series, dtype: str = "float64") -> np.ndarray:
    x = _nonnull_f64(train)
    y = _f64_with_nan(data)
    if x.size == 0 or x.max() == x.min():
        return np.where(np.isnan(y), np.nan, 0.0).astype(dtype)
    return ((y - x.min()) / (x.max() - x.min())).astype(dtype)


def _float_schema(dtype: str) -> Callable[[Any, pd.DataFrame], None]:
    """Every output column is ``dtype`` in the schema (the data is checked against the schema)."""
    def check(schema: Any, train: pd.DataFrame) -> None:
        assert {c.dtype for c in schema} == {dtype}, [(c.name, c.dtype) for c in schema]

    return check


def ref_log(data: pd.Series) -> np.ndarray:
    """NVTabular's log(float32(x) + 1): the float32 sum, its log in float64 rounded to float32."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        x32 = _f64_with_nan(data).astype("float32")
        return np.log((x32 + np.float32(1)).astype("float64")).astype("float32")


def ref_fill(data: pd.Series, value: Any) -> List[Any]:
    return [value if v is None else v for v in py_values(data)]


def ref_median(train: pd.Series, integer: bool) -> Any:
    x = _nonnull_f64(train)
    med = float(pd.Series(x).median()) if x.size else 0.0
    return int(np.round(med)) if integer else med


def ref_clip(data: pd.Series, lo: Any, hi: Any) -> List[Any]:
    return [None if v is None else min(max(v, lo), hi) for v in py_values(data)]


def _is_int_col(s: pd.Series) -> bool:
    return pd.api.types.is_integer_dtype(s.dtype)


def identity(cols):
    return lambda train, data: {c: (py_values(data[c]), "exact") for c in cols}


def ref_digitize(data: pd.Series, boundaries) -> List[Any]:
    y = _f64_with_nan(data)
    ids = np.digitize(np.nan_to_num(y), np.asarray(boundaries, dtype="float64"), right=False)
    return [None if np.isnan(v) else int(i) for v, i in zip(y, ids)]


def ref_difference_lag(data: pd.DataFrame, col: str, key: str, shift: int) -> List[Any]:
    x = py_values(data[col])
    k = py_values(data[key])
    out = []
    for i in range(len(x)):
        j = i - shift
        ok = 0 <= j < len(x) and k[i] is not None and k[j] is not None and k[i] == k[j]
        out.append(float(x[i]) - float(x[j]) if ok and x[i] is not None and x[j] is not None else None)
    return out


def ref_distinct(train: pd.Series) -> int:
    return len({v for v in py_values(train) if v is not None})


GOLDEN = 0x9E3779B9


def ref_hashed_cross(data: pd.DataFrame, cols: List[str], num_buckets: int) -> List[int]:
    columns = [py_values(data[c]) for c in cols]
    out = []
    for row in zip(*columns):
        h = 0
        for v in row:
            k = 0 if v is None else ref_murmur3(v)
            h = h ^ ((k + GOLDEN + ((h << 6) & 0xFFFFFFFF) + (h >> 2)) & 0xFFFFFFFF)
        out.append(h % num_buckets)
    return out


def ref_list_slice(data: pd.Series, start: int, end: Optional[int], pad: bool = False, pad_value: Any = 0):
    length = None
    if pad:
        length = (end - start) if end is not None else -start
    out = []
    for v in py_values(data):
        row = v if isinstance(v, list) else ([] if v is None else [v])
        if v is None and not pad and isinstance(data.dtype, pd.ArrowDtype):
            out.append(None)
            continue
        window = row[start:end]
        if pad:
            window = window + [pad_value] * (length - len(window))
        out.append(window)
    return out


def ref_reduced_dtype(train: pd.Series) -> str:
    dtype = train.dtype
    try:
        kind = np.dtype(getattr(dtype, "numpy_dtype", dtype)).kind
    except TypeError:  # strings, lists
        kind = "O"
    x = _nonnull_f64(train) if kind in "iuf" else np.array([])
    if kind == "f" and x.size == 0:
        return "float32"  # NVTabular 23.08 casts every float column to float_dtype, an all-null one too
    if kind not in "if" or x.size == 0:  # unsigned ints kept: NVTabular 23.08 narrows signed ints only
        return str(dtype)
    if kind in "iu":
        present = [int(v) for v in py_values(train) if v is not None]
        lo, hi = min(present), max(present)
        for d in ("int8", "int16", "int32", "int64"):
            if np.iinfo(d).min <= lo and hi <= np.iinfo(d).max:
                return d
        return "int64"
    finite = x[np.isfinite(x)]
    if finite.size == 0:
        return "float32"
    for d in ("float32", "float64"):
        if np.finfo(d).min <= finite.min() and finite.max() <= np.finfo(d).max:
            return d
    return "float64"


def ref_reduce(train: pd.Series, data: pd.Series) -> List[Any]:
    d = ref_reduced_dtype(train)
    vals = py_values(data)
    if d.startswith(("int", "float")):
        with np.errstate(over="ignore", invalid="ignore"):
            return [None if v is None else np.array([v]).astype(d)[0].item() for v in vals]
    return vals


def _check_tags_props(cols, tags=(), props=None):
    def check(schema, train):
        for c in cols:
            for t in tags:
                assert t in schema[c].tags, f"{c}: tag {t!r} missing from {schema[c].tags}"
            for k, v in (props or {}).items():
                assert schema[c].properties.get(k) == v, f"{c}: property {k!r} = {schema[c].properties.get(k)!r}"
    return check


def _check_value_count(schema, train):
    lengths = [len(v) for v in py_values(train["lst"]) if v is not None]
    col = schema["lst"]
    if lengths:
        assert col.value_count == {"min": min(lengths), "max": max(lengths)}, col.value_count
        assert col.is_ragged == (min(lengths) != max(lengths))
    else:
        assert col.value_count is None
    assert schema["i32"].value_count is None and not schema["i32"].is_list


def _check_reduced_dtypes(cols):
    def check(schema, train):
        for c in cols:
            assert schema[c].dtype == canonical_dtype(ref_reduced_dtype(train[c])), \
                f"{c}: {schema[c].dtype} != {ref_reduced_dtype(train[c])}"
    return check


def _check_bucket_cardinality(card):
    def check(schema, train):
        for c, k in card.items():
            assert schema[c].cardinality == k and "categorical" in schema[c].tags
            assert "continuous" not in schema[c].tags
    return check


# ---------------------------------------------------------------------------
# the table: op name -> variants
# ---------------------------------------------------------------------------
@dataclass
class Case:
    """How to test one op configuration.

    make: builds a fresh op; columns: its input columns; reference(train, data) -> dict
    output column -> (expected values, "exact" | "float"), in output order (a "__rows__"
    key, for Filter, is ignored); schema_check(schema, train) checks tags / properties / dtypes
    the op promises.
    """

    make: Callable[[], Any]
    columns: List[str]
    reference: Callable[[pd.DataFrame, pd.DataFrame], Dict[str, Any]]
    extra_columns: List[str] = field(default_factory=list)  # raw columns read besides `columns`
    #: optional check of the output schema: schema_check(schema, train)
    schema_check: Optional[Callable[[Any, pd.DataFrame], None]] = None


def _per_col(fn, kind):
    def ref(cols):
        return lambda train, data: {c: (fn(train[c], data[c]), kind) for c in cols}
    return ref


#: ColumnSimilarity's feature matrices: rows for the ids of i32 (0..29) and u16 (0..8), 6 features
SIM_LEFT = np.round(np.random.default_rng(5).random((30, 6)) * (np.random.default_rng(6).random((30, 6)) < 0.4), 2)
SIM_RIGHT = np.round(np.random.default_rng(7).random((9, 6)) * (np.random.default_rng(8).random((9, 6)) < 0.5), 2)


def ref_similarity(a: pd.Series, b: pd.Series) -> List[float]:
    """Cosine similarity of dense rows (0 where a row has no entries)."""
    def unit(m):
        n = np.sqrt((m ** 2).sum(axis=1, keepdims=True))
        return np.divide(m, n, out=np.zeros_like(m), where=n > 0)

    left, right = unit(SIM_LEFT), unit(SIM_RIGHT)
    return [float("nan") if pd.isna(i) or pd.isna(j) else 0.0 if int(i) >= len(left)
            else float(left[int(i)] @ right[int(j)]) for i, j in zip(a, b)]


def sim_left():
    """SIM_LEFT as a sparse matrix with empty rows up to id 12345 (an unseen i32 of _unseen)."""
    import scipy.sparse as sp

    return sp.vstack([sp.csr_matrix(SIM_LEFT), sp.csr_matrix((12346 - len(SIM_LEFT), SIM_LEFT.shape[1]))])


CAT_COLS = ["i8", "u16", "u32", "I64", "s", "b"]
HASH_COLS = ["i32", "u32", "I64", "s", "f32", "b"]
NUM_COLS = ["i8", "i32", "u32", "I64", "f32", "f64"]
FILL_COLS = ["i8", "u16", "I64", "f32", "f64"]

def _add_cases(new: Dict[str, List[Case]]) -> None:
    """Add ops to :data:`CASES`; an op already there is an error (a plain dict update silently
    replaced earlier variants, which then never ran). More variants of an op: :func:`_add_variants`."""
    dup = sorted(set(new) & set(CASES))
    if dup:
        raise ValueError(f"tests/test_conformance.py: ops added to CASES twice: {dup}; use _add_variants")
    CASES.update(new)


def _add_variants(new: Dict[str, List[Case]]) -> None:
    """More variants of ops already in :data:`CASES` (kept beside the earlier ones)."""
    missing = sorted(set(new) - set(CASES))
    if missing:
        raise ValueError(f"tests/test_conformance.py: _add_variants for ops not in CASES: {missing}")
    for name, cases in new.items():
        CASES[name] = CASES[name] + cases


CASES: Dict[str, List[Case]] = {
    "Categorify": [
        Case(lambda: ops.Categorify(), CAT_COLS,
             _per_col(lambda t, d: ref_categorify(t, d), "exact")(CAT_COLS)),
        Case(lambda: ops.Categorify(freq_threshold=3, num_oov_buckets=3, max_size=11), ["i32", "s"],
             _per_col(lambda t, d: ref_categorify(t, d, 3, 3, 11), "exact")(["i32", "s"])),
    ],
    "HashBucket": [
        Case(lambda: ops.HashBucket(num_buckets=17), HASH_COLS,
             _per_col(lambda t, d: ref_hash(d, 17), "exact")(HASH_COLS)),
        Case(lambda: ops.HashBucket(num_buckets={"s": 5, "I64": 1000}, dtype="int32"), ["s", "I64"],
             lambda t, d: {"s": (ref_hash(d["s"], 5), "exact"), "I64": (ref_hash(d["I64"], 1000), "exact")}),
    ],
    "Normalize": [
        Case(lambda: ops.Normalize(), NUM_COLS, _per_col(ref_normalize, "float")(NUM_COLS),
             schema_check=_float_schema("float64")),
        Case(lambda: ops.Normalize(out_dtype="float32"), NUM_COLS,
             _per_col(lambda t, d: ref_normalize(t, d, "float32"), "float")(NUM_COLS),
             schema_check=_float_schema("float32")),
    ],
    "NormalizeMinMax": [
        Case(lambda: ops.NormalizeMinMax(), NUM_COLS, _per_col(ref_minmax, "float")(NUM_COLS),
             schema_check=_float_schema("float64")),
        Case(lambda: ops.NormalizeMinMax(out_dtype=np.float32), NUM_COLS,
             _per_col(lambda t, d: ref_minmax(t, d, "float32"), "float")(NUM_COLS),
             schema_check=_float_schema("float32")),
    ],
    "LogOp": [
        Case(lambda: ops.LogOp(), ["u16", "I64", "f32", "f64", "i8"],
             _per_col(lambda t, d: ref_log(d), "float")(["u16", "I64", "f32", "f64", "i8"])),
    ],
    "FillMissing": [
        Case(lambda: ops.FillMissing(), FILL_COLS,
             _per_col(lambda t, d: ref_fill(d, 0), "exact")(FILL_COLS)),
        Case(lambda: ops.FillMissing(fill_val=7, add_binary_cols=True), ["I64", "f32"],
             lambda t, d: {"I64": (ref_fill(d["I64"], 7), "exact"), "f32": (ref_fill(d["f32"], 7.0), "exact"),
                           "I64_filled": (d["I64"].isna().tolist(), "exact"),
                           "f32_filled": (d["f32"].isna().tolist(), "exact")}),
    ],
    "FillMedian": [
        Case(lambda: ops.FillMedian(), FILL_COLS,
             _per_col(lambda t, d: ref_fill(d, ref_median(t, _is_int_col(d))), "float")(FILL_COLS)),
        Case(lambda: ops.FillMedian(add_binary_cols=True), ["f64"],
             lambda t, d: {"f64": (ref_fill(d["f64"], ref_median(t["f64"], False)), "float"),
                           "f64_filled": (d["f64"].isna().tolist(), "exact")}),
    ],
    "Clip": [
        Case(lambda: ops.Clip(min_value=0, max_value=5), FILL_COLS,
             _per_col(lambda t, d: ref_clip(d, 0, 5), "exact")(FILL_COLS)),
        Case(lambda: ops.Clip(max_value=3.5), ["f32", "f64"],
             _per_col(lambda t, d: ref_clip(d, -np.inf, 3.5), "exact")(["f32", "f64"])),
    ],
    "LambdaOp": [
        Case(lambda: ops.LambdaOp(double), ["i8", "I64", "f32"],
             _per_col(lambda t, d: py_values(d * 2), "exact")(["i8", "I64", "f32"])),
        Case(lambda: ops.LambdaOp(ratio_to, dependency="label", dtype="float32", tags=["continuous"]), ["f64", "I64"],
             lambda t, d: {c: ((_f64_with_nan(d[c]) / (1.0 + np.abs(d["label"].to_numpy("float64")))).astype("float32"),
                               "float") for c in ["f64", "I64"]},
             extra_columns=["label"]),
    ],
    "Rename": [
        Case(lambda: ops.Rename(postfix="_r"), ["i8", "I64", "s", "b"],
             lambda t, d: {f"{c}_r": (py_values(d[c]), "exact") for c in ["i8", "I64", "s", "b"]}),
        Case(lambda: ops.Rename(f=upper_name), ["f32", "s"],
             lambda t, d: {f"{c.upper()}_X": (py_values(d[c]), "exact") for c in ["f32", "s"]}),
        Case(lambda: ops.Rename(name="renamed"), ["u32"],
             lambda t, d: {"renamed": (py_values(d["u32"]), "exact")}),
    ],
    "Filter": [
        Case(lambda: ops.Filter(positive_f64), ["f64", "s", "I64", "idx"],
             lambda t, d: {"__rows__": np.nonzero((d["f64"] > 10).fillna(False).to_numpy(dtype=bool))[0],
                           **{c: (py_values(d[c][(d["f64"] > 10).fillna(False).to_numpy(dtype=bool)]), "exact")
                              for c in ["f64", "s", "I64", "idx"]}}),
    ],
}

def ref_join_groupby(train: pd.DataFrame, data: pd.DataFrame, cat: str, conts: List[str], stats: List[str]):
    keys = py_values(train[cat])
    groups: Dict[Any, Dict[str, List[float]]] = {}
    counts: Counter = Counter(keys)
    for c in conts:
        for k, v in zip(keys, py_values(train[c])):
            groups.setdefault(k, {}).setdefault(c, [])
            if v is not None:
                groups[k][c].append(float(v))
    out: Dict[str, Any] = {}
    data_keys = py_values(data[cat])
    if "count" in stats:
        out[f"{cat}_count"] = ([counts.get(k) for k in data_keys], "exact")  # unseen: null (the left merge's)
    for c in conts:
        for st in stats:
            if st == "count":
                continue
            col = []
            for k in data_keys:
                if k not in counts:
                    col.append(None)
                    continue
                x = np.array(groups.get(k, {}).get(c, []), dtype="float64")
                if st == "sum":
                    col.append(float(x.sum()))
                elif st in ("mean", "min", "max"):
                    col.append(None if x.size == 0 else float(getattr(x, st)()))
                else:  # std / var, ddof=1
                    col.append(None if x.size < 2 else float(getattr(x, st)(ddof=1)))
            out[f"{cat}_{c}_{st}"] = (np.array([np.nan if v is None else v for v in col]).astype("float32"), "float")
    return out


def ref_target_encoding(train: pd.DataFrame, data: pd.DataFrame, cols: List[str], target: str, p: float):
    def key(df):
        parts = [py_values(df[c]) for c in cols]
        # a combined key is null only when every part is (NVTabular groups with dropna=False)
        return [None if all(v is None for v in row) else tuple(row) for row in zip(*parts)]
    y = py_values(train[target])
    ys = [float(v) for v in y if v is not None]
    gm = float(np.mean(ys)) if ys else 0.0
    sums: Dict[Any, float] = {}
    ns: Counter = Counter()
    for k, v in zip(key(train), y):
        if k is not None and v is not None:
            sums[k] = sums.get(k, 0.0) + float(v)
            ns[k] += 1
    vals = [gm if (k is None or k not in ns) else (sums[k] + p * gm) / (ns[k] + p) for k in key(data)]
    return np.array(vals, dtype="float64").astype("float32")


SIDE = pd.DataFrame({"i32": np.arange(0, 20, dtype="int32"), "price": np.linspace(0.0, 1.9, 20),
                     "name": pd.Series([f"n{i}" for i in range(20)], dtype="str"), "qty": np.arange(20) * 3})
SIDE_S = pd.DataFrame({"s": pd.Series(["apple", "fig", "héllo", ""], dtype="str"), "w": [1.5, 2.5, 3.5, 4.5]})


def ref_join(data: pd.DataFrame, side: pd.DataFrame, on: str, cols: List[str], how: str = "left"):
    lookup = {k: i for i, k in enumerate(py_values(side[on]))}
    ext = [c for c in side.columns if c != on]
    rows = [lookup.get(k) if k is not None else None for k in py_values(data[on])]
    keep = [r is not None for r in rows] if how == "inner" else [True] * len(rows)
    out = {c: ([v for v, k in zip(py_values(data[c]), keep) if k], "exact") for c in cols}
    for c in ext:
        side_vals = py_values(side[c])
        out[c] = ([None if r is None else side_vals[r] for r, k in zip(rows, keep) if k], "exact")
    return out


def ref_groupby(data: pd.DataFrame, key: str, sort_col: str, aggs: Dict[str, List[str]]):
    keys = py_values(data[key])
    sort_vals = py_values(data[sort_col])
    order: Dict[Any, List[int]] = {}
    for i, k in enumerate(keys):
        order.setdefault(k, []).append(i)
    group_keys = sorted(order)  # the key column has no nulls here
    for k in group_keys:  # nulls last, then ascending, then input order
        order[k].sort(key=lambda i: (sort_vals[i] is None, sort_vals[i] if sort_vals[i] is not None else 0, i))
    out: Dict[str, Any] = {key: (group_keys, "exact")}
    for c, names in aggs.items():
        vals = py_values(data[c])
        is_int = pd.api.types.is_integer_dtype(data[c].dtype) or pd.api.types.is_bool_dtype(data[c].dtype)
        for a in names:
            col = []
            for k in group_keys:
                g = [vals[i] for i in order[k]]
                present = [v for v in g if v is not None]
                if a == "list":
                    col.append(g)
                elif a == "count":
                    col.append(len(present))
                elif a == "first":
                    col.append(g[0])
                elif a == "last":
                    col.append(g[-1])
                elif a == "sum":
                    col.append(int(sum(present)) if is_int else float(np.sum(present)) if present else 0.0)
                else:  # mean / min / max
                    col.append(None if not present else float(getattr(np, a)(np.array(present, dtype="float64"))))
            out[f"{c}_{a}"] = (col, "float" if a in ("sum", "mean", "min", "max") and not is_int else "exact")
    from refs_join_te import nvt_groupby_order
    return nvt_groupby_order(out, key, aggs)


GROUP_AGGS = {"f64": ["sum", "mean", "count", "min", "max"], "i32": ["first", "last", "list", "sum"],
              "s": ["count", "list", "first"]}
JG_STATS = ["count", "sum", "mean", "std", "var", "min", "max"]
BUCKET_COLS = ["i8", "u16", "I64", "f32", "f64"]
LAG_COLS = ["f64", "I64", "i8"]
RDS_COLS = ["i8", "i32", "u16", "u32", "I64", "f32", "f64", "s", "b"]

_add_cases({
    "AddMetadata": [
        Case(lambda: ops.AddMetadata(tags=["user", "id"], properties={"domain_name": "users"}), ["s", "I64", "lst"],
             identity(["s", "I64", "lst"]),
             schema_check=_check_tags_props(["s", "I64", "lst"], ("user", "id"), {"domain_name": "users"})),
    ],
    "AddTags": [
        Case(lambda: ops.AddTags(["target", "binary"]), ["label", "f32"], identity(["label", "f32"]),
             schema_check=_check_tags_props(["label", "f32"], ("target", "binary"))),
    ],
    "AddProperties": [
        Case(lambda: ops.AddProperties({"embedding_dim": 7}), ["i32", "s"], identity(["i32", "s"]),
             schema_check=_check_tags_props(["i32", "s"], (), {"embedding_dim": 7})),
    ],
    "TagAsUserID": [
        Case(lambda: ops.TagAsUserID(), ["i32"], identity(["i32"]), schema_check=_check_tags_props(["i32"], ("id", "user"))),
    ],
    "TagAsItemID": [
        Case(lambda: ops.TagAsItemID(), ["i32"], identity(["i32"]), schema_check=_check_tags_props(["i32"], ("id", "item"))),
    ],
    "TagAsUserFeatures": [
        Case(lambda: ops.TagAsUserFeatures(), ["s"], identity(["s"]), schema_check=_check_tags_props(["s"], ("user",))),
    ],
    "TagAsItemFeatures": [
        Case(lambda: ops.TagAsItemFeatures(), ["s"], identity(["s"]), schema_check=_check_tags_props(["s"], ("item",))),
    ],
    "Dropna": [
        Case(lambda: ops.Dropna(), ["f64", "s", "idx"],
             lambda t, d: {"__rows__": np.nonzero(d[["f64", "s"]].notna().all(axis=1).to_numpy())[0],
                           **{c: (py_values(d[c][d[["f64", "s"]].notna().all(axis=1).to_numpy()]), "exact")
                              for c in ["f64", "s", "idx"]}}),
    ],
    "DataStats": [   # statistics only (their values: tests/test_op_data_stats.py); the columns pass
        Case(lambda: ops.DataStats(), ["i8", "I64", "f64", "s", "b"], identity(["i8", "I64", "f64", "s", "b"])),
    ],
    "Bucketize": [
        Case(lambda: ops.Bucketize([0, 2.5, 10]), BUCKET_COLS,
             _per_col(lambda t, d: ref_digitize(d, [0, 2.5, 10]), "exact")(BUCKET_COLS),
             schema_check=_check_bucket_cardinality({c: 4 for c in BUCKET_COLS})),
        Case(lambda: ops.Bucketize({"f64": [5.0], "i32": [-1, 3, 3.5, 20]}), ["f64", "i32"],
             lambda t, d: {"f64": (ref_digitize(d["f64"], [5.0]), "exact"),
                           "i32": (ref_digitize(d["i32"], [-1, 3, 3.5, 20]), "exact")},
             schema_check=_check_bucket_cardinality({"f64": 2, "i32": 5})),
    ],
    "DifferenceLag": [
        Case(lambda: ops.DifferenceLag("grp", shift=[1, -2]), LAG_COLS,
             lambda t, d: {f"{c}_difference_lag_{k}": (ref_difference_lag(d, c, "grp", k), "float")
                           for c in LAG_COLS for k in (1, -2)},
             extra_columns=["grp"]),
    ],
    "DropLowCardinality": [
        Case(lambda: ops.DropLowCardinality(min_cardinality=3), ["s", "u16", "b", "I64", "idx"],
             lambda t, d: {c: (py_values(d[c]), "exact") for c in ["s", "u16", "b", "I64", "idx"]
                           if ref_distinct(t[c]) >= 3}),
    ],
    "ColumnSimilarity": [
        Case(lambda: ops.ColumnSimilarity(sim_left(), SIM_RIGHT, metric="cosine"), [["i32", "u16"]],
             lambda t, d: {"i32_u16_sim": (ref_similarity(d["i32"], d["u16"]), "float")},
             schema_check=_check_tags_props(["i32_u16_sim"], ("continuous",), {})),
    ],
    "HashedCross": [
        Case(lambda: ops.HashedCross(["s", "i32"], num_buckets=101), ["s", "i32"],
             lambda t, d: {"s_X_i32": (ref_hashed_cross(d, ["s", "i32"], 101), "exact")},
             schema_check=_check_tags_props(["s_X_i32"], ("categorical", "hashed"), {"cardinality": 101})),
        Case(lambda: ops.HashedCross([["I64", "f32"], ["b", "s", "u32"]], num_buckets={"I64_X_f32": 7, "b_X_s_X_u32": 1000}),
             ["I64", "f32", "b", "s", "u32"],
             lambda t, d: {"I64_X_f32": (ref_hashed_cross(d, ["I64", "f32"], 7), "exact"),
                           "b_X_s_X_u32": (ref_hashed_cross(d, ["b", "s", "u32"], 1000), "exact")}),
    ],
    "ListSlice": [
        Case(lambda: ops.ListSlice(-2), ["lst"], lambda t, d: {"lst": (ref_list_slice(d["lst"], -2, None), "exact")}),
        Case(lambda: ops.ListSlice(0, 3, pad=True, pad_value=0), ["lst", "i32"],
             lambda t, d: {"lst": (ref_list_slice(d["lst"], 0, 3, pad=True), "exact"),
                           "i32": (ref_list_slice(d["i32"], 0, 3, pad=True), "exact")},
             schema_check=lambda sch, t: [(sch[c].is_list, sch[c].is_ragged, sch[c].value_count) for c in ("lst", "i32")]
             == [(True, False, {"min": 3, "max": 3})] * 2 or pytest.fail(f"ListSlice pad schema: {sch}")),
    ],
    "ReduceDtypeSize": [
        Case(lambda: ops.ReduceDtypeSize(), RDS_COLS, _per_col(ref_reduce, "exact")(RDS_COLS),
             schema_check=_check_reduced_dtypes(RDS_COLS)),
    ],
    "JoinGroupby": [
        Case(lambda: ops.JoinGroupby(cont_cols=["f64", "f32"], stats=JG_STATS), ["s", "i32"],
             lambda t, d: {**ref_join_groupby(t, d, "s", ["f64", "f32"], JG_STATS),
                           **ref_join_groupby(t, d, "i32", ["f64", "f32"], JG_STATS)},
             extra_columns=["f64", "f32"]),
    ],
    "TargetEncoding": [
        Case(lambda: ops.TargetEncoding("label", kfold=3, p_smooth=10), ["s", "i32"],
             lambda t, d: {f"TE_{c}_label": (ref_target_encoding(t, d, [c], "label", 10), "float") for c in ["s", "i32"]},
             extra_columns=["label"]),
        Case(lambda: ops.TargetEncoding("label", kfold=1, p_smooth=0.5), [["s", "u16"]],
             lambda t, d: {"TE_s_u16_label": (ref_target_encoding(t, d, ["s", "u16"], "label", 0.5), "float")},
             extra_columns=["label"]),
    ],
    "JoinExternal": [
        Case(lambda: ops.JoinExternal(SIDE, on="i32"), ["i32", "f64"],
             lambda t, d: ref_join(d, SIDE, "i32", ["i32", "f64"])),
        Case(lambda: ops.JoinExternal(SIDE_S, on="s", how="inner"), ["s", "idx"],
             lambda t, d: ref_join(d, SIDE_S, "s", ["s", "idx"], how="inner")),
    ],
    "Groupby": [
        Case(lambda: ops.Groupby("blk", sort_cols="f32", aggs=GROUP_AGGS), ["blk", "f64", "i32", "s"],
             lambda t, d: ref_groupby(d, "blk", "f32", GROUP_AGGS), extra_columns=["f32"]),
    ],
    "ValueCount": [
        Case(lambda: ops.ValueCount(), ["lst", "i32"], identity(["lst", "i32"]), schema_check=_check_value_count),
    ],
})

# TargetEncoding, JoinGroupby, JoinExternal, Groupby (references in tests/refs_join_te.py)
from refs_join_te import (groupby_per_row, join_external, join_groupby, side_table_i8, side_table_s,  # noqa: E402
                          target_encoding)

_JG_STATS = ["count", "sum", "mean", "std", "min", "max"]
_GB_AGGS = {"i8": ["list", "count", "first", "last", "sum", "mean"], "f64": ["sum", "mean", "max"], "s": ["list"]}
_add_variants({
    "TargetEncoding": [
        Case(lambda: ops.TargetEncoding("label", p_smooth=5), ["i8", "s", "I64", "b"],
             target_encoding(["i8", "s", "I64", "b"], "label", 5), extra_columns=["label"]),
    ],
    "JoinGroupby": [
        Case(lambda: ops.JoinGroupby(["f64", "I64"], stats=_JG_STATS), ["i8", "s"],
             join_groupby(["i8", "s"], ["f64", "I64"], _JG_STATS), extra_columns=["f64", "I64"]),
    ],
    "JoinExternal": [
        Case(lambda: ops.JoinExternal(side_table_i8(), on="i8"), ["i8", "idx"],
             join_external(side_table_i8(), "i8", ["i8", "idx"], "left")),
        Case(lambda: ops.JoinExternal(side_table_s(), on="s", how="inner"), ["s", "idx"],
             join_external(side_table_s(), "s", ["s", "idx"], "inner")),
    ],
    "Groupby": [
        Case(lambda: ops.Groupby("idx", aggs=_GB_AGGS), ["idx", "i8", "f64", "s"], groupby_per_row(_GB_AGGS)),
    ],
})

OP_NAMES = sorted(registered_ops())


def cases_for(name: str) -> List[Case]:
    if name not in CASES:
        pytest.fail(f"registered op {name!r} has no entry in tests/test_conformance.py CASES: add its constructor "
                    f"args, input columns and a pandas reference so the conformance battery covers it")
    return CASES[name]


def build(case: Case) -> tp.Workflow:
    return tp.Workflow(case.columns >> case.make())


def check_reference(out: pd.DataFrame, case: Case, train: pd.DataFrame, data: pd.DataFrame, what: str,
                    schema: Any = None) -> None:
    if schema is not None and case.schema_check is not None:
        case.schema_check(schema, train)
    expected = case.reference(train, data)
    expected.pop("__rows__", None)
    assert list(out.columns) == list(expected), f"{what}: output columns {list(out.columns)} != {list(expected)}"
    for col, (values, kind) in expected.items():
        assert_series_equal_ref(out[col], values, kind=kind, rtol=2e-6, atol=2e-6, what=f"{what} column {col!r}")


def partitions(ds: tp.Dataset) -> List[pd.DataFrame]:
    return [to_pandas(p.compute()) for p in ds.to_ddf().to_delayed()]


def with_nullable_nulls(df: pd.DataFrame, frac: float, seed: int) -> pd.DataFrame:
    """Copy of ``df`` where the int columns become nullable (Int8, Int32, UInt16, UInt32, Int64)
    and a fraction ``frac`` of every column's values (first rows first) are null."""
    rng = np.random.default_rng(seed)
    out = df.copy()
    n = len(df)
    for c in ["i8", "i32", "u16", "u32", "I64", "f32", "f64", "s"]:
        if c in ("i8", "i32", "u16", "u32"):
            out[c] = out[c].astype(str(df[c].dtype).capitalize().replace("Uint", "UInt"))
        mask = np.zeros(n, dtype=bool)
        mask[: int(n * frac)] = True
        mask |= rng.random(n) < frac / 2
        out.loc[mask, c] = None if c == "s" else (np.nan if c.startswith("f") else pd.NA)
    if "lst" in out.columns:
        mask = np.zeros(n, dtype=bool)
        mask[: int(n * frac)] = True
        rows = py_values(out["lst"])
        out["lst"] = list_series([None if m else r for m, r in zip(mask, rows)])
    return out


# ---------------------------------------------------------------------------
# the battery
# ---------------------------------------------------------------------------
def test_every_registered_op_is_in_the_table():
    missing = sorted(set(registered_ops()) - set(CASES))
    assert not missing, f"registered ops without a conformance entry: {missing}"
    assert registered_ops(), "no op is registered"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", OP_NAMES)
def test_matches_reference(name, backend):
    train = random_frame(seed=11, n=240, lists=True)
    for i, case in enumerate(cases_for(name)):
        wf = build(case)
        ds = make_dataset(train, backend, nparts=4)
        wf.fit(ds)
        result = wf.transform(ds)
        out = to_pandas(result)
        check_reference(out, case, train, train, f"{name}[{i}] on {backend}", wf.output_schema)
        assert_matches_schema(out, wf.output_schema, f"{name}[{i}]")
        # the online path (a pandas / cuDF frame in, a frame out) agrees with the dataset path
        frame = frame_on(train, backend)
        online = to_pandas(wf.transform(frame))
        assert_same_frame(online, out, f"{name}[{i}] online vs dataset")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", OP_NAMES)
def test_output_schema_in_every_partition(name, backend):
    train = random_frame(seed=12, n=120, lists=True)
    for i, case in enumerate(cases_for(name)):
        wf = build(case)
        ds = make_dataset(train, backend, nparts=3)
        wf.fit(ds)
        schema = wf.output_schema
        assert [c.name for c in schema] == wf.output_columns
        result = wf.transform(ds)
        parts = partitions(result)
        assert len(parts) == ds.npartitions
        assert any(len(p) == 0 for p in parts), "the battery must exercise empty partitions"
        for j, p in enumerate(parts):
            assert_matches_schema(p, schema, f"{name}[{i}] partition {j} ({len(p)} rows)")
        # the dataset's schema is the workflow's output schema
        assert result.schema == schema
        # a zero-row frame transforms to zero rows with the schema's columns and dtypes
        empty_out = to_pandas(wf.transform(frame_on(train.iloc[:0], backend)))
        assert len(empty_out) == 0
        assert_matches_schema(empty_out, schema, f"{name}[{i}] empty frame")


@pytest.mark.parametrize("frac", [0.6, 1.0], ids=["mostly-null", "all-null"])
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", OP_NAMES)
def test_nulls(name, backend, frac):
    train = with_nullable_nulls(random_frame(seed=13, n=150, lists=True), frac, seed=3)
    for i, case in enumerate(cases_for(name)):
        wf = build(case)
        ds = make_dataset(train, backend, nparts=3)
        wf.fit(ds)
        out = to_pandas(wf.transform(ds))
        check_reference(out, case, train, train, f"{name}[{i}] {frac:.0%} nulls", wf.output_schema)
        assert_matches_schema(out, wf.output_schema, f"{name}[{i}] {frac:.0%} nulls")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", OP_NAMES)
def test_empty_partitions_change_nothing(name, backend):
    train = random_frame(seed=14, n=160, lists=True)
    data = random_frame(seed=15, n=90, lists=True)
    for i, case in enumerate(cases_for(name)):
        wf_empties = build(case)
        wf_empties.fit(make_dataset(train, backend, nparts=5, empties=True))
        wf_single = build(case)
        wf_single.fit(tp.Dataset(train, cpu=is_cpu(backend), npartitions=1))
        a = to_pandas(wf_empties.transform(make_dataset(data, backend, nparts=3, empties=True)))
        b = to_pandas(wf_single.transform(tp.Dataset(data, cpu=is_cpu(backend), npartitions=1)))
        assert_same_frame(a, b, f"{name}[{i}] with/without empty partitions")
        assert wf_empties.output_schema == wf_single.output_schema
        # a dataset whose partitions are all empty still transforms (to nothing)
        nothing = to_pandas(wf_single.transform(make_dataset(data.iloc[:0], backend, nparts=2)))
        assert len(nothing) == 0
        assert_matches_schema(nothing, wf_single.output_schema, f"{name}[{i}] all-empty dataset")


def _unseen(df: pd.DataFrame) -> pd.DataFrame:
    """New data with values never seen at fit (categories, out-of-range numbers)."""
    out = df.copy()
    out.loc[::4, "i8"] = 99
    out.loc[::5, "i32"] = 12345
    out.loc[::6, "I64"] = 777
    out.loc[::3, "s"] = "never-seen"
    out.loc[::7, "f64"] = 1e6
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", OP_NAMES)
def test_save_load_round_trip(name, backend, tmp_path):
    train = random_frame(seed=16, n=200, lists=True)
    data = _unseen(random_frame(seed=17, n=130, lists=True))
    for i, case in enumerate(cases_for(name)):
        wf = build(case)
        wf.fit(make_dataset(train, backend, nparts=3))
        before = to_pandas(wf.transform(make_dataset(data, backend, nparts=3)))
        check_reference(before, case, train, data, f"{name}[{i}] on new data", wf.output_schema)
        path = tmp_path / f"wf_{name}_{i}"
        wf.save(str(path))
        loaded = tp.Workflow.load(str(path))
        assert loaded.output_schema == wf.output_schema
        assert loaded.output_columns == wf.output_columns
        after = to_pandas(loaded.transform(make_dataset(data, backend, nparts=2)))
        assert_same_frame(after, before, f"{name}[{i}] after save/load")
        # the loaded workflow can be saved again and still agrees
        loaded.save(str(tmp_path / f"wf2_{name}_{i}"))
        again = to_pandas(tp.Workflow.load(str(tmp_path / f"wf2_{name}_{i}")).transform(
            make_dataset(data, backend, nparts=1, empties=False)))
        assert_same_frame(again, before, f"{name}[{i}] after a second save/load")


@pytest.mark.gpu
@GPU_SKIP
@pytest.mark.parametrize("name", OP_NAMES)
def test_backend_parity(name):
    train = random_frame(seed=18, n=300, lists=True)
    data = _unseen(random_frame(seed=19, n=150, lists=True))
    for i, case in enumerate(cases_for(name)):
        outs = {}
        for b in ("cpu", "gpu"):
            wf = build(case)
            wf.fit(make_dataset(train, b, nparts=4))
            outs[b] = to_pandas(wf.transform(make_dataset(data, b, nparts=3)))
            outs[b + "_schema"] = wf.output_schema
        assert outs["cpu_schema"] == outs["gpu_schema"]
        assert_frames_close(outs["gpu"], outs["cpu"], float_tol=1e-6, what=f"{name}[{i}] GPU vs CPU")


# ---------------------------------------------------------------------------
# tabprep.testing.check_op: the battery users run on their own ops passes every built-in op
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", OP_NAMES)
def test_check_op_passes(name):
    from tabprep.testing import check_op

    train = random_frame(seed=5, n=160, lists=True)
    for case in cases_for(name):
        check_op(case.make(), train, case.columns)
