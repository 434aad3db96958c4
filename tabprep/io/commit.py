"""The layout of the folders tabprep writes, and their atomic commit.

Every folder tabprep writes (a transformed output, a saved workflow) is written into a hidden
temporary sibling and renamed into place at the end:

* ``.NAME.tabprep-tmp-TXID``: the new version while it is being written (it holds
  ``.tabprep-incomplete`` until the writer is done, so readers refuse it, and
  ``.tabprep-commit.json``, the journal the next run at that path recovers from);
* ``.NAME.tabprep-old-TXID``: the previous version, moved aside during the commit and deleted
  only once the new one is in place;
* ``.NAME.tabprep-commit-TXID.json``: the commit record. Writing it (atomically, by a rename)
  is the commit point of a :class:`Transaction`: without it a crashed commit is rolled back
  (the temporaries are deleted and the previous versions stay), with it it is rolled forward
  (the remaining renames are done), so a joint commit of several folders (``fit-transform``'s
  output and workflow) leaves all of them new or all of them old.

Folders at URLs of remote file systems (``s3://``, ``gs://``...: no rename there) are written in
place and committed by writing ``_SUCCESS`` last (:mod:`tabprep.io.objectstore`); a transaction
may mix them with local folders.

A folder that tabprep did not write is never replaced: an existing folder must be empty or
hold the markers of its kind (:data:`OUTPUT`: ``_SUCCESS`` and ``_metadata.json``;
:data:`WORKFLOW`: ``workflow.json``; :data:`GENERATED`, ``tabprep generate``'s synthetic data:
the same markers as an output, since it is written in the output layout), otherwise staging it raises ``FileExistsError`` naming
it. Temporaries left by a crashed run at a path (killed process, power is not covered: data
files are not fsynced, for speed) are recovered by the next :meth:`Transaction.stage` of that
path, or explicitly with :func:`recover`.

Example (both folders or neither)::

    with Transaction() as txn:
        dataset.to_parquet("out/", overwrite=True, transaction=txn)
        workflow.save("wf/", transaction=txn)
    # committed here; an exception inside the block leaves both previous versions
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Set, Union

from . import objectstore, recovery
from .fs import LOCAL, is_remote, local_path
from .layout import (GENERATED, INCOMPLETE_MARKER, JOURNAL_FILE, METADATA_FILE, OUTPUT,  # noqa: F401
                     SCHEMA_FILE, SUCCESS_FILE, TFRECORD_SPEC_FILE, WORKFLOW, WORKFLOW_FILE, FolderKind,
                     check_target)

log = logging.getLogger(__name__)

# -- output layout: tabprep/io/layout.py (its names are re-exported here, where callers find them) --
_TMP, _OLD, _RECORD = ".tabprep-tmp-", ".tabprep-old-", ".tabprep-commit-"

PathLike = Union[str, "os.PathLike[str]"]

#: transactions of this process that are still running (their temporaries are not stale)
_ACTIVE: Set[str] = recovery.ACTIVE


# -- checks ----------------------------------------------------------------------------------
# -- one folder of a transaction -------------------------------------------------------------
@dataclass
class Stage:
    """One folder being written: write into :attr:`tmp`, call :meth:`finish`, then the
    transaction commits it."""

    final: Path
    tmp: Path
    kind: FolderKind
    overwrite: bool
    txid: str
    finished: bool = False
    old: Path = field(init=False)
    #: a local folder (:class:`tabprep.io.objectstore.RemoteStage` is the remote one)
    remote = False
    #: the file system of :attr:`tmp` (:mod:`tabprep.io.fs`)
    fs = LOCAL

    def __post_init__(self) -> None:
        self.old = self.final.parent / f".{self.final.name}{_OLD}{self.txid}"

    def write_success(self) -> None:
        """Mark the folder complete (``_SUCCESS``); it is renamed into place at the commit."""
        (self.tmp / SUCCESS_FILE).write_text("")

    def finish(self) -> None:
        """The writer is done: the folder is complete (readers no longer refuse it)."""
        (self.tmp / INCOMPLETE_MARKER).unlink(missing_ok=True)
        self.finished = True

    def member(self) -> Dict[str, Any]:
        return {"final": str(self.final), "tmp": str(self.tmp), "old": str(self.old),
                "what": self.kind.what, "markers": list(self.kind.markers)}


class Transaction:
    """Commit one or more folders together: after :meth:`commit` all are new; after a failure,
    :meth:`abort` or a crash (recovered by the next run at any of the paths) all are old.

    Use as a context manager: leaving the block normally commits, an exception aborts.
    Writers take it as ``transaction=`` (:meth:`tabprep.Dataset.to_parquet`,
    :meth:`~tabprep.Dataset.to_tfrecord`, :meth:`tabprep.Workflow.save`) and stage their
    folder in it instead of committing it themselves.
    """

    def __init__(self) -> None:
        self.txid = f"{uuid.uuid4().hex[:12]}"
        self.stages: List[Stage] = []
        #: folders at URLs of remote file systems (:class:`tabprep.io.objectstore.RemoteStage`)
        self.remote_stages: List[Any] = []
        self.state = "open"  # open -> committed | aborted | failed (left to recovery)
        self.started = time.time()
        self._journals_stale = False
        _ACTIVE.add(self.txid)

    # -- staging ------------------------------------------------------------------------------
    def stage(self, path: PathLike, kind: FolderKind, overwrite: bool = False, storage_options: Any = None,
              spool: bool = False) -> Stage:
        """Check ``path`` (:func:`check_target`), recover what a crashed run left there, and
        create the temporary sibling the writer fills (it holds :data:`INCOMPLETE_MARKER`).

        A URL of a remote file system (``storage_options``: its options) gets a
        :class:`tabprep.io.objectstore.RemoteStage` instead: written in place, or with ``spool``
        (for writers of local files) in a local folder uploaded when the stage finishes.
        """
        if self.state != "open":
            raise RuntimeError(f"this transaction is {self.state}; start a new one")
        if is_remote(path):
            return self._stage_remote(str(path), kind, overwrite, storage_options, spool)
        # a symbolic link is kept: its target is what gets replaced (renames inside the link's
        # folder would put a real folder where the link was, on the link's disk)
        final = recovery.target(local_path(path))
        for s in self.stages:
            if s.final == final or s.final in final.parents or final in s.final.parents:
                raise ValueError(f"{str(final)!r} and {str(s.final)!r} cannot be committed together: "
                                 f"{'they are the same folder' if s.final == final else 'one is inside the other'}")
        recover(final)
        check_target(final, kind, overwrite)
        tmp = final.parent / f".{final.name}{_TMP}{self.txid}"
        # made under a name recovery leaves to its owner, and renamed to ``tmp`` once it holds its
        # journal and marker: a temporary without a journal is then never a live write's (another
        # host's recovery could not tell it from a leftover otherwise)
        init = final.parent / f"{tmp.name}{recovery.INIT}"
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
            init.mkdir()
        except OSError as exc:
            raise PermissionError(f"cannot write to {str(final.parent)!r}: {exc}. Choose a writable path.") from exc
        stage = Stage(final, tmp, kind, overwrite, self.txid)
        _write_json(init / JOURNAL_FILE, self._journal([s.member() for s in self.stages + [stage]]))
        (init / INCOMPLETE_MARKER).write_text("written by tabprep; this folder is an interrupted write\n")
        os.rename(init, tmp)
        self.stages.append(stage)
        self._prepare()  # every temporary names all of them: a rollback at any path removes all
        return stage

    def _stage_remote(self, path: str, kind: FolderKind, overwrite: bool, storage_options: Any,
                      spool: bool) -> Any:
        url = objectstore.get_fs(path, storage_options)[1]
        for s in self.remote_stages:
            a, b = s.final.rstrip("/") + "/", url.rstrip("/") + "/"
            if a.startswith(b) or b.startswith(a):
                raise ValueError(f"{url!r} and {s.final!r} cannot be committed together: "
                                 f"{'they are the same folder' if a == b else 'one is inside the other'}")
        st = objectstore.stage(url, kind, overwrite, self.txid, storage_options, spool)
        self.remote_stages.append(st)
        return st

    def discard(self, stage: Stage, wait_s: float = 5.0) -> None:
        """Drop a stage whose writer failed: its temporary folder is removed."""
        if stage.remote:
            if stage in self.remote_stages:
                self.remote_stages.remove(stage)
            stage.abort()
            return
        if stage in self.stages:
            self.stages.remove(stage)
            self._journals_stale = True
        _remove_tree(stage.tmp, wait_s)

    # -- commit -------------------------------------------------------------------------------
    def commit(self) -> None:
        """Replace every staged folder by its new version, all or none.

        Raises (and rolls back) if a stage is not finished or if a folder tabprep did not
        write appeared at one of the paths while the job ran.
        """
        if self.state != "open":
            raise RuntimeError(f"this transaction is {self.state}")
        try:
            unfinished = [str(s.final) for s in self.stages + self.remote_stages if not s.finished]
            if unfinished:
                raise RuntimeError(f"cannot commit: the writes of {unfinished} did not finish")
            for s in self.stages:
                check_target(s.final, s.kind, s.overwrite)
            if self._journals_stale:  # a stage was discarded: the journals must not name it
                self._prepare()
        except BaseException:
            self.abort()
            raise
        try:
            self._write_record()
        except BaseException:
            self._record_path().unlink(missing_ok=True)
            self.abort()
            raise
        try:
            for s in self.stages:
                self._move_aside(s)
            for s in self.stages:
                self._move_in(s)
        except BaseException:
            self._undo()
            raise
        self._cleanup()
        try:  # remote folders after the local ones: each gets its _SUCCESS, last
            for s in self.remote_stages:
                s.commit()
        finally:
            self.state = "committed"
            _ACTIVE.discard(self.txid)

    def abort(self) -> None:
        """Remove every temporary folder of this transaction; the paths keep their old state."""
        if self.state in ("committed", "failed"):
            return
        for s in list(self.stages):
            _remove_tree(s.tmp)
        for s in list(self.remote_stages):
            s.abort()
        self.stages = []
        self.remote_stages = []
        self.state = "aborted"
        _ACTIVE.discard(self.txid)

    def __enter__(self) -> "Transaction":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self.state != "open":
            return
        if exc_type is None:
            self.commit()
        else:
            self.abort()

    # -- protocol steps (separate methods so tests can stop between any two) ------------------
    def _journal(self, members: List[Dict[str, Any]]) -> Dict[str, Any]:
        record = (recovery.sibling(Path(members[0]["final"]), _RECORD, self.txid) if members
                  else self._record_path())
        return {"txid": self.txid, "pid": os.getpid(), "host": socket.gethostname(), "time": self.started,
                "record": str(record), "members": members}

    def _record_path(self) -> Path:
        first = self.stages[0].final if self.stages else Path(os.getcwd()) / "_"
        return first.parent / f".{first.name}{_RECORD}{self.txid}.json"

    def _prepare(self) -> None:
        """Every temporary folder gets the journal naming all members (the commit is not decided
        until the record exists)."""
        members = [s.member() for s in self.stages]
        for s in self.stages:
            # atomically: a temporary always holds a whole journal (one without is a leftover)
            _write_json(s.tmp / JOURNAL_FILE, self._journal(members))
        self._journals_stale = False

    def _write_record(self) -> None:
        """The commit point: from here on a crash is rolled forward."""
        if self.stages:
            # not fsynced: the data files are not either (speed); the protocol covers killed
            # processes, where the kernel keeps every write, not power loss
            _write_json(self._record_path(), self._journal([s.member() for s in self.stages]))

    @staticmethod
    def _move_aside(s: Stage) -> None:
        if s.final.exists() or s.final.is_symlink():
            os.rename(s.final, s.old)

    @staticmethod
    def _move_in(s: Stage) -> None:
        os.rename(s.tmp, s.final)

    def _cleanup(self) -> None:
        for s in self.stages:
            recovery.remove_replaced(s.old)
        for s in self.stages:
            (s.final / JOURNAL_FILE).unlink(missing_ok=True)
        self._record_path().unlink(missing_ok=True)

    def _undo(self) -> None:
        """An error (not a crash) during the renames: put the old versions back."""
        try:
            for s in reversed(self.stages):
                if _journal_txid(s.final) == self.txid:
                    os.rename(s.final, s.tmp)
                if s.old.exists() and not s.final.exists():
                    os.rename(s.old, s.final)
            self._record_path().unlink(missing_ok=True)
        except OSError:
            # leave the record: the next run at these paths rolls the commit forward
            log.exception("could not roll back the commit of %s; the next write there completes it",
                          [str(s.final) for s in self.stages])
            self.state = "failed"  # abort() must not delete what the roll-forward needs
            _ACTIVE.discard(self.txid)
            return
        self.abort()


# -- recovery --------------------------------------------------------------------------------

@contextlib.contextmanager
def staged(path: PathLike, kind: "FolderKind", overwrite: bool = False,
           transaction: Optional["Transaction"] = None, storage_options: Any = None,
           spool: bool = False) -> Iterator["Stage"]:
    """Stage one folder for the ``with`` block that writes it.

    In ``transaction`` (its owner commits it with its other folders) or, without one, in a
    transaction of its own that is committed when the block ends. On an error the stage is
    dropped (its own transaction aborted: nothing that looks complete is left) and the error
    re-raised. Writers (``write_dataset``, ``save_workflow``) use this so that borrowing a
    transaction or owning one is decided in one place. ``storage_options`` and ``spool``: see
    :meth:`Transaction.stage` (URLs of remote file systems).
    """
    txn = transaction if transaction is not None else Transaction()
    try:
        stage = txn.stage(path, kind, overwrite=overwrite, storage_options=storage_options, spool=spool)
    except BaseException:
        if transaction is None:
            txn.abort()
        raise
    try:
        yield stage
        stage.finish()
        if transaction is None:
            txn.commit()
    except BaseException:
        if transaction is None:
            txn.abort()
        else:
            txn.discard(stage)
        raise

def recover(path: PathLike, delete: bool = True) -> List[str]:
    """Finish or undo what crashed commits left at ``path`` (see :func:`tabprep.io.recovery.recover`:
    journals are verified first; ``delete=False``, for readers, only renames)."""
    return recovery.recover(path, delete=delete)


_journal_txid = recovery.journal_txid
_read_json = recovery.read_json
_remove_tree = recovery._remove_tree
_is_live = recovery.is_live


def _write_json(path: Path, obj: Any, atomic: bool = True) -> None:
    """Write ``obj`` to ``path``, atomically by default (temporary file + rename)."""
    part = path.parent / f"{path.name}.part" if atomic else path
    with open(part, "w") as fh:
        json.dump(obj, fh)
    if atomic:
        os.replace(part, path)


def staged_paths(path: PathLike) -> Iterator[Path]:
    """The hidden temporaries (``-tmp-``, ``-old-``, commit records) next to ``path``."""
    final = recovery.target(path)
    prefix = f".{final.name}.tabprep-"
    if final.parent.is_dir():
        for n in sorted(os.listdir(final.parent)):
            if n.startswith(prefix):
                yield final.parent / n


__all__ = ["SCHEMA_FILE", "SUCCESS_FILE", "METADATA_FILE", "TFRECORD_SPEC_FILE", "WORKFLOW_FILE",
           "INCOMPLETE_MARKER", "FolderKind", "OUTPUT", "WORKFLOW", "GENERATED", "Stage", "Transaction", "check_target",
           "recover", "staged_paths"]
