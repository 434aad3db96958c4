"""Where files live: the local disk or a remote file system named by an fsspec URL.

Every path tabprep reads or writes may be a local path (unchanged: plain ``os`` calls, as
fast as before), a ``file://`` URL (the same local path) or a URL of a remote file system that
fsspec knows (``s3://`` with ``s3fs``, ``gs://`` with ``gcsfs``, ``hdfs://``, ``abfs://``...).
:func:`get_fs` returns one small interface for both, :class:`LocalFS` and :class:`RemoteFS`,
so the readers, the writer and the commit protocol call the same methods wherever the files are.

``storage_options`` (a dict, as in pandas and dask) are the remote file system's constructor
arguments (``key``/``secret``, ``endpoint_url``, ``client_kwargs``, ``anon``...); without them
the file system reads the usual environment itself (for S3, botocore: ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_S3``, ``AWS_PROFILE``...).
They are ignored for local paths. Dask tasks receive the options (a small dict) and build the
file system on the worker; fsspec caches one instance per set of options.

Remote paths are handled as canonical URLs (``s3://bucket/key``, no trailing slash), so they
compare, join and show in messages like local absolute paths do.
"""
from __future__ import annotations

import contextlib
import glob as _glob
import os
import posixpath
import shutil
from typing import Any, Dict, Iterator, List, Optional, Tuple

#: fsspec protocols that name the local file system (their URLs are plain local paths)
LOCAL_PROTOCOLS = ("file", "local")
#: object stores: keys, no folders (creating one would at most create a bucket) and no rename
OBJECT_STORES = ("s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl", "oss", "r2")

StorageOptions = Optional[Dict[str, Any]]


def protocol_of(path: Any) -> str:
    """The fsspec protocol of ``path``: ``"file"`` for local paths (and ``os.PathLike``)."""
    if not isinstance(path, str) or "://" not in path and "::" not in path:
        return "file"
    from fsspec.utils import get_protocol

    return get_protocol(path)


def is_remote(path: Any) -> bool:
    """True for a URL of a file system other than the local one (``s3://...``, ``gs://...``)."""
    return protocol_of(path) not in LOCAL_PROTOCOLS


def local_path(path: Any) -> Any:
    """``path`` with a ``file://`` / ``local://`` prefix removed (other paths unchanged)."""
    if isinstance(path, str) and "://" in path and protocol_of(path) in LOCAL_PROTOCOLS:
        return path.split("://", 1)[1]
    return path


class LocalFS:
    """The local disk through ``os`` / ``shutil`` (exactly what tabprep did before URLs)."""

    remote = False
    storage_options: StorageOptions = None

    def exists(self, path: Any) -> bool:
        return os.path.exists(path)

    def isdir(self, path: Any) -> bool:
        return os.path.isdir(path)

    def isfile(self, path: Any) -> bool:
        return os.path.isfile(path)

    def join(self, base: Any, *names: str) -> str:
        return os.path.join(base, *names)

    def dirname(self, path: Any) -> str:
        return os.path.dirname(path)

    def basename(self, path: Any) -> str:
        return os.path.basename(path)

    def norm(self, path: Any) -> str:
        """Absolute, normalized path (what comparisons and ``_metadata.json`` listings use)."""
        return os.path.normpath(os.path.abspath(path))

    def glob(self, pattern: str) -> List[str]:
        return sorted(_glob.glob(pattern))

    def open(self, path: Any, mode: str = "rb") -> Any:
        return open(path, mode)

    def size(self, path: Any) -> int:
        return os.path.getsize(path)

    def makedirs(self, path: Any) -> None:
        os.makedirs(path, exist_ok=True)

    def rmtree(self, path: Any) -> None:
        shutil.rmtree(path)

    def du(self, path: Any) -> int:
        total = 0
        for root, _, files in os.walk(path):
            for f in files:
                try:
                    total += os.path.getsize(os.path.join(root, f))
                except OSError:
                    pass
        return total

    def arrow_path(self, path: Any) -> Tuple[Any, Any]:
        """``(path, filesystem)`` for pyarrow / cuDF readers: the path itself and no file system."""
        return path, None

    @contextlib.contextmanager
    def output(self, path: Any) -> Iterator[Any]:
        """What a writer (``pq.write_table``, cuDF ``to_parquet``) writes to: locally the path itself."""
        yield path

    def describe(self, path: Any) -> str:
        return str(path)


