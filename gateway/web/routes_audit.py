"""The audit trail over HTTP: what admins did, newest first (written by gateway.web.audit)."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, get
from litestar.concurrency import sync_to_thread
from litestar.di import NamedDependency
from litestar.params import QueryParameter

from gateway.records.audit import RESULTS, AuditLog
from gateway.services import Services
from gateway.web.responses_log import AuditEntryOut, AuditPage
from gateway.web.security import admin_guard

RESULT_PATTERN = "^(" + "|".join(RESULTS) + ")$"


class AuditController(Controller):
    path = "/audit"
    tags = ["system"]
    guards = [admin_guard]

    @get("/", summary="The audit trail of admin actions (logins, activations, uploads, keys, ...), newest first")
    async def list_audit(
        self, services: NamedDependency[Services],
        action: Annotated[str | None, QueryParameter(max_length=100, description=(
            "one action, e.g. index.activate, manual.upload, key.revoke, login"))] = None,
        result: Annotated[str | None, QueryParameter(pattern=RESULT_PATTERN,
                                                     description="ok, refused or failed")] = None,
        limit: Annotated[int, QueryParameter(ge=1, le=500)] = 50,
        offset: Annotated[int, QueryParameter(ge=0, le=1_000_000_000)] = 0) -> AuditPage:
        """Each entry: time (UTC), actor (the key's name; empty when no key was recognised), via (key, session
        or none), action, target, result (ok, refused: 401/403, failed: any other error), status, detail."""
        trail = AuditLog(services.settings.db_path)
        rows, total = await sync_to_thread(lambda: trail.query(limit=limit, offset=offset, action=action,
                                                               result=result))
        return AuditPage(entries=[AuditEntryOut(**vars(r)) for r in rows], total=total, limit=limit, offset=offset)
