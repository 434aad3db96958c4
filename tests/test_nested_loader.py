"""Nested list columns (list<list<...>>) in the loaders (issue #31): NVTabular's leaf layout,
per-level row lengths, ragged / dense / torch offsets; references are plain Python on the rows."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tabprep.loader import DataLoader

# nulls at each level: a null row, a null inner list, a null leaf; empty rows and empty inner lists
ROWS = [[[1, 2], [3]], [[4]], [], None, [[5, 6, 7], [], None], [[8, None]], [[9], [10, 11], [12]]]


def _write(tmp_path, rows, n_copies=4, **extra):
    rows = rows * n_copies
    table = pa.table({"x": pa.array(rows, type=pa.list_(pa.list_(pa.int64()))), "row": np.arange(len(rows)),
                      **extra})
    path = str(tmp_path / "d.parquet")
    pq.write_table(table, path, row_group_size=7)
    return path, rows


def _leaves(row):   # plain Python: null row / null inner list -> nothing, null leaf -> 0 (the loader's fill)
    return [0 if v is None else v for inner in (row or []) for v in (inner or [])]


def _inner_lengths(row):
    return [len(inner or []) for inner in (row or [])]


@pytest.mark.parametrize("shuffle", [False, True])
def test_core_batches_leaves_nnzs_and_levels_match_rows(tmp_path, backend, shuffle):
    path, rows = _write(tmp_path, ROWS)
    loader = DataLoader(path, batch_size=5, cat_names=["x"], label_names=["row"], shuffle=shuffle, seed=3,
                        device="cpu" if backend == "cpu" else 0, buffer_size=10)
    seen = []
    for batch in loader:
        x, ids = batch["x"], [int(i) for i in _host(batch["row"])]
        want = [rows[i] for i in ids]
        assert _host(x.values).tolist() == [v for r in want for v in _leaves(r)]
        assert _host(x.lengths).tolist() == [len(_leaves(r)) for r in want]               # NVTabular's nnzs
        outer, inner = (_host(a).tolist() for a in x.nested_row_lengths)
        assert outer == [len(r or []) for r in want]
        assert inner == [n for r in want for n in _inner_lengths(r)]
        seen += ids
    assert sorted(seen) == list(range(len(rows)))


def _host(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


def test_core_dense_from_sparse_max_pads_and_truncates(tmp_path, backend):
    path, rows = _write(tmp_path, ROWS, n_copies=1)
    loader = DataLoader(path, batch_size=7, cat_names=["x"], shuffle=False, sparse_as_dense=True,
                        sparse_max={"x": (2, 2)}, device="cpu" if backend == "cpu" else 0)
    got = _host(next(iter(loader))["x"])
    want = np.zeros((7, 2, 2), dtype=np.int64)
    for i, r in enumerate(rows):
        for j, inner in enumerate((r or [])[:2]):
            for k, v in enumerate((inner or [])[:2]):
                want[i, j, k] = 0 if v is None else v
    assert got.shape == (7, 2, 2)
    np.testing.assert_array_equal(got, want)


def test_core_dense_fixed_shape_needs_no_sparse_max(tmp_path, backend):
    keys = np.arange(6 * 4 * 3).reshape(6, 4, 3)
    pd.DataFrame({"x": keys.tolist()}).to_parquet(tmp_path / "d.parquet")
    loader = DataLoader(str(tmp_path / "d.parquet"), batch_size=4, cont_names=["x"], shuffle=False,
                        sparse_as_dense=True, device="cpu" if backend == "cpu" else 0)
    got = np.concatenate([_host(b["x"]) for b in loader])
    assert got.dtype == np.int64   # integer keys under cont_names stay integers (not float32)
    np.testing.assert_array_equal(got, keys)


def test_core_dense_ragged_without_sizes_asks_for_sparse_max(tmp_path):
    path, _ = _write(tmp_path, ROWS)
    loader = DataLoader(path, batch_size=4, cat_names=["x"], sparse_as_dense=True, device="cpu")
    with pytest.raises(ValueError, match=r"'x'.*nested.*sparse_max=\{'x': \(max_outer, max_inner\)\}"):
        next(iter(loader))


def test_core_sparse_max_wrong_number_of_levels(tmp_path):
    path, _ = _write(tmp_path, ROWS)
    loader = DataLoader(path, batch_size=4, cat_names=["x"], sparse_as_dense=True, sparse_max={"x": 3}, device="cpu")
    with pytest.raises(ValueError, match=r"sparse_max\['x'\].*2 levels"):
        next(iter(loader))


def test_core_three_levels(tmp_path):
    rows = [[[[1], [2, 3]], []], [[[4, 5, 6]]], [], [[[], [7]]]]
    pq.write_table(pa.table({"x": pa.array(rows, type=pa.list_(pa.list_(pa.list_(pa.int32()))))}),
                   str(tmp_path / "d.parquet"))
    batch = next(iter(DataLoader(str(tmp_path / "d.parquet"), batch_size=4, cat_names=["x"], shuffle=False,
                                 device="cpu")))
    x = batch["x"]
    assert x.depth == 3 and x.values.tolist() == [1, 2, 3, 4, 5, 6, 7] and x.values.dtype == np.int32
    assert [a.tolist() for a in x.nested_row_lengths] == [[2, 1, 0, 1], [2, 0, 1, 2], [1, 2, 3, 0, 1]]


def test_core_sharded_ranks_get_their_rows_in_order(tmp_path):
    keys = np.arange(12 * 3 * 2).reshape(12, 3, 2)
    pd.DataFrame({"x": keys.tolist()}).to_parquet(tmp_path / "d.parquet", row_group_size=5)
    for rank in range(3):
        loader = DataLoader(str(tmp_path / "d.parquet"), batch_size=3, cat_names=["x"], shuffle=False,
                            global_size=3, global_rank=rank, device="cpu")
        vals = np.concatenate([b["x"].values for b in loader])
        np.testing.assert_array_equal(vals, keys[rank * 4:(rank + 1) * 4].reshape(-1))


# -- TensorFlow / Keras -----------------------------------------------------------------------
def test_keras_ragged_tuple_flat_and_dense(tmp_path):
    tf = pytest.importorskip("tensorflow")
    from tabprep.loader.tensorflow import KerasSequenceLoader

    path, rows = _write(tmp_path, ROWS, n_copies=1)
    want_rows = [[[0 if v is None else v for v in (inner or [])] for inner in (r or [])] for r in rows]
    common = dict(batch_size=7, cat_names=["x"], label_names=["row"], shuffle=False, device="cpu")
    x, _ = next(iter(KerasSequenceLoader(path, ragged=True, **common)))
    assert isinstance(x["x"], tf.RaggedTensor) and x["x"].ragged_rank == 2
    assert x["x"].to_list() == want_rows
    x, _ = next(iter(KerasSequenceLoader(path, sparse_format="tuple", **common)))
    values, nnzs = x["x"]
    assert values.shape == (sum(len(_leaves(r)) for r in rows), 1) and nnzs.dtype == tf.int32
    assert nnzs.numpy().ravel().tolist() == [len(_leaves(r)) for r in rows]
    x, _ = next(iter(KerasSequenceLoader(path, **common)))
    assert x["x__values"].numpy().ravel().tolist() == [v for r in rows for v in _leaves(r)]
    x, _ = next(iter(KerasSequenceLoader(path, sparse_names=["x"], sparse_as_dense=True, sparse_max={"x": (3, 3)},
                                         **common)))
    want = tf.ragged.constant(want_rows, ragged_rank=2).to_tensor(shape=[7, 3, 3]).numpy()
    np.testing.assert_array_equal(x["x"].numpy(), want)


def test_keras_dense_from_schema_value_counts(tmp_path):
    pytest.importorskip("tensorflow")
    import tabprep as tp
    from tabprep import ops
    from tabprep.loader.tensorflow import KerasSequenceLoader

    keys = np.arange(8 * 5 * 2).reshape(8, 5, 2)
    pd.DataFrame({"x": keys.tolist()}).to_parquet(tmp_path / "d.parquet")
    wf = tp.Workflow(["x"] >> ops.ValueCount())
    wf.fit(tp.Dataset(str(tmp_path / "d.parquet")))
    assert wf.output_schema["x"].fixed_shape == [5, 2]
    loader = KerasSequenceLoader(str(tmp_path / "d.parquet"), batch_size=4, cont_names=["x"], shuffle=False,
                                 sparse_names=["x"], sparse_as_dense=True, device="cpu").map(wf)
    got = np.concatenate([b["x"].numpy() for b in loader])
    np.testing.assert_array_equal(got, keys)
    assert tuple(loader.keras_inputs()["x"].shape) == (None, 5, 2)


def test_core_schema_fixed_but_row_ragged_names_column_and_row(tmp_path):
    import tabprep as tp
    from tabprep import ops

    keys = np.arange(6 * 3 * 2).reshape(6, 3, 2).tolist()
    pd.DataFrame({"x": keys}).to_parquet(tmp_path / "fit.parquet")
    wf = tp.Workflow(["x"] >> ops.ValueCount())
    wf.fit(tp.Dataset(str(tmp_path / "fit.parquet")))
    bad = [list(r) for r in keys]
    bad[4] = [[1, 2], [3], [4, 5]]
    pd.DataFrame({"x": bad}).to_parquet(tmp_path / "new.parquet")
    loader = DataLoader(str(tmp_path / "new.parquet"), batch_size=6, cat_names=["x"], shuffle=False,
                        device="cpu").map(wf)
    with pytest.raises(ValueError, match=r"column 'x': row 4 .*fixed \[3, 2\]"):
        next(iter(loader))


# -- torch / JAX ------------------------------------------------------------------------------
def test_torch_offsets_per_level_and_nnzs(tmp_path):
    torch = pytest.importorskip("torch")
    from tabprep.loader.torch import TorchAsyncItr

    path, rows = _write(tmp_path, ROWS, n_copies=1)
    x, _ = next(iter(TorchAsyncItr(path, batch_size=7, cats=["x"], labels=["row"])))
    values, (row_offsets, inner_offsets) = x["x"]
    assert row_offsets.tolist() == list(np.cumsum([0] + [len(r or []) for r in rows])[:-1])
    inner = [n for r in rows for n in _inner_lengths(r)]
    assert inner_offsets.tolist() == list(np.cumsum([0] + inner)[:-1])
    # EmbeddingBag over the inner lists: one bag per inner list
    bag = torch.nn.EmbeddingBag(20, 2, mode="sum")
    assert bag(values, inner_offsets).shape == (len(inner), 2)
    x, _ = next(iter(TorchAsyncItr(path, batch_size=7, cats=["x"], labels=["row"], sparse_format="nnzs")))
    assert x["x"][1].tolist() == [len(_leaves(r)) for r in rows] and x["x"][1].dtype == torch.int32


def test_jax_dense_and_nnzs(tmp_path):
    pytest.importorskip("jax")
    from tabprep.loader.jax import JaxLoader

    keys = np.arange(6 * 4 * 3).reshape(6, 4, 3)
    pd.DataFrame({"x": keys.tolist(), "y": np.arange(6)}).to_parquet(tmp_path / "d.parquet")
    x, _ = next(iter(JaxLoader(str(tmp_path / "d.parquet"), batch_size=6, cats=["x"], labels=["y"],
                               sparse_names=["x"], sparse_as_dense=True, device="cpu")))
    np.testing.assert_array_equal(np.asarray(x["x"]), keys)
    x, _ = next(iter(JaxLoader(str(tmp_path / "d.parquet"), batch_size=6, cats=["x"], labels=["y"],
                               sparse_format="nnzs", device="cpu")))
    np.testing.assert_array_equal(np.asarray(x["x"][0]), keys.reshape(-1))
    assert np.asarray(x["x"][1]).tolist() == [12] * 6


# Keras on JAX / PyTorch: tests/keras_backend_check.py's nested_check (run by test_keras_backends.py,
# one subprocess per backend, shared with the other Keras checks)


def test_core_fixed_shape_shuffled_rows_keep_their_keys(tmp_path, backend):
    # fixed-width levels take the 2-D block gather: every row must still carry its own keys
    keys = np.arange(40 * 5 * 3).reshape(40, 5, 3)
    pd.DataFrame({"x": keys.tolist(), "row": np.arange(40)}).to_parquet(tmp_path / "d.parquet", row_group_size=16)
    loader = DataLoader(str(tmp_path / "d.parquet"), batch_size=7, cat_names=["x"], label_names=["row"], shuffle=True,
                        seed=5, device="cpu" if backend == "cpu" else 0, buffer_size=16, parts_per_chunk=2)
    seen = []
    for batch in loader:
        ids = _host(batch["row"]).tolist()
        np.testing.assert_array_equal(_host(batch["x"].values), keys[ids].reshape(-1))
        assert [a.tolist() for a in map(_host, batch["x"].nested_row_lengths)] == [[5] * len(ids), [3] * 5 * len(ids)]
        seen += ids
    assert sorted(seen) == list(range(40)) and seen != list(range(40))
