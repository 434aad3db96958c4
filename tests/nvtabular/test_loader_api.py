"""merlin-dataloader 23.08's ``loader.epochs(n)``, ``loader.input_schema`` and the deprecated
``loader.schema``, on tabprep's core loader and its framework adapters, as ported scripts call them.

merlin's behaviour (``merlin/dataloader/loader_base.py``): ``epochs(n)`` returns the loader itself
when ``n`` is its current count, else a copy whose one iteration streams the data ``n`` times (batches
run on across the epoch boundaries, so ``len`` is ``ceil(n * rows / batch_size)``); ``input_schema``
is the schema of the data read, before any transform, with the loader's labels / cats / conts tagged
(NVTabular's ``_augment_schema``); ``schema`` is ``input_schema`` with a deprecation warning.
Expected values are computed with numpy in the tests.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops
from tabprep.loader import DataLoader
from tabprep.schema import Tags


@pytest.fixture
def data(tmp_path):
    n = 37   # not a multiple of the batch size: batches must run on across epochs
    df = pd.DataFrame({"c": np.arange(n) % 5, "x": np.arange(n, dtype="float32"), "y": (np.arange(n) % 2),
                       "extra": np.arange(n) * 3})
    path = tmp_path / "d.parquet"
    df.to_parquet(path, row_group_size=8)
    return str(path), df


def _core(path, **kw):
    kw.setdefault("shuffle", True)
    return DataLoader(path, batch_size=kw.pop("batch_size", 5), label_names=["y"], cat_names=["c"],
                      cont_names=["x"], device="cpu", seed=kw.pop("seed", 7), buffer_size=kw.pop("buffer_size", 8),
                      **kw)


def _rows(loader):
    return np.concatenate([np.asarray(b["x"]).ravel() for b in loader]).astype("int64")


def test_epochs_returns_self_for_the_same_count_and_a_new_loader_otherwise(data):
    """merlin: ``epochs(1)`` on a fresh loader is the loader itself; ``epochs(3)`` a new loader,
    the original keeping one epoch per iteration."""
    path, df = data
    loader = _core(path)
    assert loader.epochs(1) is loader
    three = loader.epochs(3)
    assert three is not loader
    assert len(loader) == math.ceil(37 / 5)
    assert len(three) == math.ceil(3 * 37 / 5)   # batches run on across epochs (merlin's spill)
    assert three.epochs(3) is three
    assert len(_rows(loader)) == 37


@pytest.mark.parametrize("drop_last", [False, True])
def test_epochs_streams_every_row_n_times_reshuffled_per_epoch(data, drop_last):
    """One iteration of ``loader.epochs(3)`` gives every row 3 times; each epoch's order is a new
    shuffle (reseeded per epoch), and the rows are those of 3 plain epochs of the same seed, in order."""
    path, df = data
    three = _core(path, drop_last=drop_last).epochs(3)
    batches = [np.asarray(b["x"]).ravel().astype("int64") for b in three]
    assert len(batches) == len(three)
    assert all(len(b) == 5 for b in batches[:-1])
    rows = np.concatenate(batches)
    expected = 3 * 37 if not drop_last else (3 * 37) // 5 * 5
    assert len(rows) == expected
    plain = _core(path)
    reference = np.concatenate([_rows(plain) for _ in range(3)])
    np.testing.assert_array_equal(rows, reference[:expected])
    if not drop_last:
        np.testing.assert_array_equal(np.bincount(rows, minlength=37), np.full(37, 3))
    epochs = [reference[i * 37:(i + 1) * 37] for i in range(3)]
    for e in epochs:
        np.testing.assert_array_equal(np.sort(e), np.arange(37))
    assert not np.array_equal(epochs[0], epochs[1]) and not np.array_equal(epochs[1], epochs[2])
    # labels travel with their rows
    y = np.concatenate([np.asarray(b["y"]).ravel() for b in _core(path, drop_last=drop_last).epochs(3)])
    np.testing.assert_array_equal(y, df["y"].to_numpy()[rows])


def test_epochs_without_shuffle_repeats_the_file_order(data):
    path, df = data
    rows = _rows(_core(path, shuffle=False).epochs(2))
    np.testing.assert_array_equal(rows, np.tile(np.arange(37), 2))


def test_epochs_random_access_and_second_iteration(data):
    """``batch_at`` (Keras' ``__getitem__``) reaches batches of the later epochs; iterating the
    multi-epoch loader again gives the next n epochs (new shuffles)."""
    path, df = data
    three = _core(path).epochs(3)
    first = [np.asarray(b["x"]).ravel() for b in three]
    np.testing.assert_array_equal(np.asarray(three.batch_at(len(three) - 1)["x"]).ravel(), first[-1])
    np.testing.assert_array_equal(np.asarray(three.batch_at(10)["x"]).ravel(), first[10])
    again = np.concatenate([np.asarray(b["x"]).ravel() for b in three]).astype("int64")
    np.testing.assert_array_equal(np.bincount(again, minlength=37), np.full(37, 3))
    assert not np.array_equal(again, np.concatenate(first))


def test_epochs_refuses_a_non_positive_count(data):
    path, _ = data
    with pytest.raises(ValueError, match="epochs"):
        _core(path).epochs(0)


def test_input_schema_is_the_data_read_with_the_loaders_tags(data):
    """merlin's ``input_schema``: the dataset's schema (every column, ``extra`` too), before
    transforms, the loader's columns tagged as NVTabular's ``_augment_schema`` does."""
    path, df = data
    loader = _core(path)
    schema = loader.input_schema
    assert schema.column_names == ["c", "x", "y", "extra"]
    assert Tags.TARGET in schema["y"].tags
    assert Tags.CATEGORICAL in schema["c"].tags
    assert Tags.CONTINUOUS in schema["x"].tags
    assert str(schema["extra"].dtype) == "int64"
    # the dataset's own schema is not changed
    assert Tags.TARGET not in tp.Dataset(path).schema["y"].tags
    with pytest.warns(UserWarning, match="input_schema"):
        deprecated = loader.schema
    assert deprecated.column_names == schema.column_names


def test_input_schema_is_before_the_workflow(data):
    """With a workflow mapped, ``input_schema`` stays the raw data's, ``output_schema`` the workflow's."""
    path, df = data
    wf = tp.Workflow((["c"] >> ops.Rename(postfix="_h")) + ["x", "y"])
    loader = DataLoader(path, batch_size=5, label_names=["y"], cat_names=["c_h"], cont_names=["x"], device="cpu")
    loader.map(wf)
    assert "c_h" not in loader.input_schema.column_names
    assert loader.input_schema.column_names == ["c", "x", "y", "extra"]
    assert "c_h" in loader.output_schema.column_names
    assert Tags.TARGET in loader.input_schema["y"].tags


def _adapters():
    out = []
    try:
        import keras  # noqa: F401
        from tabprep.loader.keras import KerasSequenceLoader

        out.append(pytest.param(lambda p, **kw: KerasSequenceLoader(p, batch_size=5, label_names=["y"],
                                                                    cat_names=["c"], cont_names=["x"], **kw),
                                id="keras", marks=pytest.mark.tf))
    except ImportError:
        pass
    try:
        from tabprep.loader.torch import TorchAsyncItr

        out.append(pytest.param(lambda p, **kw: TorchAsyncItr(p, batch_size=5, cats=["c"], conts=["x"], labels=["y"],
                                                              **kw), id="torch", marks=pytest.mark.torch))
    except ImportError:
        pass
    try:
        from tabprep.loader.jax import JaxLoader

        out.append(pytest.param(lambda p, **kw: JaxLoader(p, batch_size=5, cats=["c"], conts=["x"], labels=["y"],
                                                          **kw), id="jax", marks=pytest.mark.jax))
    except ImportError:
        pass
    return out


@pytest.mark.parametrize("make", _adapters())
def test_framework_adapters_epochs_and_schemas(data, make):
    """Every framework loader: ``epochs(n)`` (a new loader of ``n`` passes), ``input_schema`` and
    the deprecated ``schema``."""
    path, df = data
    loader = make(path, shuffle=True, seed=3, device="cpu", buffer_size=8)
    assert loader.epochs(1) is loader
    two = loader.epochs(2)
    assert two is not loader and len(two) == math.ceil(2 * 37 / 5) and len(loader) == math.ceil(37 / 5)
    rows = np.concatenate([np.asarray(x["x"]).ravel() for x, y in two]).astype("int64")
    np.testing.assert_array_equal(np.bincount(rows, minlength=37), np.full(37, 2))
    # the original loader still gives one epoch
    rows1 = np.concatenate([np.asarray(x["x"]).ravel() for x, y in loader]).astype("int64")
    np.testing.assert_array_equal(np.sort(rows1), np.arange(37))
    assert loader.input_schema.column_names == ["c", "x", "y", "extra"]
    assert Tags.TARGET in loader.input_schema["y"].tags
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert loader.schema.column_names == loader.input_schema.column_names
    assert any("input_schema" in str(w.message) for w in caught)


def test_epochs_calls_seed_fn_once_per_pass(data):
    """``seed_fn`` (NVTabular's hook for seeds agreed across ranks) gives each pass its seed: 3
    calls for one iteration of ``epochs(3)``; the same seeds give the same rows."""
    path, df = data
    calls = []

    def seed_fn():
        calls.append(1)
        return 100 + len(calls)

    rows = _rows(_core(path, seed_fn=seed_fn).epochs(3))
    assert len(calls) == 3
    np.testing.assert_array_equal(np.bincount(rows, minlength=37), np.full(37, 3))
    calls.clear()
    again = _rows(_core(path, seed_fn=seed_fn).epochs(3))
    np.testing.assert_array_equal(rows, again)


def _tagged(df, tags):
    return tp.Schema([tp.ColumnSchema(c, dtype=str(df[c].dtype), tags=tags.get(c, [])) for c in df.columns])


def test_input_schema_setter_sets_the_names_from_its_tags(data):
    """merlin-dataloader's ``input_schema`` setter: the loader's cats / conts / labels become the
    schema's columns tagged categorical / continuous / target (checked with merlin-dataloader 23.08's
    LoaderBase: cats ['a'], conts [], labels ['y'] after setting a schema of a categorical a and a
    target y), and the output schema (no workflow mapped: the schema set, as merlin's) follows; the
    batches hold those columns."""
    path, df = data
    loader = _core(path, shuffle=False)
    loader.input_schema = _tagged(df[["c", "y"]], {"c": [Tags.CATEGORICAL], "y": [Tags.TARGET]})
    assert (loader.cat_names, loader.cont_names, loader.label_names) == (["c"], [], ["y"])
    assert loader.output_schema.column_names == ["c", "y"]
    assert Tags.TARGET in loader.input_schema["y"].tags
    batches = list(loader)
    assert all(sorted(b) == ["c", "y"] for b in batches)
    np.testing.assert_array_equal(np.concatenate([np.asarray(b["c"]).ravel() for b in batches]), df["c"].to_numpy())
    loader.input_schema = _tagged(df, {"x": [Tags.CONTINUOUS], "extra": [Tags.CATEGORICAL], "y": [Tags.TARGET]})
    assert (loader.cat_names, loader.cont_names, loader.label_names) == (["extra"], ["x"], ["y"])
    first = next(iter(loader))
    np.testing.assert_array_equal(np.asarray(first["extra"]).ravel(), df["extra"].to_numpy()[:5])


def test_input_schema_setter_refuses_mid_epoch_and_a_non_schema(data):
    """merlin: setting it after the first batch is a RuntimeError (its message), a value that is not
    a Schema a ValueError."""
    path, df = data
    loader = _core(path, shuffle=False)
    it = iter(loader)
    next(it)
    with pytest.raises(RuntimeError, match="after the dataloader has started"):
        loader.input_schema = _tagged(df, {"c": [Tags.CATEGORICAL]})
    with pytest.raises(ValueError, match="must be of type"):
        _core(path).input_schema = {"c": "int64"}


@pytest.mark.parametrize("make", _adapters())
def test_framework_adapters_input_schema_setter(data, make):
    path, df = data
    loader = make(path, shuffle=False, device="cpu", buffer_size=8)
    loader.input_schema = _tagged(df, {"c": [Tags.CATEGORICAL], "x": [Tags.CONTINUOUS], "y": [Tags.TARGET],
                                       "extra": [Tags.CONTINUOUS]})
    assert loader.cont_names == ["x", "extra"]
    x, y = next(iter(loader))
    np.testing.assert_array_equal(np.asarray(x["extra"]).ravel(), df["extra"].to_numpy()[:5])
