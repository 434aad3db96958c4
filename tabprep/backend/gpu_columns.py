"""The cuDF implementations of the column-level kernels of the online transform: HashBucket's ids
and the fused element-wise chains' device columns (:class:`~tabprep.backend.columns.DeviceColumn`),
built on libcudf columns without cuDF's Series layer where that costs (``TABPREP_GPU_FAST_COLUMNS``).

Part of :mod:`tabprep.backend.gpu`, which imports it (importing registers these implementations),
so it is loaded lazily too, never by ``import tabprep``.
"""
from __future__ import annotations

import os
from typing import Any, Optional

import cudf
import cupy
import numpy as np
import pylibcudf as plc

from . import arrays as A
from . import columns as C
from . import frames as F
from . import gpu_hash, gpu_warmup
from .dispatch import register_gpu as _register
from .gpu_reductions import _BOOL8, _murmur_mod, _plc_column, _scalar

#: columns passed between cuDF and tabprep's kernels as columns (HashBucket's ids, the fused chains'
#: device columns, frames concatenated from their columns), without cuDF's Series layer per column:
#: the online Criteo transform spent ~0.36 s of 0.75 s (cProfile, 20M rows on an H200) in Series
#: built and taken apart (benchmarks/loader_anatomy.py --workflow --profile).
#: ``TABPREP_GPU_FAST_COLUMNS=0`` (read when the GPU backend is first loaded) goes through the Series API
_FAST_COLUMNS = os.environ.get("TABPREP_GPU_FAST_COLUMNS", "1") != "0"


def _series_of(col: Any, name: Any, like: Any) -> Any:
    """A cuDF series of ``col`` (a pylibcudf column or a cuDF column) named ``name``, with the index
    of ``like`` (a series or frame of the same length)."""
    if isinstance(col, plc.Column):
        col = cudf.core.column.ColumnBase.from_pylibcudf(col)
    out = cudf.Series._from_column(col, name=name)
    if not F._is_default_index(like.index, len(like)):
        out.index = like.index
    return out


def _cupy_of(col: Any) -> Any:
    """The cupy array of a pylibcudf column without nulls (its buffer, no copy)."""
    return cudf.core.column.ColumnBase.from_pylibcudf(col).values


_HASH_AS = {"i": plc.TypeId.INT64, "u": plc.TypeId.INT64, "b": plc.TypeId.INT64, "f": plc.TypeId.FLOAT64}


@_register(A.bucket_ids)
def _bucket_ids(series: Any, nb: int, dtype: str) -> Any:
    # libcudf straight on the column: hash, modulo, cast, zero the missing rows: 4-6 calls, where
    # the Series path (astype, hash_values, CuPy astype / copyto / modulo, a new Series) took about
    # 2.7 ms per column of a 65k-row chunk, most of the Criteo workflow's online transform on an
    # H200 (26 HashBucket columns: ~70 ms of a 111 ms chunk, benchmarks/device_fusion.py). Same
    # hash (cuDF's hash_values is this libcudf call) and the same bytes: ints/bools as int64,
    # floats as float64; categoricals and datetimes keep the generic path.
    kind = A._numpy_kind_dtype(series.dtype).kind   # (pandas nullable dtypes by their numpy one; "O" otherwise)
    if not (kind in _HASH_AS or (kind == "O" and A.is_string_series(series))) or not len(series):
        return A._bucket_ids(series, nb, dtype)
    col = _plc_column(series)
    if kind in "iub":  # one kernel, where it is built (gpu_hash: the same ids)
        fast = gpu_hash.bucket_ids(col, nb, dtype)
        if fast is not None:
            return _series_of(_plc_column(fast), series.name, series)
    if kind in _HASH_AS and col.type().id() != _HASH_AS[kind]:
        col = plc.unary.cast(col, plc.DataType(_HASH_AS[kind]))
    ids = _murmur_mod(col, nb)
    out_type = plc.DataType(_plc_type_id(dtype))
    if out_type.id() != plc.TypeId.UINT32:
        ids = plc.unary.cast(ids, out_type)
    missing = plc.unary.is_null(col) if col.null_count() else None
    if kind == "f":  # NaN is missing too (tabprep's rule); null rows are already in `missing`
        nan = plc.unary.is_nan(col)
        missing = nan if missing is None else plc.binaryop.binary_operation(
            missing, nan, plc.binaryop.BinaryOperator.NULL_LOGICAL_OR, _BOOL8)
    if missing is not None:
        ids = plc.copying.copy_if_else(_scalar(0, out_type), ids, missing)
    return _series_of(ids, series.name, series)


def _plc_type_id(dtype: str) -> Any:
    return {"int8": plc.TypeId.INT8, "int16": plc.TypeId.INT16, "int32": plc.TypeId.INT32,
            "int64": plc.TypeId.INT64, "uint8": plc.TypeId.UINT8, "uint16": plc.TypeId.UINT16,
            "uint32": plc.TypeId.UINT32, "uint64": plc.TypeId.UINT64}[str(np.dtype(dtype))]


