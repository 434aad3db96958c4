"""tabprep.testing.check_op: a conformance battery users run on their own ops (issue #11).

It must pass every built-in op and catch broken ones; the broken ops below are written here.
"""
from __future__ import annotations

from typing import Any, Dict, List

import numpy as np
import pandas as pd
import pytest

from tabprep import ops
from tabprep.ops.base import Operator, StatOperator
from tabprep.testing import check_op


class MutatesInput(Operator):
    """Writes into the frame it was given (a classic bug)."""

    def transform(self, columns: List[str], df: Any) -> Any:
        for c in columns:
            df[c] = df[c].fillna(0)
        return df[columns]


class ChangesParamsInFit(StatOperator):
    """Stores learned state in a constructor parameter."""

    def __init__(self, scale: float = 1.0) -> None:
        self.scale = scale

    def fit_partial(self, columns: List[str], df: Any) -> Dict[str, Any]:
        return {c: float(df[c].abs().max()) for c in columns}

    def fit_combine(self, partials: List[Dict[str, Any]]) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for p in partials:
            for c, v in p.items():
                out[c] = max(out.get(c, 0.0), v if v == v else 0.0)
        return out

    def fit_finalize(self, columns: List[str], combined: Dict[str, Any]) -> None:
        self.scale = max(combined.values() or [1.0])

    def transform(self, columns: List[str], df: Any) -> Any:
        return df[columns] / self.scale

    def clear(self) -> None:
        pass


class NotIdempotent(StatOperator):
    """Accumulates across fits instead of starting over."""

    def __init__(self) -> None:
        self.total_ = 0.0

    def fit_partial(self, columns: List[str], df: Any) -> Dict[str, Any]:
        return {"n": float(len(df))}

    def fit_combine(self, partials: List[Dict[str, Any]]) -> Dict[str, Any]:
        return {"n": sum(p["n"] for p in partials)}

    def fit_finalize(self, columns: List[str], combined: Dict[str, Any]) -> None:
        self.total_ += combined["n"]

    def transform(self, columns: List[str], df: Any) -> Any:
        return df[columns] * 0 + self.total_

    def clear(self) -> None:
        pass


@pytest.mark.parametrize("op", [ops.Normalize(), ops.FillMissing(), ops.Categorify(), ops.HashBucket(num_buckets=10),
                                ops.LogOp(), ops.Clip(min_value=0)])
def test_builtin_ops_pass(op):
    check_op(op)


def test_mutating_input_is_caught():
    with pytest.raises(AssertionError, match=r"(?i)mutat|modif"):
        check_op(MutatesInput(), allow_unregistered=True)


def test_params_changed_by_fit_are_caught():
    with pytest.raises(AssertionError, match=r"(?i)scale"):
        check_op(ChangesParamsInFit(), allow_unregistered=True)


def test_refit_not_idempotent_is_caught():
    with pytest.raises(AssertionError, match=r"(?i)refit|idempot|second fit"):
        check_op(NotIdempotent(), allow_unregistered=True)


class WrongHostPartial(ops.Normalize):
    """A host partial (the Arrow-native fit's) that forgets the nulls' exclusion: it differs from fit_partial."""

    def fit_partial_columns(self, columns, cols):
        from tabprep.stats.moments import MinMax, Moments

        out = {}
        for c in columns:
            x = np.nan_to_num(cols[c].values.astype("float64"), nan=0.0, posinf=0.0, neginf=0.0)
            out[c] = (Moments(len(x), float(x.mean()), float(((x - x.mean()) ** 2).sum())),
                      MinMax(float(x.min()), float(x.max())), 0)   # Normalize's partial: moments, extrema, +-inf count
        return out


def test_host_partial_differing_from_fit_partial_is_caught():
    with pytest.raises(AssertionError, match=r"check 'host partial parity' failed for WrongHostPartial"):
        check_op(WrongHostPartial(), allow_unregistered=True)


@pytest.mark.parametrize("columns", [["i", "n"], [["i", "n"]]])
def test_host_partial_parity_runs_for_categorify_on_ints(columns, monkeypatch):
    seen = []
    real = ops.Categorify.fit_partial_columns
    monkeypatch.setattr(ops.Categorify, "fit_partial_columns",
                        lambda self, cols, host: seen.append(real(self, cols, host)) or seen[-1])
    check_op(ops.Categorify(), columns=columns)
    assert seen and all(p is not None for p in seen)


class MutatesHeldState(StatOperator):
    """Fills, in fit_finalize, a dict the op made in clear(): Workflow.fit finalizes a shallow copy
    of the op and copies back what the copy set, so the fill would change the op the copy came
    from (a shared worker copy) and, on a distributed client, never reach the user's op."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.stats_ = None
        self._seen: Dict[str, int] = {}

    def fit_partial(self, columns: List[str], df: Any) -> Dict[str, Any]:
        return {c: int(df[c].notna().sum()) for c in columns}

    def fit_combine(self, partials: List[Dict[str, Any]]) -> Dict[str, Any]:
        return {c: sum(p[c] for p in partials) for c in partials[0]}

    def fit_finalize(self, columns: List[str], combined: Dict[str, Any]) -> None:
        self._seen.update(combined)
        self.stats_ = dict(self._seen)

    def transform(self, columns: List[str], df: Any) -> Any:
        return df[columns]


def test_catches_finalize_that_mutates_held_state():
    with pytest.raises(AssertionError, match="finalize on a copy.*MutatesHeldState.*_seen"):
        check_op(MutatesHeldState(), allow_unregistered=True)


class KeyedButCoupled(StatOperator):
    """Declares keyed statistics but scales each column's statistic by the total over all columns,
    so finalizing a subset of the keys gives other values."""

    keyed_statistics = True

    def fit_partial(self, columns: List[str], df: Any) -> Dict[str, Any]:
        return {c: int(df[c].notna().sum()) for c in columns}

    def fit_combine(self, partials: List[Dict[str, Any]]) -> Dict[str, Any]:
        return {c: sum(p[c] for p in partials) for c in partials[0]}

    def fit_finalize(self, columns: List[str], combined: Dict[str, Any]) -> None:
        total = sum(combined.values()) or 1
        self.stats_ = {c: n / total for c, n in combined.items()}

    def transform(self, columns: List[str], df: Any) -> Any:
        return df[columns]


def test_catches_keyed_statistics_that_depend_on_other_keys():
    with pytest.raises(AssertionError, match="keyed statistics.*KeyedButCoupled"):
        check_op(KeyedButCoupled(), allow_unregistered=True)


class DropsWhatTransformReads(ops.Normalize):
    """Leaves its learned means out of the copy dask.distributed workers receive, though its
    transform reads them."""

    def state_for_workers(self, state):
        return dict(state, stats_={c: dict(st, mean=0.0) for c, st in state["stats_"].items()})


def test_state_left_out_for_the_workers_that_transform_reads_is_caught():
    with pytest.raises(AssertionError, match=r"check 'pickling' failed for DropsWhatTransformReads.*workers"):
        check_op(DropsWhatTransformReads(), allow_unregistered=True)
