"""What the answer pipeline runs on: a retriever, a model (the generator's runtime) and an answer sink.

The composition root (gateway.services.Services) is all three for the gateway and hands them over
in `AnswerDeps`; a test may give any of them its own double. The pipeline sees nothing else of
the root: no settings but its own section, no probing of what the root happens to have.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, Protocol

from retrieval.types import Hit

if TYPE_CHECKING:
    from gateway.answer.result import AnswerResult
    from gateway.config import AnswerSettings
    from runtimes.base import Runtime
    from runtimes.profiles import Profile

__all__ = ["AnswerDeps", "AnswerSink", "Model", "Retrieved", "Retriever"]


class Retrieved(NamedTuple):
    hits: list[Hit]  # ranked, with the display titles an admin gave
    timings: dict[str, float]  # retrieval.search's: embed_ms, total_ms, ...
    version: str  # the one index version searched (pinned for the whole answer)
    # cosine of the query to each text under the embedder that searched `version` (None: not offered)
    similar: Callable[[list[str]], list[float]] | None = None


class Retriever(Protocol):
    def retrieve(self, query: str, k: int, manuals: Sequence[str] | None = None,
                 version: str | None = None) -> Retrieved:
        """The top k passages for query from one index version (the active one by default);
        raises when there is none or the search fails."""
        ...


class Model(Protocol):
    """The generator's side of the root: the serving profile and its runtime."""

    @property
    def profile(self) -> Profile:
        """The deployment profile that serves (its name and generation config); raises if none resolves."""
        ...

    @property
    def runtime(self) -> Runtime:
        """The profile's runtime, loaded on first use; raises when it cannot load."""
        ...

    def runtime_if_loaded(self) -> Runtime | None:
        """The runtime if it is loaded already (its artifact chain is recorded even without generating)."""
        ...

    def turn(self, cancel: threading.Event | None = None) -> AbstractContextManager[bool]:
        """Wait for, then hold, the one generation turn (gateway.generation_queue); False if cancelled."""
        ...

    @property
    def generation_lock(self) -> threading.Lock:
        """Held while the runtime streams, until the stream has ended (a cancelled one may outlive its turn)."""
        ...


class AnswerSink(Protocol):
    def record(self, result: AnswerResult, chain: dict[str, object] | None = None, durable: bool = False,
               timeout_s: float = 30.0) -> str:
        """Keep one answer (gateway.records.answers.AnswerLog); durable: return once it is committed."""
        ...


@dataclass(frozen=True)
class AnswerDeps:
    settings: AnswerSettings
    retriever: Retriever
    model: Model
    sink: AnswerSink
    search_k: int = 5  # passages retrieval returns at least (the pipeline asks for max_passages too)
    # Why the model has not earned the green `answered` (gateway.qualification.answer_mode.ModeDecision.unqualified):
    # its text is then kept as a labelled draft and the evidence is the answer. None: it has.
    unqualified: str | None = None
