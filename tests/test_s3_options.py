"""``storage_options=`` on the loaders, as pandas / dask users expect it (issue #16), with the only
valid credentials and endpoint in ``storage_options`` (the test server checks signatures; the
environment's key is unknown to it and its endpoint is dead). JoinExternal's side table at a URL
is tested the same way in tests/test_op_join_external.py.

Same local S3 server (the ``s3`` fixture of conftest.py). Expected values are plain pandas computed
here; nothing here asks tabprep what the answer should be.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from s3_helpers import only_storage_options_credentials, put_raw, raw_frame
from tabprep import ops
from tabprep.backend import to_numpy
from tabprep.loader import DataLoader


def _batches(loader, names):
    """The loader's batches as one pandas frame (numpy arrays, no tabprep helper)."""
    parts = [pd.DataFrame({n: to_numpy(b[n]) for n in names}) for b in loader]
    return pd.concat(parts, ignore_index=True), [len(p) for p in parts]


def _loader_reference(frame: pd.DataFrame) -> pd.DataFrame:
    """What the loader emits, by its documented rules: continuous columns float32 (NaN, inf kept),
    integer columns keep their values, nulls of integer columns become 0."""
    return pd.DataFrame({"row": frame["row"].to_numpy("int64"), "num": frame["num"].to_numpy("float32"),
                         "ival": frame["ival"].fillna(0).to_numpy("int64"), "label": frame["label"].to_numpy("int64")})


def _assert_frame_equal(got: pd.DataFrame, want: pd.DataFrame) -> None:
    assert list(got.columns) == list(want.columns)
    for c in want.columns:
        np.testing.assert_array_equal(got[c].to_numpy(), want[c].to_numpy(), err_msg=c)


# -- the loaders ----------------------------------------------------------------------------------------
def test_loader_storage_options(s3, monkeypatch):
    frame = raw_frame(seed=101)
    put_raw(s3, "raw", frame)  # three files, the middle one empty
    want = _loader_reference(frame)
    names = ["row", "num", "ival", "label"]
    with only_storage_options_credentials(s3, monkeypatch) as so:
        # without them the server refuses (the credentials really are only there)
        with pytest.raises(OSError, match="credentials"):
            DataLoader(s3.url("raw"), batch_size=64, cont_names=["num"], device="cpu")
        with pytest.raises(OSError, match="credentials"):  # and the server checks the secret (signatures)
            DataLoader(s3.url("raw"), batch_size=64, cont_names=["num"], device="cpu",
                       storage_options=dict(so, secret="wrong"))
        loader = DataLoader(s3.url("raw"), batch_size=64, cat_names=["row", "ival"], cont_names=["num"],
                            label_names=["label"], shuffle=False, device="cpu", storage_options=so)
        assert loader.storage_options is so  # stored verbatim
        got, sizes = _batches(loader, names)
        _assert_frame_equal(got, want)
        assert sizes == [64] * (len(frame) // 64) + [len(frame) % 64]
        # shuffled: the same rows, each once
        shuffled, _ = _batches(DataLoader(s3.url("raw"), batch_size=50, cat_names=["row", "ival"],
                                          cont_names=["num"], label_names=["label"], seed=3, device="cpu",
                                          storage_options=so), names)
        assert shuffled["row"].tolist() != want["row"].tolist()
        _assert_frame_equal(shuffled.sort_values("row").reset_index(drop=True), want)
        # the reader_kwargs route keeps working, and both ways with the same options is fine
        for kwargs in ({"reader_kwargs": {"storage_options": so}},
                       {"reader_kwargs": {"storage_options": dict(so)}, "storage_options": so}):
            got, _ = _batches(DataLoader(s3.url("raw"), batch_size=64, cat_names=["row", "ival"],
                                         cont_names=["num"], label_names=["label"], shuffle=False, device="cpu",
                                         **kwargs), names)
            _assert_frame_equal(got, want)
        # the framework loaders take them too
        from tabprep.loader.torch import TorchAsyncItr

        itr = TorchAsyncItr(s3.url("raw"), batch_size=64, cats=["row"], conts=["num"], labels=["label"],
                            device="cpu", storage_options=so)
        rows = np.concatenate([x["row"].numpy() for x, _ in itr])
        np.testing.assert_array_equal(rows, want["row"].to_numpy())
        # a workflow attached: the loader reads the raw columns it needs with the options
        wf = tp.Workflow((["num"] >> ops.FillMissing(0.0)) + ["row", "label"]).fit(tp.Dataset(frame, cpu=True))
        loader = DataLoader(s3.url("raw"), batch_size=64, shuffle=False, device="cpu", cat_names=["row"],
                            cont_names=["num"], label_names=["label"], storage_options=so).map(wf)
        got, _ = _batches(loader, ["row", "num", "label"])
        np.testing.assert_array_equal(got["num"].to_numpy(), frame["num"].fillna(0.0).to_numpy("float32"))
        np.testing.assert_array_equal(got["row"].to_numpy(), want["row"].to_numpy())


def test_loader_storage_options_given_twice_must_agree(s3):
    so = {"endpoint_url": s3.endpoint}
    other = {"endpoint_url": "http://127.0.0.1:1"}
    with pytest.raises(ValueError, match="storage_options") as err:
        DataLoader(s3.url("raw"), batch_size=8, cont_names=["num"], device="cpu", storage_options=so,
                   reader_kwargs={"storage_options": other})
    assert "reader_kwargs" in str(err.value)
    # a Dataset carries its own options: different ones given to the loader would be ignored
    frame = raw_frame(seed=103)
    put_raw(s3, "raw", frame)
    ds = tp.Dataset(s3.url("raw"), cpu=True, storage_options=so)
    with pytest.raises(ValueError, match="storage_options"):
        DataLoader(ds, batch_size=8, cont_names=["num"], device="cpu", storage_options=other)
    batches = list(DataLoader(ds, batch_size=1000, cat_names=["row"], cont_names=["num"], shuffle=False,
                              device="cpu", storage_options=so))
    np.testing.assert_array_equal(to_numpy(batches[0]["row"]), frame["row"].to_numpy())


def test_keras_loader_storage_options(s3, monkeypatch):
    from tabprep.loader.tensorflow import KerasSequenceLoader

    frame = raw_frame(seed=107)
    put_raw(s3, "raw", frame)
    with only_storage_options_credentials(s3, monkeypatch) as so:
        loader = KerasSequenceLoader(s3.url("raw"), batch_size=100, cat_names=["row"], cont_names=["num"],
                                     label_names=["label"], shuffle=False, device="cpu", storage_options=so)
        rows = np.concatenate([np.asarray(loader[i][0]["row"]).reshape(-1) for i in range(len(loader))])
    np.testing.assert_array_equal(rows, frame["row"].to_numpy())
