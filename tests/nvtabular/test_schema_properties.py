"""The output column schema's properties NVTabular 23.08 writes, as a reader of
``wf.output_schema[col].properties`` (or of a saved schema file) finds them.

Facts checked against nvtabular 23.08 (CPU) on the frame of ``_df()``:

* ``Categorify._compute_properties`` (nvtabular/ops/categorify.py) writes
  ``properties["embedding_sizes"] = {"cardinality": n, "dimension": d}`` with ``n`` the embedding
  table's rows (``domain.max + 1``) and ``d = min(512, max(16, round(1.6 * n ** 0.56)))``
  (``_emb_sz_rule``); ``get_embedding_sizes`` reads that property.
* ``HashBucket._compute_properties`` (nvtabular/ops/hash_bucket.py) writes the same with
  ``n = num_buckets``.

References here: pandas' ``nunique`` and the dimension rule written out below."""
from __future__ import annotations

import json
import warnings

import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops


def _df():
    return pd.DataFrame({
        "a": [1, 2, None, 2, 3, 3, 3, 4],
        "b": ["x", None, "y", "x", "z", "z", "w", "x"],
        "c": ["p", "q", "p", None, "q", "r", "p", "p"],
        "l": [[1, 2], [2], [], [3, 4, 4], [1], [5], [2, 2], [6]],
    })


def _dim(n: int) -> int:
    """NVTabular's ``_emb_sz_rule`` (fastai's rule, clamped to [16, 512])."""
    return int(min(512, max(16, round(1.6 * n ** 0.56))))


def _nunique(col: str) -> int:
    s = _df()[col]
    return int(s.explode().dropna().nunique()) if col == "l" else int(s.nunique())


def _fitted(node, df=None):
    wf = tp.Workflow(node)
    wf.fit(tp.Dataset(_df() if df is None else df))
    return wf


def _sizes(wf, col):
    return wf.output_schema[col].properties["embedding_sizes"]


def _agrees(wf):
    """The property, ``get_embedding_sizes`` and ``domain`` give one table size per column."""
    sizes = tp.get_embedding_sizes(wf)
    singles = sizes if isinstance(sizes, dict) else {**sizes[0], **sizes[1]}
    for name, (card, dim) in singles.items():
        props = wf.output_schema[name].properties
        assert props["embedding_sizes"] == {"cardinality": card, "dimension": dim}, name
    return singles


@pytest.mark.parametrize("cols", [["a"], ["b"], ["c"], ["l"]])
def test_categorify_writes_embedding_sizes(cols):
    """Categorify: cardinality = 0 pad + 1 null + 1 OOV + the column's distinct values, as
    NVTabular's (a: 7, b: 7, c: 6, l: 9 on this frame)."""
    wf = _fitted(cols >> ops.Categorify())
    n = 3 + _nunique(cols[0])
    assert _sizes(wf, cols[0]) == {"cardinality": n, "dimension": _dim(n)}
    assert wf.output_schema[cols[0]].properties["domain"]["max"] == n - 1
    _agrees(wf)


def test_categorify_embedding_sizes_groups_and_combo():
    """A joint group shares one table (b, c: 7 values + 3); a combo column counts the
    combinations, a null part included (7 + 3). A column alone next to its combo group keeps its
    own table (docs/migration.md: NVTabular writes the group's there)."""
    joint = _fitted([["b", "c"]] >> ops.Categorify())
    values = pd.concat([_df()["b"], _df()["c"]]).dropna().nunique()
    for col in ("b", "c"):
        assert _sizes(joint, col) == {"cardinality": values + 3, "dimension": _dim(values + 3)}
    combos = len(set(zip(_df()["b"].fillna("<na>"), _df()["c"].fillna("<na>"))))
    combo = _fitted(["b", "c", ["b", "c"]] >> ops.Categorify(encode_type="combo"))
    assert _sizes(combo, "b_c")["cardinality"] == combos + 3 == 10
    assert _sizes(combo, "b")["cardinality"] == _nunique("b") + 3
    assert _sizes(combo, "c")["cardinality"] == _nunique("c") + 3
    _agrees(joint), _agrees(combo)


