"""Dtype names and the input contract of a fitted schema, without the schema classes.

Split out of :mod:`tabprep.schema` (which re-exports every name here): canonical dtype strings
(:func:`normalize_dtype`, Arrow and cuDF list element names), the dtype kinds the input contract
compares (:func:`dtype_kind`, :func:`dtypes_compatible`, time units) with its messages, and the
id-width checks. It imports no other tabprep module, so the schema classes build on it.
"""
from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np


def normalize_dtype(dtype: Any) -> str:
    """Return a canonical dtype string (numpy names; ``"str"`` for strings).

    pandas extension dtypes (``Int64``, ``string[pyarrow]``), cuDF dtypes and numpy
    dtypes of the same kind map to the same name, so CPU and GPU schemas compare equal.
    """
    name = str(dtype)
    lowered = name.lower()
    if lowered in ("object", "str", "string", "string[python]", "string[pyarrow]", "large_string",
                   "string[pyarrow_numpy]") or lowered.startswith("string"):
        return "str"
    if lowered.startswith(("list<", "large_list<")) and lowered.endswith(">"):
        # the element type of a nested list column; pyarrow spells it "list<item: int64>"
        inner = name[name.index("<") + 1:-1]
        inner = inner.split(": ", 1)[1] if ": " in inner else inner
        return f"list<{normalize_dtype(inner)}>"
    if lowered.startswith("list") or lowered.startswith("large_list"):
        return "list"
    mapping = {"int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
               "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
               "float16": "float16", "float32": "float32", "float64": "float64",
               "bool": "bool", "boolean": "bool", "double": "float64", "float": "float32"}
    for key in (lowered, lowered.replace("[pyarrow]", "")):
        if key in mapping:
            return mapping[key]
    try:
        return np.dtype(dtype).name
    except (TypeError, ValueError):  # numpy reads "struct<a: int64>" as a format string: ValueError
        # pandas' ArrowDtype spells "decimal128(5, 2)[pyarrow]" what Arrow's schema calls "decimal128(5, 2)"
        return name[:-len("[pyarrow]")] if name.endswith("[pyarrow]") else name


def _cudf_element_name(dtype: Any) -> str:
    """The element dtype of a ``cudf.ListDtype``, nested ones spelled as Arrow's are
    (``list<int64>`` for a ``list<list<int64>>`` column), so CPU and GPU schemas agree."""
    inner = dtype.element_type
    if hasattr(inner, "element_type"):
        return f"list<{_cudf_element_name(inner)}>"
    typ = getattr(inner, "pyarrow_dtype", None)
    if typ is not None and _is_arrow_list(typ):
        return _arrow_dtype_name(typ)
    return str(inner)


def _is_arrow_list(typ: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ)


def _is_opaque_arrow(typ: Any) -> bool:
    """Arrow types tabprep's ops do not compute on (structs, maps, decimals, binary): they pass
    through as they are, as pandas ``ArrowDtype`` columns, and an op on them is refused by name."""
    import pyarrow as pa

    return (pa.types.is_struct(typ) or pa.types.is_map(typ) or pa.types.is_decimal(typ) or pa.types.is_binary(typ)
            or pa.types.is_large_binary(typ) or pa.types.is_fixed_size_binary(typ))


#: the fix for an op on an opaque column, by the start of its dtype name
_OPAQUE_FIXES = {
    "struct": "flatten it into scalar columns (pyarrow.compute.struct_field / table.flatten()) and select those",
    "map": "turn it into list or scalar columns first",
    "decimal": "cast it to float64 (pyarrow: table.cast, pandas: .astype('float64')) or to strings for categories",
    "binary": "decode it to strings (pandas: .str.decode('utf-8', errors='replace'); pyarrow: "
              "pyarrow.compute.cast(col, pyarrow.string()) for valid UTF-8) or hash it in the source",
    "large_binary": "decode it to strings (pandas: .str.decode('utf-8', errors='replace'))",
    "fixed_size_binary": "decode it to strings (pandas: .str.decode('utf-8', errors='replace'))",
}


def opaque_column_fix(dtype: str) -> Optional[str]:
    """The fix to name when an op is given a column of an opaque dtype (struct, map, decimal,
    binary: see :func:`_is_opaque_arrow`), else None."""
    m = _OPAQUE.match(dtype)
    return _OPAQUE_FIXES[m.group(1)] if m else None


_OPAQUE = re.compile(r"(struct|map|decimal|large_binary|fixed_size_binary|binary)(?:<|(?:32|64|128|256)?\(|\[|$)")


