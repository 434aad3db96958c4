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

import warnings

import graphviz
import numpy as np
import pandas as pd
import pytest
from distributed import Client

import tabprep as tp
from tabprep.loader import DataLoader

Tags = tp.Tags
AGES = [1, 18, 25, 35, 45, 50, 56]  # ml-1m's age codes


def _ratings(seed: int = 0) -> pd.DataFrame:
    """ml-1m's train.parquet shape: ratings joined with users. userId u has 2u + 1 ratings,
    movies have counts 1..16 and 32 (all distinct), zipcodes follow the users (6 zipcodes, one
    of them only user 1's: 3 rows)."""
    rng = np.random.default_rng(seed)
    users = np.repeat(np.arange(1, 13), [2 * u + 1 for u in range(1, 13)])  # 168 rows
    movie_ids = rng.permutation(np.arange(100, 117))  # value order != frequency order
    movies = np.repeat(movie_ids, list(range(1, 17)) + [32])
    rng.shuffle(movies)
    zips = {u: "00501" if u == 1 else f"{10000 + (u % 5) * 7:05d}" for u in range(1, 13)}  # counts differ
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


def _movies(rare_movie: int) -> pd.DataFrame:
    """movies_converted.parquet: genres as lists of strings (genre g_k on movies with id % k == 0,
    a genre "rare" on ``rare_movie`` only)."""
    ids = list(range(100, 117)) + [500]  # 500: a movie nobody rated
    genres = [[f"g{k}" for k in (2, 3, 5, 7) if i % k == 0] or ["g1"] for i in ids]
    genres = [g + ["rare"] if i == rare_movie else g for i, g in zip(ids, genres)]
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
    graph = output.graph  # the notebook displays it: a graphviz.Digraph, as NVTabular's
    assert isinstance(graph, graphviz.Digraph)
    assert "Categorify" in graph.source and "'userId'" in graph.source and "->" in graph.source
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
    assert got["userId"].dtype == np.int64 and got["movieId"].dtype == np.int64  # Categorify's default
    # DLRMModel sizes its embedding tables from these: pad, null, OOV + the values; NVTabular's
    # _emb_sz_rule for the width.
    sizes = tp.get_embedding_sizes(workflow)
    for col, vocab in (("userId", users), ("movieId", movies)):
        n = 3 + len(vocab)
        assert tuple(sizes[col]) == (n, min(max(16, round(1.6 * n ** 0.56)), 512))

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


# -- 02-Advanced-NVTabular-workflow --------------------------------------------------------------
def rating_to_binary(col):
    return col > 3


def _notebook_02_nodes(movies, genres_columns=None):
    """The notebook's graph; ``genres_columns`` selects the join's outputs (see the test)."""
    genres = ["movieId"] >> tp.ops.JoinExternal(movies, on="movieId", columns_ext=["movieId", "genres"])
    if genres_columns is not None:
        genres = genres[genres_columns]
    genres = genres >> tp.ops.Categorify(freq_threshold=10)
    binary_rating = ["rating"] >> tp.ops.LambdaOp(rating_to_binary) >> tp.ops.Rename(name="binary_rating")
    userId = ["userId"] >> tp.ops.Categorify() >> tp.ops.AddTags(tags=[Tags.USER_ID, Tags.CATEGORICAL, Tags.USER])
    movieId = ["movieId"] >> tp.ops.Categorify() >> tp.ops.AddTags(tags=[Tags.ITEM_ID, Tags.CATEGORICAL, Tags.ITEM])
    binary_rating = binary_rating >> tp.ops.AddTags(tags=[Tags.TARGET, Tags.BINARY_CLASSIFICATION])
    return userId, movieId, genres, binary_rating


