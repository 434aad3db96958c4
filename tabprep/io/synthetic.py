"""Synthetic datasets shaped like Criteo (click logs) and MovieLens (ratings).

Both generators write parquet files (``part-00000.parquet``, ...) chunk by chunk with
:class:`pyarrow.parquet.ParquetWriter`: each chunk of ``row_group_size`` rows is made,
written as one row group and dropped (the next chunk is made on a worker thread while
one is written), so memory stays bounded by two chunks whatever the number of rows.
Output is deterministic: the same arguments give the same files.

Criteo (:func:`generate_criteo`)
    ``label`` (int64 0/1, about 3% ones, learnable from a few categorical columns),
    ``I1..I13`` (int64 heavy-tailed counts; ``I2`` has a few negatives like the real
    data) and ``C1..C26`` (int64 ids). The number of distinct ids of ``Ci`` never
    exceeds :data:`CRITEO_CARDINALITIES` (the Kaggle Display Advertising Challenge
    profile); ids are drawn from a truncated power law (Zipf exponent 1.1-1.3, so a few
    ids are very frequent and most are rare) over ``0..cardinality-1`` and then mapped
    through a fixed bijection of the 32-bit integers (a per-column keyed ``fmix32``), so
    they look like the hashed 32-bit values of the real data rather than ``0..n``.
    Every ``I`` and ``C`` value is null with probability ``null_fraction``.

MovieLens (:func:`generate_movielens`)
    ``userId``, ``movieId`` (int64, power-law activity and popularity), ``genres``
    (``list<string>``, a fixed list per movie of 1-4 of the 18 MovieLens genres; about
    1% of movies have an empty list and 1% a null element), ``rating`` (float32,
    0.5-5.0 in steps of 0.5; movie quality + user bias + noise) and ``timestamp``
    (int64 Unix seconds, 1995-2019).
"""
from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Dict, List, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

logger = logging.getLogger(__name__)

__all__ = [
    "CRITEO_CARDINALITIES",
    "MOVIELENS_GENRES",
    "criteo_columns",
    "generate_criteo",
    "generate_movielens",
    "movielens_columns",
]

#: Distinct values of each Criteo categorical column in the Kaggle (Display Advertising
#: Challenge, 45.8M rows) data set.
CRITEO_CARDINALITIES: Dict[str, int] = {
    "C1": 1460, "C2": 583, "C3": 10131227, "C4": 2202608, "C5": 305, "C6": 24,
    "C7": 12517, "C8": 633, "C9": 3, "C10": 93145, "C11": 5683, "C12": 8351593,
    "C13": 3194, "C14": 27, "C15": 14992, "C16": 5461306, "C17": 10, "C18": 5652,
    "C19": 2173, "C20": 4, "C21": 7046547, "C22": 18, "C23": 15, "C24": 286181,
    "C25": 105, "C26": 142572,
}

_CONTINUOUS = [f"I{i}" for i in range(1, 14)]
_CATEGORICAL = [f"C{i}" for i in range(1, 27)]

# Per continuous column: (mu, sigma, share of exact zeros); value = floor(exp(mu + sigma*z)).
# Chosen so means and tails are of the order of the real columns (I5 in the thousands,
# I10/I12 mostly 0 or 1, ...).
_CONT_PARAMS: Dict[str, Tuple[float, float, float]] = {
    "I1": (0.6, 1.1, 0.35), "I2": (2.5, 2.0, 0.10), "I3": (2.0, 1.5, 0.05),
    "I4": (1.5, 1.0, 0.05), "I5": (7.5, 2.0, 0.02), "I6": (3.5, 1.8, 0.05),
    "I7": (1.8, 1.5, 0.15), "I8": (2.2, 1.1, 0.02), "I9": (3.8, 1.6, 0.02),
    "I10": (0.0, 0.6, 0.45), "I11": (0.8, 1.0, 0.20), "I12": (0.0, 0.8, 0.60),
    "I13": (1.6, 1.2, 0.05),
}
_FLOAT32_MAX_CARD = 1 << 17  # ids of smaller columns are drawn in float32 (faster)
_I2_NEGATIVE_SHARE = 0.03  # real I2 has values down to -3

# Columns whose (pre-bijection) id shifts the click log-odds, with the effect spread.
_LABEL_EFFECT_COLUMNS = ("C1", "C2", "C5", "C6", "C14", "C17", "C23")
_LABEL_EFFECT_SD = 0.5
_LABEL_BIAS = -3.65  # calibrated so that about 3% of labels are 1
_LABEL_I1_WEIGHT = 0.15  # per unit of log1p(I1)

