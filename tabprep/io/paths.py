"""Input paths of a Dataset: expanding files, folders, globs and URLs into data files, and
verifying a tabprep output folder (its commit markers and the listing in ``_metadata.json``)
before reading it."""
from __future__ import annotations

import json
import logging
import os
import re
from typing import Any, Dict, List, Optional, Tuple

from . import fs as fsmod
from .commit import INCOMPLETE_MARKER, METADATA_FILE, SCHEMA_FILE, SUCCESS_FILE, recover, staged_paths  # noqa: F401

log = logging.getLogger("tabprep.io")


def expand_paths(src: Any, storage_options: Optional[Dict[str, Any]] = None, engine: Optional[str] = None) -> List[str]:
    """Files of a path, glob, folder or list of them; URLs of remote file systems stay URLs
    (``storage_options``: their options).

    The order is merlin-core 23.08's (:func:`_ordered`): a list of paths sorted naturally
    (``part_2`` before ``part_10``), a parquet folder / glob's files naturally, a csv folder /
    glob's lexically. ``engine``: ``"parquet"`` / ``"csv"``, else told from the extensions.
    Folders tabprep wrote are checked for completeness (see the module docstring): an incomplete
    one raises ``ValueError`` naming it and what is missing.
    """
    return _expand(src, storage_options, engine)[0]


#: extensions (lower case, a trailing ``.gz`` left out) that name parquet and csv files
_PARQUET_EXTS = {".parquet", ".pq", ".parq", ""}
_CSV_EXTS = {".csv", ".txt", ".tsv"}
#: the first bytes of every parquet file
PARQUET_MAGIC = b"PAR1"


def _ext(path: str) -> str:
    low = path.lower()
    return os.path.splitext(low[:-3] if low.endswith(".gz") else low)[1]


def infer_engine(files: List[str], storage_options: Optional[Dict[str, Any]] = None) -> str:
    """``"parquet"`` or ``"csv"`` from the files' extensions, a file of another extension counting
    as parquet when its first bytes say so (Hive / Spark names such as ``part-0.c000``);
    ``ValueError`` naming the files when they tell neither, or tell both."""
    kinds: Dict[str, List[str]] = {}
    for f in files:
        ext = _ext(f)
        kind = ("parquet" if ext in _PARQUET_EXTS or is_parquet_file(f, storage_options) else
                "csv" if ext in _CSV_EXTS else "other")
        kinds.setdefault(kind, []).append(f)
    if set(kinds) == {"parquet"}:
        return "parquet"
    if set(kinds) == {"csv"}:
        return "csv"
    named = "; ".join(f"{k}: {', '.join(v[:2])}{' ...' if len(v) > 2 else ''}" for k, v in sorted(kinds.items()))
    raise ValueError(f"cannot tell one file format for the data ({named}); a dataset is all parquet or all csv: "
                     f"move the other files out, or pass engine='parquet' or 'csv'")


def is_parquet_file(path: str, storage_options: Optional[Dict[str, Any]] = None) -> bool:
    """Whether ``path`` starts with the parquet magic bytes (False for a file that cannot be read)."""
    try:
        fs = fsmod.fs_of(path, storage_options)
    except (OSError, ValueError):
        return False
    return _is_parquet_in(fs, path)


def _ordered(found: List[List[str]], engine: Optional[str]) -> List[str]:
    """The files of the paths given (``found``: each path's files, lexical within a folder or glob) in
    merlin-core 23.08's order: ``merlin.io.Dataset`` sorts the paths it is given by dask's
    ``natural_sort_key`` (done by the caller); its parquet engine lists a folder or
    glob through dask / pyarrow, in natural order, while its CSV engine keeps ``fs.glob``'s
    lexical order (checked side by side with nvtabular 23.8.0)."""
    from dask.utils import natural_sort_key

    flat = [f for files in found for f in files]
    if not flat or (engine or _quiet_engine(flat)) != "parquet":
        return flat
    return [f for files in found for f in (sorted(files, key=natural_sort_key) if len(files) > 1 else files)]


