"""Concurrent questions share one forward pass of the embedding model ("group commit").

Under load, every search embeds its own question; on a 2-core box each tiny forward pass pays the
framework's fixed cost and the passes contend for the same cores. Here a question that arrives
while another is being embedded waits for it, and the waiting questions are then embedded
together in one batch by the first of them. A question that arrives alone is embedded at once:
nobody waits for a timer, so a single caller (the CLI, a quiet gateway) pays nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

MAX_BATCH = 32


class _Request:
    __slots__ = ("text", "vector", "error", "done", "wake")

    def __init__(self, text: str) -> None:
        self.text = text
        self.vector: np.ndarray | None = None
        self.error: BaseException | None = None
        self.done = False
        self.wake = threading.Event()


class QueryBatcher:
    """encode(text) -> vector, batching the calls that overlap in time."""

    def __init__(self, encode_many: Callable[[list[str]], np.ndarray], max_batch: int = MAX_BATCH) -> None:
        self._encode_many = encode_many
        self._max_batch = max(1, int(max_batch))
        self._lock = threading.Lock()
        self._pending: list[_Request] = []
        self._busy = False
        self.batches = 0  # how many forward passes served how many questions (for the bench)
        self.served = 0

    def encode(self, text: str) -> np.ndarray:
        req = _Request(text)
        with self._lock:
            self._pending.append(req)
            lead = not self._busy
            self._busy = True
        if not lead:
            req.wake.wait()  # either served by the batch in flight, or promoted to run the next one
        if not req.done:
            self._run_batch()
        if req.error is not None:
            raise req.error
        assert req.vector is not None
        return req.vector

    def _run_batch(self) -> None:
        """Embed the oldest waiting questions (this caller's first among them), then hand over."""
        with self._lock:
            batch = self._pending[: self._max_batch]
            del self._pending[: self._max_batch]
        try:
            vectors = self._encode_many([r.text for r in batch])
            for r, v in zip(batch, vectors, strict=True):
                r.vector = v
        except BaseException as exc:  # every waiter of this batch gets the failure, none hangs
            for r in batch:
                r.error = exc
        with self._lock:
            self.batches += 1
            self.served += len(batch)
            for r in batch:
                r.done = True
                r.wake.set()
            if self._pending:
                self._pending[0].wake.set()  # promoted: it runs the next batch
            else:
                self._busy = False
