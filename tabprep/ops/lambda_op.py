"""LambdaOp: apply user code to each selected column."""
from __future__ import annotations

import inspect
import logging
import numbers
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import numpy as np
import pandas as pd

from .. import backend
from .._warn import warn_difference
from ..registry import function_path, resolve_function
from ..schema import ColumnSchema, Schema, normalize_dtype
from .base import Operator, column_names_arg

log = logging.getLogger(__name__)


class LambdaOp(Operator):
    """Apply ``f(column)`` or ``f(column, df)`` to each selected column.

    ``f`` gets a pandas or cuDF Series (and, with two parameters, the frame of the op's input
    plus its ``dependency`` columns) and returns a Series or array of the same length.

    List (multi-hot) columns: a one-parameter ``f`` is applied element-wise, to the flat
    Series of all list elements (null elements included), and must return one value per
    element; row lengths and null rows are kept, and ``dtype`` is the elements' dtype. A
    two-parameter ``f(col, df)`` gets the whole list column instead (row-aligned with ``df``).

    Saving: a workflow stores ``f`` by its :func:`tabprep.register_function` name or import path
    (``module:qualname``); loading resolves it only against the functions registered in the
    loading process unless ``Workflow.load(path, trusted=True)``. A function with neither (a
    lambda, a notebook function) is refused at save unless ``allow_pickle=True`` is given to both
    ``save`` and ``load`` (or it is registered under a name).

    Args:
        f: the function.
        dependency: extra raw column name(s) ``f`` reads from ``df``.
        label: a name for the op in summaries and profiles (default ``f.__name__``).
        dtype: output dtype; the result is cast to it. Default None: whatever ``f`` returns
            (``c / 2`` of an int column is float64, as in NVTabular). The output schema's dtype is
            then found by running ``f`` on a 3-row probe of the input's dtypes when the graph is
            bound; when the real data's dtype differs from the probe's (a dtype that depends on
            the values), the op warns once, naming ``dtype=``.
        tags: tags for the output columns (e.g. ``["categorical"]``).
        properties: properties added to the output columns' schema (NVTabular's ``properties=``).

    The parameter order is NVTabular's (``LambdaOp(f, dependency, label, dtype, tags, properties)``).

    Example:
        >>> import numpy as np
        >>> hour = ["ts"] >> LambdaOp(lambda col: (col // 3600) % 24, dtype="int64")
    """

    supports_lists = True
    passes_opaque = True  # struct / decimal / binary columns flow through (issue #30)

    def __init__(self, f: Callable, dependency: Union[None, str, Sequence[str]] = None,
                 label: Optional[str] = None, dtype: Optional[str] = None,
                 tags: Optional[Sequence[str]] = None, properties: Optional[Dict[str, Any]] = None) -> None:
        if not callable(f):
            raise TypeError(f"LambdaOp needs a callable, got {type(f).__name__}")
        self.f = f
        # NVTabular also takes a node / ColumnSelector; a computed node becomes a dependency
        self.dependency = column_names_arg(dependency, "LambdaOp(dependency=...)", self)
        self.dtype = dtype
        self.tags = tags
        self.properties = properties
        self.label_ = label
        self._arity = _arity(f)
        #: column -> dtype the schema promised from the probe (see compute_output_schema)
        self._probed: Dict[str, str] = {}
        self._warned: set = set()

    def get_params(self) -> Dict[str, Any]:
        return {"f": self.f, "dependency": self.dependency, "label": self.label_, "dtype": self.dtype,
                "tags": self.tags, "properties": self.properties}

    @property
    def label(self) -> str:
        return self.label_ or f"LambdaOp({getattr(self.f, '__name__', 'f')})"

    def dependencies(self) -> List[str]:
        if self.dependency is None:
            return []
        return [self.dependency] if isinstance(self.dependency, str) else list(self.dependency)

    def transform(self, columns: List[str], df: Any) -> Any:
        out = {}
        for c in columns:
            if self._arity == 1 and backend.is_list_series(df[c]):
                out[c] = self._map_list(df[c], c)
                continue
            res = _broadcast(self.f(df[c], df) if self._arity == 2 else self.f(df[c]), df[c])
            if len(res) != len(df):
                raise ValueError(f"{self.label} returned {len(res)} values for column {c!r} of {len(df)} rows; "
                                 f"a LambdaOp must keep the row count (use Filter to drop rows)")
            if not hasattr(res, "index"):
                res = backend.new_series(res, like=df[c], name=c)
            else:
                res = res.rename(c)
                res.index = df.index
            if self.dtype is not None:
                res = res.astype(self.dtype)
            else:
                res = _numpy_numbers(res)
                self._check_probe(c, res.dtype)
            out[c] = res
        return backend.make_frame(out, like=df)

    def _check_probe(self, c: str, dtype: Any) -> None:
        """Warn once per column when ``f``'s real dtype is not what the probe (the schema) said:
        the workflow then casts the column to the schema's dtype where it can."""
        want = self._probed.get(c)
        have = normalize_dtype(dtype)
        if want is None or have == want or c in self._warned:
            return
        try:  # an int result where the schema says float (nulls in the probe only) casts exactly
            if np.can_cast(np.dtype(have), np.dtype(want), "safe"):
                return
        except TypeError:
            pass
        self._warned.add(c)
        warn_difference(f"{self.label}: column {c!r} came out {have} but the output schema (from a probe run of f "
                        f"on sample values of the input's dtypes) says {want}, and the column is cast to the schema "
                        f"where it can be; pass LambdaOp(..., dtype=...) to fix the output dtype",
                        stacklevel=3)

    def _map_list(self, s: Any, c: str) -> Any:
        """``f`` applied element-wise to a list column (one value per element). NVTabular 23.08 passes
        ``f`` the column of lists instead: said once per column (``NVTabularDifferenceWarning``)."""
        if ("list", c) not in self._warned:
            self._warned.add(("list", c))
            warn_difference(f"{self.label} on list column {c!r}: a one-argument function is applied to the column's "
                            f"elements here (one value each, e.g. c * 2 doubles every element), where NVTabular 23.08 "
                            f"passes it the column of lists, one cell per row (c.apply(np.sum) gives row sums there, "
                            f"the lists unchanged here). Write f(col, df) to get the whole lists in both "
                            f"(docs/migration.md)", stacklevel=4)
        leaves, offsets = backend.list_leaves(s)
        res = self.f(leaves)
        if len(res) != len(leaves):
            raise ValueError(f"{self.label} returned {len(res)} values for the {len(leaves)} elements of list column "
                             f"{c!r}; on list columns a one-argument function is applied element-wise (use "
                             f"f(col, df) to get whole lists)")
        if hasattr(res, "index"):
            res = res.reset_index(drop=True)
        if self.dtype is not None:
            res = res.astype(self.dtype)
        return backend.list_from_leaves(res, offsets, like=s, name=c)

    def column_schema(self, col: ColumnSchema) -> ColumnSchema:
        changes: Dict[str, Any] = {}
        if self.dtype is not None:
            changes["dtype"] = self.dtype
        if self.tags:
            changes["add_tags"] = list(self.tags)
        if self.properties:
            changes["add_properties"] = dict(self.properties)
        return col.with_(**changes) if changes else col

    def compute_output_schema(self, input_schema: Schema, columns: List[str]) -> Schema:
        """One output per input; without ``dtype=`` its dtype is what ``f`` returns on a probe."""
        out = super().compute_output_schema(input_schema, columns)
        if self.dtype is not None:
            return out
        probed = _probe_dtypes(self, input_schema, columns)
        # a column the probe could not run on keeps the input dtype in the schema; transform
        # still warns when the data says otherwise
        dtypes = {col.name: probed.get(col.name) or col.dtype for col in out}
        self._probed = {col.name: dtypes[col.name] for col in out if not col.is_list}
        return Schema([col.with_(dtype=dtypes[col.name]) for col in out])

    def to_config(self) -> Dict[str, Any]:
        path = function_path(self.f)
        cfg = {"dependency": self.dependency, "dtype": self.dtype,
               "tags": list(self.tags) if self.tags else None, "label": self.label_}
        if self.properties:
            cfg["properties"] = self.properties
        if path is not None:
            cfg["f"] = {"import": path}
        else:
            cfg["f"] = {"pickled": True}
        return cfg

    @classmethod
    def from_config(cls, config: Dict[str, Any], allow_pickle: bool = False) -> "LambdaOp":
        config = dict(config)
        return cls(function_from_config(config.pop("f", None), "LambdaOp"), **config)