def _quiet_engine(files: List[str]) -> Optional[str]:
    try:
        return infer_engine(files)
    except ValueError:   # (the Dataset names the problem)
        return None


_DATA_EXTS = (".parquet", ".pq", ".parq", ".csv", ".csv.gz", ".tsv", ".tsv.gz")


def _walk_data_files(fs: Any, folder: str) -> List[str]:
    """The data files under ``folder``, in ``os.walk`` order (a folder's files, then its
    sub-folders, by name): files named as parquet or csv (any case), and every other file that is
    parquet by its first bytes (what Hive, Spark and Athena write: ``000000_0``,
    ``part-00000-<uuid>.c000``). Names (of files and folders) starting with ``.`` or ``_`` are side
    files (``_SUCCESS``, ``_metadata`` / ``_common_metadata``: a copy of the footers, no rows of their
    own; ``.crc`` checksums) and are skipped, as pyarrow, dask and Spark skip them; any other file
    left out is named in a warning."""
    if not fs.remote:
        listed = []
        for root, dirs, names in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
            listed += [os.path.join(root, n) for n in sorted(names) if not n.startswith((".", "_"))]
    else:
        prefix = folder.rstrip("/") + "/"
        keyed = []
        for f in fs.find(folder):  # one listing of every key under the prefix
            parts = f[len(prefix):].split("/")
            if any(p.startswith((".", "_")) for p in parts):
                continue
            keyed.append(((tuple(parts[:-1]), parts[-1]), f))
        listed = [f for _, f in sorted(keyed)]
    found, skipped = [], []
    for f in listed:
        if f.lower().endswith(_DATA_EXTS) or _is_parquet_in(fs, f):
            found.append(f)
        else:
            skipped.append(f)
    if _hive_of(folder, found) is None:
        _warn_hive(folder, found)
    if skipped and found:
        log.warning("%d file(s) in %s are not read: %s%s. They are neither parquet (by their first bytes) nor named "
                    ".csv / .tsv. Move them out of the folder, or name the data files to read.", len(skipped), folder,
                    ", ".join(skipped[:5]), " ..." if len(skipped) > 5 else "")
    return found


#: the value Hive, Spark and pyarrow write for a null key
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


def _key_parts(folder: str, f: str) -> List[str]:
    return f[len(folder.rstrip("/")) + 1:].split("/")[:-1]


def _warn_hive(folder: str, found: List[str]) -> None:
    keys = sorted({part for f in found for part in _key_parts(folder, f) if "=" in part})
    if keys:
        names = sorted({k.split("=", 1)[0] for k in keys})
        log.warning("the folders %s under %s look like Hive partitions (key=value) but not every data file lies "
                    "under the same key names at the same depths: their key(s) %s are not read as a column; only "
                    "the files' own columns are. Give every file the same key folders, or write the key into the "
                    "files as a column.", ", ".join(keys[:5]) + (" ..." if len(keys) > 5 else ""), folder,
                    ", ".join(repr(n) for n in names))


def _hive_of(folder: str, found: List[str]) -> Optional[Dict[str, Dict[str, Optional[str]]]]:
    """``file -> {key: value as written (None for a null)}`` when every file of ``folder`` lies under
    ``key=value`` folders of the same key names at the same depths (and every folder level is one);
    ``{}`` when no file lies under such a folder; None for mixed layouts (warned by the caller)."""
    from urllib.parse import unquote

    out: Dict[str, Dict[str, Optional[str]]] = {}
    names = None
    for f in found:
        parts = _key_parts(folder, f)
        if not any("=" in p for p in parts):
            if names:
                return None
            names = ()
            out[f] = {}
            continue
        if not all("=" in p and p.split("=", 1)[0] for p in parts):
            return None
        pairs = [p.split("=", 1) for p in parts]
        these = tuple(unquote(k) for k, _ in pairs)
        if names is None:
            names = these
        if these != names or len(set(these)) != len(these):
            return None
        out[f] = {unquote(k): (None if v == HIVE_NULL else unquote(v)) for k, v in pairs}
    return out if names else {}


