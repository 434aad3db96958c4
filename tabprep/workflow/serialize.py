"""Save / load a fitted workflow as a folder: ``workflow.json`` + per-op statistics files.

``workflow.json`` is human-readable: the tabprep version, every node of the graph (kind,
parents, selected columns, op class and parameters), the input and output schemas, the
embedding sizes, and the sha256, size and row count of every statistics file. Statistics live
next to it under ``stats/<node id>/`` (vocabularies as parquet, small statistics inline as JSON).

Loading executes nothing the folder names unless the user opts in (issue #11):

* ops are looked up by name among registered ops; a saved ``op_class`` (an op that was not
  registered under its name) resolves only to a registered op class or a class given to
  :func:`tabprep.register_function`;
* user functions (LambdaOp, Filter, Rename) stored as ``{"import": name}`` resolve only to
  functions registered in the loading process (:func:`tabprep.register_function`);
* anything else raises :class:`tabprep.registry.UntrustedCodeError` before its module is
  imported, unless ``trusted=True`` (imports the named modules) or ``allow_pickle=True``
  (pickled functions; a pickle can import anything, so it implies ``trusted``);
* every statistics file is checked against its recorded sha256 before any op reads it, so a
  swapped, truncated or edited file is an error naming it. The checksums detect corruption and
  mix-ups; they are no defence against someone who also edits ``workflow.json`` (nothing in the
  folder is code, which is what makes such an edit harmless). Folders saved by tabprep before
  checksums (``format_version`` 1) load with a warning.

A folder may be a URL of a remote file system (``s3://bucket/wf``; ``storage_options=`` as in
pandas): it is written in a local spool folder, uploaded and committed with ``_SUCCESS`` last
(:mod:`tabprep.io.objectstore`); loading refuses it without ``_SUCCESS`` (half-written), copies
it into a local temporary folder and loads that, with the same checks.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from pathlib import Path, PurePosixPath
from typing import Any, Dict, Iterator, List, Optional, Set

import numpy as np

from .._util import flag
from .._version import __version__
from .._warn import rebuilding
from ..io import commit
from ..io.commit import WORKFLOW_FILE
from ..io.fs import get_fs, is_remote, local_path
from ..ops._saved_state import missing_columns
from ..ops.base import _LOADING, Operator, StatOperator, linked_stats_path, registered_ops
from ..ops.embeddings import embedding_sizes_from_schema
from ..registry import load_policy, resolve_function
from ..schema import Schema
from ..ops.node import attach_dependencies
from .node import Node
from .workflow import Workflow

log = logging.getLogger(__name__)

SPEC_FILE = WORKFLOW_FILE
#: 2: ``stats_files`` (sha256, bytes, rows of every statistics file); 1: no checksums
FORMAT_VERSION = 2
#: the folder of the statistics files, relative to the saved workflow
STATS_DIR = "stats"
#: the training data's profile under ``stats/`` (``Workflow.fit(profile=True)``; tabprep.quality)
PROFILE_FILE = "profile.json"


def save_workflow(wf: Workflow, path: str, allow_pickle: bool = False,
                  transaction: Optional[commit.Transaction] = None,
                  storage_options: Optional[Dict[str, Any]] = None) -> None:
    """Write ``wf`` to the folder ``path`` atomically (a temp folder renamed at the end).

    ``path`` may be new, an empty folder or a saved workflow (replaced only once the new one is
    complete); any other folder is refused with ``FileExistsError`` (its files are kept). With
    ``transaction`` the folder is committed with the transaction's other folders. A URL
    (``s3://...``, with ``storage_options``) is written through fsspec and committed with
    ``_SUCCESS`` last (the previous version is deleted when the upload starts).
    """
    allow_pickle = flag("allow_pickle", allow_pickle)
    wf._require_fitted()
    if wf.input_schema is None:
        raise RuntimeError("fit the workflow (or transform a dataset with it) before saving")
    # a transaction of its own, or the caller's; on an error the hidden folder is dropped. A
    # remote folder is spooled: the ops' save_state writes local files, uploaded at the end
    with commit.staged(path, commit.WORKFLOW, True, transaction, storage_options=storage_options,
                       spool=True) as stage:
        tmp = stage.tmp
        nodes = []
        for n in wf.nodes:
            nid = wf.node_id(n)
            entry: Dict[str, Any] = {"id": nid, "kind": n.kind, "parents": [wf.node_id(p) for p in n.parents]}
            if n.deps:  # nodes the op reads as an argument (TargetEncoding(target_node)): computed first
                entry["deps"] = [wf.node_id(d) for d in n.deps]
            if n.kind in ("select", "drop"):
                entry["columns"] = list(n.columns)
            if n.groups:
                entry["groups"] = [list(g) for g in n.groups]
            if n.kind == "op":
                op = n.op
                entry["op"] = type(op).__name__
                if type(op).__name__ not in registered_ops() or registered_ops()[type(op).__name__] is not type(op):
                    entry["op_class"] = f"{type(op).__module__}:{type(op).__qualname__}"
                config = op.to_config()
                config = _pickle_functions(op, config, tmp / "stats" / nid, allow_pickle)
                entry["params"] = config
                if isinstance(op, StatOperator) or type(op).save_state is not Operator.save_state:
                    sdir = tmp / "stats" / nid
                    sdir.mkdir(parents=True, exist_ok=True)
                    entry["state"] = op.save_state(sdir)
                    entry["state_dir"] = f"stats/{nid}"
            nodes.append(entry)
        if getattr(wf, "profile_", None) is not None:  # the training data's profile (tabprep.quality)
            (tmp / STATS_DIR).mkdir(parents=True, exist_ok=True)
            with open(tmp / STATS_DIR / PROFILE_FILE, "w") as fh:
                json.dump(wf.profile_, fh, default=_default)
        saved_ids = {entry["id"] for entry in nodes}
        spec = {
            "format_version": FORMAT_VERSION,
            "tabprep_version": __version__,
            "output": wf.node_id(wf.output_node),
            "nodes": nodes,
            "input_schema": wf.input_schema.to_dict(),
            "output_schema": wf.output_schema.to_dict(),
            "embedding_sizes": {k: list(v) for k, v in embedding_sizes_from_schema(wf.output_schema).items()},
            "allow_pickle": allow_pickle,
            # the names a spec gave its features (`name: clipped`), so that `to_spec` and `tabprep
            # inspect` of the saved workflow say `clipped`, not a made-up `feature_1`
            "feature_names": {nid: name for nid, name in wf._spec_names.items() if nid in saved_ids},
            # last: every statistics file (pickled functions included) is written by now
            "stats_files": stats_manifest(tmp),
        }
        with open(tmp / SPEC_FILE, "w") as fh:
            json.dump(spec, fh, indent=2, default=_default)


def _pickle_functions(op: Operator, config: Dict[str, Any], folder: Path, allow_pickle: bool) -> Dict[str, Any]:
    f = config.get("f")
    if isinstance(f, dict) and f.get("pickled"):
        if not allow_pickle:
            raise ValueError(
                f"{op.label}: its function {getattr(op.f, '__qualname__', op.f)!r} cannot be saved by import path "
                f"(a lambda, a local or a notebook function). Move it to an importable module, or pass "
                f"allow_pickle=True to save() and again to load() if you trust the files.")
        import cloudpickle

        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / "function.pkl", "wb") as fh:
            cloudpickle.dump(op.f, fh)
        config = dict(config)
        config["f"] = {"pickled": f"stats/{folder.name}/function.pkl"}
    return config


def load_workflow(path: str, allow_pickle: bool = False, trusted: bool = False,
                  storage_options: Optional[Dict[str, Any]] = None) -> Workflow:
    """Load a folder written by :func:`save_workflow`.

    Args:
        path: the folder, or a URL of one on a remote file system (``s3://bucket/wf``) read
            through fsspec with ``storage_options`` (default: the environment's credentials).
        allow_pickle: read pickled functions (runs code from the folder; implies ``trusted``).
        trusted: resolve functions and op classes the folder names by importing their modules;
            without it only registered ones resolve (:func:`tabprep.register_function`,
            :func:`tabprep.ops.register`) and any other name raises
            :class:`~tabprep.registry.UntrustedCodeError` before an import.

    Raises:
        FileNotFoundError: no ``workflow.json``.
        UntrustedCodeError: a function / op class not on the allow-list (nothing imported).
        ValueError: a statistics file that differs from its recorded checksum (named), or a
            damaged ``workflow.json``; a remote folder without ``_SUCCESS`` (half-written).
    """
    # the graph's build-time warnings (a '+' shadowing, an op's arguments) were given when it was
    # built; a serving process or a loader loads the folder again and again: not repeated here
    with rebuilding():
        if is_remote(path):
            return _load_remote(path, allow_pickle, trusted, storage_options)
        return _load_local(local_path(path), allow_pickle, trusted)


def _load_remote(path: str, allow_pickle: bool, trusted: bool, storage_options: Optional[Dict[str, Any]]) -> Workflow:
    from ..io import objectstore

    url = get_fs(path, storage_options)[1]
    redo = "Save the workflow there again (workflow.save(..., storage_options=...) or `tabprep fit --out`)."
    try:
        with objectstore.downloaded(url, commit.WORKFLOW, storage_options, redo=redo) as local:
            try:
                return _load_local(local, allow_pickle, trusted, display=url)
            except Exception as exc:  # noqa: BLE001 - name the URL, not the temporary copy
                exc.args = tuple(a.replace(local, url) if isinstance(a, str) else a for a in exc.args)
                raise
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"{url!r} is not a saved tabprep workflow ({exc}); save one with workflow.save(path) "
                                f"or `tabprep fit`") from None


def _load_local(path: str, allow_pickle: bool, trusted: bool, display: Optional[str] = None) -> Workflow:
    root = Path(path)
    spec_path = root / SPEC_FILE
    if not spec_path.exists():
        raise FileNotFoundError(f"{str(root)!r} is not a saved tabprep workflow (no {SPEC_FILE}); "
                                f"save one with workflow.save(path) or `tabprep fit`")
    real_root = os.path.realpath(root)
    if os.path.dirname(os.path.realpath(spec_path)) != real_root:
        # as the statistics files (verify_stats): what the folder says runs is a plain file in it
        raise ValueError(f"{spec_path} is a symbolic link to {os.path.realpath(spec_path)}, outside the workflow folder: "
                         f"a saved workflow's {SPEC_FILE} is a plain file in its folder. Copy the file in, or save "
                         f"the workflow again")
    spec = _read_spec(spec_path)
    if not isinstance(spec, dict) or not isinstance(spec.get("nodes"), list):
        raise ValueError(f"{spec_path} is not a saved tabprep workflow (no list of nodes); it was edited or damaged")
    version = spec.get("format_version", 0)
    if not isinstance(version, int):
        raise ValueError(f"{spec_path}: format_version must be an integer, got {version!r}")
    if version > FORMAT_VERSION:
        raise ValueError(f"{spec_path} was written by a newer tabprep ({spec.get('tabprep_version')}); upgrade tabprep")
    verified = verify_stats(root, spec)
    # everything that may resolve a name (op classes, ops' from_config, load_state) runs under the
    # policy; ops read only verified files of their state (state_file)
    with load_policy(bool(trusted or allow_pickle)), _loading_state(spec_path, verified):
        built: Dict[str, Node] = {}
        for entry in spec["nodes"]:
            try:
                nid, node = _build_node(entry, built, root, allow_pickle, bool(trusted or allow_pickle))
            except (KeyError, TypeError, AttributeError, IndexError) as exc:
                nid = entry.get("id") if isinstance(entry, dict) else None
                raise ValueError(f"{spec_path}: node {nid!r} cannot be rebuilt ({type(exc).__name__}: {exc}); "
                                 f"the file was edited or damaged: restore the folder from a copy, or fit the "
                                 f"workflow and save it again") from exc
            built[nid] = node
        out = spec.get("output")
        if not isinstance(out, str) or out not in built:
            raise ValueError(f"{spec_path}: the output node {out!r} is not one of its nodes "
                             f"({', '.join(list(built)[:8])}); the file was edited or damaged")
        wf = Workflow(built[out])
        names = spec.get("feature_names")
        if isinstance(names, dict):
            wf._spec_names = {wf.node_id(built[nid]): str(name) for nid, name in names.items() if nid in built}
    profile = root / STATS_DIR / PROFILE_FILE
    if profile.is_file():  # checked against stats_files above
        with open(profile) as fh:
            wf.profile_ = json.load(fh)
    try:
        schema = Schema.from_dict(spec["input_schema"])
    except (KeyError, TypeError, AttributeError, IndexError, ValueError) as exc:
        raise ValueError(f"{spec_path}: 'input_schema' is missing or damaged ({type(exc).__name__}: {exc}); "
                         f"the file was edited or damaged") from None
    wf._bind(schema, f"the saved input schema of {display or root}")
    _check_state_columns(wf, spec_path)
    return wf


def _check_state_columns(wf: Workflow, spec_path: Path) -> None:
    """Every column a fitted op with checked statistics (``StatOperator.state_columns``) transforms
    has its entry in them: a column deleted from ``workflow.json`` was a bare ``KeyError`` at
    transform, or silently no dtype (ReduceDtypeSize), schema (ValueCount) or drop (DropLowCardinality)."""
    for n in wf.nodes:
        op = getattr(n, "op", None)
        if not isinstance(op, StatOperator) or getattr(op, "stats_", None) is None:
            continue
        missing = missing_columns(op.stats_, op.state_columns(list(n.input_columns)))
        if missing:
            raise ValueError(f"{spec_path}: {op.label} has no saved statistics for column(s) {missing} it transforms; "
                             f"the file was edited or damaged: fit the workflow and save it again")
        try:   # statistics checked against the bound schema (ValueCount's levels: one per list level)
            getattr(op, "check_bound_state", lambda: None)()
        except TypeError as exc:
            raise ValueError(f"{spec_path}: {exc}; the file was edited or damaged: restore the folder from a copy, "
                             f"or fit the workflow and save it again") from None


def _read_spec(spec_path: Path) -> Any:
    """workflow.json decoded, or ``ValueError`` naming it and the damage (empty, not text, not
    JSON, nested too deeply, a number too long): never a raw decoder error."""
    redo = "restore the folder or save the workflow again"
    raw = spec_path.read_bytes()
    if not raw.strip():
        raise ValueError(f"{spec_path} is empty (an interrupted copy?); {redo}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{spec_path} is not a text file (not UTF-8 at byte {exc.start}): it is binary or damaged; "
                         f"{redo}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{spec_path} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}): it "
                         f"is truncated or damaged; {redo}") from None
    except RecursionError:
        raise ValueError(f"{spec_path} is nested too deeply to be a saved workflow; it was edited or damaged; "
                         f"{redo}") from None
    except ValueError as exc:  # a number past Python's digit limit for int()
        raise ValueError(f"{spec_path} holds a number too long to read ({exc}); it was edited or damaged; "
                         f"{redo}") from None


@contextlib.contextmanager
def _loading_state(spec_path: Path, verified: Optional[Set[Path]]) -> Iterator[None]:
    token = _LOADING.set((spec_path, verified))
    try:
        yield
    finally:
        _LOADING.reset(token)


def _build_node(entry: Dict[str, Any], built: Dict[str, Node], root: Path, allow_pickle: bool,
                trusted: bool = False) -> tuple:
    spec_path = root / SPEC_FILE
    parents = [built[p] for p in entry["parents"]]
    deps = entry.get("deps") or []
    if not isinstance(deps, list) or not all(isinstance(d, str) and d in built for d in deps):
        # nodes are saved in topological order: a dependency is always an earlier node
        raise ValueError(f"{spec_path}: node {entry['id']!r} depends on {deps!r}, which are not all earlier nodes "
                         f"(a dependency on itself or on a later node is a cycle); the file was edited or damaged")
    deps = [built[d] for d in deps]
    if deps and entry["kind"] != "op":
        raise ValueError(f"{spec_path}: node {entry['id']!r} of kind {entry['kind']!r} depends on nodes; only ops "
                         f"have dependencies; the file was edited or damaged")
    kind = entry["kind"]
    if kind == "select":
        return entry["id"], Node("select", columns=entry["columns"], groups=[tuple(g) for g in entry.get("groups", [])])
    if kind == "concat":
        # groups: a column group of computed columns (node + [node_a, "b"]; ops.node.group_node)
        return entry["id"], Node("concat", parents=parents, groups=[tuple(g) for g in entry.get("groups", [])])
    if kind == "drop":
        return entry["id"], Node("drop", parents=parents, columns=entry["columns"])
    if kind != "op":
        raise ValueError(f"{spec_path}: unknown node kind {kind!r}")
    name = entry["op"]
    if not isinstance(name, str):
        raise ValueError(f"{spec_path}: an op is named by a string, got {name!r}")
    cls = registered_ops().get(name)
    if "op_class" in entry:
        # registered op classes by import path; anything else needs trust (checked before importing)
        allowed = {f"{c.__module__}:{c.__qualname__}": c for c in registered_ops().values()}
        cls = resolve_function(entry["op_class"], allowed=allowed, what="op class")
        if not (isinstance(cls, type) and issubclass(cls, Operator)):
            raise TypeError(f"{entry['op_class']} is not a tabprep Operator")
    if cls is None:
        raise ValueError(f"unknown op {name!r} in {spec_path}; is the module defining it imported "
                         f"(and the op registered with @tp.ops.register)?")
    params = entry.get("params", {})
    if not isinstance(params, dict):
        raise ValueError(f"{spec_path}: the parameters of {name} must be a mapping, got {params!r}")
    # a parameter the folder lacks was added since it was saved: it keeps what it was fitted with
    params = {**cls.saved_defaults, **params}
    named = cls.files_named(params, "state" in entry)
    if named and not trusted:   # a saved workflow reads no file outside its folder (guarantees.md)
        param, where = named[0]
        raise ValueError(f"{spec_path}: op {name}'s {param} names {where!r}, a file outside the saved folder, which "
                         f"a saved workflow never needs (it holds what its ops read); workflow.json was edited. "
                         f"Pass trusted=True (CLI: --trusted) only if you trust {root} and that file")
    f = params.get("f")
    if isinstance(f, dict) and "pickled" in f:
        if not allow_pickle:
            raise ValueError(f"{spec_path}: op {name} holds a pickled function; loading it runs code "
                             f"from the file. Pass allow_pickle=True only if you trust {root}.")
        import cloudpickle

        with open(_inside(root, f["pickled"], "pickled"), "rb") as fh:
            params["f"] = cloudpickle.load(fh)
        op = cls(**params)
    else:
        op = cls.from_config(params, allow_pickle=allow_pickle)
    if len(parents) == 1:
        node = parents[0] >> op
    else:
        merged = parents[0]
        for p in parents[1:]:
            merged = merged + p
        node = merged >> op
    attach_dependencies(node, deps)
    if "state" in entry:
        state = entry["state"]
        if not isinstance(state, dict):
            raise ValueError(f"{spec_path}: the state of {name} must be a mapping, got {state!r}")
        op.load_state(_inside(root, entry["state_dir"], "state_dir"), state)
        if op.supports_groups and state.get("input_groups") is not None:
            op.input_groups = state["input_groups"]
    return entry["id"], node


def _inside(root: Path, rel: Any, what: str) -> Path:
    """``root / rel`` for a relative path under the statistics folder (a saved workflow reads nothing else)."""
    if not isinstance(rel, str):
        raise ValueError(f"{root / SPEC_FILE}: {what} must be a path, got {rel!r}")
    parts = PurePosixPath(rel).parts
    if not parts or parts[0] != STATS_DIR or ".." in parts or PurePosixPath(rel).is_absolute():
        raise ValueError(f"{root / SPEC_FILE}: {what} {rel!r} is not a path under {STATS_DIR}/")
    return root.joinpath(*parts)


# -- statistics checksums ---------------------------------------------------------------------
def file_sha256(path: Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    buf = bytearray(chunk)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as fh:
        while True:
            n = fh.readinto(buf)
            if not n:
                break
            h.update(view[:n])
    return h.hexdigest()


def _rows(path: Path) -> Optional[int]:
    """Row count of a parquet file from its footer (None for other files or an unreadable footer)."""
    if path.suffix != ".parquet":
        return None
    import pyarrow.parquet as pq

    try:
        return int(pq.read_metadata(path).num_rows)
    except Exception:  # noqa: BLE001 - a damaged footer: the checksum error says the rest
        return None


def _stats_files(root: Path) -> List[Path]:
    stats = root / STATS_DIR
    if not stats.is_dir():
        return []
    return sorted(p for p in stats.rglob("*") if p.is_file())


def stats_manifest(root: Path) -> Dict[str, Dict[str, Any]]:
    """``{"stats/<node>/<file>": {"sha256", "bytes", "rows"}}`` of every file under ``root/stats``
    (``rows``: parquet row count, None for other files)."""
    out: Dict[str, Dict[str, Any]] = {}
    for p in _stats_files(root):
        out[p.relative_to(root).as_posix()] = {"sha256": file_sha256(p), "bytes": p.stat().st_size, "rows": _rows(p)}
    return out


def verify_stats(root: Path, spec: Dict[str, Any]) -> Optional[Set[Path]]:
    """Check every statistics file of a saved workflow against ``spec["stats_files"]``.

    Raises ValueError naming the first file that is missing or whose sha256 differs (modified,
    truncated, swapped). Files under ``stats/`` the save did not write are logged (ops read only
    the files their state names). Folders of ``format_version`` 1 have no checksums: a warning.
    Returns the verified files (None for such a folder): ops read no other file of their state
    (:func:`tabprep.ops.base.state_file`). A file that is a symbolic link, or under one, is refused.
    """
    spec_path = root / SPEC_FILE
    recorded = spec.get("stats_files")
    if recorded is None and spec.get("format_version", 0) < 2:
        log.warning("%s was saved by tabprep %s (format_version %s) without checksums of its statistics files; "
                    "they are not verified. Save the workflow again to add them.",
                    spec_path, spec.get("tabprep_version", "?"), spec.get("format_version", 0))
        return None
    if not isinstance(recorded, dict):
        raise ValueError(f"{spec_path}: the checksums of the statistics files ('stats_files') are missing; the file "
                         f"was edited or damaged. Restore the folder or save the workflow again")
    verified: Set[Path] = set()
    if linked_stats_path(root, root / STATS_DIR):
        raise ValueError(f"{root / STATS_DIR} is a symbolic link: a saved workflow's statistics are plain files "
                         f"under {STATS_DIR}/ (recorded in {spec_path}); restore the folder or save the workflow again")
    for rel, rec in recorded.items():
        f = _inside(root, rel, "a statistics file")
        if linked_stats_path(root, f):
            raise ValueError(f"statistics file {f} (recorded in {spec_path}) is a symbolic link or lies under one: "
                             f"a saved workflow's statistics are plain files under {STATS_DIR}/; restore the folder "
                             f"or save the workflow again")
        if not f.is_file():
            raise ValueError(f"statistics file {f} is missing (recorded with its checksum in {spec_path}); "
                             f"restore the folder or save the workflow again")
        if not isinstance(rec, dict):
            raise ValueError(f"{spec_path}: the checksum record of {rel} is damaged: {rec!r}")
        if file_sha256(f) != rec.get("sha256"):
            size, rows = f.stat().st_size, _rows(f)
            detail = f"{size} bytes, saved with {rec.get('bytes')}"
            if rows is not None or rec.get("rows") is not None:
                detail += f"; {rows if rows is not None else 'unreadable'} rows, saved with {rec.get('rows')}"
            raise ValueError(f"statistics file {f} does not match the sha256 checksum recorded in {spec_path}: it "
                             f"was changed after saving (modified, truncated or swapped with another file; {detail}). "
                             f"Restore the folder or save the workflow again")
        verified.add(f)
    extra = [p.relative_to(root).as_posix() for p in _stats_files(root)
             if p.relative_to(root).as_posix() not in recorded and not p.name.startswith(".")]
    if extra:
        log.warning("%s: files under %s/ that the save did not write are ignored: %s", root, STATS_DIR,
                    ", ".join(extra[:5]) + (" ..." if len(extra) > 5 else ""))
    return verified


def _default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON-serializable: {type(o).__name__}")