LOCAL = LocalFS()


class RemoteFS:
    """A remote file system (an fsspec instance) addressed by canonical URLs.

    Picklable (fsspec file systems pickle by their constructor arguments). Listing methods drop
    fsspec's listing cache first: another process (a dask worker, another job) may have written
    since this one listed.
    """

    remote = True

    def __init__(self, fs: Any, storage_options: StorageOptions = None) -> None:
        self.fs = fs
        self.storage_options = dict(storage_options) if storage_options else None
        proto = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
        self.protocol = proto
        self.object_store = proto in OBJECT_STORES

    # -- names ------------------------------------------------------------------------------
    def strip(self, url: Any) -> str:
        """The file system's own path of ``url`` (``bucket/key`` for S3)."""
        return self.fs._strip_protocol(str(url)).rstrip("/")

    def url(self, stripped: str) -> str:
        return self.fs.unstrip_protocol(stripped.rstrip("/"))

    def norm(self, path: Any) -> str:
        return self.url(_normpath(self.strip(path)))

    def join(self, base: Any, *names: str) -> str:
        return "/".join([str(base).rstrip("/")] + [str(n).strip("/") for n in names])

    def dirname(self, path: Any) -> str:
        return self.url(posixpath.dirname(self.strip(path)))

    def basename(self, path: Any) -> str:
        return posixpath.basename(str(path).rstrip("/"))

    def describe(self, path: Any) -> str:
        return str(path)

    # -- queries ------------------------------------------------------------------------------
    def _fresh(self) -> Any:
        self.fs.invalidate_cache()
        return self.fs

    def exists(self, path: Any) -> bool:
        return bool(self._fresh().exists(self.strip(path)))

    def isdir(self, path: Any) -> bool:
        return bool(self._fresh().isdir(self.strip(path)))

    def isfile(self, path: Any) -> bool:
        return bool(self._fresh().isfile(self.strip(path)))

    def find(self, path: Any) -> List[str]:
        """Every file under the folder ``path`` (recursively), as URLs, sorted.

        Keys ending in ``/`` are left out: they are the empty "folders" the S3 console (and other
        tools) create, zero-byte placeholders, not files; a prefix holding only one is empty, as
        an empty local folder is, and writers leave it in place."""
        return sorted(self.url(p) for p in self._fresh().find(self.strip(path)) if not p.endswith("/"))

    def glob(self, pattern: str) -> List[str]:
        found = self._fresh().glob(self.strip(pattern), detail=True)
        return sorted(self.url(p) for p, info in found.items() if info.get("type") != "directory")

    def size(self, path: Any) -> int:
        return int(self.fs.size(self.strip(path)))

    def du(self, path: Any) -> int:
        try:
            return int(self._fresh().du(self.strip(path), total=True))
        except (OSError, ValueError):
            return 0

    # -- files ----------------------------------------------------------------------------------
    def open(self, path: Any, mode: str = "rb") -> Any:
        return self.fs.open(self.strip(path), mode)

    def write_bytes(self, path: Any, data: bytes) -> None:
        self.fs.pipe_file(self.strip(path), data)

    def read_bytes(self, path: Any) -> bytes:
        return self.fs.cat_file(self.strip(path))

    def makedirs(self, path: Any) -> None:
        if not self.object_store:  # object stores have no folders (and makedirs may create a bucket)
            self.fs.makedirs(self.strip(path), exist_ok=True)

    def rm(self, paths: List[str]) -> None:
        if paths:
            self.fs.rm([self.strip(p) for p in paths])

    def rmtree(self, path: Any) -> None:
        files = self.find(path)
        self.rm(files)
        if not self.object_store and self.exists(path):
            self.fs.rm(self.strip(path), recursive=True)

    def arrow_path(self, path: Any) -> Tuple[str, Any]:
        """``(path, filesystem)`` for pyarrow (which wraps an fsspec file system itself) and cuDF."""
        return self.strip(path), self.fs

    @contextlib.contextmanager
    def output(self, path: Any) -> Iterator[Any]:
        """A binary file object writing ``path``: uploaded when the block ends, thrown away (no
        object at all) when it raises."""
        fh = self.fs.open(self.strip(path), "wb")
        try:
            yield fh
        except BaseException:
            try:
                discard = getattr(fh, "discard", None)
                if discard is not None:
                    discard()  # S3: aborts the multipart upload; nothing was written yet otherwise
            finally:
                fh.closed = True  # not close(): that would upload what is buffered
            raise
        fh.close()

    def download(self, folder: Any, local_dir: str) -> List[str]:
        """Copy every file under ``folder`` into ``local_dir`` (same relative layout); returns
        the relative paths."""
        root = self.strip(folder)
        # every key is checked before anything is written: a key such as ``wf/stats/../../x.pth``
        # (object stores take any string as a key) would otherwise land outside ``local_dir``
        # (a ``.pth`` file in site-packages runs at the next Python start)
        plan = [(p, _relative_key(self.strip(p), root, p)) for p in self.find(folder)]
        top = os.path.realpath(local_dir)
        rels = []
        for p, rel in plan:
            target = os.path.join(top, *rel.split("/"))
            if os.path.commonpath([top, os.path.realpath(target)]) != top:  # a symlink made meanwhile
                raise ValueError(f"the remote key {p!r} resolves outside the folder it is downloaded into; refusing")
            os.makedirs(os.path.dirname(target), exist_ok=True)
            self.fs.get_file(self.strip(p), target)
            rels.append(rel)
        return rels

    def upload(self, local_dir: str, folder: Any, skip: Tuple[str, ...] = ()) -> List[str]:
        """Copy every file under ``local_dir`` to ``folder`` (same relative layout), except the
        top-level names in ``skip``; returns the relative paths."""
        rels = []
        for root, dirs, names in os.walk(local_dir):
            dirs.sort()
            for n in sorted(names):
                rel = os.path.relpath(os.path.join(root, n), local_dir).replace(os.sep, "/")
                if rel in skip:
                    continue
                self.fs.put_file(os.path.join(root, n), self.strip(self.join(folder, rel)))
                rels.append(rel)
        return rels


