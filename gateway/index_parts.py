"""The index half of the composition root (gateway.services.Services): the index store, the
embedders that search each version, the reranker, search with display titles, renames and diffs.

A mixin so that the CLI, the app and tests keep calling these on the one root; the state it reads
(settings, the lock, the held parts) is set by Services.__init__.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, MutableMapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from gateway.config import Settings, companion_setting
from ingest.models import ChunkParams, ParseLimits
from retrieval.types import Hit, RetrievalError, SearchParams

if TYPE_CHECKING:
    from gateway.answer.deps import Retrieved
    from gateway.records.titles import TitleCache
    from retrieval.builder import IngestReport
    from retrieval.embedders import Embedder
    from retrieval.rerank import Reranker
    from retrieval.sentence_rank import VectorCache
    from retrieval.versions import IndexStore


def search_params_for(params: SearchParams, query: str, embedder: Embedder) -> SearchParams:
    """The configured search settings for this question. A question outside English, searched with an
    English-only embedder, skips the best-sentence step: its cosines are the English model's reading of
    Chinese or German sentences, and without it eval/zh-dev went from MRR 0.85 to 0.87 and eval/de-dev
    from 0.71 to 0.76 (docs/bench/experiments/language_weights.md); the word share stays."""
    from ingest.text.languages import detect_question

    if params.sentence_weight and not getattr(embedder, "multilingual", False) and detect_question(query) != "en":
        return dataclasses.replace(params, sentence_weight=0.0)
    return params


_Part = TypeVar("_Part")


class IndexParts:
    """Index, embedders and search of one gateway; each part built once, on first use."""

    settings: Settings
    _lock: threading.RLock
    _store: IndexStore | None
    _embedder: Embedder | None
    _companion_folder: str = ""  # what embedding.companion resolved to when the embedder loaded ("" none)
    _other_embedders: dict[str, Embedder]  # models of versions built before a change
    _reranker: Reranker | None
    _reranker_loaded: bool
    _sentence_cache: VectorCache | None
    titles: TitleCache  # the display titles last read (gateway.records.titles), this gateway's own

    def _once(self, attr: str, build: Callable[[], _Part]) -> _Part:
        """The part held in `attr`, built by `build` on first use (under the lock: built once)."""
        with self._lock:
            part: _Part | None = getattr(self, attr)
            if part is None:
                part = build()
                setattr(self, attr, part)
            return part

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
                self._companion_folder = companion_setting(self.settings)
                self._embedder = load_embedder(e.model, batch_size=e.batch_size, companion=self._companion_folder)
                if self._companion_folder and e.companion.strip().lower() == "auto":
                    self._embedder = self._without_failing_companion(self._embedder)
            return self._embedder

    def _without_failing_companion(self, embedder: Embedder) -> Embedder:
        """"auto" found a companion; one that fails its self-check on this machine (retrieval.embedders.
        self_check: it loads, and embeds noise here) is passed over with a warning, as one that was never
        converted: searching with it would rank by noise, failing every search would lose what MiniLM finds."""
        from retrieval.embedders import load_embedder
        from retrieval.embedders.dual import companion_of

        try:
            loaded = companion_of(embedder)  # a Protocol check: reads .dim, which loads the model
            if loaded is not None:
                loaded.encode_query("self-check")  # loads the model: the self-check runs first
        except RetrievalError as exc:
            logging.getLogger("manualqa").warning("embedding.companion = \"auto\": %s; searching without it", exc)
            self._companion_folder = ""
            e = self.settings.embedding
            return load_embedder(e.model, batch_size=e.batch_size)
        return embedder

    @property
    def sentence_cache(self) -> VectorCache:
        """The sentences this gateway embedded (retrieval.sentence_rank.VectorCache), shared by its search's
        best-sentence step and the answer's evidence step; its own, not another gateway's."""
        from retrieval.sentence_rank import VectorCache

        cache: VectorCache = self._once("_sentence_cache", VectorCache)
        return cache

    @property
    def reranker(self) -> Reranker | None:
        """The cross-encoder search.rerank names (retrieval.rerank), or None when it is "off"; loaded once
        by this gateway (its session is not shared with another Services in the process)."""
        with self._lock:
            if not self._reranker_loaded:
                from retrieval.rerank import load_reranker

                self._reranker = load_reranker(self.settings.search.rerank)
                self._reranker_loaded = True
            return self._reranker

    def retrieval_facts(self) -> dict[str, Any]:
        """The embedder and reranker this gateway searches with, by id and hash (index show, doctor)."""
        from retrieval.embedders.dual import companion_of
        from retrieval.types import RetrievalError

        s = self.settings.search
        embedding: dict[str, object] = {"model": self.settings.embedding.model, "companion": None}
        facts: dict[str, Any] = {"embedding": embedding}
        try:
            e = self.embedder
            embedding.update(model_id=e.model_id, model_hash=e.model_hash)
            # the companion this gateway loaded ("auto" is resolved once, at load), by folder and hash
            loaded = companion_of(e)
            if loaded is not None:
                embedding.update(companion=self._companion_folder or loaded.model_id,
                                 companion_id=loaded.model_id, companion_hash=loaded.model_hash)
        except RetrievalError as exc:
            embedding["error"] = str(exc)
            embedding["companion"] = companion_setting(self.settings) or None
        try:
            rr = self.reranker
        except RetrievalError as exc:
            facts["reranker"] = {"setting": s.rerank, "error": str(exc)}
        else:
            facts["reranker"] = ({"setting": s.rerank} if rr is None else
                                 {"setting": s.rerank, **rr.describe(), "pool": s.rerank_pool,
                                  "weight": s.rerank_weight})
        # the best-sentence step scores with the embedder above (no model of its own)
        facts["sentence_rank"] = {"weight": s.sentence_weight, "pool": s.sentence_pool, "term_weight": s.term_weight}
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
        if recorded.get("model_id") is None or (recorded.get("model_id") == configured.model_id
                                                and recorded.get("model_hash") in (None, configured.model_hash)):
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
            "index version %s was built with %s (sha256 %s); searching it with those weights (the configured "
            "model is %s, sha256 %s); `manualqa ingest` re-embeds with the configured model", ver.id, other.model_id,
            other.model_hash[:12], configured.model_id, configured.model_hash[:12])
        with self._lock:
            return self._other_embedders.setdefault(key, other)

    def embedder_note(self, version: str | None = None) -> str | None:
        """What an operator should know when a version is not searched with the configured embedder
        (built before an upgrade changed it): /health shows it until `manualqa ingest` re-embeds."""
        try:
            other = self.embedder_for(version)
        except Exception:  # noqa: BLE001 - a model that cannot be loaded is reported by search itself
            return None
        if other is self.embedder:
            return self.languages_note(version)
        return (f"the active index was built with {other.model_id} (sha256 {other.model_hash[:12]}) and is searched "
                f"with it; the configured embedder is {self.embedder.model_id} (sha256 "
                f"{self.embedder.model_hash[:12]}): `manualqa ingest` re-embeds the manuals with it")

    def languages_note(self, version: str | None = None) -> str | None:
        """A version written before chunks recorded their language is searched with English stemming only
        (Chinese finds nothing by its words): /health says so until the next ingest writes a version that
        records them (manuals re-used from it are analysed anew; --rebuild also re-chunks them)."""
        try:
            analysed = self.store.open(version).chunks.analysed
        except Exception:  # noqa: BLE001 - a version that cannot be opened is reported by search itself
            return None
        if analysed:
            return None
        return ("the active index was written before languages were recorded: its search reads English words "
                "only; `manualqa ingest --rebuild PATH` writes a version that searches Chinese, German and the "
                "other languages (docs/operations.md)")

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
