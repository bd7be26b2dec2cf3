"""Run the (blocking) answer pipeline in a worker thread and hand its events to async code.

A client that goes away cancels the generation: the async side sets the cancel event in its
`finally`, the pipeline sees it between tokens and ends with outcome "cancelled".
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from litestar.response import ServerSentEvent

_DONE = object()


class EventStream(ServerSentEvent):
    """Server-Sent Events that keep their Content-Type: Litestar lets the handler's own media type
    (JSON, for handlers that also answer plain JSON) override the response's, so SSE clients and
    browsers would see application/json."""

    def to_asgi_response(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["media_type"] = "text/event-stream"
        return super().to_asgi_response(*args, **kwargs)


async def stream_events(
    produce: Callable[[threading.Event, Callable[[Any], None]], Iterator[dict[str, Any]]],
    cancel: threading.Event | None = None,
) -> AsyncIterator[dict[str, Any]]:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Any] = asyncio.Queue()
    cancel = cancel or threading.Event()

    def put(item: Any) -> None:
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
            if item is _DONE:
                break
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        cancel.set()
