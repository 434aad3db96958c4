"""ServingTransform: a fitted workflow applied to live requests, in microseconds, without dask or pandas."""
from __future__ import annotations

import difflib
import logging
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ..schema import ColumnSchema, Schema
from .nested import (check_elementwise, flat_schema, flatten_batch, flatten_row, flatten_value, nested_columns,
                     renest, row_lengths_outputs, value_depth)
from .columns import Col, ServingInputError, batch_column, kind_of, row_value
from .kernels import ServingBuildError, _Passthrough, check_servable, compile_kernel
from .stats import ServingStats

log = logging.getLogger(__name__)


class ServingTransform:
    """Apply a fitted workflow to one row or a small batch, with the offline transform's outputs.

    Built once from a fitted (or loaded) :class:`~tabprep.Workflow`: every op is compiled into
    a kernel holding precomputed lookup tables (vocabularies as hash tables, means and stds as
    floats), so a call runs no dask, no pandas, and no per-call setup. The object is immutable
    after construction and safe to call from many threads at once.

    Args:
        workflow: a fitted workflow (``Workflow.load(path)`` or after ``fit``).
        outputs: output columns to compute (default: all of the workflow's outputs, less
            ``exclude``). Only the raw columns these need must be in a request.
        exclude: output columns not to compute, typically the label, which a live request does
            not carry (``exclude=["label"]``).
        stats: (default False; ~1 us more at the one-row p50, the rows counted in batches of 256) keep live skew counters in :attr:`stats` (a :class:`~tabprep.serving.stats.ServingStats`:
            per input column rows, nulls, OOV of Categorify columns, numbers outside the training
            range); ``False``: none.

    Raises:
        ServingBuildError: an op needed by the outputs cannot be applied to a request on its own
            (``Groupby``, ``DifferenceLag``, ``Filter``...) or has no serving kernel.

    Calling it (see :meth:`__call__`) returns ``{name: numpy array}``, equal to
    ``wf.transform(frame)`` of the same rows given in the fitted dtypes: the same ids, dtypes and
    float values. Scalar columns give arrays of ``n`` values (a
    ``numpy.ma.MaskedArray`` where an int, bool or string output holds nulls; float nulls are
    NaN); a list (multi-hot) column ``x`` gives ``x__values`` (flat elements) and ``x__nnzs``
    (int64 row lengths), the loader's layout. Request values are checked against the saved
    input schema (see :mod:`tabprep.serving.columns`).

    Example:
        >>> st = ServingTransform(tp.Workflow.load("wf/"), exclude=["label"])
        >>> st({"C1": 123, "I1": 4.0, ...})                 # one row
        >>> st({"C1": [123, 7], "I1": [4.0, None], ...})   # a batch
    """

    def __init__(self, workflow: Any, outputs: Optional[Sequence[str]] = None, exclude: Sequence[str] = (),
                 stats: bool = False) -> None:
        wf = workflow
        wf._require_fitted()
        if wf.input_schema is None:
            raise RuntimeError("the workflow has no input schema: fit it, or load a saved one")
        all_out = list(wf.output_columns)
        unknown = [c for c in list(outputs or []) + list(exclude) if c not in all_out]
        if unknown:
            raise KeyError(f"{unknown} are not output columns of the workflow; outputs are {all_out}")
        wanted = [c for c in (outputs if outputs is not None else all_out) if c not in set(exclude)]
        if not wanted:
            raise ValueError("no output column left to serve")
        self.workflow = wf
        self.output_names: List[str] = wanted
        self.output_schema: Schema = wf.output_schema.select(wanted)
        # nested list columns run as one list of leaves per row (serving/nested.py); {} for flat workflows
        self._nested_in = nested_columns(wf.input_schema)
        self._nested_out = {c: d for c, d in nested_columns(self.output_schema).items() if c in self._nested_in}
        self._compile(wf, wanted)
        self.stats: Optional[ServingStats] = ServingStats.for_workflow(wf, self.input_names) if stats else None

    # -- compilation ---------------------------------------------------------------------------
    def _compile(self, wf: Any, wanted: List[str]) -> None:
        nodes = wf.nodes
        needed: Dict[int, set] = {id(n): set() for n in nodes}
        needed[id(wf.output_node)] = set(wanted)
        raw: List[str] = []
        for n in reversed(nodes):  # children before parents: push column demand upwards
            want = needed[id(n)]
            if not want:
                continue
            if n.kind == "concat":  # a column from several branches: the last one's (Node.concat_sources)
                for p, taken in zip(n.parents, n.concat_sources()):
                    needed[id(p)] |= want & set(taken)
            elif n.kind == "drop":
                needed[id(n.parents[0])] |= want
            elif n.kind == "op":
                check_servable(n.op, n.input_columns)
                inputs = set(n.input_columns)
                for p in n.parents:
                    needed[id(p)] |= inputs & set(p.output_columns)
                deps = n.op.dependencies()
                if deps:
                    raise ServingBuildError(f"cannot serve {n.op.label}: it reads raw columns {deps} beside its "
                                            f"inputs (serving has no kernel for that yet)")
        self._plan: List[Tuple[str, int, Any]] = []
        index = {id(n): i for i, n in enumerate(nodes)}
        schemas = {k: flat_schema(v) for k, v in wf._node_schemas.items()} if self._nested_in else wf._node_schemas
        for n in nodes:
            want = needed[id(n)]
            if not want:
                continue
            i = index[id(n)]
            if n.kind == "select":
                cols = [c for c in n.columns if c in want]
                for c in cols:
                    if c not in raw:
                        raw.append(c)
                self._plan.append(("select", i, cols))
            elif n.kind == "concat":
                self._plan.append(("concat", i, [index[id(p)] for p in n.parents if needed[id(p)]]))
            elif n.kind == "drop":
                self._plan.append(("drop", i, (index[id(n.parents[0])], [c for c in n.output_columns if c in want])))
            else:
                in_schema = Schema()
                for p in n.parents:
                    in_schema = in_schema + schemas[wf.node_id(p)]
                if self._nested_in:
                    check_elementwise(n.op, n.input_columns, wf._node_schemas[wf.node_id(n.parents[0])]
                                      if len(n.parents) == 1 else wf.input_schema)
                kernel = compile_kernel(n.op, n.input_columns, in_schema, schemas[wf.node_id(n)])
                self._plan.append(("op", i, ([index[id(p)] for p in n.parents], kernel)))
        self._out_index = index[id(wf.output_node)]
        self._row_plan = _fuse_elementwise(self._plan, self._out_index)
        self.input_names: List[str] = raw
        self.input_schema: Schema = wf.input_schema.select(raw)
        leaves = flat_schema(self.input_schema)   # nested columns: described by their leaves inside
        self._in_cols: List[Tuple[str, ColumnSchema, str]] = [(c, leaves[c], kind_of(leaves[c].dtype)) for c in raw]
        bad = [(c, s.dtype) for c, s, k in self._in_cols if k == "?"]
        if bad:
            raise ServingBuildError(f"cannot serve input columns of dtypes {bad} (ints, floats, bools, strings "
                                    f"and lists of them are supported)")
        self._list_inputs = {c for c, s, _ in self._in_cols if s.is_list}
        self._outputs = [(c.name, c, np.dtype("O") if c.dtype == "str" else np.dtype(c.dtype))
                         for c in flat_schema(self.output_schema)]
        # one-row fast path: values whose Python type is exactly the fitted kind's need no check
        self._fast_types = [(c, {"i": int, "s": str, "f": float if s.dtype == "float64" else None,
                                 "b": bool}.get(k) if not s.is_list else None, s, k) for c, s, k in self._in_cols]
        # one-row outputs: one numpy array per output dtype, sliced into per-column views
        groups: Dict[Any, List[str]] = {}
        for name, col, dt in self._outputs:
            if not col.is_list:
                groups.setdefault(dt, []).append(name)
        self._row_groups = list(groups.items())
        self._row_lists = [(name, dt) for name, col, dt in self._outputs if col.is_list]
        self._result_names = [k for name, col, _ in self._outputs
                              for k in ((f"{name}__values", f"{name}__nnzs") if col.is_list else (name,))]
        # the groups' concatenation is often already the output order: no reordering dict then
        self._row_ordered = not self._row_lists and [n for _, names in self._row_groups
                                                      for n in names] == self._result_names
        # the flat row plan: when every output is its input column through element-wise ops (the
        # Criteo workflow), one loop over (output, input, functions) replaces the per-node dicts
        flat = _flatten(self._plan, self._out_index, [name for name, _, _ in self._outputs])
        lists = self._list_inputs
        kinds = {c: k for c, _, k in self._in_cols}
        self._flat_row = None
        if flat is not None:
            self._flat_row = []
            budget = _MEMO_TOTAL
            for name, src, fns in flat:
                table, default = _direct(fns)
                if table is None and fns and kinds[src] == "i" and src not in lists and budget >= _MEMO_INTS:
                    table = _memo(fns)
                    default = None if table is None else _MISS
                    budget -= _MEMO_INTS
                self._flat_row.append((name, src, table, default, fns[0] if len(fns) == 1 else None, fns,
                                       src in lists))

    # -- running ----------------------------------------------------------------------------------
    def _run(self, env_inputs: Dict[str, Any], row: bool) -> Dict[str, Any]:
        env: Dict[int, Dict[str, Any]] = {}
        for kind, i, arg in (self._row_plan if row else self._plan):
            if kind == "fused":  # a chain of element-wise ops, one composed function per column
                src, fns, is_list = arg
                inp = env[src]
                out: Dict[str, Any] = {}
                for c, fn in fns:
                    v = inp[c]
                    if type(v) is list:
                        out[c] = [fn(x) for x in v]
                    elif v is None and c in is_list:
                        out[c] = None  # a null list row stays null
                    else:
                        out[c] = fn(v)
                env[i] = out
            elif kind == "select":
                env[i] = {c: env_inputs[c] for c in arg}
            elif kind == "concat":  # parents share no needed column (see the plan: Node.concat_sources)
                if len(arg) == 1:
                    env[i] = env[arg[0]]
                else:
                    merged: Dict[str, Any] = {}
                    for p in arg:
                        merged.update(env[p])
                    env[i] = merged
            elif kind == "drop":
                src = env[arg[0]]
                env[i] = {c: src[c] for c in arg[1] if c in src}
            else:
                parents, kernel = arg
                if len(parents) == 1:
                    inp = env[parents[0]]
                else:
                    inp = {}
                    for p in reversed(parents):  # the first parent holding a name wins, as offline
                        inp.update(env[p])
                env[i] = kernel.row(inp) if row else kernel.batch(inp)
        return env[self._out_index]

    def _missing(self, data: Mapping[str, Any]) -> None:
        missing = [c for c in self.input_names if c not in data]
        if missing:
            c = missing[0]
            close = difflib.get_close_matches(c, [str(k) for k in data], n=2, cutoff=0.6)
            hint = f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
            raise ServingInputError(f"column {c!r} is missing from the request{hint}; the workflow reads "
                                    f"{self.input_names}" + (f" (missing: {missing})" if len(missing) > 1 else ""), c)

    def transform_row(self, row: Mapping[str, Any], cast: bool = False) -> Dict[str, np.ndarray]:
        """One row given as ``{column: scalar}`` (a list for a list column): arrays of length 1."""
        return self._finish_row(self.row_values(row, cast))

    def row_values(self, row: Mapping[str, Any], cast: bool = False) -> Dict[str, Any]:
        """One row's outputs as Python scalars (lists for list columns; None or NaN for nulls)."""
        if type(row) is not dict and not isinstance(row, Mapping):
            raise ServingInputError(f"a row is an object of column -> value, got {type(row).__name__}")
        if self._nested_in:   # nested lists: leaves per row through the kernels, then the structure back
            flat_row, structures = flatten_row(row, self._nested_in)
            out = self._row_values(flat_row, cast)
            for c in self._nested_out:
                out[c] = renest(out[c], structures[c])
            return out
        return self._row_values(row, cast)

    def _row_values(self, row: Mapping[str, Any], cast: bool) -> Dict[str, Any]:
        vals = {}
        try:
            for c, fast, s, k in self._fast_types:
                v = row[c]
                if v is None or (type(v) is fast and (fast is not int or -_I64 <= v < _I64)):
                    vals[c] = v
                else:
                    vals[c] = row_value(s, v, cast, k)
        except KeyError:
            self._missing(row)
            raise
        if self.stats is not None:
            self.stats.observe_row(vals)
        flat = self._flat_row
        if flat is None:
            out = self._run(vals, row=True)
            return {name: out[name] for name, _, _ in self._outputs}
        res = {}
        for name, src, table, default, fn, fns, is_list in flat:
            v = vals[src]
            if table is not None and type(v) is not list:  # a Categorify id, or a memoized small int
                if v is None and is_list:
                    res[name] = None
                    continue
                x = table.get(v, default)
                if x is not _MISS:
                    res[name] = x
                    continue
            if fn is not None and type(v) is not list:
                res[name] = None if v is None and is_list else fn(v)
            elif type(v) is list:
                for f in fns:
                    v = [f(x) for x in v]
                res[name] = v
            elif v is None and is_list:
                res[name] = None  # a null list row stays null
            else:
                for f in fns:
                    v = f(v)
                res[name] = v
        return res

    def _finish_row(self, vals: Dict[str, Any]) -> Dict[str, np.ndarray]:
        if self._nested_out:   # nested outputs (from row_values): leaves, leaves per row, row lengths
            vals = dict(vals)
            extra: Dict[str, np.ndarray] = {}
            for c, depth in self._nested_out.items():
                vals[c], structure = flatten_value(c, vals[c], depth)
                extra.update(row_lengths_outputs(c, [structure]))
            res = self._finish_flat_row(vals)
            res.update(extra)
            return res
        return self._finish_flat_row(vals)

    def _finish_flat_row(self, vals: Dict[str, Any]) -> Dict[str, np.ndarray]:
        res: Dict[str, np.ndarray] = {}
        for dt, names in self._row_groups:
            arr = _masked([vals[n] for n in names], dt)
            res.update(zip(names, arr.reshape(-1, 1)))  # one length-1 view per column, made in C
        if self._row_ordered:
            return res
        for name, dt in self._row_lists:
            v = vals[name]
            if v is None:
                v = []
            res[f"{name}__values"] = _masked(list(v), dt)
            res[f"{name}__nnzs"] = np.array([len(v)], dtype=np.int64)
        return {name: res[name] for name in self._result_names}

    def transform_batch(self, columns: Any, cast: bool = False) -> Dict[str, np.ndarray]:
        """A batch given as ``{column: array or list}`` (list columns: a list of lists) or a pandas frame."""
        if hasattr(columns, "columns") and hasattr(columns, "dtypes"):  # a DataFrame: read the columns needed
            present = set(columns.columns)
            missing = [c for c in self.input_names if c not in present]
            if missing:
                self._missing(dict.fromkeys(columns.columns))
            data = {c: columns[c] for c in self.input_names}
        elif isinstance(columns, Mapping):
            data = columns
        else:
            raise ServingInputError(f"a batch is an object of column -> list of values (or a frame), "
                                    f"got {type(columns).__name__}")
        self._missing(data)
        structures: Dict[str, Any] = {}
        if self._nested_in:
            data, structures = flatten_batch({c: data[c] for c in self.input_names}, self._nested_in)
        cols = {}
        n = None
        for c, s, k in self._in_cols:
            col = batch_column(s, data[c], cast, k, n)
            rows = len(col.offsets) - 1 if col.is_list else len(col.values)
            if n is None:
                n = rows
            elif rows != n:
                raise ServingInputError(f"column {c!r} has {rows} rows but {self._in_cols[0][0]!r} has {n}", c)
            cols[c] = col
        if self.stats is not None:
            self.stats.observe_batch(cols, n or 0)
        out = self._run(cols, row=False)
        res: Dict[str, np.ndarray] = {}
        for name, col, dt in self._outputs:
            res.update(_finish_col(name, out[name], col, dt))
            if name in self._nested_out:
                res.update(row_lengths_outputs(name, structures[name]))
        return res

    def __call__(self, data: Any, cast: bool = False) -> Dict[str, np.ndarray]:
        """Transform one row (``{column: scalar}``), a batch (``{column: list/array}``) or a frame.

        A mapping is one row when its scalar columns hold scalars (and its list columns lists
        of scalars); use :meth:`transform_row` / :meth:`transform_batch` to say it explicitly.
        ``cast=True`` converts values of another kind (strings for an int column...) and
        refuses the lossy ones; by default they are refused.
        """
        if (type(data) is dict or isinstance(data, Mapping)) and self._is_row(data):
            return self._finish_row(self.row_values(data, cast))
        return self.transform_batch(data, cast=cast)

    def _is_row(self, data: Mapping[str, Any]) -> bool:
        for c, s, _ in self._in_cols:
            if c not in data:
                continue
            v = data[c]
            if c in self._nested_in:   # a row's value is nested as fitted; a batch's one level deeper
                return not hasattr(v, "to_numpy") and value_depth(v) <= self._nested_in[c]
            if not s.is_list:
                return not isinstance(v, (list, tuple, np.ndarray)) and not hasattr(v, "to_numpy")
            if isinstance(v, (list, tuple)) and v and all(isinstance(x, (list, tuple, np.ndarray)) or x is None
                                                          for x in v):
                return False
            if hasattr(v, "to_numpy") or (isinstance(v, np.ndarray) and v.dtype == object):
                return False
        return True

    def describe(self) -> Dict[str, Any]:
        """JSON-able input schema, output schema and embedding sizes (what ``GET /schema`` returns)."""
        from ..ops.embeddings import embedding_sizes_from_schema

        return {"input_schema": self.input_schema.to_dict(), "output_schema": self.output_schema.to_dict(),
                "embedding_sizes": {k: list(v) for k, v in embedding_sizes_from_schema(self.output_schema).items()}}


