"""The partitions a :class:`~tabprep.ops.TargetEncoding` was fitted on, to check an out-of-fold transform.

A row's fold is a hash of its row id (``TargetEncoding.folds``): the frame's integer index label,
which for a parquet partition is the row's number within its piece. So the folds follow the
partitioning: the training rows transformed out-of-fold but partitioned otherwise than at fit (other
``part_size`` / ``row_groups_per_part``, a dask frame repartitioned, each partition indexed from 0)
get other folds than the ones their statistics were split by, and a row is encoded with statistics
that include its own target, a label leak that nothing showed (found 2026-11-29).

The fit records, per non-empty partition, a fingerprint computed in the pass it makes anyway (from
arrays the fold assignment and the statistics compute there): the row count, the first and last
row id, and a digest of the first target by row id, ``sum(h(row id) * m(target)) mod 2**64``
(``h``: the splitmix64 hash the folds are taken from; ``m``: the target's float64 bits mixed, a
non-finite target a value of its own). An out-of-fold transform computes the same fingerprint of
each partition it encodes (its folds need ``h`` anyway: the extra cost is one multiply and sum
over the partition, ~0.1 s per 10M rows on one CPU core) and refuses one that is none of the
fitted ones with a ``ValueError`` (:func:`check_partition`). An empty partition has no row to
encode and is never refused. The fingerprints are integers: the CPU and the GPU compute them
bit for bit alike (a fit on one, a transform on the other, agree).

What a match does not rule out (a leak can still pass, by coincidence only): a partition of the
fitted length and row ids whose rows were exchanged with rows of the same target value (the
digest reads the target, not the category columns), e.g. two rows with target 1 swapped between
positions of different folds; or a sum collision of the 64-bit digest. Whole pieces in another
order (files listed otherwise, on the CPU where a piece stays within one file) match and do not
leak: each row keeps its row id. The other way, a refusal where nothing would leak: an in-memory
frame whose index labels are unique over the whole frame (``Dataset(df, npartitions=4)``)
repartitioned keeps every row's id and fold, but its partitions are not the fitted ones: it is
refused too (transform it partitioned as fitted).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .. import backend

#: the file of the fingerprints in the op's state folder (a readable parquet table)
FILE = "te_partitions.parquet"
COLUMNS = ("rows", "first_row", "last_row", "digest")

#: one partition's fingerprint: (rows, first row id, last row id, digest)
Fingerprint = Tuple[int, int, int, int]


def fingerprint(row: Any, hashed: Any, y: Any, xp: Any) -> Optional[Fingerprint]:
    """The fingerprint of a partition: ``row`` its row ids (int64), ``hashed`` their splitmix64
    hash (uint64, the folds' ``z``), ``y`` the first target as float64 (NaN where null), on one
    device (``xp``: numpy or cupy). None for an empty partition."""
    n = len(row)
    if n == 0:
        return None
    first, last = (int(v) for v in backend.to_numpy(xp.concatenate([row[:1], row[-1:]])))
    y = y.astype("float64", copy=False)
    ok = xp.isfinite(y)
    bits = xp.where(ok, y, 0.0).view("uint64")
    mixed = (bits ^ (bits >> np.uint64(29))) + ok.astype("uint64")   # (a non-finite target: 0, a 0.0: 1)
    return n, first, last, int((mixed * hashed.astype("uint64", copy=False)).sum())  # sums wrap mod 2**64


def as_table(prints: List[Fingerprint]) -> Dict[str, np.ndarray]:
    """The fitted partitions' fingerprints as columns (the op's ``partitions_``), sorted: the
    partials come in another order on threads and on dask workers, and the saved file (and its
    checksum in workflow.json) must not depend on the number of workers."""
    prints = sorted(prints)
    arr = np.array([p[:3] for p in prints], dtype="int64").reshape(len(prints), 3)
    return {"rows": arr[:, 0].copy(), "first_row": arr[:, 1].copy(), "last_row": arr[:, 2].copy(),
            "digest": np.array([p[3] for p in prints], dtype="uint64")}


def lookup(table: Dict[str, np.ndarray]) -> Dict[Tuple[int, int, int], set]:
    """``{(rows, first, last): {digests}}`` of the fitted partitions."""
    out: Dict[Tuple[int, int, int], set] = {}
    for n, a, b, d in zip(*(table[c].tolist() for c in COLUMNS)):
        out.setdefault((n, a, b), set()).add(d)
    return out


def check_partition(found: Optional[Fingerprint], fitted: Dict[Tuple[int, int, int], set], count: int,
                    what: str) -> None:
    """``ValueError`` when the partition of fingerprint ``found`` (None: empty) is not one of the
    ``count`` fitted partitions (``fitted``: :func:`lookup`); ``what`` names the op."""
    if found is None:
        return
    n, first, last, digest = found
    digests = fitted.get((n, first, last))
    if digests is not None and digest in digests:
        return
    if digests is not None:
        detail = (f"a fitted partition has these {n} rows and row ids but other target values: its rows are "
                  f"in another order, or it is other data")
    else:
        detail = f"no fitted partition has {n} rows with row ids {first}..{last}"
    raise ValueError(
        f"{what}: transform(..., out_of_fold=True) met a partition of {n} rows (row ids {first}..{last}) that "
        f"is not one of the {count} partition{'s' if count != 1 else ''} the op was fitted on ({detail}). The "
        f"data is partitioned differently from the fit (or is not the fitted data): a row's fold follows its "
        f"row id (its row number within its parquet piece, or its index label), so rows would be encoded with "
        f"statistics that include their own target. Transform the training data partitioned as it was "
        f"fitted (the same files, the same part_size / row_groups_per_part, the same npartitions; "
        f"wf.fit_transform(train) transforms the partitions it fitted), or transform with out_of_fold=False "
        f"(the default) data the workflow was not fitted on.")


def unchecked_message(what: str) -> str:
    return (f"{what}: this fitted op holds no fingerprints of the partitions it was fitted on (saved by a "
            f"tabprep before 2026-11-29), so the partitioning of out-of-fold transforms cannot be checked: "
            f"data partitioned otherwise than the fit would be encoded with statistics that include each "
            f"row's own target, without an error. Transform the training data partitioned exactly as it was "
            f"fitted, or fit the workflow and save it again to get the check.")


def save(table: Dict[str, np.ndarray], path: Path) -> None:
    pq.write_table(pa.table({c: pa.array(table[c]) for c in COLUMNS}), path / FILE)


def load(file: Path) -> Dict[str, np.ndarray]:
    t = pq.read_table(file)
    return {c: t.column(c).to_numpy().astype("uint64" if c == "digest" else "int64") for c in COLUMNS}
