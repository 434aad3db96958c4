"""Column schema: names, dtypes, tags and properties of a dataset's columns.

A :class:`Schema` travels with every transformed dataset (written next to parquet
and TFRecord output as ``_schema.json``) and with every saved workflow, so readers,
loaders and embedding layers never have to guess dtypes or cardinalities.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from . import backend
# dtype names and the input contract live in dtypes.py; re-exported so `from tabprep.schema import ...` works as before
from .dtypes import (  # noqa: F401
    CAST_HINT, _OPAQUE, _OPAQUE_FIXES, _TIME, _arrow_dtype_name, _cudf_element_name, _is_arrow_list, _is_opaque_arrow,
    check_bucket_dtype, check_id_dtype, drift_message, dtype_kind, dtypes_compatible, kind_mismatch_message,
    normalize_dtype, opaque_column_fix, plural, time_parts, unit_drift,
)
from .schema_merlin import TAG_COLLISIONS as _TAG_COLLISIONS
from .schema_merlin import resolve_tags, tag_query
from .schema_merlin import Dimension, Domain, MerlinColumnSchema, MerlinSchema, Shape  # noqa: F401


class Tags:
    """Well-known column tags (strings, so user tags mix freely with them)."""

    CATEGORICAL = "categorical"
    CONTINUOUS = "continuous"
    LIST = "list"
    TARGET = "target"
    BINARY = "binary"
    HASHED = "hashed"
    ID = "id"
    USER = "user"
    ITEM = "item"
    # the rest of merlin-core's Tags (merlin.schema.Tags), same strings
    SEQUENCE = "sequence"
    TEXT = "text"
    TOKENIZED = "tokenized"
    TIME = "time"
    EMBEDDING = "embedding"
    SESSION = "session"
    CONTEXT = "context"
    REGRESSION = "regression"
    CLASSIFICATION = "classification"
    MULTI_CLASS = "multi_class"
    USER_ID = "user_id"
    ITEM_ID = "item_id"
    SESSION_ID = "session_id"
    TEXT_TOKENIZED = "text_tokenized"
    BINARY_CLASSIFICATION = "binary_classification"
    MULTI_CLASS_CLASSIFICATION = "multi_class_classification"


@dataclass(frozen=True)
class ColumnSchema(MerlinColumnSchema):
    """Description of one column.

    Attributes:
        name: column name.
        dtype: canonical dtype string of the values (for list columns, of the elements).
        tags: sorted tuple of tags, e.g. ``("categorical",)``, kept as merlin-core's ``TagSet``:
            compound tags split (``user_id`` -> ``id``, ``user``), and of colliding tags given
            (``categorical`` / ``continuous`` / ``embedding`` / ``id``) the later one kept.
        properties: free-form JSON-able metadata; ops add e.g. ``cardinality``,
            ``embedding_dim``, ``num_buckets``, ``domain`` (``{"min": .., "max": ..}``).
        is_list: True for multi-hot (list) columns.
        is_ragged: True when list lengths vary (False for fixed-length lists).
        value_count: ``{"min": int, "max": int}`` list lengths when known, else None (of a
            nested column: the lengths of its rows, i.e. of the outermost level).
        value_counts: nested list columns only (``dtype`` ``"list<int64>"`` for
            ``list<list<int64>>``): ``[{"min": .., "max": ..}, ...]`` per level, outermost first,
            when known (``ValueCount`` records them); ``[100, 10]`` is :attr:`fixed_shape` when every
            level has one length. None otherwise (and not written to JSON).
    """

    name: str
    dtype: str = "float64"
    tags: tuple = ()
    properties: Dict[str, Any] = field(default_factory=dict)
    is_list: bool = False
    is_ragged: bool = False
    value_count: Optional[Dict[str, int]] = None
    value_counts: Optional[List[Optional[Dict[str, int]]]] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", normalize_dtype(self.dtype))
        object.__setattr__(self, "tags", tuple(sorted(resolve_tags(self.tags))))
        # merlin-core keeps a list column's lengths in properties["value_count"], and NVTabular's
        # Categorify names its domain (properties["domain"]["name"]: the vocabulary); the fields
        # stay the truth and properties mirror them, so both spellings read the same
        props = dict(self.properties)
        vc = self.value_count
        given = props.get("value_count")
        if vc is None and self.is_list and isinstance(given, dict) and given.get("max") is not None:
            vc = {"min": int(given.get("min", given["max"]) or 0), "max": int(given["max"])}  # merlin's spelling
        if self.is_list and vc is not None:
            props["value_count"] = dict(vc)
        elif self.is_list:  # unknown lengths: merlin-core's open count, as NVTabular writes it
            props["value_count"] = {"min": 0, "max": None}
        else:
            props.pop("value_count", None)
        dom = props.get("domain")
        if isinstance(dom, dict) and "name" not in dom and props.get("vocabulary") is not None:
            props["domain"] = {**dom, "name": str(props["vocabulary"])}  # Categorify's, as NVTabular names it
        object.__setattr__(self, "value_count", vc)
        object.__setattr__(self, "properties", props)
        if self.value_counts is not None:
            object.__setattr__(self, "value_counts", [None if v is None else dict(v) for v in self.value_counts])

    @property
    def depth(self) -> int:
        """List levels: 0 for a scalar column, 1 for ``list<int64>``, 2 for ``list<list<int64>>``..."""
        if not self.is_list:
            return 0
        return 1 + self.dtype.count("list<")

    @property
    def leaf_dtype(self) -> str:
        """The dtype of the innermost values (``dtype`` itself unless the column is nested)."""
        return self.dtype[self.dtype.rfind("list<") + 5:].rstrip(">") if "list<" in self.dtype else self.dtype

    @property
    def fixed_shape(self) -> Optional[List[int]]:
        """Per-level lengths of a nested column whose every level has one length (e.g. ``[100, 10]``),
        else None."""
        vcs = self.value_counts
        if not vcs or any(v is None or v.get("min") is None or v.get("min") != v.get("max") for v in vcs):
            return None
        return [int(v["max"]) for v in vcs]

    # -- convenience -------------------------------------------------------------
    def with_(self, **changes: Any) -> "ColumnSchema":
        """Return a copy with some fields replaced (tags/properties merged if given as add_*)."""
        add_tags = changes.pop("add_tags", None)
        add_props = changes.pop("add_properties", None)
        if ("value_count" in changes or "is_list" in changes) and "properties" not in changes:
            # the value_count field decides; properties' copy of the old one must not win it back
            changes["properties"] = {k: v for k, v in self.properties.items() if k != "value_count"}
        col = replace(self, **changes)
        if add_tags:
            col = replace(col, tags=tuple(col.tags) + tuple(add_tags))
        if add_props:
            props = dict(col.properties)
            props.update(add_props)
            col = replace(col, properties=props)
        return col

    @property
    def is_categorical(self) -> bool:
        return Tags.CATEGORICAL in self.tags

    @property
    def is_continuous(self) -> bool:
        return Tags.CONTINUOUS in self.tags

    @property
    def cardinality(self) -> Optional[int]:
        value = self.properties.get("cardinality")
        return None if value is None else int(value)

    def to_dict(self) -> Dict[str, Any]:
        out = {
            "name": self.name,
            "dtype": self.dtype,
            "tags": list(self.tags),
            "properties": _jsonable(self.properties),
            "is_list": self.is_list,
            "is_ragged": self.is_ragged,
            "value_count": self.value_count,
        }
        if self.depth > 1:   # nested lists only: flat columns' JSON stays as it was
            out["depth"] = self.depth
            out["value_counts"] = self.value_counts
        return out

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "ColumnSchema":
        dtype = data.get("dtype", "float64")
        tags = [str(t) for t in data.get("tags", ())]
        if "categorical" in tags and "continuous" in tags:  # written before tags collided: the later op's
            float_ = dtype_kind(dtype) == "f"   # by the dtype it left (Normalize: float)
            tags = [t for t in tags if t != ("categorical" if float_ else "continuous")]
        return cls(
            name=data["name"],
            dtype=dtype,
            tags=tuple(tags),
            properties=dict(data.get("properties", {})),
            is_list=bool(data.get("is_list", False)),
            is_ragged=bool(data.get("is_ragged", False)),
            value_count=data.get("value_count"),
            value_counts=data.get("value_counts"),
        )


class Schema(MerlinSchema):
    """An ordered collection of :class:`ColumnSchema`, indexed by name."""

    def __init__(self, columns: Any = ()) -> None:
        """``columns``: :class:`ColumnSchema` objects, or column names (merlin-core's
        ``Schema(["a", "b"])``: columns of unknown dtype ``"float64"``, no tags), or a dict
        name -> ColumnSchema (merlin-core's ``Schema.column_schemas``)."""
        self._cols: Dict[str, ColumnSchema] = {}
        if isinstance(columns, dict):
            columns = [c if isinstance(c, ColumnSchema) else ColumnSchema(n) for n, c in columns.items()]
        elif isinstance(columns, str):
            columns = [columns]
        for col in columns:
            if isinstance(col, str):
                col = ColumnSchema(col)
            elif not isinstance(col, ColumnSchema):
                raise TypeError(f"Schema() takes ColumnSchema objects or column names, got {type(col).__name__}: "
                                f"{col!r}")
            self._cols[col.name] = col

    # -- mapping protocol -----------------------------------------------------------
    def __getitem__(self, name: str) -> ColumnSchema:
        try:
            return self._cols[name]
        except KeyError:
            raise KeyError(f"column {name!r} is not in the schema; columns are {self.column_names}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._cols

    def __iter__(self) -> Iterator[ColumnSchema]:
        return iter(self._cols.values())

    def __len__(self) -> int:
        return len(self._cols)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Schema) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        rows = [f"  {c.name}: {c.dtype}{'[list]' if c.is_list else ''} tags={list(c.tags)}"
                + (f" shape={c.fixed_shape}" if c.fixed_shape else "")
                + (f" cardinality={c.cardinality}" if c.cardinality is not None else "")
                for c in self]
        return "Schema(\n" + "\n".join(rows) + "\n)"

    @property
    def column_names(self) -> List[str]:
        return list(self._cols)

    @property
    def column_schemas(self) -> Dict[str, ColumnSchema]:
        """``{name: ColumnSchema}`` in column order (merlin-core's name; a copy)."""
        return dict(self._cols)

    def select(self, names: Any) -> "Schema":
        """The columns ``names`` (a list of names, or a :class:`tabprep.ColumnSelector`: its names,
        subgroups' names and tags, as merlin-core's ``Schema.select``)."""
        if isinstance(names, ColumnSelector):
            return names.select_from(self)
        return Schema(self[n] for n in names)

    def select_by_tag(self, tags: Any, *more: str, pred_fn: Any = None) -> "Schema":
        """Columns by tag. merlin-core's call: ``select_by_tag(Tags.CATEGORICAL)`` or a list of tags,
        a column matching ANY of them (``pred_fn=all``: all of them). Several tags as separate
        arguments (``select_by_tag("user", "id")``, tabprep's older call) match ALL of them. A
        compound tag is its parts: ``select_by_tag(Tags.USER_ID)`` is the columns with ``user`` and
        ``id`` (merlin-core's rule: one compound tag requires all its parts, whatever ``pred_fn``)."""
        if more:
            wanted, pred = tag_query([tags, *more], pred_fn or all)
        else:
            wanted, pred = tag_query(list(tags) if isinstance(tags, (list, tuple, set)) else [tags], pred_fn)
        return Schema(c for c in self if pred(t in c.tags for t in wanted))

    def excluding_by_tag(self, tags: Any, pred_fn: Any = None) -> "Schema":
        """The columns :meth:`select_by_tag` would not select (merlin-core's)."""
        keep = set(self.select_by_tag(tags, pred_fn=pred_fn).column_names)
        return Schema(c for c in self if c.name not in keep)

    def without(self, names: Any) -> "Schema":
        """The schema less the columns ``names`` (merlin-core's ``Schema.without``)."""
        drop = {names} if isinstance(names, str) else set(names)
        return Schema(c for c in self if c.name not in drop)

    def __add__(self, other: "Schema") -> "Schema":
        return Schema(list(self) + [c for c in other if c.name not in self])

    def to_dict(self) -> Dict[str, Any]:
        return {"columns": [c.to_dict() for c in self]}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "Schema":
        return cls(ColumnSchema.from_dict(c) for c in data["columns"])

    def to_json(self, indent: int = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_json(cls, text: str) -> "Schema":
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_frame(cls, df: Any) -> "Schema":
        """Build a schema (no tags) from a pandas or cuDF DataFrame (or a dask frame's ``_meta``).

        Dtypes are kept as the frame names them (``"Int64"`` stays ``"Int64"``; a categorical column
        has its categories' dtype); list columns
        (pandas ``ArrowDtype(list)``, cuDF ``ListDtype``) become ragged ``is_list`` columns of
        their element dtype. An empty frame gives its columns' dtypes as well.
        """
        cols = []
        for name in df.columns:
            s = df[name]
            if backend.is_list_series(s):
                dtype = s.dtype
                if hasattr(dtype, "element_type"):  # cudf.ListDtype
                    inner = _cudf_element_name(dtype)
                else:  # pandas ArrowDtype(list)
                    vt = dtype.pyarrow_dtype.value_type
                    inner = _arrow_dtype_name(vt) if _is_arrow_list(vt) else str(vt)
                cols.append(ColumnSchema(name, dtype=inner, is_list=True, is_ragged=True))
            else:
                # a categorical column holds values of its categories' dtype (parquet stores it as
                # such and Dataset reads it back so): the schema, and the transform contract, say that
                cats = getattr(s.dtype, "categories", None)
                cols.append(ColumnSchema(name, dtype=str(s.dtype if cats is None else cats.dtype)))
        return cls(cols)

    @classmethod
    def from_arrow(cls, arrow_schema: Any) -> "Schema":
        """Build a schema (no tags) from a ``pyarrow.Schema``; list types become is_list columns."""
        import pyarrow as pa

        cols = []
        for fld in arrow_schema:
            typ = fld.type
            if pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ):
                fixed = pa.types.is_fixed_size_list(typ)
                cols.append(ColumnSchema(fld.name, dtype=_arrow_dtype_name(typ.value_type), is_list=True,
                                         is_ragged=not fixed,
                                         value_count={"min": typ.list_size, "max": typ.list_size} if fixed else None))
            else:
                cols.append(ColumnSchema(fld.name, dtype=_arrow_dtype_name(typ)))
        return cls(cols)


#: the tag that stands for ``ColumnSelector("*")`` (merlin's ``selector.all``): every column
ALL_COLUMNS = "*"


def selected_by_tags(col: ColumnSchema, tags: Iterable[str]) -> bool:
    """True when ``col`` carries any of ``tags`` (``"*"``: every column), as merlin-core's
    ``Schema.select_by_tag`` of a selector's tags (one compound tag: all of its parts)."""
    tags = list(tags)
    if ALL_COLUMNS in tags:
        return True
    wanted, pred = tag_query(tags)
    return bool(wanted) and pred(t in col.tags for t in wanted)


class ColumnSelector:
    """merlin-core's ``ColumnSelector(names, subgroups=, tags=)``: a selection of columns by name,
    by group (``subgroups``: selectors whose columns form one ``[["a", "b"]]`` group) and by tag,
    the tagged columns resolved when the selection meets a schema (``Workflow.fit`` /
    ``bind_schema``; ``Schema.select(selector)``). ``>>`` takes it where it takes a list of names:
    ``ColumnSelector(tags=[Tags.CATEGORICAL]) >> ops.Categorify()``."""

    def __init__(self, names: Any = None, subgroups: Any = None, tags: Any = None) -> None:
        if names == "*":  # merlin's "every column": a selection resolved on the schema, as tags are
            names, tags = None, [ALL_COLUMNS, *([tags] if isinstance(tags, str) else list(tags or []))]
        if isinstance(names, str):
            names = [names]
        self.names: List[str] = []
        self.subgroups: List["ColumnSelector"] = []
        for n in list(names or []):
            if isinstance(n, ColumnSelector):
                self.subgroups.append(n)
            elif isinstance(n, (list, tuple)):
                self.subgroups.append(ColumnSelector(list(n)))
            elif isinstance(n, str):
                self.names.append(n)
            else:
                raise TypeError(f"ColumnSelector takes column names, lists of names and selectors, got "
                                f"{type(n).__name__}: {n!r}")
        for g in list(subgroups or []):
            self.subgroups.append(g if isinstance(g, ColumnSelector) else ColumnSelector(g))
        tags = [tags] if isinstance(tags, str) else list(tags or [])
        self.tags: List[str] = [str(getattr(t, "value", t)) for t in tags]

    @property
    def all(self) -> bool:
        """True for ``ColumnSelector("*")``: every column of the schema it meets."""
        return ALL_COLUMNS in self.tags

    @property
    def grouped_names(self) -> List[Any]:
        """Names, then each subgroup as a tuple of its names (the list form ``>>`` takes)."""
        return list(self.names) + [tuple(g.all_names) for g in self.subgroups]

    @property
    def all_names(self) -> List[str]:
        out = list(self.names)
        for g in self.subgroups:
            out += [n for n in g.all_names if n not in out]
        return out

    def resolve(self, schema: "Schema") -> List[str]:
        """Names and subgroups' names, then the columns of ``schema`` carrying any of the tags."""
        out = list(self.all_names)
        if self.tags:
            out += [c.name for c in schema if selected_by_tags(c, self.tags) and c.name not in out]
        return out

    def select_from(self, schema: "Schema") -> "Schema":
        return schema.select(self.resolve(schema))

    def __add__(self, other: Any) -> Any:
        if not isinstance(other, ColumnSelector):
            if not (isinstance(other, str) or (isinstance(other, (list, tuple))
                                               and all(isinstance(x, str) for x in other))):
                return NotImplemented  # a node: Node.__radd__ merges the selection into the graph
            other = ColumnSelector(other)
        return ColumnSelector(self.names + [n for n in other.names if n not in self.names],
                              subgroups=self.subgroups + other.subgroups, tags=self.tags + other.tags)

    def __radd__(self, other: Any) -> Any:
        if isinstance(other, str) or (isinstance(other, (list, tuple)) and all(isinstance(x, str) for x in other)):
            return ColumnSelector(other) + self
        return NotImplemented

    def __bool__(self) -> bool:
        return bool(self.names or self.subgroups or self.tags)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ColumnSelector) and self.names == other.names and self.tags == other.tags
                and self.grouped_names == other.grouped_names)

    def __repr__(self) -> str:
        return f"ColumnSelector({self.names!r}, subgroups={[g.all_names for g in self.subgroups]!r}, tags={self.tags!r})"


