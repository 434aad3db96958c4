"""Rename: change column names."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from .base import Operator


class Rename(Operator):
    """Rename columns with a function, a postfix, or (for one column) a new name.

    Args:
        f: ``f(name) -> new_name`` (stored by its registered name or import path when the
            workflow is saved; see :func:`tabprep.register_function`).
        postfix: appended to each name.
        name: the new name; only valid when exactly one column is selected.

    Example:
        >>> ["C1"] >> Categorify() >> Rename(postfix="_id")
    """

    supports_lists = True
    passes_opaque = True  # struct / decimal / binary columns flow through (issue #30)

    def __init__(self, f: Optional[Callable[[str], str]] = None, postfix: Optional[str] = None,
                 name: Optional[str] = None) -> None:
        if sum(x is not None for x in (f, postfix, name)) != 1:
            raise ValueError("Rename needs exactly one of f, postfix or name")
        if f is not None and not callable(f):
            raise TypeError(f"Rename(f=...) needs a callable, got {type(f).__name__}")
        self.f = f
        self.postfix = postfix
        self.name = name

    def output_column_names(self, columns: List[str]) -> List[str]:
        if self.name is not None:
            if len(columns) != 1:
                raise ValueError(f"Rename(name={self.name!r}) needs exactly one input column, got {columns}; "
                                 f"use postfix= or f= for several")
            return [self.name]
        if self.postfix is not None:
            return [c + self.postfix for c in columns]
        return [str(self.f(c)) for c in columns]

    def transform(self, columns: List[str], df: Any) -> Any:
        names = self.output_column_names(columns)
        out = df[columns]
        out.columns = names
        return out

    def to_config(self) -> Dict[str, Any]:
        from .lambda_op import function_path

        if self.f is None:
            return {"f": None, "postfix": self.postfix, "name": self.name}
        path = function_path(self.f)
        if path is None:
            raise ValueError("Rename(f=...) with a lambda or local function cannot be saved; use postfix=/name=, "
                             "a function defined in an importable module, or register it under a name "
                             "(tp.register_function(f, name='myproject.rename'))")
        return {"f": {"import": path}, "postfix": None, "name": None}

    @classmethod
    def from_config(cls, config: Dict[str, Any], allow_pickle: bool = False) -> "Rename":
        from .lambda_op import function_from_config

        config = dict(config)
        if config.get("f") is not None:
            config["f"] = function_from_config(config["f"], "Rename")
        return cls(**config)
