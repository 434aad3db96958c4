"""A fitted workflow touching every served op and dtype, and helpers to compare served outputs.

The reference of every serving test is the offline transform, ``wf.transform(frame)`` of a
pandas frame built here (plain pandas / pyarrow) in the fitted dtypes; nothing here calls
tabprep.serving.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional

import numpy as np
import pandas as pd
import pyarrow as pa

import tabprep as tp
from tabprep import ops

STRS = ["a", "b", "c", "dd", "héllo", ""]
TAGS = ["x", "y", "z", "w"]

#: fitted dtypes of the raw columns (pandas dtypes of the frames given to the offline transform)
DTYPES = {
    "cat_i": "Int64", "cat_s": "str", "u_a": "str", "u_b": "str", "hash_i": "int32", "hash_s": "str",
    "hash_f": "float64", "cont_i": "Int64", "cont_f": "float32", "bkt": "float64", "cross_a": "int64",
    "cross_b": "str", "label": "int64",
}
LIST_TYPES = {"tags": pa.string(), "tags_i": pa.int64()}


def train_frame(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)

    def nullify(values: List[Any], p: float) -> List[Any]:
        return [None if rng.random() < p else v for v in values]

    cols: Dict[str, Any] = {
        "cat_i": nullify(rng.integers(0, 40, n).tolist(), 0.05),
        "cat_s": nullify(rng.choice(STRS, n).tolist(), 0.05),
        "u_a": nullify(rng.choice(STRS[:4], n).tolist(), 0.02),
        "u_b": rng.choice(STRS[2:], n).tolist(),
        "hash_i": rng.integers(-1000, 1000, n).tolist(),
        "hash_s": rng.choice(STRS, n).tolist(),
        "hash_f": nullify(np.round(rng.normal(size=n), 2).tolist(), 0.05),
        "cont_i": nullify(rng.integers(-3, 5000, n).tolist(), 0.1),
        "cont_f": nullify((rng.normal(size=n) * 50).tolist(), 0.1),
        "bkt": nullify((rng.normal(size=n) * 10).tolist(), 0.05),
        "cross_a": rng.integers(0, 5, n).tolist(),
        "cross_b": rng.choice(STRS[:3], n).tolist(),
        "label": rng.integers(0, 2, n).tolist(),
        "tags": [None if rng.random() < 0.03 else
                 [None if rng.random() < 0.02 else str(t) for t in rng.choice(TAGS, rng.integers(0, 4))]
                 for _ in range(n)],
        "tags_i": [rng.integers(0, 30, rng.integers(0, 4)).tolist() for _ in range(n)],
    }
    return frame_of(cols)


def frame_of(cols: Dict[str, List[Any]]) -> pd.DataFrame:
    """A frame of Python values (None = null) in the fitted dtypes."""
    out = {}
    for c, vals in cols.items():
        if c in LIST_TYPES:
            out[c] = pd.Series(pd.arrays.ArrowExtensionArray(pa.array(vals, type=pa.list_(LIST_TYPES[c]))))
        elif DTYPES[c] == "str":
            out[c] = pd.Series(vals, dtype="str")
        elif DTYPES[c].startswith("float"):
            out[c] = pd.Series([np.nan if v is None else v for v in vals], dtype=DTYPES[c])
        else:
            out[c] = pd.Series(vals, dtype=DTYPES[c])
    return pd.DataFrame(out)


def make_workflow() -> tp.Workflow:
    cats = ["cat_i", "cat_s"] >> ops.Categorify(freq_threshold=5, num_oov_buckets=3)
    shared = [["u_a", "u_b"]] >> ops.Categorify()
    hashed = ["hash_i", "hash_s", "hash_f"] >> ops.HashBucket({"hash_i": 97, "hash_s": 50, "hash_f": 31})
    # float32 Normalize (the canonical job's) and float64 NormalizeMinMax (the default): both output dtypes served
    cont_i = ["cont_i"] >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize(out_dtype="float32")
    flags = ["cont_i"] >> ops.FillMissing(fill_val=7, add_binary_cols=True) >> ops.Rename(postfix="_fm")
    cont_f = (["cont_f"] >> ops.FillMissing(fill_val=-1.5) >> ops.Clip(min_value=-1, max_value=100) >> ops.LogOp()
              >> ops.NormalizeMinMax())
    bkt = ["bkt"] >> ops.Bucketize([-5.0, 0.0, 5.0]) >> ops.Rename(postfix="_b")
    cross = ["cross_a", "cross_b"] >> ops.HashedCross(["cross_a", "cross_b"], num_buckets=101)
    tags = ["tags"] >> ops.Categorify()
    tags_i = ["tags_i"] >> ops.HashBucket(64)
    return tp.Workflow(cats + shared + hashed + cont_i + flags + cont_f + bkt + cross + tags + tags_i + ["label"])


def fitted_workflow(n: int = 3000) -> tp.Workflow:
    return make_workflow().fit(train_frame(n))


def offline_columns(wf: tp.Workflow, frame: pd.DataFrame) -> Dict[str, Any]:
    """``wf.transform(frame)`` as ``{output: numpy array}``, list columns as ``x__values`` / ``x__nnzs``."""
    out = wf.transform(frame)
    res: Dict[str, Any] = {}
    for c in out.columns:
        s = out[c]
        if isinstance(s.dtype, pd.ArrowDtype) and pa.types.is_list(s.dtype.pyarrow_dtype):
            rows = [r if r is not None else [] for r in s.array._pa_array.to_pylist()]
            vals = [v for r in rows for v in r]
            res[f"{c}__values"] = np.array(vals, dtype=s.dtype.pyarrow_dtype.value_type.to_pandas_dtype())
            res[f"{c}__nnzs"] = np.array([len(r) for r in rows], dtype=np.int64)
        elif isinstance(s.dtype, np.dtype):
            res[c] = s.to_numpy()
        else:  # nullable: a masked array like the served one
            mask = s.isna().to_numpy()
            data = s.to_numpy(dtype=s.dtype.numpy_dtype, na_value=0)
            res[c] = np.ma.MaskedArray(data, mask=mask) if mask.any() else data
    return res


def assert_same(got: Dict[str, Any], want: Dict[str, Any], where: str = "", rows: Optional[slice] = None) -> None:
    """Same keys, dtypes and values (floats compared exactly, NaN == NaN, as float32 values)."""
    assert list(got) == list(want), f"{where}: keys {list(got)} != {list(want)}"
    for k, w in want.items():
        g = got[k]
        w = w[rows] if rows is not None and not k.endswith(("__values", "__nnzs")) else w
        assert g.dtype == w.dtype, f"{where}: {k} dtype {g.dtype} != {w.dtype}"
        gm = np.ma.getmaskarray(g)
        wm = np.ma.getmaskarray(w)
        assert np.array_equal(gm, wm), f"{where}: {k} null mask {gm} != {wm}"
        gd, wd = np.ma.getdata(g)[~gm], np.ma.getdata(w)[~wm]
        assert np.array_equal(gd, wd, equal_nan=gd.dtype.kind == "f"), f"{where}: {k} {gd[:10]} != {wd[:10]}"


def json_value(v: Any) -> Any:
    """What a JSON client sends for a value (NaN / inf as Python's JSON tokens)."""
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def keras_inputs(st: Any, frame: pd.DataFrame) -> Dict[str, np.ndarray]:
    """The exported model's inputs for ``frame`` (its documented layout: values + ``__null`` masks)."""
    b: Dict[str, np.ndarray] = {}
    for c, s, k in st._in_cols:
        col = frame[c]
        if s.is_list:
            rows = [r if r is not None else [] for r in col.array._pa_array.to_pylist()]
            vals = [v for r in rows for v in r]
            null = np.array([v is None for v in vals], dtype=bool)
            fill = {"s": "", "i": 0, "b": False, "f": np.nan}[k]
            dt = object if k == "s" else (np.int64 if k == "i" else s.dtype)
            b[c + "__values"] = np.array([fill if v is None else v for v in vals], dtype=dt)
            b[c + "__nnzs"] = np.array([len(r) for r in rows], dtype=np.int64)
        else:
            null = col.isna().to_numpy()
            if k == "s":
                b[c] = np.array(["" if m else v for v, m in zip(col.tolist(), null)], dtype=object)
            elif k == "i":
                b[c] = col.to_numpy(dtype="int64", na_value=0)
            else:
                b[c] = col.to_numpy(dtype=s.dtype, na_value=np.nan)
        if k != "f":
            b[c + "__null"] = null
    return b


def keras_outputs(out: Dict[str, Any], names: List[str]) -> Dict[str, np.ndarray]:
    """The exported model's outputs as served arrays (``__null`` outputs folded into masks)."""
    res = {}
    for k in names:
        g = np.asarray(out[k])
        if g.dtype == object:
            g = np.array([x.decode() for x in g], dtype=object)
        if k + "__null" in out:
            m = np.asarray(out[k + "__null"])
            if m.any():
                g = np.ma.MaskedArray(g, mask=m)
        res[k] = g
    return res
