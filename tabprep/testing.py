"""A conformance battery for ops: :func:`check_op`, run on your own ops like scikit-learn's
``check_estimator``.

>>> from tabprep.testing import check_op
>>> check_op(MyOp(), allow_unregistered=True)           # doctest: +SKIP

Each check raises ``AssertionError`` naming the check that failed (``check 'params unchanged
by fit': ...``). Every op shipped with tabprep passes it (tests/test_conformance.py).
"""
from __future__ import annotations

import copy
import pickle
import tempfile
from pathlib import Path
from typing import Any, Callable, List, Optional, Sequence

import numpy as np
import pandas as pd

from . import backend
from .io.dataset import Dataset
from .ops.base import Operator, StatOperator, registered_ops
from .workflow.fusion import _declares_host_partial
from .workflow.reduction import splits_by_key
from .workflow.tasks import for_workers, key_shard, merge_keyed
from .workflow.workflow import Workflow

__all__ = ["check_op", "default_frame"]


def default_frame(n: int = 200, seed: int = 0) -> pd.DataFrame:
    """The frame :func:`check_op` uses when given none: ``x`` (float64 with NaN, +inf and -inf),
    ``i`` (int64), ``n`` (nullable ``Int64`` with nulls), ``s`` (strings with nulls) and
    ``label`` (int64 0/1). :func:`check_op` feeds ``x``, ``i`` and ``n`` to the op by default."""
    rng = np.random.default_rng(seed)
    x = rng.normal(3.0, 2.0, n)
    x[rng.random(n) < 0.1] = np.nan
    x[5], x[17] = np.inf, -np.inf
    nul = pd.array(rng.integers(-5, 40, n), dtype="Int64")
    nul[rng.random(n) < 0.2] = pd.NA
    s = rng.choice(["a", "bb", "c\x1fd", "", "zz"], n).astype(object)
    s[rng.random(n) < 0.15] = None
    return pd.DataFrame({"x": x, "i": rng.integers(-10, 100, n).astype("int64"), "n": nul, "s": s,
                         "label": rng.integers(0, 2, n).astype("int64")})


