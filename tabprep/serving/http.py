"""HTTP serving of a fitted workflow: a Starlette app run by uvicorn (``tabprep serve WF_DIR``).

Endpoints:

* ``POST /transform`` (``?cast=true`` to convert values of another kind, see
  :mod:`tabprep.serving.columns`). The body is JSON, one of:

  - one row, ``{"C1": 123, "I1": 4, "genres": ["a", "b"]}`` -> one row of outputs,
    ``{"C1": 5, "I1": 0.43, "genres": [3, 4]}``;
  - rows, ``{"rows": [{...}, {...}]}`` (or a bare list of row objects) -> ``{"rows": [...]}``
    (a bare list gets a bare list);
  - columns, ``{"columns": {"C1": [123, 7], "I1": [4, null]}}`` -> ``{"columns": {...}}``.

  Nulls are ``null``. Float outputs are written in full, a float32 output as its float32 value
  (parse them as float64, and round a float32 output to float32, to get the exact offline
  value; the output schema, ``GET /schema``, gives each dtype); non-finite floats are written
  as ``NaN`` / ``Infinity`` / ``-Infinity`` (Python's JSON, which most JSON libraries accept
  with an option), and a null float output is ``NaN``. List outputs are JSON lists.
* ``GET /health`` -> ``{"status": "ok"}``.
* ``GET /schema`` -> the input schema, the output schema and the embedding sizes.

Errors: 400 malformed JSON or request shape, 413 body over the limit, 422 a value the input
contract refuses (the message names the column; ``"column"`` holds it too), 500 otherwise.
"""
from __future__ import annotations

import json
import logging
import math
import os
import re
import time
from typing import Any, Dict, List, Optional, Tuple

from .columns import ServingInputError
from .nested import renest
from .transform import ServingTransform

log = logging.getLogger(__name__)

#: default request body limit, bytes
MAX_BODY = 1 << 20

try:  # orjson is ~5x faster than json for the small objects of one request; optional
    import orjson as _orjson
except ImportError:  # pragma: no cover - depends on the environment
    _orjson = None


def _loads(body: bytes) -> Any:
    if _orjson is not None:
        try:
            return _orjson.loads(body)
        except _orjson.JSONDecodeError:
            pass  # NaN / Infinity tokens, which only Python's json accepts: try it below
    return json.loads(body)


def _finite(values: Any) -> bool:
    for v in values:
        if type(v) is float and not math.isfinite(v):
            return False
        if type(v) is list and not _finite(v):
            return False
    return True


def _dumps(obj: Any, flat_values: Any) -> bytes:
    if _orjson is not None and _finite(flat_values):
        return _orjson.dumps(obj)
    return json.dumps(obj, separators=(",", ":")).encode()


#: a JSON escape of a UTF-16 surrogate (``\ud800``): only a pair of them is a character
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


def _refuse_surrogates(obj: Any, column: Optional[str] = None) -> None:
    """422 naming the column whose string holds a lone surrogate (Python's json accepts one,
    it is no Unicode text: hashing or writing it would fail or silently differ)."""
    stack = [(obj, column)]
    while stack:
        o, col = stack.pop()
        if isinstance(o, str):
            try:
                o.encode("utf-8")
            except UnicodeEncodeError:
                raise _HTTPError(422, f"column {col!r}: the string {o[:20]!r} holds a lone UTF-16 surrogate "
                                      f"(\\ud800-\\udfff without its pair), which is not Unicode text", col) from None
        elif isinstance(o, dict):
            stack.extend((v, k if col is None or k not in ("rows", "columns") else col) for k, v in o.items())
            stack.extend((k, col) for k in o)
        elif isinstance(o, list):
            stack.extend((v, col) for v in o)


