"""Request bodies capped while they stream, and JSON nesting capped before any parser sees it.

A `Content-Length` check alone is not a limit: a chunked body has none, and Litestar reads a
body whole before a handler can look at it. Here every body is counted as it arrives:
- JSON routes (everything but the upload): the body is buffered up to server.max_json_kb and
  refused with 413 the moment it passes the cap; any body that is not a form and nests deeper than
  MAX_JSON_DEPTH is refused with 400 (a recursive decoder would hit Python's recursion limit: 500);
- the upload routes (a manual, an index archive) stream to disk in their handlers; here their bytes
  are only counted, and passing server.max_upload_mb raises a 413 inside the handler's read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Receive, ReceiveMessage, Scope, Send

from gateway.web.errors import ApiError, error_body

MAX_JSON_DEPTH = 64
UPLOAD_ROUTES = {("POST", "/api/v1/manuals"), ("POST", "/api/v1/index/import")}  # streamed to disk
UPLOAD_FRAMING = 64 * 1024  # multipart boundaries and part headers around the file
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_BRACKETS = re.compile(rb"[\[\]{}]")


def json_depth(body: bytes) -> int:
    """The deepest nesting of [] and {} in a JSON text, ignoring brackets inside strings.

    Linear and iterative, so it is safe on any input; malformed JSON still gets a number and is
    left for the real parser to refuse.
    """
    depth = deepest = 0
    for match in _BRACKETS.finditer(_STRINGS.sub(b'""', body)):
        if match.group() in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(0, depth - 1)
    return deepest


async def _send_error(send: Send, status: int, code: str, message: str) -> None:
    body = json.dumps(error_body(code, message)).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def _declared_length(scope: Scope) -> int | None:
    value = dict(scope.get("headers") or []).get(b"content-length", b"")
    return int(value) if value.isdigit() else None


def body_limits_middleware(json_kb: int, upload_mb: int) -> Callable[[ASGIApp], ASGIApp]:
    """ASGI middleware enforcing server.max_json_kb and server.max_upload_mb (see the docstring)."""
    json_cap = json_kb * 1024
    upload_cap = upload_mb * 1024 * 1024 + UPLOAD_FRAMING
    too_big = {False: f"request body over {json_kb} KB (server.max_json_kb)",
               True: f"upload exceeds {upload_mb} MB (server.max_upload_mb)"}

    def factory(app: ASGIApp) -> ASGIApp:
        async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != ScopeType.HTTP or scope.get("method") in ("GET", "HEAD", "OPTIONS"):
                await app(scope, receive, send)
                return
            upload = (scope.get("method"), scope.get("path")) in UPLOAD_ROUTES
            cap = upload_cap if upload else json_cap
            declared = _declared_length(scope)
            if declared is not None and declared > cap:
                await _send_error(send, 413, "payload_too_large", too_big[upload])
                return
            if upload:
                await app(scope, _counting(receive, cap, too_big[True]), send)
                return
            chunks: list[bytes] = []
            size = 0
            while True:
                message = await receive()
                if message["type"] != "http.request":  # the client left: nothing to answer
                    return
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > cap:
                    await _send_error(send, 413, "payload_too_large", too_big[False])
                    return
                chunks.append(chunk)
                if not message.get("more_body", False):
                    break
            body = b"".join(chunks)
            content_type = dict(scope.get("headers") or []).get(b"content-type", b"").lower()
            form = content_type.startswith((b"multipart/", b"application/x-www-form-urlencoded"))
            if not form and json_depth(body) > MAX_JSON_DEPTH:
                await _send_error(send, 400, "invalid_request",
                                  f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
                return
            await app(scope, _replay(body, receive), send)

        return middleware

    return factory


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive() that hands the buffered body over once, then waits on the real one."""
    sent = [False]

    async def replay() -> ReceiveMessage:
        if not sent[0]:
            sent[0] = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _counting(receive: Receive, cap: int, message_text: str) -> Receive:
    """A receive() that raises 413 (in the handler reading it) once `cap` bytes have come in."""
    size = [0]

    async def counted() -> ReceiveMessage:
        message = await receive()
        if message["type"] == "http.request":
            size[0] += len(message.get("body", b""))
            if size[0] > cap:
                raise ApiError(413, "payload_too_large", message_text)
        return message

    return counted
