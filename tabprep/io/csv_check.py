"""CSV files of one dataset must agree, as parquet files must (:func:`tabprep.io.planning.check_file_schemas`):
dask's csv reader takes the first file's header and dtypes for every file, so a file missing a
column gave that column as NaN, a file with another column added a half-empty one, a file without
a header row made its first row the column names, and a column of numbers in one file and text in
another failed later with dask's "Mismatched dtypes" table naming no file.

:func:`csv_read_options` reads the head of every file (its header and first rows, with the
reader's own keywords), refuses files that disagree naming the file and the column, and returns
the reader keywords, with ``float64`` for columns that are ints in some files and floats (a null)
in others.

On the CPU the heads also choose every column's type (:func:`sampled_dtypes`: int64, float64, bool,
str, as pandas reads the heads), declared to the reader: dask itself looks at a file's first 10
rows only, so an int column with an empty value or a decimal at row 100 failed with dask's
"Mismatched dtypes" table, naming no file. A value further down that does not fit its column's
type (text, a decimal or an empty value in an int column) fails in :class:`NamedReader`, which
names the file, the column, the value, its kind and the ``dtype=`` to declare, as pandas'
``read_csv`` would read the file with it; never a value read as another (2.5 as 2).
"""
from __future__ import annotations

import functools
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pyarrow as pa

from . import fs as fsmod
from .dataset_options import _DASK_CSV
from .paths import is_parquet_file
from .planning import check_file_schemas

#: rows of each file's head read to tell its column kinds
SAMPLE_ROWS = 2000

_HEADER_HINT = (" (A csv file without a header row reads its first row as the column names: give it the header, "
                "or pass names=[...] and header=None for every file.)")


def csv_read_options(files: Sequence[str], read_kwargs: Dict[str, Any],
                     storage_options: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """``read_kwargs`` for the csv reader, once the heads of ``files`` agree (``ValueError``
    naming the file and the column otherwise)."""
    import pandas as pd   # (pandas is imported with the reader; io imports no pandas at module level)

    kw = {k: v for k, v in read_kwargs.items() if k not in _DASK_CSV and k not in ("nrows", "skipfooter")}
    given = kw.get("dtype")
    schemas: List[pa.Schema] = []
    heads: List[Dict[Any, Optional[str]]] = []   # per file: column -> pandas dtype of its head (None: all null)
    for f in files:
        opts = {"storage_options": storage_options} if storage_options and fsmod.is_remote(f) else {}
        try:
            if is_parquet_file(f, storage_options):
                raise ValueError("it is a parquet file; read it with engine='parquet'")
            head = pd.read_csv(f, nrows=SAMPLE_ROWS, **kw, **opts)
        except (ValueError, OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"cannot read the csv file {f}: {exc}. Is it csv (engine='csv')? Fix the file, pass "
                             f"the reader's keywords (sep=, encoding=...), or leave it out of the data.") from exc
        schemas.append(pa.schema([(str(c), _kind_type(head[c])) for c in head.columns]))
        heads.append({c: None if head[c].isna().all() else str(head[c].dtype) for c in head.columns})
    check_file_schemas(list(files), schemas, what="csv file", numbers_agree=True, hint=_HEADER_HINT,
                       kind_fix="Pass dtype={column: type} (e.g. dtype={'x': str}) to read it as one type in "
                                "every file, or fix the file.")
    out = dict(read_kwargs)
    if given is None:
        floats = [c for c in schemas[0].names
                  if any(pa.types.is_floating(s.field(c).type) for s in schemas)
                  and any(pa.types.is_integer(s.field(c).type) for s in schemas)]
        if floats:
            out["dtype"] = {c: "float64" for c in floats}
    # the CPU's read (tabprep.backend.read_csv): the heads' types declared, errors naming the file
    out["cpu_read"] = functools.partial(read_csv_named, declared=sampled_dtypes(heads, read_kwargs))
    return out


def sampled_dtypes(heads: Sequence[Dict[Any, Optional[str]]], read_kwargs: Dict[str, Any]) -> Dict[Any, str]:
    """The type of each column of the files' heads (``heads``: per file, column -> the pandas dtype of
    its first :data:`SAMPLE_ROWS` rows, None when they are all empty), for the columns whose heads
    agree on one: ``int64`` (``float64`` where a file's head is all empty, or with
    ``assume_missing=True``), ``float64`` (ints in some files, floats in others), ``bool``, ``str``.
    Columns the caller typed (``dtype=``, ``converters=``, ``parse_dates=``), columns empty in every
    head and other types (dates, mixed) are left to the reader. Empty when ``dtype`` is one type for
    every column."""
    given = read_kwargs.get("dtype")
    if given is not None and not isinstance(given, dict):
        return {}
    dates = read_kwargs.get("parse_dates")
    skip = set(given or {}) | set(read_kwargs.get("converters") or {})
    if isinstance(dates, dict):
        skip |= set(dates) | {c for v in dates.values() for c in (v if isinstance(v, (list, tuple)) else [v])}
    elif isinstance(dates, (list, tuple)):
        skip |= {c for v in dates for c in (v if isinstance(v, (list, tuple)) else [v])}
    out: Dict[Any, str] = {}
    for c in (heads[0] if heads else {}):
        if c in skip:
            continue
        seen = [h.get(c) for h in heads]
        kinds = {t for t in seen if t is not None}
        empty = None in seen
        ints = all(_is_int(t) for t in kinds)
        if not kinds:
            continue
        if ints and (empty or read_kwargs.get("assume_missing")):
            out[c] = "float64"
        elif ints:
            if len(kinds) == 1:
                out[c] = kinds.pop()
        elif all(_is_int(t) or t.startswith("float") for t in kinds):
            out[c] = "float64"
        elif len(kinds) == 1 and not empty and kinds <= {"bool"}:
            out[c] = "bool"
        elif len(kinds) == 1 and kinds <= {"str", "string", "object"}:
            out[c] = kinds.pop()
    return out


def _is_int(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))


