"""Recovery of what crashed commits (:mod:`tabprep.io.commit`) left next to a path.

A journal (``.tabprep-commit.json`` in a temporary folder or in the committed folder, or a
commit record ``.NAME.tabprep-commit-TXID.json``) is data on disk, and disks are shared: a
received workflow folder, an ``--out`` folder, a hidden sibling may hold a journal that tabprep
did not write. Recovery therefore verifies before it acts (issue #30):

* a journal is used only where the protocol puts it (the temporary folder or record named with
  its own ``txid``, or the target folder when its record exists), and only when every member it
  names follows the protocol's names: ``.NAME.tabprep-tmp-TXID`` / ``.NAME.tabprep-old-TXID``
  next to ``NAME``, the record next to the first member, ``txid`` 12 hex digits, a known folder
  kind with its own markers, and the path being recovered among its members. Otherwise it is
  ignored (logged) and nothing it names is touched;
* a temporary folder is deleted only when it holds a journal with its own ``txid`` (tabprep's
  commit protocol wrote it; a temporary gets its name only once its journal is in it, so one
  without a journal is a leftover of an older tabprep, deleted too); a replaced version (``-old-``) only when it is empty, a symbolic
  link (unlinked, its target untouched) or a folder holding a tabprep kind's markers;
* a journal of a process that may still run is never recovered: the same host checks the
  process id (and that the process started before the journal); a journal of **another host**
  (a shared file system) cannot be checked and is never stale by age alone: the write is
  refused, naming host, pid and start time, until that run ends or the user deletes its hidden
  folders;
* readers (``delete=False``) never delete: they only rename (finish a committed write whose
  target is missing, or put the previous version back).
"""
from __future__ import annotations

import datetime
import logging
import os
import re
import shutil
import socket
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Set

from .layout import GENERATED, INCOMPLETE_MARKER, JOURNAL_FILE, OUTPUT, WORKFLOW, FolderKind, check_target

log = logging.getLogger(__name__)

PathLike = Any

_TMP, _OLD, _RECORD = ".tabprep-tmp-", ".tabprep-old-", ".tabprep-commit-"
#: suffix of a temporary folder being created (renamed to its name once it holds its journal)
INIT = ".init"
#: transaction ids tabprep writes (uuid4 hex, 12 digits)
TXID = re.compile(r"[0-9a-f]{12}")
#: ids of temporaries left by older tabprep versions (no journal)
_LEGACY_ID = re.compile(r"[0-9a-f]{4,32}")
KINDS: Dict[str, FolderKind] = {k.what: k for k in (OUTPUT, WORKFLOW, GENERATED)}

#: transactions of this process that are still running (their temporaries are not stale)
ACTIVE: Set[str] = set()


def target(path: PathLike) -> Path:
    """The folder a commit at ``path`` replaces: ``path`` made absolute, and, when ``path`` is a
    symbolic link, the folder it points to (the link is kept and the data lands where it points)."""
    p = os.path.abspath(os.fspath(path))
    return Path(os.path.realpath(p) if os.path.islink(p) else p)


def sibling(final: Path, kind: str, txid: str) -> Path:
    """The protocol's name of a temporary (``kind``: ``_TMP``, ``_OLD``) or record of ``final``."""
    if kind == _RECORD:
        return final.parent / f".{final.name}{_RECORD}{txid}.json"
    return final.parent / f".{final.name}{kind}{txid}"


# -- who holds a journal --------------------------------------------------------------------------
def _since(j: Dict[str, Any]) -> str:
    t = j.get("time")
    if not isinstance(t, (int, float)):
        return "an unknown time (written by an older tabprep)"
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _process_started_after(pid: int, when: float) -> bool:
    """Did process ``pid`` start after ``when`` (so it reused the id of the journal's writer)?"""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat") as fh:
            boot = next(int(line.split()[1]) for line in fh if line.startswith("btime "))
        return boot + ticks / os.sysconf("SC_CLK_TCK") > when + 2.0  # 2 s: clock granularity
    except (OSError, ValueError, IndexError, StopIteration):
        return False


