"""to_keras: the workflow in-graph on TensorFlow-CPU equals the offline transform, also after a SavedModel round trip."""
from __future__ import annotations

import mmh3
import numpy as np
import pandas as pd
import pytest
import struct

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import tabprep as tp  # noqa: E402
from serving_helpers import (assert_same, fitted_workflow, keras_inputs, keras_outputs, offline_columns,  # noqa: E402
                             train_frame)
from tabprep import ops  # noqa: E402
from tabprep.serving import ServingBuildError, ServingTransform, to_keras  # noqa: E402
from tabprep.serving.keras_export import _T, hash_tensor  # noqa: E402

pytestmark = [pytest.mark.tf, pytest.mark.filterwarnings("ignore::RuntimeWarning")]


def test_tensor_murmur3_equals_mmh3_on_tabprep_bytes():
    strs = ["", "a", "ab", "abc", "abcd", "abcde", "héllo wörld", "x" * 37, "日本語"]
    got = hash_tensor(_T(tf.constant(strs), None, None, "s")).numpy().tolist()
    assert got == [mmh3.hash(s.encode("utf-8"), 0, signed=False) for s in strs]
    ints = [0, 1, -5, 2 ** 62, -(2 ** 63), 2 ** 63 - 1]
    got = hash_tensor(_T(tf.constant(ints, tf.int64), None, None, "i")).numpy().tolist()
    assert got == [mmh3.hash(struct.pack("<q", v), 0, signed=False) for v in ints]
    floats = [0.0, -0.0, 1.5, np.inf, -np.inf, 1e-300, 1.1125369292536007e-308, -5e-324]  # subnormals too
    got = hash_tensor(_T(tf.constant(floats, tf.float64), None, None, "f")).numpy().tolist()
    assert got == [mmh3.hash(struct.pack("<d", v + 0.0), 0, signed=False) for v in floats]
    got = hash_tensor(_T(tf.constant([np.nan, 2.0], tf.float64), None, None, "f")).numpy().tolist()
    assert got[0] == 0  # NaN is null in a float column


def test_keras_model_and_saved_model_equal_offline(tmp_path):
    wf = fitted_workflow()
    model = to_keras(wf)
    frame = train_frame(300, seed=21)
    frame.loc[1, "cat_i"] = 10 ** 15
    frame.loc[2, "hash_f"] = -np.inf
    frame.loc[3, "cont_f"] = np.inf
    want = offline_columns(wf, frame)
    st = ServingTransform(wf)
    inputs = keras_inputs(st, frame)
    assert_same(keras_outputs(model(inputs), list(want)), want, "keras model")
    model.export(str(tmp_path / "sm"), verbose=False)
    loaded = tf.saved_model.load(str(tmp_path / "sm"))
    assert_same(keras_outputs(loaded.serve(inputs), list(want)), want, "reloaded SavedModel")


def test_exclude_label_in_keras_inputs():
    wf = fitted_workflow(500)
    model = to_keras(wf, exclude=["label"])
    assert "label" not in model.input and "label" not in model.output


def test_inexact_ops_are_refused():
    df = pd.DataFrame({"f": [0.5, 1.5, 0.5], "g": [1, 2, 3]})
    wf = tp.Workflow(["f"] >> ops.Categorify()).fit(df)
    with pytest.raises(ServingBuildError, match="cannot export Categorify.*float64"):
        to_keras(wf)
    wf = tp.Workflow(["g"] >> ops.DifferenceLag(partition_cols=["f"])).fit(df)
    with pytest.raises(ServingBuildError, match="DifferenceLag"):
        to_keras(wf)


def test_categorify_single_table_in_keras_equals_offline():
    """Categorify(single_table=True): each vocabulary's ids shifted into the shared range in-graph too."""
    train = pd.DataFrame({"a": ["x", "y", "x", None], "b": ["y", "z", "z", "z"], "i": [5, 6, 5, 7]})
    wf = tp.Workflow(["a", "b", "i"] >> ops.Categorify(single_table=True)).fit(train)
    frame = pd.DataFrame({"a": ["y", "q", None], "b": ["z", "x", "y"], "i": [7, 8, 5]})
    want = offline_columns(wf, frame)
    assert want["i"].tolist() == [3 + 2 + 2 + 2, 2, 3 + 2 + 2]  # after a's 2 and b's 2 values: 5, then 7
    model = to_keras(wf)
    assert_same(keras_outputs(model(keras_inputs(ServingTransform(wf), frame)), list(want)), want, "keras model")
