"""The commit of folders on remote file systems (S3, GCS, HDFS... through fsspec): ``_SUCCESS`` last.

Object stores cannot rename a folder, so the local protocol of :mod:`tabprep.io.commit` (write
a hidden sibling, rename it into place) does not apply. A folder at a URL is written in place:

1. the target is checked like a local one (:func:`check_target`): it must be empty, or, with
   ``overwrite``, hold the markers of its kind (tabprep wrote it) or tabprep's
   :data:`~tabprep.io.commit.INCOMPLETE_MARKER` (an interrupted tabprep write), and no file tabprep
   did not write (:func:`~tabprep.io.layout.foreign_names`: the same rule and message as on a
   local disk). Anything else is refused and nothing is deleted;
2. :data:`~tabprep.io.commit.INCOMPLETE_MARKER` is written into the folder first, then what the
   previous version left there is deleted (so at every moment the folder carries a tabprep marker,
   and a crash leaves a folder that ``overwrite`` may replace);
3. the writer writes its files under the folder (a saved workflow, whose ops write local files, is
   written to a local spool folder and uploaded);
4. at the commit, ``_SUCCESS`` is written **last**, then the marker is removed.

Readers (:class:`tabprep.Dataset`, ``Workflow.load``, the loaders, the CLI's inputs) accept a
tabprep folder only with ``_SUCCESS`` and without the marker; otherwise they refuse it as
half-written, naming it. A failed write (an error in this process) deletes what it wrote; a
killed one leaves a folder that readers refuse and the next ``overwrite`` replaces. When one
task of a write fails, others may still be running (dask returns at the first error): the abort
first marks the marker ``aborted``, then deletes; every task that wrote a file checks the marker
afterwards (:func:`confirm_written`) and deletes its file when the write was aborted meanwhile,
so nothing is left behind whichever finishes first.

Unlike the local protocol, the previous version is gone once the new write starts, and the
folders of one :class:`~tabprep.io.commit.Transaction` (``fit-transform``'s output and
workflow) get their ``_SUCCESS`` one after the other: a crash between the two leaves the first
complete and the second refused as half-written.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Set

from .layout import INCOMPLETE_MARKER, METADATA_FILE, SUCCESS_FILE, FolderKind, foreign_names, refuse_foreign
from .fs import RemoteFS, StorageOptions, get_fs, remote_errors

log = logging.getLogger(__name__)


def _top_names(fs: RemoteFS, url: str, files: List[str]) -> Set[str]:
    """Names directly under the folder ``url`` (files, and the first part of deeper keys)."""
    prefix = url.rstrip("/") + "/"
    return {f[len(prefix):].split("/", 1)[0] for f in files if f.startswith(prefix)}


def owned(names: Set[str], kind: FolderKind) -> bool:
    """Did tabprep write the folder whose top-level ``names`` these are (complete or interrupted)?"""
    return INCOMPLETE_MARKER in names or all(m in names for m in kind.markers)


def check_target(path: str, kind: FolderKind, overwrite: bool, storage_options: StorageOptions = None,
                 fs: Optional[RemoteFS] = None) -> List[str]:
    """Raise ``FileExistsError`` unless a write of ``kind`` may create or replace the folder at the
    URL ``path``; return the files now under it (URLs) that the write would delete."""
    if fs is None:
        fs, path = get_fs(path, storage_options)
    try:
        with remote_errors(path, f"write the {kind.what}"):
            is_file = fs.isfile(path)
            files = [] if is_file else fs.find(path)
    except FileNotFoundError as exc:  # S3: NoSuchBucket
        raise FileNotFoundError(f"cannot write the {kind.what} {path!r}: {exc}. Does the bucket exist? Create it "
                                f"first, or check the URL") from exc
    if is_file:
        raise FileExistsError(f"{kind.what} {path!r} is an existing file; choose another path")
    if not files:
        return []
    names = _top_names(fs, path, files)
    if not overwrite:
        hint = " (it holds an interrupted tabprep write)" if INCOMPLETE_MARKER in names else ""
        raise FileExistsError(f"{kind.what} {path!r} exists and is not empty{hint}; pass overwrite=True "
                              f"(CLI: --overwrite) to replace it, or choose another path")
    if not owned(names, kind):
        raise FileExistsError(
            f"refusing to replace {path!r}: tabprep did not write it (a tabprep {kind.what} holds "
            f"{' and '.join(kind.markers)}), and replacing it would delete its {len(files)} object(s). Choose "
            f"another path, or remove those objects yourself")
    refuse_foreign(path, _foreign(fs, path, files))
    return files


def _foreign(fs: RemoteFS, url: str, files: List[str]) -> List[str]:
    """The objects under the tabprep folder ``url`` that tabprep did not write (relative to it)."""
    prefix = url.rstrip("/") + "/"
    rel = [f[len(prefix):] for f in files if f.startswith(prefix) and f != prefix]
    metadata = None
    if METADATA_FILE in rel:
        with remote_errors(url, "read"):
            try:
                metadata = fs.read_bytes(fs.join(url, METADATA_FILE))
            except FileNotFoundError:
                pass
    return foreign_names(rel, metadata, remote=True)


#: seconds an abort waits for this process's writes in flight to the folder to end (a task that
#: never ends must not hang the abort, and a process's exit after SIGTERM, forever)
ABORT_WAIT_S = 30.0
#: folder URL -> tasks of this process writing into it now (:func:`writing`)
_IN_FLIGHT: Dict[str, int] = {}
_IN_FLIGHT_CHANGED = threading.Condition()


@contextlib.contextmanager
def writing(root: str, storage_options: StorageOptions = None) -> Iterator[None]:
    """Around a task's write of files into the folder ``root`` being written in place, and its
    :func:`confirm_written`: :meth:`RemoteStage.abort` waits for the block to end. An upload that
    finished after the abort listed the folder, in a process that exited right after the abort
    (SIGTERM), was left behind: about 5 in 65 SIGTERMs, once as the folder's only object."""
    _, url = get_fs(root, storage_options)
    with _IN_FLIGHT_CHANGED:
        _IN_FLIGHT[url] = _IN_FLIGHT.get(url, 0) + 1
    try:
        yield
    finally:
        with _IN_FLIGHT_CHANGED:
            _IN_FLIGHT[url] -= 1
            if not _IN_FLIGHT[url]:
                del _IN_FLIGHT[url]
            _IN_FLIGHT_CHANGED.notify_all()


