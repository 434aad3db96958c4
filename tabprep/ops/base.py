"""Base classes of every op.

An op is a small scikit-learn-style class: ``__init__`` stores its parameters verbatim
(they are what ``get_params`` returns and what the saved spec holds), learned state lives
in attributes ending in ``_`` set by ``fit_finalize``, and ``transform`` is stateless.

Statistics follow dask's reduction pattern, so fitting is one streaming pass:

* ``fit_partial(columns, df)`` runs on each partition and returns a small partial result;
* ``fit_combine(partials)`` merges a list of partials (associative; applied as a tree);
* ``fit_finalize(columns, combined)`` turns the merged result into the learned state.
"""
from __future__ import annotations

import contextvars
import inspect
import json
import logging
import os
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .._util import whole
from .._warn import warn_difference, warn_once
from ..dtypes import float_out_dtype
from ..schema import ColumnSchema, Schema, Tags

log = logging.getLogger(__name__)

_REGISTRY: Dict[str, type] = {}
#: the package whose op classes register themselves (see Operator.__init_subclass__)
_OPS_PACKAGE = __name__.rpartition(".")[0]

#: set by the Workflow while it transforms the rows it was fitted on (see out_of_fold_mode)
_OUT_OF_FOLD: "contextvars.ContextVar[bool]" = contextvars.ContextVar("tabprep_out_of_fold", default=False)


def out_of_fold_mode() -> bool:
    """True while a workflow transforms its own training rows (``Workflow.fit_transform``,
    ``Workflow.transform(..., out_of_fold=True)``, and the fit passes of downstream ops).

    Ops that encode the target (TargetEncoding) then give each row a value computed without
    its own fold, so the encoding does not leak the row's label; otherwise they use
    statistics of all the fitted data.
    """
    return _OUT_OF_FOLD.get()


#: set by ``Workflow.load`` while ops load their saved state: (workflow.json's path, the files
#: whose checksums it verified, or None for a folder saved without checksums)
_LOADING: "contextvars.ContextVar[Optional[tuple]]" = contextvars.ContextVar("tabprep_loading_state", default=None)


def linked_stats_path(root: Path, path: Path) -> bool:
    """Whether ``path`` (a saved workflow's ``stats/`` folder or a file under it; the workflow in
    ``root``) is a symbolic link or lies under one, ``stats/`` itself included: its real path is not
    under ``root``'s real ``stats/``, where the save wrote plain files."""
    stats = os.path.join(os.path.realpath(root), "stats")
    return path.is_symlink() or os.path.commonpath([stats, os.path.realpath(path)]) != stats


def state_file(op: "Operator", folder: Path, name: Any) -> Path:
    """The file ``name`` of ``op``'s saved state in ``folder`` (its folder under ``stats/``).

    A saved workflow is data a user may have received: ``name`` must be a relative path that
    stays inside ``folder`` (no absolute path, ``..``, empty part or backslash) and, when
    ``Workflow.load`` verified the folder's checksums, one of the files they cover. Otherwise
    ``ValueError`` names workflow.json and the op: reading an outside or unverified file would
    let an edited workflow.json load anything.
    """
    loading = _LOADING.get()
    where = str(loading[0]) if loading else "the saved workflow"
    parts = name.split("/") if isinstance(name, str) else []
    bad = (not parts or name.startswith("/") or any(p in ("", ".", "..") or "\\" in p or "\x00" in p for p in parts))
    resolved = folder.joinpath(*parts) if not bad else None
    if not bad and loading is not None and loading[1] is not None and resolved not in loading[1]:
        bad = True
    # (format 1 folders have no checksums: a link is refused here too, for every file an op reads)
    if not bad and loading is not None and linked_stats_path(Path(loading[0]).parent, resolved):
        raise ValueError(f"{where}: the saved state of op {op.label} names {name!r}, which is a symbolic link or "
                         f"lies under one: a saved workflow's statistics are plain files under stats/; restore "
                         f"the folder or save the workflow again")
    if bad:
        raise ValueError(f"{where}: the saved state of op {op.label} names the file {name!r}, which is not a file of "
                         f"its own folder under stats/ covered by the recorded checksums (an absolute path, '..', or "
                         f"an unrecorded file); workflow.json was edited or damaged, refusing to read it. Restore the "
                         f"folder or save the workflow again")
    return resolved