_I64 = 1 << 63


def _compose(f: Any, g: Any) -> Any:
    return lambda x: g(f(x))


def _fuse_elementwise(plan: List[Tuple[str, int, Any]], out_index: int) -> List[Tuple[str, int, Any]]:
    """The one-row plan: chains of element-wise kernels over the same columns (``FillMissing >> Clip
    >> LogOp >> Normalize``) become one step applying one composed function per column, which saves
    a dict and a loop per op. A node is fused into its parent only when nothing else reads the parent."""
    readers: Dict[int, int] = {out_index: 1}
    for kind, _, arg in plan:
        parents = arg if kind == "concat" else [arg[0]] if kind == "drop" else arg[0] if kind == "op" else []
        for p in parents:
            readers[p] = readers.get(p, 0) + 1
    out: List[Tuple[str, int, Any]] = []
    for step in plan:
        kind, i, arg = step
        kernel = arg[1] if kind == "op" else None
        fns = getattr(kernel, "_fns", None)
        if fns is None or len(arg[0]) != 1 or list(kernel.outputs) != list(kernel.columns):
            out.append(step)
            continue
        src = arg[0][0]
        is_list = {c for c in kernel.columns if kernel.is_list[c]}
        prev = out[-1] if out else None
        if prev is not None and prev[0] == "fused" and prev[1] == src and readers.get(src) == 1 \
                and [c for c, _ in prev[2][1]] == [c for c, _ in fns]:
            composed = [(c, _compose(f, g)) for (c, f), (_, g) in zip(prev[2][1], fns)]
            out[-1] = ("fused", i, (prev[2][0], composed, prev[2][2]))
        else:
            out.append(("fused", i, (src, list(fns), is_list)))
    return out