def hive_partitions(files: List[str], folders: Dict[str, Dict[str, Dict[str, Optional[str]]]]
                    ) -> Tuple[Dict[str, Dict[str, Any]], Dict[str, str]]:
    """The hive keys of ``files`` (``folders``: each folder given's :func:`_hive_of`):
    ``(file -> {key: typed value}, key -> "int64" / "string")``; empty unless every file comes from
    a folder with the same key names. A key whose every (non-null) value is a decimal integer is
    int64 (pyarrow's discovery says int32; int64 is what tabprep's int columns are), else string."""
    per: Dict[str, Dict[str, Optional[str]]] = {}
    for keys in folders.values():
        per.update(keys)
    if not per or any(f not in per for f in files):
        return {}, {}
    names = {tuple(per[f]) for f in files}
    if len(names) != 1 or not next(iter(names)):
        return {}, {}
    types = {}
    for k in next(iter(names)):
        vals = [per[f][k] for f in files if per[f][k] is not None]
        ints = all(v.lstrip("-").isdigit() and v.isascii() and -2**63 <= int(v) < 2**63 for v in vals)
        types[k] = "int64" if ints and vals else "string"
    typed = {f: {k: (None if v is None else int(v) if types[k] == "int64" else v) for k, v in per[f].items()}
             for f in files}
    return typed, types


def _is_parquet_in(fs: Any, path: str) -> bool:
    try:
        with fs.open(path, "rb") as fh:
            return fh.read(4) == PARQUET_MAGIC
    except (OSError, ValueError):
        return False


#: a URL's scheme (``file:``, ``local://``): such a path is not relative to the working directory
_URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def _expand(src: Any, storage_options: Optional[Dict[str, Any]] = None,
            engine: Optional[str] = None) -> Tuple[List[str], Dict[str, int], Tuple[Dict[str, Any], Dict[str, str]]]:
    """:func:`expand_paths`, plus the row counts the tabprep outputs among them record per file
    (absolute path or URL -> rows), which :attr:`Dataset.file_metadata` checks against the footers,
    and the hive keys (:func:`hive_partitions`)."""
    items = [src] if isinstance(src, (str, os.PathLike)) else list(src)
    if not items:
        raise ValueError("no paths given: pass parquet / csv files, folders or globs (or a frame)")
    if len(items) > 1:
        from dask.utils import natural_sort_key

        items = sorted(items, key=lambda p: natural_sort_key(os.fspath(p)))   # as merlin.io.Dataset
    found: List[List[str]] = []
    hive: Dict[str, Any] = {}
    for item in items:
        fs, item = fsmod.get_fs(os.fspath(item), storage_options)
        if not fs.remote and not os.path.isabs(item) and not _URL_SCHEME.match(item):   # (not file:/...)
            # resolved once, here: a dask worker resolves a relative path against its own working
            # directory, and one started elsewhere read other data under the same name, silently
            item = os.path.abspath(item)
        with fsmod.remote_errors(item, "read"):
            found.append(_expand_item(fs, item))
            if fs.isdir(item):
                hive[item] = _hive_of(item, found[-1]) or {}
    files = _ordered(found, engine)
    _refuse_twice(files, items)
    expected: Dict[str, int] = {}
    folders = {}
    for f in files:
        fs = fsmod.fs_of(f, storage_options)
        folders[fs.dirname(fs.norm(f))] = fs
    for folder in sorted(folders):
        with fsmod.remote_errors(folder, "read"):
            expected.update(_output_rows(folder, folders[folder]))
    return files, expected, hive_partitions(files, hive)


def _refuse_twice(files: List[str], items: List[Any]) -> None:
    """A file reached through two of the paths given (the same path twice, a folder and a glob in
    it, ``d/./a.parquet``) would be read twice: twice its rows, silently. ``ValueError`` naming it."""
    seen: Dict[str, str] = {}
    for f in files:
        key = f if fsmod.is_remote(f) else os.path.realpath(f)
        if key in seen:
            raise ValueError(f"the data names {f!r} twice (through {', '.join(repr(os.fspath(p)) for p in items)}): "
                             f"each mention is read, so its rows would count twice; name each file once")
        seen[key] = f


