"""Per-type dispatch registries, after :class:`dask.utils.Dispatch`.

A :class:`Dispatch` maps the type of its first argument to an implementation. pandas and
numpy implementations are registered eagerly; cuDF and cupy ones *lazily*: a loader is
registered under the top-level module name (``"cudf"``, ``"cupy"``, ``"dask_cudf"``) and runs
the first time an object of that library is seen, so importing tabprep never imports cuDF.

A call costs one dict lookup on ``type(arg)`` (the result of the MRO walk is cached per type),
so dispatch is cheaper than the ``type(obj).__module__`` string tests it replaces.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Dict, Optional, Tuple, Type, Union

__all__ = ["Dispatch", "register_gpu_lazy"]

#: the top-level modules of the GPU backend's types (what :func:`tabprep.backend.is_gpu` tests)
GPU_MODULES = ("cudf", "dask_cudf", "cupy")

#: held by a lookup that misses the cache, lazy loading included: a thread meeting a cuDF type
#: while another thread's lazy loader imports the GPU backend (seconds) waits for its
#: registrations, where it found no loader left and no registration yet, took the ``object``
#: fallback and cached it for that type for good (re-entrant: a loader's import may dispatch)
_LOOKUP = threading.RLock()


class Dispatch:
    """Single dispatch on the type of the first argument.

    ``register(types)`` registers an implementation for a type (or tuple of types);
    ``register_lazy(toplevel, loader)`` defers registration until an object whose type lives
    in module ``toplevel`` is seen: ``loader()`` must register the implementations.
    """

    def __init__(self, name: str, doc: Optional[str] = None) -> None:
        self.__name__ = name
        self.__doc__ = doc
        self._lookup: Dict[type, Callable] = {}
        self._lazy: Dict[str, Callable[[], None]] = {}
        self._modules: Dict[str, Callable] = {}

    def register(self, types: Union[Type, Tuple[Type, ...]], func: Optional[Callable] = None):
        def wrapper(f: Callable) -> Callable:
            for t in (types if isinstance(types, tuple) else (types,)):
                self._lookup[t] = f
            return f

        return wrapper(func) if func is not None else wrapper

    def register_module(self, toplevels: Union[str, Tuple[str, ...]], func: Callable) -> Callable:
        """Register ``func`` for every type defined in the top-level module(s) ``toplevels``
        (e.g. every cuDF class: Series, DataFrame, Index, RangeIndex...)."""
        for top in (toplevels if isinstance(toplevels, tuple) else (toplevels,)):
            self._modules[top] = func
        return func

    def register_lazy(self, toplevel: str, loader: Callable[[], None]) -> None:
        self._lazy[toplevel] = loader

    def dispatch(self, cls: type) -> Callable:
        """The implementation for ``cls`` (walks the MRO; runs a lazy loader when needed)."""
        lookup = self._lookup
        try:
            return lookup[cls]
        except KeyError:
            pass
        with _LOOKUP:
            for base in cls.__mro__:
                impl = lookup.get(base)
                if impl is None:
                    toplevel = (base.__module__ or "").partition(".")[0]
                    if toplevel in self._lazy:
                        self._lazy.pop(toplevel)()
                        return self.dispatch(cls)
                    impl = self._modules.get(toplevel)
                if impl is not None:
                    lookup[cls] = impl  # cache: the next call is one dict lookup
                    return impl
        raise TypeError(f"tabprep.backend.{self.__name__}: no implementation for objects of type "
                        f"{cls.__module__}.{cls.__qualname__}")

    def __call__(self, arg: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            impl = self._lookup[type(arg)]
        except KeyError:
            impl = self.dispatch(type(arg))
        return impl(arg, *args, **kwargs)

    def __repr__(self) -> str:
        return f"<tabprep.backend dispatch {self.__name__}>"


def register_gpu(dispatcher: Dispatch) -> Callable[[Callable], Callable]:
    """Decorator of the cuDF/cupy modules (``gpu.py``, ``gpu_*.py``): register the function as
    ``dispatcher``'s implementation for every type of the :data:`GPU_MODULES` libraries."""
    def wrapper(func: Callable) -> Callable:
        return dispatcher.register_module(GPU_MODULES, func)

    return wrapper


def _load_gpu() -> None:
    from . import gpu  # noqa: F401 - importing registers the cuDF/cupy implementations


def register_gpu_lazy(*dispatchers: Dispatch) -> None:
    """Register the cuDF/cupy implementations of ``dispatchers`` lazily (``tabprep.backend.gpu``)."""
    for d in dispatchers:
        for mod in GPU_MODULES:
            d.register_lazy(mod, _load_gpu)
