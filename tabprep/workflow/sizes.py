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
task; ``import tabprep`` imports no dask). Each size is the sum of dask's own sizes of the
object's fields, so numpy, pandas, cupy and cuDF arrays and series are each sized by dask's
registrations (no backend test here).
"""
from __future__ import annotations

import dataclasses
import sys
from typing import Any

from dask.sizeof import sizeof

from ..stats.moments import MinMax, Moments, Sketch
from ..stats.profile import ColumnPartial
from ..stats.sketches import HLL, Frequent
from ..stats.vocab import Counts


def _fields_size(obj: Any, names: Any) -> int:
    """The object's own size plus dask's sizes of the fields ``names``."""
    return sys.getsizeof(obj) + sum(int(sizeof(getattr(obj, n, None))) for n in names)


@sizeof.register(Counts)
def _sizeof_counts(c: Counts) -> int:
    return _fields_size(c, Counts.__slots__)


def _sizeof_dataclass(obj: Any) -> int:
    return _fields_size(obj, [f.name for f in dataclasses.fields(obj)])


for _cls in (Moments, MinMax, Sketch, HLL, Frequent, ColumnPartial):
    sizeof.register(_cls)(_sizeof_dataclass)