def _wait_for_writes(url: str) -> None:
    """Until no task of this process writes into ``url`` (at most :data:`ABORT_WAIT_S`)."""
    with _IN_FLIGHT_CHANGED:
        if not _IN_FLIGHT_CHANGED.wait_for(lambda: not _IN_FLIGHT.get(url), timeout=ABORT_WAIT_S):
            log.warning("aborting the write to %s: %d task(s) still writing after %.0f s; a file they finish "
                        "later is deleted by the task itself, or left under the folder's marker", url,
                        _IN_FLIGHT.get(url, 0), ABORT_WAIT_S)


class RemoteStage:
    """One folder at a URL being written in place (see the module docstring); the writer writes
    into :attr:`tmp` (the folder itself, or a local spool folder uploaded by :meth:`finish`)."""

    remote = True

    def __init__(self, fs: RemoteFS, final: str, kind: FolderKind, overwrite: bool, txid: str,
                 spool: Optional[Path]) -> None:
        self.fs = fs
        self.final = final
        self.kind = kind
        self.overwrite = overwrite
        self.txid = txid
        self.spool = spool
        self.finished = False
        #: our marker is in the folder: everything under it is this write's (abort may delete it)
        self.prepared = False

    @property
    def tmp(self) -> Any:
        return self.spool if self.spool is not None else self.final

    def prepare(self) -> None:
        """Check the folder again, write the marker, then delete the previous version's files."""
        old = check_target(self.final, self.kind, self.overwrite, fs=self.fs)
        marker = self.fs.join(self.final, INCOMPLETE_MARKER)
        note = {"txid": self.txid, "pid": os.getpid(), "host": socket.gethostname(), "time": time.time(),
                "note": "written by tabprep; this folder is being written, or its write was interrupted"}
        self.fs.write_bytes(marker, json.dumps(note).encode())
        self.prepared = True
        stale = [f for f in old if f != marker]
        if stale:
            log.info("replacing %s: deleting the %d objects of its previous version", self.final, len(stale))
            self.fs.rm(stale)

    def write_success(self) -> None:
        """Nothing here: the commit writes ``_SUCCESS``, after every other file."""

    def finish(self) -> None:
        """The writer is done (a spool folder is uploaded now)."""
        if self.spool is not None:
            self.prepare()
            self.fs.upload(str(self.spool), self.final, skip=(SUCCESS_FILE, INCOMPLETE_MARKER))
            shutil.rmtree(self.spool, ignore_errors=True)
        self.finished = True

    def commit(self) -> None:
        """``_SUCCESS`` last: from now on readers accept the folder."""
        self.fs.write_bytes(self.fs.join(self.final, SUCCESS_FILE), b"")
        self.fs.rm([self.fs.join(self.final, INCOMPLETE_MARKER)])
        self.prepared = False

    def abort(self) -> None:
        """Delete what this write put in the folder (the marker last); a spool folder too."""
        if self.spool is not None:
            shutil.rmtree(self.spool, ignore_errors=True)
        if not self.prepared:
            return
        marker = self.fs.join(self.final, INCOMPLETE_MARKER)
        try:
            # from here on a task that writes a file deletes it itself (confirm_written); one that
            # wrote before this is in the listing below
            self.fs.write_bytes(marker, json.dumps({"txid": self.txid, "aborted": True}).encode())
            # the tasks of this process still writing see the mark when they end and delete their
            # files; wait for them, then list (a process exiting after SIGTERM kills its threads)
            _wait_for_writes(self.final)
            self.fs.rm([f for f in self.fs.find(self.final) if f != marker])
            self.fs.rm([marker])
        except Exception:  # noqa: BLE001 - the marker keeps the folder refused; log, keep the first error
            log.exception("could not delete the interrupted write at %s; readers refuse it and the next write "
                          "there with overwrite replaces it", self.final)
        self.prepared = False

    def member(self) -> dict:
        return {"final": self.final, "what": self.kind.what}