def _arrow_dtype_name(typ: Any) -> str:
    import pyarrow as pa

    if _is_arrow_list(typ):
        # the element type of a nested list column (list<list<int64>>): recorded as such, so that
        # ops refuse it by name instead of seeing a string column
        return f"list<{_arrow_dtype_name(typ.value_type)}>"
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return "str"
    if _is_opaque_arrow(typ):
        return str(typ)  # named as Arrow names it (not "str", which is what to_pandas_dtype says)
    if pa.types.is_dictionary(typ):
        return _arrow_dtype_name(typ.value_type)
    try:
        return normalize_dtype(typ.to_pandas_dtype())
    except NotImplementedError:
        return str(typ)


# -- the fitted input schema as a contract (issue #11) ---------------------------------------------------
#: the fix named by every kind-mismatch message (library, CLI and serving)
CAST_HINT = "pass cast=True (CLI: tabprep transform --cast; HTTP: ?cast=true) to convert the values safely " \
            "(lossy values such as 2.5 -> int or 'abc' -> int are then refused), or give the fitted type"


def dtype_kind(dtype: Any) -> str:
    """The kind of a dtype, the unit of the input contract.

    ``"i"`` (ints of any width and signedness, nullable ``Int64`` included), ``"b"`` (bool,
    ``boolean``), ``"f"`` (floats), ``"s"`` (strings), ``"M"`` (datetimes), ``"m"``
    (timedeltas), else ``"?"`` (compared by exact dtype name).
    """
    name = normalize_dtype(dtype)
    if name == "str":
        return "s"
    if name == "bool":
        return "b"
    try:
        k = np.dtype(name).kind
    except (TypeError, ValueError):
        return "?"
    return {"i": "i", "u": "i", "f": "f", "M": "M", "m": "m"}.get(k, "?")


def dtypes_compatible(fitted: str, given: str) -> bool:
    """True when values of dtype ``given`` may flow where ``fitted`` was seen at fit time.

    The one rule shared by :meth:`Workflow.transform`, ``transform_frame`` (loaders) and the
    serving transform: the same kind is accepted (int32 for int64, ``Int64`` for ``int64``,
    float32 for float64, ``string[pyarrow]`` for ``object`` strings: same ids, same values);
    a kind change (int -> string, int -> float, string -> int, bool -> int) is refused,
    since it silently changes ids (a string "3" is not the int 3 in a vocabulary; the float
    3.0 hashes differently from the int 3).
    """
    f, g = normalize_dtype(fitted), normalize_dtype(given)
    if f == g:
        return True
    kf, kg = dtype_kind(f), dtype_kind(g)
    if kf == kg == "i" and uint64_and_signed([f, g])[0]:
        # integer lookups compare int64 bits: uint64 2**64 - 5 would find int64 -5's id
        return False
    return kf != "?" and kf == kg


def uint64_and_signed(dtypes: Iterable[Any]) -> Tuple[List[int], List[int]]:
    """The positions of the uint64 and of the signed int dtypes among ``dtypes``, when both kinds
    are there (their values share int64 bits: 2**64 - 5 is -5's); else two empty lists."""
    unsigned, signed = [], []
    for k, d in enumerate(dtypes):
        try:
            t = np.dtype(str(d).lower())
        except TypeError:
            continue
        if t == np.uint64:
            unsigned.append(k)
        elif t.kind == "i":
            signed.append(k)
    return (unsigned, signed) if unsigned and signed else ([], [])


def kind_mismatch_message(column: str, fitted: str, given: str, is_list: bool = False, fix: str = CAST_HINT) -> str:
    """The message for a refused kind change: names the column, both dtypes and the fix."""
    suffix = "[list]" if is_list else ""
    fitted_levels, given_levels = normalize_dtype(fitted).count("list<"), str(given).count("list<")
    # (an object column of arrays, described as strings, has no known nesting: the generic message)
    if is_list and fitted_levels != given_levels and not str(given).startswith("str"):
        # list<list<..>> vs list<..>: no cast changes the nesting, so the cast hint would mislead
        return (f"column {column!r} holds lists nested {given_levels + 1} levels deep ({given}{suffix}) but the "
                f"workflow was fitted on {fitted_levels + 1} level(s) ({normalize_dtype(fitted)}{suffix}): "
                f"{'deeper' if given_levels > fitted_levels else 'shallower'} nesting than fitted is refused; "
                f"give the column the fitted nesting, or refit the workflow on data nested like this")
    return (f"column {column!r}: the workflow was fitted on {normalize_dtype(fitted)}{suffix} values but got "
            f"{given}{suffix}; {fix}")


_TIME = re.compile(r"(datetime64|timedelta64)\[(s|ms|us|ns)(?:, (.+))?\]")


def time_parts(dtype: Any) -> Optional[tuple]:
    """``(kind, unit, tz)`` of a datetime64 / timedelta64 dtype (``("M", "us", "UTC")``; tz None
    when naive), else None."""
    m = _TIME.fullmatch(normalize_dtype(dtype))
    if m is None:
        return None
    return ("M" if m.group(1) == "datetime64" else "m"), m.group(2), m.group(3)