#: the one-row outputs of int columns are precomputed for the values 0.._MEMO_INTS-1 (counts mostly
#: are small), by calling the column's own functions: the same results, one dict probe instead of
#: a call per op; at most _MEMO_TOTAL values in all (~1 us each to build, ~30 bytes each to hold)
_MEMO_INTS = 1 << 12
_MEMO_TOTAL = 1 << 18
_MISS = object()


def _memo(fns: Tuple[Any, ...]) -> Optional[Dict[Any, Any]]:
    """``{v: fns applied to v}`` for None and 0.._MEMO_INTS-1; None if a function refuses a value."""
    memo = {}
    for v in [None, *range(_MEMO_INTS)]:
        x = v
        try:
            for f in fns:
                x = f(x)
        except Exception:  # noqa: BLE001 - no memo then: the call raises as it would have
            return None
        memo[v] = x
    return memo


def _direct(fns: Tuple[Any, ...]) -> Tuple[Any, Any]:
    """``(dict, default)`` when the one function is ``dict.get(value, default)`` (see _Categorify)."""
    return getattr(fns[0], "direct", (None, None)) if len(fns) == 1 else (None, None)


def _flatten(plan: List[Tuple[str, int, Any]], out_index: int,
             outputs: List[str]) -> Optional[List[Tuple[str, str, Tuple[Any, ...]]]]:
    """``[(output, input column, element functions in order)]`` when every output is one input column
    mapped by element-wise kernels (renamed, selected, merged on the way), else None.

    Runs the one-row plan on symbols: each node's columns are ``(input column, functions so far)``."""
    env: Dict[int, Dict[str, Tuple[str, Tuple[Any, ...]]]] = {}
    for kind, i, arg in plan:
        if kind == "select":
            env[i] = {c: (c, ()) for c in arg}
        elif kind == "fused":
            src, fns, _ = arg
            inp = env[src]
            env[i] = {c: (inp[c][0], inp[c][1] + (fn,)) for c, fn in fns}
        elif kind == "concat":
            merged: Dict[str, Tuple[str, Tuple[Any, ...]]] = {}
            for p in arg:
                merged.update(env[p])
            env[i] = merged
        elif kind == "drop":
            src_env = env[arg[0]]
            env[i] = {c: src_env[c] for c in arg[1] if c in src_env}
        else:
            parents, kernel = arg
            inp = {}
            for p in reversed(parents):  # the first parent holding a name wins, as in _run
                inp.update(env[p])
            fns = getattr(kernel, "_fns", None)
            if fns is not None and list(kernel.outputs) == list(kernel.columns):
                env[i] = {c: (inp[c][0], inp[c][1] + (fn,)) for c, fn in fns}
            elif type(kernel).row is _Passthrough.row:
                env[i] = {dst: inp[src] for src, dst in kernel.pairs}
            else:
                return None
    final = env[out_index]
    return [(name, final[name][0], final[name][1]) for name in outputs]