def confirm_written(root: str, written: List[str], storage_options: StorageOptions = None) -> None:
    """Run by a task after it wrote ``written`` into the folder ``root`` being written in place: if
    that write was aborted meanwhile (the marker is gone or says ``aborted``), delete the files
    and raise, so no file outlives an aborted write."""
    fs, root = get_fs(root, storage_options)
    try:
        note = json.loads(fs.read_bytes(fs.join(root, INCOMPLETE_MARKER)))
    except FileNotFoundError:
        note = None
    if not isinstance(note, dict) or note.get("aborted"):
        fs.rm(written)
        raise RuntimeError(f"the write to {root!r} was aborted while this task ran; deleted {written}")


def stage(path: str, kind: FolderKind, overwrite: bool, txid: str, storage_options: StorageOptions = None,
          spool: bool = False) -> RemoteStage:
    """Start writing the folder at the URL ``path``: checked now; a direct stage is prepared now
    (marker, previous version deleted), a spooled one when :meth:`RemoteStage.finish` uploads it,
    so a write that fails before then leaves the previous version in place."""
    fs, url = get_fs(path, storage_options)
    check_target(url, kind, overwrite, fs=fs)
    spool_dir = Path(tempfile.mkdtemp(prefix="tabprep-spool-")) if spool else None
    st = RemoteStage(fs, url, kind, overwrite, txid, spool_dir)
    if not spool:
        try:
            with remote_errors(url, f"write the {kind.what}"):
                st.prepare()
        except BaseException:
            st.abort()
            raise
    return st


def half_written(url: str, kind: FolderKind, marker: bool, redo: str) -> str:
    """The message of a reader refusing an incomplete tabprep folder on a remote file system."""
    why = (f"it still holds {INCOMPLETE_MARKER}" if marker else f"it has no {SUCCESS_FILE}")
    return (f"{url!r} looks half-written: it is a tabprep {kind.what} on remote storage and {why}, so the write "
            f"that made it was interrupted (or is still running). {redo}")


@contextlib.contextmanager
def downloaded(path: str, kind: FolderKind, storage_options: StorageOptions = None,
               redo: str = "Write it again.") -> Iterator[str]:
    """A complete tabprep folder at a URL, copied into a local temporary folder for the block.

    Raises ``FileNotFoundError`` when nothing is there, when ``path`` is a file, or when the
    folder is no tabprep folder of ``kind`` at all (none of its markers, nor ``_SUCCESS``, nor
    tabprep's incomplete marker: a data folder given by mistake); ``ValueError``
    (:func:`half_written`) for a tabprep folder without ``_SUCCESS`` or with the marker.
    """
    fs, url = get_fs(path, storage_options)
    with remote_errors(url, "read"):
        files = fs.find(url)
    if not files:
        raise FileNotFoundError(f"nothing at {url!r}: no {kind.what} there")
    if files == [url]:  # find() of a key lists the key itself
        raise FileNotFoundError(f"{url!r} is a file, not a {kind.what}")
    names = _top_names(fs, url, files)
    if not names & {INCOMPLETE_MARKER, SUCCESS_FILE, *kind.markers}:
        raise FileNotFoundError(f"{url!r} holds no {' or '.join(kind.markers)}: it is no tabprep {kind.what}")
    if INCOMPLETE_MARKER in names or SUCCESS_FILE not in names:
        raise ValueError(half_written(url, kind, INCOMPLETE_MARKER in names, redo))
    local = tempfile.mkdtemp(prefix="tabprep-fetch-")
    try:
        fs.download(url, local)
        yield local
    finally:
        shutil.rmtree(local, ignore_errors=True)


__all__ = ["RemoteStage", "check_target", "confirm_written", "downloaded", "half_written", "owned", "stage", "writing"]
