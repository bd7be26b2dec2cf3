"""One generation at a time per runtime, a bounded queue, 503 + Retry-After beyond it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from gateway.web.errors import ApiError


class GenerationSlots:
    def __init__(self, queue_size: int = 8, retry_after_s: int = 5) -> None:
        self.queue_size = queue_size
        self.retry_after_s = retry_after_s
        self._run_lock = threading.Lock()
        self._count_lock = threading.Lock()
        self._admitted = 0  # running + waiting

    @property
    def depth(self) -> int:
        """Requests admitted and not finished (running + waiting)."""
        return self._admitted

    def _busy(self) -> ApiError:
        return ApiError(503, "busy", f"the generator is busy ({self._admitted} requests running or "
                        f"queued); retry later", {"Retry-After": str(self.retry_after_s)})

    def reserve(self) -> Reservation:
        """Take a place in the queue now, or refuse at once (503 + Retry-After).

        The place is given back when its generation ends (run()), or, if the request never gets
        to run (a stream the client dropped before it started), when the reservation is collected.
        """
        with self._count_lock:
            if self._admitted >= 1 + self.queue_size:
                raise self._busy()
            self._admitted += 1
        return Reservation(self)

    def release(self) -> None:
        with self._count_lock:
            self._admitted = max(0, self._admitted - 1)

    @contextmanager
    def run(self, reservation: Reservation, cancel: threading.Event | None = None) -> Iterator[bool]:
        """Wait for, then hold, the single generation slot. Yields False if cancelled while waiting."""
        try:
            acquired = False
            while not acquired:
                acquired = self._run_lock.acquire(timeout=0.2)
                if not acquired and cancel is not None and cancel.is_set():
                    yield False
                    return
            try:
                yield True
            finally:
                self._run_lock.release()
        finally:
            reservation.release()


class Reservation:
    """A place in the generation queue, released exactly once."""

    def __init__(self, slots: GenerationSlots) -> None:
        self._slots = slots
        self._released = False
        self._lock = threading.Lock()

    def release(self) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
        self._slots.release()

    def __del__(self) -> None:  # a request that never ran must not keep its place forever
        self.release()
