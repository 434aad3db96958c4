"""Hashed ids (docs/migration.md, "Hash values"): tabprep hashes with murmur3 on every backend,
NVTabular 23.08 with ``hash_pandas_object`` on the CPU (checked on nvtabular 23.8.0: its hash
includes the row's index, so ``HashBucket(10)`` of ``["x", "y", "z", "x"]`` gives ``[4, 4, 1, 8]``),
cuDF's murmur3 on the GPU, and XOR for crosses. The ids differ, so the first hashed op a process
builds says so (once per op, not when a saved workflow is loaded)."""
from __future__ import annotations

import warnings

import mmh3
import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops
from tabprep import _warn

BUILDERS = {
    "HashBucket": lambda: ["x"] >> ops.HashBucket(10),
    "HashedCross": lambda: [["x", "y"]] >> ops.HashedCross(10),
    "Categorify": lambda: ["x"] >> ops.Categorify(num_buckets=3),
}


def _notes(build):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        node = build()
    return node, [w for w in rec if "murmur3" in str(w.message)]


@pytest.mark.parametrize("name", list(BUILDERS))
def test_first_hashed_op_built_says_its_ids_are_not_nvtabulars(name, monkeypatch, tmp_path):
    monkeypatch.setattr(_warn, "_ONCE", set())   # once per process: as in a fresh one
    node, notes = _notes(BUILDERS[name])
    assert len(notes) == 1 and notes[0].category is tp.NVTabularDifferenceWarning
    text = str(notes[0].message)
    assert text.startswith(f"{name}:") and "NVTabular 23.08" in text and "hash_pandas_object" in text
    assert notes[0].filename == __file__          # points at the user's line that built the op
    _, again = _notes(BUILDERS[name])
    assert again == []                           # once per process and op
    # loading a saved workflow builds the op again without a note
    monkeypatch.setattr(_warn, "_ONCE", set())   # once per process: as in a fresh one
    df = pd.DataFrame({"x": ["a", "b", "a", None], "y": [1, 2, 3, 4]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wf = tp.Workflow(BUILDERS[name]()).fit(df)
    monkeypatch.setattr(_warn, "_ONCE", set())   # once per process: as in a fresh one
    wf.save(str(tmp_path / "wf"))
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        tp.Workflow.load(str(tmp_path / "wf"))
    assert not [w for w in rec if "murmur3" in str(w.message)]


def test_categorify_without_hashing_says_nothing(monkeypatch):
    monkeypatch.setattr(_warn, "_ONCE", set())   # once per process: as in a fresh one
    _, notes = _notes(lambda: ["x"] >> ops.Categorify())
    assert notes == []


def test_hash_bucket_ids_are_murmur3_not_row_dependent():
    """The numbers behind the note: the same value gets the same id in every row (mmh3, not
    tabprep's code, as reference)."""
    df = pd.DataFrame({"x": ["x", "y", "z", "x"]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tp.NVTabularDifferenceWarning)
        out = tp.Workflow(["x"] >> ops.HashBucket(10)).fit_transform(df)
    out = out.compute() if hasattr(out, "compute") else out
    expect = [mmh3.hash(v.encode(), 0, signed=False) % 10 for v in df["x"]]
    assert out["x"].tolist() == expect and out["x"][0] == out["x"][3]
