"""merlin-core 23.08's spellings of the schema API, which NVTabular scripts call, kept beside
tabprep's own: :class:`tabprep.schema.ColumnSchema` and :class:`tabprep.schema.Schema` take these
methods from the mixins below (docs/migration.md, *Schema*). Nothing here imports tabprep."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Dict, Iterable, NamedTuple, Optional, Tuple

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


#: merlin-core's ``Tags`` values: a tag given in another case (``"CATEGORICAL"``) is one of these
MERLIN_TAGS = frozenset({
    "categorical", "continuous", "list", "sequence", "text", "tokenized", "time", "embedding", "id", "user", "item",
    "session", "context", "target", "regression", "classification", "binary", "multi_class", "user_id", "item_id",
    "session_id", "text_tokenized", "binary_classification", "multi_class_classification"})


def _tag_names(tags: Any) -> list:
    """``tags`` (one tag or several; strings or enum members) as merlin-core's ``TagSet`` reads
    them, in order: known tags lower-cased, compound tags split into their parts."""
    one = isinstance(tags, str) or not isinstance(tags, Iterable)
    names = [str(getattr(t, "value", t)) for t in ([tags] if one else tags)]
    names = [t.lower() if t.lower() in MERLIN_TAGS else t for t in names]
    return [p for t in names for p in COMPOUND_TAGS.get(t, (t,))]


def resolve_tags(tags: Any) -> tuple:
    """A column's tags as merlin-core's ``TagSet`` keeps them: compound tags split, and each tag
    drops the earlier ones it collides with (:data:`TAG_COLLISIONS`; the later tag wins, as
    ``TagSet.override``), so ``existing + added`` gives the tags after adding ``added``."""
    out: list = []
    for tag in _tag_names(tags):
        drop = TAG_COLLISIONS.get(tag, ())
        out = [t for t in out if t not in drop and t != tag] + [tag]
    return tuple(out)


def tag_query(tags: Any, pred_fn: Any = None) -> Tuple[list, Any]:
    """merlin-core's ``select_by_tag`` query: the tags' parts, and the predicate (``any`` unless
    given; ``all`` for ONE compound tag, whose parts a column must all carry, whatever was given)."""
    given = [tags] if isinstance(tags, str) or not isinstance(tags, Iterable) else list(tags)
    names = list(dict.fromkeys(_tag_names(given)))
    if len(given) == 1 and len(names) > 1:
        return names, all
    return names, pred_fn or any


@dataclass(frozen=True)
class Dimension:
    """merlin-core's ``Dimension``: the sizes one dimension of a column can take, ``min`` to
    ``max`` (None: unbounded). ``Dimension(3, 3)`` is a fixed size 3; ``Dimension()`` is unknown."""

    min: int = 0
    max: Optional[int] = None

    def __post_init__(self) -> None:
        if self.min is None:
            raise ValueError("The minimum size of a dimension cannot be None")
        for what, v in (("minimum", self.min), ("maximum", self.max)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer))):
                raise ValueError(f"The {what} size of a dimension must be an integer, got {type(v).__name__} {v!r}")
        if self.min < 0 or (self.max is not None and self.max < 0):
            raise ValueError(f"The sizes of a dimension must be non-negative, got min={self.min} max={self.max}")
        if self.max is not None and self.max < self.min:
            raise ValueError(f"The maximum size of a dimension must be at least as large as the minimum size, "
                             f"got min={self.min} max={self.max}")
        object.__setattr__(self, "min", int(self.min))
        object.__setattr__(self, "max", None if self.max is None else int(self.max))

    def __int__(self) -> int:
        if self.is_fixed:
            return int(self.max)  # type: ignore[arg-type]
        raise ValueError(f"Can't convert {self} without a fixed size to an integer")

    @property
    def is_bounded(self) -> bool:
        return self.max is not None

    @property
    def is_fixed(self) -> bool:
        return self.max is not None and self.min == self.max

    @property
    def is_variable(self) -> bool:
        return not self.is_fixed

    @property
    def is_unknown(self) -> bool:
        return self.min == 0 and self.max is None

    def with_min(self, value: int) -> "Dimension":
        return replace(self, min=value)

    def with_max(self, value: Optional[int]) -> "Dimension":
        return replace(self, max=value)


def _dimension(dim: Any, dims: Any) -> Dimension:
    if isinstance(dim, Dimension):
        return dim
    if dim is None:
        return Dimension()
    if isinstance(dim, (int, np.integer)) and not isinstance(dim, bool):
        return Dimension(int(dim), int(dim))
    if isinstance(dim, (tuple, list)) and len(dim) == 2:
        return Dimension(dim[0], dim[1])
    raise ValueError(f"Invalid shape {dims!r}: each dimension is None, an int (a fixed size) or a (min, max) pair, "
                     f"got {dim!r}")


@dataclass(frozen=True, eq=False)
class Shape:
    """merlin-core's ``Shape``: one :class:`Dimension` per axis of a column, the batch (rows)
    first: ``((0, None),)`` a scalar column, ``((0, None), (1, 5))`` a list of 1 to 5 values,
    ``((0, None), 100, 10)`` a fixed 100 x 10 nested list. Dimensions are given as None
    (unknown), an int (fixed) or a ``(min, max)`` pair. ``Shape()`` (``dims`` None) is an unknown
    shape, equal to any shape, as in merlin-core."""

    dims: Optional[Tuple[Dimension, ...]] = None

    def __post_init__(self) -> None:
        dims = self.dims
        if isinstance(dims, Shape):
            dims = dims.dims
        if dims is not None:
            dims = tuple(_dimension(d, self.dims) for d in dims)
        object.__setattr__(self, "dims", dims)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Shape):
            return False
        return self.dims is None or other.dims is None or self.dims == other.dims

    def __hash__(self) -> int:
        return hash(self.dims)

    def __iter__(self) -> Any:
        return iter(self.dims or ())

    def __len__(self) -> int:
        return len(self.dims or ())

    def __getitem__(self, index: int) -> Dimension:
        return (self.dims or ())[index]

    def __repr__(self) -> str:
        return f"Shape({self.as_tuple!r})"

    def with_dim(self, index: int, value: Any) -> "Shape":
        dims = list(self.dims or ())
        dims[index] = _dimension(value, self.dims)
        return Shape(tuple(dims))

    def with_dim_min(self, index: int, value: int) -> "Shape":
        return self.with_dim(index, self[index].with_min(value))

    def with_dim_max(self, index: int, value: Optional[int]) -> "Shape":
        return self.with_dim(index, self[index].with_max(value))

    @property
    def min(self) -> Tuple[int, ...]:
        return tuple(d.min for d in self)

    @property
    def max(self) -> Tuple[Optional[int], ...]:
        return tuple(d.max for d in self)

    @property
    def is_bounded(self) -> bool:
        return all(d.is_bounded for d in self)

    @property
    def is_fixed(self) -> bool:
        return all(d.is_fixed for d in self)

    @property
    def is_variable(self) -> bool:
        return not self.is_fixed

    @property
    def is_list(self) -> bool:
        return self.dims is not None and len(self.dims) > 1

    @property
    def is_ragged(self) -> bool:
        return self.is_list and any(not d.is_fixed for d in self.dims[1:])  # type: ignore[index]

    @property
    def is_unknown(self) -> bool:
        return self.dims is None

    @property
    def as_tuple(self) -> Optional[tuple]:
        """The dims as merlin-core writes them: an int for a fixed size, ``(min, max)`` otherwise."""
        if not self.dims:
            return None
        return tuple(d.max if d.is_fixed else (d.min, d.max) for d in self.dims)


def _count(dim: Dimension) -> Optional[Dict[str, int]]:
    """tabprep's ``value_count`` of a list dimension (None where the longest row is unknown)."""
    return None if dim.max is None else {"min": dim.min, "max": dim.max}


