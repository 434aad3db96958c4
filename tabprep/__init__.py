"""tabprep: tabular data preparation for deep learning and recommender systems.

>>> import tabprep as tp
>>> from tabprep import ops
>>> wf = tp.Workflow((["C1"] >> ops.Categorify()) + ["label"])

The public names are imported on first use (PEP 562), so that ``import tabprep`` (and with it
``tabprep --help``, whose package this is) costs no pandas, pyarrow or dask until a name that
needs them is used. ``from tabprep import Workflow`` and ``tp.Workflow`` work as with eager imports.
"""
from __future__ import annotations

import importlib
from typing import Any, Dict, List

from ._version import __version__

#: public name -> the module defining it; a new public name is added here (and to __all__)
_LAZY: Dict[str, str] = {
    "ops": "tabprep.ops",
    "Transaction": "tabprep.io.commit",
    "Dataset": "tabprep.io.dataset",
    "get_embedding_sizes": "tabprep.ops.embeddings",
    "UntrustedCodeError": "tabprep.registry",
    "NVTabularDifferenceWarning": "tabprep._warn",
    "register_function": "tabprep.registry",
    "ColumnSchema": "tabprep.schema",
    "Schema": "tabprep.schema",
    "Tags": "tabprep.schema",
    "ColumnSelector": "tabprep.schema",
    "Shape": "tabprep.schema",
    "Dimension": "tabprep.schema",
    "Subgraph": "tabprep.ops.node",
    "profile": "tabprep.quality",
    "drift": "tabprep.quality",
    "Profile": "tabprep.quality",
    "DriftReport": "tabprep.quality",
    "Workflow": "tabprep.workflow",
    "ServingTransform": "tabprep.serving",  # numpy only; the HTTP server and Keras export import lazily
}

__all__ = ["Dataset", "Transaction", "Workflow", "ops", "Schema", "ColumnSchema", "ColumnSelector", "Subgraph", "Tags",
           "Shape", "Dimension",
           "get_embedding_sizes", "register_function", "UntrustedCodeError", "ServingTransform", "__version__",
           "profile", "drift", "Profile", "DriftReport", "NVTabularDifferenceWarning"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        # a subpackage used as an attribute (tp.workflow, tp.backend), as the eager imports allowed
        if name.startswith("_"):
            raise AttributeError(f"module 'tabprep' has no attribute {name!r}")
        try:
            value = importlib.import_module(f"tabprep.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"tabprep.{name}":
                raise
            raise AttributeError(f"module 'tabprep' has no attribute {name!r}") from None
        globals()[name] = value
        return value
    mod = importlib.import_module(module)
    value = mod if module == f"tabprep.{name}" else getattr(mod, name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_LAZY))
