"""tabprep.backend's dispatch registries: per-type lookup, lazy registration of the GPU
libraries, and importing tabprep without importing cuDF / cupy."""
import subprocess
import sys
import types

import numpy as np
import pandas as pd
import pytest

from tabprep import backend
from tabprep.backend.dispatch import Dispatch


def _fake_library(name):
    """A module ``name`` holding one class whose ``__module__`` is ``name.core``."""
    mod = types.ModuleType(name)
    cls = type("Series", (), {"__module__": f"{name}.core"})
    mod.Series = cls
    return mod, cls


def test_dispatch_by_type_mro_and_cache():
    d = Dispatch("probe")
    d.register(object, lambda x: "object")
    d.register(pd.Series, lambda x: "series")

    class MySeries(pd.Series):
        pass

    assert d(pd.Series([1])) == "series"
    assert d(MySeries([1])) == "series"  # found through the MRO...
    assert MySeries in d._lookup  # ...and cached: the next call is one dict lookup
    assert d(np.arange(3)) == "object"
    assert d(pd.Series([1]), ) == "series"


def test_dispatch_without_implementation_names_the_type():
    d = Dispatch("probe")
    d.register(pd.Series, lambda x: 1)
    with pytest.raises(TypeError, match="probe.*numpy.ndarray"):
        d(np.arange(2))


def test_lazy_registration_runs_once_on_first_object_of_the_library():
    _, cls = _fake_library("fakegpulib")
    calls = []
    d = Dispatch("probe")
    d.register(object, lambda x: "cpu")

    def load():
        calls.append(1)
        d.register_module("fakegpulib", lambda x: "gpu")

    d.register_lazy("fakegpulib", load)
    assert d(pd.Series([1])) == "cpu"
    assert calls == []  # a pandas object does not load the GPU implementations
    assert d(cls()) == "gpu"  # not the object fallback: the lazy loader ran first
    assert d(cls()) == "gpu"
    assert calls == [1]


def test_a_thread_meeting_the_library_while_another_loads_it_waits_for_the_registration():
    """Two threads meet a cuDF-like type at once (the first partitions on two GPU threads): the
    one that finds the lazy loader already running (importing cuDF takes seconds) waits for the
    registration; before, it took the ``object`` fallback and cached it for that type for good."""
    import threading

    _, cls = _fake_library("fakegpulib2")
    d = Dispatch("probe")
    d.register(object, lambda x: "cpu")
    started, release = threading.Event(), threading.Event()

    def load():   # an import taking its time
        started.set()
        assert release.wait(10)
        d.register_module("fakegpulib2", lambda x: "gpu")

    d.register_lazy("fakegpulib2", load)
    got = {}
    first = threading.Thread(target=lambda: got.__setitem__("first", d(cls())))
    first.start()
    assert started.wait(10)
    second = threading.Thread(target=lambda: got.__setitem__("second", d(cls())))
    second.start()
    second.join(0.3)
    waited = second.is_alive()
    release.set()
    assert waited, f"the second thread did not wait for the loader: {got}"
    first.join(10)
    second.join(10)
    assert got == {"first": "gpu", "second": "gpu"}
    assert d(cls()) == "gpu"


def test_module_registration_covers_every_class_of_the_library():
    _, cls = _fake_library("fakegpulib2")
    other = type("RangeIndex", (), {"__module__": "fakegpulib2.index"})
    d = Dispatch("probe")
    d.register(object, lambda x: "cpu")
    d.register_module("fakegpulib2", lambda x: "gpu")
    assert d(cls()) == d(other()) == "gpu"


def test_every_gpu_dispatcher_is_registered_lazily():
    """Each dispatcher with a GPU implementation must load tabprep.backend.gpu on the first
    cuDF / cupy object; a missing registration would send cuDF objects to the pandas code."""
    import inspect
    import re
    from pathlib import Path

    # gpu.py and its parts (gpu_lists.py, gpu_reductions.py): each part that registers anything must
    # be imported by gpu.py, the module the lazy loaders import, or its registrations never happen
    here = Path(inspect.getsourcefile(backend)).parent
    gpu_src = (here / "gpu.py").read_text()
    parts = {p.stem: p.read_text() for p in here.glob("gpu_*.py")}
    registering = {name for name, text in parts.items()
                   if "@_register(" in text or "register_module(GPU_MODULES" in text}
    assert {"gpu_lists", "gpu_reductions"} <= registering
    imported = set(re.findall(r"^from \. import ([\w, ]+)", gpu_src, re.M))
    imported = {m.strip() for line in imported for m in line.split(",")}
    assert registering <= imported, f"gpu.py does not import {sorted(registering - imported)}"
    src = gpu_src + "".join(parts[name] for name in sorted(registering))

    registered = set(re.findall(r"@_register\((\w+)\.(\w+)\)", src))
    registered |= set(re.findall(r"(\w)\.(\w+)\.register_module\(GPU_MODULES", src))
    mods = {"A": backend.arrays, "C": backend.columns, "F": backend.frames, "L": backend.lists, "K": backend.lookup,
            "P": backend.parquet, "R": backend.reductions}
    assert len(registered) > 30
    for alias, name in registered:
        d = getattr(mods[alias], name)
        assert isinstance(d, Dispatch), name
        assert set(d._lazy) >= {"cudf", "cupy", "dask_cudf"} or d._modules, f"{name} is not registered lazily"
    # and the other way round: a dispatcher that loads the GPU module must get a GPU implementation
    # there (else cuDF objects would silently run the pandas code)
    with_gpu = {id(getattr(mods[alias], name)) for alias, name in registered}
    lazy = {d.__name__ for mod in mods.values() for d in vars(mod).values()
            if isinstance(d, Dispatch) and d._lazy and id(d) not in with_gpu}
    assert lazy == set()


def test_importing_tabprep_imports_no_gpu_library():
    code = ("import sys, tabprep, tabprep.ops, tabprep.loader, tabprep.io; "
            "import pandas as pd; from tabprep import backend; backend.isnull(pd.Series([1.0])); "
            "print(sorted(m for m in ('cudf', 'cupy', 'dask_cudf', 'rmm') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_old_backend_names_still_importable():
    for name in ("has_cudf", "resolve_cpu", "is_gpu", "frame_lib", "array_module", "to_numpy", "arrow_to_frame",
                 "make_frame", "release_memory", "GPU_THREADS", "compute_options", "use_rmm_pool",
                 "frame_to_arrow", "to_host", "from_host", "read_parquet_piece", "read_parquet_pieces",
                 "read_parquet_table", "tables_to_frame", "empty_frame_like", "concat_columns", "concat_rows",
                 "is_list_series", "is_string_series", "is_float_series", "isnull", "float_values", "int_values",
                 "int_data", "nullable_columns", "new_series", "set_nulls", "cast_keep_nulls", "murmur3",
                 "vocab_lookup", "index_of", "value_counts", "list_leaves", "list_from_leaves"):
        assert hasattr(backend, name), name
