"""Categorify's given vocabulary files (NVTabular's ``vocabs={column: path}``), read when the op is built."""
from __future__ import annotations

import os

import pyarrow.parquet as pq


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
