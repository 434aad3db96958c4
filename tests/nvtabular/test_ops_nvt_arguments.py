"""NVTabular 23.08's reduction and storage arguments of Categorify, TargetEncoding and JoinGroupby
(nvtabular/ops/categorify.py, target_encoding.py, join_groupby.py ``__init__``), as a migrating
pipeline passes them: ``Categorify(freq_threshold=..., out_path=..., cat_cache="host",
split_out=..., ...)``. Performance knobs are accepted and change no number; ``TargetEncoding``'s
``target_mean`` and ``out_col`` are honoured; what tabprep does not do is loud."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep import ops

KNOBS = dict(cat_cache="host", on_host=True, split_out=2, split_every=4, tree_width=None)


def _df(n=240):
    rng = np.random.default_rng(5)
    c = pd.array(rng.integers(0, 6, n), dtype="Int64")
    c[rng.random(n) < 0.1] = pd.NA
    return pd.DataFrame({"c": c, "s": rng.choice(["x", "y", "z"], n), "t": rng.integers(0, 2, n).astype("float64"),
                         "v": rng.normal(size=n)})


def _out(node, df=None, **kw):
    df = _df() if df is None else df
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tp.NVTabularDifferenceWarning)
        wf = tp.Workflow(node)
        wf.fit(tp.Dataset(df))
    return wf, wf.transform(df, **kw)


def test_categorify_performance_arguments_change_no_id(tmp_path):
    plain = _out(["c", "s"] >> ops.Categorify())[1]
    op = ops.Categorify(**KNOBS, cardinality_memory_limit="1GB", search_sorted=True)
    wf, got = _out(["c", "s"] >> op)
    pd.testing.assert_frame_equal(got, plain)
    wf.save(str(tmp_path / "wf"))
    loaded = tp.Workflow.load(str(tmp_path / "wf"))
    (node,) = [n for n in loaded.stat_nodes]
    assert node.op.split_out == 2 and node.op.cat_cache == "host" and node.op.search_sorted is True
    pd.testing.assert_frame_equal(loaded.transform(_df()), plain)


def test_categorify_search_sorted_with_freq_threshold_is_refused_as_in_nvtabular():
    with pytest.raises(ValueError, match="search_sorted"):
        ops.Categorify(search_sorted=True, freq_threshold=2)


@pytest.mark.parametrize("make", [lambda **kw: ops.Categorify(**kw), lambda **kw: ops.TargetEncoding("t", **kw),
                                  lambda **kw: ops.JoinGroupby(cont_cols=["v"], **kw)],
                         ids=["Categorify", "TargetEncoding", "JoinGroupby"])
def test_out_path_warns_that_nothing_is_written_there(tmp_path, make):
    with pytest.warns(tp.NVTabularDifferenceWarning, match="out_path"):
        make(out_path=str(tmp_path / "stats"))
    assert not (tmp_path / "stats").exists()


@pytest.mark.parametrize("make", [lambda **kw: ops.Categorify(**kw), lambda **kw: ops.TargetEncoding("t", **kw),
                                  lambda **kw: ops.JoinGroupby(cont_cols=["v"], **kw)],
                         ids=["Categorify", "TargetEncoding", "JoinGroupby"])
def test_another_name_sep_is_an_error_naming_it(make):
    with pytest.raises(ValueError, match="name_sep"):
        make(name_sep="-")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tp.NVTabularDifferenceWarning)
        make(name_sep="_")  # NVTabular's default: accepted


def test_join_groupby_performance_arguments_change_no_value():
    plain = _out(["c"] >> ops.JoinGroupby(cont_cols=["v"]))[1]
    got = _out(["c"] >> ops.JoinGroupby(cont_cols=["v"], **KNOBS))[1]
    pd.testing.assert_frame_equal(got, plain)


def _te_reference(df: pd.DataFrame, data: pd.DataFrame, p: float, mean: float) -> np.ndarray:
    """(sum + p * mean) / (count + p) per category of the non-null targets; null/unseen -> mean."""
    ok = df["t"].notna() & df["c"].notna()
    g = df[ok].groupby(df.loc[ok, "c"].astype("int64"))["t"].agg(["sum", "count"])
    out = np.full(len(data), mean)
    for i, c in enumerate(data["c"]):
        if not pd.isna(c) and int(c) in g.index:
            s, n = g.loc[int(c), "sum"], g.loc[int(c), "count"]
            out[i] = (s + p * mean) / (n + p)
    return out


def test_target_encoding_target_mean_is_the_prior():
    """NVTabular: ``target_mean`` is the global mean used for smoothing and for null/unseen
    categories (``y_mean = self.target_mean or self.means``), not computed from the data."""
    df = _df()
    new = pd.DataFrame({"c": pd.array([0, 3, None, 99], dtype="Int64"), "s": ["x"] * 4, "t": [0.0] * 4, "v": [0.0] * 4})
    wf, _ = _out(["c"] >> ops.TargetEncoding("t", target_mean=0.9, out_dtype="float64", **KNOBS))
    got = wf.transform(new)["TE_c_t"].to_numpy()
    np.testing.assert_allclose(got, _te_reference(df, new, 20.0, 0.9), rtol=1e-12)
    assert got[2] == 0.9 and got[3] == 0.9  # null and unseen: the given mean
    computed = df["t"].mean()
    wf2, _ = _out(["c"] >> ops.TargetEncoding("t", out_dtype="float64"))
    np.testing.assert_allclose(wf2.transform(new)["TE_c_t"].to_numpy(), _te_reference(df, new, 20.0, computed),
                               rtol=1e-12)


def test_target_encoding_out_col_names_the_outputs(tmp_path):
    wf, got = _out((["c", "s"] >> ops.TargetEncoding("t", out_col=["te_c", "te_s"])) + ["t"])
    _, plain = _out((["c", "s"] >> ops.TargetEncoding("t")) + ["t"])
    assert list(got.columns) == ["te_c", "te_s", "t"]
    np.testing.assert_array_equal(got["te_c"].to_numpy(), plain["TE_c_t"].to_numpy())
    np.testing.assert_array_equal(got["te_s"].to_numpy(), plain["TE_s_t"].to_numpy())
    assert [c.name for c in wf.output_schema] == ["te_c", "te_s", "t"]
    wf.save(str(tmp_path / "wf"))
    np.testing.assert_array_equal(tp.Workflow.load(str(tmp_path / "wf")).transform(_df())["te_s"].to_numpy(),
                                  plain["TE_s_t"].to_numpy())
    # a str is one name; as many names as column groups (NVTabular's "out_col and cat_groups are different sizes")
    _, one = _out(["c"] >> ops.TargetEncoding("t", out_col="te"))
    assert list(one.columns) == ["te"]
    with pytest.raises(ValueError, match="out_col"):
        _out(["c", "s"] >> ops.TargetEncoding("t", out_col=["only_one"]))


def test_target_encoding_drop_folds_false_is_refused():
    with pytest.raises(ValueError, match="drop_folds"):
        ops.TargetEncoding("t", drop_folds=False)


def test_join_groupby_defaults_are_nvtabulars_count_only():
    """NVTabular 23.08: ``JoinGroupby(cont_cols=None, stats=("count",))``: with no arguments, or
    with only ``cont_cols``, the output is ``<cat>_count`` alone."""
    df = _df()
    _, got = _out(["c"] >> ops.JoinGroupby(cont_cols=["v"]), df)
    assert list(got.columns) == ["c_count"]
    _, bare = _out(["s"] >> ops.JoinGroupby(), df)
    assert list(bare.columns) == ["s_count"]
    want = df["s"].map(df["s"].value_counts()).to_numpy()
    np.testing.assert_array_equal(bare["s_count"].to_numpy(), want)


def test_reduce_dtype_size_float_dtype_as_nvtabular():
    """NVTabular 23.08: ``ReduceDtypeSize(float_dtype=np.float32)``, every float column cast to
    ``float_dtype`` (a TypeError in tabprep before). Ints are reduced as before."""
    df = pd.DataFrame({"f32": np.array([0.5, -1.25, np.nan], dtype="float32"), "f64": [1.0, 2.5, 1e30],
                       "i": [1, 2, 300]})
    _, wide = _out(["f32", "f64", "i"] >> ops.ReduceDtypeSize(float_dtype=np.float64), df)
    assert [str(wide[c].dtype) for c in ("f32", "f64")] == ["float64", "float64"]
    np.testing.assert_array_equal(wide["f32"].to_numpy(), df["f32"].to_numpy().astype("float64"))
    _, narrow = _out(["f32", "f64", "i"] >> ops.ReduceDtypeSize(float_dtype="float32"), df)
    assert [str(narrow[c].dtype) for c in ("f32", "f64", "i")] == ["float32", "float32", "int16"]
    np.testing.assert_array_equal(narrow["f64"].to_numpy(), df["f64"].to_numpy().astype("float32"))
    with pytest.raises(ValueError, match="float_dtype"):
        ops.ReduceDtypeSize(float_dtype="float32", float_dtypes=["float32", "float64"])


def test_reduce_dtype_size_float_dtype_too_narrow_warns_where_nvtabular_overflows():
    """NVTabular 23.08 casts every float column to ``float_dtype``, so 1e300 becomes inf in
    float32; tabprep keeps such a column's dtype and says so at fit, naming the column."""
    import warnings

    df = pd.DataFrame({"ok": [0.5, 1.5, 2.0], "big": [1.0, 1e300, -2.0], "i": [1, 2, 3]})
    def fit(node):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            wf = tp.Workflow(node)
            wf.fit(tp.Dataset(df))
        return wf.transform(df), rec

    out, rec = fit(["ok", "big", "i"] >> ops.ReduceDtypeSize(float_dtype=np.float32))
    notes = [str(w.message) for w in rec if issubclass(w.category, tp.NVTabularDifferenceWarning)
             and "ReduceDtypeSize" in str(w.message)]
    assert len(notes) == 1 and "['big']" in notes[0] and "+-inf" in notes[0], notes
    assert str(out["ok"].dtype) == "float32" and str(out["big"].dtype) == "float64"
    assert out["big"].tolist() == df["big"].tolist()           # not inf, as NVTabular's cast gives
    with np.errstate(over="ignore"):
        assert np.isinf(df["big"].to_numpy().astype("float32")[1])   # what the cast gives (the reference)
    _, rec = fit(["ok"] >> ops.ReduceDtypeSize(float_dtype="float32"))   # everything fits: no note
    assert not [w for w in rec if "ReduceDtypeSize" in str(w.message)]


