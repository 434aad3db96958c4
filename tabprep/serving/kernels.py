"""Serving kernels: per-op compiled transforms of a batch of numpy columns or of one row.

A kernel is compiled once per op node from the op's learned state (vocabularies, means...)
and the static schema of its input columns, so at request time it does no lookup of
parameters and no dtype dispatch. Every kernel has two paths that give identical results:

* ``batch(cols)``: ``{name: Col}`` -> ``{name: Col}``, vectorized numpy;
* ``row(vals)``: ``{name: value}`` -> ``{name: value}``, plain Python on scalars (a numpy call
  costs ~1 us of overhead, which dominates a one-row request).

Kernels are registered per op class (:func:`register_kernel`), exact class only: a subclass
of a built-in op may change its transform, so it needs its own kernel. Ops that cannot be
applied to a request in isolation are refused when the serving transform is built
(:data:`REFUSED`), as is any op without a kernel. The numeric ops' kernels are in
:mod:`tabprep.serving.numeric_kernels`.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List

import numpy as np

from ..hashing import mod_uint32
from ..ops import (AddMetadata, AddProperties, AddTags, Categorify, DataStats, DropLowCardinality, FillMedian,
                   FillMissing, HashBucket, HashedCross, Rename, ValueCount)
from ..ops._categorify_notes import NULL_ELEMENT_ID
from ..ops.categorify import combo_key
from ..ops.hashed_cross import hash_combine
from ..schema import Schema
from .columns import Col, kind_of
from .hashes import combine_scalar, hash_batch, hash_scalar
from .lookup import DICT_MAX, IntTable, ObjectTable, getter, make_table

_KERNELS: Dict[type, Callable[..., "Kernel"]] = {}

#: op class name -> why it cannot serve one request on its own
REFUSED = {
    "Groupby": "it aggregates rows into groups, so its output depends on the whole dataset, not on one request",
    "DifferenceLag": "it reads the previous rows of the same key, which a request does not hold",
    "Filter": "it drops rows, so a request could get fewer outputs than inputs; filter before serving",
    "LambdaOp": "it runs an arbitrary Python function on pandas frames, which serving cannot apply per request "
                "without pandas; express it with built-in ops or register a kernel for it",
    "JoinExternal": "serving has no kernel for side-table joins yet",
    "JoinGroupby": "serving has no kernel for per-category statistics yet",
    "TargetEncoding": "serving has no kernel for target encodings yet",
    "ListSlice": "serving has no kernel for list slicing yet",
}


class ServingBuildError(TypeError):
    """The workflow holds an op that cannot be served (see :data:`REFUSED`)."""


def register_kernel(op_cls: type) -> Callable[[Callable[..., "Kernel"]], Callable[..., "Kernel"]]:
    """Decorator: ``compile(op, columns, in_schema, out_schema) -> Kernel`` serves ``op_cls`` exactly."""
    def deco(fn: Callable[..., "Kernel"]) -> Callable[..., "Kernel"]:
        _KERNELS[op_cls] = fn
        return fn
    return deco


def check_servable(op: Any, columns: List[str]) -> None:
    """Raise :class:`ServingBuildError` saying why ``op`` cannot be served, if it cannot."""
    if type(op) not in _KERNELS:
        why = REFUSED.get(type(op).__name__, "it has no serving kernel")
        raise ServingBuildError(f"cannot serve {op.label} on columns {columns}: {why}. Remove it from the served "
                                f"outputs (ServingTransform(wf, exclude=[...])), or register a kernel with "
                                f"tabprep.serving.register_kernel({op.label})")


def compile_kernel(op: Any, columns: List[str], in_schema: Schema, out_schema: Schema) -> "Kernel":
    """The kernel of one op node, or :class:`ServingBuildError` saying why there is none."""
    check_servable(op, columns)
    kernel = _KERNELS[type(op)](op, columns, in_schema, out_schema)
    if type(kernel).scalar_fn is not Kernel.scalar_fn and kernel.elementwise:  # its functions, built before any call
        kernel._fns = [(c, kernel.scalar_fn(c)) for c in kernel.columns]
    return kernel


class Kernel:
    """Base: ``batch`` and ``row`` map input columns to output columns (names of ``out_schema``)."""

    #: False for a kernel whose class has a :meth:`scalar_fn` but whose instance cannot map each
    #: column on its own (a Categorify with combo groups)
    elementwise = True

    def __init__(self, op: Any, columns: List[str], in_schema: Schema, out_schema: Schema) -> None:
        self.op = op
        self.columns = list(columns)
        self.kinds = {c: kind_of(in_schema[c].dtype) for c in columns}
        self.is_list = {c: in_schema[c].is_list for c in columns}
        self.outputs = out_schema.column_names

    def batch(self, cols: Dict[str, Col]) -> Dict[str, Col]:
        raise NotImplementedError

    def scalar_fn(self, c: str) -> Callable[[Any], Any]:
        """Element-wise kernels: the function of one value of column ``c`` (None in, None out)."""
        raise NotImplementedError

    def row(self, vals: Dict[str, Any]) -> Dict[str, Any]:
        """Default for element-wise kernels: :meth:`scalar_fn` of each value (each element of a list)."""
        out = {}
        for c, fn in self._fns:  # set by compile_kernel: nothing is written during a call (thread safety)
            v = vals[c]
            if type(v) is list:
                out[c] = [fn(x) for x in v]
            elif v is None and self.is_list[c]:
                out[c] = None  # a null list row stays null
            else:
                out[c] = fn(v)
        return out


# -- schema-only and renaming ops ---------------------------------------------------------------
class _Passthrough(Kernel):
    """Columns unchanged, renamed positionally (Rename) or a subset kept (DropLowCardinality)."""

    def __init__(self, op: Any, columns: List[str], in_schema: Schema, out_schema: Schema) -> None:
        super().__init__(op, columns, in_schema, out_schema)
        names = op.output_column_names(columns)
        if len(names) == len(columns):
            self.pairs = list(zip(columns, names))
        else:
            self.pairs = [(n, n) for n in names]

    def batch(self, cols: Dict[str, Col]) -> Dict[str, Col]:
        return {dst: cols[src] for src, dst in self.pairs}

    def row(self, vals: Dict[str, Any]) -> Dict[str, Any]:
        return {dst: vals[src] for src, dst in self.pairs}


for _cls in (Rename, AddMetadata, AddTags, AddProperties, ValueCount, DropLowCardinality, DataStats):
    register_kernel(_cls)(_Passthrough)


# -- Categorify -----------------------------------------------------------------------------------
@register_kernel(Categorify)
class _Categorify(Kernel):
    def __init__(self, op: Categorify, columns: List[str], in_schema: Schema, out_schema: Schema) -> None:
        super().__init__(op, columns, in_schema, out_schema)
        op._require_fitted()
        keys = op._vocab_keys(columns)
        counts = {op.oov_buckets(k) for k in keys}
        if len(counts) > 1:  # the kernel holds one out-of-vocabulary count (self.B)
            raise ServingBuildError(f"cannot serve Categorify with different num_buckets per column "
                                    f"({ {k: op.oov_buckets(k) for k in keys} }) in one op: use one Categorify "
                                    f"per num_buckets value")
        self.B = counts.pop() if counts else op.num_oov_buckets
        self.base = 2 + self.B
        #: the first vocabulary id per vocabulary (single_table shifts each: Categorify.id_offset)
        self.base_of = {k: self.base + op.id_offset(k) for k in keys}
        self.jobs = []  # (output name, input columns, vocabulary key, combo?)
        self.tables: Dict[str, Any] = {}
        self.getters: Dict[str, Any] = {}
        for key, cols in op._vocab_keys(columns).items():
            values = np.asarray(op.stats_[key]["values"])
            combo = op.encode_type == "combo" and len(cols) > 1
            if combo:
                bad = [c for c in cols if self.kinds[c] not in "isb"]
                if bad:
                    raise ServingBuildError(f"cannot serve Categorify(encode_type='combo') of {cols}: the float "
                                            f"column(s) {bad} are keyed by pandas' float-to-string formatting")
                self.tables[key] = ObjectTable(values)
                self.jobs.append((key, cols, key, True))
                continue
            numeric_vocab = values.dtype.kind in "iub"
            if numeric_vocab and any(self.kinds[c] == "f" for c in cols):
                self.tables[key] = ObjectTable(values)  # float queries of an int vocabulary: compare by value
            else:
                self.tables[key] = make_table(values, index=False)  # ids_by_value below is its dict
            for c in cols:
                self.jobs.append((c, [c], key, False))
        # one row: a dict value -> id (None -> 1) per int vocabulary small enough, one probe per value
        self.ids_by_value: Dict[str, Dict[Any, int]] = {}
        for key, table in self.tables.items():
            if isinstance(table, IntTable) and table.size <= DICT_MAX:
                first = self.base_of[key]
                ids = dict(zip(_vocab_order(table).tolist(), range(first, first + table.size)))
                ids[None] = 1
                self.ids_by_value[key] = ids
        self.getters = {k: getter(t) for k, t in self.tables.items()}
        self.row_jobs = [(name, src[0], self.getters[key], self.tables[key], self.kinds[src[0]])
                         for name, src, key, combo in self.jobs if not combo]
        self.combo_format = op._combo_format
        # a null element of a list column gets the OOV id 2, a null scalar 1 (a null list row stays null)
        self.encoders = {name: self._encoder(key, self.kinds[src[0]], NULL_ELEMENT_ID if self.is_list[src[0]] else 1)
                         for name, src, key, combo in self.jobs if not combo}
        self.combo_jobs = [(name, src, self.tables[key]) for name, src, key, combo in self.jobs if combo]
        self.elementwise = not self.combo_jobs
        # batch: the columns of hashed int vocabularies are looked up into one array, and their ids
        # computed in one pass (26 Criteo columns: a few numpy calls in all instead of per column)
        self.hashed_jobs = [(name, src[0], self.tables[key]) for name, src, key, combo in self.jobs
                            if not combo and isinstance(self.tables[key], IntTable)
                            and self.tables[key].hashed is not None and self.base_of[key] == self.base]
        done = {name for name, _, _ in self.hashed_jobs}
        self.other_jobs = [job for job in self.jobs if job[0] not in done]

    def _encoder(self, key: str, kind: str, null_id: int = 1) -> Callable[[Any], int]:
        """One checked value (None: null, id ``null_id``: 1 for a scalar, 2 for a list element) -> its
        id. With ``.direct = (dict, default)`` when that is all it does: the flat row plan then probes
        the dict itself, with no call."""
        table, base, one = self.tables[key], self.base_of[key], self._one
        ids = self.ids_by_value.get(key)
        if ids is not None:
            if null_id != ids[None]:
                ids = {**ids, None: null_id}
            get = ids.get
            if self.B == 1:  # unseen -> 2
                def encode(x: Any) -> int:
                    return get(x, 2)

                encode.direct = (ids, 2)  # type: ignore[attr-defined]
                return encode

            oov = self._oov

            def encode(x: Any) -> int:
                i = get(x)
                return i if i is not None else oov(x, kind)

            return encode
        tget = getter(table)

        def encode(x: Any) -> int:
            if x is None:
                return null_id
            p = tget(x, -1)
            return p + base if p >= 0 else one(x, table, kind, base, null_id)

        return encode

    def scalar_fn(self, c: str) -> Callable[[Any], Any]:
        """One value of ``c`` -> its id (null -> 1; a null list element -> 2): what :meth:`row` does per
        value, for the fused row plan."""
        return self.encoders[c]

    # batch
    def _encode(self, col: Col, table: Any, kind: str, base: int) -> np.ndarray:
        v = col.values
        if isinstance(table, ObjectTable):
            q = v.astype(object) if v.dtype.kind != "O" else v
            pos = table.lookup(q)
            nulls = col.nulls()
        else:
            pos = table.lookup(v.astype(np.int64, copy=False))
            nulls = col.mask
        ids = pos + base
        unseen = pos < 0
        if unseen.any():
            if self.B == 1:
                ids[unseen] = 2
            else:
                h = hash_batch(v, col.mask, kind).astype(np.int64) % self.B
                ids[unseen] = 2 + h[unseen]
        if nulls is not None:
            # null slots of an int column hold arbitrary values that may be in the vocabulary; a null
            # element of a list column gets the OOV id 2, a null scalar 1
            ids[nulls] = NULL_ELEMENT_ID if col.is_list else 1
        return ids

    def batch(self, cols: Dict[str, Col]) -> Dict[str, Col]:
        out = {}
        if self.hashed_jobs:
            qs = [cols[c].values.astype(np.int64, copy=False) for _, c, _ in self.hashed_jobs]
            pos = np.concatenate([t.lookup(q) for (_, _, t), q in zip(self.hashed_jobs, qs)])
            unseen = pos < 0
            any_unseen = bool(unseen.any())
            ids = pos
            ids += self.base
            if any_unseen and self.B == 1:
                ids[unseen] = 2
            start = 0
            for (name, c, _), q in zip(self.hashed_jobs, qs):
                col = cols[c]
                end = start + len(q)
                seg = ids[start:end]  # a view: the columns' ids share one array
                if any_unseen and self.B > 1:
                    u = unseen[start:end]
                    if u.any():
                        h = hash_batch(col.values, col.mask, self.kinds[c]).astype(np.int64) % self.B
                        seg[u] = 2 + h[u]
                if col.mask is not None:  # null slots hold arbitrary values that may be in the vocabulary
                    seg[col.mask] = NULL_ELEMENT_ID if col.is_list else 1
                out[name] = col.with_values(seg)
                start = end
        for name, src, key, combo in self.other_jobs:
            if combo:
                keys = _combo_keys([cols[c] for c in src], [self.kinds[c] for c in src], self.combo_format)
                out[name] = Col(self._encode(Col(keys), self.tables[key], "s", self.base_of[key]))
                continue
            col = cols[src[0]]
            out[name] = col.with_values(self._encode(col, self.tables[key], self.kinds[src[0]], self.base_of[key]))
        return out

    # one row
    def _oov(self, v: Any, kind: str) -> int:
        return 2 if self.B == 1 else 2 + hash_scalar(v, kind) % self.B

    def row(self, vals: Dict[str, Any]) -> Dict[str, Any]:
        out = {}
        for name, c, _, _, _ in self.row_jobs:
            v, fn = vals[c], self.encoders[name]
            if v is None and self.is_list[c]:
                out[name] = None
            elif type(v) is list:
                out[name] = [fn(x) for x in v]
            else:
                out[name] = fn(v)
        for name, src, table in self.combo_jobs:
            k = combo_key([None if p is None else _to_str(p) for p in (vals[c] for c in src)], self.combo_format)
            if k is None:
                out[name] = 1
                continue
            p = table.get(k)
            out[name] = p + self.base_of[name] if p >= 0 else self._oov(k, "s")
        return {name: out[name] for name in self.outputs}

    def _one(self, v: Any, table: Any, kind: str, base: int, null_id: int = 1) -> int:
        if v is None or (kind == "f" and v != v):
            return null_id
        p = table.get(int(v) if kind == "b" else v)
        return p + base if p >= 0 else self._oov(v, kind)


def _vocab_order(table: IntTable) -> np.ndarray:
    """The vocabulary of ``table`` in id order (it stores it sorted, with positions)."""
    values = np.empty(table.size, dtype=np.int64)
    values[table.pos] = table.keys
    return values


def _to_str(v: Any) -> str:
    return v if isinstance(v, str) else str(v)


def _combo_keys(cols: List[Col], kinds: List[str], key_format: int) -> np.ndarray:
    """One combined key per row (:func:`tabprep.ops.categorify.combo_key`; None for a null row), as offline."""
    n = len(cols[0].values)
    parts = []
    nulls = []
    for c, k in zip(cols, kinds):
        nulls.append(c.nulls())
        parts.append(c.values.tolist())
    keys = [combo_key([None if m[i] else _to_str(p[i]) for p, m in zip(parts, nulls)], key_format) for i in range(n)]
    return np.array(keys, dtype=object) if n else np.zeros(0, dtype=object)


# -- hashing ops ------------------------------------------------------------------------------------
@register_kernel(HashBucket)
class _HashBucket(Kernel):
    def __init__(self, op: HashBucket, columns: List[str], in_schema: Schema, out_schema: Schema) -> None:
        super().__init__(op, columns, in_schema, out_schema)
        self.nb = {c: op.buckets(c) for c in columns}

    def batch(self, cols: Dict[str, Col]) -> Dict[str, Col]:
        out = {}
        for c in self.columns:
            col = cols[c]
            h = hash_batch(col.values, col.mask, self.kinds[c])
            out[c] = col.with_values(mod_uint32(h, self.nb[c]))
        return out

    def scalar_fn(self, c: str) -> Callable[[Any], Any]:
        nb, kind = self.nb[c], self.kinds[c]
        return lambda x: hash_scalar(x, kind) % nb


@register_kernel(HashedCross)
class _HashedCross(Kernel):
    def __init__(self, op: HashedCross, columns: List[str], in_schema: Schema, out_schema: Schema) -> None:
        super().__init__(op, columns, in_schema, out_schema)
        names = op.output_column_names(columns)
        self.groups = [(name, list(g), op.buckets(name)) for name, g in zip(names, op.groups(columns))]

    def batch(self, cols: Dict[str, Col]) -> Dict[str, Col]:
        out = {}
        for name, g, nb in self.groups:
            h = hash_combine([hash_batch(cols[c].values, cols[c].mask, self.kinds[c]) for c in g])
            out[name] = Col(h.astype(np.int64) % nb)
        return out

    def row(self, vals: Dict[str, Any]) -> Dict[str, Any]:
        return {name: combine_scalar([hash_scalar(vals[c], self.kinds[c]) for c in g]) % nb
                for name, g, nb in self.groups}


# -- fills ------------------------------------------------------------------------------------------------
class _Fill(Kernel):
    def fill_value(self, c: str) -> Any:
        return self.op.fill_val

    def __init__(self, op: Any, columns: List[str], in_schema: Schema, out_schema: Schema) -> None:
        super().__init__(op, columns, in_schema, out_schema)
        self.flags = bool(op.add_binary_cols)
        self.fill = {}
        for c in columns:
            kind, v = self.kinds[c], self.fill_value(c)
            if kind == "i":
                if isinstance(v, bool) or not float(v).is_integer():
                    raise ServingBuildError(f"cannot serve {op.label} on int column {c!r} with the non-integral "
                                            f"fill value {v!r} (offline, pandas would change the column's dtype)")
                v = int(v)
            elif kind == "b":
                v = bool(v)
            elif kind == "f":
                v = float(np.asarray(v, dtype=in_schema[c].dtype))
            elif kind == "s" and not isinstance(v, str):
                raise ServingBuildError(f"cannot serve {op.label} on string column {c!r} with the fill value {v!r}")
            self.fill[c] = v

    def batch(self, cols: Dict[str, Col]) -> Dict[str, Col]:
        out, flags = {}, {}
        for c in self.columns:
            col, v, kind = cols[c], self.fill[c], self.kinds[c]
            if self.flags:
                flags[f"{c}_filled"] = Col(col.row_nulls if col.is_list and col.row_nulls is not None
                                           else (np.zeros(len(col.offsets) - 1, dtype=bool) if col.is_list
                                                 else col.nulls()))
            if kind == "f":
                x = col.values
                nan = np.isnan(x)
                out[c] = col.with_values(np.where(nan, x.dtype.type(v), x) if nan.any() else x)
            elif kind == "s":
                x = col.values
                out[c] = col.with_values(np.array([v if e is None else e for e in x.tolist()], dtype=object)
                                         if len(x) else x)
            elif col.mask is not None:
                out[c] = col.with_values(np.where(col.mask, v, col.values).astype(col.values.dtype), None)
            else:
                out[c] = col
        out.update(flags)
        return out

    def scalar_fn(self, c: str) -> Callable[[Any], Any]:
        v = self.fill[c]
        if self.kinds[c] == "f":
            return lambda e: v if e is None or e != e else e
        return lambda e: v if e is None else e

    def row(self, vals: Dict[str, Any]) -> Dict[str, Any]:
        out, flags = {}, {}
        for c in self.columns:
            x, v, kind = vals[c], self.fill[c], self.kinds[c]
            if self.flags:
                flags[f"{c}_filled"] = x is None or (kind == "f" and type(x) is float and x != x)
            if kind == "f":
                fn = (lambda e, v=v: v if e is None or e != e else e)
            else:
                fn = (lambda e, v=v: v if e is None else e)
            if type(x) is list:
                out[c] = [fn(e) for e in x]
            else:
                out[c] = None if x is None and self.is_list[c] else fn(x)
        out.update(flags)
        return out


register_kernel(FillMissing)(_Fill)


@register_kernel(FillMedian)
class _FillMedian(_Fill):
    def fill_value(self, c: str) -> Any:
        self.op._require_fitted()
        med = self.op.stats_[c]["median"]
        if self.kinds[c] in "ib" and not self.is_list[c]:
            med = int(round(med))  # as FillMedian.transform
        return med


from . import numeric_kernels  # noqa: E402,F401 - registers Clip, LogOp, Normalize... (imports this module)