def _expand_item(fs: Any, item: str) -> List[str]:
    """The files of one path, glob or folder (see :func:`expand_paths`)."""
    if not fs.remote and not os.path.exists(item) and not any(ch in item for ch in "*?["):
        _recover_missing(item)  # a crashed commit moved it aside: complete or undo that commit first
    if fs.isdir(item):
        found = _walk_data_files(fs, item)
        _check_output_listing(item, found, fs)
        if not found:
            raise FileNotFoundError(f"folder {item!r} holds no parquet or .csv files")
        return found
    if any(ch in item for ch in "*?["):
        matches = fs.glob(item)
        if not matches:
            raise FileNotFoundError(f"no file matches {item!r}; check the path"
                                    + (f" and the working directory ({os.getcwd()})" if not fs.remote else ""))
        # names starting with "_" or "." are side files (_metadata, _SUCCESS, _file_list.txt...), not
        # data: skipped as pyarrow, dask and merlin.io.Dataset do; a matched folder gives its data files
        found = []
        for m in matches:
            if fs.basename(fs.norm(m)).startswith((".", "_")):
                continue
            found += _expand_item(fs, m) if fs.isdir(m) else [m]
        if not found:
            raise FileNotFoundError(f"{item!r} matches only side files (names starting with '_' or '.', e.g. "
                                    f"{sorted(matches)[:3]}), which are not read as data; name the data files")
        return found
    if fs.exists(item):
        return [item]
    where = "" if fs.remote else f" (working directory {os.getcwd()})"
    raise FileNotFoundError(f"no such file or folder: {item!r}{where}")


def _recover_missing(path: str) -> bool:
    """``path`` is missing: if a crashed tabprep commit left temporaries next to it, finish or undo
    that commit (either gives a complete state) so the reader sees what the writer committed."""
    if not any(True for _ in staged_paths(path)):
        return False
    try:
        done = recover(path, delete=False)  # readers never delete (issue #30)
    except RuntimeError as exc:  # a live tabprep process is writing it
        raise ValueError(f"{path!r} is being written by another tabprep process: {exc}") from exc
    return bool(done)


def _output_root(folder: str, fs: Any = fsmod.LOCAL) -> Optional[Tuple[str, str]]:
    """``(root, prefix)`` when ``folder`` is a tabprep output (``prefix`` ""), or a ``worker_K``
    folder of one (``prefix`` "worker_K/"); None for other folders."""
    def has(d: str, name: str) -> bool:
        return fs.exists(fs.join(d, name))

    if has(folder, METADATA_FILE) or has(folder, INCOMPLETE_MARKER):
        return folder, ""
    parent = fs.dirname(fs.norm(folder))
    name = fs.basename(fs.norm(folder))
    # a folder at a URL is written in place (objectstore): until the write's side files, a worker
    # folder holds data files only, and the root only the incomplete marker, which speaks for it
    if name.startswith("worker_") and fs.remote and has(parent, INCOMPLETE_MARKER):
        return parent, name + "/"
    if has(folder, SCHEMA_FILE):
        if name.startswith("worker_") and (has(parent, METADATA_FILE) or has(parent, SCHEMA_FILE)):
            return parent, name + "/"
        return folder, ""
    return None


def _written_by_merlin(folder: str, fs: Any) -> bool:
    """Whether ``folder``'s ``_metadata.json`` is merlin-core's (NVTabular's ``to_parquet``:
    ``{"file_stats": [...], "cats", "conts", "labels"}``, no ``files`` listing): such a folder is
    read as plain parquet, as merlin-core reads it. Anything else, unreadable files included,
    counts as tabprep's, whose checks then name what is wrong."""
    try:
        with fs.open(fs.join(folder, METADATA_FILE), "r") as fh:
            meta = json.load(fh)
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and "file_stats" in meta and "files" not in meta and "tabprep_version" not in meta