#: properties that describe a column's embedding table (its ids): an op whose output is a new
#: table (HashBucket, Bucketize, Categorify) or no ids at all (a FillMissing indicator) does not
#: inherit them from its input column, so get_embedding_sizes never reads a stale size
TABLE_PROPERTIES = frozenset({"cardinality", "domain", "embedding_sizes", "embedding_dim", "vocabulary",
                              "num_oov_buckets"})


def without_table_properties(props: Dict[str, Any]) -> Dict[str, Any]:
    """``props`` less :data:`TABLE_PROPERTIES`."""
    return {k: v for k, v in props.items() if k not in TABLE_PROPERTIES}




def merge_column_schemas(earlier: ColumnSchema, later: ColumnSchema) -> ColumnSchema:
    """One column output by two branches of a ``+`` merge, whose later branch's values are kept:
    merlin-core 23.08's ``ColumnSchema.__merge__`` (the later dtype, shape and list-ness; the
    earlier tags less those colliding with the later ones, plus the later ones; the properties of
    both, the later winning a key)."""
    drop = {t for tag in later.tags for t in _TAG_COLLISIONS.get(tag, ())}
    tags = tuple(t for t in earlier.tags if t not in drop) + tuple(later.tags)
    props = {k: v for k, v in earlier.properties.items() if k != "value_count"}
    props.update(later.properties)
    return later.with_(tags=tags, properties=props)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def check_input_dtypes(fitted: "Schema", given: "Schema", columns: Iterable[str]) -> List[str]:
    """The ``columns`` (present in both schemas) whose dtype in ``given`` breaks the contract of
    ``fitted`` (:func:`dtypes_compatible`, or a list column given as a scalar one and vice versa).
    Empty: the contract holds. Missing columns are the caller's to report (with close matches)."""
    bad = []
    for name in columns:
        if name in fitted and name in given:
            f, g = fitted[name], given[name]
            if f.is_list != g.is_list or not (dtypes_compatible(f.dtype, g.dtype) or unit_drift(f.dtype, g.dtype)):
                bad.append(name)
    return bad


def nest_like(out: Schema, inp: Schema, nested: Iterable[str]) -> Schema:
    """``out`` (an op's output schema) with the columns named like the nested list inputs ``nested``
    nested as their input: an op element-wise on the leaves gave the leaf dtype, so the levels (and
    their value counts) come from the input; an op that handles nesting itself (ListSlice on the
    outer level, ValueCount) kept the dtype, and its ``value_count`` is the outer level's."""
    nested = set(nested)
    cols = []
    for c in out:
        src = inp[c.name] if c.name in nested and c.name in inp else None
        if src is None or src.depth < 2:
            cols.append(c)
            continue
        levels = src.depth - 1
        if c.is_list and c.dtype.count("list<") >= levels:
            vcs = c.value_counts
            if vcs and vcs[0] != c.value_count:
                vcs = [c.value_count] + list(vcs[1:])
            cols.append(c.with_(value_counts=vcs))
            continue
        cols.append(c.with_(dtype="list<" * levels + c.dtype + ">" * levels, is_list=True, is_ragged=src.is_ragged,
                            value_count=src.value_count, value_counts=src.value_counts))
    return Schema(cols)