class MerlinColumnSchema:
    """``with_name`` / ``with_tags`` / ``with_properties`` / ``with_dtype``, ``int_domain`` /
    ``float_domain`` of merlin-core's ``ColumnSchema`` (copies; the column is frozen)."""

    def with_name(self, name: str) -> Any:
        """A copy named ``name``."""
        return replace(self, name=name)  # type: ignore[type-var]

    def with_tags(self, tags: Any) -> Any:
        """A copy with ``tags`` (one tag or a list) added, as merlin-core's ``TagSet.override``: the
        existing tags they collide with (``categorical`` / ``continuous`` / ``embedding`` / ``id``)
        are dropped, compound tags (``user_id``: ``user`` + ``id``) split (:func:`resolve_tags`, in
        the constructor)."""
        return replace(self, tags=tuple(self.tags) + tuple(_tag_names(tags)))  # type: ignore

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
    def shape(self) -> Shape:
        """merlin-core's ``shape``: the rows' dimension ``(0, None)``, then per list level the
        lengths (``value_count`` / ``value_counts``; ``(0, None)`` where unknown):
        ``((0, None),)`` for a scalar column, ``((0, None), (1, 5))`` for a list column of 1 to 5
        values, ``((0, None), 3)`` for a fixed length 3."""
        rows = Dimension()
        if not self.is_list:  # type: ignore[attr-defined]
            return Shape((rows,))
        depth = self.depth  # type: ignore[attr-defined]
        counts = list(self.value_counts or [])  # type: ignore[attr-defined]
        if depth == 1 or not counts:
            counts = [self.value_count] + [None] * (depth - 1)  # type: ignore[attr-defined]
        levels = [Dimension(int(c.get("min") or 0), None if c.get("max") is None else int(c["max"]))
                  if c else Dimension() for c in counts[:depth]]
        return Shape((rows, *levels))

    @property
    def dims(self) -> Tuple[Dimension, ...]:
        """The dimensions of :attr:`shape` (merlin-core 23.08's ``ColumnSchema.dims`` is the
        constructor's ``dims`` argument and reads None afterwards; docs/migration.md)."""
        return self.shape.dims  # type: ignore[return-value]

    def with_shape(self, shape: Any) -> Any:
        """A copy of shape ``shape`` (a :class:`Shape` or a tuple of dims, rows first), as
        merlin-core's ``with_shape``: one dim makes a scalar column, two a list column whose
        ``value_count`` is the second dim (ragged unless it is fixed), more a nested list (one
        ``value_counts`` entry per level). The element dtype, tags and other properties are kept;
        the rows' dimension is not stored (tabprep does not record it). A list dimension of unknown
        maximum gives an unknown ``value_count`` (its minimum is not kept)."""
        shape = shape if isinstance(shape, Shape) else Shape(shape)
        leaf = self.leaf_dtype  # type: ignore[attr-defined]
        props = {k: v for k, v in self.properties.items() if k != "value_count"}  # type: ignore[attr-defined]
        if not shape.is_list:
            return replace(self, dtype=leaf, is_list=False, is_ragged=False, value_count=None,  # type: ignore
                           value_counts=None, properties=props)
        levels = shape.dims[1:]  # type: ignore[index]
        nested = len(levels) > 1
        dtype = "list<" * (len(levels) - 1) + leaf + ">" * (len(levels) - 1)
        return replace(self, dtype=dtype, is_list=True, is_ragged=shape.is_ragged,  # type: ignore[type-var]
                       value_count=_count(levels[0]), properties=props,
                       value_counts=[_count(d) for d in levels] if nested else None)

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

    def to_pandas(self) -> Any:
        """merlin-core's ``to_pandas``: one row per column, ``name``, ``tags`` (a set of tag
        strings; merlin's is a ``TagSet``), ``dtype`` (tabprep's dtype string; merlin's is a
        ``DType``), ``is_list``, ``is_ragged``, then the properties flattened
        (``properties.domain.min``...; NaN where a column lacks one), as ``pandas.json_normalize``."""
        import pandas as pd

        rows = [{"name": c.name, "tags": set(c.tags), "dtype": c.dtype, "is_list": bool(c.is_list),
                 "is_ragged": bool(c.is_ragged), "properties": dict(c.properties)} for c in self]  # type: ignore
        if not rows:
            return pd.DataFrame()
        return pd.json_normalize(rows)


