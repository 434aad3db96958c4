"""``get_embedding_sizes(wf)`` as NVTabular 23.08 returns it: one dict while the workflow has no
multi-hot output, the pair ``(single_hot, multi_hot)`` as soon as it has one (a ragged list
column), without being asked (checked side by side with nvtabular 23.8.0). Before, tabprep gave one
dict unless ``multihot=True``, so NVTabular's idiom ``EMB, MH_EMB = get_embedding_sizes(wf)`` unpacked
the dict's two keys silently."""
from __future__ import annotations

import pandas as pd

import tabprep as tp
from tabprep import ops


def _frame() -> pd.DataFrame:
    return pd.DataFrame({"user": ["a", "b", "a", "c"],
                         "genres": [["x", "y"], ["y"], [], ["z", "x", "w"]]})


def _card(values) -> int:
    """Categorify's table rows: the distinct values plus its 3 reserved ids (pad, null, OOV)."""
    return 3 + len(set(values))


def test_a_multi_hot_output_gives_the_single_and_multi_hot_pair():
    wf = tp.Workflow(["user", "genres"] >> ops.Categorify()).fit(tp.Dataset(_frame()))
    single, multi = tp.get_embedding_sizes(wf)
    assert set(single) == {"user"} and set(multi) == {"genres"}
    assert single["user"][0] == _card(_frame()["user"])
    assert multi["genres"][0] == _card(v for row in _frame()["genres"] for v in row)
    # the loaded workflow, and ops.get_embedding_sizes (NVTabular's spelling), give the same pair
    assert ops.get_embedding_sizes(wf) == (single, multi)


def test_no_multi_hot_output_gives_one_dict():
    wf = tp.Workflow(["user"] >> ops.Categorify()).fit(tp.Dataset(_frame()))
    sizes = tp.get_embedding_sizes(wf)
    assert isinstance(sizes, dict) and set(sizes) == {"user"}
    assert sizes["user"][0] == _card(_frame()["user"])


def test_multihot_false_gives_one_dict_and_true_always_the_pair(tmp_path):
    wf = tp.Workflow(["user", "genres"] >> ops.Categorify()).fit(tp.Dataset(_frame()))
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    both = tp.get_embedding_sizes(loaded, multihot=False)
    assert isinstance(both, dict) and set(both) == {"user", "genres"}
    assert tp.get_embedding_sizes(loaded) == ({"user": both["user"]}, {"genres": both["genres"]})
    only_single = tp.Workflow(["user"] >> ops.Categorify()).fit(tp.Dataset(_frame()))
    assert tp.get_embedding_sizes(only_single, multihot=True) == (tp.get_embedding_sizes(only_single), {})


def test_a_fixed_length_list_is_single_hot_as_in_nvtabular():
    """NVTabular counts a column as multi-hot when it is a list AND ragged; a fixed-length list
    (``value_count`` min == max, e.g. from ``ListSlice(0, 2, pad=True)``) stays in the first dict."""
    wf = tp.Workflow(["genres"] >> ops.Categorify() >> ops.ListSlice(0, 2, pad=True)).fit(tp.Dataset(_frame()))
    col = wf.output_schema["genres"]
    assert col.is_list and not col.is_ragged
    sizes = tp.get_embedding_sizes(wf)
    assert isinstance(sizes, dict) and set(sizes) == {"genres"}
    assert tp.get_embedding_sizes(wf, multihot=True) == (sizes, {})
