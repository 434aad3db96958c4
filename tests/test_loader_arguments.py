"""The core loader's arguments: a value that is not what the argument counts (a fraction of a
batch, of a rank, of a thread), or a device that does not exist, is refused with the argument's
name and what it takes, never truncated into another loader (``DataLoader(df, 2.5)`` made batches of
2 rows; ``global_size=2.5`` gave each rank half the rows of a 2-rank job, silently)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd
import pytest

from tabprep import backend
from tabprep.loader import DataLoader


@pytest.fixture()
def frame() -> pd.DataFrame:
    return pd.DataFrame({"a": np.arange(100), "y": np.arange(100) % 2})


def _loader(df, batch_size=10, **kw):
    args = dict(cat_names=["a"], label_names=["y"], device="cpu")
    args.update(kw)
    return DataLoader(df, batch_size, **args)


@pytest.mark.parametrize("bad", [2.5, True, 0, -3, "64", float("nan"), float("inf")])
def test_a_batch_size_that_is_not_a_whole_number_of_rows_is_refused(frame, bad):
    with pytest.raises(ValueError, match=r"batch_size must be an int >= 1, got"):
        _loader(frame, bad)
    with pytest.raises(ValueError, match=r"batch_size must be an int >= 1, got"):
        _loader(frame).set_batch_size(bad)
    # a whole number of rows of another numeric type is taken as that int
    assert [len(b["y"]) for b in _loader(frame, np.int64(40))] == [40, 40, 20]
    assert [len(b["y"]) for b in _loader(frame, 50.0)] == [50, 50]


@pytest.mark.parametrize("name,bad,match", [
    ("parts_per_chunk", 1.5, r"parts_per_chunk must be an int >= 1, got 1\.5"),
    ("parts_per_chunk", 0, r"parts_per_chunk must be an int >= 1, got 0"),
    ("threads", 1.5, r"threads must be an int >= 1, got 1\.5"),
    ("threads", True, r"threads must be an int >= 1, got True"),
    ("prefetch", 0.5, r"prefetch must be an int >= 0, got 0\.5"),
    ("prefetch", -1, r"prefetch must be an int >= 0, got -1"),
    ("seed", 1.5, r"seed must be an int >= 0, got 1\.5"),
    ("seed", "7", r"seed must be an int >= 0, got '7'"),
    ("buffer_size", float("nan"), r"buffer_size must be a fraction in \(0, 1\) or a row count >= 1, got nan"),
    ("buffer_size", float("inf"), r"buffer_size must be .* got inf"),
    ("buffer_size", "0.1", r"buffer_size must be .* got '0\.1'"),
    ("buffer_size", 0, r"buffer_size must be .* got 0"),
])
def test_counts_and_sizes_are_refused_unless_whole_and_in_range(frame, name, bad, match):
    with pytest.raises(ValueError, match=match):
        _loader(frame, **{name: bad})


@pytest.mark.parametrize("size,rank,match", [
    (2.5, 0, r"global_size must be an int >= 1, got 2\.5"),
    (2, 0.5, r"global_rank must be an int >= 0, got 0\.5"),
    (0, 0, r"global_size must be an int >= 1, got 0"),
    (2, 2, r"need 0 <= global_rank < global_size, got global_rank=2, global_size=2"),
])
def test_shards_are_whole_ranks(frame, size, rank, match):
    with pytest.raises(ValueError, match=match):
        _loader(frame, global_size=size, global_rank=rank)


def test_whole_numbers_of_other_numeric_types_are_taken(frame):
    a = [b["a"].tolist() for b in _loader(frame, parts_per_chunk=np.int32(2), threads=1.0, seed=np.uint8(3),
                                          global_size=2.0, global_rank=np.int64(1), prefetch=0)]
    b = [b["a"].tolist() for b in _loader(frame, parts_per_chunk=2, threads=1, seed=3, global_size=2,
                                          global_rank=1, prefetch=0)]
    assert a == b and sum(len(x) for x in a) == 50


@pytest.mark.parametrize("bad", ["gpu7", -1, 1.5, True])
def test_a_device_that_is_not_one_is_named(frame, bad):
    with pytest.raises(ValueError, match=r"device must be None, 'cpu' or a GPU index >= 0, got"):
        _loader(frame, device=bad)


@pytest.mark.skipif(backend.has_cudf(), reason="a machine with cuDF and a GPU serves device=0")
def test_a_gpu_asked_for_where_there_is_none_says_so(frame, tmp_path):
    # an in-memory frame used to fail with "No module named 'cudf'"
    frame.to_parquet(tmp_path / "d.parquet")
    for data in (frame, str(tmp_path / "d.parquet")):
        with pytest.raises(RuntimeError, match=r"device=0 asks for a GPU.*device='cpu'"):
            _loader(data, device=0)
    with pytest.raises(RuntimeError, match=r"reader_kwargs=\{'cpu': False\} asks for a GPU"):
        DataLoader(frame, 10, cat_names=["a"], label_names=["y"], reader_kwargs={"cpu": False})


@pytest.mark.parametrize("bad", [2.5, 0, -1, True, "3"])
def test_sparse_max_is_a_whole_length(bad):
    # sparse_max={'tags': 2.5} padded to 2 and True to 1, 0 emptied every row, -1 raised numpy's
    # "negative dimensions are not allowed"
    df = pd.DataFrame({"tags": [[1, 2, 3], [4], [], [5, 6]], "y": [0, 1, 0, 1]})
    with pytest.raises(ValueError, match=r"sparse_max\['tags'\] must be an int >= 1, got"):
        next(iter(DataLoader(df, 4, cat_names=["tags"], label_names=["y"], device="cpu", sparse_as_dense=True,
                             sparse_max={"tags": bad})))


def test_sparse_names_name_loaded_columns():
    # an unknown name left the list column out of the padding and failed in numpy ("inhomogeneous shape")
    df = pd.DataFrame({"tags": [[1, 2, 3], [4], [], [5, 6]], "y": [0, 1, 0, 1]})
    with pytest.raises(KeyError, match=r"sparse_names \['tagz'\] are not among the loader's columns"):
        next(iter(DataLoader(df, 4, cat_names=["tags"], label_names=["y"], device="cpu", sparse_as_dense=True,
                             sparse_names=["tagz"], sparse_max={"tagz": 3})))
    b = next(iter(DataLoader(df, 4, cat_names=["tags"], label_names=["y"], device="cpu", shuffle=False,
                             sparse_as_dense=True, sparse_names=["tags"], sparse_max={"tags": np.int64(3)})))
    assert np.asarray(b["tags"]).tolist() == [[1, 2, 3], [4, 0, 0], [0, 0, 0], [5, 6, 0]]


@pytest.mark.parametrize("adapter", ["torch", "jax"])
def test_framework_loaders_take_batch_size_as_the_core_loader_does(frame, adapter):
    """TorchAsyncItr / JaxLoader raised TypeError for 50.0 where DataLoader takes it as 50; both now
    take what the core loader takes and refuse what it refuses, with its message."""
    if adapter == "torch":
        pytest.importorskip("torch")
        from tabprep.loader.torch import TorchAsyncItr as Loader
    else:
        pytest.importorskip("jax")
        from tabprep.loader.jax import JaxLoader as Loader
    kw = dict(cats=["a"], labels=["y"], device="cpu")
    assert [len(y) for _, y in Loader(frame, batch_size=50.0, **kw)] == [50, 50]
    assert [len(y) for _, y in Loader(frame, batch_size=np.int64(40), **kw)] == [40, 40, 20]
    for bad in (2.5, True, 0, "64"):
        with pytest.raises(ValueError, match=r"batch_size must be an int >= 1, got"):
            Loader(frame, batch_size=bad, **kw)



def _scalar_and_list_frame() -> pd.DataFrame:
    return pd.DataFrame({"tags": [[1, 2, 3], [4], [], [5, 6]], "a": [1, 2, 3, 4], "y": [0, 1, 0, 1]})


def _adapter(kind: str, cats: Sequence[str] = ("tags", "a")) -> Any:
    if kind == "torch":
        pytest.importorskip("torch")
        from tabprep.loader.torch import TorchAsyncItr as Loader
    else:
        pytest.importorskip("jax")
        from tabprep.loader.jax import JaxLoader as Loader
    return lambda df, **kw: Loader(df, batch_size=4, cats=list(cats), labels=["y"], device="cpu", shuffle=False, **kw)


@pytest.mark.parametrize("kind", ["core", "torch", "jax"])
def test_sparse_names_naming_a_scalar_column_says_so(kind):
    # the core failed with "'numpy.ndarray' object has no attribute 'offsets'"; once the framework
    # loaders left their padding to the core (one scatter per chunk, not per batch) they did too
    df = _scalar_and_list_frame()
    kw = dict(sparse_as_dense=True, sparse_names=["tags", "a"], sparse_max={"tags": 2, "a": 2})
    if kind == "core":
        make = lambda: DataLoader(df, 4, cat_names=["tags", "a"], label_names=["y"], device="cpu", **kw)  # noqa: E731
    else:
        make = lambda: _adapter(kind)(df, **kw)  # noqa: E731
    with pytest.raises(ValueError, match=r"sparse_names lists 'a', which holds one value per row.*remove 'a' "
                                         r"from sparse_names"):
        next(iter(make()))
    # without a sparse_max for it: the same, not a request for the sparse_max of "list column 'a'"
    kw["sparse_max"] = {"tags": 2}
    with pytest.raises(ValueError, match=r"sparse_names lists 'a', which holds one value per row"):
        next(iter(make()))


@pytest.mark.parametrize("kind", ["torch", "jax"])
def test_framework_loaders_pad_only_their_sparse_names(kind):
    df = _scalar_and_list_frame()
    df["more"] = [[7], [8, 9], [], [1, 2, 3, 4]]
    make = _adapter(kind, ("tags", "a", "more"))
    x, y = next(iter(make(df, sparse_as_dense=True, sparse_names=["tags"], sparse_max={"tags": 2})))
    assert np.asarray(x["tags"]).tolist() == [[1, 2], [4, 0], [0, 0], [5, 6]]   # the 3rd value of row 0 cut
    assert np.asarray(x["a"]).tolist() == [1, 2, 3, 4] and np.asarray(y).tolist() == [0, 1, 0, 1]
    # a list column not named stays a list: (values, offsets), as without sparse_as_dense
    values, offsets = x["more"]
    assert np.asarray(values).tolist() == [7, 8, 9, 1, 2, 3, 4] and np.asarray(offsets).tolist() == [0, 1, 3, 3]
    with pytest.raises(KeyError, match=r"sparse_names lists 'y', which is not among the emitted feature columns"):
        next(iter(make(df, sparse_as_dense=True, sparse_names=["y"], sparse_max={"y": 2})))
