"""The GPU backend's frames built from their columns (``backend.concat_columns`` / ``make_frame``):
equal, dtypes included, to ``cudf.DataFrame(dict)`` of the same series (the constructor the fast path
replaced), on every column kind the online transforms produce."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.gpu


def _series(cudf, n=7):
    rng = np.random.default_rng(0)
    return {
        "i64": cudf.Series(rng.integers(-5, 5, n)),
        "i64_nulls": cudf.Series(pd.array([1, None, 3, 4, None, 6, 7], dtype="Int64")),
        "f32_nan": cudf.Series(np.array([0.5, np.nan, np.inf, -1, 2, 3, 4], np.float32)),
        "u32": cudf.Series(rng.integers(0, 2 ** 32, n, dtype=np.uint32)),
        "bool": cudf.Series([True, False, None, True, False, True, True]),
        "str": cudf.Series(["a", None, "ü", "", "b", "c", "d"]),
        "cat": cudf.Series(["x", "y", "x", None, "y", "y", "x"], dtype="category"),
        "list": cudf.Series([[1, 2], [], None, [3], [4, 5, 6], [7], [8]]),
        3: cudf.Series(np.arange(n, dtype=np.int8)),
    }


def test_concat_and_make_frame_equal_the_constructor():
    cudf = pytest.importorskip("cudf")
    from tabprep import backend
    from tabprep.backend import gpu

    data = _series(cudf)
    want = cudf.DataFrame(data)
    for got in (gpu._gpu_frame(data, want.index), backend.concat_columns([cudf.DataFrame({k: v}) for k, v in data.items()])):
        assert list(got.columns) == list(want.columns)
        pd.testing.assert_frame_equal(got.to_pandas(), want.to_pandas())
        for c in want.columns:
            assert got[c].dtype == want[c].dtype, c
    # a non-default index is kept; series with other indexes are taken by position, as before
    idx = cudf.Index(np.arange(10, 17))
    got = gpu._gpu_frame({"a": cudf.Series(np.arange(7), index=np.arange(7)[::-1]), "b": data["str"]}, idx)
    assert got.index.to_pandas().tolist() == list(range(10, 17))
    assert got["a"].to_pandas().tolist() == list(range(7))


def test_frames_of_series_of_different_lengths_still_fail_or_align_as_the_constructor():
    cudf = pytest.importorskip("cudf")
    from tabprep.backend import gpu

    data = {"a": cudf.Series([1, 2, 3]), "b": cudf.Series([1, 2])}
    try:
        want = cudf.DataFrame(data).to_pandas()
    except Exception as exc:  # noqa: BLE001
        with pytest.raises(type(exc)):
            gpu._gpu_frame(data, cudf.RangeIndex(3))
    else:
        pd.testing.assert_frame_equal(gpu._gpu_frame(data, cudf.RangeIndex(len(want))).to_pandas(), want)
