"""The op contract and the op registry: every module of tabprep/ops registers its op, declares
nothing outside the contract on Operator, and has its own test file (or a listed shared one)."""
from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

import tabprep as tp
from tabprep import ops
from tabprep.ops import registered_ops
from tabprep.ops.base import Operator, StatOperator

TESTS = Path(__file__).parent
#: ops/ modules that hold helpers, not ops
NOT_OPS = {"_categorify_notes", "_categorify_vocabs", "_combo", "_fold_partitions", "_lookups", "_saved_state", "base", "embeddings",
           "node", "node_merlin"}
# Categorify's NVTabular notes and its vocabulary-file reader, combined keys, TargetEncoding's fitted
# partitions (tests/test_op_target_encoding_partitions.py), the lookups built once and ahead
# (tests/test_lookups_ahead.py), the contract, embedding sizes, the column graph that `>>` builds,
# merlin's Node API on it
#: ops tested in a file shared with other ops rather than tests/test_op_<module>.py.
#: Each entry is debt: give the op its own test file and remove it here.
SHARED_TESTS = {
    "clip": "test_ops_simple.py",
    "filter": "test_ops_simple.py",
    "lambda_op": "test_ops_simple.py",
    "log_op": "test_ops_simple.py",
    "rename": "test_ops_simple.py",
    "fill_missing": "test_ops_fill.py",
    "fill_median": "test_ops_fill.py",
    "normalize": "test_ops_normalize.py",
    "normalize_minmax": "test_ops_normalize.py",
}


def op_modules():
    return sorted(m.name for m in pkgutil.iter_modules(ops.__path__) if m.name not in NOT_OPS)


def ops_defined_in(module_name: str):
    mod = importlib.import_module(f"tabprep.ops.{module_name}")
    return [c for _, c in inspect.getmembers(mod, inspect.isclass)
            if issubclass(c, Operator) and c.__module__ == mod.__name__]


@pytest.mark.parametrize("module_name", op_modules())
def test_every_ops_module_defines_registered_ops(module_name):
    classes = ops_defined_in(module_name)
    assert classes, f"tabprep/ops/{module_name}.py defines no Operator subclass; helpers belong in base.py or elsewhere"
    for cls in classes:
        assert registered_ops().get(cls.__name__) is cls, f"{cls.__name__} ({module_name}.py) is not registered"
        assert getattr(ops, cls.__name__) is cls, f"{cls.__name__} is not re-exported from tabprep.ops"


@pytest.mark.parametrize("module_name", op_modules())
def test_every_op_has_a_test_file(module_name):
    own = TESTS / f"test_op_{module_name}.py"
    shared = SHARED_TESTS.get(module_name)
    if own.exists():
        assert shared is None, f"{module_name} has its own test file now: remove it from SHARED_TESTS"
        text = own.read_text()
    else:
        assert shared is not None, f"ops/{module_name}.py has no tests/test_op_{module_name}.py"
        text = (TESTS / shared).read_text()
    for cls in ops_defined_in(module_name):
        assert cls.__name__ in text, f"{cls.__name__} is not exercised in {own.name if own.exists() else shared}"


def test_registry_holds_exactly_the_ops_of_the_package():
    defined = {c.__name__: c for m in op_modules() for c in ops_defined_in(m)}
    builtin = {k: v for k, v in registered_ops().items() if v.__module__.startswith("tabprep.ops.")}
    assert builtin == defined
    assert "Operator" not in registered_ops() and "StatOperator" not in registered_ops()


def test_user_ops_register_only_when_asked():
    class Unlisted(Operator):
        def transform(self, columns, df):
            return df[columns]

    class Listed(Operator, register=True):
        def transform(self, columns, df):
            return df[columns]

    try:
        assert "Unlisted" not in registered_ops()
        assert registered_ops()["Listed"] is Listed
        assert ops.register(Unlisted) is Unlisted and registered_ops()["Unlisted"] is Unlisted
    finally:
        from tabprep.ops import base

        base._REGISTRY.pop("Listed", None)
        base._REGISTRY.pop("Unlisted", None)
    assert "Listed" not in registered_ops()


def test_contract_is_declared_on_the_base_classes():
    # what the graph, the engine, serialization and the loaders read from every op
    for name, default in [("output_tags", ()), ("supports_lists", False), ("changes_rows", False),
                          ("supports_groups", False), ("input_groups", ()), ("_bound", False)]:
        assert name in vars(Operator), f"Operator does not declare {name}"
        assert vars(Operator)[name] == default
    assert "stats_" in vars(StatOperator) and StatOperator.stats_ is None


def test_groups_reach_ops_that_support_them_and_instances_do_not_share_them():
    a, b = ops.Categorify(), ops.Categorify()
    wf = tp.Workflow((["x", ["u", "v"]] >> a) + (["y"] >> b))
    assert a.input_groups == [["u", "v"]] and b.input_groups == []
    assert a._bound and b._bound
    with pytest.raises(ValueError, match="already used in a graph"):
        ["z"] >> a
    clip = ops.Clip(min_value=0)
    ["x", ["u", "v"]] >> clip
    assert not clip.supports_groups and clip.input_groups == ()
    assert wf.output_columns == ["x", "u", "v", "y"]
