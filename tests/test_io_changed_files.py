"""A parquet file that is not the file the job planned its reads from (replaced after the plan, or a
dask worker that sees another file at the same path): every partition's read checks its rows
against the rows planned from the footer, so the job fails naming the file, the planned and found
row counts and the fix, instead of writing an output with rows missing or extra.

The files are rewritten between planning (``Dataset.num_rows`` / ``Workflow.fit``, which read the
footers and plan the pieces) and the reads, from the user's side; the expected counts are those the
test writes with pyarrow.
"""
from __future__ import annotations

import logging

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import is_cpu, to_pandas

import tabprep as tp
from tabprep import ops

FIX = "every worker sees the same files"


def _write(path, n: int, row_group_size=None, start: int = 0):
    pq.write_table(pa.table({"x": pa.array(range(start, start + n), pa.int64()),
                             "c": pa.array([f"v{i % 3}" for i in range(n)])}),
                   path, row_group_size=row_group_size)
    return str(path)


def _assert_changed(msg: str, path: str, planned: int, found: str) -> None:
    assert path in msg, msg
    assert f"planned {planned} rows" in msg and f"found {found}" in msg, msg
    assert "changed after the job planned its reads" in msg and FIX in msg, msg


@pytest.mark.parametrize("after", [15, 4])   # more rows, fewer rows; the same single row group
def test_a_file_rewritten_with_other_rows_after_planning_is_refused(tmp_path, backend, after):
    path = _write(tmp_path / "p.parquet", 10)
    ds = tp.Dataset(path, cpu=is_cpu(backend))
    assert ds.num_rows == 10   # the reads are planned here, from the footer
    _write(tmp_path / "p.parquet", after)
    with pytest.raises(ValueError) as err:
        ds.compute()   # was: 15 or 4 rows, no word
    _assert_changed(str(err.value), path, 10, f"{after} rows")


def test_a_planned_row_group_that_is_gone_is_named_with_the_counts(tmp_path, backend):
    path = _write(tmp_path / "p.parquet", 10, row_group_size=5)
    ds = tp.Dataset(path, cpu=is_cpu(backend))
    assert ds.npartitions == 1 and ds.pieces[0].row_groups == (0, 1)
    _write(tmp_path / "p.parquet", 3)   # one row group of 3 rows: row group 1 is gone
    with pytest.raises(ValueError) as err:
        ds.compute()   # was: "cannot read row groups [0, 1] ... corrupt", with pyarrow's index error
    _assert_changed(str(err.value), path, 10, "a file of 1 row group and 3 rows")


def test_an_empty_file_that_now_holds_rows_is_refused(tmp_path):
    a = _write(tmp_path / "a.parquet", 4)
    b = _write(tmp_path / "b.parquet", 0)
    ds = tp.Dataset([a, b], cpu=True)
    assert ds.num_rows == 4
    _write(tmp_path / "b.parquet", 6)
    with pytest.raises(ValueError) as err:
        ds.compute()   # was: 4 rows, b's 6 left out
    _assert_changed(str(err.value), b, 0, "6 rows")


def test_a_hive_partition_rewritten_after_planning_is_refused(tmp_path):
    (tmp_path / "k=1").mkdir()
    path = _write(tmp_path / "k=1" / "p.parquet", 5)
    ds = tp.Dataset(str(tmp_path), cpu=True)
    assert ds.num_rows == 5
    _write(tmp_path / "k=1" / "p.parquet", 8)
    with pytest.raises(ValueError) as err:
        ds.compute()
    _assert_changed(str(err.value), path, 5, "8 rows")


def test_the_unchanged_file_reads_as_planned(tmp_path, backend):
    # the check must not refuse what it should read: a rewrite with the same rows is the same data
    path = _write(tmp_path / "p.parquet", 10, row_group_size=4)
    ds = tp.Dataset(path, cpu=is_cpu(backend), row_groups_per_part=1)
    assert ds.num_rows == 10
    _write(tmp_path / "p.parquet", 10, row_group_size=4)
    out = to_pandas(ds.compute())   # (a cuDF frame on the GPU: not iterable)
    assert len(out) == 10 and list(out["x"]) == list(range(10))


