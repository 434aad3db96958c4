"""TargetEncoding(kfold > 1) out-of-fold on data partitioned otherwise than the fit, from the user's side.

A row's fold is a hash of its row id (the row number within its parquet piece) and the seed, so
the folds follow the partitioning. ``wf.transform(train, out_of_fold=True)`` on the training files
read with another ``row_groups_per_part`` / ``part_size`` gave a row another fold than at fit, and
it was encoded with statistics that hold its own target, silently (docs/migration.md, found
2026-11-29). Each fitted partition's fingerprint is now kept with the op; a partition an
out-of-fold transform meets that is none of them is a ``ValueError`` naming the op and the fix.

The expected values are computed here with plain pandas / Python (folds written out as the op
documents them: ``splitmix64(row id + fold_seed) % kfold``).
"""
from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tabprep as tp
from tabprep import ops

from conftest import is_cpu, make_dataset, to_pandas

# the fit notes on nulls (NVTabular differences) are not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::tabprep.NVTabularDifferenceWarning")

M64 = (1 << 64) - 1
K, P, SEED = 3, 4.0, 11
ROWS_PER_GROUP = 40


def _fold(row: int, seed: int, k: int) -> int:
    z = (row + seed * 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return (z ^ (z >> 31)) % k


def _frame(n: int, seed: int = 0) -> pd.DataFrame:
    """A category with nulls (nullable ints) and a string one with nulls; a 0/1 target with NaNs."""
    rng = np.random.default_rng(seed)
    a = pd.array(rng.integers(0, 6, n), dtype="Int64")
    a[rng.random(n) < 0.15] = pd.NA
    s = rng.choice(np.array(["x", "y", "z"], dtype=object), n)
    s[rng.random(n) < 0.15] = None
    y = rng.integers(0, 2, n).astype("float64")
    y[rng.random(n) < 0.05] = np.nan
    return pd.DataFrame({"a": a, "s": pd.Series(s, dtype="str"), "y": y})


def _ref_oof(df: pd.DataFrame, piece_lengths, key: str) -> np.ndarray:
    """Each row: ``(sum + P * mean) / (count + P)`` of its category over the rows of the OTHER folds
    (rows with a null target left out), ``mean`` the other folds' mean target; a null category
    gets that mean. Folds from each row's number within its piece."""
    assert sum(piece_lengths) == len(df)
    folds = np.array([_fold(i, SEED, K) for n in piece_lengths for i in range(n)])
    keys = [None if pd.isna(v) else v for v in df[key].astype(object).tolist()]
    ys = df["y"].tolist()
    out = np.empty(len(df))
    for i in range(len(df)):
        other = [j for j in range(len(df)) if folds[j] != folds[i] and not np.isnan(ys[j])]
        gm = float(np.mean([ys[j] for j in other]))
        if keys[i] is None:
            out[i] = gm
            continue
        same = [ys[j] for j in other if keys[j] == keys[i]]
        out[i] = (sum(same) + P * gm) / (len(same) + P)
    return out


def _ref_full(df: pd.DataFrame, key: str) -> np.ndarray:
    ok = df[df["y"].notna()]
    gm = ok["y"].mean()
    g = ok[ok[key].notna()].groupby(key)["y"].agg(["sum", "count"])
    enc = (g["sum"] + P * gm) / (g["count"] + P)
    return df[key].map(enc).astype("float64").fillna(gm).to_numpy()


@pytest.fixture()
def files(tmp_path):
    """Three parquet files of 160, 120 and 200 rows, row groups of 40 rows; and their frame."""
    df = _frame(480)
    paths, start = [], 0
    for i, n in enumerate((160, 120, 200)):
        path = tmp_path / f"part{i}.parquet"
        pq.write_table(pa.Table.from_pandas(df.iloc[start:start + n], preserve_index=False), path,
                       row_group_size=ROWS_PER_GROUP)
        paths.append(str(path))
        start += n
    return paths, df


def _workflow() -> tp.Workflow:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tp.NVTabularDifferenceWarning)   # the build-time note on transform
        return tp.Workflow(["a", "s"] >> ops.TargetEncoding("y", kfold=K, p_smooth=P, fold_seed=SEED,
                                                            out_dtype="float64"))


