"""The fitted workflow as TensorFlow ops inside a Keras model, so a SavedModel takes raw features.

:func:`to_keras` compiles the workflow graph (the same column demand as
:class:`~tabprep.serving.ServingTransform`) into TensorFlow ops:

* Categorify: exact ``tf.lookup.StaticHashTable`` s built from the saved vocabularies (int64 or
  string keys); null -> 1 (a null element of a list column -> 2), unseen -> 2 (or ``2 + murmur3 % B``);
* HashBucket / HashedCross / OOV buckets: MurmurHash3_x86_32 written with uint32 tensor ops over
  exactly the bytes tabprep hashes (ints as int64 little-endian, floats as float64 with
  ``-0.0 -> 0.0``, strings as UTF-8; nulls -> 0), so ids equal tabprep's;
* FillMissing, Clip, LogOp, Normalize, NormalizeMinMax, Bucketize and the renaming/metadata ops as
  elementwise tensor ops, in float64 where tabprep computes in float64, rounded to float32 where it
  rounds.

Ops that cannot be exported exactly are refused with a message (float or combined Categorify
vocabularies, ops without a serving kernel...). One known difference: TensorFlow's CPU kernels
flush subnormal floats (``|x| < 2.2e-308`` in float64, ``< 1.2e-38`` in float32) to zero in
arithmetic and comparisons, so LogOp / Normalize / Bucketize of such inputs may differ from
tabprep's (hashes are computed on the bits and are not affected).

**Inputs** (one per raw column the outputs need): a scalar column ``c`` is a 1-d tensor ``c``
(int64 for every int width, float32/float64 as fitted, bool, string); non-float columns also take
``c__null`` (bool, True where null; floats use NaN). A list column ``c`` is ``c__values`` (flat
elements), ``c__nnzs`` (int64 row lengths) and, for non-float elements, ``c__null`` per element.
**Outputs**: ``{name: tensor}`` with the offline dtypes; list columns as ``name__values`` /
``name__nnzs``; an int/bool/string output that can hold nulls also gets ``name__null``.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .._frameworks import preload_triton
from ..ops import (AddMetadata, AddProperties, AddTags, Bucketize, Categorify, Clip, DataStats, DropLowCardinality,
                   FillMissing, HashBucket, HashedCross, LogOp, Normalize, NormalizeMinMax, Rename, ValueCount)
from ..ops._categorify_notes import NULL_ELEMENT_ID
from .columns import kind_of
from .kernels import ServingBuildError
from .transform import ServingTransform

_C1, _C2, _N1, _F1, _F2 = 0xCC9E2D51, 0x1B873593, 0xE6546B64, 0x85EBCA6B, 0xC2B2AE35
_GOLDEN = 0x9E3779B9


class _T:
    """A column in the graph: values, null mask (None: never null), row lengths (lists)."""

    __slots__ = ("values", "null", "nnzs", "kind")

    def __init__(self, values: Any, null: Any, nnzs: Any, kind: str) -> None:
        self.values, self.null, self.nnzs, self.kind = values, null, nnzs, kind

    def with_(self, values: Any, null: Any = None, kind: Optional[str] = None) -> "_T":
        return _T(values, null, self.nnzs, kind or self.kind)


def _tf():
    preload_triton()   # PyTorch's triton before TensorFlow's LLVM (tabprep._frameworks)
    import tensorflow as tf

    return tf


# -- MurmurHash3_x86_32 in uint32 tensor ops -----------------------------------------------------
def _u32(v: int) -> Any:
    tf = _tf()
    return tf.constant(v, tf.uint32)


def _rotl(x: Any, r: int) -> Any:
    tf = _tf()
    return tf.bitwise.bitwise_or(tf.bitwise.left_shift(x, _u32(r)), tf.bitwise.right_shift(x, _u32(32 - r)))


def _mix_k(k: Any) -> Any:
    return _rotl(k * _u32(_C1), 15) * _u32(_C2)


def _block(h: Any, k: Any) -> Any:
    tf = _tf()
    h = tf.bitwise.bitwise_xor(h, _mix_k(k))
    return _rotl(h, 13) * _u32(5) + _u32(_N1)


def _fmix(h: Any, length: Any) -> Any:
    tf = _tf()
    x = tf.bitwise.bitwise_xor
    h = x(h, length)
    h = x(h, tf.bitwise.right_shift(h, _u32(16))) * _u32(_F1)
    h = x(h, tf.bitwise.right_shift(h, _u32(13))) * _u32(_F2)
    return x(h, tf.bitwise.right_shift(h, _u32(16)))


def _hash_words64(words: Any) -> Any:
    tf = _tf()
    h = tf.zeros_like(words[:, 0])
    h = _block(_block(h, words[:, 0]), words[:, 1])
    return _fmix(h, _u32(8))


def hash_tensor(t: _T) -> Any:
    """uint32 MurmurHash3 of each value of ``t`` as tabprep hashes it; nulls (and float NaN) -> 0."""
    tf = _tf()
    v = t.values
    if t.kind in "ib":
        h = _hash_words64(tf.bitcast(tf.cast(v, tf.int64), tf.uint32))
        null = t.null
    elif t.kind == "f":
        x = tf.cast(v, tf.float64)
        null = tf.math.is_nan(x)
        # -0.0 -> +0.0 on the bits: float arithmetic would also flush subnormals to zero (TF's CPU
        # kernels run with denormals-are-zero), changing their hash
        words = tf.bitcast(tf.where(null, tf.zeros_like(x), x), tf.uint32)
        lo, hi = words[:, 0], words[:, 1]
        hi = tf.where((hi == _u32(0x80000000)) & (lo == _u32(0)), tf.zeros_like(hi), hi)
        h = _hash_words64(tf.stack([lo, hi], axis=1))
    else:
        h = _hash_strings(tf.where(t.null, tf.fill(tf.shape(v), ""), v) if t.null is not None else v)
        null = t.null
    if null is not None:
        h = tf.where(null, tf.zeros_like(h), h)
    return h


def _hash_strings(s: Any) -> Any:
    tf = _tf()
    n = tf.shape(s)[0]
    lens = tf.strings.length(s)  # bytes
    chars = tf.strings.bytes_split(s)
    byte_vals = tf.reshape(tf.io.decode_raw(chars.flat_values, tf.uint8), [-1])
    rag = tf.RaggedTensor.from_row_lengths(byte_vals, chars.row_lengths())
    nw = tf.maximum(tf.reduce_max(tf.concat([lens, [0]], 0)), 0) // 4 + 1  # whole blocks + the tail word
    dense = tf.cast(rag.to_tensor(default_value=0, shape=tf.stack([tf.cast(n, tf.int64), tf.cast(nw * 4, tf.int64)])),
                    tf.uint32)
    dense = tf.reshape(dense, tf.stack([n, nw, 4]))
    words = (dense[:, :, 0] | tf.bitwise.left_shift(dense[:, :, 1], _u32(8))
             | tf.bitwise.left_shift(dense[:, :, 2], _u32(16)) | tf.bitwise.left_shift(dense[:, :, 3], _u32(24)))
    nblocks = lens // 4

    def body(i: Any, h: Any) -> Tuple[Any, Any]:
        return i + 1, tf.where(i < nblocks, _block(h, words[:, i]), h)

    _, h = tf.while_loop(lambda i, h: i < nw - 1, body, (tf.constant(0), tf.zeros([n], tf.uint32)))
    tail = tf.gather(words, nblocks, batch_dims=1)  # bytes past the end are zero: a short tail mixes right
    h = tf.bitwise.bitwise_xor(h, _mix_k(tail))
    return _fmix(h, tf.cast(lens, tf.uint32))


# -- op compilers --------------------------------------------------------------------------------
def _export_error(op: Any, why: str) -> ServingBuildError:
    return ServingBuildError(f"cannot export {op.label} to Keras exactly: {why}")


class _Builder:
    """Op -> ``fn({name: _T}) -> {name: _T}``, with the lookup tables it needs (tracked by the layer)."""

    def __init__(self) -> None:
        self.tables: List[Any] = []

    def compile(self, op: Any, columns: List[str], in_schema: Any, out_schema: Any) -> Any:
        t = type(op)
        kinds = {c: kind_of(in_schema[c].dtype) for c in columns}
        if t in (Rename, AddMetadata, AddTags, AddProperties, ValueCount, DropLowCardinality, DataStats):
            names = op.output_column_names(columns)
            pairs = list(zip(columns, names)) if len(names) == len(columns) else [(n, n) for n in names]
            return lambda cols: {dst: cols[src] for src, dst in pairs}
        if t is Categorify:
            return self._categorify(op, columns, kinds)
        if t is HashBucket:
            nbs = {c: op.buckets(c) for c in columns}
            return lambda cols: {c: cols[c].with_(_mod(hash_tensor(cols[c]), nbs[c]), None, "i") for c in columns}
        if t is HashedCross:
            return self._hashed_cross(op, columns)
        if t is FillMissing:
            return self._fill(op, columns, kinds, in_schema)
        if t is Clip:
            return self._clip(op, columns, kinds, in_schema)
        if t is LogOp:
            return lambda cols: {c: cols[c].with_(_log1p(cols[c]), None, "f") for c in columns}
        if t is Normalize:
            op._require_fitted()
            params = {c: (float(op.stats_[c]["mean"]), float(op.stats_[c]["std"])) for c in columns}
            dt = op.output_dtype
            return lambda cols: {c: cols[c].with_(_affine(cols[c], *params[c], ok=bool(params[c][1])
                                                          and np.isfinite(params[c][1]), dtype=dt), None, "f")
                                 for c in columns}
        if t is NormalizeMinMax:
            op._require_fitted()
            mm = {c: (op.stats_[c]["min"], op.stats_[c]["max"]) for c in columns}
            big = [c for c in columns if all(type(v) is int for v in mm[c]) and max(map(abs, mm[c])) > 2**53]
            if big:  # the op subtracts the int min exactly; float64 tensors would round x and min first
                raise _export_error(op, f"column(s) {big} hold ints beyond 2**53, which the op scales with exact "
                                        f"integer arithmetic and a float64 tensor would round")
            dt = op.output_dtype
            return lambda cols: {c: cols[c].with_(_affine(cols[c], mm[c][0],
                                                          (mm[c][1] - mm[c][0]) if _ok(mm[c]) else 0.0,
                                                          ok=_ok(mm[c]), dtype=dt), None, "f") for c in columns}
        if t is Bucketize:
            return self._bucketize(op, columns)
        raise _export_error(op, "it has no TensorFlow kernel")

    def _categorify(self, op: Categorify, columns: List[str], kinds: Dict[str, str]) -> Any:
        tf = _tf()
        op._require_fitted()
        if op.encode_type == "combo" and any(len(c) > 1 for c in op._vocab_keys(columns).values()):
            raise _export_error(op, "combined (encode_type='combo') keys are formatted by pandas")
        jobs = []
        for key, cols in op._vocab_keys(columns).items():
            values = np.asarray(op.stats_[key]["values"])
            ks = {kinds[c] for c in cols}
            if values.dtype.kind in "iub" and ks <= {"i", "b"}:
                keys = tf.constant(values.astype(np.int64), tf.int64)
            elif ks == {"s"} and (values.dtype.kind in "OU" or len(values) == 0):
                keys = tf.constant([str(v) for v in values.tolist()] or [""], tf.string)[:len(values)]
            else:
                raise _export_error(op, f"the vocabulary of {cols} holds {values.dtype} values for {sorted(ks)} "
                                        f"columns (only int and string vocabularies are exported)")
            init = tf.lookup.KeyValueTensorInitializer(keys, tf.range(len(values), dtype=tf.int64))
            table = tf.lookup.StaticHashTable(init, default_value=-1)
            self.tables.append(table)
            jobs += [(c, table, 2 + op.num_oov_buckets + op.id_offset(key)) for c in cols]  # single_table shifts
        B = op.num_oov_buckets

        def run(cols: Dict[str, _T]) -> Dict[str, _T]:
            out = {}
            for c, table, base in jobs:
                t = cols[c]
                q = tf.cast(t.values, tf.int64) if t.kind in "ib" else t.values
                pos = table.lookup(q)
                ids = pos + base
                if B == 1:
                    oov = tf.fill(tf.shape(ids), tf.constant(2, tf.int64))
                else:
                    oov = 2 + _mod(hash_tensor(t), B)
                ids = tf.where(pos < 0, oov, ids)
                if t.null is not None:  # a null scalar -> 1; a null element of a list (nnzs) -> 2, as offline
                    null_id = NULL_ELEMENT_ID if t.nnzs is not None else 1
                    ids = tf.where(t.null, tf.fill(tf.shape(ids), tf.constant(null_id, ids.dtype)), ids)
                out[c] = t.with_(ids, None, "i")
            return out

        return run

    def _hashed_cross(self, op: HashedCross, columns: List[str]) -> Any:
        tf = _tf()
        names = op.output_column_names(columns)
        groups = [(name, list(g), op.buckets(name)) for name, g in zip(names, op.groups(columns))]

        def run(cols: Dict[str, _T]) -> Dict[str, _T]:
            out = {}
            for name, g, nb in groups:
                h = None
                for c in g:
                    k = hash_tensor(cols[c])
                    if h is None:
                        h = tf.zeros_like(k)
                    mixed = k + _u32(_GOLDEN) + tf.bitwise.left_shift(h, _u32(6)) + tf.bitwise.right_shift(h, _u32(2))
                    h = tf.bitwise.bitwise_xor(h, mixed)
                out[name] = _T(_mod(h, nb), None, None, "i")
            return out

        return run

    def _fill(self, op: FillMissing, columns: List[str], kinds: Dict[str, str], in_schema: Any) -> Any:
        tf = _tf()
        fills = {}
        for c in columns:
            v, k = op.fill_val, kinds[c]
            if k == "i" and (isinstance(v, bool) or not float(v).is_integer()):
                raise _export_error(op, f"non-integral fill value {v!r} for int column {c!r}")
            if k == "s" and not isinstance(v, str):
                raise _export_error(op, f"fill value {v!r} for string column {c!r}")
            fills[c] = v

        def run(cols: Dict[str, _T]) -> Dict[str, _T]:
            out, flags = {}, {}
            for c in columns:
                t = cols[c]
                null = tf.math.is_nan(t.values) if t.kind == "f" else t.null
                if op.add_binary_cols:
                    if t.nnzs is not None:
                        raise _export_error(op, "add_binary_cols on list columns")
                    flags[f"{c}_filled"] = _T(null if null is not None else tf.zeros_like(t.values, tf.bool), None,
                                              None, "b")
                if null is None:
                    out[c] = t
                    continue
                fill = tf.cast(tf.constant(fills[c]), t.values.dtype) if t.kind != "s" else tf.constant(fills[c])
                out[c] = t.with_(tf.where(null, tf.fill(tf.shape(t.values), fill), t.values), None)
            out.update(flags)
            return out

        return run

    def _clip(self, op: Clip, columns: List[str], kinds: Dict[str, str], in_schema: Any) -> Any:
        tf = _tf()
        lower, upper = op.bounds()   # a NaN bound is no bound, as offline
        for c in columns:
            if kinds[c] not in "if":
                raise _export_error(op, f"{in_schema[c].dtype} column {c!r}")
            if kinds[c] == "i" and any(b is not None and not float(b).is_integer() for b in (lower, upper)):
                raise _export_error(op, f"non-integral bounds on int column {c!r}")

        def run(cols: Dict[str, _T]) -> Dict[str, _T]:
            out = {}
            for c in columns:
                t = cols[c]
                x = t.values
                if lower is not None:
                    lo = tf.cast(tf.constant(lower), x.dtype)
                    x = tf.where(x < lo, lo, x)  # NaN compares False: stays NaN, as numpy's clip
                if upper is not None:
                    hi = tf.cast(tf.constant(upper), x.dtype)
                    x = tf.where(x > hi, hi, x)
                out[c] = t.with_(x, t.null)
            return out

        return run

    def _bucketize(self, op: Bucketize, columns: List[str]) -> Any:
        tf = _tf()
        bounds = {c: tf.constant(op.boundaries_for(c)[None, :], tf.float64) for c in columns}
        # a list of ints: int columns compare with it as ints (the offline op's rule, NVTabular's)
        int_bounds = {c: tf.constant(b[None, :], tf.int64) for c in columns
                      if (b := op.int_boundaries_for(c)) is not None}

        def run(cols: Dict[str, _T]) -> Dict[str, _T]:
            out = {}
            for c in columns:
                t = cols[c]
                if c in int_bounds and t.kind in "ib":
                    v = tf.cast(t.values, tf.int64)
                    ids = tf.searchsorted(int_bounds[c], v[None, :], side="right", out_type=tf.int64)[0]
                    out[c] = t.with_(ids, t.null, "i")
                    continue
                x = _float64(t)
                ids = tf.searchsorted(bounds[c], x[None, :], side="right", out_type=tf.int64)[0]
                out[c] = t.with_(ids, tf.math.is_nan(x), "i")
            return out

        return run


def _ok(mm: Tuple[Any, Any]) -> bool:
    return mm[0] is not None and mm[1] is not None and mm[1] != mm[0]


def _mod(h: Any, nb: int) -> Any:
    tf = _tf()
    return tf.math.floormod(tf.cast(h, tf.int64), tf.constant(nb, tf.int64))


def _float64(t: _T) -> Any:
    tf = _tf()
    x = tf.cast(t.values, tf.float64)
    if t.null is not None:
        x = tf.where(t.null, tf.constant(np.nan, tf.float64), x)
    return x


def _log1p(t: _T) -> Any:
    # LogOp's formula (tabprep.backend.arrays.log1p_int): the value made float32 (ints directly, not
    # through float64), 1 added in float32, the logarithm in float64 rounded once to float32
    tf = _tf()
    x = tf.cast(t.values, tf.float32)
    if t.null is not None:
        x = tf.where(t.null, tf.constant(np.nan, tf.float32), x)
    s = x + tf.constant(1.0, tf.float32)
    return tf.cast(tf.math.log(tf.cast(s, tf.float64)), tf.float32)


def _affine(t: _T, shift: Any, scale: Any, ok: bool, dtype: str = "float32") -> Any:
    """``(x - shift) / scale`` in float64, rounded once to ``dtype`` (the op's output dtype)."""
    tf = _tf()
    x = _float64(t)
    out = tf.as_dtype(dtype)
    if not ok:
        return tf.cast(tf.where(tf.math.is_nan(x), x, tf.zeros_like(x)), out)
    # the divisor is a tensor of x's (unknown) shape, not a constant: a SavedModel's graph is
    # optimized by grappler, whose constant folding turns x / c into x * (1 / c), one float64
    # ulp off tabprep's quotient (hidden by a float32 output, not by a float64 one)
    divisor = tf.fill(tf.shape(x), tf.constant(scale, tf.float64))
    return tf.cast((x - shift) / divisor, out)


# -- the Keras model ------------------------------------------------------------------------------
def _tf_dtype(dtype: str) -> Any:
    tf = _tf()
    k = kind_of(dtype)
    return {"i": tf.int64, "b": tf.bool, "s": tf.string}.get(k) or tf.as_dtype(dtype)


def input_specs(st: ServingTransform) -> Dict[str, Any]:
    """``{input name: tf.TensorSpec}`` of the exported model (see the module docstring)."""
    tf = _tf()
    if getattr(st, "_nested_in", None):
        raise ServingBuildError(f"nested list columns {sorted(st._nested_in)} cannot be exported as a Keras model yet: "
                                f"serve them with ServingTransform / tabprep serve")
    specs = {}
    for c, s, k in st._in_cols:
        dt = _tf_dtype(s.dtype)
        if s.is_list:
            specs[f"{c}__values"] = tf.TensorSpec([None], dt, name=f"{c}__values")
            specs[f"{c}__nnzs"] = tf.TensorSpec([None], tf.int64, name=f"{c}__nnzs")
        else:
            specs[c] = tf.TensorSpec([None], dt, name=c)
        if k != "f":
            specs[f"{c}__null"] = tf.TensorSpec([None], tf.bool, name=f"{c}__null")
    return specs


class WorkflowGraph:
    """The compiled plan: ``__call__({input: tensor}) -> {output: tensor}`` (pure TensorFlow ops)."""

    def __init__(self, st: ServingTransform) -> None:
        wf = st.workflow
        self.st = st
        builder = _Builder()
        self.steps = []
        for kind, i, arg in st._plan:
            if kind == "op":
                parents, kernel = arg
                node = wf.nodes[i]
                in_schema = None
                from ..schema import Schema

                in_schema = Schema()
                for p in node.parents:
                    in_schema = in_schema + wf._node_schemas[wf.node_id(p)]
                fn = builder.compile(node.op, node.input_columns, in_schema, wf._node_schemas[wf.node_id(node)])
                self.steps.append((kind, i, (parents, fn)))
            else:
                self.steps.append((kind, i, arg))
        self.tables = builder.tables

    def __call__(self, inputs: Dict[str, Any]) -> Dict[str, Any]:
        tf = _tf()
        cols: Dict[str, _T] = {}
        for c, s, k in self.st._in_cols:
            null = inputs.get(f"{c}__null") if k != "f" else None
            if s.is_list:
                cols[c] = _T(inputs[f"{c}__values"], null, tf.cast(inputs[f"{c}__nnzs"], tf.int64), k)
            else:
                cols[c] = _T(inputs[c], null, None, k)
        env: Dict[int, Dict[str, _T]] = {}
        for kind, i, arg in self.steps:
            if kind == "select":
                env[i] = {c: cols[c] for c in arg}
            elif kind == "concat":
                merged: Dict[str, _T] = {}
                for p in arg:
                    merged.update(env[p])
                env[i] = merged
            elif kind == "drop":
                env[i] = {c: env[arg[0]][c] for c in arg[1] if c in env[arg[0]]}
            else:
                parents, fn = arg
                inp: Dict[str, _T] = {}
                for p in reversed(parents):
                    inp.update(env[p])
                env[i] = fn(inp)
        final = env[self.st._out_index]
        out = {}
        for name, col, dt in self.st._outputs:
            t = final[name]
            tdt = tf.string if dt.kind == "O" else tf.as_dtype(dt)
            v = t.values if t.values.dtype == tdt else tf.cast(t.values, tdt)
            if col.is_list:
                out[f"{name}__values"] = v
                out[f"{name}__nnzs"] = t.nnzs
            else:
                out[name] = v
            if t.null is not None and dt.kind != "f":
                out[f"{name}__null"] = t.null
        return out


def to_keras(workflow: Any, outputs: Any = None, exclude: Any = ()) -> Any:
    """A Keras model applying the fitted ``workflow`` in-graph (see the module docstring).

    Save it with ``model.export(path)`` (a TF SavedModel whose ``serve`` endpoint takes the raw
    features; the vocabularies are inside as lookup tables) and load it with
    ``tf.saved_model.load(path)`` (or ``keras.layers.TFSMLayer``) where tabprep is not installed.

    Raises:
        ServingBuildError: an op cannot be served or exported exactly.
    """
    preload_triton()
    import keras

    st = ServingTransform(workflow, outputs=outputs, exclude=exclude)
    graph = WorkflowGraph(st)
    specs = input_specs(st)

    class TabprepTransform(keras.layers.Layer):
        """The workflow's ops as one layer (its lookup tables are tracked for export)."""

        def __init__(self, **kwargs: Any) -> None:
            super().__init__(trainable=False, autocast=False, **kwargs)  # float64 inputs stay float64
            self._graph = graph
            self._tables = list(graph.tables)

        def call(self, inputs: Dict[str, Any]) -> Dict[str, Any]:
            return self._graph(inputs)

    inputs = {name: keras.Input(shape=(), batch_size=None, dtype=spec.dtype.name, name=name)
              for name, spec in specs.items()}
    layer = TabprepTransform(name="tabprep_transform")
    return keras.Model(inputs=inputs, outputs=layer(inputs), name="tabprep_workflow")