@pytest.mark.parametrize("kwargs,expected", [
    (dict(num_buckets=10), {"a": 4 + 2 + 10, "b": 4 + 2 + 10}),
    (dict(num_buckets={"a": 5, "b": 3}), {"a": 4 + 2 + 5, "b": 4 + 2 + 3}),
    (dict(max_size=4), {"a": 4, "b": 4}),
    (dict(max_size=6, num_buckets=2), {"a": 6, "b": 6}),
    # a: 2 and 3 are seen twice or more; b: x and z
    (dict(freq_threshold=2), {"a": 2 + 3, "b": 2 + 3}),
    (dict(embedding_dim={"a": 8}), {"a": 7, "b": 7}),
    (dict(dtype="int32"), {"a": 7, "b": 7}),
])
def test_categorify_embedding_sizes_follow_the_options(kwargs, expected):
    """NVTabular 23.08's values for num_buckets (int, dict), max_size, freq_threshold; tabprep's
    ``embedding_dim=`` override is the property's dimension too."""
    wf = _fitted(["a", "b"] >> ops.Categorify(**kwargs))
    for col, n in expected.items():
        dim = kwargs.get("embedding_dim", {}).get(col, _dim(n))
        assert _sizes(wf, col) == {"cardinality": n, "dimension": dim}, col
    _agrees(wf)


def test_categorify_single_table_embedding_sizes_are_the_shared_table():
    """single_table: each column's property is the shared table's size (docs/migration.md):
    2 + 1 OOV + a's 4 values + b's 4 values, the same as cardinality and get_embedding_sizes."""
    with pytest.warns(tp.NVTabularDifferenceWarning):
        op = ops.Categorify(single_table=True)
    wf = _fitted(["a", "b"] >> op)
    n = 3 + _nunique("a") + _nunique("b")
    for col in ("a", "b"):
        assert _sizes(wf, col) == {"cardinality": n, "dimension": _dim(n)}
    _agrees(wf)


def test_categorify_large_vocabulary_dimension():
    """3000 values: NVTabular gives (3003, 142)."""
    df = pd.DataFrame({"u": [i % 3000 for i in range(5000)]})
    wf = _fitted(["u"] >> ops.Categorify(), df)
    assert _sizes(wf, "u") == {"cardinality": 3003, "dimension": 142} == {"cardinality": 3003, "dimension": _dim(3003)}


def test_hash_bucket_writes_embedding_sizes():
    """HashBucket: cardinality num_buckets (10 -> (10, 16), 1000 -> (1000, 77) as NVTabular)."""
    wf = _fitted(["a", "b"] >> ops.HashBucket({"a": 10, "b": 1000}))
    assert _sizes(wf, "a") == {"cardinality": 10, "dimension": 16}
    assert _sizes(wf, "b") == {"cardinality": 1000, "dimension": 77} == {"cardinality": 1000, "dimension": _dim(1000)}
    assert tp.get_embedding_sizes(wf) == {"a": (10, 16), "b": (1000, 77)}
    # stateless: the schema alone gives it, without a fit
    bound = tp.Workflow(["a"] >> ops.HashBucket(10)).bind_schema(tp.Dataset(_df()).schema)
    assert bound.output_schema["a"].properties["embedding_sizes"] == {"cardinality": 10, "dimension": 16}


def test_embedding_sizes_survive_save_load_and_the_output_schema_file(tmp_path):
    """The property is in the saved workflow's schema, the loaded workflow's and the
    transformed output's ``_schema.json``."""
    node = (["a", "l"] >> ops.Categorify()) + (["b"] >> ops.HashBucket(20))
    wf = _fitted(node)
    expected = {"a": {"cardinality": 7, "dimension": 16}, "l": {"cardinality": 9, "dimension": 16},
                "b": {"cardinality": 20, "dimension": _dim(20)}}
    wf.save(str(tmp_path / "wf"))
    saved = json.loads((tmp_path / "wf" / "workflow.json").read_text())
    on_disk = {c["name"]: c["properties"]["embedding_sizes"] for c in saved["output_schema"]["columns"]}
    assert on_disk == expected
    back = tp.Workflow.load(str(tmp_path / "wf"))
    assert {c: _sizes(back, c) for c in expected} == expected
    back.transform(tp.Dataset(_df())).to_parquet(str(tmp_path / "out"))
    written = json.loads((tmp_path / "out" / "_schema.json").read_text())
    assert {c["name"]: c["properties"]["embedding_sizes"] for c in written["columns"]} == expected
    single, multi = tp.get_embedding_sizes(back, multihot=True)
    assert single == {"a": (7, 16), "b": (20, _dim(20))} and multi == {"l": (9, 16)}


def test_hashed_cross_schema_has_no_domain_and_keeps_its_table_size():
    """NVTabular 23.08's HashedCross output (``a_X_b``, int32) has no ``domain`` (nor tags or
    properties: its ``get_embedding_sizes`` leaves it out). tabprep writes no domain either, and
    keeps the cross categorical with ``cardinality = num_buckets`` (NVTabular's docstring: "the
    categorical cardinality of the transformed categorical feature"), so its embedding-size export
    sizes the cross's table; the property and get_embedding_sizes agree (docs/migration.md)."""
    wf = _fitted([["a", "b"], ["b", "c"]] >> ops.HashedCross({"a_X_b": 10, "b_X_c": 1000}))
    for name, nb in (("a_X_b", 10), ("b_X_c", 1000)):
        col = wf.output_schema[name]
        assert col.dtype == "int32"
        assert "domain" not in col.properties
        assert col.properties["embedding_sizes"] == {"cardinality": nb, "dimension": _dim(nb)}
        assert tp.Tags.CATEGORICAL in col.tags
    assert tp.get_embedding_sizes(wf) == {"a_X_b": (10, 16), "b_X_c": (1000, 77)}
    assert _agrees(wf) == tp.get_embedding_sizes(wf)


