"""Embedding sizes (cardinality, dimension) of a fitted workflow's categorical outputs."""
from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from ..schema import Schema, Tags


def embedding_dim_rule(cardinality: int, minimum: int = 16, maximum: int = 512) -> int:
    """Default embedding dimension: ``round(1.6 * cardinality ** 0.56)``, clamped to [16, 512].

    This is fastai's rule of thumb (also NVTabular's), bounded so that tiny vocabularies
    still get a usable width and huge ones do not explode memory. Override it per column with
    ``embedding_dim=`` on Categorify / HashBucket.
    """
    return int(min(maximum, max(minimum, round(1.6 * cardinality ** 0.56))))


def embedding_sizes_property(cardinality: int, dim: Any = None) -> Dict[str, int]:
    """The ``properties["embedding_sizes"]`` NVTabular 23.08 writes on Categorify / HashBucket
    outputs: ``{"cardinality": rows of the embedding table, "dimension": dim}``, ``dim`` being the
    op's ``embedding_dim`` override, else :func:`embedding_dim_rule` (NVTabular's ``_emb_sz_rule``).
    The same pair :func:`get_embedding_sizes` returns for the column."""
    card = int(cardinality)
    return {"cardinality": card, "dimension": int(dim) if dim is not None else embedding_dim_rule(card)}


def with_embedding_sizes_in_step(props: Dict[str, Any], added: Dict[str, Any]) -> Dict[str, Any]:
    """``props`` (a column's properties, ``added`` already merged in) with ``cardinality`` /
    ``embedding_dim`` and NVTabular's ``embedding_sizes`` agreeing again after a user set one of
    them (``AddProperties``): an added ``embedding_sizes`` (NVTabular's spelling, what its
    ``get_embedding_sizes`` reads) sets the other two; an added ``embedding_dim`` or
    ``cardinality`` rewrites ``embedding_sizes``."""
    out = dict(props)
    es = added.get("embedding_sizes")
    if isinstance(es, dict) and es.get("cardinality") is not None and es.get("dimension") is not None:
        out["cardinality"] = int(es["cardinality"])
        out["embedding_dim"] = int(es["dimension"])
    elif ("embedding_dim" in added or "cardinality" in added) and out.get("cardinality") is not None:
        out["embedding_sizes"] = embedding_sizes_property(out["cardinality"], out.get("embedding_dim"))
    return out


def embedding_sizes_from_schema(schema: Schema) -> Dict[str, Tuple[int, int]]:
    out: Dict[str, Tuple[int, int]] = {}
    for col in schema:
        if Tags.CATEGORICAL not in col.tags or col.cardinality is None:
            continue
        dim = col.properties.get("embedding_dim")
        out[col.name] = (col.cardinality, int(dim) if dim is not None else embedding_dim_rule(col.cardinality))
    return out


def get_embedding_sizes(workflow: Any, multihot: Optional[bool] = None) -> Any:
    """``{column: (cardinality, dim)}`` for every categorical output column of a fitted workflow,
    as NVTabular 23.08's ``get_embedding_sizes``.

    Args:
        workflow: a fitted :class:`tabprep.Workflow` (or a :class:`Schema`).
        multihot: ``None`` (default, NVTabular's rule): one dict while no output is multi-hot, and
            the pair ``(single_hot, multi_hot)`` as soon as one is (a list column that is ragged;
            a fixed-length list counts as single-hot, as in NVTabular). ``True``: always the pair;
            ``False``: always one dict of every column.
    """
    schema = workflow if isinstance(workflow, Schema) else workflow.output_schema
    sizes = embedding_sizes_from_schema(schema)
    multi = {k: v for k, v in sizes.items() if schema[k].is_list and schema[k].is_ragged}
    if multihot is False or (multihot is None and not multi):
        return sizes
    return {k: v for k, v in sizes.items() if k not in multi}, multi
