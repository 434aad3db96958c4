"""Read problems name the file and the column, and say how to fix them (issue #11)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tabprep as tp
from tabprep import ops


def _files(folder: Path, frames) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i, f in enumerate(frames):
        f.to_parquet(folder / f"f{i}.parquet")
    return folder


def _wf():
    return tp.Workflow((["C1"] >> ops.Categorify()) + (["I1"] >> ops.FillMissing()) + ["label"])


def _frame(n=100, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"C1": rng.integers(0, 9, n), "I1": rng.random(n), "label": rng.integers(0, 2, n)})


def test_truncated_parquet_names_the_file(tmp_path):
    folder = _files(tmp_path / "d", [_frame(), _frame(seed=1)])
    bad = folder / "f1.parquet"
    bad.write_bytes(bad.read_bytes()[: len(bad.read_bytes()) // 2])
    with pytest.raises(Exception, match="f1.parquet"):
        _wf().fit(tp.Dataset(str(folder)))


def test_file_missing_a_column_names_file_and_column(tmp_path):
    folder = _files(tmp_path / "d", [_frame(), _frame(seed=1), _frame(seed=2).drop(columns=["I1"])])
    with pytest.raises(Exception, match=r"(?s)(I1.*f2\.parquet|f2\.parquet.*I1)"):
        _wf().fit(tp.Dataset(str(folder)))


def test_column_type_differs_between_files_names_file_and_column(tmp_path):
    other = _frame(seed=1)
    other["C1"] = other["C1"].map(lambda v: f"s{v}")
    folder = _files(tmp_path / "d", [_frame(), other])
    with pytest.raises(Exception, match=r"(?s)(C1.*f1\.parquet|f1\.parquet.*C1)"):
        _wf().fit(tp.Dataset(str(folder)))


def test_duplicate_column_names_are_refused_naming_the_column(tmp_path):
    table = pa.table([pa.array([1, 2]), pa.array([3, 4]), pa.array([0, 1])], names=["C1", "C1", "label"])
    tmp_path.mkdir(exist_ok=True)
    pq.write_table(table, tmp_path / "dup.parquet")
    with pytest.raises(Exception, match=r"(?s)(duplicate.*C1|C1.*duplicate).*dup\.parquet|dup\.parquet.*(duplicate.*C1|C1.*duplicate)"):
        tp.Workflow((["C1"] >> ops.Categorify()) + ["label"]).fit(tp.Dataset(str(tmp_path / "dup.parquet")))
