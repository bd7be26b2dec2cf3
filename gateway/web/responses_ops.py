"""Response bodies of the admin's oversight routes (issue 48, item 9): the unanswered view, the system
status and a question tried on an inactive index version, as msgspec Structs so that the OpenAPI
document types them (gateway.web.routes_unanswered, routes_status, routes_trial)."""

from __future__ import annotations

import msgspec

from gateway.web.responses import AnswerOut


# -- unanswered ---------------------------------------------------------------------------------
class ManualCount(msgspec.Struct):
    """A manual (the first cited, else the closest) and how many counted questions it drew; all None:
    no passage at all."""

    sha256: str | None
    manual: str | None
    title: str | None
    count: int


class WeekCount(msgspec.Struct):
    week: str  # ISO 8601 week of the UTC time, "2026-W49"
    count: int


class AskedQuestion(msgspec.Struct):
    id: str  # the answer log's row: GET /api/v1/answers/{id}
    time: str
    question: str
    outcome: str
    client: str
    reasons: list[str]  # not_found | not_helpful | asked_again


class ShownPassage(msgspec.Struct):
    chunk_id: str
    manual: str | None
    title: str | None
    page: int | None
    heading: str
    text: str  # the quoted sentences of a citation, or the nearest passage's text ("" once gone)
    pdf_url: str


class QuestionGroup(msgspec.Struct):
    question: str  # the latest wording
    count: int
    reasons: dict[str, int]
    first: str
    last: str
    manuals: list[ManualCount]
    weeks: list[str]
    questions: list[AskedQuestion]  # newest first
    passages: list[ShownPassage]  # what the technicians were shown


class UnansweredView(msgspec.Struct):
    since: str | None
    questions: int  # counted questions in the window (before the manual / week filters)
    matching: int  # of them, those the filters keep
    grouped_by: str  # "embedding" (the index's embedder) or "text" (exact repeats; no embedder)
    similarity: float
    reask_window_s: float
    clients: list[str]
    by_manual: list[ManualCount]
    by_week: list[WeekCount]
    groups: list[QuestionGroup]
    more_groups: int


# -- system status ------------------------------------------------------------------------------
class DiskStatus(msgspec.Struct):
    path: str
    free_bytes: int
    total_bytes: int
    used_percent: float


class MemoryStatus(msgspec.Struct):
    rss_bytes: int | None
    peak_rss_bytes: int | None
    machine_total_bytes: int | None


class QueueStatus(msgspec.Struct):
    waiting: int
    running: int
    capacity: int  # waiting places beyond the running one (server.queue_size); more get 503


class IndexStatus(msgspec.Struct):
    active: str | None
    versions: int
    # why an export (GET /index/versions/{id}/export, no key named) would be refused now, in its own words
    # ("no signing key on this gateway: ..."); null: it would be signed (the admin page disables Export)
    export_refusal: str | None = None


class LogStatus(msgspec.Struct):
    rows: int
    db_bytes: int  # gateway.db with its WAL
    pending: int  # rows queued for the writer


class SystemStatus(msgspec.Struct):
    time: str
    pid: int
    uptime_s: float | None
    ready: bool
    load_error: str | None
    answer_mode: str
    disk: DiskStatus
    memory: MemoryStatus
    queue: QueueStatus
    runtime: dict[str, object]  # gateway.runtime_owner.RuntimeStatus: state, reason, backend, isolation, worker
    index: IndexStatus
    answer_log: LogStatus
    answers: dict[str, int]  # since this process started, per outcome (as /metrics)


# -- trial ----------------------------------------------------------------------------------------
class TrialOut(msgspec.Struct):
    trial: bool  # always true: an answer of an inactive version, not a technician's
    version: str  # the version it came from
    active: str | None  # the active version, unchanged
    logged: bool  # false: trials are not written to the answer log (docs/api.md)
    answer: AnswerOut
