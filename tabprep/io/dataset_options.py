"""The keyword arguments of :class:`tabprep.Dataset` beyond its own: NVTabular's (merlin-core's
``merlin.io.Dataset``) and the csv reader's.

NVTabular passes unknown keywords on to its engine, where a parquet read ignores most of them;
a ported script that relies on one (``row_groups_per_part=1``) would then silently get other
partitions. tabprep honours the ones that change what is read and refuses the others by name,
before any file is read.
"""
from __future__ import annotations

import inspect
import logging
from typing import Any, Dict, Optional, Tuple

from .. import backend

log = logging.getLogger("tabprep.io")

#: dask.dataframe.read_csv's own keywords (the rest go to pandas.read_csv); ``blocksize`` is
#: tabprep's ``part_size``
_DASK_CSV = {"lineterminator", "compression", "sample", "sample_rows", "enforce", "assume_missing",
             "include_path_column"}


def _csv_keywords() -> set:
    import pandas as pd

    return set(inspect.signature(pd.read_csv).parameters) | _DASK_CSV


def part_size_of_fraction(fraction: Any, cpu: bool) -> int:
    """NVTabular's ``part_mem_fraction``: that fraction of the device's total memory (the GPU's,
    or the host's RAM on the CPU), in bytes."""
    frac = float(fraction)
    if not 0 < frac < 1:
        raise ValueError(f"part_mem_fraction must be a fraction in (0, 1), got {fraction!r}")
    return max(1, int(backend.compute_device(cpu).total_memory() * frac))


def split_read_kwargs(engine: str, kwargs: Dict[str, Any], source: str) -> Tuple[Optional[int], Dict[str, Any]]:
    """``(row_groups_per_part, csv reader keywords)`` of the keywords :class:`tabprep.Dataset`
    got beyond its own; raises ``TypeError`` naming a keyword it cannot honour (``source``: the
    data, named in the message).

    * ``row_groups_per_part`` (parquet, NVTabular's meaning): each partition is that many
      consecutive row groups of one file (the last of a file may have fewer);
    * ``client`` (deprecated in NVTabular, where it is ignored): accepted with a warning;
    * csv: the keywords of ``pandas.read_csv`` and ``dask.dataframe.read_csv``.
    """
    kwargs = dict(kwargs)
    if "client" in kwargs:
        kwargs.pop("client")
        log.warning("Dataset(client=...) is ignored (deprecated in NVTabular too): tabprep uses the current "
                    "dask.distributed client, if any")
    rgpp = kwargs.pop("row_groups_per_part", None)
    if rgpp is not None:
        if engine != "parquet":
            raise TypeError(f"row_groups_per_part= applies to parquet data only; {source} is read as {engine}")
        if isinstance(rgpp, bool) or int(rgpp) != rgpp or int(rgpp) < 1:
            raise ValueError(f"row_groups_per_part must be an int >= 1, got {rgpp!r}")
        rgpp = int(rgpp)
    if "dtypes" in kwargs:
        raise TypeError("Dataset(dtypes=...) is not taken: tabprep reads the types stored in the files (parquet) or "
                        "given to the csv reader; for csv pass dtype={column: type} (pandas' name), for parquet "
                        "cast in the workflow (ops.LambdaOp(f, dtype=...))")
    if "base_dataset" in kwargs:
        raise TypeError("Dataset(base_dataset=...) is not taken: pass the data itself (paths or a frame)")
    if engine == "csv":
        allowed = _csv_keywords()
        bad = sorted(k for k in kwargs if k not in allowed)
    elif engine == "parquet":
        bad = sorted(kwargs)
    else:  # in-memory and dask frames: nothing is read
        bad = sorted(kwargs)
    if bad:
        more = (" (a parquet read takes part_size=, row_groups_per_part=, part_mem_fraction=, storage_options=)"
                if engine == "parquet" else
                " (csv: the keywords of pandas.read_csv)" if engine == "csv" else
                " (in-memory data is not read: no reader keywords)")
        raise TypeError(f"tp.Dataset() got the keyword argument {bad[0]!r}, which it cannot honour for "
                        f"{source} ({engine}){more}; remove it"
                        + (f" (also {bad[1:]})" if len(bad) > 1 else ""))
    return rgpp, kwargs
