"""NVTabular 23.08's reduction and storage arguments of the grouped-statistics ops (Categorify,
TargetEncoding, JoinGroupby), which migrating pipelines pass as they are
(``Categorify(freq_threshold=..., out_path=..., cat_cache="host", split_out=...)``).

Performance knobs of NVTabular's dask reduction (``cat_cache``, ``on_host``, ``split_out``,
``split_every``, ``tree_width``, ``cardinality_memory_limit``, ``search_sorted``) are accepted
and stored; they change no id or value (tabprep's fit merges the statistics per key in its own
tasks, see ``StatOperator.per_key``). ``out_path`` (where NVTabular writes its statistics files)
warns: tabprep keeps them in the workflow. A ``name_sep`` other than ``"_"`` is an error.
"""
from __future__ import annotations

from typing import Any, Optional

from .._warn import warn_difference


def check_nvt_args(label: str, name_sep: Any = "_", out_path: Optional[Any] = None) -> None:
    """Refuse what would silently differ (``name_sep``); warn at build for ``out_path``."""
    if name_sep != "_":
        raise ValueError(f"{label}(name_sep={name_sep!r}): tabprep names column groups with '_' "
                         f"(NVTabular's default), e.g. 'a_b'; another name_sep is not supported. Keep "
                         f"name_sep='_' and rename the outputs with ops.Rename(f=...)")
    if out_path is not None:
        warn_difference(f"{label}(out_path={str(out_path)!r}): tabprep keeps the fitted statistics in the workflow "
                        f"and writes them with Workflow.save(path); nothing is written to out_path (NVTabular 23.08 "
                        f"writes its statistics files there).{_CATEGORIES if label == 'Categorify' else ''}",
                        stacklevel=3, at_build=True)


_CATEGORIES = (" op.categories writes NVTabular's unique.<column>.parquet files (values in id order) on demand "
               "and gives their paths")
