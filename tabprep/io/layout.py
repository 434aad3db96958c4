"""The layout of the folders tabprep writes: file names and the markers that show tabprep wrote a folder.

Shared by the local commit protocol (:mod:`tabprep.io.commit`, which re-exports these names) and
the one of remote file systems (:mod:`tabprep.io.objectstore`).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA_FILE = "_schema.json"
SUCCESS_FILE = "_SUCCESS"
METADATA_FILE = "_metadata.json"
TFRECORD_SPEC_FILE = "tfrecord_spec.json"
WORKFLOW_FILE = "workflow.json"
#: present in a folder while it is being written: readers refuse such a folder
INCOMPLETE_MARKER = ".tabprep-incomplete"
#: the journal inside a temporary folder (and, briefly, inside the committed folder)
JOURNAL_FILE = ".tabprep-commit.json"


@dataclass(frozen=True)
class FolderKind:
    """What a committed folder is (for messages) and the files that show tabprep wrote it."""

    what: str
    markers: tuple

    def owns(self, folder: Path) -> bool:
        return all((folder / m).exists() for m in self.markers)


#: a transformed / converted dataset (Hadoop and Spark write ``_SUCCESS`` too, not ``_metadata.json``)
OUTPUT = FolderKind("output folder", (SUCCESS_FILE, METADATA_FILE))
#: a saved workflow
WORKFLOW = FolderKind("workflow folder", (WORKFLOW_FILE,))
#: synthetic data of ``tabprep generate``: parquet files with ``_metadata.json`` (files, row counts,
#: what generated them) and ``_SUCCESS``, the output layout, so readers verify it like an output and
#: either may replace the other with ``overwrite`` (both are data tabprep wrote)
GENERATED = FolderKind("generated data folder", (SUCCESS_FILE, METADATA_FILE))

__all__ = ["SCHEMA_FILE", "SUCCESS_FILE", "METADATA_FILE", "TFRECORD_SPEC_FILE", "WORKFLOW_FILE", "INCOMPLETE_MARKER",
           "JOURNAL_FILE", "FolderKind", "OUTPUT", "WORKFLOW", "GENERATED", "check_target", "foreign_files", "foreign_names",
           "refuse_foreign"]


def check_target(path: Any, kind: FolderKind, overwrite: bool) -> None:
    """Raise ``FileExistsError`` unless a commit of ``kind`` may create or replace ``path``.

    ``path`` may be missing or an empty folder; with ``overwrite``, also a folder holding
    ``kind``'s markers (one tabprep wrote). Anything else (a file, a folder of someone else's
    files) is refused with a message naming it: replacing it would delete those files.
    """
    p = Path(path)
    if not p.exists() and not p.is_symlink():
        return
    if not p.is_dir():
        raise FileExistsError(f"{kind.what} {str(p)!r} is an existing file; choose another path")
    if not any(p.iterdir()):
        return
    if not overwrite:
        raise FileExistsError(f"{kind.what} {str(p)!r} exists and is not empty; pass overwrite=True "
                              f"(CLI: --overwrite) to replace it, or choose another path")
    if not kind.owns(p):
        raise FileExistsError(
            f"refusing to replace {str(p)!r}: tabprep did not write it (a tabprep {kind.what} holds "
            f"{' and '.join(kind.markers)}), and replacing it would delete its files. Choose another path, "
            f"or move that folder away yourself")
    refuse_foreign(str(p), foreign_files(p))


def refuse_foreign(path: str, foreign: list) -> None:
    """Raise ``FileExistsError`` naming the first of ``foreign`` (files under ``path`` tabprep did
    not write), if any: replacing the folder would delete them."""
    if foreign:
        more = f" (and {len(foreign) - 1} more)" if len(foreign) > 1 else ""
        raise FileExistsError(
            f"refusing to replace {path!r}: it holds {foreign[0]!r}{more}, which tabprep did not write, and "
            f"replacing the folder would delete it. Move it out of the folder, or choose another path")


#: names of the files tabprep writes in an output folder besides the data files its
#: ``_metadata.json`` lists (dask's ``_metadata`` / ``_common_metadata`` summaries included;
#: ``_file_list.txt``: HugeCTR's list of the files, with ``to_parquet(cats=, conts=, labels=)``)
_OUTPUT_NAMES = {SUCCESS_FILE, METADATA_FILE, SCHEMA_FILE, TFRECORD_SPEC_FILE, "_metadata", "_common_metadata",
                 "_file_list.txt", INCOMPLETE_MARKER, JOURNAL_FILE}


#: the data files of an output as tabprep names them (writer.plan_outputs; ``_parts/``: the parts
#: of a re-cut output), recognized in a remote folder an interrupted write left (whose
#: ``_metadata.json``, written last, does not list them yet)
_DATA_NAME = re.compile(r"(?:_parts/|worker_\d+/)?part-\d{5}\.(?:parquet|tfrecord(?:\.gz)?)")


def foreign_names(rel: list, metadata: Any = None, remote: bool = False) -> list:
    """Which of ``rel`` (the files under a folder tabprep wrote, relative to it, ``/``-separated)
    tabprep did not write, sorted (see :func:`foreign_files`). ``metadata``: the text of the
    folder's ``_metadata.json`` (None: none). ``remote``: a folder written in place on object
    storage, where a workflow folder gets ``_SUCCESS`` too and one holding
    :data:`INCOMPLETE_MARKER` (an interrupted write) may hold data files not yet listed."""
    rel = sorted(rel)
    if WORKFLOW_FILE in rel:
        own = {WORKFLOW_FILE, JOURNAL_FILE, INCOMPLETE_MARKER} | ({SUCCESS_FILE} if remote else set())
        return [r for r in rel if r not in own and not r.startswith("stats/")]
    try:
        listed = {str(e.get("file", "")) for e in json.loads(metadata).get("files", []) if isinstance(e, dict)}
    except (TypeError, ValueError, AttributeError):
        listed = set()
    interrupted = remote and INCOMPLETE_MARKER in rel
    return [r for r in rel if r.rsplit("/", 1)[-1] not in _OUTPUT_NAMES and r not in listed
            and not (interrupted and _DATA_NAME.fullmatch(r))]


def foreign_files(folder: Any) -> list:
    """The files under a local folder tabprep wrote (an output, generated data or a workflow) that
    it did not write, as paths relative to it, sorted: in a workflow folder anything but
    ``workflow.json`` and ``stats/`` (whose files its checksums list); in an output folder
    anything but tabprep's own names and the files its ``_metadata.json`` lists."""
    p = Path(folder)
    rel = [f.relative_to(p).as_posix() for f in p.rglob("*") if f.is_file() or f.is_symlink()]
    try:
        metadata = (p / METADATA_FILE).read_text()
    except (OSError, ValueError):
        metadata = None
    return foreign_names(rel, metadata)
