"""Fitted statistics under NVTabular 23.08's names: Normalize ``.means`` / ``.stds``
(nvtabular/ops/normalize.py Normalize.fit_finalize), NormalizeMinMax ``.mins`` / ``.maxs``,
FillMedian ``.medians`` (nvtabular/ops/fill.py), and Categorify ``.categories`` (column -> path of
``unique.<col>.parquet``, read with ``pd.read_parquet``: values in id order, index = id)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops


def _df():
    return pd.DataFrame({"x": [1.0, 2.0, 4.0, np.nan, 8.0], "y": [0.0, -1.0, 1.0, 3.0, 2.0],
                         "c": ["b", "a", "b", None, "c"]})


def test_normalize_means_stds():
    """Normalize.means / .stds: {column: value}; std is the sample std of the non-null values."""
    op = ops.Normalize()
    tp.Workflow(["x", "y"] >> op).fit(tp.Dataset(_df()))
    for c in ["x", "y"]:
        assert op.means[c] == pytest.approx(_df()[c].mean())
        assert op.stds[c] == pytest.approx(_df()[c].std(ddof=1), rel=1e-9)


def test_normalize_uses_the_sample_std():
    """NVTabular 23.08's Normalize divides by the sample std (nvtabular/ops/moments.py
    ``_finalize_moments(inp, ddof=1)``), so (x - mean) / std(ddof=1) of the non-null values."""
    df = _df()
    out = tp.Workflow(["x", "y"] >> ops.Normalize()).fit_transform(tp.Dataset(df)).to_ddf().compute()
    for c in ["x", "y"]:
        ref = (df[c] - df[c].mean()) / df[c].std(ddof=1)
        np.testing.assert_allclose(out[c].to_numpy("float64"), ref.to_numpy(), rtol=1e-6)


def test_minmax_and_medians():
    """NormalizeMinMax.mins / .maxs and FillMedian.medians."""
    mm, med = ops.NormalizeMinMax(), ops.FillMedian()
    tp.Workflow((["x"] >> mm) + (["y"] >> med)).fit(tp.Dataset(_df()))
    assert mm.mins == {"x": 1.0} and mm.maxs == {"x": 8.0}
    assert med.medians["y"] == pytest.approx(_df()["y"].median())


def test_categorify_categories_files():
    """pd.read_parquet(op.categories["c"]): values in id order (most frequent first), counts in
    c_size, the index is the id the transform gives."""
    op = ops.Categorify()
    wf = tp.Workflow(["c"] >> op)
    out = wf.fit_transform(tp.Dataset(_df())).to_ddf().compute()
    cats = pd.read_parquet(op.categories["c"])
    assert cats["c"].tolist() == ["b", "a", "c"] and cats["c_size"].tolist() == [2, 1, 1]
    ids = dict(zip(cats["c"], cats.index))
    assert out["c"].tolist() == [ids["b"], ids["a"], ids["b"], 1, ids["c"]]


def test_unfitted_is_empty():
    """Before fit the names read as empty dicts (no error)."""
    assert ops.Normalize().means == {} and ops.Categorify().categories == {}


def test_categorify_categories_file_has_nvtabulars_unnamed_index(tmp_path):
    """NVTabular 23.08 writes ``unique.<col>.parquet`` with an unnamed range index (checked on
    nvtabular 23.8.0: pandas metadata ``{'kind': 'range', 'name': None, 'start': 3}``), so
    ``pd.read_parquet(f).reset_index()`` gives the columns ``index``, ``<col>``, ``<col>_size``;
    with ``num_buckets=3`` the ids start at 5."""
    for kwargs, start in (({}, 3), ({"num_buckets": 3}, 5)):
        op = ops.Categorify(**kwargs)
        tp.Workflow(["c"] >> op).fit(tp.Dataset(_df()))
        cats = pd.read_parquet(op.categories["c"])
        assert cats.index.name is None
        assert list(cats.reset_index().columns) == ["index", "c", "c_size"]
        assert cats.index.tolist() == list(range(start, start + 3))
        assert list(op.category_frame("c").reset_index().columns) == ["index", "c", "c_size"]


def test_categorify_categories_files_do_not_outlive_the_op_or_the_process():
    """The temporary folder of ``op.categories`` is tabprep's own: it is removed when the op is
    garbage collected and when the process exits (each access after a fit used to leave a
    ``tabprep-categories-*`` folder in the temp dir for good)."""
    import copy
    import gc
    import os
    import subprocess
    import sys

    op = ops.Categorify()
    tp.Workflow(["c"] >> op).fit(tp.Dataset(_df()))
    folder = os.path.dirname(op.categories["c"])
    assert os.path.exists(os.path.join(folder, "unique.c.parquet"))
    twin = copy.deepcopy(op)   # (a copy, or a pickled op on a worker, writes a folder of its own)
    assert os.path.dirname(twin.categories["c"]) != folder
    del op
    gc.collect()
    assert not os.path.exists(folder)
    assert pd.read_parquet(twin.categories["c"])["c"].tolist() == ["b", "a", "c"]

    code = ("import pandas as pd, tabprep as tp\nfrom tabprep import ops\nop = ops.Categorify()\n"
            "tp.Workflow(['c'] >> op).fit(tp.Dataset(pd.DataFrame({'c': ['a', 'b', 'a']})))\n"
            "print(op.categories['c'])\n")
    path = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.strip()
    assert path.endswith("unique.c.parquet")
    assert not os.path.exists(os.path.dirname(path))
