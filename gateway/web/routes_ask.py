"""POST /api/v1/ask (JSON or Server-Sent Events) and POST /api/v1/search."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

from litestar import Controller, Response, post
from litestar.concurrency import sync_to_thread
from litestar.datastructures import State
from litestar.di import NamedDependency
from litestar.params import JSONBody

from gateway.answer.events import AnswerEvent, Final, Queue
from gateway.answer.request import AnswerRequest
from gateway.answer_fields import Client
from gateway.services import Services
from gateway.web.bridge import EventStream, Producer, final_result, sse_stream
from gateway.web.errors import ApiError
from gateway.web.responses import AnswerOut, SearchOut
from gateway.web.schemas import AskRequest, SearchRequest
from gateway.web.security import AppRequest, client_id, principal_of, reader_guard
from retrieval.types import RetrievalError


def require_ready(state: State) -> None:
    if not state.ready.is_set():
        raise ApiError(503, "loading", "the gateway is still loading its index and model",
                       {"Retry-After": "5"})


def answer_producer(state: State, request: AnswerRequest) -> Producer:
    """A function cancel -> pipeline events; only the generation step takes the generation slot.

    A question that may need the model reserves its queue place here, in the request handler, so
    that a full queue is a 503 before any response starts (also for streams). Extractive answers
    reserve nothing: they never wait behind the model.
    """
    from gateway.answer.pipeline import answer_events

    gw: Services = state.gw
    decision = gw.answer_mode()  # once per ask: the slot below and the pipeline read the same one
    generates = request.mode_or(decision.mode) == "generate"
    reservation = gw.queue.reserve() if generates else None

    def produce(cancel: threading.Event, emit: Callable[[AnswerEvent], None] | None = None
                ) -> Iterator[AnswerEvent]:
        def on_wait(ahead: int) -> None:  # while it waits, the client hears its place in the queue
            if emit is not None:
                emit(Queue(ahead=ahead))

        def slot(cancel: threading.Event) -> AbstractContextManager[bool]:
            assert reservation is not None  # the pipeline is given this slot only with a reservation (below)
            return gw.queue.run(reservation, cancel, on_wait)

        try:
            with state.in_flight.track(cancel):  # a graceful stop waits for it (gateway.web.drain)
                events = answer_events(gw.answer_deps(decision), request, cancel=cancel,
                                       slot=slot if reservation is not None else None)
                for event in events:
                    if isinstance(event, Final):
                        r = event.result
                        state.metrics.answer(r.outcome, r.timings.get("ttft_ms"), r.timings.get("decode_tps"))
                    yield event
        finally:
            if reservation is not None:  # an answer that never reached generation frees its place
                reservation.release()

    return produce


CLIENT_HEADER = "X-Manualqa-Client"  # the technician page says "web"; anything else is "api"


def client_of(request: AppRequest) -> Client:
    """Who asked, as the answer log records it: the technician page or an integrator's tool."""
    return "web" if request.headers.get(CLIENT_HEADER, "").strip().lower() == "web" else "api"


def key_name_of(request: AppRequest) -> str | None:
    principal = principal_of(request, strict=False)
    return principal.name if principal else None


def _check_scope(services: Services, manuals: list[str]) -> None:
    from retrieval.scope import resolve_manuals

    try:
        resolve_manuals(services.store.open().chunks.manuals(), manuals)
    except RetrievalError as exc:
        raise ApiError(400, "unknown_manual", str(exc)) from None


class AskController(Controller):
    guards = [reader_guard]
    tags = ["answers"]

    @post("/ask", summary="Answer a question from the manuals, with citations",
          status_code=200)
    async def ask(self, request: AppRequest, state: State, services: NamedDependency[Services],
                  data: JSONBody[AskRequest]) -> Response[AnswerOut]:
        """One answer as JSON, or (stream: true) its events as SSE: both are Responses, the JSON one typed."""
        require_ready(state)
        state.rate.check(client_id(request))
        question = data.question.strip()
        if not question:
            raise ApiError(400, "invalid_request", "the question is empty (only blanks or control characters)")
        if data.manuals and services.store.active_id():
            # a scope naming no manual of the index is the request's mistake (400 with the known manuals),
            # not an answer that ended in error (issue 48, item 8)
            await sync_to_thread(_check_scope, services, list(data.manuals))
        produce = answer_producer(state, AnswerRequest(
            question=question, scope=tuple(data.manuals or ()), mode=data.mode, max_tokens=data.max_tokens,
            client=client_of(request), key_name=key_name_of(request)))
        if data.stream:
            # both are Responses; the annotation gives the OpenAPI schema the JSON one (the SSE one is documented)
            return EventStream(sse_stream(produce), headers={"Cache-Control": "no-store",  # type: ignore[return-value]
                                                                  "X-Accel-Buffering": "no"})
        result = await final_result(produce)
        return Response(AnswerOut.of(result.to_dict()))

    @post("/search", summary="Ranked passages (hybrid dense + lexical) without generation",
          status_code=200)
    async def search(self, state: State, services: NamedDependency[Services],
                     data: JSONBody[SearchRequest]) -> SearchOut:
        require_ready(state)
        t0 = time.perf_counter()
        # The version is read once, before the search, so the reply names the one searched even
        # when another is activated meanwhile.
        version = data.version or services.store.active_id()
        hits = await sync_to_thread(services.search, data.query, data.k, data.manuals, version)
        return SearchOut(query=data.query, version=version,
                         took_ms=round((time.perf_counter() - t0) * 1000, 2),
                         hits=[h.to_dict() for h in hits])