_PROBE_ROWS = 3


def _probe_values(col: ColumnSchema) -> Optional[pd.Series]:
    """A small pandas Series of ``col``'s dtype (its elements' dtype for a list column), or None."""
    kind = col.dtype
    try:
        if kind == "str":
            return pd.Series(["a", None, "c"], dtype=object)  # strings are often nullable
        if kind == "bool":
            return pd.Series([True, False, True])
        if kind.startswith("datetime") or kind.startswith("timedelta"):
            return pd.Series(np.arange(1, _PROBE_ROWS + 1)).astype(kind)
        values = pd.Series(np.arange(1, _PROBE_ROWS + 1)).astype(np.dtype(kind))
        if values.dtype.kind == "f":
            values.iloc[1] = np.nan
        return values
    except TypeError:
        return None


def _probe_dtypes(op: "LambdaOp", schema: Schema, columns: List[str]) -> Dict[str, Optional[str]]:
    """Column -> dtype ``op.f`` returns on a 3-row pandas probe of the input dtypes (None: unknown).

    NVTabular records the dtype ``f`` returns on the data while it fits; tabprep's schema is known
    before any data is read, so ``f`` runs on a probe instead (and ``transform`` warns if the real
    data's dtype differs). A function that fails on the probe keeps the input dtype, unchecked.
    """
    out: Dict[str, Optional[str]] = {}
    frame = {}
    for name in list(columns) + op.dependencies():
        if name in schema and name not in frame:
            values = _probe_values(schema[name])
            if values is not None and not schema[name].is_list:
                frame[name] = values
    df = pd.DataFrame(frame)
    for c in columns:
        col = schema[c] if c in schema else None
        if col is None:
            out[c] = None
            continue
        if col.is_list and op._arity == 2:
            out[c] = None  # f gets whole lists: nothing to probe without data
            continue
        series = _probe_values(col) if col.is_list else df.get(c)
        if series is None:
            out[c] = None
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = _broadcast(op.f(series, df) if op._arity == 2 else op.f(series), series)
            dtype = getattr(res, "dtype", None)
            if dtype is None or len(res) != len(series):
                out[c] = None
                continue
            out[c] = normalize_dtype(dtype)
        except Exception as exc:  # the user's function on made-up values: any failure means "unknown"
            log.debug("LambdaOp %s: probe of column %r failed (%s); its schema keeps the input dtype",
                      op.label, c, exc)
            out[c] = None
    return out