def _pieces(rows_per_file, groups_per_part):
    """The row counts of the pieces ``row_groups_per_part`` makes of files of ``rows_per_file`` rows."""
    step = groups_per_part * ROWS_PER_GROUP
    return [min(step, n - a) for n in rows_per_file for a in range(0, n, step)]


def _check_oof(out: pd.DataFrame, df: pd.DataFrame, lengths) -> None:
    for key in ("a", "s"):
        np.testing.assert_allclose(out[f"TE_{key}_y"].to_numpy(), _ref_oof(df, lengths, key), rtol=1e-12)


def _partitioning_error(exc: pytest.ExceptionInfo) -> str:
    msg = str(exc.value)
    for words in ("TargetEncoding", "'y'", "out_of_fold=True", "partitioned differently", "row_groups_per_part",
                  "out_of_fold=False"):
        assert words in msg, (words, msg)
    return msg


# -- the same partitioning: out-of-fold values, as before ----------------------------------------------------
def test_same_partitioning_gives_the_out_of_fold_reference(files):
    paths, df = files
    wf = _workflow()
    wf.fit(tp.Dataset(paths, row_groups_per_part=2))
    out = to_pandas(wf.transform(tp.Dataset(paths, row_groups_per_part=2), out_of_fold=True))
    _check_oof(out, df, _pieces((160, 120, 200), 2))
    # the in-memory path (one frame, one partition) after a fit on that one partition
    single = _workflow()
    single.fit(tp.Dataset(df))
    _check_oof(single.transform(df, out_of_fold=True), df, [len(df)])


def test_fit_transform_gives_the_out_of_fold_reference(files):
    paths, df = files
    out = to_pandas(_workflow().fit_transform(tp.Dataset(paths, row_groups_per_part=3)))
    _check_oof(out, df, _pieces((160, 120, 200), 3))


def test_files_in_another_order_keep_their_pieces_and_folds(tmp_path, files):
    """On the CPU a piece stays within one file: the same files in another order (copies renamed so
    that the last sorts first) make the same pieces, each row keeps its row id, nothing leaks and
    nothing is refused."""
    import shutil

    paths, df = files
    wf = _workflow()
    wf.fit(tp.Dataset(paths, row_groups_per_part=2))
    (tmp_path / "renamed").mkdir()
    for name, src in zip("cba", paths):
        shutil.copy(src, tmp_path / "renamed" / f"{name}.parquet")
    out = to_pandas(wf.transform(tp.Dataset(str(tmp_path / "renamed"), row_groups_per_part=2), out_of_fold=True))
    starts = [0, 160, 280, 480]
    back = pd.concat([df.iloc[starts[i]:starts[i + 1]] for i in (2, 1, 0)], ignore_index=True)
    _check_oof(out, back, _pieces((200, 120, 160), 2))


# -- another partitioning: refused, where it leaked before ---------------------------------------------------
@pytest.mark.parametrize("other", [{"row_groups_per_part": 3}, {"row_groups_per_part": 1}, {"part_size": "4kB"}])
def test_other_partitioning_out_of_fold_raises(files, other):
    paths, df = files
    wf = _workflow()
    wf.fit(tp.Dataset(paths, row_groups_per_part=2))
    ds = tp.Dataset(paths, **other)
    with pytest.raises(ValueError) as exc:
        to_pandas(wf.transform(ds, out_of_fold=True))
    msg = _partitioning_error(exc)
    assert "not one of the 7 partitions" in msg, msg
    # the statistics of all the fitted data for data that is not transformed out-of-fold: no error
    full = to_pandas(wf.transform(ds))
    for key in ("a", "s"):
        np.testing.assert_allclose(full[f"TE_{key}_y"].to_numpy(), _ref_full(df, key), rtol=1e-12)


def test_what_leaked_before_is_what_is_refused(files):
    """The values the old code gave on the other partitioning are not the out-of-fold ones: rows got
    another fold than at fit (here a third of them or more), so the refusal is not a false alarm."""
    paths, df = files
    fitted = _pieces((160, 120, 200), 2)
    other = _pieces((160, 120, 200), 3)
    fit_folds = np.array([_fold(i, SEED, K) for n in fitted for i in range(n)])
    new_folds = np.array([_fold(i, SEED, K) for n in other for i in range(n)])
    assert (fit_folds != new_folds).mean() > 0.3


