"""Hypothesis: random rows (nulls, unseen categories, +-inf, NaN, empty lists) give the same outputs from the
offline transform, ServingTransform (batch and one row at a time), the HTTP server and the exported Keras model."""
from __future__ import annotations

import json
import math

import httpx
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as hs

from serving_helpers import (STRS, TAGS, assert_same, fitted_workflow, frame_of, keras_inputs, keras_outputs,
                             offline_columns)
from tabprep.serving import ServingTransform
from test_serving_http import start_server, stop

tf = pytest.importorskip("tensorflow")
pytestmark = [pytest.mark.tf, pytest.mark.filterwarnings("ignore::RuntimeWarning")]

I64 = hs.integers(-(2 ** 63), 2 ** 63 - 1)
nullable = lambda s: hs.none() | s  # noqa: E731
text = hs.sampled_from(STRS) | hs.text(max_size=6)
# subnormals excluded: TensorFlow's CPU kernels flush them to zero (documented in keras_export)
floats = hs.floats(allow_nan=True, allow_infinity=True, allow_subnormal=False, width=64)
small_ints = hs.integers(-5, 50)

ROW = hs.fixed_dictionaries({
    "cat_i": nullable(small_ints | I64),
    "cat_s": nullable(text),
    "u_a": nullable(text),
    "u_b": nullable(text),
    "hash_i": hs.integers(-(2 ** 31), 2 ** 31 - 1),
    "hash_s": text,
    "hash_f": nullable(floats),
    "cont_i": nullable(hs.integers(-10, 100_000) | I64),
    "cont_f": nullable(hs.floats(allow_nan=True, allow_infinity=True, allow_subnormal=False, width=32)),
    "bkt": nullable(floats),
    "cross_a": I64,
    "cross_b": text,
    "label": hs.integers(0, 1),
    "tags": nullable(hs.lists(nullable(hs.sampled_from(TAGS) | hs.text(max_size=3)), max_size=4)),
    "tags_i": hs.lists(small_ints | I64, max_size=4),
})


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    wf = fitted_workflow()
    wf_dir = str(tmp_path_factory.mktemp("parity") / "wf")
    wf.save(wf_dir)
    proc, url = start_server(wf_dir)
    from tabprep.serving import to_keras

    yield wf, ServingTransform(wf), to_keras(wf), httpx.Client(base_url=url)
    assert stop(proc)


def _json_equal(got, want) -> bool:
    """An HTTP value against a served array element (float32 compared exactly; NaN, inf as JSON tokens)."""
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(_json_equal(g, w) for g, w in zip(got, want))
    if isinstance(want, float):
        if math.isnan(want):
            return got is None or (isinstance(got, float) and math.isnan(got))
        return isinstance(got, (float, int)) and np.float32(got) == np.float32(want)
    return got == want


def _served_rows(out, names, n):
    rows = [{} for _ in range(n)]
    for c in names:
        if c + "__values" in out:
            offs = np.concatenate([[0], np.cumsum(out[c + "__nnzs"])])
            vals = out[c + "__values"].tolist()
            for i in range(n):
                rows[i][c] = vals[offs[i]:offs[i + 1]]
        else:
            vals = out[c].tolist()
            for i in range(n):
                rows[i][c] = vals[i]
    return rows


@settings(max_examples=40, deadline=None, phases=[Phase.explicit, Phase.generate, Phase.target], suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(rows=hs.lists(ROW, min_size=1, max_size=6))
def test_offline_serving_http_keras_agree(setup, rows):
    wf, st, model, client = setup
    frame = frame_of({c: [r[c] for r in rows] for c in rows[0]})
    want = offline_columns(wf, frame)
    # ServingTransform: the frame, a dict of lists, and each row alone
    assert_same(st.transform_batch(frame), want, "batch")
    py_rows = [{c: (None if isinstance(v, float) and math.isnan(v) else v) for c, v in r.items()} for r in rows]
    for i, r in enumerate(py_rows):
        r32 = dict(r, cont_f=None if r["cont_f"] is None else float(np.float32(r["cont_f"])))
        one = st(r32)
        for k, w in want.items():
            if k.endswith("__values"):
                offs = np.concatenate([[0], np.cumsum(want[k[:-8] + "__nnzs"])])
                w = w[offs[i]:offs[i + 1]]
            else:
                w = w[i:i + 1]
            assert_same({k: one[k]}, {k: w}, f"row {i}")
    # HTTP: the same rows as JSON (NaN / Infinity as Python's JSON tokens)
    body = json.dumps({"rows": py_rows})
    r = client.post("/transform", content=body)
    assert r.status_code == 200, r.text
    got = r.json()["rows"]
    names = list(wf.output_columns)
    expected = _served_rows(want, names, len(rows))
    for i, (g, w) in enumerate(zip(got, expected)):
        for c in names:
            assert _json_equal(g[c], w[c]), (i, c, g[c], w[c])
    # the exported Keras model
    assert_same(keras_outputs(model(keras_inputs(st, frame)), list(want)), want, "keras")