# ---------------------------------------------------------------------------
# device columns: the fused element-wise chains (workflow/fusion.py) on cuDF frames
# ---------------------------------------------------------------------------
@_register(C.host_columns_supported)
def _host_columns_supported(frame: Any) -> bool:
    # numeric cuDF columns become DeviceColumns (host_column below), whose kernels are CuPy's: fused
    # only once the warm-up pool has built them (gpu_warmup._fused_chain). Until then, and always
    # with TABPREP_GPU_WARMUP=0, every op's transform runs as before, so a cold worker's fit and
    # FillMissing / Clip compile no CuPy kernel (libcudf's; issue #16). Same results either way.
    # On by default since a GPU run showed it equal to the unfused path; TABPREP_DEVICE_FUSION=0: off.
    return gpu_warmup.device_fusion() and gpu_warmup.READY.is_set() and gpu_warmup.enabled()


@_register(C.host_column)
def _device_column(series: Any) -> Optional[C.DeviceColumn]:
    """The :class:`~tabprep.backend.columns.DeviceColumn` of a numeric / bool cuDF series: its CuPy
    values (a view when there is no null), or with nulls fresh values (0 / False / NaN in the null
    slots, which the kernels never read as values) and the null mask; None for other dtypes."""
    # a cuDF series made from a pandas nullable column keeps its pandas dtype (Int64, Float64,
    # boolean: cuDF 26 reports pd.Int64Dtype()); its values are the numpy dtype's
    dtype = A._numpy_kind_dtype(series.dtype)
    if dtype.kind not in "iufb":
        return None  # strings, lists, categoricals, decimals, datetimes: the ops' transform
    if not series.has_nulls:
        return C.DeviceColumn(series.values, None)
    if _FAST_COLUMNS:
        # on the column: the mask as isna gives it (a float's NaN counts too), the nulls replaced by
        # libcudf (NaN for floats, as to_cupy(na_value=nan) gives; 0 / False otherwise), where cuDF's
        # Series layer (isna, to_cupy / fillna, new Series and indexes) cost ~1.6 ms per column
        col = _plc_column(series)
        fill = float("nan") if dtype.kind == "f" else (False if dtype.kind == "b" else 0)
        if dtype.kind == "f":   # libcudf's is_nan is false at nulls: or-ed with the nulls
            mask = _cupy_of(plc.binaryop.binary_operation(plc.unary.is_null(col), plc.unary.is_nan(col),
                                                          plc.binaryop.BinaryOperator.NULL_LOGICAL_OR, _BOOL8))
        else:
            mask = _cupy_of(plc.unary.is_null(col))
        values = _cupy_of(plc.replace.replace_nulls(col, _scalar(fill, col.type())))
        return C.DeviceColumn(values, mask, owned=True)
    mask = series.isna().values
    if dtype.kind == "f":
        values = series.to_cupy(na_value=np.nan)  # a float null is NaN in the values too (as on the host)
    else:
        values = series.fillna(False if dtype.kind == "b" else 0).values
    return C.DeviceColumn(values, mask, owned=True)


@C.host_series.register(C.DeviceColumn)
def _device_series(col: C.DeviceColumn, like: Any, name: Any, nan_free: bool = False) -> Any:
    # built as the ops' transforms build their outputs (new_series of a CuPy array: NaN become
    # nulls), nulls set from the mask; ``nan_free``: the values are known to hold no NaN
    if _FAST_COLUMNS and isinstance(col.values, cupy.ndarray) and col.values.ndim == 1:
        # the values' column straight into a series (no Series constructor: ~1.3 ms per column)
        out = _series_of(cudf.core.column.as_column(col.values, nan_as_null=False if nan_free else None), name, like)
    else:
        out = F.new_series(col.values, like=like, name=name)
    return out if col.mask is None else F.set_nulls(out, col.mask)


#: ``TABPREP_GPU_BATCH_NAN_CHECK=0`` (read per call, for A/B runs): each float column's NaN check by cuDF
BATCH_NAN_CHECK_ENV = "TABPREP_GPU_BATCH_NAN_CHECK"


def _nan_checkable(col: Any) -> bool:
    """A mask-less 1-D float device column (a masked one holds NaN in its null slots: cuDF's path)."""
    return (isinstance(col, C.DeviceColumn) and col.mask is None and isinstance(col.values, cupy.ndarray)
            and col.values.ndim == 1 and col.values.dtype.kind == "f")


@C.host_series_many.register(C.DeviceColumn)
def _device_series_many(first: Any, cols: Any, likes: Any, names: Any) -> list:
    # cuDF's as_column counts a float array's NaN (to make them nulls) and copies the count to the
    # host: a wait for everything queued on the device, the other thread's read and transform
    # included, 13 per chunk of the online Criteo workflow (the loader's producer threads under
    # cProfile, benchmarks/loader_consumer.py --cprofile). Here the chain's float columns are
    # checked together, one copy to the host for all; a column without NaN is made without cuDF's
    # check, one with NaN (and every other column) as before, so the series are the same
    checked = [i for i, col in enumerate(cols) if _FAST_COLUMNS and _nan_checkable(col)]
    nan_free: set = set()
    if len(checked) > 1 and os.environ.get(BATCH_NAN_CHECK_ENV, "1") != "0":
        has_nan = cupy.stack([cupy.isnan(cols[i].values).any() for i in checked]).get()
        nan_free = {i for i, flag in zip(checked, has_nan.tolist()) if not flag}
    return [_device_series(col, like, name, nan_free=True) if i in nan_free else C.host_series(col, like, name)
            for i, (col, like, name) in enumerate(zip(cols, likes, names))]
