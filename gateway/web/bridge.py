"""Run the (blocking) answer pipeline in a worker thread and hand its events to async code.

A client that goes away cancels the generation: the async side sets the cancel event in its
`finally`, the pipeline sees it between tokens and ends with outcome "cancelled".

`sse_of` is the one place the typed events (gateway.answer.events) become Server-Sent Events:
`retrieval`, `evidence`, `queue`, many `token` (a Text), then `final`; their JSON is what it always was.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from litestar.response import ServerSentEvent

from gateway.answer.events import AnswerEvent, Evidence, Final, Queue, Retrieval, Text
from gateway.answer.result import AnswerResult
from gateway.web.errors import ApiError


class _Done:
    """The worker thread's last item: the answer's events have all been put."""


_DONE = _Done()


class EventStream(ServerSentEvent):
    """Server-Sent Events that keep their Content-Type: Litestar lets the handler's own media type
    (JSON, for handlers that also answer plain JSON) override the response's, so SSE clients and
    browsers would see application/json."""

    def to_asgi_response(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["media_type"] = "text/event-stream"
        return super().to_asgi_response(*args, **kwargs)


# A function (cancel, emit) -> the answer's events; emit() adds one from another place (the queue).
Producer = Callable[[threading.Event, Callable[[AnswerEvent], None]], Iterator[AnswerEvent]]


def sse_of(event: AnswerEvent) -> dict[str, str]:
    """One answer event as one Server-Sent Event (JSON data, as json.dumps writes it)."""
    match event:
        case Text(text=text):
            return {"event": "token", "data": json.dumps({"text": text})}
        case Evidence(text=text, citations=citations):
            return {"event": "evidence", "data": json.dumps({"text": text, "citations": citations}, default=str)}
        case Queue(ahead=ahead):
            return {"event": "queue", "data": json.dumps({"ahead": ahead})}
        case Retrieval(id=answer_id, index_version=version, passages=passages):
            return {"event": "retrieval", "data": json.dumps(
                {"id": answer_id, "index_version": version, "passages": passages}, default=str)}
        case Final(result=result):
            return {"event": "final", "data": json.dumps(result.to_dict(), default=str)}
    raise TypeError(f"not an answer event: {event!r}")  # pragma: no cover - the union is closed


async def sse_stream(produce: Producer) -> AsyncIterator[dict[str, str]]:
    """The answer's events as SSE; an ApiError raised on the way (a full queue) ends it as `error`."""
    try:
        async for event in stream_events(produce):
            yield sse_of(event)
    except ApiError as exc:
        yield {"event": "error", "data": json.dumps({"error": {"code": exc.code, "message": exc.message}})}


async def final_result(produce: Producer) -> AnswerResult:
    """Run the answer to its end and return its AnswerResult (the JSON replies)."""
    result = None
    async for event in stream_events(produce):
        if isinstance(event, Final):
            result = event.result
    if result is None:  # pragma: no cover - the pipeline always ends with a final event
        raise ApiError(500, "internal_error", "the answer pipeline ended without a result")
    return result


async def stream_events(produce: Producer, cancel: threading.Event | None = None) -> AsyncIterator[AnswerEvent]:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[AnswerEvent | BaseException | _Done] = asyncio.Queue()
    cancel = cancel or threading.Event()

    def put(item: AnswerEvent | BaseException | _Done) -> None:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:  # the loop has closed (the server stopped): nobody is left to read it
            pass

    def worker() -> None:
        try:
            for event in produce(cancel, put):
                put(event)
        except BaseException as exc:  # handed to the async side, which re-raises it
            put(exc)
        finally:
            put(_DONE)

    thread = threading.Thread(target=worker, name="manualqa-answer", daemon=True)
    thread.start()
    try:
        while True:
            item = await queue.get()
            if isinstance(item, _Done):
                break
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        cancel.set()
