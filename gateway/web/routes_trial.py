"""POST /api/v1/admin/try: a question tried on an index version before it is activated (issue 48, item 9).

The admin sees what technicians would get from a version (its search and its quoted evidence)
while the active version keeps serving them. The answer runs the ordinary pipeline
(gateway.answer.pipeline) pinned to that version, extractive (no model, so no place in the
generation queue), and is marked as a trial. It is not written to the answer log: a trial is the
admin's check, not a technician's question, and must not show in the log, its counts, the
unanswered view or a replay's baseline. /metrics does not count it either.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Annotated, Any

import msgspec
from litestar import Controller, post
from litestar.concurrency import sync_to_thread
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.params import JSONBody

from gateway.answer.request import AnswerRequest
from gateway.services import Services
from gateway.web.errors import ApiError
from gateway.web.responses import AnswerOut
from gateway.web.responses_ops import TrialOut
from gateway.web.routes_ask import key_name_of, require_ready
from gateway.web.schemas import ManualRef, Question
from gateway.web.security import AppRequest, admin_guard

if TYPE_CHECKING:
    from gateway.answer.result import AnswerResult

VersionId = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]


class TrialRequest(msgspec.Struct, forbid_unknown_fields=True):
    question: Question
    version: VersionId
    manuals: Annotated[list[ManualRef], msgspec.Meta(max_length=50)] | None = None


class Unlogged:
    """The answer sink of a trial: nothing is kept (the result still carries its id)."""

    def record(self, result: AnswerResult, chain: dict[str, object] | None = None, durable: bool = False,
               timeout_s: float = 30.0) -> str:
        return str(getattr(result, "id", ""))


def trial_answer(services: Services, request: AnswerRequest) -> dict[str, Any]:
    """The extractive answer from request.version, through the pipeline, logged nowhere."""
    from gateway.answer.pipeline import answer
    from retrieval.scope import resolve_manuals
    from retrieval.types import RetrievalError

    if request.scope:
        try:
            resolve_manuals(services.store.open(request.version).chunks.manuals(), list(request.scope))
        except RetrievalError as exc:
            raise ApiError(400, "unknown_manual", str(exc)) from None
    deps = services.answer_deps()
    deps = dataclasses.replace(deps, settings=dataclasses.replace(deps.settings, mode="extractive"), sink=Unlogged())
    result = answer(deps, request)
    return result.to_dict()


class TrialController(Controller):
    tags = ["index"]
    guards = [admin_guard]

    @post("/admin/try", status_code=200,
          summary="Answer a question from a given index version (a trial before activating it; not logged)")
    async def try_version(self, request: AppRequest, state: State, services: NamedDependency[Services],
                          data: JSONBody[TrialRequest]) -> TrialOut:
        """Search + quoted evidence from `version`; the active version is unchanged and serves on. 404 for an
        unknown version."""
        require_ready(state)
        question = data.question.strip()
        if not question:
            raise ApiError(400, "invalid_request", "the question is empty (only blanks or control characters)")
        store = services.store
        known = await sync_to_thread(store.list_versions)
        if data.version not in {v["id"] for v in known}:
            raise ApiError(404, "not_found", f"no index version {data.version!r}")
        asked = AnswerRequest(question=question, scope=tuple(data.manuals or ()), mode="extractive", client="api",
                              key_name=key_name_of(request), version=data.version)
        result = await sync_to_thread(trial_answer, services, asked)
        return TrialOut(trial=True, version=data.version, active=store.active_id(), logged=False,
                        answer=AnswerOut.of(result))
