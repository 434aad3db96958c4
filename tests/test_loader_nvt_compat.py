"""Core DataLoader behaviours NVTabular users rely on (issue #14): stateless workflows attach without
fit, sparse_as_dense pads only sparse_names, nested lists come as leaves + leaves per row."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops
from tabprep.loader import DataLoader, RaggedBatch


def test_core_loader_takes_stateless_workflow_without_fit(tmp_path):
    df = pd.DataFrame({"C1": np.arange(100) % 7, "label": np.arange(100) % 2})
    df.to_parquet(tmp_path / "d.parquet")
    wf = tp.Workflow((["C1"] >> ops.HashBucket(num_buckets=10)) + ["label"])
    assert wf.fitted
    batch = next(iter(DataLoader(str(tmp_path / "d.parquet"), batch_size=100, label_names=["label"],
                                 shuffle=False, device="cpu").map(wf)))
    np.testing.assert_array_equal(batch["C1"], wf.transform(df)["C1"].to_numpy())


def test_core_sparse_as_dense_only_for_sparse_names(tmp_path):
    df = pd.DataFrame({"a": [[1, 2, 3], [3], [], [4]] * 5, "b": [[1], [2, 3], [4], []] * 5, "label": np.arange(20)})
    df.to_parquet(tmp_path / "d.parquet")
    loader = DataLoader(str(tmp_path / "d.parquet"), batch_size=4, cat_names=["a", "b"], label_names=["label"],
                        shuffle=False, device="cpu", sparse_names=["a"], sparse_as_dense=True, sparse_max={"a": 2})
    batch = next(iter(loader))
    assert batch["a"].tolist() == [[1, 2], [3, 0], [0, 0], [4, 0]]
    assert isinstance(batch["b"], RaggedBatch) and batch["b"].lengths.tolist() == [1, 2, 1, 0]


@pytest.mark.parametrize("shuffle", [False, True])
def test_core_nested_lists_give_leaves_and_leaves_per_row(tmp_path, shuffle):
    # (once refused by name; issue #31) NVTabular's layout: leaf values + leaves per row
    rows = [[[1, 2], [3]], [[4]], [], [[5, 6, 7]]] * 5
    df = pd.DataFrame({"x": rows, "label": np.arange(20)})
    df.to_parquet(tmp_path / "d.parquet")
    loader = DataLoader(str(tmp_path / "d.parquet"), batch_size=4, cat_names=["x"], label_names=["label"],
                        shuffle=shuffle, seed=0, device="cpu")
    batch = next(iter(loader))
    want = [rows[i] for i in batch["label"]]
    assert batch["x"].values.tolist() == [v for r in want for inner in r for v in inner]
    assert batch["x"].lengths.tolist() == [sum(len(inner) for inner in r) for r in want]
