"""One error shape everywhere: {"error": {"code": ..., "message": ...}}, mapped in one place."""

from __future__ import annotations

import logging
from typing import Any

from litestar import MediaType, Request, Response
from litestar.exceptions import HTTPException, NotFoundException, ValidationException
from litestar.status_codes import HTTP_500_INTERNAL_SERVER_ERROR

from ingest.models import IngestError
from retrieval.types import RetrievalError

log = logging.getLogger("manualqa.web")


class ApiError(Exception):
    """An error with its HTTP status and a stable machine-readable code."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}


def error_body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, **extra}}


def _response(status: int, code: str, message: str, headers: dict[str, str] | None = None,
              **extra: Any) -> Response[Any]:
    return Response(error_body(code, message, **extra), status_code=status, headers=headers or {},
                    media_type=MediaType.JSON)


_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
          405: "method_not_allowed", 409: "conflict", 413: "payload_too_large",
          415: "unsupported_media_type", 422: "unprocessable", 429: "rate_limited",
          503: "unavailable"}


def handle_exception(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    if isinstance(exc, ApiError):
        return _response(exc.status, exc.code, exc.message, exc.headers)
    if isinstance(exc, ValidationException):
        detail = exc.extra if isinstance(exc.extra, list) else None
        return _response(400, "invalid_request", str(exc.detail), details=detail)
    if isinstance(exc, NotFoundException):
        return _response(404, "not_found", f"no such resource: {request.url.path}")
    if isinstance(exc, HTTPException):
        code = _CODES.get(exc.status_code, "http_error")
        return _response(exc.status_code, code, str(exc.detail), dict(exc.headers or {}))
    if isinstance(exc, RetrievalError):
        return _response(409 if "no index" in str(exc) else 400, "retrieval_error", str(exc))
    if isinstance(exc, IngestError):
        return _response(422, "ingest_error", str(exc))
    log.exception("unhandled error on %s", request.url.path, exc_info=exc)
    return _response(HTTP_500_INTERNAL_SERVER_ERROR, "internal_error",
                     f"internal error ({type(exc).__name__}); see the server log")


EXCEPTION_HANDLERS = {Exception: handle_exception}