def _relative_key(key: str, root: str, url: str) -> str:
    """``key`` relative to the folder ``root`` (both without protocol), or ``ValueError`` naming
    ``url`` when it does not stay inside it: a part ``..`` or ``.``, an empty part (``a//b``,
    read as an absolute path by some tools) or a backslash (a separator on Windows)."""
    prefix = root.rstrip("/") + "/"
    rel = key[len(prefix):] if key.startswith(prefix) else None
    parts = rel.split("/") if rel else []
    if not parts or any(part in ("", ".", "..") or "\\" in part or "\x00" in part for part in parts):
        raise ValueError(f"the remote key {url!r} does not resolve inside the folder {root!r} "
                         f"(it holds '..', '.', an empty part or a backslash: it would be written outside "
                         f"the local copy); refusing to download it. Remove that object from the bucket")
    return rel


FS = Any  # LocalFS | RemoteFS


def _normpath(stripped: str) -> str:
    """``posixpath.normpath`` of a file system's own path, keeping the ``scheme://host`` that some
    keep in it (http / https): normpath made ``http://h/x`` ``http:/h/x``, a host named "http"."""
    if "://" not in stripped:
        return posixpath.normpath(stripped) if stripped else stripped
    scheme, rest = stripped.split("://", 1)
    host, _, tail = rest.partition("/")
    return f"{scheme}://{host}" + ("/" + posixpath.normpath(tail).lstrip("/") if tail else "")


def get_fs(path: Any, storage_options: StorageOptions = None) -> Tuple[FS, Any]:
    """``(file system, path)`` of ``path``: :data:`LOCAL` and the local path (``file://``
    removed), or a :class:`RemoteFS` and the canonical URL.

    Raises ``ImportError`` naming the package a protocol needs (``pip install s3fs``...).
    """
    if not is_remote(path):
        return LOCAL, local_path(path)
    fs = remote_fs(path, storage_options)
    return fs, fs.norm(path)


