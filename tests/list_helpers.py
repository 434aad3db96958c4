"""Helpers for tests of list (multi-hot) columns: building them and reading them back as Python lists.

Nothing here calls tabprep to compute an expected value.
"""
from __future__ import annotations

from typing import Any, List, Optional

import numpy as np
import pandas as pd
import pyarrow as pa


def list_series(rows: List[Optional[List[Any]]], typ: pa.DataType, name: Optional[str] = None) -> pd.Series:
    """A pandas list column (``pd.ArrowDtype(list<typ>)``); ``None`` rows are null rows."""
    return pd.Series(pd.arrays.ArrowExtensionArray(pa.array(rows, type=pa.list_(typ))), name=name)


def _scalar(v: Any) -> Any:
    if v is None or v is pd.NA:
        return None
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and np.isnan(v):
        return None
    return v


def pylists(s: Any) -> List[Optional[List[Any]]]:
    """Rows of a pandas / cuDF list column as Python lists (None: null row or null element)."""
    if hasattr(s, "to_pandas") and not isinstance(s, pd.Series):
        s = s.to_pandas()
    if isinstance(s.dtype, pd.ArrowDtype):
        rows = pa.array(s.array).to_pylist() if not hasattr(s.array, "_pa_array") else s.array._pa_array.to_pylist()
    else:
        rows = s.tolist()
    out: List[Optional[List[Any]]] = []
    for r in rows:
        if r is None or r is pd.NA or (isinstance(r, float) and np.isnan(r)):
            out.append(None)
        else:
            out.append([_scalar(v) for v in list(r)])
    return out


def frame_to_backend(df: pd.DataFrame, backend_name: str) -> Any:
    if backend_name == "cpu":
        return df
    import cudf
    import pyarrow as pa

    # cudf.from_pandas cannot build an empty list column; Arrow can
    return cudf.DataFrame.from_arrow(pa.Table.from_pandas(df, preserve_index=False)) if len(df) == 0 \
        else cudf.from_pandas(df)