def _masked(vals: List[Any], dt: np.dtype) -> np.ndarray:
    """An array of ``dt`` from Python scalars; None -> NaN (floats) or a masked entry."""
    if dt.kind == "f":
        return np.array([np.nan if v is None else v for v in vals], dtype=dt)
    if dt.kind == "O":
        return np.array(vals, dtype=object) if vals else np.zeros(0, dtype=object)
    if None in vals:
        mask = np.array([v is None for v in vals], dtype=bool)
        return np.ma.MaskedArray(np.array([0 if v is None else v for v in vals], dtype=dt), mask=mask)
    return np.array(vals, dtype=dt)


def _finish_col(name: str, col: Col, schema: ColumnSchema, dt: np.dtype) -> Dict[str, np.ndarray]:
    values = col.values
    if dt.kind == "O":
        out = values.astype(object)
    else:
        out = values.astype(dt, copy=False)
    if dt.kind != "f" and col.mask is not None and col.mask.any():
        out = np.ma.MaskedArray(out, mask=col.mask)
    elif dt.kind == "f" and col.mask is not None and col.mask.any():
        out = out.copy()
        out[col.mask] = np.nan
    if col.is_list:
        return {f"{name}__values": out, f"{name}__nnzs": np.diff(col.offsets)}
    if schema.is_list:
        raise ServingBuildError(f"output {name!r} should be a list column")  # pragma: no cover - schema drift
    return {name: out}
