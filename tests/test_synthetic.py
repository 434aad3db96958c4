"""Tests for tabprep.io.synthetic: Criteo-like and MovieLens-like parquet generators."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from tabprep.io import synthetic
from tabprep.io.synthetic import (
    CRITEO_CARDINALITIES,
    MOVIELENS_GENRES,
    criteo_columns,
    generate_criteo,
    generate_movielens,
    movielens_columns,
)

ROWS = 30_000


def read(paths):
    return pa.concat_tables([pq.read_table(p) for p in paths])


@pytest.fixture(scope="module")
def criteo(tmp_path_factory):
    out = tmp_path_factory.mktemp("criteo")
    paths = generate_criteo(ROWS, str(out), files=3, seed=7, row_group_size=4_000)
    return paths, read(paths)


@pytest.fixture(scope="module")
def movielens(tmp_path_factory):
    out = tmp_path_factory.mktemp("ml")
    paths = generate_movielens(ROWS, str(out), files=2, seed=3, n_users=5_000, n_movies=2_000,
                               row_group_size=7_000)
    return paths, read(paths)


# --- Criteo -------------------------------------------------------------------

def test_criteo_columns():
    cols = criteo_columns()
    assert cols["label"] == ["label"]
    assert cols["continuous"] == [f"I{i}" for i in range(1, 14)]
    assert cols["categorical"] == [f"C{i}" for i in range(1, 27)]
    assert set(CRITEO_CARDINALITIES) == set(cols["categorical"])
    cols["label"].append("x")  # callers get fresh lists
    assert criteo_columns()["label"] == ["label"]


def test_criteo_files_shape_and_types(criteo):
    paths, table = criteo
    assert [os.path.basename(p) for p in paths] == [f"part-0000{i}.parquet" for i in range(3)]
    counts = [pq.ParquetFile(p).metadata.num_rows for p in paths]
    assert counts == [10_000, 10_000, 10_000]
    md = pq.ParquetFile(paths[0]).metadata
    assert [md.row_group(i).num_rows for i in range(md.num_row_groups)] == [4_000, 4_000, 2_000]
    cols = criteo_columns()
    assert table.column_names == cols["label"] + cols["continuous"] + cols["categorical"]
    assert all(t == pa.int64() for t in table.schema.types)
    assert table.num_rows == ROWS


def test_criteo_nulls_and_values(criteo):
    _, table = criteo
    assert table["label"].null_count == 0
    label = table["label"].to_numpy()
    assert set(np.unique(label)) == {0, 1}
    assert 0.015 < label.mean() < 0.05
    feature_cols = criteo_columns()["continuous"] + criteo_columns()["categorical"]
    fractions = np.array([table[c].null_count / ROWS for c in feature_cols])
    assert abs(fractions.mean() - 0.02) < 0.003
    assert fractions.min() > 0.01 and fractions.max() < 0.03
    i2 = table["I2"].drop_null().to_numpy()
    assert 0 < (i2 < 0).mean() < 0.1 and i2.min() >= -3
    for c in criteo_columns()["continuous"]:
        if c != "I2":
            assert pc.min(table[c]).as_py() >= 0
    # heavy tail: I5 spans orders of magnitude
    i5 = table["I5"].drop_null().to_numpy()
    assert np.percentile(i5, 99) > 20 * max(np.median(i5), 1)


def test_criteo_cardinality_within_profile(criteo):
    _, table = criteo
    for c, card in CRITEO_CARDINALITIES.items():
        ids = table[c].drop_null().to_numpy()
        assert len(np.unique(ids)) <= card
        assert ids.min() >= 0 and ids.max() < 2**32
    for c in ("C6", "C9", "C17", "C20", "C22", "C23"):  # small columns: all ids show up
        assert len(np.unique(table[c].drop_null().to_numpy())) == CRITEO_CARDINALITIES[c]
    # ids look hashed (spread over 32 bits), not 0..n-1
    c9 = np.unique(table["C9"].drop_null().to_numpy())
    assert c9.max() > 2**20
    # and are skewed: the most frequent C3 id is far above the mean count
    c3 = table["C3"].drop_null().to_numpy()
    _, counts = np.unique(c3, return_counts=True)
    assert counts.max() > 50 * counts.mean()


def test_criteo_ids_are_a_fixed_bijection_of_the_profile(criteo, tmp_path):
    _, table = criteo
    j = criteo_columns()["categorical"].index("C17")
    key = np.uint32((0x9E3779B9 * (j + 1)) & 0xFFFFFFFF)
    k = np.arange(CRITEO_CARDINALITIES["C17"], dtype=np.uint32) ^ key
    allowed = set(synthetic._fmix32(k).astype(np.int64).tolist())
    assert set(table["C17"].drop_null().to_numpy().tolist()) == allowed
    # same ids whatever the seed
    other = read(generate_criteo(2_000, str(tmp_path), seed=99))
    assert set(other["C17"].drop_null().to_numpy().tolist()) <= allowed


def test_criteo_deterministic(tmp_path):
    a = read(generate_criteo(5_000, str(tmp_path / "a"), files=2, seed=1, row_group_size=1_500))
    b = read(generate_criteo(5_000, str(tmp_path / "b"), files=2, seed=1, row_group_size=1_500))
    c = read(generate_criteo(5_000, str(tmp_path / "c"), files=2, seed=2, row_group_size=1_500))
    assert a.equals(b)
    assert not a.equals(c)


def test_criteo_null_fraction_zero_and_edge_sizes(tmp_path):
    t = read(generate_criteo(1_000, str(tmp_path / "n0"), null_fraction=0.0))
    assert sum(col.null_count for col in t.columns) == 0
    paths = generate_criteo(3, str(tmp_path / "few"), files=5)
    assert len(paths) == 3 and read(paths).num_rows == 3
    paths = generate_criteo(0, str(tmp_path / "zero"), files=2)
    assert len(paths) == 1
    empty = pq.read_table(paths[0])
    assert empty.num_rows == 0 and empty.schema.names[0] == "label"
    with pytest.raises(ValueError):
        generate_criteo(10, str(tmp_path / "bad"), null_fraction=1.5)
    with pytest.raises(ValueError):
        generate_criteo(10, str(tmp_path / "bad"), files=0)
    with pytest.raises(ValueError):
        generate_criteo(-1, str(tmp_path / "bad"))


# --- MovieLens ----------------------------------------------------------------

def test_movielens_columns():
    cols = movielens_columns()
    assert cols["label"] == ["rating"]
    assert cols["categorical"] == ["userId", "movieId"]
    assert cols["list"] == ["genres"]
    assert len(MOVIELENS_GENRES) == 18


def test_movielens_schema_and_values(movielens):
    paths, table = movielens
    assert len(paths) == 2 and table.num_rows == ROWS
    schema = pq.read_schema(paths[0])
    assert schema.field("userId").type == pa.int64()
    assert schema.field("movieId").type == pa.int64()
    assert pa.types.is_list(schema.field("genres").type)
    assert schema.field("genres").type.value_type == pa.string()
    assert schema.field("rating").type == pa.float32()
    assert schema.field("timestamp").type == pa.int64()
    users = table["userId"].to_numpy()
    movies = table["movieId"].to_numpy()
    assert users.min() >= 1 and users.max() <= 5_000
    assert movies.min() >= 1 and movies.max() <= 2_000
    _, counts = np.unique(movies, return_counts=True)
    assert counts.max() > 20 * counts.mean()  # popularity is skewed
    rating = table["rating"].to_numpy()
    assert rating.min() >= 0.5 and rating.max() <= 5.0
    assert np.all(rating * 2 == np.round(rating * 2))
    assert 3.0 < rating.mean() < 4.0
    ts = table["timestamp"].to_numpy()
    assert ts.min() >= 789_652_009 and ts.max() <= 1_574_327_703


def test_movielens_genres(movielens):
    _, table = movielens
    genres = table["genres"].combine_chunks()
    assert genres.null_count == 0
    lengths = pc.list_value_length(genres).to_numpy()
    assert lengths.min() == 0 and lengths.max() <= 4
    assert 0 < (lengths == 0).mean() < 0.15
    flat = genres.flatten()
    assert 0 < flat.null_count < 0.1 * len(flat)
    assert set(flat.drop_null().to_pylist()) <= set(MOVIELENS_GENRES)
    # a movie always has the same genres
    df = table.select(["movieId", "genres"]).to_pandas()
    df["g"] = df["genres"].map(lambda g: tuple(g))
    assert df.groupby("movieId")["g"].nunique().max() == 1
    rows_with_null = sum(1 for g in genres.to_pylist() if None in g)
    assert rows_with_null > 0


def test_movielens_deterministic(tmp_path):
    a = read(generate_movielens(3_000, str(tmp_path / "a"), seed=5, n_users=100, n_movies=50))
    b = read(generate_movielens(3_000, str(tmp_path / "b"), seed=5, n_users=100, n_movies=50))
    c = read(generate_movielens(3_000, str(tmp_path / "c"), seed=6, n_users=100, n_movies=50))
    assert a.equals(b)
    assert not a.equals(c)
    with pytest.raises(ValueError):
        generate_movielens(10, str(tmp_path / "bad"), n_users=0)
