"""Services: the one composition root that the CLI, the HTTP app, replay, bench and tests share.

Parts are given to the constructor (a test hands in the session's loaded embedder or a scripted
runtime) or built from the settings on first use, so that `--help`, the admin commands and error
paths stay fast and never load a model they do not need.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.config import Settings
from ingest.models import ChunkParams, ParseLimits
from retrieval.types import Hit

if TYPE_CHECKING:
    from gateway.answer.deps import AnswerDeps, Retrieved
    from gateway.answer.events import AnswerEvent
    from gateway.answer.pipeline import AnswerResult
    from gateway.answer.request import AnswerRequest
    from gateway.answer_mode import ModeDecision
    from gateway.generation_queue import GenerationQueue
    from gateway.records.answers import AnswerLog
    from gateway.records.jobs import JobRunner
    from gateway.records.keys import KeyStore
    from gateway.records.sessions import SessionStore
    from retrieval.embedders import Embedder
    from retrieval.versions import IndexStore
    from runtimes.base import Runtime
    from runtimes.profiles import Profile


class Services:
    """The parts one gateway runs on; each is injected or built once, thread-safely.

    Index and embedders, the runtime's owner and the one generation queue, the repositories of
    gateway.db (answer log, API keys, sessions, background jobs): the HTTP app keeps only web
    concerns beside it (readiness, metrics, rate limits, requests in flight).
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
        self._reranker: Any = None
        self._reranker_loaded = False
        self._queue: GenerationQueue | None = None
        self._keys: KeyStore | None = None
        self._sessions: SessionStore | None = None
        self._jobs: JobRunner | None = None

    def _once(self, attr: str, build: Callable[[], Any]) -> Any:
        """The part held in `attr`, built by `build` on first use (under the lock: built once)."""
        with self._lock:
            part = getattr(self, attr)
            if part is None:
                part = build()
                setattr(self, attr, part)
            return part

    # -- index ---------------------------------------------------------------------------------
    @property
    def store(self) -> IndexStore:
        from retrieval.versions import IndexStore

        store: IndexStore = self._once("_store", lambda: IndexStore(self.settings.data_dir))
        return store

    @property
    def embedder(self) -> Embedder:
        with self._lock:
            if self._embedder is None:
                from retrieval.embedders import load_embedder

                e = self.settings.embedding
                self._embedder = load_embedder(e.model, batch_size=e.batch_size)
            return self._embedder

    @property
    def reranker(self) -> Any:
        """The cross-encoder search.rerank names (retrieval.rerank), or None when it is "off"."""
        with self._lock:
            if not self._reranker_loaded:
                from retrieval.rerank import load_reranker

                self._reranker = load_reranker(self.settings.search.rerank)
                self._reranker_loaded = True
            return self._reranker

    def retrieval_facts(self) -> dict[str, Any]:
        """The embedder and reranker this gateway searches with, by id and hash (index show, doctor)."""
        from retrieval.types import RetrievalError

        s = self.settings.search
        facts: dict[str, Any] = {"embedding": {"model": self.settings.embedding.model}}
        try:
            e = self.embedder
            facts["embedding"].update(model_id=e.model_id, model_hash=e.model_hash)
        except RetrievalError as exc:
            facts["embedding"]["error"] = str(exc)
        try:
            rr = self.reranker
        except RetrievalError as exc:
            facts["reranker"] = {"setting": s.rerank, "error": str(exc)}
        else:
            facts["reranker"] = ({"setting": s.rerank} if rr is None else
                                 {"setting": s.rerank, **rr.describe(), "pool": s.rerank_pool,
                                  "weight": s.rerank_weight})
        return facts

    def embedder_for(self, version: str | None = None) -> Embedder:
        """The embedder that searches this index version (the active one by default).

        Normally the configured one. A version built with another model (before an upgrade changed
        the default, or rolled back to) is searched with the model it records, when that model is
        installed with the same weights: an upgrade or a rollback never leaves a gateway unable to
        search. The next `manualqa ingest` re-embeds with the configured model.
        """
        configured = self.embedder
        ver = self.store.open(version)
        recorded = (ver.manifest or {}).get("embedding") or {}
        if recorded.get("model_id") in (None, configured.model_id):
            return configured
        key = f"{recorded.get('model_id')}#{recorded.get('model_hash')}"
        with self._lock:
            cached = self._other_embedders.get(key)
        if cached is not None:
            return cached
        from retrieval.embedders import MissingExtraError, load_embedder, spec_of

        spec = spec_of(recorded)
        if spec is None:
            return configured  # search says plainly that the models differ
        try:
            other = load_embedder(spec, batch_size=self.settings.embedding.batch_size)
            if other.model_id != recorded.get("model_id") or other.model_hash != recorded.get("model_hash"):
                return configured
        except MissingExtraError as exc:  # its backend is an extra left out here: say how to install it
            raise exc.about(f"index version {ver.id} was built with {recorded.get('model_id')}") from exc
        except Exception:  # noqa: BLE001 - not installed here: the same plain refusal
            return configured
        import logging

        logging.getLogger("manualqa").warning(
            "index version %s was built with %s; searching it with that model (the configured one is %s); "
            "`manualqa ingest` re-embeds with the configured model", ver.id, other.model_id, configured.model_id)
        with self._lock:
            return self._other_embedders.setdefault(key, other)

    @property
    def chunk_params(self) -> ChunkParams:
        return self.settings.chunking

    @property
    def parse_limits(self) -> ParseLimits:
        return self.settings.ingest

    def ingest(self, paths: Sequence[str | Path], progress: Callable[..., None] | None = None) -> Any:
        return self.store.ingest(list(paths), self.embedder, self.chunk_params, self.parse_limits,
                                 progress=progress)

    def search(self, query: str, k: int | None = None, manuals: Sequence[str] | None = None,
               version: str | None = None) -> list[Hit]:
        return self.retrieve(query, k or self.settings.search.k, manuals, version).hits

    def retrieve(self, query: str, k: int, manuals: Sequence[str] | None = None,
                 version: str | None = None) -> Retrieved:
        """Hits from one pinned index version (activation meanwhile cannot mix versions), searched with
        the embedder that version was built with, re-ranked as configured, with the display titles."""
        from gateway.answer.deps import Retrieved  # noqa: F811 - at run time too: it is built here
        from retrieval.search import search_with_timings
        from retrieval.types import NoIndexError

        version = version or self.store.active_id()  # once: the embedder and the search see one version
        if not version:
            raise NoIndexError("no active index version: ingest manuals first (manualqa ingest PATH)")
        hits, timings = search_with_timings(self.store, self.embedder_for(version), query, k=k,
                                            manuals=manuals or None, version=version, reranker=self.reranker,
                                            params=self.settings.search)
        self.show_titles(hits)
        return Retrieved(hits, timings, version)

    def show_titles(self, items: Sequence[Any]) -> None:
        """Display titles the admin gave (gateway.records.titles) on hits or manual rows, in place."""
        from gateway.records.titles import apply_titles, current_titles

        apply_titles(items, current_titles(self.settings.db_path))

    def index_diff(self, a: str, b: str) -> dict[str, Any]:
        """IndexStore.diff with the display titles an admin gave: a renamed manual is named as it is
        shown everywhere else (its `pdf_title` the version's own); a changed one by its new sha256."""
        from gateway.records.titles import apply_titles, current_titles

        d = self.store.diff(a, b)
        titles = current_titles(self.settings.db_path)
        apply_titles(d["added"] + d["removed"], titles, sha_key="sha256")
        apply_titles(d["changed"], titles, sha_key="new_sha256")
        return d

    def rename_manual(self, manual: str, title: str | None) -> dict[str, Any]:
        """Give a manual of the active index a display title (None: show the PDF's own again)."""
        from gateway.records.titles import DisplayTitles
        from retrieval.search import resolve_manuals

        known = self.store.open().chunks.manuals()
        shas = resolve_manuals(known, [manual])
        if len(shas) != 1:
            from retrieval.types import RetrievalError

            raise RetrievalError(f"{manual!r} names {len(shas)} manuals; use a file name or a sha256 prefix")
        row = next(m for m in known if m["sha256"] == shas[0])
        titles = DisplayTitles(self.settings.db_path)
        if title is None:
            titles.clear(row["sha256"])
            shown = row["title"]
        else:
            shown = titles.set(row["sha256"], title)
        return {"sha256": row["sha256"], "file_name": row["file_name"], "title": shown, "pdf_title": row["title"]}

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

    def answer_deps(self) -> AnswerDeps:
        """What the answer pipeline runs on: this root as retriever and model, the answer log as its sink."""
        from gateway.answer.deps import AnswerDeps

        answer = dataclasses.replace(self.settings.answer, mode=self.answer_mode().mode)  # "auto" decided
        return AnswerDeps(settings=answer, retriever=self, model=self, sink=self.log,
                          search_k=self.settings.search.k)

    def answer_mode(self) -> ModeDecision:
        """The mode answers run in and why (gateway.answer_mode): answer.mode, or under "auto" gate 4's verdict."""
        from gateway.answer_mode import decide_mode

        try:
            profile, error = self.profile, None
        except Exception as exc:  # noqa: BLE001 - no profile: extractive, and the reason says why
            profile, error = None, str(exc)
        return decide_mode(self.settings.answer.mode, self.settings.data_dir, profile, error)

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

    controls = {k: kwargs.pop(k) for k in ("cancel", "slot") if k in kwargs}
    scope = tuple(kwargs.pop("manuals", None) or ())
    return AnswerRequest(question=question, scope=scope, **kwargs), controls