def _verified_metadata(folder: str, fs: Any = fsmod.LOCAL) -> Optional[Tuple[str, str, Dict[str, Any]]]:
    """``(root, prefix, _metadata.json)`` of the tabprep output ``folder`` belongs to, once it is
    known to be complete; None when ``folder`` is not part of a tabprep output."""
    found = _output_root(folder, fs)
    if found is None:
        return None
    root, prefix = found
    redo = ("Run the write that produced it again (tabprep transform / convert / fit-transform, or to_parquet)"
            + (" with --overwrite / overwrite=True, which replaces the half-written folder." if fs.remote else "."))
    if fs.exists(fs.join(root, INCOMPLETE_MARKER)):
        raise ValueError(f"{root!r} is an incomplete tabprep output: it looks half-written, a write was interrupted "
                         f"or is still running (it holds {INCOMPLETE_MARKER}). {redo}")
    if not fs.exists(fs.join(root, SUCCESS_FILE)):
        if not prefix and _written_by_merlin(root, fs):
            return None   # NVTabular's to_parquet folder: plain parquet (its _metadata.json read only here)
        raise ValueError(f"{root!r} is an incomplete tabprep output: it looks half-written, it has no {SUCCESS_FILE} "
                         f"file (the job that wrote it did not finish, or files were removed since). {redo}")
    try:
        with fs.open(fs.join(root, METADATA_FILE), "r") as fh:
            meta = json.load(fh)
        if not isinstance(meta, dict) or not isinstance(meta.get("files", []), list):
            raise ValueError("not a files listing")
    except FileNotFoundError:
        raise ValueError(f"{root!r} is an incomplete tabprep output: {METADATA_FILE} is missing. {redo}") from None
    except ValueError as exc:
        raise ValueError(f"{fs.join(root, METADATA_FILE)!r} is unreadable ({exc}). {redo}") from exc
    return root, prefix, meta


def _listed(root: str, prefix: str, meta: Dict[str, Any], fs: Any = fsmod.LOCAL) -> Dict[str, int]:
    """Absolute path (or URL) -> rows of the parquet files ``meta`` lists under ``prefix``."""
    if meta.get("format", "parquet") != "parquet":
        return {}
    out = {}
    for entry in meta.get("files", []):
        rel = str(entry.get("file", ""))
        if rel.startswith(prefix):
            out[fs.norm(fs.join(fs.norm(root), rel))] = int(entry.get("rows", -1))
    return out


def _output_rows(folder: str, fs: Any = fsmod.LOCAL) -> Dict[str, int]:
    """Rows recorded for the files of the tabprep output ``folder`` belongs to (refusing an
    incomplete one); empty for other folders."""
    verified = _verified_metadata(folder, fs)
    if verified is None:
        return {}
    return _listed(*verified, fs=fs)


def _check_output_listing(folder: str, found: List[str], fs: Any = fsmod.LOCAL) -> None:
    """A tabprep output folder read as a whole must hold exactly the files its metadata lists."""
    verified = _verified_metadata(folder, fs)
    if verified is None:
        return
    root, prefix, meta = verified
    if meta.get("format", "parquet") != "parquet":
        return
    listed = _listed(root, prefix, meta, fs)
    have = {fs.norm(f) for f in found}
    missing = sorted(p for p in listed if p not in have)
    if missing:
        more = f" (and {len(missing) - 1} more of its {len(listed)} files)" if len(missing) > 1 else ""
        raise ValueError(f"the file {missing[0]} of the tabprep output {root!r} is missing{more}: the output is "
                         f"incomplete. Run the write that produced it again.")
    extra = sorted(p for p in have if p not in listed)
    if extra:
        raise ValueError(f"{extra[0]} is in the tabprep output {root!r} but not in its {METADATA_FILE}: tabprep did "
                         f"not write it there. Move it out of the folder (or run the write again).")