#: The 18 genres of the MovieLens data sets.
MOVIELENS_GENRES: List[str] = [
    "Action", "Adventure", "Animation", "Children", "Comedy", "Crime", "Documentary",
    "Drama", "Fantasy", "Film-Noir", "Horror", "Musical", "Mystery", "Romance", "Sci-Fi",
    "Thriller", "War", "Western",
]
# Rough genre frequencies in MovieLens (Drama and Comedy dominate).
_GENRE_WEIGHTS = np.array([8, 6, 3, 3, 13, 5, 3, 17, 3, 1, 5, 2, 3, 6, 4, 7, 2, 1], dtype=np.float64)
_TS_MIN, _TS_MAX = 789_652_009, 1_574_327_703  # 1995-01-09 .. 2019-11-21 (ML-25M range)

_M32 = np.uint32(0xFFFFFFFF)


# ---------------------------------------------------------------------------
# Column lists
# ---------------------------------------------------------------------------

def criteo_columns() -> Dict[str, List[str]]:
    """Column names of :func:`generate_criteo` output by role.

    Returns:
        ``{"label": ["label"], "continuous": ["I1", ..., "I13"],
        "categorical": ["C1", ..., "C26"]}`` (fresh lists on every call).
    """
    return {"label": ["label"], "continuous": list(_CONTINUOUS), "categorical": list(_CATEGORICAL)}


def movielens_columns() -> Dict[str, List[str]]:
    """Column names of :func:`generate_movielens` output by role.

    Returns:
        ``{"label": ["rating"], "continuous": [], "categorical": ["userId", "movieId"],
        "list": ["genres"], "timestamp": ["timestamp"], "user": ["userId"],
        "item": ["movieId"]}``.
    """
    return {"label": ["rating"], "continuous": [], "categorical": ["userId", "movieId"],
            "list": ["genres"], "timestamp": ["timestamp"], "user": ["userId"], "item": ["movieId"]}


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

def _check_args(rows: int, files: int, row_group_size: int) -> None:
    if int(rows) < 0:
        raise ValueError(f"rows must be >= 0, got {rows}")
    if int(files) < 1:
        raise ValueError(f"files must be >= 1, got {files}")
    if int(row_group_size) < 1:
        raise ValueError(f"row_group_size must be >= 1, got {row_group_size}")


def _file_rows(rows: int, files: int) -> List[int]:
    """Rows per file: as even as possible, never an empty file unless ``rows == 0``."""
    files = max(1, min(files, rows)) if rows > 0 else 1
    base, extra = divmod(rows, files)
    return [base + (1 if f < extra else 0) for f in range(files)]


def _write_files(out_dir: str, rows: int, files: int, row_group_size: int, schema: pa.Schema,
                 make_chunk: Callable[[np.random.Generator, int], pa.Table], seed: int,
                 stream: int) -> List[str]:
    """Write ``part-XXXXX.parquet`` files, one row group per chunk; returns their paths.

    Chunk ``i`` is made from its own generator (seeded by ``seed``, ``stream``, ``i``),
    so the data do not depend on timing. The next chunk is made on a worker thread
    while the current one is written (numpy and the parquet writer release the GIL),
    so at most two chunks are in memory at once.
    """
    os.makedirs(out_dir, exist_ok=True)
    per_file = _file_rows(rows, files)
    paths = [os.path.join(out_dir, f"part-{f:05d}.parquet") for f in range(len(per_file))]
    # (file, rows) of every chunk, in order
    chunks: List[Tuple[int, int]] = []
    for f, n_file in enumerate(per_file):
        chunks += [(f, min(row_group_size, n_file - lo)) for lo in range(0, n_file, row_group_size)]

    def make(i: int) -> pa.Table:
        rng = np.random.default_rng(np.random.SeedSequence([seed, stream, i]))
        return make_chunk(rng, chunks[i][1])

    writers: Dict[int, pq.ParquetWriter] = {}
    try:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tabprep-synthetic") as pool:
            pending = pool.submit(make, 0) if chunks else None
            for i, (f, n) in enumerate(chunks):
                table = pending.result()
                pending = pool.submit(make, i + 1) if i + 1 < len(chunks) else None
                if f not in writers:
                    writers[f] = pq.ParquetWriter(paths[f], schema, compression="snappy")
                writers[f].write_table(table, row_group_size=n)
                del table
                if i + 1 == len(chunks) or chunks[i + 1][0] != f:
                    writers.pop(f).close()
                    logger.debug("wrote %s (%d rows)", paths[f], per_file[f])
        for f, n_file in enumerate(per_file):
            if n_file == 0:  # rows == 0: one file with the schema and no rows
                with pq.ParquetWriter(paths[f], schema, compression="snappy") as writer:
                    writer.write_table(schema.empty_table())
    finally:
        for writer in writers.values():
            writer.close()
    return paths


