"""AddMetadata / AddTags / AddProperties: change column schemas only, never values."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from ..schema import ColumnSchema, Tags, _jsonable
from .base import Operator
from .embeddings import with_embedding_sizes_in_step


class AddMetadata(Operator):
    """Add tags and/or properties to the selected columns' schemas; values pass through unchanged.

    Tags are strings (the well-known ones are in :class:`tabprep.Tags`: ``"user"``,
    ``"item"``, ``"target"``...) and are added to the columns' existing tags. Properties are a
    JSON-able dict merged into the columns' properties (a key already there is replaced).
    Nulls, list columns and dtypes are untouched.

    Args:
        tags: tags to add.
        properties: properties to set.

    Example:
        >>> user = ["user_id"] >> Categorify() >> AddMetadata(tags=["user", "id"], properties={"domain_name": "users"})
    """

    supports_lists = True
    passes_opaque = True  # struct / decimal / binary columns flow through (issue #30)

    def __init__(self, tags: Optional[Sequence[str]] = None, properties: Optional[Dict[str, Any]] = None) -> None:
        if isinstance(tags, str):
            raise TypeError(f"tags must be a list of strings, got the string {tags!r}; write tags=[{tags!r}]")
        if tags is not None and not all(isinstance(t, str) for t in tags):
            raise TypeError(f"tags must be strings, got {list(tags)!r}")
        if properties is not None and not isinstance(properties, dict):
            raise TypeError(f"properties must be a dict, got {type(properties).__name__}")
        self.tags = tags
        self.properties = properties

    @property
    def output_tags(self) -> tuple:  # type: ignore[override]
        return tuple(self.tags or ())

    def transform(self, columns: List[str], df: Any) -> Any:
        return df[list(columns)]

    def column_schema(self, col: ColumnSchema) -> ColumnSchema:
        added = _jsonable(dict(self.properties or {}))
        col = col.with_(add_tags=list(self.tags or ()), add_properties=added)
        if not added:
            return col
        # the table size: one number whichever spelling the user set (get_embedding_sizes agrees)
        return col.with_(properties=with_embedding_sizes_in_step(col.properties, added))


class AddTags(AddMetadata):
    """Add ``tags`` to the selected columns' schemas (:class:`AddMetadata` with tags only).

    Example:
        >>> ["click"] >> AddTags(["target", "binary"])
    """

    def __init__(self, tags: Optional[Sequence[str]] = None) -> None:
        super().__init__(tags=tags)


class AddProperties(AddMetadata):
    """Set ``properties`` in the selected columns' schemas (:class:`AddMetadata` with properties only).

    Example:
        >>> ["item_id"] >> Categorify() >> AddProperties({"embedding_dim": 64})
    """

    def __init__(self, properties: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(properties=properties)


class TagAsUserID(AddTags):
    """Tag the selected columns ``id`` and ``user`` (NVTabular 23.08's ``TagAsUserID``)."""

    def __init__(self, tags: Optional[Sequence[str]] = None) -> None:
        super().__init__(tags=[Tags.ID, Tags.USER])


class TagAsItemID(AddTags):
    """Tag the selected columns ``id`` and ``item`` (NVTabular 23.08's ``TagAsItemID``)."""

    def __init__(self, tags: Optional[Sequence[str]] = None) -> None:
        super().__init__(tags=[Tags.ID, Tags.ITEM])


class TagAsUserFeatures(AddTags):
    """Tag the selected columns ``user`` (NVTabular 23.08's ``TagAsUserFeatures``)."""

    def __init__(self, tags: Optional[Sequence[str]] = None) -> None:
        super().__init__(tags=[Tags.USER])


class TagAsItemFeatures(AddTags):
    """Tag the selected columns ``item`` (NVTabular 23.08's ``TagAsItemFeatures``)."""

    def __init__(self, tags: Optional[Sequence[str]] = None) -> None:
        super().__init__(tags=[Tags.ITEM])
