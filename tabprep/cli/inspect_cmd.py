"""``tabprep inspect``: describe a fitted workflow (or a transformed output folder) as text or JSON."""
from __future__ import annotations

import json
import math
from typing import Any, Dict, List, Optional

import click

from ..ops.embeddings import embedding_sizes_from_schema
from .progress import count
from ..schema import Schema

TOP_VALUES = 3
MAX_ITEMS = 8


def _read_json(path: str, name: str, storage_options: Optional[Dict[str, Any]]) -> Any:
    """``name`` in the folder (or URL) ``path``, decoded."""
    from ..io.fs import get_fs

    fs, p = get_fs(path, storage_options)
    with fs.open(fs.join(p, name), "r") as fh:
        return json.load(fh)


def describe_workflow(wf: Any, path: str, storage_options: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """JSON-able description: graph (as a spec), schemas, embedding sizes, per-op statistics."""
    from ..workflow.spec import SpecError

    saved = _read_json(path, "workflow.json", storage_options)
    try:
        spec: Any = wf.to_spec()
    except SpecError as exc:
        spec = {"not_expressible": str(exc), "graph": repr(wf)}
    stats = []
    for n in wf.stat_nodes:
        op = n.op
        stats.append({"node": wf.node_id(n), "op": op.label, "columns": n.input_columns,
                      "statistics": summarize_stats(op)})
    return {
        "kind": "workflow",
        "path": str(path),
        "tabprep_version": saved.get("tabprep_version"),
        "spec": spec,
        "input_columns": wf.input_columns,
        "input_schema": wf.input_schema.to_dict() if wf.input_schema is not None else None,
        "output_schema": wf.output_schema.to_dict(),
        "embedding_sizes": {k: list(v) for k, v in embedding_sizes_from_schema(wf.output_schema).items()},
        "statistics": stats,
        "training_profile": _training_profile(wf),
    }


def _training_profile(wf: Any) -> Optional[Dict[str, Any]]:
    from .quality_cmd import describe_profile

    return describe_profile(getattr(wf, "profile_", None))


def describe_output(path: str, storage_options: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Description of a folder (or URL) written by transform / convert (_schema.json, _metadata.json)."""
    from ..io.commit import INCOMPLETE_MARKER
    from ..io.fs import get_fs

    fs, root = get_fs(path, storage_options)
    schema = Schema.from_dict(_read_json(root, "_schema.json", storage_options))
    meta: Dict[str, Any] = {}
    if fs.exists(fs.join(root, "_metadata.json")):
        meta = _read_json(root, "_metadata.json", storage_options)
    return {
        "kind": "output",
        "path": str(path),
        "complete": fs.exists(fs.join(root, "_SUCCESS")) and not fs.exists(fs.join(root, INCOMPLETE_MARKER)),
        "format": meta.get("format"),
        "rows": meta.get("rows"),
        "files": len(meta.get("files", [])),
        "output_schema": schema.to_dict(),
        "embedding_sizes": {k: list(v) for k, v in embedding_sizes_from_schema(schema).items()},
    }


def summarize_stats(op: Any) -> Dict[str, Any]:
    """Per-column summary of an op's learned statistics (vocabularies by size and top values)."""
    from ..ops.categorify import shown_values

    stats = getattr(op, "stats_", None)
    if not isinstance(stats, dict):
        return {"value": _small(stats)}
    out: Dict[str, Any] = {}
    for key, st in stats.items():
        if isinstance(st, dict) and "values" in st and "freqs" in st:  # a vocabulary (Categorify)
            values, freqs = shown_values(st), st["freqs"]   # (a uint64 vocabulary's values, not their int64 bits)
            total = float(sum(int(f) for f in freqs)) + float(st.get("nulls", 0) or 0)
            top = []
            for v, f in list(zip(values, freqs))[:TOP_VALUES]:
                top.append({"value": _scalar(v), "count": int(f),
                            "share": round(int(f) / total, 4) if total else None})
            out[str(key)] = {"vocabulary": int(len(values)), "nulls": int(st.get("nulls", 0) or 0), "top": top}
        else:
            out[str(key)] = _small(st)
    return out


def _scalar(v: Any) -> Any:
    if hasattr(v, "item"):
        try:
            v = v.item()
        except (ValueError, AttributeError):
            pass
    if isinstance(v, float):
        return None if math.isnan(v) else float(f"{v:.6g}")
    if isinstance(v, (int, str, bool)) or v is None:
        return v
    return str(v)


def _small(obj: Any, depth: int = 0) -> Any:
    if isinstance(obj, dict):
        items = list(obj.items())
        out = {str(k): _small(v, depth + 1) for k, v in items[:MAX_ITEMS * 4]}
        if len(items) > MAX_ITEMS * 4:
            out["..."] = f"{len(items) - MAX_ITEMS * 4} more"
        return out
    if isinstance(obj, (str, bytes)) or not hasattr(obj, "__len__"):
        return _scalar(obj)
    n = len(obj)
    if n <= MAX_ITEMS and depth < 3:
        return [_small(x, depth + 1) for x in obj]
    return f"{n} values"


# -- text ------------------------------------------------------------------------------------
def echo_description(info: Dict[str, Any]) -> None:
    from ..workflow.spec import spec_to_yaml

    echo = click.echo
    if info["kind"] == "workflow":
        echo(f"workflow {info['path']} (saved by tabprep {info.get('tabprep_version')})")
        spec = info["spec"]
        if "not_expressible" in spec:
            echo(f"graph: {spec['graph']}")
            echo(f"  (no spec: {spec['not_expressible']})")
        else:
            echo("graph (spec):")
            for line in spec_to_yaml(spec).splitlines():
                echo("  " + line)
        names = info["input_columns"]
        of = f" of the {len(info['input_schema']['columns'])} in the fitted data" if info.get("input_schema") else ""
        echo(f"reads {count(len(names), 'column')}{of}: {_names(names)}")
    else:
        state = "complete" if info["complete"] else "INCOMPLETE (no _SUCCESS)"
        rows, files = info.get("rows"), info.get("files")
        rows_text = count(rows, "row") if isinstance(rows, int) else f"{rows} rows"
        files_text = count(files, "file") if isinstance(files, int) else f"{files} files"
        echo(f"output {info['path']}: {info.get('format')}, {rows_text} in {files_text}, {state}")
    cols = info["output_schema"]["columns"]
    sizes = info["embedding_sizes"]
    echo(f"output schema ({count(len(cols), 'column')}):")
    w = max([len(c["name"]) for c in cols] + [6])
    echo(f"  {'column':<{w}}  {'dtype':<8} {'tags':<26} {'cardinality':>11} {'emb dim':>7}")
    for c in cols:
        card = c.get("properties", {}).get("cardinality")
        dim = sizes.get(c["name"], [None, None])[1]
        dtype = c["dtype"] + ("[]" if c.get("is_list") else "")
        if c.get("depth", 1) > 1:   # nested: leaf dtype, one [] per level ([100] where the level is fixed)
            vcs = c.get("value_counts") or [None] * c["depth"]
            dtype = c["dtype"].replace("list<", "").rstrip(">") + "".join(
                f"[{v['max']}]" if v and v.get("min") is not None and v.get("min") == v.get("max") else "[]"
                for v in vcs)
        echo(f"  {c['name']:<{w}}  {dtype:<8} {','.join(c.get('tags', [])):<26} "
             f"{card if card is not None else '':>11} {dim if dim is not None else '':>7}")
    if sizes:
        echo(f"embedding sizes ({len(sizes)} categorical columns, (cardinality, dim)):")
        items = [f"{k}: ({v[0]:,}, {v[1]})" for k, v in sizes.items()]
        for i in range(0, len(items), 4):
            echo("  " + "   ".join(f"{x:<24}" for x in items[i:i + 4]).rstrip())
    if info["kind"] == "workflow" and info["statistics"]:
        echo("statistics:")
        for st in info["statistics"]:
            echo(f"  {st['node']} {st['op']} on {_names(st['columns'])}")
            for key, val in list(st["statistics"].items())[:40]:
                echo(f"    {key}: {_fmt_stat(val)}")
            if len(st["statistics"]) > 40:
                echo(f"    ... {len(st['statistics']) - 40} more (see --json)")
    prof = info.get("training_profile") if info["kind"] == "workflow" else None
    if prof:
        echo(f"training profile ({prof['rows']:,} rows; stats/profile.json, `tabprep drift` compares data with it):")
        w = max([len(n) for n in prof["columns"]] + [6])
        echo(f"  {'column':<{w}}  {'dtype':<8} {'nulls':>7} {'distinct':>9} {'min':>10} {'mean':>10} {'max':>10} {'top share':>9}")
        for name, c in list(prof["columns"].items())[:60]:
            cells = [_cell(c.get(k)) for k in ("min", "mean", "max")]
            echo(f"  {name:<{w}}  {c['dtype']:<8} {c['null_rate']:>7.2%} {_cell(c.get('distinct')):>9} "
                 f"{cells[0]:>10} {cells[1]:>10} {cells[2]:>10} {_cell(c.get('top_share')):>9}")
        if len(prof["columns"]) > 60:
            echo(f"  ... {len(prof['columns']) - 60} more (see --json)")


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def _names(names: List[str], limit: int = 12) -> str:
    if len(names) <= limit:
        return ", ".join(names)
    return ", ".join(names[:limit]) + f", ... ({len(names)} in all)"


def _fmt_stat(val: Any) -> str:
    if isinstance(val, dict) and "vocabulary" in val:
        top = ", ".join(f"{t['value']!r} ({t['share'] * 100:.1f}%)" if t.get("share") is not None else repr(t["value"])
                        for t in val["top"])
        return f"vocabulary {val['vocabulary']:,}, nulls {val['nulls']:,}" + (f"; most frequent: {top}" if top else "")
    if isinstance(val, dict):
        return ", ".join(f"{k} {_num(v)}" for k, v in val.items())
    return str(val)


def _num(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)