def test_reduce_dtype_size_saves_a_numpy_float_dtype(tmp_path):
    df = pd.DataFrame({"f": np.array([0.5, 1.5], dtype="float32")})
    wf, _ = _out(["f"] >> ops.ReduceDtypeSize(float_dtype=np.float64), df)  # NVTabular's spelling: a numpy type
    wf.save(str(tmp_path / "wf"))
    assert str(tp.Workflow.load(str(tmp_path / "wf")).transform(df)["f"].dtype) == "float64"


# -- JoinExternal(on_ext=, drop_duplicates_ext=, kind_ext=, cache=) ----------------------------------
def _rows():
    return pd.DataFrame({"item_id": [3, 1, 2, 9, 1], "x": [0.5, 1.5, 2.5, 3.5, 4.5]})


def test_join_external_on_ext_joins_on_the_side_tables_own_key_name(tmp_path):
    side = pd.DataFrame({"item": [1, 2, 3], "price": [10.0, 20.0, 30.0]})
    with pytest.warns(tp.NVTabularDifferenceWarning, match="on_ext"):
        node = ["item_id", "x"] >> ops.JoinExternal(side, on="item_id", on_ext="item", kind_ext="pandas", cache="host")
    wf, got = _out(node, _rows())
    want = _rows().merge(side, left_on="item_id", right_on="item", how="left")["price"].to_numpy()
    np.testing.assert_array_equal(got["price"].to_numpy(dtype="float64", na_value=np.nan), want)
    assert list(got.columns) == ["item_id", "x", "price"]
    wf.save(str(tmp_path / "wf"))
    again = tp.Workflow.load(str(tmp_path / "wf")).transform(_rows())
    np.testing.assert_array_equal(again["price"].to_numpy(dtype="float64", na_value=np.nan), want)


