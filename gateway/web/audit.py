"""The audit trail, recorded in one place: an ASGI middleware that sees every admin request answered.

Keyed by route, not written at each call site: ACTIONS names the admin actions and says where each
one's target is (a path parameter, a field of the JSON request, a field of the JSON response), and
any other admin-guarded write (a route added later) is recorded under its method and path. The
record is written after the response is sent, with the status answered, so a refused (401/403/CSRF)
or failed (404/409/500) action is in the trail as surely as one that worked. A login's key is never
read from its body: only names and the fields listed here are.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread
from litestar.enums import ScopeType
from litestar.types import ASGIApp, HTTPScope, Message, Receive, ReceiveMessage, Scope, Send

from gateway import JSONObject, JSONValue
from gateway.records.audit import AuditLog, Via
from gateway.web.security import SESSION_COOKIE, admin_guard, principal_memo

if TYPE_CHECKING:
    from gateway.services import Services

log = logging.getLogger("manualqa.web")
_CAPTURE = 64 * 1024  # JSON bodies read for targets and error messages; larger ones are not kept

# (path parameters, the JSON request, the JSON response, the query string) -> text
Target = Callable[[Mapping[str, object], JSONObject, JSONObject, str], str]


def _texts(value: JSONValue) -> list[str]:
    """A JSON list's items as text ([] for anything else)."""
    return [str(item) for item in value] if isinstance(value, list) else []


def path(name: str) -> Target:
    return lambda params, req, resp, query: str(params.get(name, ""))


def sent(name: str) -> Target:
    return lambda params, req, resp, query: str(req.get(name, ""))


def answered(name: str) -> Target:
    return lambda params, req, resp, query: str(resp.get(name, ""))


@dataclass(frozen=True)
class Action:
    name: str
    target: Target = lambda params, req, resp, query: ""
    detail: Target = lambda params, req, resp, query: ""
    # who acted, when not the caller's key or session: a login names the key it opened (never the key itself)
    actor: Target | None = None


_API = "/api/v1"
ACTIONS: dict[tuple[str, str], Action] = {
    ("POST", "/admin/login"): Action("login", actor=answered("name")),
    ("POST", "/admin/logout"): Action("logout"),
    ("POST", f"{_API}/index/versions/{{version}}/activate"): Action("index.activate", path("version")),
    ("POST", f"{_API}/index/rollback"): Action("index.rollback", answered("active"),
                                               lambda p, q, r, s: f"from {r['previous']}" if r.get("previous") else ""),
    ("POST", f"{_API}/index/import"): Action("index.import", answered("version"), answered("status")),
    ("POST", f"{_API}/index/gc"): Action(
        "index.gc", lambda p, q, r, s: f"keep {q.get('keep', '')}",
        lambda p, q, r, s: f"removed {', '.join(_texts(r['removed'])) or 'nothing'}" if "removed" in r else ""),
    ("POST", f"{_API}/admin/try"): Action("index.try", sent("version"), sent("question")),
    ("GET", f"{_API}/index/versions/{{version}}/export"): Action("index.export", path("version")),
    ("POST", f"{_API}/manuals"): Action("manual.upload", answered("file_name"), answered("job")),
    ("DELETE", f"{_API}/manuals/{{manual_id}}"): Action("manual.delete", path("manual_id")),
    ("PUT", f"{_API}/manuals/{{manual_id}}/title"): Action("manual.title", path("manual_id"), sent("title")),
    ("DELETE", f"{_API}/manuals/{{manual_id}}/title"): Action("manual.title_reset", path("manual_id")),
    ("POST", f"{_API}/keys"): Action("key.create", sent("name"), sent("role")),
    ("POST", f"{_API}/keys/{{name}}/revoke"): Action("key.revoke", path("name")),
    ("POST", f"{_API}/deployment/answer-mode"): Action(
        "answer_mode.set", sent("mode"), lambda p, q, r, s: f"was {r['previous']}" if r.get("previous") else ""),
    ("POST", f"{_API}/deployment/doctor"): Action(
        "doctor", answered("profile"), lambda p, q, r, s: "" if "passed" not in r else
        ("passed" if r["passed"] else "failed gates " + ", ".join(_texts(r.get("failed_gates"))))),
    ("POST", f"{_API}/deployment/reload"): Action("profile.reload", answered("profile"), answered("status")),
    ("PUT", f"{_API}/answers/retention"): Action(
        "retention.set", sent("days"), lambda p, q, r, s: f"was {r['previous_days']}" if "previous_days" in r else ""),
    ("GET", f"{_API}/answers/export"): Action("log.export", lambda p, q, r, s: s),
}


def _template(scope: HTTPScope) -> str:
    """The route's path with its parameters unnamed of their types: /keys/{name:str}/revoke -> /keys/{name}/revoke."""
    return re.sub(r"\{(\w+):[^}]*\}", r"{\1}", str(scope.get("path_template") or ""))