def test_transform_to_parquet_fails_and_commits_no_output(tmp_path):
    path = _write(tmp_path / "p.parquet", 12, row_group_size=4)
    ds = tp.Dataset(path, cpu=True, row_groups_per_part=1)
    wf = tp.Workflow((["c"] >> ops.Categorify()) + ["x"]).fit(ds)   # plans the reads
    out = tmp_path / "out"
    wf.transform(ds).to_parquet(str(out))   # a first, good version of the output
    good = pq.read_table(str(out)).num_rows
    assert good == 12
    before = sorted(p.name for p in out.iterdir())

    _write(tmp_path / "p.parquet", 9, row_group_size=4)   # 4 + 4 + 1 rows: the last group is short
    with pytest.raises(ValueError) as err:
        wf.transform(ds).to_parquet(str(out), overwrite=True)
    _assert_changed(str(err.value), path, 4, "1 row")
    # the previous version is still the committed one, whole; no half-written version beside it
    assert sorted(p.name for p in out.iterdir()) == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []
    assert tp.Dataset(str(out), cpu=True).num_rows == good and pq.read_table(str(out)).num_rows == good


def test_transform_to_a_new_folder_leaves_nothing_that_looks_complete(tmp_path):
    path = _write(tmp_path / "p.parquet", 12, row_group_size=4)
    ds = tp.Dataset(path, cpu=True, row_groups_per_part=1)
    wf = tp.Workflow(["x"] >> ops.Normalize()).fit(ds)
    _write(tmp_path / "p.parquet", 11, row_group_size=4)   # 4 + 4 + 3 rows
    out = tmp_path / "out"
    with pytest.raises(ValueError) as err:
        wf.transform(ds).to_parquet(str(out))
    _assert_changed(str(err.value), path, 4, "3 rows")
    assert not out.exists() or not (out / "_SUCCESS").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []


def test_profile_of_a_rewritten_file_is_refused(tmp_path):
    # the data profile reads local parquet pieces column by column (io.dataset_read.piece_columns)
    path = _write(tmp_path / "p.parquet", 10)
    ds = tp.Dataset(path, cpu=True)
    assert ds.num_rows == 10
    _write(tmp_path / "p.parquet", 7)
    with pytest.raises(ValueError) as err:
        tp.profile(ds)
    _assert_changed(str(err.value), path, 10, "7 rows")


def test_cli_transform_names_the_file_and_writes_no_output(tmp_path, monkeypatch):
    from cli_helpers import run

    import tabprep.io.dataset as dsmod

    path = _write(tmp_path / "p.parquet", 10, row_group_size=5)
    tp.Workflow((["c"] >> ops.Categorify()) + ["x"]).fit(tp.Dataset(path, cpu=True)).save(str(tmp_path / "wf"))
    plan = dsmod.plan_pieces

    def plan_then_replace(*args, **kwargs):   # the file is replaced once its reads are planned
        pieces = plan(*args, **kwargs)
        _write(tmp_path / "p.parquet", 7, row_group_size=5)   # 5 + 2 rows
        return pieces

    monkeypatch.setattr(dsmod, "plan_pieces", plan_then_replace)
    r = run("transform", tmp_path / "wf", path, "--out", tmp_path / "out", code=1)
    assert path in r.output and "planned 10 rows" in r.output and FIX in r.output, r.output
    assert "Traceback" not in r.output
    assert not (tmp_path / "out").exists() or not (tmp_path / "out" / "_SUCCESS").exists()


def test_a_cluster_worker_reading_another_file_is_refused(tmp_path):
    distributed = pytest.importorskip("distributed")
    path = _write(tmp_path / "p.parquet", 10)
    ds = tp.Dataset(path, cpu=True)
    assert ds.num_rows == 10
    _write(tmp_path / "p.parquet", 25)   # what the worker process sees at that path
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=logging.ERROR) as cluster, distributed.Client(cluster):
        with pytest.raises(ValueError) as err:
            ds.compute()
    _assert_changed(str(err.value), path, 10, "25 rows")
