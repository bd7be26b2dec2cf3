"""A graceful stop: the answers in flight, and a uvicorn server that drains them on SIGTERM.

systemd stops a service with SIGTERM and kills it TimeoutStopSec later. On SIGTERM (or Ctrl-C)
`serve()` stops listening at once (a new connection is refused) and lets the answers in progress
finish for up to `server.drain_timeout_s`. Those still running then are cancelled: each ends with
outcome "cancelled", in the log and as its client's final event. uvicorn waits for the responses
to end (a backstop cancels requests still open CANCEL_GRACE_S + 5 s later), then the app's shutdown
hook (`finish_answers`) waits until every answer has logged its row and closes the answer log, so
no answer a client saw, and none that was cut, is missing from gateway.db. The process exits 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import uvicorn

if TYPE_CHECKING:
    from litestar import Litestar

    from gateway.records.jobs import JobRunner
    from gateway.services import Services


def say(message: str) -> None:
    """One line on stderr, whatever the log level: the journal shows how a stop went."""
    print(f"manualqa: {message}", file=sys.stderr, flush=True)


class InFlight:
    """The answers being produced now (their cancel events), so that a stop can count, cancel and await them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancels: dict[int, threading.Event] = {}
        self._ids = itertools.count()

    @contextlib.contextmanager
    def track(self, cancel: threading.Event) -> Iterator[None]:
        """Count one answer for as long as it runs (until its row is logged and its final event made)."""
        with self._lock:
            key = next(self._ids)
            self._cancels[key] = cancel
        try:
            yield
        finally:
            with self._lock:
                del self._cancels[key]

    def __len__(self) -> int:
        with self._lock:
            return len(self._cancels)

    def cancel_all(self) -> int:
        """Ask every running answer to stop (each ends as outcome "cancelled"); returns how many."""
        with self._lock:
            cancels = list(self._cancels.values())
        for cancel in cancels:
            cancel.set()
        return len(cancels)

    async def wait(self, timeout_s: float) -> bool:
        """Wait (without blocking the event loop) until no answer runs; False if timeout_s passed first."""
        deadline = time.monotonic() + timeout_s
        while len(self):
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.05)
        return True


async def finish_answers(in_flight: InFlight, services: Services, jobs: JobRunner) -> None:
    """The app's shutdown hook: cancel what the drain left running, wait for its rows, close the log."""
    from gateway.answer.generation import CANCEL_GRACE_S

    left = in_flight.cancel_all()  # only after uvicorn's backstop cancelled their requests
    if left:
        say(f"cancelling {left} answer(s) whose requests were cut (each is logged as cancelled)")
    # A cancelled answer stops between two tokens; a runtime that ignores the cancel is abandoned by
    # the pipeline after CANCEL_GRACE_S, and the answer logged then.
    if not await in_flight.wait(CANCEL_GRACE_S + 5.0):
        say(f"{len(in_flight)} answer(s) did not stop; their log rows may be missing")
    services.close()
    jobs.close()


class DrainingServer(uvicorn.Server):
    """uvicorn's server, saying what it drains, and exiting 0 after a drained stop.

    uvicorn re-raises the stop signal once it has shut down, so the process dies "killed by SIGTERM"
    and Python's atexit hooks never run; a drained stop is a clean exit here instead.
    """

    def __init__(self, config: uvicorn.Config, in_flight: InFlight, drain_timeout_s: float) -> None:
        super().__init__(config)
        self.in_flight = in_flight
        self.drain_timeout_s = drain_timeout_s

    async def cancel_after_drain(self) -> None:
        """Cancel the answers still running when the drain timeout ends (their clients get a final event)."""
        if not await self.in_flight.wait(self.drain_timeout_s):
            say(f"drain timeout: cancelling {self.in_flight.cancel_all()} answer(s) still running "
                f"(each ends as cancelled, in the log and for its client)")

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        say(f"stopping: no new connections; draining {len(self.in_flight)} answer(s) "
            f"for up to {self.drain_timeout_s:g} s")
        t0 = time.monotonic()
        drain = asyncio.create_task(self.cancel_after_drain())
        try:
            await super().shutdown(sockets)  # closes the listeners, waits for the responses to end
        finally:
            drain.cancel()
        if self.force_exit:  # a second Ctrl-C: uvicorn skips the app's shutdown hook
            say("forced to stop: answers in progress were not drained")
        else:
            say(f"stopped after {time.monotonic() - t0:.1f} s; answer log closed")

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        handled = (signal.SIGINT, signal.SIGTERM)
        original = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)


def serve(app: Litestar, host: str, port: int, drain_timeout_s: float, log_level: str = "info") -> None:
    """Run `app` until SIGTERM or Ctrl-C, then drain as the module docstring says."""
    from gateway.answer.generation import CANCEL_GRACE_S

    # uvicorn's own limit is the backstop: cancelled answers end within CANCEL_GRACE_S of the drain.
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level,
                            timeout_graceful_shutdown=math.ceil(drain_timeout_s + CANCEL_GRACE_S + 5))
    DrainingServer(config, app.state.in_flight, drain_timeout_s).run()
