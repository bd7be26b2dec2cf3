"""Manuals as they go into a version (Entry): re-used from the version before, with their chunks
and stored vectors (no re-embedding), or chunked and embedded now (Embedding)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ingest.models import Chunk, ChunkParams, IngestError, PageText, ParsedManual
from retrieval.embedders.dual import companion_of
from retrieval.types import RetrievalError

if TYPE_CHECKING:
    from retrieval.embedders.base import Embedder
    from retrieval.index_version import IndexVersion

Progress = Callable[[str, int, int], None]
# sha256 of a stored original -> its printed page labels, one per page (None: cannot be read)
LabelReader = Callable[[str], "list[str | None] | None"]


@dataclass
class Entry:
    """One manual as it will be written into a version."""

    parsed: ParsedManual
    chunks: list[Chunk]
    vectors: np.ndarray  # (len(chunks), dim) float32, row i belongs to chunks[i]
    source: Path | None = None  # the original PDF, when it came from this run's input
    # Per chunk, its sentences' vectors (retrieval.sentence_rank); None where not computed (a chunk
    # re-used from a version written before they were kept: embedded at query time instead).
    sentence_vectors: list[np.ndarray | None] | None = None
    # (len(chunks), companion dim) float32: the companion embedder's vectors (retrieval.companion); None in a
    # version built without one.
    companion_vectors: np.ndarray | None = None
    # Per chunk, the companion's vectors of its sentences, for the chunks not in English (retrieval.search's
    # sentence step for a question outside English); None where not kept (English, or no companion).
    companion_sentence_vectors: list[np.ndarray | None] | None = None


def embedding_info(embedder: Embedder) -> dict[str, str | int]:
    """What the manifest records of the model: its id and weights hash (search refuses another),
    and the setting that loads it again (``model``), so a gateway can search this version with its
    own model after the configured one changed (retrieval.embedders.spec_of)."""
    return {"model_id": embedder.model_id, "model_hash": embedder.model_hash, "dim": int(embedder.dim),
            "model": str(getattr(embedder, "model", ""))}


def reuse_manual(base: IndexVersion, info: dict[str, Any], labels: Sequence[str | None] | None = None) -> Entry:
    """A manual of `base` (an IndexVersion) with its pages, chunks and stored vectors.

    Printed page labels come from `base`; `labels` (one per page) stand in for a base written
    before labels were kept."""
    sha = info["sha256"]
    store = base.chunks
    known = store.page_labels(sha) if store.has_labels else dict(enumerate(labels or [], start=1))
    pages = [PageText(p, store.page_text(sha, p) or "", known.get(p))
             for p in range(1, int(info["page_count"]) + 1)]
    parsed = ParsedManual(sha256=sha, file_name=info["file_name"], title=info["title"],
                          page_count=int(info["page_count"]), size_bytes=int(info.get("size_bytes", 0)),
                          pages=pages, pages_without_text=list(info.get("pages_without_text", [])),
                          outline=[(int(p), str(t)) for p, t in info.get("outline", [])],
                          pdf_title=str(info.get("pdf_title") or ""),
                          ocr=store.ocr_pages(sha) if store.has_ocr else {},
                          unread={int(n): str(r) for n, r in (info.get("unread") or {}).items()},
                          ocr_engine={k: v for k, v in (info.get("ocr") or {}).items()
                                      if k not in ("pages", "confidence")},
                          respaced=[int(n) for n in info.get("respaced") or []])
    chunks = list(store.chunks_for_manual(sha))
    rows = sorted(store.rows_for_manuals([sha]))
    if len(rows) != len(chunks):
        raise RetrievalError(f"version {base.id}: {info['file_name']} has {len(chunks)} chunks "
                             f"but {len(rows)} rows; run `manualqa index verify`")
    vectors = base.vectors.reconstruct(np.asarray(rows, dtype=np.int64)) if rows else None
    if vectors is None:
        vectors = np.zeros((0, base.vectors.dim), dtype=np.float32)
    stored = store.sentence_vectors(rows)
    companion = getattr(base, "companion", None)  # the companion's vectors, where the version holds them
    companion_vectors = (np.asarray(companion.reconstruct(np.asarray(rows, dtype=np.int64)), dtype=np.float32)
                         if companion is not None else None)
    companion_sentences = store.companion_sentence_vectors(rows) if companion is not None else {}
    return Entry(parsed, chunks, np.asarray(vectors, dtype=np.float32),
                 sentence_vectors=[stored.get(r) for r in rows], companion_vectors=companion_vectors,
                 companion_sentence_vectors=[companion_sentences.get(r) for r in rows])


def reuse_manuals(base: IndexVersion, infos: Sequence[dict[str, Any]], read_labels: LabelReader | None = None,
                  workers: int = 2) -> list[Entry]:
    """Manuals of `base` as they go into the next version (see reuse_manual).

    A base written before the pages table had a label column has no printed page labels; then
    they are read again from the stored originals (`read_labels`: a labels-only sandboxed parse,
    well under a second a manual, `workers` at a time), so the version built on top of it shows
    printed page numbers for the manuals it re-uses too, without re-embedding them.
    """
    relabelled: dict[str, list[str | None] | None] = {}
    if read_labels is not None and infos and not base.chunks.has_labels:
        shas = [info["sha256"] for info in infos]
        with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="pdf-labels") as pool:
            relabelled = dict(zip(shas, pool.map(read_labels, shas), strict=True))
    return [reuse_manual(base, info, relabelled.get(info["sha256"])) for info in infos]


class Embedding:
    """Chunks and embeds manuals, counting chunks so progress can be reported while the model works."""

    def __init__(self, embedder: Embedder, progress: Progress | None) -> None:
        self.embedder = embedder
        self.progress = progress
        self.done = 0
        self.total = 0
        self.seconds = 0.0

    def entries(self, items: Sequence[tuple[ParsedManual, Path | None]], params: ChunkParams
                ) -> list[Entry | IngestError]:
        """Chunk each manual and embed all their chunks in ONE call (one result per item, in order).

        One call lets the model batch passages of similar length across manuals, which costs less
        padding than one call per manual.
        """
        from ingest.chunker import chunk_manual
        from retrieval.embedders.base import passage_text

        results: list[Entry | IngestError] = []
        texts: list[str] = []
        for parsed, source in items:
            chunks = chunk_manual(parsed, params)
            if not chunks:
                results.append(IngestError(f"{parsed.file_name}: no extractable text "
                                           "(scanned PDF without a text layer?)"))
                continue
            results.append(Entry(parsed, chunks, np.zeros((0, 0), dtype=np.float32), source))
            title = params.title_for(parsed.title)
            texts += [passage_text(c.heading, c.text, title) for c in chunks]
        companion = companion_of(self.embedder)
        passes = 1 if companion is None else 2  # a companion embeds every text once more
        self.total += passes * len(texts)
        before = self.done

        def tick(n: int) -> None:
            if self.progress:
                self.progress("embed", before + n, self.total)

        started = time.perf_counter()
        vectors = np.asarray(self.embedder.encode(texts, progress=tick), dtype=np.float32)
        second = (None if companion is None else
                  np.asarray(companion.encode(texts, progress=lambda n: tick(len(texts) + n)), dtype=np.float32))
        self.seconds += time.perf_counter() - started
        self.done += passes * len(texts)
        offset = 0
        for entry in results:
            if isinstance(entry, Entry):
                entry.vectors = vectors[offset : offset + len(entry.chunks)]
                if second is not None:
                    entry.companion_vectors = second[offset : offset + len(entry.chunks)]
                offset += len(entry.chunks)
        started = time.perf_counter()
        self.sentences([e for e in results if isinstance(e, Entry)])
        self.companion_sentences([e for e in results if isinstance(e, Entry)])
        self.seconds += time.perf_counter() - started
        return results

    def companion(self, entries: Sequence[Entry], params: ChunkParams) -> None:
        """Kept manuals embedded with the companion only (their chunks, primary and sentence vectors stay):
        the companion changed, nothing else did."""
        from retrieval.embedders.base import passage_text

        companion = companion_of(self.embedder)
        if companion is None or not entries:
            for entry in entries:
                entry.companion_vectors = entry.companion_sentence_vectors = None
            return
        texts = [passage_text(c.heading, c.text, params.title_for(e.parsed.title)) for e in entries for c in e.chunks]
        self.total += len(texts)
        before = self.done

        def tick(n: int) -> None:
            if self.progress:
                self.progress("embed", before + n, self.total)

        started = time.perf_counter()
        vectors = np.asarray(companion.encode(texts, progress=tick), dtype=np.float32)
        self.seconds += time.perf_counter() - started
        self.done += len(texts)
        offset = 0
        for entry in entries:
            entry.companion_vectors = vectors[offset : offset + len(entry.chunks)]
            offset += len(entry.chunks)
        started = time.perf_counter()
        self.companion_sentences(entries)
        self.seconds += time.perf_counter() - started

    def sentences(self, entries: Sequence[Entry]) -> None:
        """Each chunk's sentence vectors, embedded once per distinct sentence (chunks overlap)."""
        from retrieval.sentence_rank import sentence_texts

        if not entries:
            return
        per_chunk = [[sentence_texts(e.parsed.title, c.heading, c.text) for c in e.chunks] for e in entries]
        unique = list(dict.fromkeys(t for chunks in per_chunk for texts in chunks for t in texts))
        if not unique:
            return
        found = dict(zip(unique, np.asarray(self.embedder.encode(unique), dtype=np.float32), strict=True))
        for entry, chunks in zip(entries, per_chunk, strict=True):
            entry.sentence_vectors = [np.stack([found[t] for t in texts]) for texts in chunks]

    def companion_sentences(self, entries: Sequence[Entry]) -> None:
        """The companion's vectors of the sentences of each chunk not in English (a question outside English
        scores its top passages by them: retrieval.search), embedded once per distinct sentence; English chunks
        keep none (an English question's sentence step is the built-in embedder's)."""
        from retrieval.sentence_rank import sentence_texts

        companion = companion_of(self.embedder)
        if companion is None or not entries:
            return
        per_chunk = [[sentence_texts(e.parsed.title, c.heading, c.text) if c.language not in ("", "en") else None
                      for c in e.chunks] for e in entries]
        unique = list(dict.fromkeys(t for chunks in per_chunk for texts in chunks if texts for t in texts))
        found = (dict(zip(unique, np.asarray(companion.encode(unique), dtype=np.float32), strict=True))
                 if unique else {})
        for entry, chunks in zip(entries, per_chunk, strict=True):
            entry.companion_sentence_vectors = [np.stack([found[t] for t in texts]) if texts else None
                                                for texts in chunks]