def _fmix32(x: np.ndarray) -> np.ndarray:
    """MurmurHash3's finalizer: a bijection of the uint32 values (in place)."""
    x ^= x >> np.uint32(16)
    x *= np.uint32(0x85EBCA6B)
    x ^= x >> np.uint32(13)
    x *= np.uint32(0xC2B2AE35)
    x ^= x >> np.uint32(16)
    return x


def _power_law_index(u: np.ndarray, n: int, a: float) -> np.ndarray:
    """Map uniforms ``u`` in [0, 1) to ids in ``[0, n)`` with ``P(k) ~ (k + 1) ** -a``.

    Inverse CDF of a continuous power law on ``[1, n + 1)``, floored: a close, fully
    vectorized stand-in for a Zipf distribution truncated to ``n`` values (``a != 1``).
    The arithmetic is done in ``u``'s dtype (float32 is fine for ``n`` up to ~1e5).
    """
    if n <= 1:
        return np.zeros(u.shape, dtype=np.int64)
    ft = u.dtype.type
    e = 1.0 - a
    top = (n + 1.0) ** e
    x = u * ft(top - 1.0)
    x += ft(1.0)
    np.power(x, ft(1.0 / e), out=x)
    k = x.astype(np.int64)
    k -= 1
    np.clip(k, 0, n - 1, out=k)
    return k


def _affine_permutation(n: int, salt: int) -> Tuple[int, int]:
    """(mult, add) with ``k -> (k * mult + add) % n`` a bijection of ``range(n)``."""
    rng = np.random.default_rng(salt)
    while True:
        mult = int(rng.integers(1, max(n, 2)))
        if np.gcd(mult, n) == 1:
            return mult, int(rng.integers(0, max(n, 1)))


def _zipf_exponent(i: int) -> float:
    """Fixed Zipf exponent of the i-th (0-based) categorical column, in [1.1, 1.3]."""
    return 1.1 + 0.2 * ((i * 7) % 13) / 12.0


# ---------------------------------------------------------------------------
# Criteo
# ---------------------------------------------------------------------------

def _criteo_schema() -> pa.Schema:
    fields = [pa.field("label", pa.int64(), nullable=False)]
    fields += [pa.field(c, pa.int64()) for c in _CONTINUOUS]
    fields += [pa.field(c, pa.int64()) for c in _CATEGORICAL]
    return pa.schema(fields)


def _criteo_effects() -> Dict[str, np.ndarray]:
    """Fixed per-id log-odds effects of the label-driving columns (same for every seed)."""
    rng = np.random.default_rng(20140101)
    return {c: rng.normal(0.0, _LABEL_EFFECT_SD, CRITEO_CARDINALITIES[c]).astype(np.float32)
            for c in _LABEL_EFFECT_COLUMNS}


