"""Services: the one composition root that the CLI, the HTTP app, replay, bench and tests share.

Parts are given to the constructor (a test hands in the session's loaded embedder or a scripted
runtime) or built from the settings on first use, so that `--help`, the admin commands and error
paths stay fast and never load a model they do not need.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from gateway.config import Settings
from gateway.index_parts import IndexParts

if TYPE_CHECKING:
    from gateway.answer.deps import AnswerDeps
    from gateway.answer.events import AnswerEvent
    from gateway.answer.pipeline import AnswerResult
    from gateway.answer.request import AnswerRequest
    from gateway.generation_queue import GenerationQueue
    from gateway.qualification.answer_mode import ModeDecision
    from gateway.records.answers import AnswerLog
    from gateway.records.jobs import JobRunner
    from gateway.records.keys import KeyStore
    from gateway.records.sessions import SessionStore
    from retrieval.embedders import Embedder
    from retrieval.rerank import Reranker
    from retrieval.versions import IndexStore
    from runtimes.base import Runtime
    from runtimes.profiles import Profile


class AnswerModeSwitch:
    """The answer mode an admin put in force on this running server (POST /api/v1/deployment/answer-mode),
    over the configured one; the configuration (Settings.answer.mode) is left as the file said and
    decides again at the next start. None: nothing switched, the configuration decides."""

    def __init__(self) -> None:
        self._mode: str | None = None
        self._lock = threading.Lock()

    @property
    def mode(self) -> str | None:
        with self._lock:
            return self._mode

    def over(self, configured: str) -> str:
        """The mode to decide from: the switched one, else `configured`."""
        return self.mode or configured

    def set(self, mode: str, configured: str) -> str:
        """Put `mode` in force for the next answers; returns the mode it replaces (switched or configured)."""
        with self._lock:
            previous, self._mode = self._mode or configured, mode
        return previous


class Services(IndexParts):
    """The parts one gateway runs on; each is injected or built once, thread-safely.

    Index and embedders (gateway.index_models, gateway.index_parts), the runtime's owner and the one
    generation queue, the repositories of gateway.db (answer log, API keys, sessions, background jobs):
    the HTTP app keeps only web concerns beside it (readiness, metrics, rate limits, requests in flight).
    """

    def __init__(self, settings: Settings, *, store: IndexStore | None = None, embedder: Embedder | None = None,
                 runtime: Runtime | None = None, profile: Profile | None = None,
                 log: AnswerLog | None = None) -> None:
        self.settings = settings
        self._lock = threading.RLock()
        self._store = store
        self._embedder = embedder
        self._profile = profile
        from gateway.runtime_owner import RuntimeOwner

        self.runtimes = RuntimeOwner(lambda: self.profile, runtime)  # the runtime's one owner
        self._log = log
        self._other_embedders: dict[str, Embedder] = {}  # models of versions built before a change
        self._reranker: Reranker | None = None
        self._reranker_loaded = False
        self._sentence_cache = None  # built on first use (gateway.index_models.IndexModels.sentence_cache)
        from gateway.records.titles import TitleCache

        self.titles = TitleCache()  # display titles, read again only when an admin changed them
        self.mode_switch = AnswerModeSwitch()  # an admin's answer mode on this running server, over answer.mode
        self._queue: GenerationQueue | None = None
        self._keys: KeyStore | None = None
        self._sessions: SessionStore | None = None
        self._jobs: JobRunner | None = None

    # -- generation ----------------------------------------------------------------------------
    @property
    def profile(self) -> Profile:
        with self._lock:
            if self._profile is None:
                from gateway.records.active_profile import resolve_profile

                self._profile = resolve_profile(self.settings.data_dir, self.settings.runtime.profile)
            return self._profile

    @property
    def runtime(self) -> Runtime:
        """The profile's runtime, created and loaded once by its owner; raises if it cannot load."""
        return self.runtimes.get()

    @runtime.setter
    def runtime(self, value: Runtime | None) -> None:
        """Swap the runtime (a test's scripted one; None drops it so the next use loads the profile's)."""
        self.runtimes.swap(value)

    def runtime_if_loaded(self) -> Runtime | None:
        return self.runtimes.if_loaded()

    @property
    def queue(self) -> GenerationQueue:
        """The one generation queue of this process: web asks, CLI answers, replay and profile switches."""
        from gateway.generation_queue import GenerationQueue

        queue: GenerationQueue = self._once("_queue", lambda: GenerationQueue(self.settings.server.queue_size))
        return queue

    def turn(self, cancel: threading.Event | None = None) -> AbstractContextManager[bool]:
        """A turn at generation for a caller that reserved no place in the queue (CLI, replay, tests)."""
        return self.queue.turn(cancel)

    @property
    def generation_lock(self) -> threading.Lock:
        """Held while the runtime streams (gateway.runtime_owner.RuntimeOwner.busy)."""
        return self.runtimes.busy

    def switch_profile(self, profile: Profile, runtime: Runtime | None) -> Runtime | None:
        """Replace profile and runtime together (a running server's profile switch); returns the old runtime."""
        with self._lock:
            self._profile = profile
            return self.runtimes.swap(runtime, owned=True)

    # -- answers (gateway.answer.pipeline, gateway.records.answers) -----------------------------
    @property
    def log(self) -> AnswerLog:
        from gateway.records.answers import AnswerLog

        log: AnswerLog = self._once("_log", lambda: AnswerLog(self.settings.db_path))
        return log

    @property
    def keys(self) -> KeyStore:
        from gateway.records.keys import KeyStore

        keys: KeyStore = self._once("_keys", lambda: KeyStore(self.settings.db_path))
        return keys

    @property
    def sessions(self) -> SessionStore:
        """Admin cookie sessions (rows of gateway.db, so a restart or a second process sees them)."""
        from gateway.records.sessions import SessionStore

        sessions: SessionStore = self._once("_sessions", lambda: SessionStore(self.settings.db_path))
        return sessions

    @property
    def jobs(self) -> JobRunner:
        """The background job runner (ingest after an upload); built by the server: it claims the data
        directory's jobs and first fails what a crashed server left unfinished."""
        from gateway.records.jobs import JobRunner

        jobs: JobRunner = self._once("_jobs", lambda: JobRunner(self.settings.db_path))
        return jobs

    def close(self) -> None:
        """Flush and close the answer log if this process opened it: a stop must not drop queued rows.
        Then stop the runtime (a worker process ends with it)."""
        with self._lock:
            log = self._log
        if log is not None:
            log.close()
        self.runtimes.close()

    def answer_deps(self, decision: ModeDecision | None = None) -> AnswerDeps:
        """What the answer pipeline runs on: this root as retriever and model, the answer log as its sink.

        `decision`: the mode already decided for this ask (the web route decides it once, to know whether
        to reserve a generation slot); None decides it here (it reads gate 4's record)."""
        from gateway.answer.deps import AnswerDeps

        decision = decision or self.answer_mode()
        answer = dataclasses.replace(self.settings.answer, mode=decision.mode)  # "auto" decided
        # a question's own "generate" runs the model too: unqualified, its text is a draft, never green
        return AnswerDeps(settings=answer, retriever=self, model=self, sink=self.log,
                          search_k=self.settings.search.k, unqualified=decision.unqualified)

    def answer_mode(self) -> ModeDecision:
        """The mode answers run in and why (gateway.qualification.answer_mode): the admin's switch or else
        answer.mode, and under "auto" gate 4's verdict."""
        from gateway.qualification.answer_mode import decide_mode

        try:
            profile, error = self.profile, None
        except Exception as exc:  # noqa: BLE001 - no profile: extractive, and the reason says why
            profile, error = None, str(exc)
        configured = self.mode_switch.over(self.settings.answer.mode)
        return decide_mode(configured, self.settings.data_dir, profile, error)

    def answer(self, question: str, **kwargs: Any) -> AnswerResult:
        """One answer, consumed (tests, bench): see answer_events for the arguments."""
        from gateway.answer.pipeline import answer

        request, controls = _request_of(question, kwargs)
        return answer(self.answer_deps(), request, **controls)

    def answer_events(self, question: str, **kwargs: Any) -> Iterator[AnswerEvent]:
        """answer_events(AnswerRequest(question=..., scope=manuals, ...), cancel=, slot=) on this root."""
        from gateway.answer.pipeline import answer_events

        request, controls = _request_of(question, kwargs)
        return answer_events(self.answer_deps(), request, **controls)


def _request_of(question: str, kwargs: dict[str, Any]) -> tuple[AnswerRequest, dict[str, Any]]:
    """(the AnswerRequest, the run's controls: cancel and slot) from keyword arguments; `manuals` is its scope."""
    from gateway.answer.request import AnswerRequest

    controls: dict[str, Any] = {k: kwargs.pop(k) for k in ("cancel", "slot") if k in kwargs}
    scope = tuple(kwargs.pop("manuals", None) or ())
    return AnswerRequest(question=question, scope=scope, **kwargs), controls