def check_op(op: Operator, data: Optional[pd.DataFrame] = None, columns: Optional[Sequence[Any]] = None, *,
             allow_unregistered: bool = False, trusted: bool = True) -> None:
    """Run the conformance battery on ``op`` (which is not modified: every check uses a copy).

    Args:
        op: the op, as a user builds it (unfitted).
        data: a pandas frame to fit and transform (default :func:`default_frame`); it must hold
            ``columns`` and the op's dependencies (e.g. a target column).
        columns: the op's input selection, as given to ``>>`` (nested lists for column groups);
            default ``["x", "i", "n"]``.
        allow_unregistered: skip the save/load and spec round trips (for ad-hoc ops not made
            loadable with ``@ops.register``); without it an unregistered op fails them.
        trusted: load the round-trip save with ``trusted=True`` (it is the folder the check just
            wrote; set False to check that it loads under the default allow-list).

    Checks, in order (the first failure raises ``AssertionError`` naming it):

    1. ``params unchanged by fit``: ``get_params()`` / ``to_config()`` equal before and after fit;
    2. ``refit idempotent``: learned attributes (names ending in ``_``) and the output after two
       fits equal those after one; ``finalize on a copy``: ``fit_finalize`` assigns attributes and
       changes no object the op held before (``Workflow.fit`` runs it on a shallow copy of the op,
       on a worker, and keeps what it assigned); ``keyed statistics``: an op declaring
       ``keyed_statistics`` finalizes key subsets to the same ``stats_`` as all keys at once;
    3. ``input not mutated``: ``fit_partial`` / ``transform`` leave the frame they get unchanged;
       ``host partial parity``: a stat op with ``fit_partial_columns`` (the CPU fit of parquet
       data on host columns) learns what ``fit_partial`` learns from the same values;
    4. ``non-finite and null inputs``: NaN/inf values, an all-null selection and an empty frame
       transform (an all-null fit may instead raise a clear ``ValueError`` / ``TypeError``);
    5. ``empty partitions``: fitting with an empty partition between two halves gives the same
       output as fitting on the whole frame;
    6. ``save/load round trip`` and ``spec round trip`` (registered ops, unless skipped);
    7. ``pickling``: a pickled fitted workflow transforms identically, and so does the copy
       dask.distributed workers receive (what :meth:`Operator.state_for_workers` leaves in);
    8. ``backend parity`` when cuDF is installed: the GPU output equals the CPU one (ids exact,
       floats to float32 rounding).
    """
    data = default_frame() if data is None else data
    columns = list(columns) if columns is not None else ["x", "i", "n"]
    name = type(op).__name__
    pristine = data.copy(deep=True)

    # 1. params unchanged by fit
    before_params, before_cfg = copy.deepcopy(op.get_params()), _config(op)
    wf1, fitted = _fit(op, columns, data)
    for key, value in before_params.items():
        after = fitted.get_params().get(key)
        if not _same(value, after):
            raise AssertionError(f"check 'params unchanged by fit' failed for {name}: parameter {key!r} was "
                                 f"{value!r} before fit and {after!r} after; store learned state in attributes "
                                 f"ending in '_', never in __init__ parameters")
    if before_cfg is not None and not _same(before_cfg, _config(fitted)):
        raise AssertionError(f"check 'params unchanged by fit' failed for {name}: to_config() changed by fit "
                             f"({before_cfg!r} -> {_config(fitted)!r})")

    # 2. refit idempotent
    wf2, twice = _fit(op, columns, data, times=2)
    for key, value in _learned(fitted).items():
        if not _same(value, _learned(twice).get(key)):
            raise AssertionError(f"check 'refit idempotent' failed for {name}: learned {key!r} differs after a "
                                 f"second fit on the same data (fit must start over: reset state in clear())")
    out1 = _transform(wf1, data, name, "transform after fit")
    _assert_same(out1, _transform(wf2, data, name, "transform after a second fit"),
                 f"check 'refit idempotent' failed for {name}: the output after a second fit differs")

    node = next(n for n in wf1.nodes if n.kind == "op" and n.op is fitted)
    cols = node.input_columns + [d for d in fitted.dependencies() if d not in node.input_columns]

    # 2b. finalize on a copy: Workflow.fit runs fit_finalize on a shallow copy of the op (on a
    # worker) and copies back the attributes it set, so it must not mutate what the op held
    if isinstance(op, StatOperator):
        held = _fresh(op)
        partial = held.fit_partial(node.input_columns, data[cols])
        before = _pickled_attrs(held)
        whole = copy.copy(held)
        whole.fit_finalize(node.input_columns, held.fit_combine([partial]))
        changed = sorted(k for k, v in _pickled_attrs(held).items() if before.get(k, v) != v)
        if changed:
            raise AssertionError(f"check 'finalize on a copy' failed for {name}: fit_finalize changed objects the "
                                 f"op held before it ran ({', '.join(changed)}); Workflow.fit finalizes a copy of "
                                 f"the op and keeps only attributes it assigns: assign new objects "
                                 f"(self.{changed[0]} = ...) instead of mutating the old ones")

        # 2c. keyed statistics: an op that declares them is merged and finalized per key subset in
        # parallel tasks, and the stats_ dicts joined; that must equal finalizing all keys at once
        # (``held`` is as it was: 2b passed)
        if splits_by_key(op):
            shards = []
            for j in range(2):
                sub = copy.copy(held)
                sub.fit_finalize(node.input_columns, held.fit_combine([key_shard(partial, j, 2)]))
                shards.append((j, 2, sub.stats_))
            joined = merge_keyed(shards)
            if list(joined) != list(whole.stats_ or {}) or not _same(joined, whole.stats_):
                raise AssertionError(f"check 'keyed statistics' failed for {name}: finalizing its keys in two halves "
                                     f"and joining the stats_ dicts differs from finalizing all keys at once; set "
                                     f"keyed_statistics = False unless each key's statistics depend on that key alone")

    # 3. input not mutated (op level: the workflow hands ops copies, so call the op directly)
    for what, call in (("fit_partial", lambda f: _fresh(op).fit_partial(node.input_columns, f)),
                       ("transform", lambda f: fitted.transform(node.input_columns, f))):
        if what == "fit_partial" and not isinstance(op, StatOperator):
            continue
        frame = data[cols].copy(deep=True)
        ref = frame.copy(deep=True)
        call(frame)
        try:
            pd.testing.assert_frame_equal(frame, ref)
        except AssertionError as exc:
            raise AssertionError(f"check 'input not mutated' failed for {name}: {what} modified the frame it "
                                 f"was given (work on a copy or build new columns): {exc}") from None
    if not _frames_equal(data, pristine):
        raise AssertionError(f"check 'input not mutated' failed for {name}: fit/transform modified the user's frame")

    # 3b. host partial parity: the Arrow-native fit (CPU parquet) calls fit_partial_columns on host
    # columns; it must learn what fit_partial learns on the same values (nulls, NaN and inf included)
    if isinstance(op, StatOperator) and _declares_host_partial(type(op)):
        frame = _with_nonfinite(data[node.input_columns], node.input_columns)
        host = {c: backend.host_column(frame[c]) for c in node.input_columns}
        partial = None if any(h is None for h in host.values()) else \
            _fresh(op).fit_partial_columns(node.input_columns, host)
        if partial is not None:
            by_host, by_frame = _fresh(op), _fresh(op)
            by_host.fit_finalize(node.input_columns, by_host.fit_combine([partial]))
            by_frame.fit_finalize(node.input_columns, by_frame.fit_combine([by_frame.fit_partial(node.input_columns, frame)]))
            for key, value in _learned(by_frame).items():
                if not _same(value, _learned(by_host).get(key)):
                    raise AssertionError(f"check 'host partial parity' failed for {name}: learned {key!r} differs "
                                         f"between fit_partial_columns (host columns) and fit_partial (pandas) on "
                                         f"the same values; return None from fit_partial_columns where it cannot "
                                         f"reproduce fit_partial")

    # 4. non-finite and null inputs, empty frame
    flat = [c for c in node.input_columns]
    nonfinite = _with_nonfinite(data, flat)
    _transform(wf1, nonfinite, name, "transform of NaN/inf values", rows=not fitted.changes_rows)
    empty = _transform(wf1, data.iloc[:0], name, "transform of an empty frame")
    if list(empty.columns) != wf1.output_columns or len(empty):
        raise AssertionError(f"check 'non-finite and null inputs' failed for {name}: an empty frame transformed to "
                             f"{list(empty.columns)} with {len(empty)} rows, not the {wf1.output_columns} columns")
    nulls = _all_null(data, flat)
    try:
        wf_null, _ = _fit(op, columns, nulls)
    except (ValueError, TypeError):
        pass  # a clear refusal (e.g. "no non-null value") is fine
    except Exception as exc:  # noqa: BLE001 - anything else is a crash on all-null data
        raise AssertionError(f"check 'non-finite and null inputs' failed for {name}: fit on all-null columns "
                             f"raised {type(exc).__name__}: {exc}") from exc
    else:
        _transform(wf_null, nulls, name, "transform of all-null columns", rows=not fitted.changes_rows)

    # 5. empty partitions
    wf3, _ = _fit(op, columns, _with_empty_partition(data))
    _assert_same(out1, _transform(wf3, data, name, "transform after a fit with an empty partition"),
                 f"check 'empty partitions' failed for {name}: fitting with an empty partition changed the output",
                 approx=True)

    # 6. save/load and spec round trips
    registered = registered_ops().get(name) is type(op)
    if not allow_unregistered:
        if not registered:
            raise AssertionError(f"check 'save/load round trip' failed for {name}: the op is not registered, so a "
                                 f"saved workflow cannot load it; decorate it with @tabprep.ops.register (or pass "
                                 f"allow_unregistered=True to skip the round trips)")
        with tempfile.TemporaryDirectory() as tmp:
            wf1.save(str(Path(tmp) / "wf"))
            loaded = Workflow.load(str(Path(tmp) / "wf"), trusted=trusted)
            _assert_same(out1, _transform(loaded, data, name, "transform after load"),
                         f"check 'save/load round trip' failed for {name}: the loaded workflow transforms differently")
            if loaded.output_schema != wf1.output_schema:
                raise AssertionError(f"check 'save/load round trip' failed for {name}: the output schema changed")
        try:
            spec = wf1.to_spec()
        except ValueError:
            spec = None  # an explicit refusal (an in-memory side table...): nothing to round-trip
        if spec is not None:
            try:
                rebuilt = Workflow.from_spec(spec)
                rebuilt = rebuilt.fit(Dataset(data)) if rebuilt.stat_nodes else rebuilt
            except Exception as exc:  # noqa: BLE001
                raise AssertionError(f"check 'spec round trip' failed for {name}: to_spec() wrote a spec that does "
                                     f"not build/fit ({type(exc).__name__}: {exc}); refuse in to_spec_config() "
                                     f"instead") from exc
            _assert_same(out1, _transform(rebuilt, data, name, "transform of the spec's workflow"),
                         f"check 'spec round trip' failed for {name}: the workflow rebuilt from to_spec() differs",
                         approx=True)

    # 7. pickling
    try:
        clone = pickle.loads(pickle.dumps(wf1))
    except Exception as exc:  # noqa: BLE001
        raise AssertionError(f"check 'pickling' failed for {name}: a fitted workflow does not pickle "
                             f"(dask.distributed ships it to workers): {type(exc).__name__}: {exc}") from exc
    _assert_same(out1, _transform(clone, data, name, "transform after pickling"),
                 f"check 'pickling' failed for {name}: the unpickled workflow transforms differently")
    # the copy dask.distributed workers receive (Operator.state_for_workers), pickled as it travels
    shipped = pickle.loads(pickle.dumps(for_workers(wf1)))
    _assert_same(out1, _transform(shipped, data, name, "transform of the workers' copy"),
                 f"check 'pickling' failed for {name}: the copy dask workers receive (state_for_workers) "
                 f"transforms differently")

    # 8. backend parity (GPU machines only)
    if backend.has_cudf():
        gpu_frame = backend.to_backend(data, cpu=False)  # cuDF copy (NaN -> null, as cudf.from_pandas)
        wf_gpu, _ = _fit(op, columns, Dataset(gpu_frame, cpu=False))
        got = backend.to_host(wf_gpu.transform(gpu_frame))
        # dtypes may differ in nullability only (cuDF int columns with nulls -> pandas Int64 or float64)
        _assert_same(out1, got, f"check 'backend parity' failed for {name}: cuDF output differs from pandas",
                     approx=True, f32=True, check_dtype=False)


