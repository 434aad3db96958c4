"""Fused element-wise chains and the Arrow-native transform give what the ops' own transforms give.

``Operator.column_kernel`` promises the same dtype and bits as ``transform``. The reference here
is each op's pandas ``transform`` run op by op (fusion switched off by making
``backend.host_columns_supported`` answer False, as for frames the kernels do not take), on columns of
every numeric dtype with nulls, NaN, +-inf, negatives and values past the LogOp table, for random
chains and parameters. Then the Arrow path (``fusion.transform_table``) against the pandas path
on the same partitions, and the planner's chain rules.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tabprep as tp
from tabprep import backend, ops
from tabprep.backend.columns import host_column_from_arrow
from tabprep.io.dataset import nullable_frame
from tabprep.workflow import fusion
from tabprep.workflow.tasks import _fit_partition

HYP = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                      HealthCheck.function_scoped_fixture])

DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint32", "uint64", "float32", "float64", "bool",
          "Int64", "Int32", "UInt16", "boolean"]


def column(dtype: str, n: int, seed: int) -> pd.Series:
    r = np.random.default_rng(seed)
    if dtype in ("bool", "boolean"):
        s = pd.Series(r.random(n) < 0.4, dtype=dtype)
    elif dtype.startswith(("float", "Float")):
        s = pd.Series(r.choice([0.0, -0.0, 1e-5, -1e-5, -0.99, -1.5, 2.5, 1e6, np.inf, -np.inf, np.nan, 3.0], n)
                      * r.choice([1, 1, 2], n), dtype=dtype)
    else:
        info = np.iinfo(np.dtype(dtype.lower()))
        pool = np.array([0, 1, 2, 7, 100, 65535, 65536, info.max, info.min, info.min + 1, -1, -3], dtype=object)
        vals = [int(v) for v in r.choice(pool, n) if info.min <= int(v) <= info.max]
        vals = (vals * (n // max(len(vals), 1) + 1))[:n]
        s = pd.Series(vals, dtype=dtype)
    if dtype in ("Int64", "Int32", "UInt16", "boolean"):
        s[r.random(n) < 0.2] = pd.NA
    return s.rename("x")


def chain_ops(choice: list, params: dict) -> list:
    made = {"fill": lambda: ops.FillMissing(fill_val=params["fill"]),
            "clip": lambda: ops.Clip(min_value=params["lo"], max_value=params["hi"]),
            "log": ops.LogOp, "norm": ops.Normalize,
            "cat": lambda: ops.Categorify(num_oov_buckets=params["oov"], dtype=params["id_dtype"])}
    return [made[k]() for k in choice]


def run(train: pd.DataFrame, test: pd.DataFrame, choice: list, params: dict, fused: bool, monkeypatch) -> tuple:
    node = ["x"]
    for op in chain_ops(choice, params):
        node = node >> op
    wf = tp.Workflow(node)
    with monkeypatch.context() as m:
        if not fused:
            m.setattr(backend, "host_columns_supported", lambda frame: False)
        try:
            wf.fit(train)
            return "ok", wf.transform(test), wf
        except Exception as exc:  # noqa: BLE001 - compared between the two runs
            return "error", type(exc), None


def assert_same_series(a: pd.Series, b: pd.Series, what: str) -> None:
    assert str(a.dtype) == str(b.dtype), (what, a.dtype, b.dtype)
    na_a, na_b = a.isna().to_numpy(), b.isna().to_numpy()
    assert (na_a == na_b).all(), (what, "nulls differ")
    va, vb = a[~na_a].to_numpy(), b[~na_b].to_numpy()
    if va.dtype.kind == "f":
        va, vb = va.view(f"u{va.itemsize}"), vb.view(f"u{vb.itemsize}")
    assert np.array_equal(va, vb), (what, va[:10], vb[:10])


CHAINS = [["fill"], ["clip"], ["log"], ["norm"], ["fill", "clip", "log", "norm"], ["clip", "log"],
          ["fill", "log", "norm"], ["log", "norm"], ["clip", "norm"], ["cat"], ["cat", "clip"], ["fill", "cat"]]


@HYP
@given(dtype=st.sampled_from(DTYPES), chain=st.sampled_from(CHAINS), seed=st.integers(0, 1000),
       fill=st.sampled_from([0, 1, -1, 0.5, 2 ** 40]), lo=st.sampled_from([None, 0, -1, 0.5]),
       hi=st.sampled_from([None, 100, 2.5]), oov=st.sampled_from([1, 3]), id_dtype=st.sampled_from(["int64", "int32"]),
       empty=st.booleans())
def test_fused_chain_equals_the_ops_transforms(monkeypatch, dtype, chain, seed, fill, lo, hi, oov, id_dtype, empty):
    """Also on an empty frame (dask's meta, empty partitions): the same dtypes."""
    if lo is None and hi is None:
        hi = 100
    params = {"fill": fill, "lo": lo, "hi": hi, "oov": oov, "id_dtype": id_dtype}
    train = pd.DataFrame({"x": column(dtype, 60, seed)})
    test = pd.DataFrame({"x": column(dtype, 50, seed + 1)})  # unseen values for Categorify
    if empty:
        test = test.iloc[:0]
    ref = run(train, test, chain, params, fused=False, monkeypatch=monkeypatch)
    got = run(train, test, chain, params, fused=True, monkeypatch=monkeypatch)
    assert got[0] == ref[0] and (got[0] == "ok" or got[1] is ref[1]), (got[:2], ref[:2])
    if ref[0] == "ok":
        assert_same_series(got[1]["x"], ref[1]["x"], f"{dtype} {chain} {params}")
        assert [n.op.stats_ for n in got[2].stat_nodes if "Normalize" in n.op.label] == \
               [n.op.stats_ for n in ref[2].stat_nodes if "Normalize" in n.op.label]


def test_kernels_write_only_what_they_own():
    """The input frame of a transform is never written, even where the chain works in place."""
    df = pd.DataFrame({"a": pd.array([1, None, -3, 70000], dtype="Int64"), "b": [np.nan, -1.0, 2.0, np.inf]})
    before = df.copy()
    wf = tp.Workflow(["a", "b"] >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize())
    wf.fit(df)
    wf.transform(df)
    pd.testing.assert_frame_equal(df, before)


def test_a_branch_reusing_a_chain_output_sees_it_unchanged():
    """A chain's output read by two later chains: the first must not write into what the second reads."""
    base = ["a"] >> ops.FillMissing() >> ops.Clip(min_value=0)
    wf = tp.Workflow((base >> ops.LogOp()) + (base >> ops.Rename(postfix="_raw")))
    df = pd.DataFrame({"a": pd.array([3, None, -2, 10], dtype="Int64")})
    out = wf.fit(df).transform(df)
    assert out["a_raw"].tolist() == [3, 0, 0, 10]
    assert out["a"].to_numpy().tolist() == np.log1p(np.array([3, 0, 0, 10.0])).astype("float32").tolist()


def test_plan_stops_at_wanted_and_shared_nodes():
    fill = ["a", "b"] >> ops.FillMissing()
    logs = fill >> ops.Clip(min_value=0) >> ops.LogOp()
    wf = tp.Workflow((logs >> ops.Normalize()) + (fill >> ops.Rename(postfix="_f")))
    by_op = {n.op.label: n for n in wf.nodes if n.kind == "op"}
    ids = {id(n) for n in wf.nodes}
    chains = fusion.plan_chains(wf.nodes, ids, {id(wf.output_node)})
    labels = sorted([[m.op.label for m in c] for c in chains.values()])
    # FillMissing feeds two nodes: it ends its chain; Rename has no kernels
    assert labels == [["Clip", "LogOp", "Normalize"], ["FillMissing"]]
    # the fit wants LogOp's output (Normalize's input): the chain ends there
    chains = fusion.plan_chains(wf.nodes, ids, {id(by_op["LogOp"])})
    assert ["Clip", "LogOp"] in [[m.op.label for m in c] for c in chains.values()]


def test_subclass_overriding_transform_gets_no_stale_kernel():
    class Twice(ops.LogOp, register=False):
        def transform(self, columns, df):
            return df[columns] * 2

    wf = tp.Workflow(["a"] >> Twice())
    out = wf.transform(pd.DataFrame({"a": [1, 2]}))
    assert out["a"].tolist() == [2, 4]
    assert not fusion.fusable(wf.output_node)
    # FillMedian overrides FillMissing's transform (medians rounded for ints): no FillMissing kernel
    assert not fusion.fusable(tp.Workflow(["a"] >> ops.FillMedian()).output_node)


# -- the Arrow path ---------------------------------------------------------------------------------
ARROW_TYPES = [pa.int8(), pa.int32(), pa.int64(), pa.uint16(), pa.float32(), pa.float64(), pa.bool_()]


def random_table(types: list, seed: int, nulls: bool, n: int) -> pa.Table:
    """Columns c0, c1, ... of ``types``: bools, floats with -0.0, tiny values, NaN and +-inf, ints
    with negatives (unsigned: not); 15% nulls when ``nulls``."""
    r = np.random.default_rng(seed)
    cols = {}
    for i, typ in enumerate(types):
        if pa.types.is_boolean(typ):
            v = r.random(n) < 0.5
        elif pa.types.is_floating(typ):
            v = r.choice([0.0, -0.0, 1e-5, -2.0, 3.5, np.inf, -np.inf, np.nan, 1e5], n)
        else:
            v = r.integers(0, 120, n) - (0 if pa.types.is_unsigned_integer(typ) else 20)
        cols[f"c{i}"] = pa.array(v, type=typ, mask=(r.random(n) < 0.15) if nulls else None)
    return pa.table(cols)


def nullable_dtypes(table: pa.Table) -> dict:
    """The nullable pandas dtypes ``Dataset.to_ddf`` gives the int columns of ``table`` that hold nulls."""
    return {c: str(table[c].type).replace("uint", "UInt").replace("int", "Int")
            for c in table.column_names if pa.types.is_integer(table[c].type) and table[c].null_count}


@HYP
@given(types=st.lists(st.sampled_from(ARROW_TYPES), min_size=2, max_size=5), seed=st.integers(0, 1000),
       nulls=st.booleans())
def test_table_path_equals_pandas_path(types, seed, nulls):
    """Even and bool columns >> Categorify, the others >> FillMissing >> Clip(0) >> LogOp >> Normalize."""
    table = random_table(types, seed, nulls, n=80)
    cols = dict(zip(table.column_names, table.columns))
    cats = [c for i, (c, t) in enumerate(zip(cols, types)) if i % 2 == 0 or pa.types.is_boolean(t)]
    conts = [c for c in cols if c not in cats]
    node = cats >> ops.Categorify()
    if conts:
        node = node + (conts >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize())
    wf = tp.Workflow(node)
    # the pandas partition Dataset.to_ddf makes of it: ints with nulls as nullable ints
    frame = nullable_frame(table, nullable_dtypes(table))
    wf.fit(frame)
    ref = backend.frame_to_arrow(wf.transform_frame(frame)).replace_schema_metadata(None)
    got = fusion.transform_table(wf, table)
    assert got is not None and got.equals(ref), (got, ref)


def test_table_path_float_chain_and_passthrough_nan_become_null():
    table = pa.table({"f": pa.array([1.0, np.nan, None, -2.0, np.inf]), "i": pa.array([1, None, 3, 4, 5]),
                      "g": pa.array([0.5, np.nan, 1.0, None, 2.0])})
    wf = tp.Workflow((["f", "i"] >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp()) + ["g"])
    frame = nullable_frame(table, {"i": "Int64"})
    wf.fit(frame)
    ref = backend.frame_to_arrow(wf.transform_frame(frame)).replace_schema_metadata(None)
    got = fusion.transform_table(wf, table)
    assert got is not None and got.equals(ref)
    assert got["g"].null_count == 2  # NaN and null alike, as the pandas path writes them


def test_host_column_from_arrow_offsets_and_chunks():
    arr = pa.chunked_array([pa.array([1, None, 3]), pa.array([4, 5, None, 7])])
    col = host_column_from_arrow(arr.slice(1, 5))
    assert col.values[~col.mask].tolist() == [3, 4, 5] and col.mask.tolist() == [True, False, False, False, True]
    col = host_column_from_arrow(pa.array([1.5, None, 2.5]).slice(1))
    assert np.isnan(col.values[0]) and col.values[1] == 2.5 and col.mask is None
    col = host_column_from_arrow(pa.array([True, None, False]))
    assert col.values.dtype == bool and col.mask.tolist() == [False, True, False]
    assert host_column_from_arrow(pa.array(["a"])) is None


# -- the Arrow-native fit ----------------------------------------------------------------------------
def _plain(partial):
    """A partial as plain Python values (Counts: keys, counts, nulls; Moments/MinMax: their fields)."""
    if isinstance(partial, dict):
        return {k: _plain(v) for k, v in partial.items()}
    if isinstance(partial, (tuple, list)):
        return [_plain(v) for v in partial]
    if hasattr(partial, "keys") and hasattr(partial, "nulls"):
        keys = None if partial.keys is None else np.asarray(partial.keys).tolist()
        counts = partial.counts.to_dict() if keys is None else np.asarray(partial.counts).tolist()
        return ("counts", keys, counts, partial.nulls)
    if hasattr(partial, "__dataclass_fields__"):
        return (type(partial).__name__,) + tuple(getattr(partial, f) for f in partial.__dataclass_fields__)
    return partial


@HYP
@given(types=st.lists(st.sampled_from(ARROW_TYPES), min_size=2, max_size=5), seed=st.integers(0, 1000),
       nulls=st.booleans(), joint=st.booleans())
def test_fit_table_partials_equal_pandas_partials(types, seed, nulls, joint):
    """The fit's Arrow path (``fusion.fit_table``) gives the partials the pandas path gives, bit for
    bit: Categorify counts (one vocabulary per column, or a joint one), Normalize moments and extrema
    after FillMissing >> Clip >> LogOp, on every numeric Arrow type with nulls, NaN and +-inf."""
    table = random_table(types, seed, nulls, n=90)
    cols = dict(zip(table.column_names, table.columns))
    ints = [c for c, t in zip(cols, types) if not pa.types.is_floating(t)]
    floats = [c for c in cols if c not in ints]
    node = None
    if ints:
        # joint: one vocabulary shared by every int column (a nested list is a group)
        node = ([ints] if joint and len(ints) > 1 else ints) >> ops.Categorify()
    if floats:
        f = floats >> ops.FillMissing() >> ops.Clip(min_value=0) >> ops.LogOp() >> ops.Normalize()
        node = f if node is None else node + f
    wf = tp.Workflow(node)
    frame = nullable_frame(table, nullable_dtypes(table))
    wf._bind(tp.Dataset(frame).schema, {})
    ids = [wf.node_id(n) for n in wf._stat_levels()[0]]
    ref = _fit_partition(wf, ids, frame)
    got = fusion.fit_table(wf, ids, table)
    assert got is not None
    assert _plain(got) == _plain(ref)


def test_fit_table_second_level_after_a_fitted_op():
    """Normalize of Categorify's ids: the second fit pass runs Categorify's kernel, then the partial."""
    table = pa.table({"a": pa.array([5, 5, None, 7, 9, 5, 7], type=pa.int32()),
                      "b": pa.array([1.5, None, np.inf, 2.0, -1.0, 0.0, 3.0])})
    wf = tp.Workflow((["a"] >> ops.Categorify() >> ops.Normalize()) + (["b"] >> ops.Normalize()))
    frame = nullable_frame(table, {"a": "Int32"})
    wf.fit(frame)  # the pandas path: statistics of both levels
    level2 = wf._stat_levels()[1]
    ids = [wf.node_id(n) for n in level2]
    ref = _fit_partition(wf, ids, frame)
    got = fusion.fit_table(wf, ids, table)
    assert got is not None and _plain(got) == _plain(ref)
    # and against numpy: ids of a are null 1, 5 (3 times) -> 3, 7 -> 4, 9 -> 5
    (moments, minmax, infinite), = [v for k, v in got.items() if k == ids[0]][0].values()
    assert infinite == 0   # ids: no +-inf to leave out (Normalize's partial counts them: fit_notes_)
    ids_a = np.array([3, 3, 1, 4, 5, 3, 4], dtype=np.float64)
    assert moments.count == 7 and moments.mean == pytest.approx(ids_a.mean())
    assert moments.m2 == pytest.approx(((ids_a - ids_a.mean()) ** 2).sum())
    assert (minmax.min, minmax.max) == (1.0, 5.0)


def test_fit_table_declines_what_it_cannot_reproduce():
    table = pa.table({"f": pa.array([1.5, 2.5, None]), "s": pa.array(["x", None, "y"]),
                      "i": pa.array([1, 2, 3])})
    for node in (["f"] >> ops.Categorify(),  # float vocabularies: pandas' value_counts semantics
                 ["s"] >> ops.Categorify(),  # strings
                 ["i"] >> ops.FillMedian()):  # a stat op without a host partial
        wf = tp.Workflow(node)
        wf._bind(tp.Dataset(table.to_pandas()).schema, {})
        ids = [wf.node_id(n) for n in wf._stat_levels()[0]]
        assert fusion.fit_table(wf, ids, table) is None, node
    assert fusion.fit_table(tp.Workflow(["i"] >> ops.Categorify()), [], table.slice(0, 0)) is None


def test_subclass_overriding_fit_partial_gets_no_stale_host_partial():
    class Capped(ops.Normalize):
        def fit_partial(self, columns, df):
            return super().fit_partial(columns, df.clip(upper=1.0))

    table = pa.table({"x": pa.array([0.5, 3.0, 7.0])})
    wf = tp.Workflow(["x"] >> Capped())
    wf._bind(tp.Dataset(table.to_pandas()).schema, {})
    ids = [wf.node_id(n) for n in wf._stat_levels()[0]]
    assert fusion.fit_table(wf, ids, table) is None
    wf.fit(tp.Dataset(table.to_pandas()))
    assert wf.output_node.op.stats_["x"]["mean"] == pytest.approx((0.5 + 1 + 1) / 3)


def test_parquet_fit_runs_on_arrow_and_matches_references(tmp_path, monkeypatch):
    """A parquet Dataset's fit runs on the Arrow tables (fit_table), with nulls, NaN, inf, int32 ids and
    a file without rows, and learns what plain pandas/numpy compute and what the pandas path learns."""
    import pyarrow.parquet as pq

    r = np.random.default_rng(3)
    n = 600
    ids = pa.array(r.integers(0, 40, n).astype("int32"), mask=r.random(n) < 0.1)
    x = r.choice([0.5, 2.0, -3.0, np.nan, np.inf, 10.0], n)
    full = pa.table({"ids": ids, "x": pa.array(x, mask=r.random(n) < 0.05), "label": pa.array(r.integers(0, 2, n))})
    (tmp_path / "data").mkdir()
    for i, (a, b) in enumerate([(0, 250), (250, 250), (250, 600)]):  # the second file has no rows
        pq.write_table(full.slice(a, b - a), tmp_path / "data" / f"part-{i}.parquet", row_group_size=100)
    from tabprep.workflow import tasks

    calls = []
    real = fusion.fit_table
    monkeypatch.setattr(tasks, "fit_table", lambda *a: calls.append((a[2].num_rows, real(*a))) or calls[-1][1])

    def workflow():
        return tp.Workflow((["ids"] >> ops.Categorify())
                           + (["x"] >> ops.FillMissing(fill_val=1.0) >> ops.Clip(min_value=0) >> ops.LogOp()
                              >> ops.Normalize()) + ["label"])

    wf = workflow().fit(tp.Dataset(str(tmp_path / "data"), part_size=100 * 40))
    # every partition with rows was fitted on Arrow (a table without rows goes the pandas way)
    assert sum(rows for rows, _ in calls) == n and all(c is not None for rows, c in calls if rows), calls
    # references: plain pandas / numpy
    ref_ids = full["ids"].to_pandas().dropna().astype("int64").value_counts()
    ref_vocab = sorted(ref_ids.index, key=lambda v: (-ref_ids[v], v))
    cat, norm = [n.op for n in wf.stat_nodes]
    assert list(cat.stats_["ids"]["values"]) == ref_vocab
    assert cat.stats_["ids"]["nulls"] == int(full["ids"].null_count)
    xs = np.log1p(np.clip(np.where(np.isnan(full["x"].to_pandas()), 1.0, full["x"].to_pandas()), 0, None))
    xs = xs.astype(np.float32).astype(np.float64)
    xs = xs[np.isfinite(xs)]
    assert norm.stats_["x"]["mean"] == pytest.approx(xs.mean(), rel=1e-12)
    assert norm.stats_["x"]["std"] == pytest.approx(xs.std(ddof=1), rel=1e-9)
    # the pandas path on the same rows learns the same statistics
    calls.clear()
    ref = workflow().fit(tp.Dataset(full.to_pandas(types_mapper={pa.int32(): pd.Int32Dtype()}.get)))
    assert not calls
    rcat, rnorm = [n.op for n in ref.stat_nodes]
    assert list(rcat.stats_["ids"]["values"]) == list(cat.stats_["ids"]["values"])
    assert list(rcat.stats_["ids"]["freqs"]) == list(cat.stats_["ids"]["freqs"])
    assert rnorm.stats_["x"]["count"] == norm.stats_["x"]["count"] == xs.size
    assert rnorm.stats_["x"]["mean"] == pytest.approx(norm.stats_["x"]["mean"], rel=1e-13)