def _criteo_chunk_maker(null_fraction: float) -> Callable[[np.random.Generator, int], pa.Table]:
    schema = _criteo_schema()
    effects = _criteo_effects()
    keys = [np.uint32((0x9E3779B9 * (i + 1)) & 0xFFFFFFFF) for i in range(len(_CATEGORICAL))]

    def make(rng: np.random.Generator, n: int) -> pa.Table:
        nulls = rng.random((len(_CONTINUOUS) + len(_CATEGORICAL), n), dtype=np.float32) < null_fraction
        columns: Dict[str, pa.Array] = {}
        logit = np.full(n, _LABEL_BIAS, dtype=np.float32)

        z = rng.standard_normal((len(_CONTINUOUS), n), dtype=np.float32)
        zero_u = rng.random((len(_CONTINUOUS), n), dtype=np.float32)
        for i, name in enumerate(_CONTINUOUS):
            mu, sigma, zero_share = _CONT_PARAMS[name]
            vals = np.floor(np.exp(mu + sigma * z[i])).astype(np.int64)
            vals[zero_u[i] < zero_share] = 0
            if name == "I2":
                neg = zero_u[i] > 1.0 - _I2_NEGATIVE_SHARE
                vals[neg] = -rng.integers(1, 4, int(neg.sum()))
            if name == "I1":
                logit += _LABEL_I1_WEIGHT * np.log1p(np.maximum(vals, 0)).astype(np.float32) * ~nulls[i]
            columns[name] = pa.array(vals, mask=nulls[i])
        del z, zero_u

        for j, name in enumerate(_CATEGORICAL):
            card = CRITEO_CARDINALITIES[name]
            mask = nulls[len(_CONTINUOUS) + j]
            u = rng.random(n, dtype=np.float32 if card <= _FLOAT32_MAX_CARD else np.float64)
            idx = _power_law_index(u, card, _zipf_exponent(j))
            if name in effects:
                logit += np.where(mask, np.float32(0), effects[name][idx])
            ids = idx.astype(np.uint32)
            ids ^= keys[j]
            _fmix32(ids)
            columns[name] = pa.array(ids.astype(np.int64), mask=mask)

        p = 1.0 / (1.0 + np.exp(-logit))
        label = (rng.random(n, dtype=np.float32) < p).astype(np.int64)
        arrays = [pa.array(label)] + [columns[c] for c in _CONTINUOUS + _CATEGORICAL]
        return pa.Table.from_arrays(arrays, schema=schema)

    return make


def generate_criteo(rows: int, out_dir: str, *, files: int = 1, seed: int = 0,
                    row_group_size: int = 250_000, null_fraction: float = 0.02) -> List[str]:
    """Write ``rows`` rows of Criteo-like click data as parquet files in ``out_dir``.

    Args:
        rows: total number of rows (>= 0).
        out_dir: output folder, created if missing; existing ``part-*.parquet`` files of
            the same names are overwritten, other files are left alone.
        files: number of files (default 1); rows are split as evenly as possible, and
            never more files than rows (``rows == 0`` writes one empty file).
        seed: random seed (default 0); the same arguments always give the same data.
            The id bijections and the label model are fixed, independent of the seed.
        row_group_size: rows per generated chunk and per parquet row group (default
            250,000); peak memory is proportional to it (two chunks in flight; about
            100 MB at the default).
        null_fraction: probability that each ``I``/``C`` value is null (default 0.02;
            0 gives no nulls). ``label`` is never null.

    Returns:
        The paths of the written files, in order (``part-00000.parquet``, ...).

    Raises:
        ValueError: negative ``rows``, ``files < 1``, ``row_group_size < 1`` or
            ``null_fraction`` outside [0, 1].
    """
    _check_args(rows, files, row_group_size)
    if not 0.0 <= null_fraction <= 1.0:
        raise ValueError(f"null_fraction must be in [0, 1], got {null_fraction}")
    return _write_files(out_dir, int(rows), int(files), int(row_group_size), _criteo_schema(),
                        _criteo_chunk_maker(float(null_fraction)), int(seed), stream=1)


# ---------------------------------------------------------------------------
# MovieLens
# ---------------------------------------------------------------------------

_GENRES_TYPE = pa.list_(pa.string())


def _movielens_schema() -> pa.Schema:
    return pa.schema([
        pa.field("userId", pa.int64(), nullable=False),
        pa.field("movieId", pa.int64(), nullable=False),
        pa.field("genres", _GENRES_TYPE),
        pa.field("rating", pa.float32(), nullable=False),
        pa.field("timestamp", pa.int64(), nullable=False),
    ])


