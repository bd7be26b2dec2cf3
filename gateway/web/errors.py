"""One error shape everywhere: {"error": {"code": ..., "message": ...}}, mapped in one place."""

from __future__ import annotations

import logging
from typing import Any

from litestar import MediaType, Request, Response
from litestar.datastructures import State
from litestar.exceptions import HTTPException, NotFoundException, SerializationException, ValidationException
from litestar.openapi.plugins import JsonRenderPlugin
from litestar.status_codes import HTTP_500_INTERNAL_SERVER_ERROR
from litestar.types import ExceptionHandlersMap

from gateway.errors import is_user_error

log = logging.getLogger("manualqa.web")


class ApiError(Exception):
    """An error with its HTTP status and a stable machine-readable code."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}


def error_body(code: str, message: str, **extra: object) -> dict[str, dict[str, object]]:
    return {"error": {"code": code, "message": message, **extra}}


def _response(status: int, code: str, message: str, headers: dict[str, str] | None = None,
              **extra: object) -> Response[dict[str, dict[str, object]]]:
    return Response(error_body(code, message, **extra), status_code=status, headers=headers or {},
                    media_type=MediaType.JSON)


# The codes of Litestar's own HTTP errors: each one is in docs/api.md's table (tests check it); a
# 4xx not named here is an invalid request, a 5xx a bug (internal_error, logged).
_CODES = {400: "invalid_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
          405: "method_not_allowed", 409: "conflict", 413: "payload_too_large",
          415: "unsupported_media_type", 429: "rate_limited"}
EMPTY_BODY = "the request body is empty: send a JSON object (Content-Type: application/json)"


def _not_json(exc: BaseException) -> bool:
    """Litestar wraps a body its JSON decoder refused (SerializationException) in a plain 400."""
    return isinstance(exc, SerializationException) or isinstance(exc.__cause__, SerializationException)


def _missing_body(exc: ValidationException) -> bool:
    """No body at all: Litestar drops the absent `data` and its check reports a KeyError text ("'data'")."""
    return "missing required field `data`" in str(exc.__cause__ or "")


def handle_exception(request: Request[object, object, State], exc: Exception) -> Response[dict[str, dict[str, object]]]:
    if isinstance(exc, ApiError):
        return _response(exc.status, exc.code, exc.message, exc.headers)
    if isinstance(exc, ValidationException):
        if _missing_body(exc):
            return _response(400, "invalid_json", EMPTY_BODY)
        detail = exc.extra if isinstance(exc.extra, list) else None
        return _response(400, "invalid_request", str(exc.detail), details=detail)
    if _not_json(exc):  # a body that is not the JSON it claims to be
        return _response(400, "invalid_json", f"the request body is not valid JSON: {exc.__cause__ or exc}"[:300])
    if isinstance(exc, NotFoundException):
        return _response(404, "not_found", f"no such resource: {request.url.path}")
    if isinstance(exc, HTTPException) and exc.status_code < 500:
        code = _CODES.get(exc.status_code, "invalid_request")
        if exc.status_code == 400 and str(exc.detail) == "Invalid host header":  # Litestar's, before routing
            code = "invalid_host"
        return _response(exc.status_code, code, str(exc.detail), dict(exc.headers or {}))
    if is_user_error(exc):  # every room's user-facing errors carry their status and code
        cls = type(exc)
        return _response(int(getattr(cls, "http_status")), str(getattr(cls, "code")), str(exc),  # noqa: B009
                         getattr(exc, "headers", None))
    log.exception("unhandled error on %s", request.url.path, exc_info=exc)
    return _response(HTTP_500_INTERNAL_SERVER_ERROR, "internal_error",
                     f"internal error ({type(exc).__name__}); see the server log")


EXCEPTION_HANDLERS: ExceptionHandlersMap = {Exception: handle_exception}

ERROR_SCHEMA: dict[str, object] = {
    "type": "object", "required": ["error"], "description": "The one error shape of every endpoint",
    "properties": {"error": {"type": "object", "required": ["code", "message"], "properties": {
        "code": {"type": "string"}, "message": {"type": "string"},
        "details": {"type": ["array", "null"], "items": {}}}}}}


def document_errors(schema: dict[str, Any]) -> dict[str, Any]:
    """Put the real error shape into the OpenAPI document (Litestar documents its own 400 shape).

    Every operation gets it as its 400 response and as its `default` response (401, 403, 404,
    413, 415, 422, 429, 503...); responses a handler documents itself (other than 400) are kept.
    """
    schema.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    ref = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    for item in schema.get("paths", {}).values():
        for method, operation in item.items():
            if method not in {"get", "put", "post", "delete", "patch"} or not isinstance(operation, dict):
                continue
            responses = operation.setdefault("responses", {})
            responses["400"] = {"description": "Invalid request", **ref}
            responses.setdefault("default", {"description": "Error (see error.code)", **ref})
    return schema


def document_streams(schema: dict[str, Any], paths: tuple[str, ...]) -> dict[str, Any]:
    """Operations answering `stream: true` with Server-Sent Events say so in their 200 response."""
    event = {"type": "object", "required": ["data"], "description": "One Server-Sent Event; data is JSON "
             "(/api/v1/ask: events retrieval, token, final, error; /v1: chat.completion.chunk, then [DONE])",
             "properties": {"event": {"type": "string"}, "data": {"type": "string"}, "id": {"type": "string"}}}
    sse = {"schema": event}
    for path in paths:
        operation = schema.get("paths", {}).get(path, {}).get("post")
        if operation and "200" in operation.get("responses", {}):
            operation["responses"]["200"].setdefault("content", {})["text/event-stream"] = sse
    return schema


class ErrorShapeJson(JsonRenderPlugin):
    """Serves openapi.json with the real error shape and the SSE responses documented."""

    def __init__(self, streaming: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.streaming = streaming

    def render(self, request: Request[object, object, State], openapi_schema: dict[str, Any]) -> bytes:
        return self.render_json(request, document_streams(document_errors(openapi_schema), self.streaming))