@pytest.mark.parametrize("kwargs,expected", [
    ({}, {"a": (None, 0, 0), "b": (None, 0, 0)}),
    (dict(freq_threshold=2, num_buckets=3), {"a": (3, 2, 0), "b": (3, 2, 0)}),
    (dict(max_size={"a": 5, "b": 6}, num_buckets={"a": 2, "b": 1}), {"a": (2, 0, 5), "b": (1, 0, 6)}),
])
def test_categorify_writes_its_options_as_nvtabular(kwargs, expected):
    """Categorify._compute_properties: ``num_buckets`` (as given: None by default),
    ``freq_threshold`` and ``max_size`` (0 by default), per column from a dict."""
    wf = _fitted(["a", "b"] >> ops.Categorify(**kwargs))
    for col, (nb, ft, ms) in expected.items():
        props = wf.output_schema[col].properties
        assert (props["num_buckets"], props["freq_threshold"], props["max_size"]) == (nb, ft, ms), col


def test_categorify_options_in_combo_and_saved(tmp_path):
    wf = _fitted([["b", "c"]] >> ops.Categorify(encode_type="combo", freq_threshold={"b_c": 1}))
    props = wf.output_schema["b_c"].properties
    assert (props["num_buckets"], props["freq_threshold"], props["max_size"]) == (None, 1, 0)
    wf.save(str(tmp_path / "wf"))
    back = tp.Workflow.load(str(tmp_path / "wf")).output_schema["b_c"].properties
    assert (back["num_buckets"], back["freq_threshold"], back["max_size"]) == (None, 1, 0)


def test_bucketize_embedding_sizes_agree_with_get_embedding_sizes():
    """Bucketize's output is categorical (NVTabular's output_tags); NVTabular writes no table
    size, so its get_embedding_sizes raises KeyError on it. tabprep's gives one (boundaries + 1
    buckets) and the property says the same."""
    wf = _fitted(["a"] >> ops.Bucketize([1.5, 2.5, 3.5]))
    assert tp.get_embedding_sizes(wf) == {"a": (4, 16)}
    assert wf.output_schema["a"].properties["embedding_sizes"] == {"cardinality": 4, "dimension": 16}
    _agrees(wf)


def test_list_slice_output_is_tagged_list():
    """ListSlice.output_tags is [Tags.LIST]; a Categorify'd list keeps ``categorical``."""
    wf = _fitted(["l"] >> ops.ListSlice(0, 2))
    assert tp.Tags.LIST in wf.output_schema["l"].tags
    wf = _fitted(["l"] >> ops.Categorify() >> ops.ListSlice(0, 2))
    assert set(wf.output_schema["l"].tags) >= {tp.Tags.LIST, tp.Tags.CATEGORICAL}
    assert wf.output_schema["l"].properties["value_count"] == {"min": 0, "max": 2}


def test_list_of_unknown_lengths_has_merlins_open_value_count(tmp_path):
    """merlin-core gives a ragged list column of unknown lengths
    ``properties["value_count"] = {"min": 0, "max": None}`` (NVTabular's Categorify and Groupby
    list outputs); known lengths are kept."""
    wf = _fitted(["l"] >> ops.Categorify())
    assert wf.output_schema["l"].properties["value_count"] == {"min": 0, "max": None}
    assert wf.output_schema["l"].value_count is None   # the field: unknown
    wf.save(str(tmp_path / "wf"))
    assert tp.Workflow.load(str(tmp_path / "wf")).output_schema["l"].properties["value_count"] == {"min": 0, "max": None}
    assert "value_count" not in wf.output_schema["l"].with_(is_list=False).properties
    known = tp.ColumnSchema("k", dtype="int64", is_list=True, value_count={"min": 1, "max": 3})
    assert known.properties["value_count"] == {"min": 1, "max": 3}