def _broadcast(res: Any, like: Any) -> Any:
    """``res`` as it is, or a scalar result (a number, a string, None, a 0-d array) as a series of
    it on every row of ``like``: NVTabular assigns ``f``'s result to the column, which broadcasts a
    scalar (``LambdaOp(lambda col: 0)`` is a column of zeros there; here it raised "object of type
    'int' has no len()"). The dtype is the frame library's for a list of that value."""
    scalar = res is None or isinstance(res, (str, bytes, numbers.Number, np.generic)) or getattr(res, "ndim", 1) == 0
    if not scalar:
        return res
    lib = backend.frame_lib(like)
    if res is None or isinstance(res, (str, bytes)):
        # the dtype of one such value, also for an empty partition (dask's meta among them)
        return lib.Series([res] * len(like), index=like.index, dtype=lib.Series([res]).dtype)
    value = backend.to_numpy(res) if getattr(res, "ndim", None) == 0 and not isinstance(res, np.ndarray) else res
    arr = np.asarray(value)   # a Python number, a numpy scalar (its dtype kept, as pandas keeps it), a 0-d array
    return lib.Series(np.full(len(like), arr, dtype=arr.dtype), index=like.index)


def _arity(f: Callable) -> int:
    """2 when ``f`` takes ``(col, df)``, else 1."""
    nin = getattr(f, "nin", None)
    if type(f).__name__ == "ufunc" and isinstance(nin, int):
        # a numpy ufunc's signature is (x, /, out=None, ...): its second positional is the output
        # buffer, not a frame; its input count is nin
        return 2 if nin >= 2 else 1
    try:
        params = [p for p in inspect.signature(f).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return 1
    return 2 if len(params) >= 2 else 1


def function_from_config(f: Any, where: str) -> Callable:
    """The function of a saved/spec ``f`` parameter: ``{"import": name}`` resolved by
    :func:`tabprep.registry.resolve_function` (restricted inside ``Workflow.load``), or a callable
    passed through; pickled functions are restored by the workflow loader before this."""
    if callable(f):
        return f
    if isinstance(f, dict) and set(f) == {"import"}:
        return resolve_function(f["import"])
    if isinstance(f, dict) and "pickled" in f:
        raise ValueError(f"{where}: a pickled function is read only by Workflow.load(path, allow_pickle=True)")
    raise TypeError(f"{where}: f must be a function or {{import: 'module:qualname'}}, got {f!r}")


def _numpy_numbers(res: Any) -> Any:
    """An Arrow-backed number column without nulls (pandas' ``int64[pyarrow]``, what ``c.apply(len)``
    of a list column gives) as its numpy dtype, as NVTabular's frame holds it; anything else as is."""
    dtype = getattr(res, "dtype", None)
    numpy_dtype = getattr(dtype, "numpy_dtype", None)
    if (str(dtype).endswith("[pyarrow]") and numpy_dtype is not None and numpy_dtype.kind in "iufb"
            and not bool(res.isna().any())):
        return res.astype(numpy_dtype)
    return res