def test_02_advanced_workflow(tmp_path):
    cols = ["userId", "movieId", "rating", "timestamp"]
    # The notebook shuffles and cuts at row 600_000; here the first 168 rows keep distinct counts.
    data = pd.concat([_ratings(seed=2), _ratings(seed=3).iloc[:20], _valid()])[cols].reset_index(drop=True)
    train = data.iloc[:168]
    valid = data.iloc[168:]
    movies = _movies(rare_movie=int(train["movieId"].value_counts().idxmin()))

    train_ds = tp.Dataset(train, npartitions=2)
    valid_ds = tp.Dataset(valid)
    assert train_ds.npartitions == 2
    # train_ds.shuffle_by_keys('userId'), as the notebook: every user's rows in one partition
    shuffled = train_ds.shuffle_by_keys("userId")
    assert shuffled.npartitions == 2 and len(shuffled.compute()) == len(train)
    parts = [shuffled.to_ddf().get_partition(i).compute() for i in range(shuffled.npartitions)]
    owners = [set(p["userId"]) for p in parts]
    assert not owners[0] & owners[1]

    # The notebook's graph as written: the join outputs `movieId` (its key, in columns_ext) as well
    # as `genres`, so `movieId` comes from two branches of the `+`. NVTabular 23.08 (merlin-core's
    # LocalExecutor._merge_upstream_columns, Schema.__add__) keeps the later branch's values (the
    # join's Categorify(freq_threshold=10)) and merges the schemas (tags of both, the later one's
    # properties); tabprep does the same and warns, naming the column and both branches.
    userId, movieId, genres, binary_rating = _notebook_02_nodes(movies)
    with pytest.warns(UserWarning, match=r"'movieId'.*\['movieId'\] >> Categorify >> AddTags and later "
                                         r"\['movieId'\] >> JoinExternal >> Categorify.*values are kept"):
        workflow = tp.Workflow(userId + movieId + genres + binary_rating)
    train_transformed = workflow.fit_transform(train_ds)
    valid_transformed = workflow.transform(valid_ds)
    assert list(valid_transformed.compute().head().columns) == ["userId", "movieId", "genres", "binary_rating"]
    items_10 = _ids(train["movieId"], freq_threshold=10)  # the join branch's vocabulary
    assert 0 < len(items_10) < train["movieId"].nunique()
    for frame, got in ((train, train_transformed.compute()), (valid, valid_transformed.compute())):
        assert got["movieId"].tolist() == _encode(frame["movieId"], items_10)
        assert got["userId"].tolist() == _encode(frame["userId"], _ids(train["userId"]))
    schema = train_transformed.schema
    assert "movieId" in schema.select_by_tag(Tags.ITEM_ID).column_names  # both branches' tags
    assert "movieId" in schema.select_by_tag(Tags.CATEGORICAL).column_names
    assert schema["movieId"].properties["domain"]["max"] == max(items_10.values())
    single, multi = tp.get_embedding_sizes(workflow)   # genres is multi-hot: NVTabular's pair
    assert single["movieId"][0] == 3 + len(items_10) and set(multi) == {"genres"}
    # after save / load: the same ids (serving: tests/nvtabular/test_graph.py; no JoinExternal kernel)
    got_v = valid_transformed.compute()
    workflow.save(tmp_path / "wf")
    with warnings.catch_warnings(record=True) as loading:  # warned when built, not again on every load
        warnings.simplefilter("always")
        loaded = tp.Workflow.load(tmp_path / "wf", trusted=True)  # the notebook's rating_to_binary
    assert not [w for w in loading if "values are kept" in str(w.message)]
    assert loaded.transform(valid_ds).compute()["movieId"].tolist() == got_v["movieId"].tolist()
    assert loaded.output_schema["movieId"] == schema["movieId"]

    # The same graph with the join's output narrowed to `genres` (node["genres"], NVTabular's spelling).
    userId, movieId, genres, binary_rating = _notebook_02_nodes(movies, "genres")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one branch per column: no warning
        workflow = tp.Workflow(userId + movieId + genres + binary_rating)
    train_transformed = workflow.fit_transform(train_ds)
    valid_transformed = workflow.transform(valid_ds)
    head = valid_transformed.compute().head()
    assert list(head.columns) == ["userId", "movieId", "genres", "binary_rating"]

    # References: joins and counts in plain pandas.
    users, items = _ids(train["userId"]), _ids(train["movieId"])
    genre_of = dict(zip(movies["movieId"], movies["genres"]))
    train_genres = pd.Series([g for m in train["movieId"] for g in genre_of[m]])
    genre_ids = _ids(train_genres, freq_threshold=10)
    assert 0 < len(genre_ids) < train_genres.nunique()  # the threshold sends some genres to OOV

    for frame, got in ((train, train_transformed.compute()), (valid, valid_transformed.compute())):
        assert len(got) == len(frame)
        assert got["userId"].tolist() == _encode(frame["userId"], users)
        assert got["movieId"].tolist() == _encode(frame["movieId"], items)
        # movie 999 is not in `movies`: the left join gives a null genres row, which stays null
        # (NVTabular 23.08 raises on it on the CPU, see docs/migration.md).
        want_genres = [None if m not in genre_of else [genre_ids.get(g, 2) for g in genre_of[m]]
                       for m in frame["movieId"]]
        got_genres = [None if c is None else [int(v) for v in c] for c in got["genres"]]
        assert got_genres == want_genres
        assert got["binary_rating"].dtype == bool
        assert all(c.dtype == np.int64 for c in got["genres"] if c is not None)
        assert got["binary_rating"].tolist() == (frame["rating"] > 3).tolist()

    schema = train_transformed.schema
    assert schema.column_names == ["userId", "movieId", "genres", "binary_rating"]
    assert schema.select_by_tag(Tags.USER_ID).column_names == ["userId"]
    assert schema.select_by_tag(Tags.ITEM_ID).column_names == ["movieId"]
    assert schema.select_by_tag(Tags.TARGET).column_names == ["binary_rating"]
    assert schema.select_by_tag(Tags.BINARY_CLASSIFICATION).column_names == ["binary_rating"]
    assert schema["genres"].is_list
    assert schema.without("genres").column_names == ["userId", "movieId", "binary_rating"]

    # In place of mm.DLRMModel(train_transformed.schema, ...).fit(..., batch_size=1024): batches
    # of the schema's categorical (genres multi-hot) and target columns.
    loader = DataLoader(valid_transformed, batch_size=3, shuffle=False,
                        cat_names=schema.select_by_tag(Tags.CATEGORICAL).column_names,
                        label_names=["binary_rating"])
    batches = list(loader)
    assert [len(b["userId"]) for b in batches] == [3] * (len(valid) // 3) + ([len(valid) % 3] if len(valid) % 3 else [])
    first = batches[0]
    assert first["binary_rating"].tolist() == (valid["rating"].iloc[:3] > 3).tolist()
    values, lengths = first["genres"]
    assert [int(n) for n in np.asarray(lengths)] == [len(genre_of[m]) for m in valid["movieId"].iloc[:3]]


# -- 03-Running-on-multiple-GPUs-or-on-CPU (its CPU path) ----------------------------------------
def _bucket(values, boundaries) -> list:
    """NVTabular's Bucketize: np.digitize(right=False), i.e. how many boundaries are <= x."""
    return [sum(1 for b in boundaries if x >= b) for x in values]


def _categorify_03(frame: pd.DataFrame, fit_on: pd.DataFrame) -> dict:
    return {c: _encode(frame[c], _ids(fit_on[c], freq_threshold=10)) for c in ("userId", "movieId", "zipcode")}


def test_03_cpu_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # get_movielens(...) returns two parquet-backed Datasets of ratings joined with users.
    train_df, valid_df = _ratings(seed=4), _valid()
    train_df.to_parquet("train_in.parquet")
    valid_df.to_parquet("valid_in.parquet")
    train, valid = tp.Dataset("train_in.parquet"), tp.Dataset("valid_in.parquet")

    # No GPU: the notebook's `cluster` stays None and it starts an in-process client.
    with Client(processes=False, dashboard_address=":0") as client:
        assert client.cluster is not None
        categories = ["userId", "movieId", "zipcode"] >> tp.ops.Categorify(freq_threshold=10)
        age = ["age"] >> tp.ops.Bucketize([0, 10, 21, 45])

        example_workflow = tp.Workflow(categories + age)
        example_workflow.fit_transform(train).to_parquet("train")
        example_workflow.transform(valid).to_parquet("valid")

        got = tp.Dataset("train", engine="parquet").compute()
        got_v = tp.Dataset("valid", engine="parquet").compute()
        for frame, out in ((train_df, got), (valid_df, got_v)):
            want = _categorify_03(frame, train_df)
            assert list(out.columns) == ["userId", "movieId", "zipcode", "age"]
            for c in ("userId", "movieId", "zipcode"):
                assert out[c].tolist() == want[c], c
            assert out["age"].tolist() == _bucket(frame["age"], [0, 10, 21, 45])
            # Categorify's ids int64, Bucketize's int32 (NVTabular 23.08's Bucketize.output_dtype)
            assert [str(out[c].dtype) for c in out.columns] == ["int64", "int64", "int64", "int32"]
        assert got_v["zipcode"].tolist()[2] == 1  # the null zipcode
        assert 2 in got["userId"].tolist() and 2 in got["zipcode"].tolist()  # below the threshold

        train = tp.Dataset("train", engine="parquet", cpu=True)
        valid = tp.Dataset("valid", engine="parquet", cpu=True)
        example_workflow = tp.Workflow(categories + age)
        again = example_workflow.fit_transform(train).compute()
        again_v = example_workflow.transform(valid).compute()
        # Refitted on its own output: the ids are encoded again by their counts.
        for frame, out in ((got, again), (got_v, again_v)):
            want = _categorify_03(frame, got)
            for c in ("userId", "movieId", "zipcode"):
                assert out[c].tolist() == want[c], c
            assert out["age"].tolist() == _bucket(frame["age"], [0, 10, 21, 45])