#: what merlin-core's ``extraMetadata`` holds about the layout, which tabprep reads from the files
_MERLIN_LAYOUT_KEYS = ("_dims", "is_list", "is_ragged", "dtype_item_size")


def _whole(v: Any) -> Any:
    """A JSON number merlin wrote (ints as floats or strings) as an int where it is whole."""
    if isinstance(v, str):
        v = float(v)
    return int(v) if isinstance(v, float) and v.is_integer() else v


def merlin_json_columns(data: Dict[str, Any]) -> Dict[str, Tuple[tuple, Dict[str, Any]]]:
    """``{column: (tags, properties)}`` of merlin-core's ``.merlin/schema.json`` (TensorFlow
    metadata's JSON, as NVTabular 23.08's ``to_parquet`` writes it): tags from ``annotation.tag``,
    ``properties["domain"]`` from ``intDomain`` / ``floatDomain`` (``min`` 0 when not written, as
    merlin reads it), a list's ``valueCount`` as ``value_count``, the other properties from
    ``annotation.extraMetadata`` (numbers written as floats made ints again). Names, dtypes and
    whether a column is a list come from the files themselves."""
    out: Dict[str, Tuple[tuple, Dict[str, Any]]] = {}
    for feature in data.get("feature", []):
        ann = feature.get("annotation", {})
        props: Dict[str, Any] = {}
        for extra in ann.get("extraMetadata", []):
            props.update({k: v for k, v in extra.items() if k not in _MERLIN_LAYOUT_KEYS})
        if isinstance(props.get("embedding_sizes"), dict):
            sizes = props["embedding_sizes"] = {k: _whole(v) for k, v in props["embedding_sizes"].items()}
            # tabprep's spelling of the same pair (what get_embedding_sizes reads)
            props.setdefault("cardinality", sizes.get("cardinality"))
            props.setdefault("embedding_dim", sizes.get("dimension"))
        counts = feature.get("valueCount")
        if isinstance(counts, dict) and counts.get("max") is not None:   # a list's lengths, as merlin measured them
            props["value_count"] = {"min": _whole(counts.get("min", 0)), "max": _whole(counts["max"])}
        for key in ("intDomain", "floatDomain"):
            dom = feature.get(key)
            if dom is not None:
                props["domain"] = {"min": _whole(dom.get("min", 0)), "max": _whole(dom.get("max", 0)),
                                   **({"name": dom["name"]} if "name" in dom else {})}
        out[feature["name"]] = (tuple(ann.get("tag", ())), props)
    return out