def test_same_rows_in_another_order_within_a_piece_raise(tmp_path, files):
    """A partition of the fitted length and row ids whose rows are in another order (the rows of a
    file shuffled): its row ids carry other targets, so it is refused too (the fingerprint holds a
    digest of the target by row id, not only the length and the row ids)."""
    paths, df = files
    wf = _workflow()
    wf.fit(tp.Dataset(paths[0]))
    rows = df.iloc[:160].sample(frac=1.0, random_state=3)
    shuffled = tmp_path / "shuffled.parquet"
    pq.write_table(pa.Table.from_pandas(rows, preserve_index=False), shuffled)
    with pytest.raises(ValueError) as exc:
        to_pandas(wf.transform(tp.Dataset(str(shuffled)), out_of_fold=True))
    msg = _partitioning_error(exc)
    assert "other target values" in msg, msg


def test_in_memory_frames_partitioned_otherwise_raise():
    """Partitions of a dask frame, each indexed from 0 (as parquet pieces): 4 at fit, 3 at transform."""
    df = _frame(300, seed=1)
    wf = _workflow()
    wf.fit(make_dataset(df, nparts=4))
    with pytest.raises(ValueError) as exc:
        to_pandas(wf.transform(make_dataset(df, nparts=3), out_of_fold=True))
    _partitioning_error(exc)
    # and one frame given to transform after a fit on several partitions
    with pytest.raises(ValueError) as exc:
        wf.transform(df, out_of_fold=True)
    _partitioning_error(exc)


def test_empty_partitions_and_empty_files(tmp_path):
    """Empty partitions (dask frames) and an empty parquet file are never refused: they have no row
    to encode. The other partitions are checked as usual."""
    df = _frame(240, seed=2)
    wf = _workflow()
    out = to_pandas(wf.fit_transform(make_dataset(df, nparts=3, empties=True)))
    assert len(out) == len(df)
    # parquet: an empty file among the fitted files
    empty = tmp_path / "empty.parquet"
    pq.write_table(pa.Table.from_pandas(df.iloc[:0], preserve_index=False), empty)
    full = tmp_path / "full.parquet"
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), full, row_group_size=ROWS_PER_GROUP)
    wf = _workflow()
    wf.fit(tp.Dataset([str(empty), str(full)], row_groups_per_part=2))
    out = to_pandas(wf.transform(tp.Dataset([str(full), str(empty)], row_groups_per_part=2), out_of_fold=True))
    _check_oof(out, df, _pieces((240,), 2))
    # an empty file alone: nothing to check, no error
    assert len(to_pandas(wf.transform(tp.Dataset(str(empty)), out_of_fold=True))) == 0
    with pytest.raises(ValueError) as exc:
        to_pandas(wf.transform(tp.Dataset([str(empty), str(full)], row_groups_per_part=1), out_of_fold=True))
    _partitioning_error(exc)


# -- the fingerprint is saved with the op ---------------------------------------------------------------------
def test_the_check_survives_save_and_load(tmp_path, files):
    paths, df = files
    wf = _workflow()
    wf.fit(tp.Dataset(paths, row_groups_per_part=2))
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # a workflow saved with its fingerprints: nothing to warn
        out = to_pandas(loaded.transform(tp.Dataset(paths, row_groups_per_part=2), out_of_fold=True))
    _check_oof(out, df, _pieces((160, 120, 200), 2))
    with pytest.raises(ValueError) as exc:
        to_pandas(loaded.transform(tp.Dataset(paths, row_groups_per_part=3), out_of_fold=True))
    _partitioning_error(exc)
    # the fingerprints are a readable parquet file of the op's state (no pickle)
    files_ = sorted(p.name for p in (tmp_path / "wf" / "stats").rglob("*.parquet"))
    assert "te_partitions.parquet" in files_, files_
    table = pq.read_table(next((tmp_path / "wf" / "stats").rglob("te_partitions.parquet")))
    assert table.column_names == ["rows", "first_row", "last_row", "digest"]
    assert sorted(table.column("rows").to_pylist()) == sorted(_pieces((160, 120, 200), 2))


