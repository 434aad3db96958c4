"""Issue #30, values side: datetimes with NaT, datetime unit drift, object columns, narrow id
dtypes, ReduceDtypeSize on uint64, Clip on list<int64>, Categorify's limits, errors that name
their column.

References are plain pandas / numpy / mmh3 written here; datetimes are read as their int64
count in the column's unit (``pd.Timestamp.value`` is in ns).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tabprep as tp
from tabprep import ops

from conftest import frame_on, make_dataset, mmh3_u32, to_pandas

_STAMPS = ["2024-01-01 00:00:00", "2024-01-01 05:00:00", None, "2024-06-01 00:00:00", "2023-12-31 23:59:59.5",
           None, "2024-01-01 05:00:00", "2024-03-01 12:00:00"]


def _times(unit: str = "us") -> pd.DataFrame:
    t = pd.Series(pd.to_datetime(_STAMPS, format="ISO8601")).astype(f"datetime64[{unit}]")
    d = (t - pd.Timestamp("2023-12-01")).astype(f"timedelta64[{unit}]")
    return pd.DataFrame({"t": t, "d": d, "y": [1, 0, 1, 0, 1, 1, 0, 0]})


def _counts(s: pd.Series, unit: str = "us"):
    """int64 counts of a datetime/timedelta series in ``unit``, None for NaT (the reference)."""
    per = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[unit]
    return [None if pd.isna(v) else (pd.Timestamp(v).value if isinstance(v, pd.Timestamp) else pd.Timedelta(v).value) // per
            for v in s]


def _floats(counts):
    return np.array([np.nan if v is None else float(v) for v in counts])


# -- 1. NaT is null, in every op, for datetimes and timedeltas -------------------------------------------
@pytest.mark.parametrize("col", ["t", "d"])
def test_nat_is_null_in_numeric_ops(backend, col):
    df = _times()
    x = _floats(_counts(df[col]))
    ok = ~np.isnan(x)
    wf = tp.Workflow(([col] >> ops.Normalize())
                     + ([col] >> ops.NormalizeMinMax() >> ops.Rename(postfix="_mm"))
                     + ([col] >> ops.LogOp() >> ops.Rename(postfix="_log"))
                     + ([col] >> ops.HashBucket(10) >> ops.Rename(postfix="_hb"))
                     + ([col] >> ops.Bucketize([float(np.nanmedian(x))]) >> ops.Rename(postfix="_bk")))
    out = to_pandas(wf.fit(frame_on(df, backend)).transform(frame_on(df, backend)))
    mean, std = x[ok].mean(), x[ok].std(ddof=1)
    np.testing.assert_allclose(out[col].to_numpy(dtype="float64", na_value=np.nan),
                               ((x - mean) / std).astype("float32"), rtol=1e-6)
    lo, hi = x[ok].min(), x[ok].max()
    np.testing.assert_allclose(out[f"{col}_mm"].to_numpy(dtype="float64", na_value=np.nan),
                               ((x - lo) / (hi - lo)).astype("float32"), rtol=1e-6)
    with np.errstate(invalid="ignore", divide="ignore"):
        np.testing.assert_allclose(out[f"{col}_log"].to_numpy(dtype="float64", na_value=np.nan),
                                   np.log1p(x).astype("float32"), rtol=1e-6)
    assert out[f"{col}_hb"].tolist() == [0 if v is None else mmh3_u32(v) % 10 for v in _counts(df[col])]
    bk = out[f"{col}_bk"]
    assert bk.isna().tolist() == (~ok).tolist()
    assert bk[ok].tolist() == [int(v > np.nanmedian(x)) or int(v == np.nanmedian(x)) for v in x[ok]]


@pytest.mark.parametrize("col", ["t", "d"])
def test_nat_is_null_in_categorify_fill_and_clip(backend, col):
    df = _times()
    counts = _counts(df[col])
    valid = sorted({v for v in counts if v is not None})
    wf = tp.Workflow(([col] >> ops.Categorify())
                     + ([col] >> ops.FillMissing() >> ops.Rename(postfix="_fill"))
                     + ([col] >> ops.FillMedian() >> ops.Rename(postfix="_med"))
                     + ([col] >> ops.Clip(min_value=valid[1], max_value=valid[-2]) >> ops.Rename(postfix="_clip")))
    out = to_pandas(wf.fit(frame_on(df, backend)).transform(frame_on(df, backend)))
    ids = out[col].tolist()
    # NaT takes the null id (1) like every null; each instant its own id >= 3
    assert [i for i, v in zip(ids, counts) if v is None] == [1, 1]
    by_value = {}
    for i, v in zip(ids, counts):
        if v is not None:
            assert by_value.setdefault(v, i) == i and i >= 3
    assert len(set(by_value.values())) == len(valid)
    # fills and clips keep the datetime/timedelta dtype; a number is a count in the column's unit
    for name in (f"{col}_fill", f"{col}_med", f"{col}_clip"):
        assert str(out[name].dtype) == str(df[col].dtype), name
    assert _counts(out[f"{col}_fill"]) == [0 if v is None else v for v in counts]
    med = float(np.median(np.array([v for v in counts if v is not None], dtype="float64")))
    assert _counts(out[f"{col}_med"]) == [int(round(med)) if v is None else v for v in counts]
    assert _counts(out[f"{col}_clip"]) == [None if v is None else min(max(v, valid[1]), valid[-2]) for v in counts]


def test_nat_is_null_on_a_parquet_dataset(tmp_path):
    df = _times()
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "t.parquet")
    wf = tp.Workflow((["t", "d"] >> ops.Normalize()) + (["t"] >> ops.HashBucket(7) >> ops.Rename(postfix="_hb")))
    ds = tp.Dataset(str(tmp_path / "t.parquet"))
    wf.fit(ds)
    wf.transform(ds).to_parquet(str(tmp_path / "out"))
    out = pd.read_parquet(tmp_path / "out")
    for col in ("t", "d"):
        x = _floats(_counts(df[col]))
        ok = ~np.isnan(x)
        np.testing.assert_allclose(out[col].to_numpy(dtype="float64"),
                                   ((x - x[ok].mean()) / x[ok].std(ddof=1)).astype("float32"), rtol=1e-6)
    assert out["t_hb"].tolist() == [0 if v is None else mmh3_u32(v) % 7 for v in _counts(df["t"])]


def test_difference_lag_of_timestamps_treats_nat_as_null():
    df = _times().assign(g=1)
    out = tp.Workflow(["t"] >> ops.DifferenceLag("g")).fit(df).transform(df)
    x = _floats(_counts(df["t"]))
    ref = np.concatenate([[np.nan], x[1:] - x[:-1]]).astype("float32")  # NVTabular's output_dtype
    np.testing.assert_array_equal(out["t_difference_lag_1"].to_numpy(), ref)


# -- 2. datetime unit drift: the same instants in another unit give the same output, or are refused -------
def _unit_wf() -> tp.Workflow:
    return tp.Workflow((["t", "d"] >> ops.Normalize())
                       + (["t", "d"] >> ops.HashBucket(1000) >> ops.Rename(postfix="_hb"))
                       + (["t", "d"] >> ops.Categorify() >> ops.Rename(postfix="_cat"))
                       + (["t"] >> ops.FillMissing() >> ops.Rename(postfix="_fill")) + ["y"])


@pytest.mark.parametrize("fit_unit,given_unit", [("us", "ms"), ("us", "ns"), ("ms", "s"), ("ns", "us")])
def test_same_instants_in_another_unit_give_the_same_output(backend, fit_unit, given_unit):
    fitted, given = _times(fit_unit), _times(given_unit)
    if given_unit == "s":  # whole seconds only: the half second is not a count of seconds
        fitted = fitted.assign(t=fitted["t"].dt.floor("s"), d=fitted["d"].dt.floor("s"))
        given = fitted.astype({"t": "datetime64[s]", "d": "timedelta64[s]"})
    wf = _unit_wf().fit(frame_on(fitted, backend))
    ref = to_pandas(wf.transform(frame_on(fitted, backend)))
    got = to_pandas(wf.transform(frame_on(given, backend)))
    pd.testing.assert_frame_equal(got, ref)
    # the ids are those of the instants (a reference independent of tabprep)
    assert ref["t_hb"].tolist() == [0 if v is None else mmh3_u32(v) % 1000 for v in _counts(fitted["t"], fit_unit)]
    assert str(ref["t_fill"].dtype) == f"datetime64[{fit_unit}]"


def test_unit_drift_through_parquet_files(tmp_path):
    fitted = _times("us")
    pq.write_table(pa.Table.from_pandas(fitted, preserve_index=False), tmp_path / "fit.parquet")
    given = pa.Table.from_pandas(fitted, preserve_index=False).cast(
        pa.schema([("t", pa.timestamp("ms")), ("d", pa.duration("ms")), ("y", pa.int64())]))
    pq.write_table(given, tmp_path / "ms.parquet")
    wf = _unit_wf().fit(tp.Dataset(str(tmp_path / "fit.parquet")))
    wf.transform(tp.Dataset(str(tmp_path / "fit.parquet"))).to_parquet(str(tmp_path / "a"))
    wf.transform(tp.Dataset(str(tmp_path / "ms.parquet"))).to_parquet(str(tmp_path / "b"))
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "b"), pd.read_parquet(tmp_path / "a"))


def test_a_unit_that_cannot_hold_the_instants_is_refused_naming_the_column():
    wf = _unit_wf().fit(_times("ms"))
    finer = _times("us")
    finer.loc[0, "t"] = finer.loc[0, "t"] + pd.Timedelta(microseconds=3)
    with pytest.raises(ValueError, match=r"(?s)'t'.*datetime64\[ms\].*datetime64\[us\]"):
        wf.transform(finer)


def test_time_zone_drift_is_refused_or_converted_exactly():
    fitted = _times("us").assign(t=lambda f: f["t"].dt.tz_localize("UTC"))
    wf = _unit_wf().fit(fitted)
    ref = wf.transform(fitted)
    # the same instants in another zone and unit: the same output
    paris = fitted.assign(t=fitted["t"].dt.tz_convert("Europe/Paris").astype("datetime64[ms, Europe/Paris]"))
    got = wf.transform(paris, cast=True)
    pd.testing.assert_frame_equal(got, ref)
    # naive wall-clock times are not instants: refused, naming the column and both types
    with pytest.raises(TypeError, match=r"(?s)\bt \(datetime64\[us, UTC\] -> datetime64\[us\]\)"):
        wf.transform(fitted.assign(t=fitted["t"].dt.tz_localize(None)))
    with pytest.raises(ValueError, match=r"(?s)'t'.*tz_localize"):
        wf.transform(fitted.assign(t=fitted["t"].dt.tz_localize(None)), cast=True)


def test_fit_over_files_in_different_units_counts_one_unit(tmp_path):
    df = _times("us")
    table = pa.Table.from_pandas(df, preserve_index=False)
    pq.write_table(table, tmp_path / "a.parquet")
    # (files disagreeing on a duration's unit are refused by the reader, naming both files)
    pq.write_table(table.cast(pa.schema([("t", pa.timestamp("ms")), ("d", pa.duration("us")), ("y", pa.int64())])),
                   tmp_path / "b.parquet")
    ds = tp.Dataset([str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")])
    out = tp.Workflow(["t"] >> ops.Normalize()).fit(ds).transform(ds).compute()
    for col in ("t",):
        x = _floats(_counts(df[col]))
        x2 = np.concatenate([x, x])
        ok = ~np.isnan(x2)
        np.testing.assert_allclose(out[col].to_numpy(dtype="float64"),
                                   ((x2 - x2[ok].mean()) / x2[ok].std(ddof=1)).astype("float32"), rtol=1e-6)


# -- 3. object columns that hold no strings are refused at fit, naming the column and the fix ------------
from decimal import Decimal  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

#: object columns of non-strings: (values, the fix the error must name)
_OBJECT_FAMILIES = {
    "bools": ([True, False, True], "astype('boolean')"),
    "decimals": ([Decimal("1.5"), Decimal("2"), Decimal("1.5")], "astype('float64')"),
    "ints": ([1, 2, 1], "astype('Int64')"),
    "mixed": ([1, "1", 2, "a"], "astype(str)"),
    "bytes": ([b"a", b"b", b"a"], ".str.decode('utf-8')"),
}
_OBJECT_OPS = {"Categorify": ops.Categorify, "HashBucket": lambda: ops.HashBucket(10), "Normalize": ops.Normalize,
               "FillMissing": ops.FillMissing, "select": None}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(family=st.sampled_from(sorted(_OBJECT_FAMILIES)), op=st.sampled_from(sorted(_OBJECT_OPS)),
       nulls=st.integers(0, 2), n=st.integers(1, 12), seed=st.integers(0, 3))
def test_object_columns_of_non_strings_are_refused_at_fit(family, op, nulls, n, seed):
    values, fix = _OBJECT_FAMILIES[family]
    rng = np.random.default_rng(seed)
    cells = [values[i] for i in rng.integers(0, len(values), n)] + [None] * nulls
    if family == "mixed":
        cells[:2] = [1, "a"]  # mixed: at least one int and one string
    df = pd.DataFrame({"c": pd.Series(cells, dtype=object), "k": np.arange(len(cells))})
    make = _OBJECT_OPS[op]
    wf = tp.Workflow((["c"] if make is None else ["c"] >> make()) + ["k"])
    with pytest.raises(TypeError) as err:
        wf.fit(df)
    msg = str(err.value)
    assert "'c'" in msg and fix in msg and "object" in msg, msg


@pytest.mark.parametrize("nulls", [0, 3])
def test_object_columns_of_strings_still_fit_as_strings(nulls):
    cells = ["a", "b", "a", "c"] + [None] * nulls
    df = pd.DataFrame({"c": pd.Series(cells, dtype=object)})
    out = tp.Workflow(["c"] >> ops.Categorify()).fit(df).transform(df)
    # every training value in the vocabulary (id >= 3), nulls the null id
    assert [i >= 3 for i, v in zip(out["c"], cells) if v is not None] == [True] * 4
    assert [i for i, v in zip(out["c"], cells) if v is None] == [1] * nulls


def test_object_column_of_non_strings_at_transform_is_refused():
    df = pd.DataFrame({"c": ["1", "2", "1"]})
    wf = tp.Workflow(["c"] >> ops.Categorify()).fit(df)
    with pytest.raises(TypeError, match=r"(?s)'c'.*astype\('Int64'\)"):
        wf.transform(pd.DataFrame({"c": pd.Series([1, 2, None], dtype=object)}))


# -- 4. an id dtype too small for the ids is refused, naming both -------------------------------------------
@pytest.mark.parametrize("dtype,n_cats,ok", [("int8", 300, False), ("uint8", 300, False), ("int8", 125, True),
                                              ("int8", 126, False), ("uint8", 253, True), ("int16", 300, True)])
def test_categorify_refuses_an_id_dtype_too_small_for_the_vocabulary(dtype, n_cats, ok):
    df = pd.DataFrame({"c": np.arange(n_cats, dtype="int64")})
    wf = tp.Workflow(["c"] >> ops.Categorify(dtype=dtype))
    if not ok:  # ids run to 2 + n_cats (0 pad, 1 null, 2 OOV)
        with pytest.raises(ValueError, match=rf"(?s)'c'.*{n_cats}.*{dtype}"):
            wf.fit(df)
        return
    out = wf.fit(df).transform(df)
    assert str(out["c"].dtype) == dtype
    ids = out["c"].astype("int64").tolist()
    assert sorted(ids) == list(range(3, 3 + n_cats))  # every category its own id, none wrapped


@pytest.mark.parametrize("dtype,nb,ok", [("int8", 1000, False), ("uint8", 257, False), ("int8", 128, True),
                                         ("uint8", 256, True), ("int16", 1000, True)])
def test_hash_bucket_refuses_an_id_dtype_too_small_for_its_buckets(dtype, nb, ok):
    if not ok:
        with pytest.raises(ValueError, match=rf"(?s){nb}.*{dtype}"):
            ops.HashBucket(nb, dtype=dtype)
        with pytest.raises(ValueError, match=rf"(?s)'b'.*{nb}.*{dtype}"):
            ops.HashBucket({"a": 10, "b": nb}, dtype=dtype)
        return
    df = pd.DataFrame({"c": np.arange(2000, dtype="int64")})
    out = tp.Workflow(["c"] >> ops.HashBucket(nb, dtype=dtype)).fit(df).transform(df)
    assert out["c"].astype("int64").tolist() == [mmh3_u32(v) % nb for v in range(2000)]


def test_hashed_cross_refuses_an_id_dtype_too_small_for_its_buckets():
    with pytest.raises(ValueError, match=r"(?s)HashedCross.*1000.*int8"):
        ops.HashedCross(["a", "b"], num_buckets=1000, dtype="int8")


# -- 5. ReduceDtypeSize on uint64 -------------------------------------------------------------------------
def test_reduce_dtype_size_keeps_uint64_values_beyond_int64(backend):
    big = 2**64 - 1
    df = pd.DataFrame({"u": np.array([0, big, 5], dtype="uint64"), "v": pd.array([1, None, 2**63], dtype="UInt64"),
                       "w": np.array([3, 200, 7], dtype="uint64")})
    wf = tp.Workflow(["u", "v", "w"] >> ops.ReduceDtypeSize()).fit(frame_on(df, backend))
    out = to_pandas(wf.transform(frame_on(df, backend)))
    assert [int(v) for v in out["u"]] == [0, big, 5]
    assert [None if pd.isna(v) else int(v) for v in out["v"]] == [1, None, 2**63]
    # unsigned columns keep their dtype, as NVTabular 23.08 (which narrows only signed ints)
    assert out["w"].tolist() == [3, 200, 7] and str(out["w"].dtype) == "uint64"
    # the schema says what the data holds
    assert {c: wf.output_schema[c].dtype for c in "uvw"} == {"u": "uint64", "v": "uint64", "w": "uint64"}
    # a uint64 candidate is taken when given
    wf2 = tp.Workflow(["u"] >> ops.ReduceDtypeSize(int_dtypes=["int8", "int64", "uint64"])).fit(df)
    assert [int(v) for v in wf2.transform(df)["u"]] == [0, big, 5]


# -- 6. Clip on list<int64> with nulls keeps int64 ------------------------------------------------------------
def test_clip_on_int_lists_with_nulls_keeps_int64(backend, tmp_path):
    rows = [[1, None, 30], None, [5, -4], [], [7]]
    df = pd.DataFrame({"l": pd.Series(pd.arrays.ArrowExtensionArray(pa.array(rows, pa.list_(pa.int64()))))})
    wf = tp.Workflow(["l"] >> ops.Clip(min_value=0, max_value=10))
    ds = make_dataset(df, backend, nparts=2, empties=False)
    wf.fit(ds)
    assert wf.output_schema["l"].dtype == "int64" and wf.output_schema["l"].is_list
    wf.transform(ds).to_parquet(str(tmp_path / "out"))
    table = pq.read_table(tmp_path / "out")
    assert table.schema.field("l").type == pa.list_(pa.int64())
    ref = [None if r is None else [None if v is None else min(max(v, 0), 10) for v in r] for r in rows]
    assert table.column("l").to_pylist() == ref
    if backend == "cpu":
        got = pa.array(wf.transform(df)["l"])
        assert got.type == pa.list_(pa.int64()) and got.to_pylist() == ref


# -- 7. Categorify limits for unknown columns, and negative limits, are refused ------------------------------
def _cat_frame() -> pd.DataFrame:
    return pd.DataFrame({"c": ["a", "a", "b", "c", "c", "c"], "cc": [1, 1, 2, 3, 3, 3]})


@pytest.mark.parametrize("kwargs,named,hint", [({"freq_threshold": {"C": 5}}, "'C'", "'c'"),
                                               ({"max_size": {"ccc": 4}}, "'ccc'", "'cc'"),
                                               ({"freq_threshold": {"c": 2, "zz": 1}}, "'zz'", "")])
def test_categorify_limits_for_unknown_columns_are_refused(kwargs, named, hint):
    wf = tp.Workflow(["c", "cc"] >> ops.Categorify(**kwargs))
    with pytest.raises(ValueError) as err:
        wf.fit(_cat_frame())
    msg = str(err.value)
    assert named in msg and "Categorify" in msg and (not hint or f"did you mean {hint}" in msg), msg


def test_categorify_limits_for_its_columns_apply():
    df = _cat_frame()
    out = tp.Workflow(["c", "cc"] >> ops.Categorify(freq_threshold={"c": 2}, max_size={"cc": 4})).fit(df).transform(df)
    # c: "b" (once) is below the threshold -> OOV (2); cc: max_size=4 bounds the ids (NVTabular: pad, null,
    # OOV + 1 entry), so only the most frequent (3) is kept
    assert out["c"].tolist() == [4, 4, 2, 3, 3, 3]
    assert out["cc"].tolist() == [2, 2, 2, 3, 3, 3]


@pytest.mark.parametrize("kwargs", [{"freq_threshold": -1}, {"max_size": -5}, {"freq_threshold": {"c": -2}},
                                    {"max_size": {"c": -1}}])
def test_categorify_negative_limits_are_refused(kwargs):
    with pytest.raises(ValueError, match=r"(?s)(freq_threshold|max_size).*>= 0.*got -\d"):
        ops.Categorify(**kwargs)


# -- 8. unused odd columns pass through; errors name the column ------------------------------------------------
def _odd_parquet(path) -> pa.Table:
    from decimal import Decimal as D

    table = pa.table({"x": [1.0, 2.0, 4.0], "st": pa.array([{"a": 1, "b": "x"}, None, {"a": 2, "b": "y"}]),
                      "dec": pa.array([D("1.50"), None, D("2.25")], pa.decimal128(5, 2)),
                      "bin": pa.array([b"ok", b"\xff\xfe", None], pa.binary())})
    pq.write_table(table, path)
    return table


def test_struct_and_decimal_columns_no_op_uses_pass_through(tmp_path):
    table = _odd_parquet(tmp_path / "t.parquet")
    ds = tp.Dataset(str(tmp_path / "t.parquet"))
    wf = tp.Workflow((["x"] >> ops.Normalize()) + ["st", "dec"]).fit(ds)
    wf.transform(ds).to_parquet(str(tmp_path / "out"))
    got = pq.read_table(tmp_path / "out")
    assert got.column("st").to_pylist() == table.column("st").to_pylist()
    assert got.column("dec").to_pylist() == table.column("dec").to_pylist()
    x = np.array([1.0, 2.0, 4.0])
    np.testing.assert_allclose(got.column("x").to_numpy(), ((x - x.mean()) / x.std(ddof=1)).astype("float32"), rtol=1e-6)
    # and a workflow that does not select them at all
    out = tp.Workflow(["x"] >> ops.Normalize()).fit(ds).transform(ds).compute()
    assert list(out.columns) == ["x"]


def test_an_op_on_a_struct_or_decimal_column_is_refused_naming_it(tmp_path):
    _odd_parquet(tmp_path / "t.parquet")
    ds = tp.Dataset(str(tmp_path / "t.parquet"))
    for col in ("st", "dec"):
        with pytest.raises((TypeError, ValueError), match=rf"(?s)'{col}'"):
            tp.Workflow([col] >> ops.Normalize()).fit(ds)


def test_binary_columns_are_refused_naming_the_column_and_the_fix(tmp_path):
    _odd_parquet(tmp_path / "t.parquet")
    ds = tp.Dataset(str(tmp_path / "t.parquet"))
    for op in (ops.Categorify(), ops.HashBucket(10)):
        with pytest.raises(TypeError, match=r"(?s)'bin'.*(binary|bytes).*decode"):
            tp.Workflow(["bin"] >> op).fit(ds)


def test_normalize_on_a_string_column_names_it():
    df = pd.DataFrame({"s": ["a", "b", None], "x": [1.0, 2.0, 3.0]})
    with pytest.raises(TypeError, match=r"(?s)Normalize.*'s'.*str"):
        tp.Workflow(["s"] >> ops.Normalize()).fit(df)


def test_hash_bucket_on_a_categorical_with_a_null(backend):
    df = pd.DataFrame({"c": pd.Categorical(["a", None, "b", "a"]), "i": pd.Categorical([3, 1, None, 3])})
    out = to_pandas(tp.Workflow(["c", "i"] >> ops.HashBucket(10)).fit(frame_on(df, backend))
                    .transform(frame_on(df, backend)))
    # a categorical hashes as its category values; null -> 0
    assert out["c"].tolist() == [mmh3_u32("a") % 10, 0, mmh3_u32("b") % 10, mmh3_u32("a") % 10]
    assert out["i"].tolist() == [mmh3_u32(3) % 10, mmh3_u32(1) % 10, 0, mmh3_u32(3) % 10]


def test_fill_missing_on_a_nullable_boolean():
    df = pd.DataFrame({"b": pd.array([True, None, False], dtype="boolean")})
    out = tp.Workflow(["b"] >> ops.FillMissing()).fit(df).transform(df)
    assert out["b"].tolist() == [True, False, False] and str(out["b"].dtype) == "bool"
    out = tp.Workflow(["b"] >> ops.FillMissing(fill_val=True)).fit(df).transform(df)
    assert out["b"].tolist() == [True, True, False]
    with pytest.raises((TypeError, ValueError), match=r"(?s)'b'.*2"):
        tp.Workflow(["b"] >> ops.FillMissing(fill_val=2)).fit(df).transform(df)


def test_rename_of_two_columns_to_one_name_is_refused():
    df = pd.DataFrame({"a": [1, 2], "b": [3, 4]})
    with pytest.raises(ValueError, match=r"(?s)duplicate column.*'z'"):
        tp.Workflow(["a", "b"] >> ops.Rename(f=lambda c: "z")).fit(df)
    # across a '+': NVTabular's rule, the later branch's values, with a warning naming the column
    with pytest.warns(UserWarning, match=r"(?s)column 'a'.*later branch's values are kept"):
        wf = tp.Workflow(["a"] + (["b"] >> ops.Rename(f=lambda c: "a")))
    assert wf.fit(df).transform(df)["a"].tolist() == [3, 4]


def test_a_frame_with_duplicate_column_names_is_refused():
    df = pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0]})
    wf = tp.Workflow(["a"] >> ops.Normalize()).fit(df)
    with pytest.raises(ValueError, match=r"(?s)duplicate column.*'a'"):
        wf.transform(pd.concat([df[["a"]], df[["a"]]], axis=1))
    with pytest.raises(ValueError, match=r"(?s)duplicate column.*'a'"):
        tp.Workflow(["a"] >> ops.Normalize()).fit(pd.concat([df[["a"]], df[["a"]]], axis=1))


# -- 1 and 2 as properties: any unit, kind, nulls and values ---------------------------------------------------
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(counts=st.lists(st.one_of(st.none(), st.integers(-(10**9), 10**9)), min_size=1, max_size=20),
       unit=st.sampled_from(["s", "ms", "us", "ns"]), kind=st.sampled_from(["datetime64", "timedelta64"]),
       finer=st.sampled_from(["ms", "us", "ns"]))
def test_times_are_their_counts_with_nat_as_null(counts, unit, kind, finer):
    values = np.array([0 if v is None else v for v in counts], dtype="int64").view(f"{kind}[{unit}]")
    s = pd.Series(values)
    s[[v is None for v in counts]] = pd.NaT
    df = pd.DataFrame({"t": s})
    wf = tp.Workflow((["t"] >> ops.Normalize()) + (["t"] >> ops.HashBucket(100) >> ops.Rename(postfix="_hb")))
    out = wf.fit(df).transform(df)
    x = np.array([np.nan if v is None else float(v) for v in counts])
    ok = ~np.isnan(x)
    if ok.any():
        lo, hi = x[ok].min(), x[ok].max()
        ref = np.zeros(len(x)) if lo == hi else (x - x[ok].mean()) / x[ok].std(ddof=1)
        ref[~ok] = np.nan
        np.testing.assert_allclose(out["t"].to_numpy(dtype="float64"), ref.astype("float32"), rtol=1e-5, atol=1e-6)
    assert out["t_hb"].tolist() == [0 if v is None else mmh3_u32(v) % 100 for v in counts]
    # the same instants in a finer unit: the same output (exact conversion)
    per = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
    if per[finer] < per[unit]:
        again = wf.transform(pd.DataFrame({"t": s.astype(f"{kind}[{finer}]")}))
        pd.testing.assert_frame_equal(again, out)


def test_struct_and_decimal_columns_flow_through_rename(tmp_path):
    table = _odd_parquet(tmp_path / "t.parquet")
    ds = tp.Dataset(str(tmp_path / "t.parquet"))
    wf = tp.Workflow((["st", "dec"] >> ops.Rename(postfix="_r")) + ["x"]).fit(ds)
    wf.transform(ds).to_parquet(str(tmp_path / "out"))
    got = pq.read_table(tmp_path / "out")
    assert got.column("st_r").to_pylist() == table.column("st").to_pylist()
    assert got.column("dec_r").to_pylist() == table.column("dec").to_pylist()
