"""Save / load a fitted workflow as a folder: ``workflow.json`` + per-op statistics files.

``workflow.json`` is human-readable: the tabprep version, every node of the graph (kind,
parents, selected columns, op class and parameters), the input and output schemas and the
embedding sizes. Statistics live next to it under ``stats/<node id>/`` (vocabularies as
parquet, small statistics inline as JSON). Loading executes no stored code: ops are looked
up by name among registered ops, user functions (LambdaOp, Filter, Rename) are imported by
``module:qualname``, and pickled functions are read only with ``allow_pickle=True``.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Optional

import numpy as np

from .._version import __version__
from ..io import commit
from ..io.commit import WORKFLOW_FILE
from ..ops.base import Operator, StatOperator, registered_ops
from ..ops.lambda_op import resolve_function
from ..ops.embeddings import embedding_sizes_from_schema
from ..schema import Schema
from .node import Node
from .workflow import Workflow

SPEC_FILE = WORKFLOW_FILE
FORMAT_VERSION = 1


def save_workflow(wf: Workflow, path: str, allow_pickle: bool = False,
                  transaction: Optional[commit.Transaction] = None) -> None:
    """Write ``wf`` to the folder ``path`` atomically (a temp folder renamed at the end).

    ``path`` may be new, an empty folder or a saved workflow (replaced only once the new one is
    complete); any other folder is refused with ``FileExistsError`` (its files are kept). With
    ``transaction`` the folder is committed with the transaction's other folders.
    """
    wf._require_fitted()
    if wf.input_schema is None:
        raise RuntimeError("fit the workflow (or transform a dataset with it) before saving")
    txn = transaction if transaction is not None else commit.Transaction()
    try:
        stage = txn.stage(path, commit.WORKFLOW, overwrite=True)
    except BaseException:
        if transaction is None:
            txn.abort()
        raise
    tmp = stage.tmp
    try:
        nodes = []
        for n in wf.nodes:
            nid = wf.node_id(n)
            entry: Dict[str, Any] = {"id": nid, "kind": n.kind, "parents": [wf.node_id(p) for p in n.parents]}
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
        spec = {
            "format_version": FORMAT_VERSION,
            "tabprep_version": __version__,
            "output": wf.node_id(wf.output_node),
            "nodes": nodes,
            "input_schema": wf.input_schema.to_dict(),
            "output_schema": wf.output_schema.to_dict(),
            "embedding_sizes": {k: list(v) for k, v in embedding_sizes_from_schema(wf.output_schema).items()},
            "allow_pickle": allow_pickle,
        }
        with open(tmp / SPEC_FILE, "w") as fh:
            json.dump(spec, fh, indent=2, default=_default)
        stage.finish()
        if transaction is None:
            txn.commit()
    except BaseException:
        if transaction is None:
            txn.abort()
        else:
            txn.discard(stage)
        raise


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


def load_workflow(path: str, allow_pickle: bool = False) -> Workflow:
    root = Path(path)
    spec_path = root / SPEC_FILE
    if not spec_path.exists():
        raise FileNotFoundError(f"{str(root)!r} is not a saved tabprep workflow (no {SPEC_FILE}); "
                                f"save one with workflow.save(path) or `tabprep fit`")
    with open(spec_path) as fh:
        spec = json.load(fh)
    if spec.get("format_version", 0) > FORMAT_VERSION:
        raise ValueError(f"{spec_path} was written by a newer tabprep ({spec.get('tabprep_version')}); upgrade tabprep")
    ops = registered_ops()
    built: Dict[str, Node] = {}
    for entry in spec["nodes"]:
        parents = [built[p] for p in entry["parents"]]
        kind = entry["kind"]
        if kind == "select":
            node = Node("select", columns=entry["columns"], groups=[tuple(g) for g in entry.get("groups", [])])
        elif kind == "concat":
            node = Node("concat", parents=parents)
        elif kind == "drop":
            node = Node("drop", parents=parents, columns=entry["columns"])
        else:
            cls = ops.get(entry["op"])
            if "op_class" in entry:
                cls = resolve_function(entry["op_class"])
                if not (isinstance(cls, type) and issubclass(cls, Operator)):
                    raise TypeError(f"{entry['op_class']} is not a tabprep Operator")
            if cls is None:
                raise ValueError(f"unknown op {entry['op']!r} in {spec_path}; is the module defining it imported?")
            params = dict(entry.get("params", {}))
            f = params.get("f")
            if isinstance(f, dict) and "pickled" in f:
                if not allow_pickle:
                    raise ValueError(f"{spec_path}: op {entry['op']} holds a pickled function; loading it runs code "
                                     f"from the file. Pass allow_pickle=True only if you trust {root}.")
                import cloudpickle

                with open(root / f["pickled"], "rb") as fh:
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
            if "state" in entry:
                op.load_state(root / entry["state_dir"], entry["state"])
                if op.supports_groups and entry["state"].get("input_groups") is not None:
                    op.input_groups = entry["state"]["input_groups"]
        built[entry["id"]] = node
    wf = Workflow(built[spec["output"]])
    wf._bind(Schema.from_dict(spec["input_schema"]), f"the saved input schema of {root}")
    return wf


def _default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON-serializable: {type(o).__name__}")