def register(cls: type) -> type:
    """Class decorator: make an op loadable by name from saved workflows and spec files.

    tabprep's own ops (every op class defined in a module of :mod:`tabprep.ops`) register
    themselves when their module is imported; user ops opt in with ``@register`` (or
    ``class MyOp(Operator, register=True)``). An op that is not registered is saved and
    written to specs by its import path (``package.module:Class``) instead of its name.
    """
    _REGISTRY[cls.__name__] = cls
    return cls


def registered_ops() -> Dict[str, type]:
    """Name -> class of every registered op."""
    return dict(_REGISTRY)


class _OperatorType(type):
    """The class of op classes: ``["a"] >> ops.Categorify`` (a class, NVTabular's shorthand) is
    ``["a"] >> ops.Categorify()``."""

    def __rrshift__(cls, other: Any):
        from .node import as_node

        return as_node(other) >> cls


def _announce_nvtabular_api(cls: type) -> None:
    """Warn when a user's op class is written against NVTabular 23.08's op API (members tabprep
    never calls, or a ``col_selector`` it does not pass), naming tabprep's counterparts."""
    found = [m for m in ("column_mapping", "fit") if callable(cls.__dict__.get(m))]
    tr = cls.__dict__.get("transform")
    try:
        params = list(inspect.signature(tr).parameters) if callable(tr) else []
    except (TypeError, ValueError):
        params = []
    if len(params) >= 2 and params[1] == "col_selector":
        found.insert(0, "transform(col_selector, df)")
    if found:
        warn_difference(
            f"{cls.__name__} defines {', '.join(found)}: NVTabular 23.08's custom-op API, which tabprep does not "
            f"use. tabprep calls transform(columns, df) with a list of column names (no .names), names the "
            f"outputs with output_column_names(columns) (not column_mapping), types them with "
            f"column_schema(col), and fits a StatOperator with fit_partial / fit_combine / fit_finalize "
            f"(not fit(col_selector, ddf)); port the class as docs/migration.md ('Custom ops') shows and check "
            f"it with tabprep.testing.check_op", stacklevel=4)