# -- helpers ------------------------------------------------------------------------------------
def _fresh(op: Operator) -> Operator:
    new = copy.deepcopy(op)
    new.__dict__.pop("_bound", None)  # one instance belongs to one graph: the copy is free
    if isinstance(new, StatOperator) and new.__dict__.get("stats_") is not None:
        new.clear()
    return new


def _fit(op: Operator, columns: List[Any], data: Any, times: int = 1):
    fresh = _fresh(op)
    wf = Workflow(columns >> fresh)
    ds = data if isinstance(data, Dataset) else Dataset(data)
    for _ in range(times):
        if wf.stat_nodes:
            wf.fit(ds)
        else:
            wf.bind_schema(ds.schema)
    return wf, fresh


def _transform(wf: Workflow, frame: pd.DataFrame, name: str, what: str, rows: bool = False) -> pd.DataFrame:
    try:
        out = wf.transform(frame)
    except AssertionError:
        raise
    except Exception as exc:
        raise AssertionError(f"check failed for {name}: {what} raised {type(exc).__name__}: {exc}") from exc
    if rows and len(out) != len(frame):
        raise AssertionError(f"check failed for {name}: {what} gave {len(out)} rows for {len(frame)}")
    return out.reset_index(drop=True)


def _config(op: Operator) -> Any:
    try:
        return copy.deepcopy(op.to_config())
    except Exception:  # noqa: BLE001 - ops whose params are not JSON: get_params is compared instead
        return None


