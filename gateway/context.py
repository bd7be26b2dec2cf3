"""The Gateway object: the one library core that the CLI, the HTTP app and replay share.

Heavy parts (embedding model, FAISS index, LLM) are built on first use, so that `--help`, the
admin commands and error paths stay fast.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from gateway.config import Settings
from ingest.models import ChunkParams, ParseLimits
from retrieval.types import Hit


class Gateway:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()

    # -- index ---------------------------------------------------------------------------------
    @cached_property
    def store(self) -> Any:
        from retrieval.versions import IndexStore

        return IndexStore(self.settings.data_dir)

    @cached_property
    def embedder(self) -> Any:
        from retrieval.embeddings import Embedder

        return Embedder(self.settings.embedding.model, batch_size=self.settings.embedding.batch_size)

    @property
    def chunk_params(self) -> ChunkParams:
        c = self.settings.chunking
        return ChunkParams(max_chars=c.max_chars, overlap_chars=c.overlap_chars, min_chars=c.min_chars,
                           context=c.context)

    @property
    def parse_limits(self) -> ParseLimits:
        i = self.settings.ingest
        return ParseLimits(timeout_s=i.timeout_s, memory_mb=i.memory_mb, max_pages=i.max_pages,
                           max_file_mb=i.max_file_mb)

    def ingest(self, paths: Sequence[str | Path], progress: Callable[..., None] | None = None) -> Any:
        return self.store.ingest(list(paths), self.embedder, self.chunk_params, self.parse_limits,
                                 progress=progress)

    def search(
        self,
        query: str,
        k: int | None = None,
        manuals: Sequence[str] | None = None,
        version: str | None = None,
    ) -> list[Hit]:
        from retrieval.search import search

        s = self.settings.search
        return search(self.store, self.embedder, query, k=k or s.k, manuals=manuals,
                      version=version, **s.search_options())

    # -- answers (gateway.answer.pipeline, gateway.records.answers) -----------------------------------------
    @cached_property
    def profile(self) -> Any:
        from runtimes.profiles import resolve_profile

        return resolve_profile(self.settings.data_dir, self.settings.runtime.profile)

    @property
    def runtime(self) -> Any:
        """The profile's runtime, created and loaded once (thread-safe); raises if it cannot load."""
        with self._lock:
            if getattr(self, "_runtime", None) is None:
                from runtimes.registry import create_runtime

                p = self.profile
                rt = create_runtime(p.backend, p.artifact_path(), p.runtime_options())
                rt.load()
                self._runtime = rt
            return self._runtime

    @runtime.setter
    def runtime(self, value: Any) -> None:  # tests and tools may plug in a loaded runtime
        with self._lock:
            self._runtime = value

    def runtime_if_loaded(self) -> Any:
        return getattr(self, "_runtime", None)

    _init_lock = threading.Lock()  # guards the lazy attributes below (cached_property does not)

    @property
    def generation_lock(self) -> threading.Lock:
        """One generation at a time per runtime."""
        with self._init_lock:
            if "_generation_lock" not in self.__dict__:
                self._generation_lock = threading.Lock()
            return self._generation_lock

    @property
    def log(self) -> Any:
        with self._init_lock:
            if "_log" not in self.__dict__:
                from gateway.records.answers import AnswerLog

                self._log = AnswerLog(self.settings.db_path)
            return self._log

    def answer(self, question: str, **kwargs: Any) -> Any:
        from gateway.answer.pipeline import answer

        return answer(self, question, **kwargs)

    def answer_events(self, question: str, **kwargs: Any) -> Any:
        from gateway.answer.pipeline import answer_events

        return answer_events(self, question, **kwargs)
