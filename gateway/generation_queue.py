"""One generation at a time per runtime: a first-come queue with positions, refused beyond its bound.

The one queue of a gateway process, owned by `gateway.services.Services`: a web ask reserves its
place when it is admitted (a full queue is a 503 + Retry-After before any response starts), the
CLI, replay and a profile switch take theirs when they reach generation. Each reservation gets a
ticket; the turn goes to the waiting ticket that came first, so a technician can be told
truthfully how many questions are ahead (those admitted earlier and not finished), and that
number only goes down.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from gateway.errors import GatewayError

WAIT_POLL_S = 0.2  # how often a waiter re-checks its cancel flag and reports its position


class QueueFull(GatewayError):
    """The bound of the queue is reached: retry later (the web adds Retry-After)."""

    http_status = 503
    code = "busy"

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.headers = {"Retry-After": str(retry_after_s)}


class GenerationQueue:
    def __init__(self, queue_size: int = 8, retry_after_s: int = 5) -> None:
        self.queue_size = queue_size
        self.retry_after_s = retry_after_s
        self._cond = threading.Condition()
        self._admitted: list[int] = []  # tickets admitted and not finished, oldest first
        self._waiting: set[int] = set()
        self._running: int | None = None
        self._next = 0

    @property
    def depth(self) -> int:
        """Requests admitted and not finished (running + waiting)."""
        return len(self._admitted)

    def counts(self) -> tuple[int, int]:
        """(waiting, running) now: the admin page's system status (gateway.web.routes_status)."""
        with self._cond:
            running = 1 if self._running is not None else 0
            return len(self._admitted) - running, running

    def _busy(self) -> QueueFull:
        return QueueFull(f"the generator is busy ({self.depth} requests running or queued); retry later",
                         self.retry_after_s)

    def reserve(self, force: bool = False) -> Reservation:
        """Take a place in the queue now, or refuse at once (503 + Retry-After).

        The place is given back when its generation ends (run()), or, if the request never gets
        to run (a stream the client dropped before it started), when the reservation is collected.
        force: the gateway's own turn (a profile switch), never refused by the queue bound.
        """
        with self._cond:
            if not force and len(self._admitted) >= 1 + self.queue_size:
                raise self._busy()
            ticket, self._next = self._next, self._next + 1
            self._admitted.append(ticket)
        return Reservation(self, ticket)

    def ahead(self, ticket: int) -> int:
        """Questions admitted before this one and not finished (the one generating included)."""
        with self._cond:
            return sum(1 for t in self._admitted if t < ticket)

    def release(self, ticket: int) -> None:
        with self._cond:
            if ticket in self._admitted:
                self._admitted.remove(ticket)
            self._waiting.discard(ticket)
            if self._running == ticket:
                self._running = None
            self._cond.notify_all()

    def _my_turn(self, ticket: int) -> bool:
        return self._running is None and min(self._waiting) == ticket

    @contextmanager
    def run(self, reservation: Reservation, cancel: threading.Event | None = None,
            on_wait: Callable[[int], None] | None = None) -> Iterator[bool]:
        """Wait for, then hold, the single generation slot. Yields False if cancelled while waiting.

        While it waits, on_wait(n) is called whenever the number of questions ahead changes.
        """
        ticket = reservation.ticket
        try:
            acquired, told = False, None
            with self._cond:
                self._waiting.add(ticket)
                while not (acquired := self._my_turn(ticket)):
                    if cancel is not None and cancel.is_set():
                        break
                    n = sum(1 for t in self._admitted if t < ticket)
                    if on_wait is not None and n != told:
                        told = n
                        on_wait(n)
                    self._cond.wait(WAIT_POLL_S)
                self._waiting.discard(ticket)
                if acquired:
                    self._running = ticket
                else:
                    self._cond.notify_all()
            yield acquired
        finally:
            reservation.release()


    @contextmanager
    def turn(self, cancel: threading.Event | None = None) -> Iterator[bool]:
        """A turn for a caller that asks where it generates (CLI, replay): it waits, never refused."""
        with self.run(self.reserve(force=True), cancel) as acquired:
            yield acquired


class Reservation:
    """A place in the generation queue, released exactly once."""

    def __init__(self, slots: GenerationQueue, ticket: int) -> None:
        self._slots = slots
        self.ticket = ticket
        self._released = False
        self._lock = threading.Lock()

    def release(self) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
        self._slots.release(self.ticket)

    def __del__(self) -> None:  # a request that never ran must not keep its place forever
        self.release()
