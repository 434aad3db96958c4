"""MovieLens-like offline ETL: ids + a multi-hot genres list + rating -> binary label, embedding sizes.

    python examples/movielens_etl.py                 # 500k generated ratings
    python examples/movielens_etl.py --rows 5000000 --out /tmp/ml

Generates a MovieLens-like dataset locally (userId, movieId, genres as a parquet list of
strings, rating, timestamp), fits a workflow (Categorify on the ids and, element-wise, on the
genres; label = rating >= 4), writes parquet split for 2 training workers, saves the workflow
and prints the embedding sizes for single- and multi-hot columns.
"""
from __future__ import annotations

import argparse
import os
import tempfile
from typing import Any, Dict, List, Optional

import tabprep as tp
from tabprep import ops
from tabprep.io.synthetic import generate_movielens


# saved workflows store user functions by name and Workflow.load resolves only registered names:
# a stable name works when this file runs as a script (module ``__main__``) too; a process that
# loads the saved workflow registers it again by importing this module
@tp.register_function(name="movielens_etl.liked")
def liked(rating: Any) -> Any:
    """Binary label: 1 when the rating is 4 stars or more."""
    return (rating >= 4.0).astype("int8")


def build_workflow() -> tp.Workflow:
    liked_fn = liked
    ids = ["userId", "movieId"] >> ops.Categorify(freq_threshold=2)
    genres = ["genres"] >> ops.Categorify()            # multi-hot: one vocabulary over all elements
    label = ["rating"] >> ops.LambdaOp(liked_fn, dtype="int8", tags=["target"]) >> ops.Rename(name="label")
    return tp.Workflow(ids + genres + label)


def main(argv: Optional[List[str]] = None) -> Dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=500_000)
    ap.add_argument("--out", default=None, help="work folder (default: a temporary one)")
    args = ap.parse_args(argv)
    work = args.out or tempfile.mkdtemp(prefix="tabprep-movielens-")
    raw = os.path.join(work, "raw")
    generate_movielens(args.rows, raw, files=2, seed=0)
    wf = build_workflow()
    ds = tp.Dataset(raw)
    wf.fit(ds)
    meta = wf.transform(ds).to_parquet(os.path.join(work, "train"), split_per_worker=2, overwrite=True)
    wf.save(os.path.join(work, "workflow"))
    single, multi = tp.get_embedding_sizes(wf, multihot=True)
    print(f"wrote {meta['rows']:,} rows for 2 workers to {os.path.join(work, 'train')}")
    print("embedding sizes (cardinality, dim), single-hot:", single)
    print("embedding sizes (cardinality, dim), multi-hot: ", multi)
    return {"single": single, "multi": multi, "rows": meta["rows"], "schema": wf.output_schema}


if __name__ == "__main__":
    main()
