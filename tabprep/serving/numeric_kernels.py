"""Serving kernels of the numeric ops: Clip, LogOp, Normalize, NormalizeMinMax, Bucketize, ReduceDtypeSize.

Registered with :func:`tabprep.serving.kernels.register_kernel` when :mod:`tabprep.serving.kernels`
is imported (it imports this module last). A batch runs each op once over the stacked rows of
all its same-dtype columns (:func:`_blocks`); one row runs plain Python on scalars (Python floats
are float64), rounded to float32 where the op outputs float32, exactly as numpy's ``astype`` does.
"""
from __future__ import annotations

import bisect
import math
import struct
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from ..ops import Bucketize, Clip, LogOp, Normalize, NormalizeMinMax, ReduceDtypeSize
from ..ops.log_op import int_log1p32, log_plus_one32
from ..backend.arrays import _TABLE_SIZE, _log1p_table
from ..ops.normalize_minmax import scale_int_values
from ..schema import Schema
from .columns import Col
from .kernels import Kernel, ServingBuildError, register_kernel


# -- continuous chain ---------------------------------------------------------------------------------------
def _blocks(cols: Dict[str, Col], names: List[str]) -> List[Any]:
    """``[(names, X)]``: the scalar columns of one dtype stacked as the rows of a 2-d ``X`` (one numpy
    call per op for all of them instead of one per column; element-wise, so the same values), a
    list column alone as a ``(1, m)`` view. ``X`` may be a view of the input: never write to it."""
    groups: Dict[Any, List[str]] = {}
    for c in names:
        col = cols[c]
        groups.setdefault(col.values.dtype if col.offsets is None else c, []).append(c)
    out = []
    for group in groups.values():
        vals = [cols[c].values for c in group]
        out.append((group, np.stack(vals) if len(vals) > 1 else vals[0][None, :]))
    return out


def _column(values: List[Any], dtype: Any) -> np.ndarray:
    """Per-row parameters as a ``(k, 1)`` array broadcast against a ``(k, n)`` block."""
    return np.array(values, dtype=dtype).reshape(-1, 1)


@register_kernel(Clip)
class _Clip(Kernel):
    def __init__(self, op: Clip, columns: List[str], in_schema: Schema, out_schema: Schema) -> None:
        super().__init__(op, columns, in_schema, out_schema)
        self.bounds = {}
        for c in columns:
            lo, hi = op.bounds()   # a NaN bound is no bound, as offline
            kind = self.kinds[c]
            if kind == "i":
                for b in (lo, hi):
                    if b is not None and not float(b).is_integer():
                        raise ServingBuildError(f"cannot serve Clip({lo}, {hi}) on int column {c!r}: a non-integral "
                                                f"bound changes the column's dtype offline")
                lo = None if lo is None else int(lo)
                hi = None if hi is None else int(hi)
            elif kind == "f":
                # numpy compares in the column's dtype (a float32 column against float32(bound))
                dt = np.dtype(in_schema[c].dtype).type
                lo = None if lo is None else float(dt(lo))
                hi = None if hi is None else float(dt(hi))
            else:
                raise ServingBuildError(f"cannot serve Clip on {in_schema[c].dtype} column {c!r}")
            self.bounds[c] = (lo, hi)

    def batch(self, cols: Dict[str, Col]) -> Dict[str, Col]:
        out = {}
        for names, x in _blocks(cols, self.columns):
            lo = [self.bounds[c][0] for c in names]
            hi = [self.bounds[c][1] for c in names]
            # as np.clip(x, lo, hi), which takes maximum / minimum when a bound is None (the
            # bounds are the op's: None for every column or for none; numpy's clip and maximum
            # differ on -0.0 against 0.0)
            if hi[0] is None:
                y = np.maximum(x, _column(lo, x.dtype))
            elif lo[0] is None:
                y = np.minimum(x, _column(hi, x.dtype))
            else:
                y = np.clip(x, _column(lo, x.dtype), _column(hi, x.dtype))
            for c, v in zip(names, y):
                out[c] = cols[c].with_values(v, cols[c].mask)
        return out

    def scalar_fn(self, c: str) -> Callable[[Any], Any]:
        lo, hi = self.bounds[c]
        if hi is None:
            return lambda x: x if x is None or not x < lo else lo
        if lo is None:
            return lambda x: x if x is None or not x > hi else hi

        def clip(x: Any) -> Any:
            if x is None:
                return None
            if x < lo:
                return lo
            if x > hi:
                return hi
            return x

        return clip