def test_fill_missing_indicator_takes_the_source_tags():
    """FillMissing / FillMedian(add_binary_cols=True): ``x_filled`` (bool) carries ``x``'s tags,
    as merlin-core gives a column mapped from one input (NVTabular: continuous after Normalize),
    and no ``binary`` tag (merlin's compound BINARY_CLASSIFICATION target tag includes it)."""
    for make in (lambda: ops.FillMissing(add_binary_cols=True), lambda: ops.FillMedian(add_binary_cols=True)):
        wf = _fitted(["c"] >> ops.AddTags(["custom"]) >> make(), _df().assign(c=[1.0, None] * 4))
        col = wf.output_schema["c_filled"]
        assert col.dtype == "bool" and col.tags == ("custom",)
        wf = _fitted(["c"] >> ops.Normalize() >> make(), _df().assign(c=[1.0, None, 2.0, 3.0] * 2))
        assert wf.output_schema["c_filled"].tags == (tp.Tags.CONTINUOUS,)


def test_hash_bucket_of_a_categorify_output_has_only_its_own_table_size():
    """HashBucket after Categorify: the column is HashBucket's (num_buckets rows); the
    vocabulary's properties (its name, OOV count, embedding_dim) do not carry over, so
    get_embedding_sizes, the property and DropLowCardinality see num_buckets."""
    wf = _fitted(["b"] >> ops.Categorify(embedding_dim=8) >> ops.HashBucket(5))
    props = wf.output_schema["b"].properties
    assert props["embedding_sizes"] == {"cardinality": 5, "dimension": 16}
    assert props["domain"] == {"min": 0, "max": 5}   # NVTabular's HashBucket domain, no vocabulary name
    assert "vocabulary" not in props and "num_oov_buckets" not in props
    assert tp.get_embedding_sizes(wf) == {"b": (5, 16)}
    _agrees(wf)
    # five buckets are five values for DropLowCardinality (not 5 - 3 as a vocabulary)
    kept = _fitted(["b"] >> ops.Categorify() >> ops.HashBucket(5) >> ops.DropLowCardinality(4))
    assert kept.output_schema.column_names == ["b"]


def test_fill_missing_indicator_takes_the_source_properties_but_no_table_size():
    """merlin-core copies the source column's properties onto ``x_filled`` (NVTabular 23.08:
    ``{"p": 1}`` after AddProperties); a vocabulary's table size is not the indicator's."""
    wf = _fitted(["c"] >> ops.AddMetadata(tags=["custom"], properties={"p": 1}) >> ops.FillMissing(add_binary_cols=True),
                 _df().assign(c=[1.0, None] * 4))
    assert wf.output_schema["c_filled"].properties == {"p": 1}
    wf = _fitted(["b"] >> ops.Categorify() >> ops.FillMissing(add_binary_cols=True))
    filled = wf.output_schema["b_filled"]
    assert "embedding_sizes" not in filled.properties and "cardinality" not in filled.properties
    assert "b_filled" not in tp.get_embedding_sizes(wf)


def test_add_properties_keeps_the_pair_in_step():
    """NVTabular's get_embedding_sizes reads properties["embedding_sizes"], so a user's
    ``AddProperties({"embedding_sizes": ...})`` sets the sizes; tabprep's ``embedding_dim``
    property does too. Either way the property and get_embedding_sizes agree."""
    wf = _fitted(["b"] >> ops.Categorify() >> ops.AddProperties({"embedding_dim": 12}))
    assert _sizes(wf, "b") == {"cardinality": 7, "dimension": 12}
    assert _agrees(wf) == {"b": (7, 12)}
    wf = _fitted(["b"] >> ops.Categorify() >> ops.AddProperties({"embedding_sizes": {"cardinality": 100,
                                                                                    "dimension": 32}}))
    assert _agrees(wf) == {"b": (100, 32)}


def test_hashed_cross_of_categorify_outputs_warns_where_nvtabular_sizes_it_by_the_first_column():
    """NVTabular 23.08's HashedCross copies its first crossed column's tags and properties: over
    Categorify outputs, ``b_X_c`` (20 ids) gets b's ``domain`` and ``embedding_sizes`` (7, 16),
    which its get_embedding_sizes returns (checked on nvtabular 23.08). tabprep sizes the cross by
    its own num_buckets and says so, naming the column and both sizes."""
    with pytest.warns(tp.NVTabularDifferenceWarning, match=r"b_X_c.*\(20, 16\).*'b'.*\(7, 16\)"):
        wf = _fitted(["b", "c"] >> ops.Categorify() >> ops.HashedCross(20))
    assert tp.get_embedding_sizes(wf) == {"b_X_c": (20, 16)}
    assert "domain" not in wf.output_schema["b_X_c"].properties
    _agrees(wf)
    with warnings.catch_warnings():   # raw inputs: NVTabular leaves the cross unsized, nothing differs
        warnings.simplefilter("error", tp.NVTabularDifferenceWarning)
        _fitted([["a", "b"]] >> ops.HashedCross(10))
