"""What the admin log routes answer: the audit trail's pages and the answer log's retention setting."""

from __future__ import annotations

from typing import Annotated

import msgspec


class AuditEntryOut(msgspec.Struct):
    """One admin action: result ok | refused (401/403) | failed (any other error), with the HTTP status."""

    id: str
    time: str
    actor: str
    via: str
    action: str
    target: str
    result: str
    status: int
    detail: str = ""


class AuditPage(msgspec.Struct):
    entries: list[AuditEntryOut]
    total: int
    limit: int
    offset: int


class RetentionOut(msgspec.Struct):
    """days: answers older than this are deleted (0: kept forever); configured: what manualqa.toml or
    MANUALQA_LOG__RETENTION_DAYS says (the value at the next start)."""

    days: int
    configured: int
    last_run: str | None = None
    deleted_last_run: int = 0
    previous_days: int | None = None
    note: str = ""


class RetentionRequest(msgspec.Struct, forbid_unknown_fields=True):
    """days: 0 keeps every answer; at most 100 years."""

    days: Annotated[int, msgspec.Meta(ge=0, le=36_500)]