#: LogOp of the small ints counts mostly are (the offline CPU's table), one value at a time
_LOG1P_ITEM = _log1p_table().item


def _log1p_int(v: Any) -> Optional[float]:
    if v is None:
        return None
    if 0 <= v < _TABLE_SIZE:
        return _LOG1P_ITEM(v)
    return float(log_plus_one32(np.array([v], dtype=np.uint64 if v > 0 else np.int64))[0])


def _log1p_float(v: Any) -> Optional[float]:
    if v is None:
        return None
    return float(log_plus_one32(np.array([v], dtype=np.float64))[0])


@register_kernel(LogOp)
class _LogOp(Kernel):
    def batch(self, cols: Dict[str, Col]) -> Dict[str, Col]:
        out = {}
        for names, x in _blocks(cols, self.columns):
            y = int_log1p32(x.astype(np.int64, copy=False)) if self.kinds[names[0]] in "ib" else log_plus_one32(x)
            for c, v in zip(names, y):
                col = cols[c]
                if col.mask is not None:
                    v[col.mask] = np.nan
                out[c] = col.with_values(v)
        return out

    def scalar_fn(self, c: str) -> Callable[[Any], Any]:
        return _log1p_int if self.kinds[c] in "ib" else _log1p_float


def _as_float64(col: Col) -> np.ndarray:
    x = col.values.astype(np.float64)
    if col.mask is not None:
        x[col.mask] = np.nan
    return x


# struct's 'f' format rounds a double to the nearest float32 (IEEE round-half-even), like numpy's
# astype, ~5x cheaper than a numpy scalar; it refuses values beyond float32's range (numpy: +-inf)
_F32_PACK = struct.Struct("<f").pack
_F32_UNPACK = struct.Struct("<f").unpack


def _f32(x: float) -> float:
    """``x`` rounded to float32 (as numpy's astype), as a Python float."""
    try:
        return _F32_UNPACK(_F32_PACK(x))[0]
    except OverflowError:
        with np.errstate(over="ignore"):
            return float(np.float32(x))


@register_kernel(Normalize)
class _Normalize(Kernel):
    def __init__(self, op: Normalize, columns: List[str], in_schema: Schema, out_schema: Schema) -> None:
        super().__init__(op, columns, in_schema, out_schema)
        op._require_fitted()
        self.params = {}
        for c in columns:
            mean, std = op.stats_[c]["mean"], op.stats_[c]["std"]
            ok = bool(std) and math.isfinite(std)
            self.params[c] = (float(mean), float(std), ok)
        self.dtype = np.dtype(op.output_dtype)  # float64 (the default) or float32

    def batch(self, cols: Dict[str, Col]) -> Dict[str, Col]:
        out = {}
        for names, block in _blocks(cols, self.columns):
            x = block.astype(np.float64)  # a copy
            for c, v in zip(names, x):
                if cols[c].mask is not None:
                    v[cols[c].mask] = np.nan
            params = [self.params[c] for c in names]
            bad = [j for j, p in enumerate(params) if not p[2]]
            flat = [np.where(np.isnan(x[j]), np.nan, 0.0).astype(self.dtype) for j in bad]
            x -= _column([p[0] if p[2] else 0.0 for p in params], np.float64)
            x /= _column([p[1] if p[2] else 1.0 for p in params], np.float64)
            y = x.astype(self.dtype, copy=False)
            for j, v in zip(bad, flat):  # no spread (std 0, or not finite): 0.0, nulls stay NaN
                y[j] = v
            for c, v in zip(names, y):
                out[c] = cols[c].with_values(v)
        return out

    def scalar_fn(self, c: str) -> Callable[[Any], Any]:
        mean, std, ok = self.params[c]
        rnd = _f32 if self.dtype == np.float32 else float  # a Python float is float64

        def norm(x: Any) -> Any:
            if x is None or x != x:
                return math.nan
            if not ok:
                return 0.0
            return rnd((float(x) - mean) / std)

        return norm


