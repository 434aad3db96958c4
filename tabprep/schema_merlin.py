"""merlin-core 23.08's spellings of the schema API, which NVTabular scripts call, kept beside
tabprep's own: :class:`tabprep.schema.ColumnSchema` and :class:`tabprep.schema.Schema` take these
methods from the mixins below (docs/migration.md, *Schema*). Nothing here imports tabprep."""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Dict, Iterable, NamedTuple, Optional

import numpy as np

#: tags a column cannot carry together (merlin-core's TAG_COLLISIONS): ``with_tags`` and the merge
#: of a column's schemas drop the existing tags that collide with the added ones
TAG_COLLISIONS = {
    "categorical": ("continuous", "embedding"),
    "continuous": ("categorical", "embedding", "id"),
    "embedding": ("continuous", "categorical", "id"),
    "id": ("continuous", "embedding"),
}

#: merlin-core's COMPOUND_TAGS: ``with_tags`` expands them
COMPOUND_TAGS = {"user_id": ("user", "id"), "item_id": ("item", "id"), "session_id": ("session", "id"),
                 "text_tokenized": ("text", "tokenized")}


class Domain(NamedTuple):
    """merlin-core's ``Domain``: a column's ``min``, ``max`` and ``name`` (``int_domain``)."""

    min: Any = None
    max: Any = None
    name: Optional[str] = None


def _tag_names(tags: Any) -> list:
    one = isinstance(tags, str) or not isinstance(tags, Iterable)
    names = [str(getattr(t, "value", t)) for t in ([tags] if one else tags)]
    return [p for t in names for p in COMPOUND_TAGS.get(t, (t,))]


class MerlinColumnSchema:
    """``with_name`` / ``with_tags`` / ``with_properties`` / ``with_dtype``, ``int_domain`` /
    ``float_domain`` of merlin-core's ``ColumnSchema`` (copies; the column is frozen)."""

    def with_name(self, name: str) -> Any:
        """A copy named ``name``."""
        return replace(self, name=name)  # type: ignore[type-var]

    def with_tags(self, tags: Any) -> Any:
        """A copy with ``tags`` (one tag or a list) added, as merlin-core's ``TagSet.override``: the
        existing tags they collide with (``categorical`` / ``continuous`` / ``embedding`` / ``id``)
        are dropped, compound tags (``user_id``: ``user`` + ``id``) expanded."""
        new = _tag_names(tags)
        drop = {t for tag in new for t in TAG_COLLISIONS.get(tag, ())}
        return replace(self, tags=tuple(t for t in self.tags if t not in drop) + tuple(new))  # type: ignore

    def with_properties(self, properties: Dict[str, Any]) -> Any:
        """A copy with ``properties`` merged over the existing ones (a list's ``value_count`` given
        here becomes its count)."""
        if not isinstance(properties, dict):
            raise TypeError(f"ColumnSchema.with_properties takes a dict, got {type(properties).__name__}")
        changes: Dict[str, Any] = {"properties": {**self.properties, **properties}}  # type: ignore[attr-defined]
        if isinstance(properties.get("value_count"), dict):
            changes.update(value_count=None, is_list=True)
        return replace(self, **changes)  # type: ignore[type-var]

    def with_dtype(self, dtype: Any, is_list: Optional[bool] = None, is_ragged: Optional[bool] = None) -> Any:
        """A copy of dtype ``dtype`` (list-ness changed only where given); tags and properties kept."""
        changes: Dict[str, Any] = {"dtype": dtype}
        changes.update({k: v for k, v in (("is_list", is_list), ("is_ragged", is_ragged)) if v is not None})
        return self.with_(**changes)  # type: ignore[attr-defined]

    @property
    def int_domain(self) -> Optional[Domain]:
        """``properties["domain"]`` as a :class:`Domain` for an integer column, else None."""
        return self._domain("iu")

    @property
    def float_domain(self) -> Optional[Domain]:
        """``properties["domain"]`` as a :class:`Domain` for a float column, else None."""
        return self._domain("f")

    def _domain(self, kinds: str) -> Optional[Domain]:
        dom = self.properties.get("domain")  # type: ignore[attr-defined]
        try:
            kind = np.dtype(self.leaf_dtype).kind  # type: ignore[attr-defined]
        except TypeError:  # str and other non-numpy names
            kind = ""
        if not isinstance(dom, dict) or kind not in kinds:
            return None
        return Domain(dom.get("min"), dom.get("max"), dom.get("name"))


class MerlinSchema:
    """``select_by_name``, ``excluding_by_name``, ``remove_col``, ``remove_by_tag``, ``excluding``,
    ``apply``, ``apply_inverse``, ``get``, ``first`` and ``copy`` of merlin-core's ``Schema`` (new
    schemas; this one unchanged)."""

    def select_by_name(self, names: Any) -> Any:
        """The columns ``names`` in the order given; names not in the schema are skipped."""
        names = [names] if isinstance(names, str) else list(names)
        return type(self)(self[n] for n in names if n in self)  # type: ignore

    def excluding_by_name(self, names: Any) -> Any:
        """= ``without``."""
        return self.without(names)  # type: ignore[attr-defined]

    def remove_col(self, name: str) -> Any:
        """The schema less the column ``name``."""
        return self.without([name])  # type: ignore[attr-defined]

    def remove_by_tag(self, tags: Any, pred_fn: Any = None) -> Any:
        """= ``excluding_by_tag``."""
        return self.excluding_by_tag(tags, pred_fn=pred_fn)  # type: ignore[attr-defined]

    def excluding(self, selector: Any) -> Any:
        """The columns a ``ColumnSelector`` (or a list of names) does not select."""
        if selector is None:
            return self
        if not hasattr(selector, "all_names"):  # a list of names
            return self.without(selector)  # type: ignore[attr-defined]
        if selector.all:
            return type(self)()
        out = self.without(selector.all_names)  # type: ignore[attr-defined]
        return out.excluding_by_tag(selector.tags) if selector.tags else out

    def apply(self, selector: Any) -> Any:
        """= ``select`` (the whole schema for None)."""
        return self if selector is None else self.select(selector)  # type: ignore[attr-defined]

    def apply_inverse(self, selector: Any) -> Any:
        """= :meth:`excluding`."""
        return self.excluding(selector)

    def get(self, name: str, default: Any = None) -> Any:
        """The column ``name``, or ``default`` when it is not in the schema."""
        return self[name] if name in self else default  # type: ignore

    @property
    def first(self) -> Any:
        """The first column (``ValueError`` for an empty schema)."""
        for col in self:  # type: ignore[attr-defined]
            return col
        raise ValueError("There are no columns in this schema to call .first on")

    def copy(self) -> Any:
        return type(self)(list(self))  # type: ignore[call-overload]
