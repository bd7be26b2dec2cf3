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
        return ChunkParams(max_chars=c.max_chars, overlap_chars=c.overlap_chars, min_chars=c.min_chars)

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
                      version=version, candidates=s.candidates, rrf_k=s.rrf_k)
