"""Plain pandas references of TargetEncoding, JoinGroupby, JoinExternal and Groupby for the
conformance table (tests/test_conformance.py). Nothing here calls tabprep."""
from __future__ import annotations

from typing import Any, Dict, List

import numpy as np
import pandas as pd


def _py(v: Any) -> Any:
    if v is None or v is pd.NA or (isinstance(v, (float, np.floating)) and np.isnan(v)):
        return None
    return v.item() if isinstance(v, np.generic) else v


def te_values(train: pd.DataFrame, data: pd.DataFrame, col: str, target: str, p: float) -> np.ndarray:
    """(sum + p * global mean) / (count + p) of the target per category; null / unseen -> global mean."""
    y = train[target].astype("float64")
    ok = y.notna().to_numpy()
    gm = float(y[ok].mean())
    stats: Dict[Any, List[float]] = {}
    for k, v in zip(train[col].astype(object).tolist(), y.tolist()):
        k = _py(k)
        if k is None or np.isnan(v):
            continue
        acc = stats.setdefault(k, [0.0, 0])
        acc[0] += v
        acc[1] += 1
    out = []
    for k in data[col].astype(object).tolist():
        k = _py(k)
        if k is None or k not in stats:
            out.append(gm)
        else:
            s, n = stats[k]
            out.append((s + p * gm) / (n + p))
    return np.array(out, dtype="float64").astype("float32")


def target_encoding(cols: List[str], target: str, p: float):
    return lambda t, d: {f"TE_{c}_{target}": (te_values(t, d, c, target, p), "float") for c in cols}


def join_groupby(cols: List[str], conts: List[str], stats: List[str]):
    """pandas groupby(dropna=False) statistics left-merged onto the data rows."""
    def ref(train: pd.DataFrame, data: pd.DataFrame) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for c in cols:
            t = pd.DataFrame({"k": train[c].astype(object).map(_py)})
            for x in conts:
                t[x] = train[x].astype("float64").to_numpy()
            g = t.groupby("k", dropna=False)
            table = {"count": g.size()}
            for x in conts:
                for st in stats:
                    if st != "count":
                        table[f"{x}_{st}"] = g[x].agg(st)
            keys = data[c].astype(object).map(_py)
            if "count" in stats:
                cnt = table["count"]
                null_cnt = cnt[cnt.index.isna()]
                # a category not fitted (a null key where none was): null, the left merge's
                out[f"{c}_count"] = ([(int(cnt[k]) if k in cnt.index else None) if k is not None else
                                      (int(null_cnt.iloc[0]) if len(null_cnt) else None) for k in keys], "exact")
            for x in conts:
                for st in stats:
                    if st == "count":
                        continue
                    ser = table[f"{x}_{st}"]
                    null_val = ser[ser.index.isna()]
                    vals = []
                    for k in keys:
                        if k is None:
                            v = null_val.iloc[0] if len(null_val) else np.nan
                        else:
                            v = ser.get(k, np.nan)
                        vals.append(np.float32(v) if not pd.isna(v) else None)
                    out[f"{c}_{x}_{st}"] = (vals, "float")
        return out
    return ref


def side_table_i8() -> pd.DataFrame:
    keys = np.arange(-20, 20, 3)
    return pd.DataFrame({"i8": keys, "ext_f": keys * 0.5, "ext_i": keys * 7,
                         "ext_s": pd.Series([f"v{k}" for k in keys], dtype="str")})


def side_table_s() -> pd.DataFrame:
    return pd.DataFrame({"s": pd.Series(["apple", "fig", "", "zz", "nope"], dtype="str"), "w": [1.0, 2.0, 3.0, 4.0, 5.0]})


def join_external(side: pd.DataFrame, on: str, cols: List[str], how: str):
    ext = [c for c in side.columns if c != on]
    lookup = {_py(k): i for i, k in enumerate(side[on].astype(object).tolist())}

    def ref(train: pd.DataFrame, data: pd.DataFrame) -> Dict[str, Any]:
        pos = [lookup.get(_py(k)) if _py(k) is not None else None for k in data[on].astype(object).tolist()]
        rows = [i for i, p in enumerate(pos) if p is not None] if how == "inner" else list(range(len(data)))
        out: Dict[str, Any] = {"__rows__": np.array(rows, dtype="int64")}
        for c in cols:
            vals = data[c].astype(object).map(_py).tolist()
            out[c] = ([vals[i] for i in rows], "exact")
        for c in ext:
            col = side[c].astype(object).map(_py).tolist()
            out[c] = ([col[pos[i]] if pos[i] is not None else None for i in rows], "exact")
        return out
    return ref


def nvt_groupby_order(out: Dict[str, Any], key: str, aggs: Dict[str, List[str]]) -> Dict[str, Any]:
    """``out`` reordered as NVTabular 23.08's Groupby.column_mapping orders its outputs: the key,
    every column's list / first / last, then every column's other aggregations."""
    listy = [f"{c}_{a}" for c, names in aggs.items() for a in names if a in ("list", "first", "last")]
    rest = [f"{c}_{a}" for c, names in aggs.items() for a in names if a not in ("list", "first", "last")]
    return {name: out[name] for name in [key] + listy + rest}


def groupby_per_row(aggs: Dict[str, List[str]]):
    """Groupby on the unique row number ``idx``: one group per row, in ``idx`` order."""
    def ref(train: pd.DataFrame, data: pd.DataFrame) -> Dict[str, Any]:
        order = np.argsort(data["idx"].to_numpy(), kind="stable")
        out: Dict[str, Any] = {"idx": ([int(v) for v in data["idx"].to_numpy()[order]], "exact")}
        for c, names in aggs.items():
            vals = [_py(v) for v in data[c].astype(object).to_numpy()[order]]
            for a in names:
                if a == "list":
                    out[f"{c}_{a}"] = ([[v] for v in vals], "exact")
                elif a == "count":
                    out[f"{c}_{a}"] = ([0 if v is None else 1 for v in vals], "exact")
                elif a in ("first", "last"):
                    out[f"{c}_{a}"] = (vals, "exact")
                elif a == "sum":
                    out[f"{c}_{a}"] = ([0 if v is None else v for v in vals], "float")
                else:  # mean, min, max of one value
                    out[f"{c}_{a}"] = ([None if v is None else float(v) for v in vals], "float")
        return nvt_groupby_order(out, "idx", aggs)
    return ref
