"""Frames and series: building, combining, moving between host and device, null handling.

pandas implementations; the cuDF ones are in :mod:`tabprep.backend.gpu`.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from .arrays import _numpy_kind_dtype, frame_lib
from .dispatch import Dispatch, register_gpu_lazy
from .list_cells import numpy_cells


def _gpu():
    from . import gpu

    return gpu


# ---------------------------------------------------------------------------
# building frames and series
# ---------------------------------------------------------------------------
_make_frame = Dispatch("make_frame")


@_make_frame.register(object)
def _make_frame_pandas(like: Any, columns: dict):
    return pd.DataFrame(columns, index=like.index, copy=False)


def make_frame(columns: dict, like: Any):
    """A frame of ``columns`` (name -> series/array) on ``like``'s backend and index.

    pandas: built without copying or consolidating the columns into 2-D blocks, which
    otherwise costs a full copy of every op's output.
    """
    return _make_frame(like, columns)


def _is_default_index(index: Any, n: int) -> bool:
    """True for ``RangeIndex(0, n)`` (pandas or cuDF), the index every reader gives."""
    return (type(index).__name__ == "RangeIndex" and index.start == 0 and index.step == 1
            and index.stop == n and index.name is None)


_new_series = Dispatch("new_series")


@_new_series.register(object)
def _new_series_pandas(like: Any, values: Any, name: Any):
    if isinstance(values, np.ndarray):
        # pandas 3 copies an ndarray by default; the ops hand over fresh arrays
        return pd.Series(values, index=like.index, name=name, copy=False)
    return pd.Series(values, index=like.index, name=name)


def _same_kind_cast(values: Any, dtype: Optional[str]) -> Any:
    """``values`` (a numpy array) cast to ``dtype`` in numpy when that is what the series'
    ``astype`` would do anyway: int/uint/bool to int/uint, float to float (pandas' ``astype``
    costs ~0.3-0.6 ms a call on small columns, numpy's ~1 us; a transform makes one per column)."""
    if dtype is None or not isinstance(values, np.ndarray):
        return values
    target = _NUMPY_DTYPES.get(dtype)
    if target is None:
        return values
    src = values.dtype.kind
    if (src in "iub" and target.kind in "iu") or (src == "f" and target.kind == "f"):
        return values.astype(target, copy=False)
    return values


_NUMPY_DTYPES = {name: np.dtype(name) for name in
                 ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64")}


def new_series(values: Any, like: Any, name: Optional[str] = None, dtype: Optional[str] = None):
    """A series of ``values`` on the backend of ``like``, with ``like``'s index."""
    name = name if name is not None else like.name
    out = _new_series(like, _same_kind_cast(values, dtype), name)
    if dtype is not None and str(out.dtype) != dtype:
        out = out.astype(dtype)
    return out


def empty_frame_like(df: Any):
    """A zero-row frame with the columns and dtypes of ``df``."""
    return df.iloc[:0]


_concat_columns = Dispatch("concat_columns")


@_concat_columns.register(object)
def _concat_columns_pandas(first: Any, frames: Sequence[Any]):
    out = {}
    for f in frames:
        for name in f.columns:
            out[name] = f[name]
    index = frames[0].index
    return pd.DataFrame(out, index=index, copy=False)


def concat_columns(frames: Sequence[Any]):
    """Concatenate frames side by side (same rows, same order)."""
    frames = [f for f in frames if f is not None]
    if len(frames) == 1:
        return frames[0]
    return _concat_columns(frames[0], frames)


take_frame_rows = Dispatch("take_frame_rows", """Rows ``perm`` (int numpy array) of a frame, in that order,
index reset (the writer's shuffles).""")
take_frame_rows.register(object, lambda df, perm: df.take(perm).reset_index(drop=True))
take_frame_rows.register(pa.Table, lambda table, perm: table.take(pa.array(perm)))


def concat_rows(frames: Sequence[Any]):
    """Concatenate frames of the same columns one under the other, index reset."""
    frames = list(frames)
    lib = frame_lib(frames[0])
    return lib.concat(frames, axis=0, ignore_index=True)


# ---------------------------------------------------------------------------
# host <-> device
# ---------------------------------------------------------------------------
def from_host(df: pd.DataFrame, cpu: bool):
    """Frame on the requested backend."""
    if cpu:
        return df
    return _gpu().from_host(df)


to_backend = Dispatch("to_backend", """``frame`` on the CPU (``cpu=True``: a pandas copy of a cuDF frame),
on the GPU (``cpu=False``: a cuDF copy of a pandas frame), or unchanged (``cpu=None`` or already there).""")


@to_backend.register(object)
def _to_backend_pandas(frame: Any, cpu: Optional[bool]):
    if cpu is False:
        return from_host(frame, cpu=False)
    return frame


held_bytes = Dispatch("held_bytes", """Bytes an array, series or index of either backend holds (device
bytes for cuDF / cupy), as dask's ``sizeof`` should count them (``tabprep.workflow.sizes``: the
fit's statistics partials). dask sizes numpy and pandas itself; cuDF registers its sizes only when
dask_cudf is imported, which a fit that reads parquet itself never does on a worker.""")


@held_bytes.register(object)
def _held_bytes_host(obj: Any) -> int:
    from dask.sizeof import sizeof  # dask is imported where this runs (the fit's tasks); not at import tabprep

    return int(sizeof(obj))


reads_on_own_stream = Dispatch("reads_on_own_stream", """True when a frame read by the GPU loader's
direct parquet read (``TABPREP_GPU_READ_STREAM=1``) was decoded on a stream of its own, whose
memory the loader then holds until its chunk's device work is done (``CudaDevice.mark_ready``);
False on the host.""")
reads_on_own_stream.register(object, lambda frame: False)

move_like = Dispatch("move_like", """Host (pandas) frame ``frame`` on the backend of ``like``
(dispatched on ``like``: a cuDF copy for cuDF objects, ``frame`` itself otherwise).""")
move_like.register(object, lambda like, frame: frame)


def on_one_backend(objs: Sequence[Any]) -> list:
    """``objs`` (frames, series or arrays), all moved to the host when some are on the GPU and
    some are not (partials that were moved to the host meet device ones in a combine)."""
    from .arrays import to_host
    from .core import same_device

    objs = list(objs)
    if same_device(objs):
        return objs
    return [to_host(o) for o in objs]


# ---------------------------------------------------------------------------
# nulls and dtypes
# ---------------------------------------------------------------------------
nullable_columns = Dispatch("nullable_columns", """``df`` with its int and bool ``columns`` (default: all) as
nullable dtypes on pandas (``Int64``, ``boolean``...), so that joins can add nulls without turning them
into floats; cuDF columns are nullable already and are returned unchanged.""")


@nullable_columns.register(object)
def _nullable_columns_pandas(df: Any, columns: Optional[Sequence[str]] = None):
    casts = {}
    for c in (df.columns if columns is None else columns):
        dt = df[c].dtype
        if isinstance(dt, np.dtype) and dt.kind in "iub":
            casts[c] = "boolean" if dt.kind == "b" else dt.name.replace("uint", "UInt").replace("int", "Int")
    return df.astype(casts) if casts else df


nullable_int_dtypes = Dispatch("nullable_int_dtypes", """{column: dtype} of the pandas nullable int
columns of ``meta`` (``Int64``, ``UInt8``...): partitions are cast to them; nothing on cuDF.""")


@nullable_int_dtypes.register(object)
def _nullable_int_dtypes_pandas(meta: Any) -> dict:
    return {c: str(meta[c].dtype) for c in meta.columns if str(meta[c].dtype)[:1] in ("I", "U")}


set_nulls = Dispatch("set_nulls", """``series`` with the rows where ``mask`` (bool numpy/cupy array) is True
set to null.

pandas: int and bool columns become their nullable variant (``Int64``, ``boolean``) only
when a null is actually set, as when reading parquet, and float columns get NaN; cuDF
columns keep their dtype and get a null mask.""")


@set_nulls.register(object)
def _set_nulls_pandas(series: Any, mask: Any):
    if not mask.any():
        return series
    if series.dtype.kind in "iub" and not isinstance(series.dtype, pd.ArrowDtype):
        series = series.astype(_nullable_name(series.dtype))
    out = series.copy()
    out[mask] = None if series.dtype.kind != "f" else np.nan
    return out


cast_keep_nulls = Dispatch("cast_keep_nulls", """``series.astype(dtype)`` for a numeric dtype, keeping nulls.

pandas: a nullable integer/bool column cast to an integer dtype gets the nullable variant
(``int8`` -> ``Int8``); cuDF columns hold nulls in any dtype.""")


@cast_keep_nulls.register(object)
def _cast_keep_nulls_pandas(series: Any, dtype: str):
    kind = np.dtype(dtype).kind
    if kind in "iub" and _numpy_kind_dtype(series.dtype).kind in "iub" and not isinstance(series.dtype, np.dtype):
        return series.astype(_nullable_name(np.dtype(dtype)))
    return series.astype(dtype)


def _nullable_name(dtype: Any) -> str:
    name = np.dtype(getattr(dtype, "numpy_dtype", dtype)).name
    if name == "bool":
        return "boolean"
    return name.replace("uint", "UInt").replace("int", "Int")


# ---------------------------------------------------------------------------
# Arrow and dask
# ---------------------------------------------------------------------------
frame_to_arrow = Dispatch("frame_to_arrow", "Arrow table of a pandas or cuDF frame (index dropped).")


@frame_to_arrow.register(object)
def _frame_to_arrow_pandas(df: Any, preserve_index: bool = False) -> pa.Table:
    if not preserve_index and all(isinstance(c, str) for c in df.columns) \
            and all(isinstance(t, np.dtype) and t.kind in "iufb" for t in df.dtypes):
        # plain numpy columns (what the Criteo-style ops output): zero-copy per column, ~10x
        # cheaper than Table.from_pandas' generic path; NaN -> null as from_pandas does
        return pa.table([_numpy_to_arrow(df[c].to_numpy()) for c in df.columns], names=list(df.columns))
    return pa.Table.from_pandas(df, preserve_index=preserve_index)


def _numpy_to_arrow(values: np.ndarray) -> pa.Array:
    if values.dtype.kind == "f":
        nan = np.isnan(values)
        if nan.any():  # a mask is ~30x faster than from_pandas=True's NaN scan
            return pa.array(values, mask=nan)
    return pa.array(values)


to_dask = Dispatch("to_dask", "A dask (dask-cuDF) DataFrame of an in-memory pandas (cuDF) frame.")


@to_dask.register(object)
def _to_dask_pandas(frame: Any, npartitions: int) -> Any:
    import dask.dataframe as dd

    return dd.from_pandas(lists_to_arrow(frame), npartitions=npartitions, sort=False)


def arrow_list_columns(frame: Any) -> list:
    """Names of a pandas frame's Arrow list columns (pandas ``ArrowDtype`` of a list type); [] for
    other frames (cuDF's list columns are typed already)."""
    if not isinstance(frame, pd.DataFrame):
        return []
    out = []
    for name, dtype in frame.dtypes.items():
        if isinstance(dtype, pd.ArrowDtype) and (pa.types.is_list(dtype.pyarrow_dtype)
                                                 or pa.types.is_large_list(dtype.pyarrow_dtype)
                                                 or pa.types.is_fixed_size_list(dtype.pyarrow_dtype)):
            out.append(name)
    return out


def lists_to_numpy(frame: Any) -> Any:
    """Arrow list columns of a pandas frame as object columns of numpy arrays (a null row: None),
    which is what NVTabular / merlin-core hand users on the CPU (pyarrow's ``to_pandas``): each cell
    has ``.dtype``. Other columns and cuDF frames (typed list columns already) are returned as is.
    For frames handed to users only (``Dataset.compute`` / ``to_ddf``, ``Workflow.transform(frame)``);
    tabprep's own paths keep the Arrow columns (one buffer per column instead of an array per row)."""
    converted = {}
    for name in arrow_list_columns(frame):
        cells = numpy_cells(frame[name].array.__arrow_array__())  # one numpy array per row, exact
        converted[name] = pd.Series(cells, index=frame.index, name=name, dtype=object)
    return _with_columns(frame, converted) if converted else frame


def _with_columns(frame: pd.DataFrame, converted: dict) -> pd.DataFrame:
    """``frame`` with the columns of ``converted`` replaced (a shallow copy; ``frame`` itself when
    nothing was converted)."""
    if not converted:
        return frame
    out = frame.copy(deep=False)
    for name, col in converted.items():
        out[name] = col
    return out


def _first_cell(s: pd.Series) -> Any:
    """The first non-null cell of an object column (None when all are null): it decides what the
    column holds, without a copy of the column."""
    present = s.notna().to_numpy()
    return s.iloc[int(present.argmax())] if present.any() else None


def has_array_cells(frame: Any) -> bool:
    """True when a pandas frame has an object column whose list cells are numpy arrays (the first
    non-null cell decides), the layout NVTabular hands users: ``Workflow.transform(frame)`` then
    gives its list outputs in the same layout (:func:`lists_to_numpy`)."""
    if not isinstance(frame, pd.DataFrame):
        return False
    for name in frame.columns:
        s = frame[name]
        if s.dtype == object and isinstance(_first_cell(s), np.ndarray):
            return True
    return False


def lists_to_arrow(frame: pd.DataFrame) -> pd.DataFrame:
    """Object columns holding Python lists / arrays become Arrow list columns.

    Otherwise dask would turn them into strings (``"[1, 2]"``), and ops could not see them as
    multi-hot columns.
    """
    if not isinstance(frame, pd.DataFrame):  # cuDF has typed list columns already
        return frame
    converted = {}
    for name in frame.columns:
        s = frame[name]
        if s.dtype != object:
            continue
        if isinstance(_first_cell(s), (list, tuple, np.ndarray)):
            try:
                arr = pa.array([None if v is None or (isinstance(v, float) and v != v) else list(v) for v in s])
            except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                raise TypeError(f"column {name!r} holds lists that Arrow cannot type ({exc}); make every element "
                                f"the same type (e.g. all ints or all strings)") from None
            converted[name] = pd.Series(pd.arrays.ArrowExtensionArray(arr), index=s.index, name=name)
    return _with_columns(frame, converted)


def read_csv(files: Sequence[str], blocksize: int, cpu: bool, cpu_read: Any = None, **kwargs: Any) -> Any:
    """A dask (``cpu``) or dask-cuDF DataFrame of csv ``files``; ``cpu_read(files, blocksize, **kwargs)``:
    the CPU's read in place of ``dd.read_csv`` (:func:`tabprep.io.csv_check.read_csv_named`)."""
    if not cpu:
        return _gpu().read_csv(files, blocksize, **kwargs)
    if cpu_read is not None:
        return cpu_read(files, blocksize, **kwargs)
    import dask.dataframe as dd
    return dd.read_csv(files, blocksize=blocksize, **kwargs)


def csv_block_counts(files: Sequence[str], blocksize: int, cpu: bool, compression: Any = "infer",
                     storage_options: Optional[Dict[str, Any]] = None) -> list:
    """Partitions :func:`read_csv` makes of each of ``files`` (merlin's csv ``file_partition_map``),
    without reading data: dask's byte blocks (``dask.bytes.read_bytes``, offsets only; an empty file
    none, a compressed one a whole partition); on the GPU dask-cuDF's split (:mod:`.gpu`)."""
    from fsspec.utils import infer_compression

    if not cpu:
        return _gpu().csv_block_counts(files, blocksize, compression, storage_options)
    from dask.bytes import read_bytes

    out = []
    for path in files:
        comp = infer_compression(path) if compression == "infer" else compression
        out.append(1 if comp is not None else
                   len(read_bytes(path, delimiter=b"\n", blocksize=blocksize, sample=False,
                                  **(storage_options or {}))[1][0]))
    return out


register_gpu_lazy(_make_frame, _new_series, _concat_columns, take_frame_rows, to_backend, move_like, held_bytes,
                  reads_on_own_stream,
                  nullable_columns,
                  nullable_int_dtypes,
                  set_nulls, cast_keep_nulls, frame_to_arrow, to_dask)


# ---------------------------------------------------------------------------
# the input contract's safe cast (Workflow.transform(cast=True))
# ---------------------------------------------------------------------------
cast_safely = Dispatch("cast_safely", """``series`` converted to ``dtype`` (a canonical dtype name: ``int64``,
``float32``, ``bool``, ``str``...) for ``Workflow.transform(cast=True)``; nulls stay null.

Lossy values raise ``ValueError`` naming ``name``: a non-integral or out-of-range float or a
non-numeric string for an int column, a non-numeric string for a float column, anything but
0/1 for a bool column. Int targets with nulls get the nullable variant on pandas (``Int64``),
so the non-null values keep their exact ids.""")


def _lossy(name: str, target: str, examples: Any) -> ValueError:
    return ValueError(f"column {name!r}: cast=True cannot convert these values to {target} without loss, "
                      f"e.g. {list(examples)[:3]!r}; fix the data or give the fitted type")


_PER_NS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}


def _cast_time(series: Any, dtype: str, name: str):
    """``series`` (datetimes / timedeltas) as the time ``dtype``: the same instants in the target's
    unit and zone, exactly; ``ValueError`` naming ``name`` where that is impossible (a finer
    count the unit cannot hold, an instant out of its range, naive vs zoned times)."""
    from .arrays import is_time_dtype, time_ints, time_unit

    target = pd.api.types.pandas_dtype(dtype)
    src = series.dtype
    if not is_time_dtype(src) or src.kind != target.kind:
        raise ValueError(f"column {name!r}: cast=True converts only {'datetimes' if target.kind == 'M' else 'timedeltas'} "
                         f"of another unit or time zone to {dtype}, not {src}; convert the column yourself "
                         f"(pd.to_datetime / pd.to_timedelta) or give the fitted type")
    src_tz, tgt_tz = getattr(src, "tz", None), getattr(target, "tz", None)
    if (src_tz is None) != (tgt_tz is None):
        fix = f".dt.tz_localize({str(tgt_tz)!r})" if src_tz is None else ".dt.tz_localize(None) (after .dt.tz_convert)"
        raise ValueError(f"column {name!r}: the workflow was fitted on {dtype} values but got {src}: naive wall-clock "
                         f"times and instants in a time zone do not convert without a zone; use series{fix} "
                         f"to give the fitted kind")
    values = series.dt.tz_convert(tgt_tz) if tgt_tz is not None else series
    ints, mask = time_ints(values)
    ok = np.zeros(len(ints), dtype=bool) if mask is None else mask.copy()   # (True: null, nothing to hold)
    src_ns, tgt_ns = _PER_NS[time_unit(src)], _PER_NS[time_unit(target)]
    if tgt_ns > src_ns:  # coarser: only whole counts of the target unit
        ok |= (ints % (tgt_ns // src_ns)) == 0
        why = f"{dtype} cannot hold them exactly (they have finer parts)"
        fix = f"round them (series.dt.floor({time_unit(target)!r})) or fit on {src}"
    else:  # finer: only instants within the target's range
        lim = np.iinfo(np.int64).max // (src_ns // tgt_ns)
        ok |= np.abs(ints) <= lim
        why = f"they lie outside the range of {dtype}"
        fix = f"fit on {src}"
    if not ok.all():
        raise ValueError(f"column {name!r}: the workflow was fitted on {dtype} values but got {src} ones, and "
                         f"{why}, e.g. {series[~ok].tolist()[:3]!r}; {fix}")
    return values.astype(target)


def _strings_to_ints(stripped: Any, nulls: Any, target: np.dtype, name: str, series: Any) -> Any:
    """Strings (``stripped``, None at nulls) as the int ``target``, through Python ints: exact at
    any size ("12", "12.0" and "1e3" are whole numbers; "2.5", "abc" and ones out of range are lossy)."""
    def whole(v: Any) -> Any:
        try:
            return int(v)
        except (TypeError, ValueError):
            try:
                f = float(v)
            except (TypeError, ValueError):
                return _BAD
            return int(f) if f == f and f not in (float("inf"), float("-inf")) and f == int(f) else _BAD
    # a list, not Series.map: pandas would infer float64 for ints and None, rounding them again
    ints = [None if null else whole(v) for v, null in zip(stripped.tolist(), np.asarray(nulls, dtype=bool).tolist())]
    info = np.iinfo(target)
    bad = np.array([v is _BAD or (v is not None and not info.min <= v <= info.max) for v in ints], dtype=bool)
    if bad.any():
        raise _lossy(name, str(target), series[bad].tolist())
    data = pd.array(ints, dtype=_nullable_name(target)) if bool(nulls.any()) else np.array(ints, dtype=target)
    return pd.Series(data, index=series.index, name=series.name)


_BAD = object()


@cast_safely.register(object)
def _cast_safely_pandas(series: Any, dtype: str, name: str):
    if str(dtype).startswith(("datetime64", "timedelta64")):
        return _cast_time(series, dtype, name)
    if dtype == "str":
        nulls = series.isna()
        out = series.astype(str).astype(object)
        return out.where(~nulls, None) if bool(nulls.any()) else out
    target = np.dtype(dtype)
    nulls = series.isna()
    values = series
    if series.dtype == object or pd.api.types.is_string_dtype(series.dtype):
        stripped = series.astype(object).where(~nulls, None).map(lambda v: v.strip() if isinstance(v, str) else v)
        if target.kind in "iu":   # Python ints: exact (with a null, to_numeric went through float64)
            return _strings_to_ints(stripped, nulls, target, name, series)
        values = pd.to_numeric(stripped, errors="coerce")
        bad = values.isna() & ~nulls
        if bool(bad.any()):
            raise _lossy(name, dtype, series[bad].tolist())
    elif series.dtype.kind == "b" or str(series.dtype) == "boolean":
        values = series.astype("float64")
    if target.kind in "iu":
        f = values.astype("float64")
        big = f.abs() >= 2.0 ** 53
        if series.dtype.kind == "f" and target.itemsize == 8 and bool(big.any()):
            raise ValueError(f"column {name!r}: cast=True got float64 values at or beyond 2**53 where the fitted "
                             f"dtype is {dtype}, "
                             f"e.g. {series[big].tolist()[:3]!r}; float64 holds only some integers "
                             f"there, so they may have lost digits before the cast (a csv reader reads an int column "
                             f"with a null as float64). Read the column as integers (parquet, or pandas "
                             f"dtype={{{name!r}: 'Int64'}})")
        ok = f.isna() | ((np.floor(f) == f) & (f.abs() < 2.0 ** 63))
        if not bool(ok.all()):
            raise _lossy(name, dtype, series[~ok].tolist())
        if target.kind == "u" and bool((f < 0).any()):
            raise _lossy(name, dtype, series[f < 0].tolist())
        # through int64 first when the source is numeric ints/floats: exact for |v| < 2**53 floats
        if bool(nulls.any()):
            return values.astype(_nullable_name(target))
        return values.astype(target)
    if target.kind == "b":
        f = values.astype("float64")
        ok = f.isna() | f.isin([0.0, 1.0])
        if not bool(ok.all()):
            raise _lossy(name, dtype, series[~ok].tolist())
        return values.astype("boolean") if bool(nulls.any()) else values.astype(bool)
    if target.kind == "f":
        return values.astype(target)
    raise ValueError(f"column {name!r}: cast=True does not convert to {dtype}")


register_gpu_lazy(cast_safely)


# ---------------------------------------------------------------------------
# object columns: what Python values a pandas object column really holds (issue #30)
# ---------------------------------------------------------------------------
# tabprep's schema reads an ``object`` column as strings (``"str"``), which is what every reader
# gives (Arrow strings). A user's frame may hold other Python objects in one: bools with ``None``,
# Decimals, ints with ``None``, bytes, or a mix such as ``[1, "1", 2, "a"]``. Fitted as
# strings, such values are all out of vocabulary even on the training frame (issue #30), so they
# are refused, naming the column and the cast that gives it a real kind. cuDF has no Python-object
# columns (its ``object`` dtype is strings): nothing to check there.
non_string_objects = Dispatch("non_string_objects", """``{column: inferred kind}`` for the ``columns`` of
``frame`` that are ``object`` columns holding values other than strings (nulls aside): the kind is
pandas' ``infer_dtype`` (``"boolean"``, ``"integer"``, ``"decimal"``, ``"bytes"``, ``"mixed"``...).
One pass over each object column (about 15 ms per million strings); other dtypes cost nothing.""")


@non_string_objects.register(object)
def _non_string_objects(frame: Any, columns: Sequence[str]) -> Dict[str, str]:
    out = {}
    for c in columns:
        s = frame[c]
        if getattr(s, "dtype", None) != np.dtype("O") or getattr(s, "ndim", 1) != 1:
            continue
        kind = pd.api.types.infer_dtype(s, skipna=True)
        if kind in ("string", "empty"):
            continue
        first = s[s.notna()].iloc[0] if kind == "mixed" else None
        if isinstance(first, (list, tuple, np.ndarray, dict)):
            continue  # list (or struct) cells: converted to Arrow list columns and checked there
        out[c] = kind
    return out


#: the cast that gives an object column of this inferred kind a real dtype
_FIXES = {
    "boolean": "df[{c!r}] = df[{c!r}].astype('boolean')",
    "integer": "df[{c!r}] = df[{c!r}].astype('Int64')",
    "floating": "df[{c!r}] = df[{c!r}].astype('float64')",
    "mixed-integer-float": "df[{c!r}] = df[{c!r}].astype('float64')",
    "decimal": "df[{c!r}] = df[{c!r}].astype('float64')  (or .astype(str) to keep the digits as categories)",
    "bytes": "df[{c!r}] = df[{c!r}].str.decode('utf-8')  (errors='replace' for bytes that are not UTF-8)",
    "datetime": "df[{c!r}] = pd.to_datetime(df[{c!r}])",
    "datetime64": "df[{c!r}] = pd.to_datetime(df[{c!r}])",
    "date": "df[{c!r}] = pd.to_datetime(df[{c!r}])",
    "timedelta": "df[{c!r}] = pd.to_timedelta(df[{c!r}])",
    "timedelta64": "df[{c!r}] = pd.to_timedelta(df[{c!r}])",
}


def non_string_objects_message(found: Dict[str, str], source: str) -> str:
    """The error for :func:`non_string_objects`'s findings: each column, what it holds and its fix."""
    lines = []
    for c, kind in found.items():
        fix = _FIXES.get(kind, "df[{c!r}] = df[{c!r}].astype(str)  (one value, one category: 1 and '1' become the same)")
        lines.append(f"column {c!r} is an object column of {kind} values, not strings; fix: {fix.format(c=c)}")
    return (f"{source} has object column(s) holding values other than strings: tabprep reads an object column "
            "as strings, so these values would be fitted and looked up as something they are not (every one "
            "out of vocabulary). Give the column a real dtype:\n" + "\n".join(lines))


register_gpu_lazy(non_string_objects)
