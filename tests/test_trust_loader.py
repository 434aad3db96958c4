"""The Keras loader never lets one column silently replace another (issue #11)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

tf = pytest.importorskip("tensorflow")

import tabprep as tp  # noqa: E402
from tabprep.loader.tensorflow import KerasSequenceLoader  # noqa: E402

pytestmark = pytest.mark.tf


def test_scalar_column_named_like_a_list_columns_lengths_is_refused(tmp_path):
    rng = np.random.default_rng(0)
    n = 64
    df = pd.DataFrame({"genres": [list(rng.integers(0, 9, rng.integers(1, 4))) for _ in range(n)],
                       "genres__nnzs": rng.integers(100, 200, n),
                       "label": rng.integers(0, 2, n).astype("float32")})
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), str(tmp_path / "d.parquet"))
    with pytest.raises(ValueError, match=r"(?s)genres__nnzs.*genres|genres.*genres__nnzs"):
        loader = KerasSequenceLoader(tp.Dataset(str(tmp_path / "d.parquet")), batch_size=16,
                                     cat_names=["genres", "genres__nnzs"], label_names=["label"])
        for x, _ in loader:
            # without the check, the batch's lengths are the scalar column's values
            assert x["genres__nnzs"].numpy().ravel().tolist() != df["genres__nnzs"][:16].tolist()
            break
