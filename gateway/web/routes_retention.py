"""The answer log's retention over HTTP: read it, or change it on the running server (as the answer mode).

A change applies at once (old answers are deleted before the response) and until the next start:
manualqa.toml's [log] retention_days (or MANUALQA_LOG__RETENTION_DAYS) decides again then, as the
response's `configured` says.
"""

from __future__ import annotations

from litestar import Controller, get, put
from litestar.concurrency import sync_to_thread
from litestar.datastructures import State
from litestar.params import JSONBody

from gateway.records.retention import set_retention
from gateway.web.responses_log import RetentionOut, RetentionRequest
from gateway.web.security import admin_guard

NOTE = ("changed on this running server only: [log] retention_days in manualqa.toml (or "
        "MANUALQA_LOG__RETENTION_DAYS) decides again at the next start")


def _out(state: State, previous: int | None = None) -> RetentionOut:
    task = state.retention
    return RetentionOut(days=state.gw.settings.log.retention_days, configured=state.configured_retention_days,
                        last_run=task.last_run, deleted_last_run=task.last_deleted, previous_days=previous,
                        note=NOTE if previous is not None else "")


class RetentionController(Controller):
    path = "/answers/retention"
    tags = ["answers"]
    guards = [admin_guard]

    @get("/", summary="The answer log's retention: answers older than `days` are deleted (0: kept forever)")
    async def show(self, state: State) -> RetentionOut:
        return _out(state)

    @put("/", status_code=200, summary="Change the retention on this running server; old answers go at once")
    async def change(self, state: State, data: JSONBody[RetentionRequest]) -> RetentionOut:
        """Deletes answers (and their feedback) older than the new `days` now; export files are never touched."""
        gw = state.gw
        # the setter `manualqa log retention --days N` calls too; the hourly task reads the new setting
        change = await sync_to_thread(set_retention, gw.settings, gw.log, data.days)
        state.retention.ran(change)
        return _out(state, change.previous_days)