def read_csv_named(files: Sequence[str], blocksize: int, declared: Optional[Dict[Any, str]] = None,
                   **kwargs: Any) -> Any:
    """The dask DataFrame of csv ``files`` (``kwargs``: dask's ``read_csv`` keywords), read with the
    types ``declared`` (:func:`sampled_dtypes`; the caller's ``dtype=`` wins) by a
    :class:`NamedReader` of each file: each file is read by a dask csv reader of its own and the
    frames are concatenated in the order of ``files`` (the same partitions as one read of them all;
    each file's first bytes are read once more, for its reader's empty frame: many small files cost
    more, 200 files of 1,000 rows planned in 1.0 s against 0.3 s and read in 1.0 s against 0.55 s on
    the 2-core dev machine; a file of a block or more costs ~5 ms more in all). With
    ``include_path_column`` (a categorical column over all the files' paths): one read of them all,
    whose errors say "one of the files"."""
    import dask.dataframe as dd
    from dask.dataframe.io.csv import read_pandas   # dd.read_csv is this, with pandas.read_csv as the reader

    given = kwargs.get("dtype")
    given = given if isinstance(given, dict) else {}
    if declared:
        kwargs["dtype"] = {**declared, **given}
    ours = {c: t for c, t in (declared or {}).items() if c not in given}
    if kwargs.get("include_path_column") or len(files) == 1:
        where = files[0] if len(files) == 1 else f"one of the csv files {list(files)}"
        return read_pandas(NamedReader(where, ours), list(files), blocksize=blocksize, **kwargs)
    return dd.concat([read_pandas(NamedReader(f, ours), f, blocksize=blocksize, **kwargs) for f in files])


_INT = re.compile(r"\s*[+-]?\d+\s*")
_INT64 = (-(2**63), 2**63 - 1)


