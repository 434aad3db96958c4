"""dask's ``sizeof`` of the fit's mergeable statistics (issue #34).

dask sizes an object it does not know by ``sys.getsizeof``: 56 bytes for a :class:`Counts` of
any length (its arrays not counted), and a fit's partials and combined pieces are dicts of such
objects. dask.distributed reads these sizes where it matters for the statistics exchange:

* a worker serializes a message off its event loop only above ``distributed.comm.offload``
  (10 MiB): multi-MB pieces (the Criteo vocabularies' counts) were pickled on the event loop,
  one transfer after the other, the worker deaf to its other peers meanwhile;
* the scheduler's work stealing prices moving a task by the bytes of its inputs: a combine task
  of pieces "of a few hundred bytes" was free to move away from the worker holding them;
* workers batch the keys they fetch from one peer by bytes, and the memory manager (and
  dask-cuda's device spilling) counts held results by these sizes.

Registered here, in the module the fit's tasks import (a worker imports it with its first fit
task; ``import tabprep`` imports no dask). Each size is the sum of the sizes of the object's
fields: arrays and series by :func:`tabprep.backend.held_bytes` (dask's own sizes on the CPU, device
bytes for cupy and cuDF), anything else (nested statistics, numbers) by dask's ``sizeof``.
"""
from __future__ import annotations

import dataclasses
import sys
from typing import Any

from dask.sizeof import sizeof

from .. import backend
from ..stats.moments import MinMax, Moments, Sketch
from ..stats.profile import ColumnPartial
from ..stats.sketches import HLL, Frequent
from ..stats.vocab import Counts


def _fields_size(obj: Any, names: Any) -> int:
    """The object's own size plus the sizes of its fields ``names``."""
    return sys.getsizeof(obj) + sum(_size(getattr(obj, n, None)) for n in names)


def _size(value: Any) -> int:
    if hasattr(value, "dtype") or hasattr(value, "dtypes"):  # an array, series, index or frame of either backend
        return backend.held_bytes(value)
    return int(sizeof(value))


@sizeof.register(Counts)
def _sizeof_counts(c: Counts) -> int:
    return _fields_size(c, Counts.__slots__)


def _sizeof_dataclass(obj: Any) -> int:
    return _fields_size(obj, [f.name for f in dataclasses.fields(obj)])


for _cls in (Moments, MinMax, Sketch, HLL, Frequent, ColumnPartial):
    sizeof.register(_cls)(_sizeof_dataclass)


@sizeof.register_lazy("cudf")
def _register_cudf() -> None:
    """cuDF series, indexes and frames (TargetEncoding's and JoinGroupby's partials, Categorify's
    string counts on the GPU) by their device bytes. cuDF's own dask sizes come with dask_cudf,
    which a worker whose tasks read parquet with cuDF never imports; with it imported these
    agree with its sizes (device bytes)."""
    import cudf

    classes = [getattr(cudf, name) for name in ("Series", "DataFrame", "Index") if hasattr(cudf, name)]
    base = getattr(getattr(getattr(cudf, "core", None), "index", None), "BaseIndex", None)
    sizeof.register(tuple(classes + ([base] if base is not None else [])))(backend.held_bytes)
