"""LambdaOp: apply user code to each selected column."""
from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from .. import backend
from ..registry import function_path, resolve_function
from ..schema import ColumnSchema
from .base import Operator


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
        dtype: output dtype (default: whatever ``f`` returns).
        tags: tags for the output columns (e.g. ``["categorical"]``).
        label: a name for the op in summaries and profiles (default ``f.__name__``).

    Example:
        >>> import numpy as np
        >>> hour = ["ts"] >> LambdaOp(lambda col: (col // 3600) % 24, dtype="int64")
    """

    supports_lists = True
    passes_opaque = True  # struct / decimal / binary columns flow through (issue #30)

    def __init__(self, f: Callable, dependency: Union[None, str, Sequence[str]] = None,
                 dtype: Optional[str] = None, tags: Optional[Sequence[str]] = None,
                 label: Optional[str] = None) -> None:
        if not callable(f):
            raise TypeError(f"LambdaOp needs a callable, got {type(f).__name__}")
        self.f = f
        self.dependency = dependency
        self.dtype = dtype
        self.tags = tags
        self.label_ = label
        self._arity = _arity(f)

    def get_params(self) -> Dict[str, Any]:
        return {"f": self.f, "dependency": self.dependency, "dtype": self.dtype, "tags": self.tags, "label": self.label_}

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
            res = self.f(df[c], df) if self._arity == 2 else self.f(df[c])
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
            out[c] = res
        return backend.make_frame(out, like=df)

    def _map_list(self, s: Any, c: str) -> Any:
        """``f`` applied element-wise to a list column (one value per element)."""
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
        return col.with_(**changes) if changes else col

    def to_config(self) -> Dict[str, Any]:
        path = function_path(self.f)
        cfg = {"dependency": self.dependency, "dtype": self.dtype,
               "tags": list(self.tags) if self.tags else None, "label": self.label_}
        if path is not None:
            cfg["f"] = {"import": path}
        else:
            cfg["f"] = {"pickled": True}
        return cfg

    @classmethod
    def from_config(cls, config: Dict[str, Any], allow_pickle: bool = False) -> "LambdaOp":
        config = dict(config)
        return cls(function_from_config(config.pop("f", None), "LambdaOp"), **config)


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