def is_live(j: Dict[str, Any]) -> bool:
    """May the process that wrote journal ``j`` still be running?

    Another host: always (it cannot be checked from here; age alone proves nothing on a shared
    file system). This host: the process exists, is no zombie, and did not start after the
    journal was written (a reused id)."""
    host = j.get("host")
    if host != socket.gethostname():
        return True
    try:
        pid = int(j.get("pid", -1))
    except (TypeError, ValueError):
        return False
    if pid <= 0:
        return False
    if pid == os.getpid():
        return j.get("txid") in ACTIVE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    except OSError:
        return False
    try:  # a killed child not yet reaped is a zombie: dead
        with open(f"/proc/{pid}/stat") as fh:
            if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                return False
    except (OSError, IndexError):
        return True
    when = j.get("time")
    return not (isinstance(when, (int, float)) and _process_started_after(pid, float(when)))


def in_use(final: Path, j: Dict[str, Any], folders: List[Path]) -> str:
    """The refusal for a path a live (or unverifiable) write holds."""
    host, pid = j.get("host", "?"), j.get("pid", "?")
    where = ", ".join(str(f) for f in folders) or f"the hidden .{final.name}.tabprep-* folders next to it"
    other = host != socket.gethostname()
    why = ("another host cannot be checked from here, so its write is never taken as abandoned"
           if other else "that process is still running")
    return (f"{str(final)!r} is in use by host {host}, pid {pid} since {_since(j)}: a tabprep write (process {pid}) "
            f"to it is still in progress ({why}). Wait for it to end; if that run is dead, delete {where} yourself")


# -- verification -----------------------------------------------------------------------------------
def valid(j: Dict[str, Any], final: Path) -> bool:
    """Does journal ``j`` follow the commit protocol's names, and speak for ``final``?"""
    txid = j.get("txid")
    members = j.get("members")
    if not isinstance(txid, str) or not TXID.fullmatch(txid) or not isinstance(members, list) or not members:
        return False
    finals = []
    for m in members:
        if not isinstance(m, dict) or not all(isinstance(m.get(k), str) for k in ("final", "tmp", "old", "what")):
            return False
        f = Path(m["final"])
        kind = KINDS.get(m["what"])
        if (not f.is_absolute() or ".." in f.parts or f.name in ("", ".", "..") or kind is None
                or list(m.get("markers", [])) != list(kind.markers)
                or Path(m["tmp"]) != sibling(f, _TMP, txid) or Path(m["old"]) != sibling(f, _OLD, txid)):
            return False
        finals.append(f)
    if len(set(finals)) != len(finals) or any(a in b.parents for a in finals for b in finals):
        return False
    if j.get("record") != str(sibling(finals[0], _RECORD, txid)):
        return False
    return final in finals


def journal_of(folder: Path) -> Optional[Dict[str, Any]]:
    """The journal inside ``folder`` (a real folder, not a link), or None."""
    if folder.is_symlink() or not folder.is_dir():
        return None
    return read_json(folder / JOURNAL_FILE)


def journal_txid(folder: Path) -> Optional[str]:
    j = journal_of(folder)
    return j.get("txid") if j else None


def _ours(tmp: Path, txid: str) -> bool:
    """Did this commit protocol write the temporary ``tmp`` of transaction ``txid``?"""
    return journal_txid(tmp) == txid


def removable_old(old: Path) -> bool:
    """Is ``old`` a version tabprep replaced (so it may be put back or deleted): a link, an empty
    folder or one a tabprep kind owns (a folder of someone else's files named like one is not)."""
    if old.is_symlink():
        return True
    if not old.is_dir():
        return False
    try:
        empty = not any(old.iterdir())
    except OSError:
        return False
    return empty or any(k.owns(old) for k in KINDS.values()) or (old / INCOMPLETE_MARKER).exists()