class Operator(metaclass=_OperatorType):
    """A stateless transform of a group of columns.

    Subclasses override :meth:`transform` and, when they rename, add or retype columns,
    :meth:`output_column_names` and :meth:`column_schema`.

    The class attributes below are the whole contract the workflow graph, the fit/transform
    engine, serialization and the loaders read from an op; an op overrides the ones that differ
    (as class attributes, or per instance in ``__init__`` when they depend on a parameter).

    Subclassing registers the op by class name (see :func:`register`) when it is defined in a
    module of :mod:`tabprep.ops`; pass ``register=True`` / ``False`` in the class statement to
    decide explicitly (``class MyOp(Operator, register=True)``).
    """

    #: tags added to every output column (e.g. ``(Tags.CATEGORICAL,)``)
    output_tags: Sequence[str] = ()
    #: True when the op accepts list (multi-hot) columns element-wise; False: :meth:`check_input`
    #: refuses list columns with a clear error
    supports_lists: bool = False
    #: True when the op computes on numbers (ints, floats, bools, datetimes as counts): a string
    #: column is then refused at bind, naming it (issue #30), not at the first value it cannot convert
    numeric_input: bool = False
    #: True when the op only moves values (Rename, AddMetadata, Filter, LambdaOp's user code):
    #: struct / map / decimal / binary columns may then flow through it; other ops refuse them
    passes_opaque: bool = False
    #: nested list columns (``list<list<...>>``): ``False`` refuses them by name at bind time;
    #: ``"leaves"``: the op is element-wise on list leaves and the workflow runs it on one flat list
    #: of leaves per row, then rebuilds the nesting (null rows and null inner lists kept;
    #: :func:`tabprep.backend.on_leaves`); ``"native"``: the op handles nested columns itself
    supports_nested: Any = False
    #: True when the op may drop or reorder rows (Filter, Groupby, an inner JoinExternal): it must
    #: then see the whole merged frame, and loaders cannot plan exact batch counts ahead
    changes_rows: bool = False
    #: True when NVTabular 23.08's op of the same name gives its result a fresh index
    #: (``reset_index(drop=True)``: Filter, Dropna, JoinExternal): ``wf.transform(frame)`` then
    #: returns a fresh ``RangeIndex``, as NVTabular's (:attr:`Workflow.resets_index`)
    resets_index: bool = False
    #: True when the op treats ``[["a", "b"]]`` column groups of its selection as one unit (a shared
    #: vocabulary, a joint key, a cross); ``>>`` then hands it the groups in :attr:`input_groups`
    supports_groups: bool = False
    #: the column groups (lists of names) of the selection the op is applied to, set by ``>>`` for
    #: ops with :attr:`supports_groups` and restored from saved state; empty: every column alone.
    #: Ops that use it assign a fresh list per instance in ``__init__``.
    input_groups: Sequence[Sequence[str]] = ()
    #: ``{parameter: value}`` for parameters added to the op after workflow folders were saved
    #: without them, whose new default differs from what those folders were fitted with (a saved
    #: ``workflow.json`` lists every parameter, so an absent one means an older tabprep saved it).
    #: Loading a folder fills them in; a spec or ``Op()`` written by the user gets the new default.
    saved_defaults: Dict[str, Any] = {}
    #: set by ``>>`` once the instance is part of a graph: one instance belongs to one chain only,
    #: because it keeps its learned statistics
    _bound: bool = False

    def __init_subclass__(cls, register: Optional[bool] = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if register is None:  # tabprep's own ops: every public op class of a tabprep.ops module
            register = (cls.__module__.startswith(_OPS_PACKAGE + ".") and cls.__module__ != __name__
                        and not cls.__name__.startswith("_"))
        if register:
            _REGISTRY[cls.__name__] = cls
        if not cls.__module__.startswith(_OPS_PACKAGE + "."):
            _announce_nvtabular_api(cls)

    # -- graph sugar -------------------------------------------------------------
    def __rrshift__(self, other: Any):
        from .node import as_node

        return as_node(other) >> self

    def _precedence_error(self, other: Any):
        raise TypeError(f"cannot add {self.label} and {type(other).__name__}: '+' binds tighter than '>>', so "
                        f"`cols >> {self.label}() + other` adds the op itself. Write `(cols >> {self.label}()) + other`.")

    __add__ = _precedence_error
    __radd__ = _precedence_error

    # -- parameters (scikit-learn style) --------------------------------------------
    @classmethod
    def _param_names(cls) -> List[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values()
                if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]

    def get_params(self) -> Dict[str, Any]:
        """The ``__init__`` arguments, as stored verbatim on the instance."""
        return {name: getattr(self, name) for name in self._param_names()}

    @property
    def label(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"

    # -- columns ---------------------------------------------------------------
    def dependencies(self) -> List[str]:
        """Raw input columns this op reads besides its selected columns (e.g. a target)."""
        return []

    def output_column_names(self, columns: List[str]) -> List[str]:
        """Names of the output columns, in order, for the given input columns."""
        return list(columns)

    def column_schema(self, col: ColumnSchema) -> ColumnSchema:
        """Schema of the output column made from input column ``col`` (name unchanged)."""
        return col.with_(add_tags=self.output_tags)

    def compute_output_schema(self, input_schema: Schema, columns: List[str]) -> Schema:
        """Output schema for ``columns`` of ``input_schema``. Default: one output per input."""
        out = []
        names = self.output_column_names(columns)
        if len(names) != len(columns):
            raise NotImplementedError(f"{self.label} changes the number of columns and must override compute_output_schema")
        for src, dst in zip(columns, names):
            col = self.column_schema(input_schema[src])
            out.append(col.with_(name=dst) if dst != col.name else col)
        return Schema(out)

    def check_input(self, input_schema: Schema, columns: List[str]) -> None:
        """Raise a clear error when an input column cannot be handled (e.g. lists)."""
        from ..schema import opaque_column_fix

        for c in columns if not self.passes_opaque else ():  # structs, maps, decimals, binary (issue #30)
            fix = opaque_column_fix(input_schema[c].dtype) if c in input_schema else None
            if fix:
                raise TypeError(f"{self.label}: column {c!r} holds {input_schema[c].dtype} values, which tabprep's "
                                f"ops do not compute on (selected without an op, it passes through unchanged); {fix}")
        if self.numeric_input:
            strings = [c for c in columns if c in input_schema and input_schema[c].dtype == "str"]
            if strings:
                raise TypeError(f"{self.label} computes on numbers, but column(s) {strings} hold str (strings); "
                                f"encode them with Categorify / HashBucket, or convert them to numbers first "
                                f"(pd.to_numeric), or leave them out of {self.label}")
        if not self.supports_lists:
            lists = [c for c in columns if c in input_schema and input_schema[c].is_list]
            if lists:
                raise TypeError(f"{self.label} does not support list (multi-hot) columns, got {lists}; "
                                f"apply it to scalar columns only")

    # -- computation ----------------------------------------------------------------
    def transform(self, columns: List[str], df: Any) -> Any:
        """Return a frame of the output columns for the rows of ``df`` (same backend, same rows)."""
        raise NotImplementedError

    def column_kernel(self, column: str) -> Optional[Callable[[Any], Any]]:
        """An element-wise column kernel for ``column``, or None (the default: the workflow runs
        :meth:`transform`).

        An op whose output column ``c`` depends only on input column ``c``, row by row (same name,
        same rows), may return a function ``kernel(col) -> col`` on
        :class:`tabprep.backend.columns.ArrayColumn` (values + null mask: a ``HostColumn`` of numpy
        arrays for pandas frames, a ``DeviceColumn`` of CuPy arrays for cuDF frames) that computes
        exactly what :meth:`transform` computes for that column on that backend: same dtype, same
        bits. Write it once with the values' array module (``backend.array_module``) and
        ``col.like(...)`` for the output. It may overwrite ``col``'s arrays when ``col.owned``, and
        returns None when it cannot reproduce ``transform`` for this input (e.g. a dtype, or a
        column type, it does not handle): the workflow then runs ``transform`` on that column.
        The workflow fuses consecutive ops that have kernels into one pass per column (see
        :mod:`tabprep.workflow.fusion`); it is called once per partition (kernels may read fitted
        statistics). A subclass that overrides
        ``transform`` but not ``column_kernel`` gets no kernel (the base class's would be stale).
        """
        return None

    # -- persistence ------------------------------------------------------------
    def save_state(self, path: Path) -> Dict[str, Any]:
        """Write learned state under ``path`` (a directory of its own); return JSON-able metadata."""
        return {}

    def load_state(self, path: Path, meta: Dict[str, Any]) -> None:
        """Inverse of :meth:`save_state`."""

    def to_config(self) -> Dict[str, Any]:
        """JSON-able parameters for the saved spec (override when a parameter is not JSON)."""
        return _json_params(self.get_params(), self.label)

    def to_spec_config(self) -> Dict[str, Any]:
        """Parameters for a spec file, which carries no learned or saved state: :meth:`to_config`
        by default; raise ``ValueError`` when a parameter only survives in the saved state (an
        in-memory table), so that ``to_spec`` refuses instead of writing a spec that cannot work."""
        return self.to_config()

    @classmethod
    def from_config(cls, config: Dict[str, Any], allow_pickle: bool = False) -> "Operator":
        return cls(**config)

    @classmethod
    def files_named(cls, config: Dict[str, Any], has_state: bool) -> List[tuple]:
        """``(parameter, path)`` of the files an op built from ``config`` (a saved workflow's
        parameters; ``has_state``: its saved state is there) would read outside the saved folder:
        ``Workflow.load`` refuses them unless ``trusted=True``. A saved op holds what it read in its
        parameters or its state, so only an edited ``workflow.json`` names one. Default: none."""
        return []

    def state_for_workers(self, state: Dict[str, Any]) -> Dict[str, Any]:
        """The attribute dict (``state``, as pickled) of the copy of this op that dask.distributed
        workers receive to transform data and to fit later passes: leave out learned state that
        neither reads (it is sent once per worker, every fit pass and transform). Return a new
        dict; the op the user holds keeps everything. Default: all of it."""
        return state


class StatOperator(Operator):
    """An op that learns statistics in :meth:`Workflow.fit` before it can transform."""

    #: the learned statistics (JSON-able by default; vocabularies etc. override save/load_state);
    #: None until :meth:`fit_finalize` or :meth:`load_state`, and again after :meth:`clear`
    stats_: Any = None

    #: True when the statistics are independent per key (a column, or a column group): partials
    #: and merged partials are dicts by key, :meth:`fit_combine` merges any subset of the keys key
    #: by key, and :meth:`fit_finalize` of a subset sets ``stats_`` to that subset's dict (by key)
    #: and nothing that depends on the other keys. ``Workflow.fit`` then merges and finalizes an
    #: op's keys in parallel tasks (as dask's ``split_out``) and joins the ``stats_`` dicts in key
    #: order. ``check_op`` checks the claim ("keyed statistics"). A subclass that overrides
    #: ``fit_partial``, ``fit_combine`` or ``fit_finalize`` must declare it again to keep it.
    keyed_statistics: bool = False

    def fit_partial(self, columns: List[str], df: Any) -> Any:
        """Partial statistics of one partition (pandas or cuDF frame, possibly empty)."""
        raise NotImplementedError

    def fit_partial_columns(self, columns: List[str], cols: Dict[str, Any]) -> Optional[Any]:
        """:meth:`fit_partial` of a partition given as host columns, or None (the default: the
        workflow converts the partition to pandas and calls :meth:`fit_partial`).

        ``cols`` maps each of ``columns`` to a :class:`tabprep.backend.columns.HostColumn` (numpy
        values + null mask; NaN is the null of floats), read from the partition's Arrow table or
        computed by the host kernels of the ops before this one (the CPU fit of parquet data, see
        :func:`tabprep.workflow.fusion.fit_table`). Return exactly what :meth:`fit_partial` returns
        for the pandas frame of those columns, or None for an input it does not reproduce (e.g. a
        dtype). A subclass that overrides ``fit_partial`` but not this method gets no host partial.
        """
        return None

    def fit_combine(self, partials: List[Any]) -> Any:
        """Merge partial statistics (associative, so it can run as a tree)."""
        raise NotImplementedError

    def fit_finalize(self, columns: List[str], combined: Any) -> None:
        """Turn merged statistics into learned attributes (names ending in ``_``).

        :meth:`Workflow.fit` calls it on a shallow copy of the op, where the partials are (a dask
        worker with a distributed client, a thread otherwise), and then sets on the op itself the
        attributes this method set, rebound or deleted. So assign attributes (``self.stats_ =
        ...``) rather than mutating objects the op already held, and keep what it sets picklable;
        side effects outside the op (files, globals) happen in the worker."""
        raise NotImplementedError

    def fit_warnings(self) -> List[str]:
        """Messages about the data just fitted where tabprep's result differs from NVTabular
        23.08's (docs/migration.md): :meth:`Workflow.fit` emits each as a ``UserWarning`` once per
        fit, on the client (a warning raised in ``fit_finalize`` would stay on a dask worker).
        Default: the list ``fit_finalize`` stored in ``fit_notes_`` (none)."""
        return list(getattr(self, "fit_notes_", None) or [])

    @property
    def fitted(self) -> bool:
        return self.stats_ is not None

    def clear(self) -> None:
        """Forget learned state (before a re-fit)."""
        self.stats_ = None

    def _require_fitted(self) -> None:
        if not self.fitted:
            raise RuntimeError(f"{self.label} is not fitted: call workflow.fit(dataset) before transform")

    # JSON statistics are enough for most stat ops; big ones (vocabularies) override.
    def save_state(self, path: Path) -> Dict[str, Any]:
        return {"stats": _json_params(self.stats_, self.label)}

    #: fields each column's entry in a JSON ``stats_`` must hold when loaded ({column: {field: number}})
    state_fields: Tuple[str, ...] = ()

    def load_state(self, path: Path, meta: Dict[str, Any]) -> None:
        self.stats_ = meta.get("stats")
        self.check_state()

    def check_state(self) -> None:
        """``TypeError`` naming the op, the column and the field unless the loaded JSON ``stats_`` is
        one a fit can write (:mod:`._saved_state`); default: the ``state_fields``."""
        from ._saved_state import check_state_fields
        check_state_fields(self.label, self.stats_, self.state_fields)

    def state_columns(self, columns: List[str]) -> List[str]:
        """Those of the transformed ``columns`` a loaded ``stats_`` must hold (checked ops: all)."""
        return list(columns) if self.state_fields else []


def _json_params(params: Any, label: str) -> Any:
    params = _native(params)
    try:
        json.dumps(params)
    except TypeError as exc:
        raise TypeError(f"{label}: parameters must be JSON-serializable to save the workflow ({exc}); "
                        f"override to_config/from_config for custom types") from None
    return params


def bucket_counts(label: str, num_buckets: Any) -> Any:
    """``num_buckets`` of a hashing op checked: an int >= 1 or a ``{column: int}`` dict of them
    (numpy ints and whole floats become ints); a bool, a fraction, a string or a count below 1 is
    a ``ValueError`` naming ``label`` (``HashBucket(num_buckets=2.5)`` hashed into 2 buckets, silently)."""
    if isinstance(num_buckets, dict):
        return {k: whole(f"{label}: num_buckets[{k!r}]", v, 1) for k, v in num_buckets.items()}
    return whole(f"{label}: num_buckets", num_buckets, 1)


def _native(value: Any) -> Any:
    """``value`` with numpy scalars as the Python numbers they equal (``np.float32(0.5)`` -> 0.5,
    exactly; ``np.int64(7)`` -> 7), in dicts, lists and tuples too: a bound computed with numpy
    (``np.percentile`` of a float32 array) saves as its value instead of failing to save."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {k: _native(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_native(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_native(v) for v in value)
    return value


def column_names_arg(value: Any, what: str, owner: Optional["Operator"] = None) -> Any:
    """An op argument that names columns beside the op's inputs, given as NVTabular allows: names,
    a node or a ColumnSelector (see :func:`tabprep.ops.node.raw_column_names`); names and lists of
    names are returned as given, the others as their list of names. A node computed by an op is
    recorded on ``owner`` (the op being built, ``self``), whose node then computes it first (a
    dependency edge); without ``owner`` such a node is refused."""
    if isinstance(value, str) or value is None:
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return value
    from .node import raw_column_names

    return raw_column_names(value, what, owner)


def tags_for(op: Operator) -> tuple:
    return tuple(op.output_tags)


__all__ = ["Operator", "StatOperator", "register", "registered_ops", "Tags"]


def group_keys(columns: List[str], input_groups: List[List[str]]) -> Dict[str, List[str]]:
    """Name -> columns of each category an op sees: a column alone, or a ``[["a", "b"]]`` group as ``"a_b"``.

    As NVTabular's ``ColumnSelector.grouped_names``: the columns not in a group (or also selected
    alone, recorded as a 1-name group by ``>>``) come first, in ``columns`` order, then the groups
    in the order written.
    """
    multi = [list(g) for g in input_groups if len(g) > 1]
    singled = {g[0] for g in input_groups if len(g) == 1}
    grouped = {c for g in multi for c in g}
    keys: Dict[str, List[str]] = {}
    for c in columns:
        if c not in grouped or c in singled:
            keys.setdefault(c, [c])
    for g in multi:
        if not any(c in columns for c in g):
            continue
        name = "_".join(g)
        if name in keys and keys[name] != g:
            raise ValueError(f"the column group {g} is named {name!r}, which is also a selected column; rename the "
                             f"column (ops.Rename) or drop one of the two from the selection")
        keys.setdefault(name, g)
    return keys


def singled_in_groups(input_groups: List[List[str]]) -> List[str]:
    """Columns selected alone and also inside a multi-column group (``["a", ["a", "b"]]``)."""
    grouped = {c for g in input_groups if len(g) > 1 for c in g}
    return [g[0] for g in input_groups if len(g) == 1 and g[0] in grouped]


def map_elements(series: Any, fn: Any, dtype: Optional[str] = None) -> Any:
    """Apply ``fn(scalar_series) -> array`` to a scalar column, or element-wise to a list column.

    The result keeps the series' name, index and backend; list columns keep their row lengths.
    """
    from .. import backend

    if backend.is_list_series(series):
        leaves, offsets = backend.list_leaves(series)
        values = fn(leaves)
        if dtype is not None:
            values = values.astype(dtype)
        return backend.list_from_leaves(values, offsets, like=series)
    return backend.new_series(fn(series), like=series, dtype=dtype)


class FloatOutput:
    """The ``out_dtype`` argument of the ops whose output is a float column (``Normalize``,
    ``NormalizeMinMax``; NVTabular 23.08's ``out_dtype or numpy.float64``): a mixin placed before
    the op's base class, the op's ``__init__`` storing ``out_dtype`` verbatim."""

    out_dtype: Any = None
    #: the value of a parameter that a workflow folder saved by an older tabprep lacks: those
    #: folders were fitted with float32 output (tabprep had no out_dtype), so they keep it
    saved_defaults = {"out_dtype": "float32"}

    @property
    def output_dtype(self) -> str:
        """The output dtype's name, ``"float64"`` or ``"float32"`` (NVTabular's ``output_dtype``)."""
        return float_out_dtype(self.out_dtype, type(self).__name__)

    def to_config(self) -> Dict[str, Any]:
        # a numpy type (np.float32) is saved by its name; None stays None (the default, float64)
        return {"out_dtype": None if self.out_dtype is None else self.output_dtype}


def infinite_note(label: str, columns: List[str], statistics: str) -> str:
    """The fit's note for columns holding +-inf: tabprep's statistics leave them out, NVTabular
    23.08's count them (docs/migration.md, "Non-finite values in statistics")."""
    return (f"{label}: column(s) {sorted(columns)} hold +-inf; tabprep leaves them out of the fitted {statistics} "
            f"(an infinite value stays +-inf at transform), where NVTabular 23.08 counts them, so one infinite "
            f"value makes its outputs inf or NaN (docs/migration.md, 'Non-finite values in statistics'). Bound "
            f"them with Clip (or replace them) before {label} to get the same numbers from both.")


def note_hash_ids(label: str, stacklevel: int = 3) -> None:
    """Once per process and op, when a graph is built (not when a saved one is loaded): tabprep's
    hashed ids are murmur3 on every backend, NVTabular 23.08's are not (docs/migration.md)."""
    warn_once(("hash ids", label),
              f"{label}: hashed ids are murmur3 hashes, the same on the CPU, the GPU and at serving time; NVTabular "
              f"23.08's differ (hash_pandas_object on the CPU, which also hashes the row's index, cuDF's murmur3 on "
              f"the GPU, XOR for crosses), so hashed ids and the embeddings trained on them do not carry over from "
              f"an NVTabular pipeline (docs/migration.md, 'Hash values'): retrain the hashed embeddings.",
              stacklevel=stacklevel, at_build=True)


# -- NVTabular 23.08's reduction and storage arguments of the grouped-statistics ops -------------------
# Categorify, TargetEncoding and JoinGroupby accept them as migrating pipelines pass them
# (``Categorify(freq_threshold=..., out_path=..., cat_cache="host", split_out=...)``). The knobs of
# NVTabular's dask reduction (cat_cache, on_host, split_out, split_every, tree_width,
# cardinality_memory_limit, search_sorted) are stored and change no id or value: tabprep's fit merges
# the statistics per key in its own tasks (StatOperator.keyed_statistics). out_path (where NVTabular
# writes its statistics files) warns: tabprep keeps them in the workflow. Another name_sep is an error.
def check_nvt_args(label: str, name_sep: Any = "_", out_path: Optional[Any] = None, hashed: bool = False) -> None:
    """Refuse what would silently differ (``name_sep``); warn at build for ``out_path``, and for
    hashed ids (``hashed``: :func:`note_hash_ids`)."""
    if hashed:
        note_hash_ids(label, stacklevel=4)
    if name_sep != "_":
        raise ValueError(f"{label}(name_sep={name_sep!r}): tabprep names column groups with '_' "
                         f"(NVTabular's default), e.g. 'a_b'; another name_sep is not supported. Keep "
                         f"name_sep='_' and rename the outputs with ops.Rename(f=...)")
    if out_path is not None:
        warn_difference(f"{label}(out_path={str(out_path)!r}): tabprep keeps the fitted statistics in the workflow "
                        f"and writes them with Workflow.save(path); nothing is written to out_path (NVTabular 23.08 "
                        f"writes its statistics files there).{_CATEGORIES if label == 'Categorify' else ''}",
                        stacklevel=3, at_build=True)


_CATEGORIES = (" op.categories writes NVTabular's unique.<column>.parquet files (values in id order) on demand "
               "and gives their paths")
