"""The core loader's arguments checked and converted: counts that are whole numbers, a buffer size
that is a fraction or a row count, a device that exists.

Why: ``int()`` of a wrong value made another loader, silently (``DataLoader(df, 2.5)`` made
batches of 2 rows; ``global_size=2.5`` gave each rank of a 2-rank job half the rows; ``device=0``
without cuDF failed with "No module named 'cudf'"). Part of :mod:`tabprep.loader.core`.
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Optional, Tuple

from .._util import is_number, whole


def whole_rows(batch_size: Any) -> int:
    """``batch_size``: a whole number of rows >= 1 (:func:`whole`)."""
    return whole("batch_size", batch_size, 1)


def buffer_fraction_or_rows(buffer_size: Any) -> float:
    """``buffer_size`` as a float: a fraction of memory in (0, 1) or a row count >= 1 (finite)."""
    if not is_number(buffer_size) or not math.isfinite(buffer_size) or buffer_size <= 0:
        raise ValueError(f"buffer_size must be a fraction in (0, 1) or a row count >= 1, got {buffer_size!r}")
    return float(buffer_size)


def device_choice(device: Any) -> Tuple[Optional[bool], int]:
    """``(cpu, GPU index)`` of the loader's ``device``: None (the GPU where cuDF and a GPU are
    there, else the CPU), ``"cpu"``, or a GPU index >= 0 (``cpu`` False: see :func:`require_gpu`)."""
    if device is None:
        return None, 0
    if isinstance(device, str) and device == "cpu":
        return True, 0
    if isinstance(device, bool) or not isinstance(device, numbers.Integral) or device < 0:
        raise ValueError(f"device must be None, 'cpu' or a GPU index >= 0, got {device!r}")
    return False, int(device)


def require_gpu(device: Any) -> None:
    """A ``RuntimeError`` naming what asked for a GPU (``device``, or NVTabular's
    ``reader_kwargs={"cpu": False}`` where ``device`` is None) where cuDF or a GPU is missing
    (checked once the loader knows it reads on a GPU)."""
    from .. import backend

    if not backend.has_cudf():
        asked = f"device={device!r}" if device is not None else "reader_kwargs={'cpu': False}"
        raise RuntimeError(f"{asked} asks for a GPU, but cuDF/dask-cuDF or a CUDA device is not available "
                           f"here; pass device='cpu', or install the 'gpu' extra (pip install tabprep[gpu]) on a "
                           f"machine with an NVIDIA GPU")


__all__ = ["buffer_fraction_or_rows", "device_choice", "require_gpu", "whole", "whole_rows"]
