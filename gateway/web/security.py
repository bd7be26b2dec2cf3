"""Who is asking: API keys (header), admin cookie sessions with CSRF tokens, per-client rate limit."""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from litestar import Request
from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler

from gateway.keys import KeyStore, Principal
from gateway.web.errors import ApiError, error_body

SESSION_COOKIE = "mqa_session"
CSRF_HEADER = "x-csrf-token"
SESSION_TTL_S = 8 * 3600


@dataclass
class Session:
    principal: Principal
    csrf: str
    expires: float


class Sessions:
    """Server-side sessions kept in memory: a restart logs admins out, which is acceptable here."""

    def __init__(self) -> None:
        self._items: dict[str, Session] = {}
        self._lock = threading.Lock()

    def create(self, principal: Principal) -> tuple[str, Session]:
        sid = secrets.token_urlsafe(32)
        session = Session(principal, secrets.token_urlsafe(24), time.time() + SESSION_TTL_S)
        with self._lock:
            self._items[sid] = session
        return sid, session

    def get(self, sid: str | None) -> Session | None:
        if not sid:
            return None
        with self._lock:
            session = self._items.get(sid)
            if session and session.expires < time.time():
                del self._items[sid]
                return None
            return session

    def drop(self, sid: str | None) -> None:
        with self._lock:
            self._items.pop(sid or "", None)


class RateLimiter:
    """Token bucket per client: `per_minute` asks, refilled continuously."""

    def __init__(self, per_minute: int) -> None:
        self.rate = per_minute / 60.0
        self.capacity = float(max(1, per_minute))
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def check(self, client: str) -> None:
        if self.rate <= 0:
            return
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(client, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - last) * self.rate)
            if tokens < 1.0:
                wait = int((1.0 - tokens) / self.rate) + 1
                raise ApiError(429, "rate_limited", f"too many questions from {client}; retry in {wait} s",
                               {"Retry-After": str(wait)})
            self._buckets[client] = (tokens - 1.0, now)


def _bearer(connection: ASGIConnection[Any, Any, Any, Any]) -> str | None:
    auth = connection.headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    return connection.headers.get("x-api-key")


def principal_of(connection: ASGIConnection[Any, Any, Any, Any], strict: bool = True) -> Principal | None:
    """The caller, from an API key header or an admin session cookie (CSRF checked for writes).

    With strict=False (reader routes) a session write without the right CSRF token is simply
    anonymous: a cross-site page can then do no more than any anonymous reader could.
    """
    state = connection.app.state
    key = _bearer(connection)
    if key:
        principal = KeyStore(state.settings.db_path).verify(key)
        if principal is None:
            raise ApiError(401, "unauthorized", "invalid or revoked API key")
        return principal
    session = state.sessions.get(connection.cookies.get(SESSION_COOKIE))
    if session is None:
        return None
    if connection.scope.get("method", "GET") not in ("GET", "HEAD", "OPTIONS"):
        if not secrets.compare_digest(connection.headers.get(CSRF_HEADER, ""), session.csrf):
            if not strict:
                return None
            raise ApiError(403, "csrf_failed", "missing or wrong X-CSRF-Token for this session")
    return session.principal


def reader_guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    principal = principal_of(connection, strict=False)
    if principal is None and not connection.app.state.settings.server.allow_anonymous_read:
        raise ApiError(401, "unauthorized", "this gateway requires an API key to read "
                       "(Authorization: Bearer <key>)")


def admin_guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    principal = principal_of(connection)
    if principal is None:
        raise ApiError(401, "unauthorized", "admin key required (Authorization: Bearer <key>)")
    if not principal.is_admin:
        raise ApiError(403, "forbidden", f"key {principal.name!r} has role {principal.role!r}; admin needed")


def client_id(request: Request[Any, Any, Any]) -> str:
    principal = principal_of(request, strict=False)
    if principal is not None:
        return f"key:{principal.name}"
    return f"ip:{request.client.host if request.client else 'unknown'}"


def _hostname(host: str) -> str:
    """A Host header (or an allowed_hosts entry) without its port: "[::1]:8080" -> "[::1]"."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1]
    return host.split(":", 1)[0]


def host_allowed(host: str, allowed: list[str]) -> bool:
    """server.allowed_hosts: exact names or addresses, "*.example.org", or "*"; any port."""
    name = _hostname(host)
    if not name:
        return False
    for entry in allowed:
        entry = _hostname(entry) if entry != "*" else entry
        if entry == "*" or name == entry or (entry.startswith("*.") and name.endswith(entry[1:])):
            return True
    return False


def allowed_hosts_middleware(allowed: list[str]) -> Callable[[Any], Any]:
    """Refuse requests for other Host names (DNS rebinding) with 400 in the one error shape.

    Litestar's own allowed-hosts check compares the Host header including its port, so "127.0.0.1"
    would refuse "127.0.0.1:8080", and it answers in another shape; hence this one.
    """

    def factory(app: Any) -> Any:
        async def middleware(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                host = dict(scope.get("headers") or []).get(b"host", b"").decode("latin-1")
                if not host_allowed(host, allowed):
                    body = json.dumps(error_body("invalid_host", f"host {host!r} is not served here "
                                                 "(server.allowed_hosts)")).encode()
                    await send({"type": "http.response.start", "status": 400,
                                "headers": [(b"content-type", b"application/json"),
                                            (b"content-length", str(len(body)).encode())]})
                    await send({"type": "http.response.body", "body": body})
                    return
            await app(scope, receive, send)

        return middleware

    return factory
