"""NVTabular 23.08's loaders (``nvtabular.loader.tensorflow.KerasSequenceLoader``,
``nvtabular.loader.torch.TorchAsyncItr``, merlin-dataloader's JAX ``Loader``) as ported scripts
call them. Expected values are computed with pandas / numpy in the test."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep.loader import DataLoader


@pytest.fixture
def data(tmp_path):
    df = pd.DataFrame({"c": np.arange(40) % 5, "x": np.linspace(0, 1, 40), "y": (np.arange(40) % 2).astype("int64")})
    path = tmp_path / "d.parquet"
    df.to_parquet(path, row_group_size=10)
    return str(path), df


def _keras():
    pytest.importorskip("keras")
    from tabprep.loader.keras import KerasSequenceLoader

    return KerasSequenceLoader


def _torch():
    pytest.importorskip("torch")
    from tabprep.loader.torch import TorchAsyncItr

    return TorchAsyncItr


def _jax():
    pytest.importorskip("jax")
    from tabprep.loader.jax import JaxLoader

    return JaxLoader


def test_core_reader_kwargs_cpu(data):
    """NVTabular loaders forward reader_kwargs to Dataset; {"cpu": True} reads on the host
    (it raised "Dataset() got multiple values for keyword argument 'cpu'")."""
    path, df = data
    loader = DataLoader(path, batch_size=40, label_names=["y"], cat_names=["c"], cont_names=["x"], shuffle=False,
                        reader_kwargs={"cpu": True})
    assert loader.cpu
    batch = next(iter(loader))
    np.testing.assert_array_equal(np.asarray(batch["c"]).ravel(), df["c"].to_numpy())
    with pytest.raises(ValueError, match="cpu"):
        DataLoader(path, batch_size=4, device=0, reader_kwargs={"cpu": True})


@pytest.mark.tf
def test_keras_reader_kwargs_cpu(data):
    """KerasSequenceLoader(paths, batch_size, label_names, cat_names=, cont_names=, reader_kwargs={"cpu": True})."""
    KerasSequenceLoader = _keras()
    path, df = data
    loader = KerasSequenceLoader(path, batch_size=40, label_names=["y"], cat_names=["c"], cont_names=["x"],
                                 shuffle=False, reader_kwargs={"cpu": True})
    x, y = loader[0]
    np.testing.assert_array_equal(np.asarray(x["c"]).ravel(), df["c"].to_numpy())
    np.testing.assert_array_equal(np.asarray(y).ravel(), df["y"].to_numpy())


@pytest.mark.torch
def test_torch_reader_kwargs_cpu(data):
    """TorchAsyncItr(dataset, cats=, conts=, labels=, reader_kwargs={"cpu": True})."""
    TorchAsyncItr = _torch()
    path, df = data
    itr = TorchAsyncItr(path, batch_size=40, cats=["c"], conts=["x"], labels=["y"], reader_kwargs={"cpu": True})
    x, y = next(iter(itr))
    np.testing.assert_array_equal(x["c"].numpy().ravel(), df["c"].to_numpy())


@pytest.mark.jax
def test_jax_reader_kwargs_cpu(data):
    JaxLoader = _jax()
    path, df = data
    loader = JaxLoader(path, batch_size=40, cats=["c"], conts=["x"], labels=["y"], reader_kwargs={"cpu": True})
    x, y = next(iter(loader))
    np.testing.assert_array_equal(np.asarray(x["c"]).ravel(), df["c"].to_numpy())