def test_join_external_drop_duplicates_ext_drops_repeated_rows_only():
    # rows equal on the joined columns (key + columns_ext), as NVTabular compares them; "note" is not joined
    side = pd.DataFrame({"item_id": [1, 1, 2, 3], "price": [10.0, 10.0, 20.0, 30.0], "note": ["a", "b", "c", "d"]})
    with pytest.raises(ValueError, match="duplicate keys"):
        _out(["item_id"] >> ops.JoinExternal(side, on="item_id", columns_ext=["item_id", "price"]), _rows())
    _, got = _out(["item_id"] >> ops.JoinExternal(side, on="item_id", columns_ext=["item_id", "price"],
                                                  drop_duplicates_ext=True), _rows())
    np.testing.assert_array_equal(got["price"].to_numpy(dtype="float64", na_value=np.nan),
                                  [30.0, 10.0, 20.0, np.nan, 10.0])
    clash = pd.DataFrame({"item_id": [1, 1], "price": [10.0, 11.0]})  # the same key, other values: still refused
    with pytest.raises(ValueError, match="duplicate keys"):
        _out(["item_id"] >> ops.JoinExternal(clash, on="item_id", drop_duplicates_ext=True), _rows())


def test_target_encoding_out_dtype_none_is_float32():
    """NVTabular 23.08: ``output_dtype = self.out_dtype or np.float32`` (numpy's dtype(None) is float64)."""
    _, got = _out(["c"] >> ops.TargetEncoding("t", out_dtype=None))
    assert str(got["TE_c_t"].dtype) == "float32"