# -- recovery ---------------------------------------------------------------------------------------
def recover(path: PathLike, delete: bool = True) -> List[str]:
    """Finish or undo what crashed commits left at ``path``; return what was done (for logs).

    Commits with a record are rolled forward (every member of the transaction), those without
    are rolled back (their temporaries deleted). Leftovers of older tabprep versions (no
    journal): a missing ``path`` gets its ``-old-`` copy back, other leftovers are deleted.
    ``delete=False`` (readers): renames only, nothing is deleted. What is verified first: see
    the module docstring. Raises ``RuntimeError`` ("in use by host H, pid P since T") when a
    write that may still run holds ``path``.
    """
    final = target(path)
    parent, prefix = final.parent, f".{final.name}."
    try:
        siblings = [parent / n for n in os.listdir(parent) if n.startswith(prefix)]
    except (FileNotFoundError, NotADirectoryError):
        return []
    done: List[str] = []
    journals: Dict[str, Dict[str, Any]] = {}
    legacy_tmps: List[Path] = []
    olds: List[Path] = []
    tmps_of: Dict[str, List[Path]] = {}
    for p in siblings:
        rest = p.name[len(prefix) - 1:]
        if rest.startswith(_TMP):
            tid = rest[len(_TMP):]
            creating = tid.endswith(INIT) and TXID.fullmatch(tid[:-len(INIT)]) is not None
            tid = tid[:-len(INIT)] if creating else tid
            if not _LEGACY_ID.fullmatch(tid) or p.is_symlink() or not p.is_dir():
                log.warning("leaving %s alone: it is named like a tabprep temporary but is not one", p)
                continue
            j = journal_of(p)
            if j is None and creating:
                # killed between making it and writing its journal: empty, or a torn journal only
                # (rmdir removes only an empty folder, so nothing else can go)
                if delete and _remove_empty_init(p):
                    done.append(f"removed the interrupted write {p}")
            elif j is None:
                legacy_tmps.append(p)
            elif j.get("txid") != tid:
                log.warning("leaving %s alone: its journal names another transaction", p)
            else:
                journals.setdefault(tid, j)
                tmps_of.setdefault(tid, []).append(p)
        elif rest.startswith(_OLD):
            if _LEGACY_ID.fullmatch(rest[len(_OLD):]):
                olds.append(p)
        elif rest.startswith(_RECORD):
            tid = rest[len(_RECORD):]
            if tid.endswith(".json.part") and TXID.fullmatch(tid[:-10]):
                if delete:
                    p.unlink(missing_ok=True)  # a record whose writing was interrupted: never committed
            elif tid.endswith(".json") and TXID.fullmatch(tid[:-5]):
                j = read_json(p)
                if j is not None and j.get("txid") == tid[:-5]:
                    journals[tid[:-5]] = j
    j = journal_of(final)
    if j is not None and isinstance(j.get("txid"), str) and valid(j, final) and Path(j["record"]).exists():
        journals.setdefault(j["txid"], j)  # between the renames and the cleanup of a commit
    for txid, j in journals.items():
        if is_live(j):
            raise RuntimeError(in_use(final, j, tmps_of.get(txid, [])))
    for txid, j in journals.items():
        record = sibling(final, _RECORD, txid)
        if valid(j, final):
            done += _resolve(j, delete)
            record = Path(j["record"])
        else:
            log.warning("ignoring a commit journal of %s that does not follow tabprep's commit protocol "
                        "(transaction %s); nothing it names is touched", final, txid)
        for p in tmps_of.get(txid, []):  # a temporary of a commit never decided: its own journal proves it ours
            if delete and p.exists() and not record.exists() and _ours(p, txid):
                _remove_tree(p)
                done.append(f"removed the uncommitted write {p}")
    # leftovers no journal speaks for (older tabprep versions, or a crash before the journal)
    for p in legacy_tmps:
        if delete:
            _remove_tree(p)
            done.append(f"removed the interrupted write {p}")
    olds = [p for p in olds if p.exists() or p.is_symlink()]
    strays = [p for p in olds if not removable_old(p)]
    for p in strays:
        log.warning("leaving %s alone: named like a replaced tabprep version, but tabprep did not write it", p)
    olds = [p for p in olds if p not in strays]
    if olds and not final.exists() and not final.is_symlink():
        keep = max(olds, key=lambda p: p.lstat().st_mtime)
        os.rename(keep, final)
        done.append(f"restored the previous version of {final} from {keep.name}")
        olds.remove(keep)
    for p in olds:
        if not delete:
            continue
        remove_replaced(p)
        done.append(f"removed the replaced version {p}")
    for line in done:
        log.warning("recovering an interrupted tabprep commit: %s", line)
    return done