@register_kernel(NormalizeMinMax)
class _NormalizeMinMax(Kernel):
    def __init__(self, op: NormalizeMinMax, columns: List[str], in_schema: Schema, out_schema: Schema) -> None:
        super().__init__(op, columns, in_schema, out_schema)
        op._require_fitted()
        self.params = {}
        for c in columns:
            lo, hi = op.stats_[c]["min"], op.stats_[c]["max"]
            ok = lo is not None and hi is not None and hi != lo
            self.params[c] = (lo, (hi - lo) if ok else None, ok)
        self.dtype = np.dtype(op.output_dtype)  # float64 (the default) or float32

    def batch(self, cols: Dict[str, Col]) -> Dict[str, Col]:
        out = {}
        for c in self.columns:
            lo, span, ok = self.params[c]
            col = cols[c]
            if ok and type(lo) is int and type(span) is int and col.values.dtype.kind in "iu":
                # int stats of an int column: the exact x - lo, rounded once, as the op's transform
                v = col.values
                y = scale_int_values(v if v.dtype in (np.int64, np.uint64) else v.astype(np.int64), col.mask, lo, span)
            else:
                x = _as_float64(col)
                y = ((x - lo) / span) if ok else np.where(np.isnan(x), np.nan, 0.0)
            out[c] = col.with_values(y.astype(self.dtype, copy=False))
        return out

    def scalar_fn(self, c: str) -> Callable[[Any], Any]:
        lo, span, ok = self.params[c]
        rnd = _f32 if self.dtype == np.float32 else float  # a Python float is float64
        exact = type(lo) is int and type(span) is int

        def scale(x: Any) -> Any:
            if x is None or x != x:
                return math.nan
            if not ok:
                return 0.0
            if exact and isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
                return rnd(float(int(x) - lo) / float(span))  # the exact difference, rounded once
            return rnd((float(x) - lo) / span)

        return scale


@register_kernel(Bucketize)
class _Bucketize(Kernel):
    def __init__(self, op: Bucketize, columns: List[str], in_schema: Schema, out_schema: Schema) -> None:
        super().__init__(op, columns, in_schema, out_schema)
        self.bounds = {c: op.boundaries_for(c) for c in columns}
        self.bound_lists = {c: b.tolist() for c, b in self.bounds.items()}
        # ints against a list of ints compare as ints (the offline op's rule, NVTabular's np.digitize)
        self.int_bounds = {c: (op.int_boundaries_for(c) if self.kinds[c] in "ib" else None) for c in columns}

    def batch(self, cols: Dict[str, Col]) -> Dict[str, Col]:
        out = {}
        for c in self.columns:
            col = cols[c]
            if self.int_bounds[c] is not None:
                ids = np.searchsorted(self.int_bounds[c], col.values.astype(np.int64, copy=False), side="right")
                out[c] = col.with_values(ids.astype(np.int64), col.mask)
                continue
            x = _as_float64(col)
            nan = np.isnan(x)
            ids = np.searchsorted(self.bounds[c], x, side="right").astype(np.int64)
            out[c] = col.with_values(ids, nan if nan.any() else None)
        return out

    def scalar_fn(self, c: str) -> Callable[[Any], Any]:
        if self.int_bounds[c] is not None:
            ib = self.int_bounds[c].tolist()
            return lambda x: None if x is None else bisect.bisect_right(ib, int(x))
        b = self.bound_lists[c]
        return lambda x: None if x is None or x != x else bisect.bisect_right(b, float(x))


@register_kernel(ReduceDtypeSize)
class _ReduceDtypeSize(Kernel):
    def __init__(self, op: ReduceDtypeSize, columns: List[str], in_schema: Schema, out_schema: Schema) -> None:
        super().__init__(op, columns, in_schema, out_schema)
        op._require_fitted()
        self.targets = {c: op.target_dtype(c) for c in columns}

    def _cast(self, col: Col, c: str) -> Col:
        dt = self.targets[c]
        if dt is None:
            return col
        if np.dtype(dt).kind in "iu" and col.values.dtype.kind in "iu":
            return col.with_values(col.values.astype(dt).astype(np.int64), col.mask)  # wraps like astype offline
        return col.with_values(col.values.astype(dt), col.mask)

    def batch(self, cols: Dict[str, Col]) -> Dict[str, Col]:
        return {c: self._cast(cols[c], c) for c in self.columns}

    def scalar_fn(self, c: str) -> Callable[[Any], Any]:
        dt = self.targets[c]
        if dt is None:
            return lambda x: x
        k = np.dtype(dt).kind

        def cast(x: Any) -> Any:
            if x is None or (type(x) is float and x != x):
                return x
            y = np.array([x]).astype(dt)[0]
            return int(y) if k in "iu" else float(y)

        return cast
