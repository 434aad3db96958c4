"""Column groups holding nodes computed by ops (NVTabular 23.08's "combo of nodes").

merlin-core 23.08 (merlin/dag/node.py ``Node.__add__`` / ``Node.construct_from``, and
merlin/dag/ops/grouping.py ``GroupingOp.compute_selector``) turns a list holding a node, added to
a node with ``+``, into one column group of all the list's output columns: NVTabular's own
``country + "user" + [country + "user"] >> Categorify(encode_type="combo")`` outputs
``geo_country``, ``user`` and ``geo_country_user`` (checked on nvtabular 23.8.0 / merlin-core
23.8.0, CPU). A list of names only (``node + ["user"]``) stays a plain selection there and here.
``[[node, "b"]] >> op`` is tabprep's spelling of the same group (NVTabular raises
``ValueError: ColumnSelectors can not contain Nodes``).

References are plain pandas: a combo id is a bijection of the (country, user) pairs, nulls
included as a value of a part, and equals the ids a workflow over a pandas-computed raw column
gives.
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops
from tabprep.workflow.spec_read import SpecError
from tests.conftest import make_dataset, to_pandas


@pytest.fixture
def df():
    return pd.DataFrame({
        "geo": ["US>CA", "US>NY", "CA>BC", "CA>ON", None, "US>CA", "CA>BC", "MX>JA"],
        "user": ["User_A", "User_A", "User_A", "User_B", "User_B", None, None, "User_A"],
        "t": [1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0],
    })


def slice2(col):
    return col.str.slice(0, 2)


def _country():
    return ["geo"] >> ops.LambdaOp(slice2) >> ops.Rename(postfix="_country")


def _pairs(df):
    """The (country, user) key of each row as one string, nulls as their own value (pandas only)."""
    country = df["geo"].str.slice(0, 2)
    return country.fillna("<NA>") + "|" + df["user"].fillna("<NA>")


def _bijective(codes: pd.Series, keys: pd.Series) -> bool:
    pairs = pd.DataFrame({"k": keys.to_numpy(), "v": codes.to_numpy()}).drop_duplicates()
    return pairs["k"].is_unique and pairs["v"].is_unique


def _raw_baseline(df, backend):
    """The same combo over a country column computed in pandas and passed as a raw column."""
    raw = df.assign(geo_country=df["geo"].str.slice(0, 2))
    wf = tp.Workflow(["geo_country", "user", ["geo_country", "user"]] >> ops.Categorify(encode_type="combo"))
    return to_pandas(wf.fit_transform(make_dataset(raw[["geo_country", "user"]], backend, nparts=2)).to_ddf().compute())


def test_nvtabular_combo_of_nodes_in_a_merge(df, backend):
    """NVTabular's `country + "user" + [country + "user"] >> Categorify(encode_type="combo")`:
    the listed node is one group; each column alone and the group each get their ids."""
    country = _country()
    wf = tp.Workflow(country + "user" + [country + "user"] >> ops.Categorify(encode_type="combo"))
    out = to_pandas(wf.fit_transform(make_dataset(df, backend, nparts=3)).to_ddf().compute())
    assert list(out.columns) == ["geo_country", "user", "geo_country_user"]
    assert wf.output_schema.column_names == ["geo_country", "user", "geo_country_user"]
    keys = _pairs(df)
    assert _bijective(out["geo_country_user"], keys)
    # a combination with one null part has its own id; only the all-null row would get 1
    assert (out["geo_country_user"][df["geo"].isna() | df["user"].isna()] > 2).all()
    pd.testing.assert_frame_equal(out, _raw_baseline(df, backend))


def test_bracketed_group_of_a_computed_node(df, backend):
    """tabprep's `[[node, "user"]] >> Categorify(encode_type="combo")`: the same group."""
    wf = tp.Workflow([[_country(), "user"]] >> ops.Categorify(encode_type="combo"))
    out = to_pandas(wf.fit_transform(make_dataset(df, backend, nparts=2)).to_ddf().compute())
    assert list(out.columns) == ["geo_country_user"]
    pd.testing.assert_series_equal(out["geo_country_user"], _raw_baseline(df, backend)["geo_country_user"])


def test_list_of_names_in_a_merge_stays_plain(df):
    """`node + ["user"]` (names only) is a plain selection in merlin too: two encodings, no group."""
    wf = tp.Workflow(_country() + ["user"] >> ops.Categorify(encode_type="combo"))
    wf.fit(tp.Dataset(df))
    assert wf.output_columns == ["geo_country", "user"]


def test_target_encoding_of_a_group_with_a_computed_node(df):
    """TargetEncoding over the group (country, user): the smoothed mean of t per pair (pandas)."""
    wf = tp.Workflow((["user"] >> ops.Rename(postfix="_u"))
                     + [_country() + "user"] >> ops.TargetEncoding("t", kfold=1, p_smooth=0))
    out = wf.fit_transform(tp.Dataset(df)).to_ddf().compute()
    assert "TE_geo_country_user_t" in out.columns
    keys = _pairs(df)
    ref = df["t"].groupby(keys).transform("mean")
    np.testing.assert_allclose(out["TE_geo_country_user_t"].to_numpy(), ref.to_numpy())


def test_save_load_keeps_the_group(df, tmp_path):
    country = _country()
    wf = tp.Workflow(country + "user" + [country + "user"] >> ops.Categorify(encode_type="combo"))
    wf.fit(tp.Dataset(df))
    before = wf.transform(df)
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"), trusted=True)  # slice2, by import path
    assert loaded.output_columns == ["geo_country", "user", "geo_country_user"]
    saved = json.loads((tmp_path / "wf" / "workflow.json").read_text())
    assert ["geo_country", "user"] in [g for e in saved["nodes"] for g in e.get("groups", [])]
    pd.testing.assert_frame_equal(loaded.transform(df), before)


def test_to_spec_refuses_a_group_of_computed_nodes():
    wf = tp.Workflow([[_country(), "user"]] >> ops.Categorify(encode_type="combo"))
    with pytest.raises(SpecError, match="group"):
        wf.to_spec()


def test_same_column_from_different_ops_in_a_merge_warns_and_keeps_the_later(df):
    """Two op nodes writing `geo_country` into one `+`: NVTabular 23.08 keeps the later branch's
    values silently; tabprep keeps them too and warns, naming the column (tests/nvtabular/test_graph_merge.py)."""
    with pytest.warns(UserWarning, match="column 'geo_country' is output by two branches"):
        wf = tp.Workflow(_country() + [_country(), "user"] >> ops.Categorify(encode_type="combo"))
    assert wf.output_node.parents[0].output_columns.count("geo_country") == 1


def test_group_of_raw_nodes_in_a_merge_is_a_selection_group(df):
    """`node + [raw_node, "b"]` with raw columns only: the group of a selection, which a spec writes."""
    wf = tp.Workflow(_country() + [tp.Workflow(["geo"]).output_node, "user"]
                     >> ops.Categorify(encode_type="combo"))
    wf.fit(tp.Dataset(df))
    assert wf.output_columns == ["geo_country", "geo_user"]
    out = wf.transform(df)
    assert _bijective(out["geo_user"], df["geo"].fillna("<NA>") + "|" + df["user"].fillna("<NA>"))
