"""Who is asking: API keys (header), admin cookie sessions with CSRF tokens, per-client rate limit."""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from litestar import Request
from litestar.connection import ASGIConnection
from litestar.datastructures import State
from litestar.enums import ScopeType
from litestar.handlers import HTTPRouteHandler
from litestar.handlers.base import BaseRouteHandler
from litestar.types import ASGIApp, Receive, Scope, Send

from gateway.records.keys import Principal
from gateway.records.sessions import DEFAULT_TTL_S, Session
from gateway.web.errors import ApiError, error_body

if TYPE_CHECKING:
    from gateway.services import Services

# A connection to one of this app's HTTP routes, as guards get it, and a request, as handlers do: no
# user or auth object (the caller is found by principal_of), the app's State.
Connection = ASGIConnection[HTTPRouteHandler, object, object, State]
AppRequest = Request[object, object, State]

SESSION_COOKIE = "mqa_session"
CSRF_HEADER = "x-csrf-token"
PRINCIPAL = "manualqa.principal"  # the ASGI scope's key for the principals found (principal_memo)
SESSION_TTL_S = DEFAULT_TTL_S  # the cookie's Max-Age; gateway.db's admin_sessions rows expire with it

def live_session(connection: Connection) -> Session | None:
    """The caller's admin session, if its key is still unrevoked.

    Sessions live in gateway.db (gateway.records.sessions), so they survive a restart. Keys are
    revoked there too, often by the CLI in another process, so the key is checked on every use (the
    lookup joins api_keys): a revoked key ends all its sessions at the next request, not when they
    expire.
    """
    return services_of(connection).sessions.get(connection.cookies.get(SESSION_COOKIE))


def services_of(connection: Connection) -> Services:
    """The app's composition root (the app state's `gw`), for code that runs before the handlers' dependencies."""
    services: Services = connection.app.state.gw
    return services


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


def _bearer(connection: Connection) -> str | None:
    auth = connection.headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    return connection.headers.get("x-api-key")


def principal_of(connection: Connection, strict: bool = True) -> Principal | None:
    """The caller, from an API key header or an admin session cookie (CSRF checked for writes).

    With strict=False (reader routes) a session write without the right CSRF token is simply
    anonymous: a cross-site page can then do no more than any anonymous reader could.
    """
    memo = principal_memo(connection.scope)  # guards and handlers ask again
    if strict not in memo:
        memo[strict] = _principal(connection, strict)
    return memo[strict]


def principal_memo(scope: Scope) -> dict[bool, Principal | None]:
    """The principals found for this request (strict and not), kept in its ASGI scope under PRINCIPAL."""
    # the ASGI scope is a plain dict that carries extra keys (litestar types only its own)
    extended = cast("dict[str, object]", scope)
    memo = extended.get(PRINCIPAL)
    if not isinstance(memo, dict):
        memo = extended[PRINCIPAL] = {}
    return memo


def _principal(connection: Connection, strict: bool) -> Principal | None:
    key = _bearer(connection)
    if key:
        principal = services_of(connection).keys.verify(key)
        if principal is None:
            raise ApiError(401, "unauthorized", "invalid or revoked API key")
        return principal
    session = live_session(connection)
    if session is None:
        return None
    if connection.scope.get("method", "GET") not in ("GET", "HEAD", "OPTIONS"):
        if not secrets.compare_digest(connection.headers.get(CSRF_HEADER, ""), session.csrf):
            if not strict:
                return None
            raise ApiError(403, "csrf_failed", "missing or wrong X-CSRF-Token for this session")
    return session.principal


def reader_guard(connection: Connection, _: BaseRouteHandler) -> None:
    principal = principal_of(connection, strict=False)
    if principal is None and not services_of(connection).settings.server.allow_anonymous_read:
        raise ApiError(401, "unauthorized", "this gateway requires an API key to read "
                       "(Authorization: Bearer <key>)")


def admin_guard(connection: Connection, _: BaseRouteHandler) -> None:
    principal = principal_of(connection)
    if principal is None:
        raise ApiError(401, "unauthorized", "admin key required (Authorization: Bearer <key>)")
    if not principal.is_admin:
        raise ApiError(403, "forbidden", f"key {principal.name!r} has role {principal.role!r}; admin needed")


def client_id(request: AppRequest) -> str:
    principal = principal_of(request, strict=False)
    if principal is not None:
        return f"key:{principal.name}"
    return f"ip:{request.client.host if request.client else 'unknown'}"


_HOST_NAME_RE = re.compile(r"^(\[[0-9a-f:.]+\]|[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?\.?)$")


def parse_host(host: str) -> tuple[str, int | None] | None:
    """A Host header -> (name, port), or None when it is not a well-formed host[:port].

    "[::1]:8080" -> ("[::1]", 8080). A port must be 1-65535 in decimal: "localhost:99999" once
    reached URL parsing and ended in a 500.
    """
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        if end < 0:
            return None
        name, rest = host[: end + 1], host[end + 1:]
    else:
        name, sep, port_text = host.partition(":")
        rest = sep + port_text
    port = None
    if rest:
        if not rest.startswith(":") or not rest[1:].isdigit() or len(rest) > 6:
            return None
        port = int(rest[1:])
        if not 1 <= port <= 65535:
            return None
    if not _HOST_NAME_RE.match(name):
        return None
    return name, port


def _hostname(entry: str) -> str:
    """An allowed_hosts entry without its port: "[::1]:8080" -> "[::1]"."""
    parsed = parse_host(entry)
    return parsed[0] if parsed else entry.strip().lower()


def host_allowed(host: str, allowed: list[str]) -> bool:
    """server.allowed_hosts: exact names or addresses, "*.example.org", or "*"; any port."""
    parsed = parse_host(host)
    if parsed is None:
        return False
    name = parsed[0]
    for entry in allowed:
        entry = _hostname(entry) if entry != "*" else entry
        if entry == "*" or name == entry or (entry.startswith("*.") and name.endswith(entry[1:])):
            return True
    return False


def allowed_hosts_middleware(allowed: list[str]) -> Callable[[ASGIApp], ASGIApp]:
    """Refuse malformed Host headers, and other Host names (DNS rebinding), with a 400 JSON error.

    Installed also with allowed_hosts = ["*"]: a malformed Host (a port of 99999) must not reach
    URL parsing, where it used to end in a 500.

    Litestar's own allowed-hosts check compares the Host header including its port, so "127.0.0.1"
    would refuse "127.0.0.1:8080", and it answers in another shape; hence this one.
    """

    def factory(app: ASGIApp) -> ASGIApp:
        async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == ScopeType.HTTP:
                host = dict(scope.get("headers") or []).get(b"host", b"").decode("latin-1")
                if not host and scope.get("http_version") == "1.0":
                    host = "localhost"  # HTTP/1.0 clients may send no Host at all
                if not host_allowed(host, allowed):
                    body = json.dumps(error_body("invalid_host", f"host {host!r} is not served here "
                                                 "(server.allowed_hosts)")).encode()
                    await send({"type": "http.response.start", "status": 400,
                                "headers": [(b"content-type", b"application/json"),
                                            (b"content-length", str(len(body)).encode())]})
                    await send({"type": "http.response.body", "body": body, "more_body": False})
                    return
            await app(scope, receive, send)

        return middleware

    return factory
