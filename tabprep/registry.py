"""Functions by name: the allow-list a saved workflow may name, and import paths.

A saved workflow stores user functions (LambdaOp, Filter, Rename) by name: the name given to
:func:`register_function`, else ``module:qualname``. Loading a saved folder resolves such a
name only against the functions registered in the loading process (and the op registry, for op
classes); anything else is refused with :class:`UntrustedCodeError` *before* its module is
imported, unless the user opts in with ``Workflow.load(path, trusted=True)`` (CLI ``--trusted``).

Outside a load (spec files, which are user-written like code, and interactive use) an import
path resolves by importing it, as documented for spec files; :func:`resolve_function` reads the
policy of the load it runs in from a context variable, so ops' ``from_config`` (tabprep's and a
user's) get the restriction without passing it around.

Bottom layer: imports nothing else of tabprep.
"""
from __future__ import annotations

import contextlib
import contextvars
import importlib
import logging
from typing import Any, Callable, Dict, Iterator, Optional, TypeVar, Union, overload

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])

_FUNCTIONS: Dict[str, Callable[..., Any]] = {}

#: None outside a load (imports allowed); inside ``Workflow.load`` the load's ``trusted`` flag
_LOAD_TRUSTED: "contextvars.ContextVar[Optional[bool]]" = contextvars.ContextVar("tabprep_load_trusted",
                                                                                 default=None)


class UntrustedCodeError(ValueError):
    """A saved workflow names a function or class that is not on the allow-list of the loading
    process; nothing was imported. ``path`` is the name it gave."""

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path


def _default_name(f: Any) -> str:
    module = getattr(f, "__module__", None)
    qualname = getattr(f, "__qualname__", None)
    if not module or not qualname or "<" in qualname:
        raise ValueError(f"{f!r} has no importable name (a lambda or a local function): "
                         f"give one, register_function(f, name='myproject.my_function')")
    return f"{module}:{qualname}"


@overload
def register_function(f: F, name: Optional[str] = None) -> F: ...


@overload
def register_function(f: None = None, name: Optional[str] = None) -> Callable[[F], F]: ...


def register_function(f: Optional[F] = None, name: Optional[str] = None) -> Union[F, Callable[[F], F]]:
    """Allow a saved workflow to name ``f``; usable as ``@register_function`` or
    ``@register_function(name="...")``.

    A workflow saved with ``f`` stores ``{"import": name}``; loading it resolves ``name`` to ``f``
    in any process that registered ``f`` under the same name (register before
    ``Workflow.load``), without importing anything. Names not registered are refused at load
    unless ``trusted=True``.

    Args:
        f: the function (or any callable, e.g. a numpy ufunc; an Operator subclass makes it
            loadable as a saved ``op_class``).
        name: the stored name; default ``"module:qualname"`` of ``f``. Lambdas and local
            functions need one. Registering another object under a taken name replaces it.

    Returns:
        ``f`` unchanged (or a decorator when ``f`` is omitted).
    """
    if f is None:
        return lambda g: register_function(g, name=name)  # type: ignore[return-value]
    if not callable(f):
        raise TypeError(f"register_function needs a callable, got {type(f).__name__}")
    key = _default_name(f) if name is None else name
    if not isinstance(key, str) or not key:
        raise ValueError(f"a function's name must be a non-empty string, got {key!r}")
    old = _FUNCTIONS.get(key)
    if old is not None and old is not f:
        log.info("register_function: %r now names %r (was %r)", key, f, old)
    _FUNCTIONS[key] = f
    return f


def registered_functions() -> Dict[str, Callable[..., Any]]:
    """Name -> function of everything :func:`register_function` registered in this process."""
    return dict(_FUNCTIONS)


def _registered_name(f: Any) -> Optional[str]:
    for key, g in _FUNCTIONS.items():
        if g is f:
            return key
    return None


def function_path(f: Callable[..., Any]) -> Optional[str]:
    """The name a saved workflow stores for ``f``: its registered name, else ``"module:qualname"``
    when ``f`` can be re-imported by that path, else None (a lambda, a notebook function)."""
    registered = _registered_name(f)
    if registered is not None:
        return registered
    module = getattr(f, "__module__", None)
    qualname = getattr(f, "__qualname__", None)
    if not module or not qualname or module == "__main__" or "<" in qualname:
        return None
    path = f"{module}:{qualname}"
    try:
        if _import(path) is not f:
            return None
    except (ImportError, AttributeError):
        return None
    return path


def _import(path: str) -> Any:
    module, _, qualname = path.partition(":")
    obj: Any = importlib.import_module(module)
    for part in qualname.split(".") if qualname else []:
        obj = getattr(obj, part)
    return obj


def resolve_function(path: str, trusted: Optional[bool] = None, allowed: Optional[Dict[str, Any]] = None,
                     what: str = "function") -> Any:
    """The object named ``path``: a registered name, else the import of ``"module:qualname"``.

    Args:
        path: a registered name or ``"module:qualname"``.
        trusted: False: only registered names (and ``allowed``) resolve, anything else raises
            :class:`UntrustedCodeError` before any import. True: import. None (default): False
            inside ``Workflow.load`` unless the load was trusted, True elsewhere (spec files).
        allowed: more name -> object pairs that resolve without trust (the load passes the op
            registry for op classes).
        what: the kind of object, for the error message.
    """
    if not isinstance(path, str) or not path:
        raise TypeError(f"a {what} is named by a string ('module:qualname'), got {path!r}")
    if path in _FUNCTIONS:
        return _FUNCTIONS[path]
    if allowed and path in allowed:
        return allowed[path]
    if trusted is None:
        policy = _LOAD_TRUSTED.get()
        trusted = True if policy is None else policy
    if not trusted:
        if what == "op class":
            how = ("decorate the class with @tp.ops.register in a module imported before loading, or "
                   "tp.register_function(cls)")
        elif ":" in path:
            how = f"tp.register_function(func) before loading (it registers the name {path!r})"
        else:
            how = f"tp.register_function(func, name={path!r}) before loading"
        raise UntrustedCodeError(
            f"the saved workflow names the {what} {path!r}, which is not registered in this process; loading a "
            f"saved workflow imports and runs nothing it names unless you opt in. If you trust it: {how}, or "
            f"load with Workflow.load(path, trusted=True) (CLI: --trusted), which imports the module it names",
            path)
    if ":" not in path:
        raise ValueError(f"{path!r} is not a registered {what} and not an import path 'module:qualname'; "
                         f"register it with tp.register_function(func, name={path!r})")
    return _import(path)


@contextlib.contextmanager
def load_policy(trusted: bool) -> Iterator[None]:
    """Within the block, :func:`resolve_function` imports only when ``trusted`` (used by the loader)."""
    token = _LOAD_TRUSTED.set(bool(trusted))
    try:
        yield
    finally:
        _LOAD_TRUSTED.reset(token)


__all__ = ["register_function", "registered_functions", "function_path", "resolve_function", "load_policy",
           "UntrustedCodeError"]
