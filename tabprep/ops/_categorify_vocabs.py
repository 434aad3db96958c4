"""Categorify's given vocabularies (NVTabular's ``vocabs=``: values, a DataFrame, or files), read when the op is built."""
from __future__ import annotations

import os
from typing import Any, Dict, Optional

import pyarrow.parquet as pq

from ..dtypes import uint64_and_signed

#: Categorify's id of a null (``tabprep.ops.categorify.NULL_ID``, imported there from here)
NULL_ID = 1


def _read_vocab_file(name: str, path: str) -> list:
    """The values of a vocabulary file (NVTabular's ``vocabs={col: path}``), in file order: its
    column ``name``, or its only column; parquet, or csv by the ``.csv`` suffix. Nulls are
    dropped (NVTabular's own unique-value files may hold a null row; nulls always get id 1)."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"Categorify vocabs[{name!r}]: no vocabulary file at {path!r}")
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".csv":
        from pyarrow import csv as pacsv

        table = pacsv.read_csv(path)
    elif suffix in (".parquet", ".parq", ".pq", "") or os.path.isdir(path):
        table = pq.read_table(path)
    else:
        raise ValueError(f"Categorify vocabs[{name!r}]: cannot read {path!r}: unknown format {suffix!r}; "
                         f"give a .parquet or .csv file, or the values (a list, array or Series)")
    names = [c for c in table.column_names if not c.startswith("__index_level_")]
    if name in names:
        column = table.column(name)
    elif len(names) == 1:
        column = table.column(names[0])
    else:
        raise ValueError(f"Categorify vocabs[{name!r}]: {path!r} has no column {name!r} and more than one column "
                         f"({names}); name the values column {name!r} or keep one column")
    return [v for v in column.to_pylist() if v is not None and not (isinstance(v, float) and v != v)]


def _given_vocabs(vocabs: Any) -> Optional[Dict[str, list]]:
    """``vocabs=`` as ``{name: [values]}`` (Python scalars, JSON-able); None when not given."""
    if vocabs is None:
        return None
    if type(vocabs).__name__ == "DataFrame":
        vocabs = {c: vocabs[c] for c in vocabs.columns}
    if not isinstance(vocabs, dict):
        raise TypeError(f"Categorify vocabs must be a dict {{column: values}} or a DataFrame, got "
                        f"{type(vocabs).__name__}")
    out: Dict[str, list] = {}
    for name, values in vocabs.items():
        if isinstance(values, (str, os.PathLike)):
            values = _read_vocab_file(str(name), str(values))
        vals = values.tolist() if hasattr(values, "tolist") else list(values)
        vals = [v.item() if hasattr(v, "item") else v for v in vals]
        if any(v is None or (isinstance(v, float) and v != v) for v in vals):
            raise ValueError(f"Categorify vocabs[{name!r}] holds a null; nulls always get id {NULL_ID}")
        if len(set(vals)) != len(vals):
            raise ValueError(f"Categorify vocabs[{name!r}] holds duplicate values; each value needs one id")
        given_values(str(name), vals, None)   # ints no 64-bit column holds together: refused when the op is built
        out[str(name)] = vals
    return out


def given_values(name: str, given: list, fitted: Any) -> Any:
    """A given vocabulary's values (:func:`_given_vocabs`) as an array: objects where a value is a
    string or the fitted values are objects; Python ints as int64, or as uint64 where they pass
    2**63 - 1 (numpy would make floats of such a mix, losing digits: 2**64 - 1 became
    1.8446744073709552e19); anything else as numpy reads it. ``ValueError`` for ints that no 64-bit
    integer column holds together (below 0 and from 2**63 on)."""
    import numpy as np

    if getattr(fitted, "dtype", None) is not None and fitted.dtype.kind == "O" or any(isinstance(v, str) for v in given):
        return np.asarray(given, dtype=object)
    if given and all(isinstance(v, int) and not isinstance(v, bool) for v in given):
        lo, hi = min(given), max(given)
        if -(2 ** 63) <= lo and hi < 2 ** 63:
            return np.asarray(given, dtype=np.int64)
        if 0 <= lo and hi < 2 ** 64:
            return np.asarray(given, dtype=np.uint64)
        raise ValueError(f"Categorify vocabs[{name!r}] holds integers from {lo} to {hi}, which no 64-bit integer column "
                         f"holds together; give the values of one int64 or uint64 column")
    return np.asarray(given)


def refuse_mixed_signedness(cols: list, dtypes: Dict[str, str]) -> None:
    """A joint vocabulary (one for several columns) over uint64 and signed int columns is refused:
    integer values are compared by their int64 bits, so 2**64 - 5 and -5 would be one category."""
    names, kinds = list(dtypes), list(dtypes.values())
    unsigned, signed = uint64_and_signed(kinds)
    if unsigned:
        raise TypeError(f"Categorify: the columns of the group {list(cols)} share one vocabulary, but "
                        f"{[names[k] for k in unsigned]} are uint64 and {[names[k] for k in signed]} signed "
                        f"({kinds[signed[0]]}): their values would be compared by their 64 bits (2**64 - 5 as -5); "
                        f"cast them to one integer type first")
