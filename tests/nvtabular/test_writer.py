"""NVTabular 23.08's offline output (``workflow.transform(ds).to_parquet(output_path=...)``, written by
merlin-core through dask): what a ported pipeline reads back from the folder. Checked with pyarrow."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

import tabprep as tp
from tabprep import ops


def _frame(n=30):
    x = np.linspace(-1, 1, n)
    x[2] = np.nan
    x[5] = np.inf
    return pd.DataFrame({"c": [f"k{i % 4}" if i % 7 else None for i in range(n)], "x": x,
                         "label": (np.arange(n) % 2).astype("int64")})


def _check_summary(out, n_rows):
    md = pq.read_metadata(out / "_metadata")
    assert md.num_rows == n_rows
    paths = {md.row_group(i).column(0).file_path for i in range(md.num_row_groups)}
    assert paths and all((out / p).is_file() for p in paths)
    # the data files' own row counts, as pyarrow reads them
    assert sum(pq.read_metadata(out / p).num_rows for p in paths) == n_rows
    return md


@pytest.mark.parametrize("kwargs", [{}, {"output_files": 2}, {"shuffle": "full", "output_files": 3}])
def test_to_parquet_writes_metadata_summary(tmp_path, kwargs):
    """merlin.io writes a ``_metadata`` summary file with every part's row groups (dask's
    write_metadata_file); pq.read_metadata(out / "_metadata") works, and a reader planning from it
    (pyarrow.dataset.parquet_dataset) gets the rows."""
    df = _frame()
    wf = tp.Workflow((["c"] >> ops.Categorify()) + ["x", "label"])
    ds = tp.Dataset(df, npartitions=3)
    wf.fit(ds)
    out = tmp_path / "out"
    wf.transform(ds).to_parquet(output_path=str(out), seed=0, **kwargs)
    _check_summary(out, len(df))
    table = pads.parquet_dataset(str(out / "_metadata")).to_table()
    assert table.num_rows == len(df)
    if "shuffle" not in kwargs:
        assert table.column("label").to_pylist() == df["label"].tolist()
    # tabprep (and its loader) read the folder as before: _metadata is not a data file
    back = tp.Dataset(str(out)).compute()
    assert len(back) == len(df) and sorted(back["label"]) == sorted(df["label"])


def test_metadata_summary_per_worker_folder(tmp_path):
    """split_per_worker: the root's summary lists every file (worker_K/part...), each worker
    folder has its own summary of its files, readable alone."""
    df = _frame(31)
    out = tmp_path / "out"
    tp.Dataset(df, npartitions=2).to_parquet(str(out), split_per_worker=2)
    _check_summary(out, 31)
    rows = [pq.read_metadata(out / f"worker_{w}" / "_metadata").num_rows for w in range(2)]
    assert sorted(rows) == [15, 16]
    for w in range(2):
        _check_summary(out / f"worker_{w}", rows[w])
    md = pq.read_metadata(out / "worker_1" / "_metadata")
    assert md.row_group(0).column(0).file_path.startswith("part-")


def test_metadata_summary_is_part_of_the_commit(tmp_path):
    """The summary is written before _SUCCESS inside the folder the commit renames into place; an
    overwrite replaces it with the new one."""
    out = tmp_path / "out"
    tp.Dataset(_frame(10)).to_parquet(str(out))
    assert pq.read_metadata(out / "_metadata").num_rows == 10
    tp.Dataset(_frame(12)).to_parquet(str(out), overwrite=True)
    assert pq.read_metadata(out / "_metadata").num_rows == 12
    assert tp.Dataset(str(out)).num_rows == 12