def _resolve(j: Dict[str, Any], delete: bool) -> List[str]:
    """Roll the (verified) transaction of journal ``j`` back (no record) or forward (record)."""
    txid = j["txid"]
    record = Path(j["record"])
    members = j["members"]
    done: List[str] = []
    if not record.exists():  # never committed: roll back
        for m in members:
            tmp, old, final = Path(m["tmp"]), Path(m["old"]), Path(m["final"])
            if delete and tmp.exists() and _ours(tmp, txid):
                _remove_tree(tmp)
                done.append(f"removed the uncommitted write {tmp}")
            if removable_old(old) and not final.exists() and not final.is_symlink():
                os.rename(old, final)  # defensive: never lose both
                done.append(f"restored {final}")
        return done
    for m in members:  # committed: roll forward
        final, tmp, old = Path(m["final"]), Path(m["tmp"]), Path(m["old"])
        if tmp.exists() and _ours(tmp, txid):
            if (final.exists() or final.is_symlink()) and journal_txid(final) != txid:
                if old.exists() or old.is_symlink():
                    raise RuntimeError(f"cannot complete the interrupted commit of {str(final)!r}: both {final} and "
                                       f"{old} exist; move one of them away")
                check_target(final, KINDS[m["what"]], overwrite=True)
                os.rename(final, old)
            os.rename(tmp, final)
            done.append(f"completed the commit of {final}")
        elif not final.exists() and not final.is_symlink() and removable_old(old):
            os.rename(old, final)  # the new version is gone (deleted by hand?): keep the old one
            done.append(f"restored {final} (its new version was missing)")
    if not delete:
        return done
    for m in members:
        final, old = Path(m["final"]), Path(m["old"])
        if (old.exists() or old.is_symlink()) and final.exists() and removable_old(old):
            remove_replaced(old)
        if journal_txid(final) == txid:
            (final / JOURNAL_FILE).unlink(missing_ok=True)
    record.unlink(missing_ok=True)
    return done


# -- helpers ------------------------------------------------------------------------------------------
def read_json(path: Path) -> Optional[Dict[str, Any]]:
    import json

    try:
        with open(path) as fh:
            data = json.load(fh)
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) and "txid" in data else None


def _remove_empty_init(folder: Path) -> bool:
    """Remove a temporary being created that holds at most its torn journal; False if it holds more."""
    try:
        names = os.listdir(folder)
        if set(names) - {JOURNAL_FILE + ".part"}:
            log.warning("leaving %s alone: it holds files tabprep did not write there", folder)
            return False
        for n in names:
            (folder / n).unlink(missing_ok=True)
        os.rmdir(folder)
    except OSError:
        return False
    return True


def remove_replaced(old: Path) -> None:
    """Delete a replaced version (``-old-``) so that a kill at any point leaves something
    :func:`removable_old` still recognises: :data:`INCOMPLETE_MARKER` is written first and
    deleted last, after every other entry (a plain ``rmtree`` may delete ``_SUCCESS`` first,
    and a kill then leaves a folder of files recovery must not touch)."""
    if old.is_symlink() or not old.is_dir():
        _remove_tree(old)
        return
    marker = old / INCOMPLETE_MARKER
    try:
        if not marker.exists():
            marker.write_text("written by tabprep; this folder is a replaced version being deleted\n")
        with os.scandir(old) as entries:
            for entry in entries:
                if entry.name == INCOMPLETE_MARKER:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    _remove_tree(Path(entry.path))
                else:
                    Path(entry.path).unlink(missing_ok=True)
        marker.unlink(missing_ok=True)
    except OSError:  # e.g. a read-only folder: the committed new version stands; delete what can be
        log.warning("could not fully delete the replaced version %s", old, exc_info=True)
    _remove_tree(old)


def _remove_tree(path: Path, wait_s: float = 5.0) -> None:
    """Remove a temporary folder (a symbolic link: the link only). When one task of a write
    raises, a local dask scheduler returns at once while other tasks may still be writing into
    the folder (one rmtree then fails on a non-empty directory), so retry until it is gone."""
    if path.is_symlink():
        path.unlink(missing_ok=True)
        return
    deadline = time.monotonic() + wait_s
    while True:
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists() or time.monotonic() > deadline:
            return
        time.sleep(0.05)


__all__ = ["recover", "target", "is_live", "valid"]
