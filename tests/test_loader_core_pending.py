"""Loader behaviours whose fix belongs in tabprep/loader/core.py (being split into modules by a
parallel refactor). Each test states the expected behaviour from the user's side and is marked
xfail(strict=True) until the change described in its reason is applied; the PyTorch / JAX /
Keras adapters already work around the first two."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops
from tabprep.loader import DataLoader, RaggedBatch


@pytest.mark.xfail(strict=True, raises=RuntimeError, reason=(
    "core.DataLoader.map: a workflow of stateless ops (fitted, never bound to a schema) raises 'the output schema "
    "is known once the workflow is fitted'. Fix: in map(), after workflow._require_fitted(), bind it to the "
    "source's schema when it has none: `if workflow._output_schema is None and self._source.schema is not None: "
    "workflow.bind_schema(self._source.schema, self._source.describe())`"))
def test_core_loader_takes_stateless_workflow_without_fit(tmp_path):
    df = pd.DataFrame({"C1": np.arange(100) % 7, "label": np.arange(100) % 2})
    df.to_parquet(tmp_path / "d.parquet")
    wf = tp.Workflow((["C1"] >> ops.HashBucket(num_buckets=10)) + ["label"])
    assert wf.fitted
    batch = next(iter(DataLoader(str(tmp_path / "d.parquet"), batch_size=100, label_names=["label"],
                                 shuffle=False, device="cpu").map(wf)))
    np.testing.assert_array_equal(batch["C1"], wf.transform(df)["C1"].to_numpy())


@pytest.mark.xfail(strict=True, raises=ValueError, reason=(
    "core.DataLoader._to_columns: with sparse_names=[...] and sparse_as_dense=True, a list column NOT in "
    "sparse_names raises 'needs sparse_max' instead of staying ragged (NVTabular pads only sparse_names). Fix: "
    "`if self.sparse_as_dense and self._sparse_names_arg is None and name not in self._sparse_max: raise ...` "
    "(_prepare_chunk already pads only the columns in self._sparse_max)"))
def test_core_sparse_as_dense_only_for_sparse_names(tmp_path):
    df = pd.DataFrame({"a": [[1, 2, 3], [3], [], [4]] * 5, "b": [[1], [2, 3], [4], []] * 5, "label": np.arange(20)})
    df.to_parquet(tmp_path / "d.parquet")
    loader = DataLoader(str(tmp_path / "d.parquet"), batch_size=4, cat_names=["a", "b"], label_names=["label"],
                        shuffle=False, device="cpu", sparse_names=["a"], sparse_as_dense=True, sparse_max={"a": 2})
    batch = next(iter(loader))
    assert batch["a"].tolist() == [[1, 2], [3, 0], [0, 0], [4, 0]]
    assert isinstance(batch["b"], RaggedBatch) and batch["b"].lengths.tolist() == [1, 2, 1, 0]


@pytest.mark.xfail(strict=True, reason=(
    "core.DataLoader._to_columns: a list<list<int>> column (the SOK notebook's samples.tolist()) gives object "
    "arrays of arrays (shuffle=False) or 'setting an array element with a sequence' in the prefetch thread "
    "(shuffle=True). Minimal fix: after `leaves, offsets = backend.list_leaves(s)`, `if "
    "backend.is_list_series(leaves) or getattr(leaves, 'dtype', None) == object: raise TypeError(f'column "
    "{name!r} is a nested list (list<list<...>>): the loader emits one level of lists; flatten it in the workflow "
    "or write it as one list column')`; full support (two ragged levels) needs list_leaves twice and a "
    "(values, inner_lengths, outer_lengths) batch type"))
@pytest.mark.parametrize("shuffle", [False, True])
def test_core_nested_lists_refused_with_column_name(tmp_path, shuffle):
    df = pd.DataFrame({"x": [[[1, 2], [3]], [[4]], [], [[5, 6, 7]]] * 5, "label": np.arange(20)})
    df.to_parquet(tmp_path / "d.parquet")
    loader = DataLoader(str(tmp_path / "d.parquet"), batch_size=4, cat_names=["x"], label_names=["label"],
                        shuffle=shuffle, seed=0, device="cpu")
    with pytest.raises(TypeError, match=r"'x'.*nested"):
        next(iter(loader))
