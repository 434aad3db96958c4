"""Object storage on the GPU (issue #16): cuDF reads and writes ``s3://`` through fsspec.

Runs on the device machine against the moto S3 server of conftest.py's ``s3`` fixture. References:
the plain-pandas reference of ``s3_helpers`` (documented op semantics) and the CPU run of the same
job on the same objects (identical ids, floats to float32 rounding); outputs are read back with the
test's own s3fs client.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from conftest import GPU_SKIP
from s3_helpers import N, assert_matches, make_workflow, put_raw, raw_frame, read_output, reference

pytestmark = [pytest.mark.gpu, GPU_SKIP]


def _by_row(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values("row").reset_index(drop=True)


def test_gpu_fit_transform_s3_to_s3_equals_reference_and_cpu(s3):
    frame = raw_frame()
    put_raw(s3, "raw", frame)
    ds = tp.Dataset(s3.url("raw"), cpu=False)
    assert ds.num_rows == N
    meta = make_workflow().fit(ds).transform(ds).to_parquet(s3.url("out"))
    assert meta["rows"] == N
    keys = s3.keys("out")
    assert "_SUCCESS" in keys and any(k.endswith(".parquet") for k in keys), keys
    got = read_output(s3, "out")
    assert_matches(got, reference(frame))
    # the CPU job on the same objects: the same ids, floats to float32 rounding
    dc = tp.Dataset(s3.url("raw"), cpu=True)
    make_workflow().fit(dc).transform(dc).to_parquet(s3.url("out_cpu"))
    cpu = _by_row(read_output(s3, "out_cpu"))
    got = _by_row(got)
    for c in ("cat", "ival", "row", "label"):
        np.testing.assert_array_equal(got[c].to_numpy(), cpu[c].to_numpy(), err_msg=c)
    np.testing.assert_allclose(got["num"].to_numpy(np.float64), cpu["num"].to_numpy(np.float64), rtol=2e-7)


def test_gpu_workflow_saved_to_s3_loads_and_transforms_the_same(s3):
    import cudf

    frame = raw_frame()
    put_raw(s3, "raw", frame)
    wf = make_workflow().fit(tp.Dataset(s3.url("raw"), cpu=False))
    wf.save(s3.url("wf"))
    assert "_SUCCESS" in s3.keys("wf")
    loaded = tp.Workflow.load(s3.url("wf"))
    gdf = cudf.from_pandas(frame)
    want = wf.transform(gdf).to_pandas()
    got = loaded.transform(gdf).to_pandas()
    pd.testing.assert_frame_equal(got, want)
    assert_matches(got, reference(frame))