class _HTTPError(Exception):
    def __init__(self, status: int, message: str, column: Optional[str] = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.column = column


class Handler:
    """Request -> response bytes, independent of the web framework (tested directly too)."""

    def __init__(self, st: ServingTransform) -> None:
        self.st = st
        self.names = [n for n, _, _ in st._outputs]

    def handle(self, body: bytes, cast: bool = False) -> Tuple[int, bytes]:
        try:
            try:
                req = _loads(body)
            except (ValueError, UnicodeDecodeError) as exc:
                raise _HTTPError(400, f"the body is not valid JSON: {exc}") from None
            except RecursionError:
                raise _HTTPError(400, "the body is nested too deeply (JSON arrays / objects inside each other); "
                                      "a request holds rows of column values") from None
            if _SURROGATE.search(body):
                _refuse_surrogates(req)
            try:
                return 200, self._transform(req, cast)
            except RecursionError:
                raise _HTTPError(400, "a value of the body is nested too deeply (lists inside lists); a column "
                                      "holds a value or a list of values") from None
        except _HTTPError as exc:
            return exc.status, _error(exc.message, exc.column)
        except ServingInputError as exc:
            return 422, _error(str(exc), exc.column)

    def _transform(self, req: Any, cast: bool) -> bytes:
        if isinstance(req, dict):
            if "rows" in req and len(req) == 1 and isinstance(req["rows"], list):
                rows, flat = self._rows(req["rows"], cast)
                return _dumps({"rows": rows}, flat)
            if "columns" in req and len(req) == 1 and isinstance(req["columns"], dict):
                cols = self._columns(req["columns"], cast)
                return _dumps({"columns": cols}, [v for vs in cols.values() for v in vs])
            out = self.st.row_values(req, cast=cast)
            return _dumps(out, out.values())
        if isinstance(req, list):
            rows, flat = self._rows(req, cast)
            return _dumps(rows, flat)
        raise _HTTPError(400, "the body must be a JSON object (one row, {\"rows\": [...]} or {\"columns\": {...}}) "
                              "or a list of row objects")

    def _columns(self, columns: Dict[str, Any], cast: bool) -> Dict[str, List[Any]]:
        for c, v in columns.items():
            if not isinstance(v, list):
                raise _HTTPError(400, f"column {c!r}: \"columns\" maps each column to a list of values", c)
        out = self.st.transform_batch(columns, cast=cast)
        res: Dict[str, List[Any]] = {}
        for name, col, _ in self.st._outputs:
            if col.is_list:
                values = _tolist(out[f"{name}__values"])
                lengths = out[f"{name}__nnzs"].tolist()
                rows, start = [], 0
                for k in lengths:
                    rows.append(values[start:start + k])
                    start += k
                if f"{name}__row_lengths_1" in out:   # a nested column: each row's leaves cut by its lists
                    rows = nest_rows(rows, out, name)
                res[name] = rows
            else:
                res[name] = _tolist(out[name])
        return res

    def _rows(self, rows: List[Any], cast: bool) -> Tuple[List[Dict[str, Any]], List[Any]]:
        """Outputs row by row, and every output value (to pick the JSON encoder)."""
        if not rows:
            return [], []
        for i, r in enumerate(rows):
            if not isinstance(r, dict):
                raise _HTTPError(400, f"row {i} is not an object of column -> value")
        columns = {}
        for c in self.st.input_names:
            try:
                columns[c] = [r[c] for r in rows]
            except KeyError:
                i = next(j for j, r in enumerate(rows) if c not in r)
                raise ServingInputError(f"column {c!r} is missing from row {i} of the request", c) from None
        cols = self._columns(columns, cast)
        flat = [v for vs in cols.values() for v in vs]
        return [{n: cols[n][i] for n in self.names} for i in range(len(rows))], flat


def nest_rows(rows: List[List[Any]], out: Dict[str, Any], name: str) -> List[Any]:
    """Rows of leaves back to nested lists with ``<name>__row_lengths_k`` (see serving/nested.py)."""
    depth = 1 + sum(1 for k in out if k.startswith(f"{name}__row_lengths_"))
    counts = [out[f"{name}__row_lengths_{k}"].tolist() for k in range(depth - 1)]
    pos = [0] * len(counts)
    nested = []
    for leaves in rows:
        structure, n = [], 1
        for k, lengths in enumerate(counts):   # this row's share of every level
            mine = lengths[pos[k]:pos[k] + n] if k else [lengths[pos[0]]]
            pos[k] += n if k else 1
            structure.append(mine)
            n = sum(mine)
        nested.append(renest(leaves, structure))
    return nested


def _tolist(arr: Any) -> List[Any]:
    out = arr.tolist()  # masked entries of a MaskedArray become None
    return out


def _error(message: str, column: Optional[str] = None) -> bytes:
    body: Dict[str, Any] = {"error": message}
    if column is not None:
        body["column"] = column
    return json.dumps(body).encode()


def make_app(st: ServingTransform, max_body: int = MAX_BODY, name: str = "workflow") -> Any:
    """The Starlette application serving ``st`` (see the module docstring for the endpoints)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    handler = Handler(st)
    schema = json.dumps({"workflow": name, **st.describe()}).encode()
    json_type = "application/json"

    async def transform(request: Request) -> Response:
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > max_body:
            return Response(_error(f"request body of {length} bytes is over the limit of {max_body} bytes "
                                   f"(tabprep serve --max-body-size)"), 413, media_type=json_type)
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_body:
                return Response(_error(f"request body is over the limit of {max_body} bytes "
                                       f"(tabprep serve --max-body-size)"), 413, media_type=json_type)
            chunks.append(chunk)
        value = request.query_params.get("cast", "false")
        cast = _cast_flag(value)
        if cast is None:
            return Response(_bad_cast(value), 400, media_type=json_type)
        status, body = handler.handle(b"".join(chunks), cast=cast)
        return Response(body, status, media_type=json_type)

    async def health(request: Request) -> Response:
        return Response(b'{"status":"ok"}', 200, media_type=json_type)

    async def get_schema(request: Request) -> Response:
        return Response(schema, 200, media_type=json_type)

    async def get_stats(request: Request) -> Response:  # live skew counters (serving/stats.py)
        doc = st.stats.to_dict() if st.stats is not None else {"format": "tabprep-serving-stats", "rows": 0, "columns": {}}
        return Response(json.dumps(doc).encode(), 200, media_type=json_type)

    async def get_metrics(request: Request) -> Response:
        text = st.stats.prometheus() if st.stats is not None else ""
        return Response(text.encode(), 200, media_type="text/plain; version=0.0.4")

    app = Starlette(routes=[Route("/transform", transform, methods=["POST"]),
                            Route("/health", health, methods=["GET"]),
                            Route("/schema", get_schema, methods=["GET"]),
                            Route("/stats", get_stats, methods=["GET"]),
                            Route("/metrics", get_metrics, methods=["GET"])])
    return _FastTransform(app, handler, max_body)


class _FastTransform:
    """ASGI front of the Starlette app: ``POST /transform`` is answered here directly.

    Starlette's request/response objects, router and middleware cost about as much as the
    transform of one row; the hot endpoint reads the body and writes the answer with the raw ASGI
    calls (same limits and errors as the Starlette route, which serves everything else).
    """

    _HEADERS = [(b"content-type", b"application/json")]

    def __init__(self, app: Any, handler: Handler, max_body: int) -> None:
        self.app = app
        self.handler = handler
        self.max_body = max_body

    async def __call__(self, scope: Dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != "/transform" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        status, body = 200, b""
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > self.max_body:
                status, body = 413, _error(f"request body of {value.decode()} bytes is over the limit of "
                                           f"{self.max_body} bytes (tabprep serve --max-body-size)")
        if status == 200:
            chunks, size, more = [], 0, True
            while more:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self.max_body:
                    status, body = 413, _error(f"request body is over the limit of {self.max_body} bytes "
                                               f"(tabprep serve --max-body-size)")
                    break
                chunks.append(chunk)
                more = message.get("more_body", False)
            if status == 200:
                qs = scope.get("query_string", b"")
                value = _query_value(qs) if b"cast=" in qs else "false"
                cast = _cast_flag(value)
                if cast is None:
                    status, body = 400, _bad_cast(value)
            if status == 200:
                try:
                    status, body = self.handler.handle(chunks[0] if len(chunks) == 1 else b"".join(chunks), cast=cast)
                except Exception:  # noqa: BLE001 - a bug must not kill the connection: 500, logged
                    log.exception("POST /transform failed")
                    status, body = 500, _error("internal error (see the server log)")
        await send({"type": "http.response.start", "status": status,
                    "headers": self._HEADERS + [(b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def _query_value(qs: bytes) -> str:
    from urllib.parse import parse_qs

    return parse_qs(qs.decode(errors="replace"), keep_blank_values=True).get("cast", ["false"])[-1]


def _cast_flag(value: Optional[str]) -> Optional[bool]:
    """``?cast=``'s value as a bool; None for anything but true/false/1/0/yes/no (any case): a
    misspelt flag served as cast off before, silently."""
    v = (value or "").strip().lower()
    return True if v in ("1", "true", "yes") else False if v in ("0", "false", "no") else None


def _bad_cast(value: Optional[str]) -> bytes:
    return _error(f"?cast={value!r} is not a flag: give cast=true or cast=false")


# -- the server process ---------------------------------------------------------------------------------
_ENV = "TABPREP_SERVE_CONFIG"


#: how long a stopping server keeps accepting and reading the connections already made (s, at most)
DRAIN_S = 5.0


def _pending(server: Any) -> int:
    """Connections and request bytes a stopping uvicorn server has not taken in yet (Linux):
    connections in the accept queue of its listening sockets (``TCP_INFO``'s ``tcpi_unacked``
    of a listening socket) plus connections with no request in progress whose request bytes
    wait unread (``FIONREAD``). Elsewhere 0 (nothing to wait for that can be seen)."""
    import fcntl
    import socket
    import struct
    import termios

    n = 0
    for srv in server.servers:
        for sock in getattr(srv, "sockets", None) or ():
            try:
                info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
                n += struct.unpack_from("I", info, 24)[0]
            except (OSError, AttributeError, struct.error):
                pass
    for conn in list(server.server_state.connections):
        if getattr(conn, "cycle", None) is not None:
            continue
        transport = getattr(conn, "transport", None)
        sock = transport.get_extra_info("socket") if transport is not None else None
        try:
            n += struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0] > 0
        except (OSError, AttributeError, ValueError, struct.error):
            pass
    return n


def _drain_before_shutdown() -> None:
    """Make uvicorn's graceful shutdown finish every request already sent (issue #30).

    uvicorn stops listening at once: connections still in the kernel's accept queue are reset,
    and an accepted connection whose request was not read yet is closed. A request is handled in
    the event loop, so under load (a burst of requests, SIGTERM in the middle) much of the burst
    is in one of those states. Before closing, the loop keeps accepting and reading until no such
    connection is left (:func:`_pending`; ``DRAIN_S`` at most); the requests it read are then
    finished like the others. Patched once per process (the servers of ``--workers N`` run in
    uvicorn's worker processes, which build the app with :func:`app_from_env`)."""
    import asyncio

    import uvicorn

    original = uvicorn.Server.shutdown
    if getattr(original, "_tabprep_drain", False):
        return

    async def shutdown(self: Any, sockets: Any = None) -> None:
        deadline = time.monotonic() + min(DRAIN_S, float(self.config.timeout_graceful_shutdown or DRAIN_S))
        await asyncio.sleep(0.01)
        while time.monotonic() < deadline and _pending(self):
            await asyncio.sleep(0.01)
        await original(self, sockets)

    shutdown._tabprep_drain = True  # type: ignore[attr-defined]
    uvicorn.Server.shutdown = shutdown  # type: ignore[method-assign]


def app_from_env() -> Any:
    """uvicorn factory for worker processes (``--workers N``): the config comes in an environment variable."""
    _drain_before_shutdown()
    cfg = json.loads(os.environ[_ENV])
    return _build(cfg)


def _build(cfg: Dict[str, Any]) -> Any:
    from ..workflow import Workflow

    wf = Workflow.load(cfg["wf_dir"], storage_options=cfg.get("storage_options"))
    st = ServingTransform(wf, exclude=cfg.get("exclude") or (), stats=bool(cfg.get("stats")))
    return make_app(st, max_body=cfg.get("max_body", MAX_BODY), name=cfg["wf_dir"])


def serve(wf_dir: str, host: str = "127.0.0.1", port: int = 8080, workers: int = 1, exclude: Tuple[str, ...] = (),
          max_body: int = MAX_BODY, access_log: bool = False, graceful_timeout: float = 10.0,
          storage_options: Optional[Dict[str, Any]] = None, stats: bool = False) -> None:
    """Serve ``wf_dir`` (a folder, or a URL such as ``s3://bucket/wf`` read with ``storage_options``)
    until SIGINT/SIGTERM; in-flight requests finish first (up to ``graceful_timeout`` s)."""
    import uvicorn

    from ..io.fs import is_remote, local_path

    cfg = {"wf_dir": wf_dir if is_remote(wf_dir) else os.path.abspath(local_path(wf_dir)), "exclude": list(exclude),
           "max_body": int(max_body), "storage_options": storage_options, "stats": bool(stats)}
    app = _build(cfg)  # fails here, before binding, on a bad folder or an op that cannot be served
    _drain_before_shutdown()
    common = dict(host=host, port=port, log_level="warning", access_log=access_log,
                  timeout_graceful_shutdown=graceful_timeout, server_header=False)
    if workers > 1:
        os.environ[_ENV] = json.dumps(cfg)
        uvicorn.run("tabprep.serving.http:app_from_env", factory=True, workers=workers, **common)
    else:
        uvicorn.run(app, **common)