def _pickled_attrs(op: Operator) -> dict:
    """Each attribute's pickle (attributes that do not pickle are left out)."""
    out = {}
    for key, value in vars(op).items():
        try:
            out[key] = pickle.dumps(value)
        except Exception:  # noqa: BLE001 - the 'pickling' check reports those
            pass
    return out


def _learned(op: Operator) -> dict:
    return {k: v for k, v in vars(op).items() if k.endswith("_") and not k.startswith("_")}


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if isinstance(a, (pd.DataFrame, pd.Series)) or isinstance(b, (pd.DataFrame, pd.Series)):
        return type(a) is type(b) and a.equals(b)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        try:
            return bool(np.array_equal(np.asarray(a), np.asarray(b), equal_nan=np.asarray(a).dtype.kind == "f"))
        except TypeError:
            return np.asarray(a).tolist() == np.asarray(b).tolist()
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - objects without a usable ==: compare their pickles
        try:
            return pickle.dumps(a) == pickle.dumps(b)
        except Exception:  # noqa: BLE001
            return False


def _frames_equal(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    try:
        pd.testing.assert_frame_equal(a, b)
        return True
    except AssertionError:
        return False


def _assert_same(expected: pd.DataFrame, got: pd.DataFrame, message: str, approx: bool = False,
                 f32: bool = False, check_dtype: bool = True) -> None:
    try:
        pd.testing.assert_frame_equal(got.reset_index(drop=True), expected.reset_index(drop=True),
                                      check_dtype=check_dtype,
                                      check_exact=not approx, rtol=(2e-6 if f32 else 1e-9) if approx else 0,
                                      atol=1e-9 if approx else 0)
    except AssertionError as exc:
        raise AssertionError(f"{message}: {exc}") from None


def _with_nonfinite(data: pd.DataFrame, cols: List[str]) -> pd.DataFrame:
    """A copy of ``data`` whose float ``cols`` start with NaN, +inf and -inf (frames of 3+ rows)."""
    out = data.copy(deep=True)
    for c in cols:
        if out[c].dtype.kind == "f" and len(out) >= 3:
            out.loc[out.index[:3], c] = [np.nan, np.inf, -np.inf]
    return out


def _all_null(data: pd.DataFrame, cols: List[str]) -> pd.DataFrame:
    out = data.copy(deep=True)
    for c in cols:
        s = out[c]
        if backend.is_list_series(s):
            out[c] = pd.Series([None] * len(s), dtype=s.dtype, index=s.index)
        elif s.dtype.kind == "f":
            out[c] = np.nan
        elif s.dtype.kind in "iub" or str(s.dtype)[:1] in ("I", "U") or str(s.dtype) == "boolean":
            nullable = backend._nullable_name(s.dtype)
            out[c] = pd.Series(pd.NA, index=s.index, dtype=nullable)
        else:
            out[c] = pd.Series([None] * len(s), dtype=s.dtype, index=s.index)
    return out


def _with_empty_partition(data: pd.DataFrame) -> Any:
    import dask
    import dask.dataframe as dd

    half = len(data) // 2
    parts: List[Callable[[], Any]] = [data.iloc[:half], data.iloc[:0], data.iloc[half:]]
    ddf = dd.from_delayed([dask.delayed(p) for p in parts], meta=data.iloc[:0], verify_meta=False)
    return Dataset(ddf)
