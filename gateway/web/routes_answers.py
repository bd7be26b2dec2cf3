"""The answer log over HTTP: list with filters and paging, one answer's provenance, feedback."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, get, post
from litestar.concurrency import sync_to_thread
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody, QueryParameter

from gateway.answer_fields import OUTCOMES
from gateway.records.answers import LogRow
from gateway.services import Services
from gateway.web.errors import ApiError
from gateway.web.responses import AnswerDetail, AnswerPage, AnswerRow, FeedbackOut
from gateway.web.schemas import FeedbackRequest
from gateway.web.security import AppRequest, principal_of, reader_guard

OUTCOME_PATTERN = "^(" + "|".join(OUTCOMES) + ")$"
OUTCOMES_PATTERN = "^(" + "|".join(OUTCOMES) + ")(,(" + "|".join(OUTCOMES) + "))*$"


class AnswersController(Controller):
    path = "/answers"
    tags = ["answers"]

    @get("/", guards=[reader_guard], summary="The answer log, newest first, a page at a time, with the total")
    async def list_answers(
        self, services: NamedDependency[Services],
        outcome: Annotated[str | None, QueryParameter(pattern=OUTCOMES_PATTERN, description=(
            "answered, evidence_only, not_found, error or cancelled; several comma-separated"))] = None,
        since: Annotated[str | None, QueryParameter(max_length=64, description=(
            "from this time on: an ISO date/time (UTC unless it says otherwise) or an age like 30m, 12h, 7d"))] = None,
        until: Annotated[str | None, QueryParameter(max_length=64, description=(
            "before this time (exclusive): as since"))] = None,
        client: Annotated[str | None, QueryParameter(max_length=200, description=(
            "who asked: web (technician page), api, openai (/v1), cli, replay, bench; several comma-separated"
        ))] = None,
        manual: Annotated[str | None, QueryParameter(max_length=64, description=(
            "a manual's sha256 (or 8+ leading hex digits): answers that cited or retrieved it"))] = None,
        limit: Annotated[int, QueryParameter(ge=1, le=500)] = 50,
        offset: Annotated[int, QueryParameter(ge=0, le=1_000_000_000)] = 0) -> AnswerPage:
        """A bad filter value is a 400 `bad_request` naming it; `total` counts every answer the filters match."""
        log = services.log
        filters = {"since": since, "until": until, "outcome": outcome, "client": client, "manual": manual}

        def page() -> tuple[list[LogRow], int]:
            return log.query(**filters, limit=limit, offset=offset), log.count(**filters)

        rows, total = await sync_to_thread(page)
        return AnswerPage(answers=[AnswerRow.of(r) for r in rows], limit=limit, offset=offset, total=total)

    @get("/{answer_id:str}", guards=[reader_guard], summary="One answer with its full provenance")
    async def show(self, services: NamedDependency[Services], answer_id: FromPath[str]) -> AnswerDetail:
        log = services.log
        row = await sync_to_thread(log.get, answer_id)
        if row is None:
            raise ApiError(404, "not_found", f"no answer {answer_id}")
        # provenance: the artifact chain itself, not only its id
        chain_id = row.get("chain_id")
        row["chain"] = await sync_to_thread(log.chain, str(chain_id)) if chain_id else None
        return AnswerDetail.of(row)

    @post("/{answer_id:str}/feedback", guards=[reader_guard], status_code=201,
          summary="Thumbs up/down with an optional comment; one current vote per answer per client")
    async def feedback(self, request: AppRequest, services: NamedDependency[Services],
                       answer_id: FromPath[str],
                       data: JSONBody[FeedbackRequest]) -> FeedbackOut:
        log = services.log
        if await sync_to_thread(log.get, answer_id) is None:
            raise ApiError(404, "not_found", f"no answer {answer_id}")
        principal = principal_of(request, strict=False)
        # the latest vote counts: a client's earlier vote on this answer is replaced, and a request
        # without a comment keeps the comment it gave before (gateway.records.answers.set_vote)
        entry = await sync_to_thread(lambda: log.set_vote(answer_id, data.thumbs, data.comment,
                                                          key_name=principal.name if principal else None))
        return FeedbackOut(answer_id=answer_id, thumbs=data.thumbs, comment=entry["comment"])
