"""Questions embedded at the same time share forward passes; each gets its own vector, errors reach
every waiter, a lone question is embedded at once."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

from retrieval.query_batch import QueryBatcher


class FakeModel:
    """Vectors that name their text; a forward pass takes a while, like a real one under load."""

    def __init__(self, delay_s: float = 0.05, fail_on: str | None = None) -> None:
        self.delay_s = delay_s
        self.fail_on = fail_on
        self.batches: list[list[str]] = []
        self.concurrent = 0
        self.max_concurrent = 0
        self._lock = threading.Lock()

    def __call__(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            self.concurrent += 1
            self.max_concurrent = max(self.max_concurrent, self.concurrent)
            self.batches.append(list(texts))
        try:
            time.sleep(self.delay_s)
            if self.fail_on is not None and self.fail_on in texts:
                raise RuntimeError("model failed")
            return np.array([[float(t.split("-")[1]), float(len(texts))] for t in texts], dtype=np.float32)
        finally:
            with self._lock:
                self.concurrent -= 1


def test_a_lone_question_is_embedded_at_once() -> None:
    model = FakeModel(delay_s=0.0)
    batcher = QueryBatcher(model)
    assert batcher.encode("q-7")[0] == 7.0
    assert batcher.encode("q-8")[0] == 8.0
    assert model.batches == [["q-7"], ["q-8"]]


def test_concurrent_questions_share_passes_and_keep_their_own_vectors() -> None:
    model = FakeModel()
    first_pass = threading.Event()

    def held(texts: list[str]) -> np.ndarray:
        # The first pass lasts until two more questions wait behind it, so that they overlap in time
        # however slowly the threads start on a busy box (a 50 ms pass raced their start-up).
        if not first_pass.is_set():
            first_pass.set()
            deadline = time.monotonic() + 60
            while len(batcher._pending) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
        return model(texts)

    batcher = QueryBatcher(held, max_batch=8)
    with ThreadPoolExecutor(24) as pool:
        results = list(pool.map(lambda i: (i, batcher.encode(f"q-{i}")), range(24)))
    assert all(vec[0] == i for i, vec in results)  # nobody got another question's vector
    assert sorted(t for b in model.batches for t in b) == sorted(f"q-{i}" for i in range(24))
    assert len(model.batches) < 24 and max(len(b) for b in model.batches) <= 8
    assert model.max_concurrent == 1  # one forward pass at a time
    assert batcher.served == 24 and batcher.batches == len(model.batches)


def test_a_failed_pass_reaches_every_waiter_and_the_next_questions_still_work() -> None:
    model = FakeModel(fail_on="q-3")
    batcher = QueryBatcher(model)
    errors: list[BaseException] = []

    def ask(i: int) -> Any:
        try:
            return batcher.encode(f"q-{i}")
        except RuntimeError as exc:
            errors.append(exc)
            return None

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(ask, range(8)))
    failed_batch = next(b for b in model.batches if "q-3" in b)
    assert len(errors) == len(failed_batch)
    assert batcher.encode("q-9")[0] == 9.0


def test_real_model_batched_vectors_match_single_ones(embedder: Any) -> None:
    questions = ["How do I flash the firmware?", "What input voltage range does the piston board accept?",
                 "bed levelling probe offset", "STEPPER_BUZZ motor does not move"]
    alone = [embedder.encode([q])[0] for q in questions]
    with ThreadPoolExecutor(len(questions)) as pool:
        together = list(pool.map(embedder.encode_query, questions))
    for a, b in zip(alone, together, strict=True):
        assert float(np.dot(a, b)) == pytest.approx(1.0, abs=1e-5)