def _as_saved_before(root) -> None:
    """Make a saved workflow look as the previous tabprep wrote it: no fingerprints in the op's state."""
    from tabprep.workflow.serialize import stats_manifest

    spec_path = root / "workflow.json"
    spec = json.loads(spec_path.read_text())
    found = []

    def strip(obj):
        if isinstance(obj, dict):
            if "partitions" in obj and "fold_seed_used" in obj:
                found.append(obj.pop("partitions"))
            for v in obj.values():
                strip(v)
        elif isinstance(obj, list):
            for v in obj:
                strip(v)

    strip(spec)
    assert len(found) == 1, "the op's saved state holds no 'partitions' entry"
    for p in root.rglob("te_partitions.parquet"):
        p.unlink()
    spec["stats_files"] = stats_manifest(root)   # as that version recorded them
    spec_path.write_text(json.dumps(spec))


def test_a_workflow_saved_without_fingerprints_loads_and_warns_once(tmp_path, files):
    """Saved by the previous version: it loads and transforms as before (no refusal it could not
    make), and the first out-of-fold transform warns, once, that the partitioning is not checked."""
    paths, df = files
    wf = _workflow()
    wf.fit(tp.Dataset(paths, row_groups_per_part=2))
    wf.save(str(tmp_path / "wf"))
    _as_saved_before(tmp_path / "wf")
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # loading warns nothing
        loaded = tp.Workflow.load(str(tmp_path / "wf"))
        full = to_pandas(loaded.transform(tp.Dataset(paths, row_groups_per_part=3)))   # not out-of-fold: quiet
    np.testing.assert_allclose(full["TE_a_y"].to_numpy(), _ref_full(df, "a"), rtol=1e-12)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = to_pandas(loaded.transform(tp.Dataset(paths, row_groups_per_part=2), out_of_fold=True))
        again = to_pandas(loaded.transform(tp.Dataset(paths, row_groups_per_part=2), out_of_fold=True))
    msgs = [str(w.message) for w in caught if "partition" in str(w.message)]
    assert len(msgs) == 1, msgs
    assert "TargetEncoding" in msgs[0] and "'y'" in msgs[0] and "cannot be checked" in msgs[0], msgs[0]
    assert "save" in msgs[0], msgs[0]   # the fix: fit and save again
    _check_oof(out, df, _pieces((160, 120, 200), 2))
    pd.testing.assert_frame_equal(out, again)


# -- both backends ------------------------------------------------------------------------------------------------
def test_backends_refuse_other_partitions(backend, tmp_path, files):
    """The check uses backend-generic operations (row count, row ids, a digest of the target): the same
    on cuDF frames, and a fit on the CPU checks a transform on the GPU."""
    paths, df = files
    cpu = is_cpu(backend)
    wf = _workflow()
    wf.fit(tp.Dataset(paths, row_groups_per_part=2, cpu=cpu))
    out = to_pandas(wf.transform(tp.Dataset(paths, row_groups_per_part=2, cpu=cpu), out_of_fold=True))
    _check_oof(out, df, _pieces((160, 120, 200), 2))
    with pytest.raises(ValueError) as exc:
        to_pandas(wf.transform(tp.Dataset(paths, row_groups_per_part=3, cpu=cpu), out_of_fold=True))
    _partitioning_error(exc)
    # fitted on the CPU, transformed on this backend: the fingerprints agree
    on_cpu = _workflow()
    on_cpu.fit(tp.Dataset(paths, row_groups_per_part=2))
    again = to_pandas(on_cpu.transform(tp.Dataset(paths, row_groups_per_part=2, cpu=cpu), out_of_fold=True))
    np.testing.assert_allclose(again["TE_a_y"].to_numpy(), out["TE_a_y"].to_numpy(), rtol=1e-12)
    # a dask frame on the backend, each partition indexed from 0
    wf = _workflow()
    wf.fit(make_dataset(df, backend, nparts=4))
    with pytest.raises(ValueError) as exc:
        to_pandas(wf.transform(make_dataset(df, backend, nparts=2), out_of_fold=True))
    _partitioning_error(exc)


def test_the_saved_fingerprints_do_not_depend_on_the_order_partials_came_in():
    # threads and 2 dask workers combine the partials in other orders: the saved
    # te_partitions.parquet (and its checksum in workflow.json) differed with the worker count
    from tabprep.ops import _fold_partitions as FP

    prints = [(10, 0, 9, 123), (7, 0, 6, 2**63 + 5), (10, 0, 9, 99), (3, 5, 7, 1)]
    a, b = FP.as_table(prints), FP.as_table(prints[::-1])
    for c in FP.COLUMNS:
        assert a[c].tolist() == b[c].tolist(), c
    assert a["rows"].tolist() == sorted(a["rows"].tolist())