def _movie_tables(n_movies: int, seed: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per movie: genre codes (flat, -1 = null element), list offsets, quality.

    Returns ``(codes, starts, lengths, quality)``; movie ``m``'s genres are
    ``codes[starts[m]:starts[m] + lengths[m]]``.
    """
    rng = np.random.default_rng(np.random.SeedSequence([seed, 2, 0]))
    lengths = rng.choice(np.arange(1, 5), size=n_movies, p=[0.40, 0.35, 0.18, 0.07]).astype(np.int64)
    kind = rng.random(n_movies)
    lengths[kind < 0.01] = 0  # ~1% "(no genres listed)": empty list
    null_elem = (kind >= 0.01) & (kind < 0.02)  # ~1% with a null element
    log_w = np.log(_GENRE_WEIGHTS / _GENRE_WEIGHTS.sum())
    picks = np.empty((n_movies, 4), dtype=np.int8)
    block = 1 << 18
    for lo in range(0, n_movies, block):  # Gumbel top-4: weighted choice without replacement
        hi = min(lo + block, n_movies)
        scores = log_w - np.log(-np.log(rng.random((hi - lo, len(_GENRE_WEIGHTS)))))
        picks[lo:hi] = np.argsort(-scores, axis=1)[:, :4]
    keep = np.arange(4)[None, :] < lengths[:, None]
    last = np.clip(lengths - 1, 0, 3)
    picks[np.nonzero(null_elem)[0], last[null_elem]] = -1
    codes = picks[keep]
    starts = np.zeros(n_movies, dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    quality = rng.normal(3.5, 0.5, n_movies).astype(np.float32)
    return codes, starts, lengths, quality


def generate_movielens(rows: int, out_dir: str, *, files: int = 1, seed: int = 0,
                       n_users: int = 162_541, n_movies: int = 62_423,
                       row_group_size: int = 250_000) -> List[str]:
    """Write ``rows`` MovieLens-like ratings as parquet files in ``out_dir``.

    Args:
        rows: total number of ratings (>= 0).
        out_dir: output folder, created if missing.
        files: number of files (default 1), as in :func:`generate_criteo`.
        seed: random seed (default 0); same arguments, same data.
        n_users: distinct users (default 162,541, as in MovieLens 25M); ``userId`` is in
            ``1..n_users``, user activity follows a power law.
        n_movies: distinct movies (default 62,423, as in MovieLens 25M); ``movieId`` is in
            ``1..n_movies``, popularity follows a Zipf-like law (exponent 1.2).
        row_group_size: rows per chunk and per parquet row group (default 250,000).

    Returns:
        The paths of the written files, in order.

    Raises:
        ValueError: negative ``rows``, ``files < 1``, ``n_users < 1``, ``n_movies < 1``
            or ``row_group_size < 1``.
    """
    _check_args(rows, files, row_group_size)
    if n_users < 1 or n_movies < 1:
        raise ValueError(f"n_users and n_movies must be >= 1, got {n_users}, {n_movies}")
    n_users, n_movies = int(n_users), int(n_movies)
    codes, starts, lengths, quality = _movie_tables(n_movies, int(seed))
    user_bias = np.random.default_rng(np.random.SeedSequence([int(seed), 2, 1])) \
        .normal(0.0, 0.4, n_users).astype(np.float32)
    genre_names = pa.array(MOVIELENS_GENRES, type=pa.string())
    u_mult, u_add = _affine_permutation(n_users, 11)
    m_mult, m_add = _affine_permutation(n_movies, 12)
    schema = _movielens_schema()

    def make(rng: np.random.Generator, n: int) -> pa.Table:
        u_rank = _power_law_index(rng.random(n), n_users, 0.8)
        m_rank = _power_law_index(rng.random(n), n_movies, 1.2)
        user = (u_rank * u_mult + u_add) % n_users
        movie = (m_rank * m_mult + m_add) % n_movies
        # genres: the movie's fixed list
        row_len = lengths[movie]
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(row_len, out=offsets[1:])
        total = int(offsets[-1])
        flat_idx = np.repeat(starts[movie] - offsets[:-1], row_len) + np.arange(total, dtype=np.int64)
        flat = codes[flat_idx]
        values = genre_names.take(pa.array(np.maximum(flat, 0).astype(np.int32), mask=flat < 0))
        genres = pa.ListArray.from_arrays(pa.array(offsets), values, type=_GENRES_TYPE)
        # rating: quality + user bias + noise, rounded to 0.5 in [0.5, 5]
        raw = quality[movie] + user_bias[user] + rng.normal(0.0, 0.9, n).astype(np.float32)
        rating = np.clip(np.round(raw * 2.0) / 2.0, 0.5, 5.0).astype(np.float32)
        ts = _TS_MIN + ((_TS_MAX - _TS_MIN) * rng.random(n) ** 0.7).astype(np.int64)
        return pa.Table.from_arrays(
            [pa.array(user + 1), pa.array(movie + 1), genres, pa.array(rating), pa.array(ts)],
            schema=schema)

    return _write_files(out_dir, int(rows), int(files), int(row_group_size), schema, make,
                        int(seed), stream=2)