class NamedReader:
    """``pandas.read_csv`` for the byte blocks of one csv file (dask's csv reader calls it), the
    columns ``declared`` (column -> dtype, chosen from the first :data:`SAMPLE_ROWS` rows) among its
    ``dtype=``. A value further down that does not fit its column's type makes pandas fail; the
    block is then read again with those columns as text (only then) to find the first value that does
    not fit, and the error names the file, the column, the value, its kind and the ``dtype=`` that
    reads it. Picklable (it travels in the task graph)."""

    __name__ = "read_csv"   # (dask names the reader in its messages)

    def __init__(self, where: str, declared: Dict[Any, str]):
        self.where, self.declared = where, dict(declared)

    def __call__(self, buf: Any, **kwargs: Any) -> Any:
        import pandas as pd

        try:
            return pd.read_csv(buf, **kwargs)
        except (ValueError, TypeError, OverflowError) as exc:
            if not self.declared or not hasattr(buf, "seek"):
                raise
            buf.seek(0)
            problem = self._misfit(buf, kwargs)
            if problem is None:
                raise
            raise problem from exc

    def _misfit(self, buf: Any, kwargs: Dict[str, Any]) -> Optional[ValueError]:
        import pandas as pd

        kw = dict(kwargs)
        kw["dtype"] = {**(kw.get("dtype") or {}), **{c: "str" for c in self.declared}}
        try:
            block = pd.read_csv(buf, **kw)
        except (ValueError, TypeError, OverflowError):
            return None
        first: Optional[Tuple[int, Any, str, str, str]] = None
        for c, dtype in self.declared.items():
            if c in block.columns:
                found = _first_misfit(block[c], dtype)
                if found is not None and (first is None or found[0] < first[0]):
                    first = (found[0], c, *found[1:])
        if first is None:
            return None
        _, c, value, kind, fix = first
        dtype = self.declared[c]
        return ValueError(
            f"the csv file {self.where}: column {c!r} holds {value} ({kind}) further down than the first {SAMPLE_ROWS} "
            f"rows of each file, from which its type was chosen ({dtype}); it cannot be read as {dtype}. Declare "
            f"the column's type: pass dtype={{{c!r}: '{fix}'}} to tp.Dataset (pandas' read_csv keyword, passed "
            f"through), or fix the file.")


def _first_misfit(series: Any, dtype: str) -> Optional[Tuple[int, str, str, str]]:
    """(position, value as written, its kind, the dtype that reads it) of the first value of a column
    read as text that ``dtype`` cannot hold; None when every value fits. Vectorized: a block is
    ~64 MB of rows."""
    import numpy as np
    import pandas as pd

    null = series.isna().to_numpy()
    text = series.astype(object).where(~null, "").astype(str)
    if _is_int(dtype):
        ints = text.str.fullmatch(r"\s*[+-]?\d+\s*").to_numpy(dtype=bool)
        if dtype == "int64":   # (a long digit string only: the others fit)
            for i in np.flatnonzero(ints & (text.str.len().to_numpy() > 18)):
                if not _INT64[0] <= int(text.iloc[i]) <= _INT64[1]:
                    ints[i] = False
        bad = null | ~ints
    elif dtype.startswith("float"):
        bad = ~null & pd.to_numeric(text, errors="coerce").isna().to_numpy()
    elif dtype == "bool":
        bad = null | ~text.str.strip().str.lower().isin(["true", "false"]).to_numpy()
    else:
        return None
    where = np.flatnonzero(bad)
    if not len(where):
        return None
    i = int(where[0])
    if null[i]:
        return i, "an empty value", "null", "Int64" if _is_int(dtype) else "boolean"
    value = text.iloc[i]
    if _is_int(dtype) and _INT.fullmatch(value):
        return i, repr(value), "an int beyond int64", "str"
    if _is_int(dtype) and pd.to_numeric(pd.Series([value]), errors="coerce").notna().iloc[0]:
        return i, repr(value), "a decimal number", "float64"
    return i, repr(value), "text", "str"


def _kind_type(series: Any) -> pa.DataType:
    """The Arrow type of a head's column (null when the head holds only nulls: no kind to tell)."""
    if series.isna().all():
        return pa.null()
    try:
        return pa.Array.from_pandas(series).type
    except (pa.ArrowException, TypeError, ValueError, OverflowError):   # (an int beyond int64: an object column)
        return pa.string()
