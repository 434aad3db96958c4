"""The order a Dataset reads its files in, as merlin-core 23.08 (nvtabular 23.8.0, checked side by
side): a list of paths is sorted by dask's ``natural_sort_key`` (``part_2`` before ``part_10``);
a parquet folder or glob gives its files in natural order too; a csv folder or glob in plain
lexical order (merlin's CSV engine takes ``fs.glob`` as it comes). Before, tabprep read a parquet
folder / glob lexically (``part_1, part_10, part_2``) and a list in the order given, so the rows of
every multi-file job (fit order, ``to_iter``, the files ``to_parquet`` writes) came in another order."""
from __future__ import annotations

import pandas as pd
import pytest

import tabprep as tp
from tabprep.io.paths import expand_paths

NUMBERS = [1, 2, 10, 11]


@pytest.fixture()
def files(tmp_path):
    (tmp_path / "pq").mkdir()
    (tmp_path / "csv").mkdir()
    for i in NUMBERS:
        frame = pd.DataFrame({"x": [i * 100, i * 100 + 1]})
        frame.to_parquet(tmp_path / "pq" / f"part_{i}.parquet", index=False)
        frame.to_csv(tmp_path / "csv" / f"part_{i}.csv", index=False)
    return tmp_path


def _rows(order):
    return [v for i in order for v in (i * 100, i * 100 + 1)]


def _read(src, **kw):
    return tp.Dataset(src, **kw).to_ddf().compute()["x"].tolist()


def test_a_parquet_folder_and_glob_read_in_natural_order(files):
    assert _read(str(files / "pq")) == _rows([1, 2, 10, 11])
    assert _read(str(files / "pq" / "*.parquet")) == _rows([1, 2, 10, 11])


def test_a_list_of_files_is_sorted_naturally_as_merlin_does(files):
    given = [str(files / "pq" / f"part_{i}.parquet") for i in (10, 2, 1)]
    assert _read(given) == _rows([1, 2, 10])
    csvs = [str(files / "csv" / f"part_{i}.csv") for i in (11, 2, 1)]
    assert _read(csvs, engine="csv") == _rows([1, 2, 11])


def test_a_csv_folder_and_glob_keep_lexical_order_as_merlins_csv_engine(files):
    lexical = sorted(NUMBERS, key=lambda i: f"part_{i}.csv")   # 1, 10, 11, 2
    assert _read(str(files / "csv"), engine="csv") == _rows(lexical)
    assert _read(str(files / "csv" / "*.csv"), engine="csv") == _rows(lexical)


def test_expand_paths_gives_the_same_order(files):
    assert [p.rsplit("/", 1)[1] for p in expand_paths(str(files / "pq"))] == [f"part_{i}.parquet" for i in NUMBERS]
