"""NVTabular 23.08's example notebooks (examples/01-Getting-started.ipynb,
02-Advanced-NVTabular-workflow.ipynb, 03-Running-on-multiple-GPUs-or-on-CPU.ipynb) replayed in
tabprep's spelling, changing only what docs/migration.md renames (``import nvtabular as nvt`` ->
``import tabprep as tp``, ``nvt.ops`` -> ``tp.ops``, ``merlin.io.Dataset`` -> ``tp.Dataset``,
``merlin.schema.Tags`` -> ``tp.Tags``), on small MovieLens-shaped data written here, on the CPU.

References are plain pandas, by NVTabular 23.08's rules (nvtabular/ops/categorify.py): id 0 is
padding, 1 null, 2 the one OOV bucket (``OOV_OFFSET = 2``, ``num_buckets=None``), then the values
in descending frequency from 3; values seen fewer than ``freq_threshold`` times go to the OOV id.
The counts below are all distinct, so the order has no ties. The Merlin Models training cells
(``mm.DLRMModel(...).fit``) are replaced by tabprep's loader over the same outputs; the GPU-only
cells of notebook 03 (``LocalCUDACluster``, rmm pools, ``nvidia-smi``) are skipped.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tabprep as tp
from tabprep.loader import DataLoader

Tags = tp.Tags
AGES = [1, 18, 25, 35, 45, 50, 56]  # ml-1m's age codes


def _ratings(seed: int = 0) -> pd.DataFrame:
    """ml-1m's train.parquet shape: ratings joined with users. userId u has 2u + 1 ratings,
    movies have counts 1..16 and 32 (all distinct), zipcodes follow the users."""
    rng = np.random.default_rng(seed)
    users = np.repeat(np.arange(1, 13), [2 * u + 1 for u in range(1, 13)])  # 168 rows
    movie_ids = rng.permutation(np.arange(100, 117))  # value order != frequency order
    movies = np.repeat(movie_ids, list(range(1, 17)) + [32])
    rng.shuffle(movies)
    zips = {u: f"{10000 + (u % 5) * 7:05d}" for u in range(1, 13)}  # 5 zipcodes, counts differ
    age = {u: AGES[u % len(AGES)] for u in range(1, 13)}
    df = pd.DataFrame({
        "userId": users.astype("int64"),
        "movieId": movies.astype("int64"),
        "rating": rng.integers(1, 6, len(users)).astype("int64"),
        "timestamp": rng.integers(956_703_932, 1_046_454_590, len(users)).astype("int64"),
        "zipcode": [zips[u] for u in users],
        "age": [age[u] for u in users],
    })
    return df.sample(frac=1, random_state=seed).reset_index(drop=True)


def _valid() -> pd.DataFrame:
    """Seen and unseen users / movies / zipcodes, one null zipcode, an age below 0 and above 45."""
    return pd.DataFrame({
        "userId": pd.Series([12, 1, 99, 5], dtype="int64"),
        "movieId": pd.Series([116, 999, 100, 105], dtype="int64"),
        "rating": pd.Series([5, 1, 4, 3], dtype="int64"),
        "timestamp": pd.Series([1, 2, 3, 4], dtype="int64"),
        "zipcode": [f"{10000 + 2 * 7:05d}", "99999", None, f"{10000 + 0:05d}"],
        "age": [-3, 10, 21, 56],
    })


def _movies() -> pd.DataFrame:
    """movies_converted.parquet: genres as lists of strings (genre g_k on movies with id % k == 0)."""
    ids = list(range(100, 117)) + [500]  # 500: a movie nobody rated
    genres = [[f"g{k}" for k in (2, 3, 5, 7) if i % k == 0] or ["g1"] for i in ids]
    return pd.DataFrame({"movieId": pd.Series(ids, dtype="int64"), "genres": genres})


def _ids(train: pd.Series, freq_threshold: int = 0) -> dict:
    """NVTabular 23.08's Categorify vocabulary: value -> id, 3.. by descending count."""
    counts = train.dropna().value_counts()
    assert counts.is_unique, "the synthetic data must have no ties"
    kept = counts[counts >= max(freq_threshold, 1)].sort_values(ascending=False)
    return {v: 3 + i for i, v in enumerate(kept.index)}


def _encode(values, vocab: dict) -> list:
    return [1 if v is None or (not isinstance(v, list) and pd.isna(v)) else vocab.get(v, 2) for v in values]


# -- 01-Getting-started --------------------------------------------------------------------------
def test_01_getting_started(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    train, valid = _ratings(), _valid()[["userId", "movieId", "rating", "timestamp"]]
    train = train[["userId", "movieId", "rating", "timestamp"]]

    train_ds = tp.Dataset(train)
    valid_ds = tp.Dataset(valid)
    assert "Dataset" in repr((train_ds, valid_ds))

    output = ["userId", "movieId"] >> tp.ops.Categorify()
    output += ["rating"] >> tp.ops.AddMetadata(tags=[Tags.REGRESSION, Tags.TARGET])
    workflow = tp.Workflow(output)

    workflow.fit_transform(train_ds).to_parquet("train")
    workflow.transform(valid_ds).to_parquet("valid")

    train_transformed = tp.Dataset("train", engine="parquet")
    valid_transformed = tp.Dataset("valid", engine="parquet")

    head = train_transformed.head()
    assert list(head.columns) == ["userId", "movieId", "rating"] and len(head) == 5

    users, movies = _ids(train["userId"]), _ids(train["movieId"])
    got = train_transformed.compute()
    assert got["userId"].tolist() == _encode(train["userId"], users)
    assert got["movieId"].tolist() == _encode(train["movieId"], movies)
    assert got["rating"].tolist() == train["rating"].tolist()
    got_v = valid_transformed.compute()
    assert got_v["userId"].tolist() == [users[12], users[1], 2, users[5]]
    assert got_v["movieId"].tolist() == _encode(valid["movieId"], movies)

    schema = train_transformed.schema
    assert set(schema.select_by_tag(Tags.CATEGORICAL).column_names) == {"userId", "movieId"}
    assert schema.select_by_tag(Tags.TARGET).column_names == ["rating"]
    assert schema.select_by_tag(Tags.REGRESSION).column_names == ["rating"]
    assert schema["userId"].properties["domain"]["max"] == max(users.values())
    assert schema["movieId"].properties["domain"]["max"] == max(movies.values())

    # In place of mm.DLRMModel(train_transformed.schema, ...).fit(train_transformed, batch_size=1024):
    # the schema's categorical ids and target in batches of 1024 (all 168 rows in one).
    loader = DataLoader(train_transformed, batch_size=1024, shuffle=False,
                        cat_names=schema.select_by_tag(Tags.CATEGORICAL).column_names,
                        label_names=schema.select_by_tag(Tags.TARGET).column_names)
    batches = list(loader)
    assert len(batches) == 1
    batch = batches[0]  # the core loader's batch: a dict of column -> array (labels included)
    assert set(batch) == {"userId", "movieId", "rating"}
    assert batch["userId"].dtype == np.int64 and batch["userId"].shape[0] == len(train)
    np.testing.assert_array_equal(np.asarray(batch["movieId"]).ravel(), _encode(train["movieId"], movies))
    np.testing.assert_array_equal(np.asarray(batch["rating"]).ravel(), train["rating"].to_numpy())