def unit_drift(fitted: str, given: str) -> bool:
    """True when ``given`` holds the same kind of times as ``fitted`` (same time zone) in another
    unit (``datetime64[ms]`` for ``datetime64[us]``): the input contract converts such columns to
    the fitted unit exactly (same instants, same output) or refuses values the fitted unit cannot
    hold, whatever ``cast`` says (issue #30: a count in another unit is another number)."""
    f, g = time_parts(fitted), time_parts(given)
    return f is not None and g is not None and f[0] == g[0] and f[2] == g[2] and f[1] != g[1]


def plural(n: int, noun: str, plural_form: Optional[str] = None) -> str:
    """``"1 column"``, ``"2 columns"``: a count with its noun agreeing."""
    return f"{n:,} {noun if n == 1 else (plural_form or noun + 's')}"


def drift_message(drifted: Sequence[Tuple[str, str, str]], fix: str = CAST_HINT) -> str:
    """One sentence for every column whose kind changed since fit, grouped by ``fitted -> given``
    dtype, with the fix said once: ``2 columns changed type since fit: id, n (int64 -> float64);
    s (str -> int64). Pass cast=True ...``. ``drifted`` holds ``(column, fitted, given)``."""
    groups: Dict[Tuple[str, str], List[str]] = {}
    for column, fitted, given in drifted:
        groups.setdefault((normalize_dtype(fitted), str(given)), []).append(column)
    parts = [f"{', '.join(cols)} ({f} -> {g})" for (f, g), cols in groups.items()]
    return (f"{plural(len(drifted), 'column')} changed type since fit: {'; '.join(parts)}. "
            f"{fix[0].upper()}{fix[1:]}.")


# -- id dtypes (issue #30): ids that wrap in a narrow dtype are silently wrong ----------------------------
def check_id_dtype(dtype: Any, max_id: int, what: str, count: str) -> None:
    """Raise ``ValueError`` when the integer ``dtype`` cannot hold ids up to ``max_id``.

    ``what`` names the op and column (``"Categorify column 'c'"``), ``count`` what the ids
    count (``"300 categories"``, ``"1000 buckets"``): the message names both, the dtype's
    largest value and the smallest dtype of the same signedness that holds them. Non-integer
    dtypes are left to the caller."""
    try:
        d = np.dtype(dtype)
    except (TypeError, ValueError):
        return
    if d.kind not in "iu" or max_id <= np.iinfo(d).max:
        return
    wider = next((w for w in ((("int16", "int32", "int64") if d.kind == "i" else ("uint16", "uint32", "uint64")))
                  if np.iinfo(w).max >= max_id), "int64")
    raise ValueError(f"{what}: {count} need ids up to {max_id}, which dtype={d.name!r} cannot hold (its largest "
                     f"value is {np.iinfo(d).max}; the ids would wrap around and collide); use dtype={wider!r} "
                     f"or wider, or reduce the count")


def check_bucket_dtype(dtype: Any, num_buckets: Any, op: str = "HashBucket") -> None:
    """:func:`check_id_dtype` for hashed ids ``0 .. num_buckets - 1`` (an int, or ``{column: int}``)."""
    items = num_buckets.items() if isinstance(num_buckets, dict) else [(None, num_buckets)]
    for col, nb in items:
        check_id_dtype(dtype, int(nb) - 1, op if col is None else f"{op} column {col!r}", f"{int(nb)} buckets")


# -- float output dtypes (Normalize / NormalizeMinMax ``out_dtype``) ---------------------------------------
#: the float dtypes an op may output: both backends hold them (cuDF has no float16) and every loader
#: and serving path computes in them
FLOAT_OUT_DTYPES = ("float32", "float64")


def float_out_dtype(out_dtype: Any, op: str) -> str:
    """The output dtype name of an op's ``out_dtype`` argument: ``None`` is ``"float64"``
    (NVTabular 23.08's ``out_dtype or numpy.float64``); ``"float32"``, ``np.float32``,
    ``np.dtype("float64")``... name one of :data:`FLOAT_OUT_DTYPES`. Anything else raises a
    ``ValueError`` naming ``op`` and the argument."""
    if out_dtype is None:
        return "float64"
    try:
        name = np.dtype(out_dtype).name
    except (TypeError, ValueError):
        name = None
    if name not in FLOAT_OUT_DTYPES:
        what = f"{name!r}" if name and name != str(out_dtype) else repr(out_dtype)
        raise ValueError(f"{op}(out_dtype={out_dtype!r}): out_dtype must be a float dtype, 'float32' or 'float64' "
                         f"(or None, float64 as in NVTabular), got {what}; float16 is not supported (cuDF has no "
                         f"float16), and an integer output would truncate the normalized values")
    return name
