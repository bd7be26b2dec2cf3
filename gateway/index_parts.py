"""The search half of the composition root's index (gateway.services.Services): search with the
settings each question gets, retrieve for the answer pipeline, ingest, and the display titles an
admin gives (shown on hits and rows, renames, diffs).

A mixin so that the CLI, the app and tests keep calling these on the one root; the store and the
models it searches with are its base's, gateway.index_models.IndexModels.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, MutableMapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.index_models import IndexModels
from ingest.models import ChunkParams, ParseLimits
from retrieval.types import Hit, RetrievalError, SearchParams

if TYPE_CHECKING:
    from gateway.answer.deps import Retrieved
    from gateway.records.titles import TitleCache
    from retrieval.builder import IngestReport
    from retrieval.embedders import Embedder


def search_params_for(params: SearchParams, query: str, embedder: Embedder) -> SearchParams:
    """The configured search settings for this question. A question outside English, searched with an
    English-only embedder, skips the best-sentence step: its cosines are the English model's reading of
    Chinese or German sentences, and without it eval/zh-dev went from MRR 0.85 to 0.87 and eval/de-dev
    from 0.71 to 0.76 (docs/bench/experiments/language_weights.md); the word share stays."""
    from ingest.text.languages import detect_question

    if params.sentence_weight and not getattr(embedder, "multilingual", False) and detect_question(query) != "en":
        return dataclasses.replace(params, sentence_weight=0.0)
    return params


class IndexParts(IndexModels):
    """Search, ingest, display titles, renames and diffs of one gateway, over the parts of IndexModels."""

    titles: TitleCache  # the display titles last read (gateway.records.titles), this gateway's own

    @property
    def chunk_params(self) -> ChunkParams:
        return self.settings.chunking

    @property
    def parse_limits(self) -> ParseLimits:
        return self.settings.ingest

    def ingest(self, paths: Sequence[str | Path], progress: Callable[..., None] | None = None) -> IngestReport:
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
        from ingest.text.languages import detect_question
        from retrieval.companion import reads_other_languages, sentence_similarity
        from retrieval.embedders.base import similarity_to
        from retrieval.embedders.dual import companion_of
        from retrieval.search import search_with_timings
        from retrieval.types import NoIndexError

        version = version or self.store.active_id()  # once: the embedder and the search see one version
        if not version:
            raise NoIndexError("no active index version: ingest manuals first (manualqa ingest PATH)")
        embedder = self.embedder_for(version)
        if not isinstance(query, str) or not query.strip():
            raise RetrievalError("the question is empty")
        t = time.perf_counter()
        vector = embedder.encode_query(query)  # once: the search and the evidence sentences' scores share it
        embed_ms = (time.perf_counter() - t) * 1000
        params = dataclasses.replace(search_params_for(self.settings.search, query, embedder), k=k)
        hits, timings = search_with_timings(self.store, embedder, query, params, query_vector=vector,
                                            manuals=manuals or None, version=version, reranker=self.reranker,
                                            sentence_cache=self.sentence_cache)
        timings["embed_ms"] = embed_ms
        timings["total_ms"] += embed_ms
        self.show_titles(hits)
        similar = similarity_to(embedder, query, vector, cache=self.sentence_cache)
        companion = companion_of(embedder)
        if companion is not None and reads_other_languages(detect_question(query), [h.language for h in hits]):
            # the evidence's sentences outside English: scored by the multilingual companion too
            similar = sentence_similarity(similar, similarity_to(companion, query, cache=self.sentence_cache))
        return Retrieved(hits, timings, version, similar)

    def show_titles(self, items: Sequence[Hit | MutableMapping[str, object]]) -> None:
        """Display titles the admin gave (gateway.records.titles) on hits or manual rows, in place."""
        from gateway.records.titles import apply_titles, current_titles

        apply_titles(items, current_titles(self.settings.db_path, self.titles))

    def index_diff(self, a: str, b: str) -> dict[str, Any]:
        """IndexStore.diff with the display titles an admin gave: a renamed manual is named as it is
        shown everywhere else (its `pdf_title` the version's own); a changed one by its new sha256."""
        from gateway.records.titles import apply_titles, current_titles

        d = self.store.diff(a, b)
        titles = current_titles(self.settings.db_path, self.titles)
        apply_titles(d["added"] + d["removed"], titles, sha_key="sha256")
        apply_titles(d["changed"], titles, sha_key="new_sha256")
        return d

    def rename_manual(self, manual: str, title: str | None) -> dict[str, str]:
        """Give a manual of the active index a display title (None: show the PDF's own again)."""
        from gateway.records.titles import DisplayTitles
        from retrieval.scope import resolve_manuals

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
