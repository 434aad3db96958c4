"""A finite float64 beyond float32's range written to TFRecord (whose float_list is float32) is an
error naming the column, the file and the fix, like a uint64 >= 2**63: it became inf, silently
(only numpy's RuntimeWarning), and ``tabprep convert`` exited 0."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from cli_helpers import run


def test_float64_beyond_float32_is_refused(tmp_path):
    out = tmp_path / "tfr"
    frame = pd.DataFrame({"ok": [1.0, 2.0, 3.0], "x": [1.0, 1e300, np.inf]})
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no numpy overflow warning either
        with pytest.raises(ValueError) as exc:
            tp.Dataset(frame, cpu=True).to_tfrecord(str(out))
    msg = str(exc.value)
    assert "column 'x'" in msg and "part-00000.tfrecord" in msg and "1e+300" in msg, msg
    assert "float32" in msg and "Clip" in msg and "LambdaOp" in msg, msg
    assert not out.exists()  # nothing that reads as an output


def test_inf_and_float32_max_are_written(tmp_path):
    top = float(np.finfo(np.float32).max)
    frame = pd.DataFrame({"x": [-np.inf, np.inf, top, -top, 1e-300]})
    tp.Dataset(frame, cpu=True).to_tfrecord(str(tmp_path / "tfr"))
    assert (tmp_path / "tfr" / "_SUCCESS").exists()


def test_convert_fails(tmp_path):
    pd.DataFrame({"x": [1.0, -1e300]}).to_parquet(tmp_path / "in.parquet", index=False)
    r = run("convert", tmp_path / "in.parquet", "--to", "tfrecord", "--out", tmp_path / "tfr", code=1)
    assert "column 'x'" in r.output and "float32" in r.output, r.output
    assert not (tmp_path / "tfr").exists()