def action_of(scope: HTTPScope) -> Action | None:
    """The admin action a request is, or None for what is not audited (reads, the technician's routes)."""
    method = str(scope.get("method", "GET"))
    found = ACTIONS.get((method, _template(scope)))
    if found is not None:
        return found
    handler = scope.get("route_handler")
    if method in ("GET", "HEAD", "OPTIONS") or handler is None or admin_guard not in handler.resolve_guards():
        return None
    return Action(f"{method} {_template(scope)}", lambda params, req, resp, query: ",".join(map(str, params.values())))


def _json(body: bytes) -> JSONObject:
    try:
        value: JSONValue = json.loads(body) if body else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _actor(scope: HTTPScope, services: Services, headers: dict[bytes, bytes], before: str) -> tuple[str, Via]:
    """Who acted: the principal the guards found, else whom the key or cookie names now, else nobody."""
    auth = headers.get(b"authorization", b"").decode("latin-1")
    key = auth[7:].strip() if auth.lower().startswith("bearer ") else headers.get(b"x-api-key", b"").decode("latin-1")
    cookie = SESSION_COOKIE in headers.get(b"cookie", b"").decode("latin-1")
    via: Via = "key" if key else "session" if cookie else "none"
    for principal in principal_memo(scope).values():
        if principal is not None:
            return principal.name, via
    if before:
        return before, via
    if via == "key":
        principal = services.keys.verify(key)
        return (principal.name if principal else ""), via
    if via == "session":
        from litestar.connection import ASGIConnection

        session = services.sessions.get(ASGIConnection(scope).cookies.get(SESSION_COOKIE))
        return (session.principal.name if session else ""), via
    return "", via


class _Exchange:
    """One audited request: what it sent and was answered (JSON only, up to _CAPTURE bytes), and its record."""

    def __init__(self, action: Action, scope: HTTPScope, services: Services, trail: AuditLog) -> None:
        self.action, self.scope, self.services, self.trail = action, scope, services, trail
        self.headers: dict[bytes, bytes] = dict(scope.get("headers") or [])
        # a login's body is its key: never read
        self.json_in = action.name != "login" and self.headers.get(b"content-type", b"").startswith(b"application/json")
        self.json_out = False
        self.status = 500
        self.sent, self.answered = bytearray(), bytearray()
        self.before = ""  # who acted, found before the handler ran (a logout ends the session it names)
        self.recorded = False

    def keep_request(self, message: ReceiveMessage) -> None:
        if self.json_in and message["type"] == "http.request" and len(self.sent) < _CAPTURE:
            self.sent.extend(message.get("body", b""))

    def keep_response(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            out = dict(message.get("headers") or [])
            self.json_out = out.get(b"content-type", b"").startswith(b"application/json")
        elif message["type"] == "http.response.body" and self.json_out and len(self.answered) < _CAPTURE:
            self.answered.extend(message.get("body", b""))

    def _write(self) -> None:
        action, scope = self.action, self.scope
        req, resp = _json(bytes(self.sent)), _json(bytes(self.answered))
        query = scope.get("query_string", b"").decode("latin-1")
        params = dict(scope.get("path_params") or {})
        via: Via
        if action.actor is not None:
            actor, via = action.actor(params, req, resp, query), "key"
        else:
            actor, via = _actor(scope, self.services, self.headers, self.before)
        error = resp.get("error")
        detail = str(error.get("message", "")) if isinstance(error, dict) and error \
            else action.detail(params, req, resp, query)
        self.trail.record(action.name, actor, via, action.target(params, req, resp, query), self.status, detail)

    async def record(self) -> None:
        """Once per request; shielded, so a client gone mid-answer does not take the record with it."""
        if self.recorded:
            return
        self.recorded = True
        try:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self._write)
        except Exception:  # noqa: BLE001 - the action itself is done; say that its record is missing
            log.exception("audit: could not record %s (status %s)", self.action.name, self.status)


def audit_middleware(services: Services) -> Callable[[ASGIApp], ASGIApp]:
    """Record each admin action (ACTIONS, or any admin-guarded write) with its result in gateway.records.audit.

    The record is written before the response's last byte is sent: a client that has its answer can
    read the action in GET /api/v1/audit at once.
    """
    trail = AuditLog(services.settings.db_path)

    def factory(app: ASGIApp) -> ASGIApp:
        async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != ScopeType.HTTP or (action := action_of(scope)) is None:
                await app(scope, receive, send)
                return
            exchange = _Exchange(action, scope, services, trail)
            if action.name == "logout":
                exchange.before, _ = await anyio.to_thread.run_sync(_actor, scope, services, exchange.headers, "")

            async def receive_copy() -> ReceiveMessage:
                message = await receive()
                exchange.keep_request(message)
                return message

            async def send_copy(message: Message) -> None:
                exchange.keep_response(message)
                if message["type"] == "http.response.body" and not message.get("more_body", False):
                    await exchange.record()
                await send(message)

            try:
                await app(scope, receive_copy, send_copy)
            finally:
                await exchange.record()  # nothing was sent (an error the app did not answer): still recorded

        return middleware

    return factory