def remote_fs(url: str, storage_options: StorageOptions = None) -> RemoteFS:
    """The :class:`RemoteFS` of ``url`` built with ``storage_options`` (fsspec caches instances)."""
    import fsspec

    try:
        fs, _ = fsspec.core.url_to_fs(url, **(storage_options or {}))
    except ImportError as exc:
        raise ImportError(f"reading or writing {url!r} needs fsspec's driver for its protocol: {exc}") from exc
    except TypeError as exc:  # an option the file system does not take
        raise TypeError(f"storage_options {sorted(storage_options or {})} do not fit {url!r}: {exc}") from exc
    return RemoteFS(fs, storage_options)


def fs_of(path: Any, storage_options: StorageOptions = None) -> FS:
    """Only the file system of :func:`get_fs`."""
    return LOCAL if not is_remote(path) else remote_fs(path, storage_options)


def arrow_path(path: Any, storage_options: StorageOptions = None) -> Tuple[Any, Any]:
    """``(path, filesystem)`` for pyarrow / cuDF readers; ``filesystem`` is None for local paths."""
    if not is_remote(path):
        return path, None
    return remote_fs(path, storage_options).arrow_path(path)


#: what an unreachable or refusing remote file system says, whatever its driver's exception types
CREDENTIALS_HINT = ("Check the URL, its credentials and endpoint: storage_options= (CLI: --storage-option KEY=VALUE), "
                    "or the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL, AWS_PROFILE...)")


@contextlib.contextmanager
def remote_errors(url: Any, action: str) -> Iterator[None]:
    """Turn a remote file system's own errors (botocore's, aiohttp's...) into ``OSError`` naming
    ``url`` and what to check; tabprep's ``ValueError`` / ``FileNotFoundError`` / ``FileExistsError``
    pass through unchanged, as does every error of a local path (``url`` not remote: the advice on
    credentials and endpoints is not for it)."""
    if not is_remote(url):
        yield
        return
    try:
        yield
    except (ValueError, FileNotFoundError, FileExistsError, TypeError, ImportError):
        raise
    except Exception as exc:  # noqa: BLE001 - any driver's error gets the same advice
        raise OSError(f"cannot {action} {url!r}: {type(exc).__name__}: {exc}. {CREDENTIALS_HINT}") from exc


def canonical(path: Any, storage_options: StorageOptions = None) -> Tuple[str, str]:
    """``(canonical path, separator)``: the real path of a local one, the normalized URL of a remote one."""
    fs, p = get_fs(path, storage_options)
    return (fs.norm(p), "/") if fs.remote else (os.path.realpath(p), os.sep)


def inside(child: str, parent: str, sep: str) -> bool:
    """Whether the canonical path ``child`` lies inside the folder ``parent`` (see :func:`canonical`)."""
    return child.startswith(parent.rstrip(sep) + sep)


def overlap(out: Any, inputs: Any, storage_options: StorageOptions = None) -> Optional[Tuple[str, str]]:
    """``(label, why)`` if writing the folder ``out`` would touch one of ``inputs`` (``(label, path,
    storage options)``: input folders and files): ``out`` is an input, lies inside an input folder or
    holds an input; else None. ``why`` names the input and its label; callers prefix the output and
    add the fix."""
    o, sep = canonical(out, storage_options)
    for label, inp, options in inputs:
        i = canonical(inp, options)[0]
        if protocol_of(i) != protocol_of(o):
            continue  # another file system
        if o == i:
            return label, f"is the input {inp!r} ({label}): it holds the input, which writing there would delete"
        if inside(o, i, sep):
            return label, (f"is inside the input folder {inp!r} ({label}): it would be read back as input, and replacing "
                    f"it could delete input files")
        if inside(i, o, sep):
            return label, f"holds the input {inp!r} ({label}), which writing there would delete"
    return None


def read_bytes(path: Any, storage_options: StorageOptions = None) -> bytes:
    fs, p = get_fs(path, storage_options)
    with fs.open(p, "rb") as fh:
        return fh.read()


__all__ = ["LOCAL", "LocalFS", "RemoteFS", "arrow_path", "canonical", "fs_of", "get_fs", "inside", "is_remote",
           "local_path", "overlap", "protocol_of", "read_bytes", "remote_errors", "remote_fs"]
