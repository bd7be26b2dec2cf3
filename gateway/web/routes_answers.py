"""The answer log over HTTP: list with filters and paging, one answer's provenance, feedback."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, get, post
from litestar.concurrency import sync_to_thread
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, JSONBody, QueryParameter

from gateway.records.answer_rows import OUTCOMES
from gateway.services import Services
from gateway.web.errors import ApiError
from gateway.web.responses import AnswerDetail, AnswerPage, AnswerRow, FeedbackOut
from gateway.web.schemas import FeedbackRequest
from gateway.web.security import principal_of, reader_guard

OUTCOME_PATTERN = "^(" + "|".join(OUTCOMES) + ")$"


class AnswersController(Controller):
    path = "/answers"
    tags = ["answers"]

    @get("/", guards=[reader_guard], summary="The answer log, newest first")
    async def list_answers(
        self, services: NamedDependency[Services],
        outcome: Annotated[str | None, QueryParameter(pattern=OUTCOME_PATTERN)] = None,
        since: FromQuery[str | None] = None,
        client: FromQuery[str | None] = None,
        limit: Annotated[int, QueryParameter(ge=1, le=500)] = 50,
        offset: Annotated[int, QueryParameter(ge=0, le=1_000_000_000)] = 0) -> AnswerPage:
        log = services.log
        rows = await sync_to_thread(lambda: log.query(since=since, outcome=outcome, client=client,
                                                      limit=limit, offset=offset))
        return AnswerPage(answers=[AnswerRow(**r) for r in rows], limit=limit, offset=offset)

    @get("/{answer_id:str}", guards=[reader_guard], summary="One answer with its full provenance")
    async def show(self, services: NamedDependency[Services], answer_id: FromPath[str]) -> AnswerDetail:
        log = services.log
        row = await sync_to_thread(log.get, answer_id)
        if row is None:
            raise ApiError(404, "not_found", f"no answer {answer_id}")
        # provenance: the artifact chain itself, not only its id
        row["chain"] = await sync_to_thread(log.chain, row["chain_id"]) if row.get("chain_id") else None
        return AnswerDetail(**row)

    @post("/{answer_id:str}/feedback", guards=[reader_guard], status_code=201,
          summary="Thumbs up/down with an optional comment; one current vote per answer per client")
    async def feedback(self, request: Request[Any, Any, Any], services: NamedDependency[Services],
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
