"""CSV files of one dataset must agree, as parquet files must (:func:`tabprep.io.planning.check_file_schemas`):
dask's csv reader takes the first file's header and dtypes for every file, so a file missing a
column gave that column as NaN, a file with another column added a half-empty one, a file without
a header row made its first row the column names, and a column of numbers in one file and text in
another failed later with dask's "Mismatched dtypes" table naming no file.

:func:`csv_read_options` reads the head of every file (its header and first rows, with the
reader's own keywords), refuses files that disagree naming the file and the column, and returns
the reader keywords, with ``float64`` for columns that are ints in some files and floats (a null)
in others.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

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
    return out


def _kind_type(series: Any) -> pa.DataType:
    """The Arrow type of a head's column (null when the head holds only nulls: no kind to tell)."""
    if series.isna().all():
        return pa.null()
    try:
        return pa.Array.from_pandas(series).type
    except (pa.ArrowException, TypeError, ValueError, OverflowError):   # (an int beyond int64: an object column)
        return pa.string()
