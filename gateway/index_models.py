"""The index store and the models that search it, for the composition root (gateway.services.Services):
the embedder of each index version (with its companion, "auto" self-checked), the reranker, the
sentence vectors' cache, and what /health and `index show` say about them.

The base of gateway.index_parts.IndexParts (search, ingest, titles): each part is built once, on first
use, under the root's lock, so that `--help` and the admin commands never load a model. The state it
reads (settings, the lock, the held parts) is set by Services.__init__.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from gateway.companion_folder import companion_setting
from gateway.config import Settings
from retrieval.types import RetrievalError

if TYPE_CHECKING:
    from retrieval.embedders import Embedder
    from retrieval.rerank import Reranker
    from retrieval.sentence_rank import VectorCache
    from retrieval.versions import IndexStore

_Part = TypeVar("_Part")


class IndexModels:
    """The index store, embedders and reranker of one gateway; each part built once, on first use."""

    settings: Settings
    _lock: threading.RLock
    _store: IndexStore | None
    _embedder: Embedder | None
    _companion_folder: str = ""  # what embedding.companion resolved to when the embedder loaded ("" none)
    _other_embedders: dict[str, Embedder]  # models of versions built before a change
    _reranker: Reranker | None
    _reranker_loaded: bool
    _sentence_cache: VectorCache | None

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
