"""ColumnSimilarity: the similarity of two id columns' rows in sparse feature matrices (NVTabular's op)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

from .. import backend
from ..schema import ColumnSchema, Schema, Tags
from .base import Operator, state_file

_METRICS = ("tfidf", "cosine", "inner")
#: stands for the matrices that a saved workflow holds in its state (see ``from_config``)
_IN_SAVED_STATE = object()


class ColumnSimilarity(Operator):
    """For each pair ``[a, b]`` of id columns, the similarity of row ``a`` of ``left_features``
    and row ``b`` of ``right_features`` (NVTabular 23.08's ``ColumnSimilarity``).

    ``[["doc", "doc_promo"]] >> ColumnSimilarity(categories)`` outputs ``doc_doc_promo_sim``
    (float64, tagged continuous); only the similarity columns are output. The matrices are
    weighted once by ``metric`` and the similarity is the inner product of the two rows, a sparse
    row-wise product computed with scipy on the host (on the GPU backend the ids are copied to
    the host and the result back to the device, so CPU and GPU give the same numbers).

    Args:
        left_features: a sparse matrix (scipy or cupyx, any format; or a dense 2-D array), one
            row per id of the left column, one column per feature.
        right_features: the matrix of the right column's ids (same number of feature columns);
            None (default): ``left_features`` (e.g. document-document similarity).
        metric: ``"tfidf"`` (default, NVTabular's): each entry times ``log(n_rows / entries in
            its feature column)``, then rows scaled to unit L2 norm, so the result is the cosine
            of tf-idf vectors; ``"cosine"``: rows scaled to unit L2 norm; ``"inner"``: the plain
            inner product. A row with no entries has similarity 0.
        on_device: NVTabular's choice of GPU or CPU computation; accepted and saved, the
            computation is on the host in both cases (see above).

    Ids: integer values (floats holding integers are accepted) in ``[0, n_rows)`` of their
    matrix; another value (negative, too large, fractional) raises ``ValueError`` naming the
    column and the value. A null (NaN) or infinite id gives a null similarity.

    Saving: ``Workflow.save`` writes both matrices (``.npz``) next to the workflow; a spec cannot
    hold them (``to_spec`` refuses).
    """

    output_tags = (Tags.CONTINUOUS,)
    supports_groups = True

    def __init__(self, left_features: Any, right_features: Any = None, metric: str = "tfidf",
                 on_device: bool = True) -> None:
        if metric not in _METRICS:
            raise ValueError(f"ColumnSimilarity metric must be one of {list(_METRICS)}, got {metric!r}")
        if left_features is None:
            raise TypeError("ColumnSimilarity needs left_features (a sparse matrix, one row per id)")
        if left_features is _IN_SAVED_STATE:  # from_config: load_state brings the matrices
            left_features = None
        else:
            left = _as_host_sparse(left_features, "left_features")
            if right_features is not None:
                right = _as_host_sparse(right_features, "right_features")
                if right.shape[1] != left.shape[1]:
                    raise ValueError(f"ColumnSimilarity: left_features has {left.shape[1]} feature columns and "
                                     f"right_features {right.shape[1]}; they must be the same features")
        self.left_features = left_features
        self.right_features = right_features
        self.metric = metric
        self.on_device = on_device
        self.input_groups: List[List[str]] = []
        self._weighted: Optional[tuple] = None  # (left, right) weighted CSR matrices, built once

    # -- columns -----------------------------------------------------------------------------
    def pairs(self, columns: List[str]) -> List[List[str]]:
        """The ``[a, b]`` pairs compared, in selection order."""
        return [list(g) for g in self.input_groups if len(g) > 1 and all(c in columns for c in g)]

    def output_column_names(self, columns: List[str]) -> List[str]:
        return [f"{a}_{b}_sim" for a, b in self.pairs(columns)]

    def check_input(self, input_schema: Schema, columns: List[str]) -> None:
        super().check_input(input_schema, columns)
        groups = self.pairs(columns)
        bad = [g for g in groups if len(g) != 2]
        if not groups or bad:
            raise ValueError(f"ColumnSimilarity compares pairs of id columns: select them as [['a', 'b']] >> "
                             f"ColumnSimilarity(...), got {bad or columns}; each group must be a pair")
        for c in columns:
            if c in input_schema and (input_schema[c].is_list or input_schema[c].dtype == "str"):
                raise TypeError(f"ColumnSimilarity: column {c!r} must hold integer row ids of the feature matrix, "
                                f"got {input_schema[c].dtype}")

    def compute_output_schema(self, input_schema: Schema, columns: List[str]) -> Schema:
        return Schema([ColumnSchema(name, dtype="float64", tags=self.output_tags,
                                    properties={"compared_columns": list(pair)})
                       for name, pair in zip(self.output_column_names(columns), self.pairs(columns))])

    # -- transform ---------------------------------------------------------------------------
    def _matrices(self) -> tuple:
        if self._weighted is None:
            if self.left_features is None:
                raise RuntimeError("ColumnSimilarity has no feature matrices (built from a saved config without "
                                   "its state)")
            left = _weigh(_as_host_sparse(self.left_features, "left_features"), self.metric)
            right = left if self.right_features is None else _weigh(
                _as_host_sparse(self.right_features, "right_features"), self.metric)
            self._weighted = (left, right)
        return self._weighted

    def transform(self, columns: List[str], df: Any) -> Any:
        left, right = self._matrices()
        out = {}
        for (a, b), name in zip(self.pairs(columns), self.output_column_names(columns)):
            ia, na = _row_ids(df[a], a, left.shape[0])
            ib, nb = _row_ids(df[b], b, right.shape[0])
            # row-wise inner product: the sum over features of the element-wise product of the rows
            sim = np.asarray(left[ia].multiply(right[ib]).sum(axis=1), dtype="float64").reshape(-1)
            sim[na | nb] = np.nan
            out[name] = backend.new_series(sim, like=df[a], name=name, dtype="float64")  # to the device on GPU
        return backend.make_frame(out, like=df)

    # -- persistence -------------------------------------------------------------------------
    def to_config(self) -> Dict[str, Any]:
        # the matrices are in the saved state (npz), not in workflow.json
        return {"metric": self.metric, "on_device": self.on_device}

    def to_spec_config(self) -> Dict[str, Any]:
        raise ValueError("its feature matrices are in memory, which a spec cannot hold: save the fitted workflow "
                         "with workflow.save(path)")

    @classmethod
    def from_config(cls, config: Dict[str, Any], allow_pickle: bool = False) -> "ColumnSimilarity":
        return cls(_IN_SAVED_STATE, **config)

    def save_state(self, path: Path) -> Dict[str, Any]:
        import scipy.sparse as sp

        path.mkdir(parents=True, exist_ok=True)
        sp.save_npz(path / "left_features.npz", _as_host_sparse(self.left_features, "left_features").tocsr())
        meta: Dict[str, Any] = {"left": "left_features.npz", "right": None}
        if self.right_features is not None:
            sp.save_npz(path / "right_features.npz", _as_host_sparse(self.right_features, "right_features").tocsr())
            meta["right"] = "right_features.npz"
        return meta

    def load_state(self, path: Path, meta: Dict[str, Any]) -> None:
        import scipy.sparse as sp

        self.left_features = sp.load_npz(state_file(self, path, meta["left"]))
        self.right_features = sp.load_npz(state_file(self, path, meta["right"])) if meta.get("right") else None
        self._weighted = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_weighted"] = None  # rebuilt where the op runs
        return state


def _as_host_sparse(features: Any, what: str) -> Any:
    """A scipy COO copy of ``features`` (scipy / cupyx sparse, or a dense 2-D array)."""
    import scipy.sparse as sp

    if type(features).__module__.startswith("cupy"):
        features = features.get()  # a cupyx matrix (or cupy array) on the host
    if sp.issparse(features):
        return sp.coo_matrix(features)
    arr = np.asarray(features)
    if arr.ndim != 2 or arr.dtype.kind not in "iuf":
        raise TypeError(f"ColumnSimilarity {what} must be a 2-D sparse matrix (scipy or cupyx) or numeric array, "
                        f"got {type(features).__name__}")
    return sp.coo_matrix(arr)


def _weigh(coo: Any, metric: str) -> Any:
    """The ``metric``-weighted CSR matrix (entries are counted as stored, as NVTabular does)."""
    coo = coo.astype("float64")  # a copy: the user's matrix is never changed
    if metric == "tfidf":
        counts = np.bincount(coo.col, minlength=coo.shape[1])
        with np.errstate(divide="ignore"):
            idf = np.log(coo.shape[0] / counts)  # inf only for columns without entries, never indexed
        coo.data = coo.data * idf[coo.col]
    if metric in ("tfidf", "cosine"):
        norms = np.sqrt(np.bincount(coo.row, coo.data ** 2, minlength=coo.shape[0]))
        with np.errstate(divide="ignore", invalid="ignore"):
            coo.data = np.where(norms[coo.row] > 0, coo.data / norms[coo.row], 0.0)
    return coo.tocsr()


def _row_ids(s: Any, name: str, n_rows: int) -> tuple:
    """(int64 row ids with nulls as 0, null mask) of id column ``s`` on the host."""
    host = backend.to_host(s)
    nulls = np.array(host.isna(), dtype=bool)  # a writable copy
    vals = np.asarray(host.to_numpy(dtype="float64", na_value=np.nan))
    nulls |= np.isinf(vals)  # +-inf names no row: a null similarity, as for NaN
    vals = np.where(nulls, 0.0, vals)
    bad = (vals != np.floor(vals)) | (vals < 0) | (vals >= n_rows)
    if bad.any():
        raise ValueError(f"ColumnSimilarity: column {name!r} holds {vals[bad][0]!r}, which is no row of its feature "
                         f"matrix (ids must be integers in [0, {n_rows})); map the ids to matrix rows first")
    return vals.astype("int64"), nulls
