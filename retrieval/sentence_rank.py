"""Rank the fused top passages by their best sentence as well as by the whole chunk.

A chunk is embedded whole (about 1,000 characters, truncated at the embedder's 256 tokens), so the
one sentence that answers a question is averaged with its neighbours: on eval/dev the right page
is in the fused top 10 for 97 % of answerable questions and first for 68 %. Scoring each of those
ten passages by the question's best cosine to one of its sentences (read as the index reads a
passage: the manual's title and the section heading before it), added to its fused score, puts the
right page first more often on every half measured, none of which the weight was chosen on but two
(docs/bench/experiments/sentence_rank.md).

The sentence vectors are written at ingest (ChunkStore.sentence_vectors, float16), so a search only
takes dot products. A version written before they were kept, or a chunk without them, has its
sentences embedded at query time with the index's own embedder (about 0.3 s for ten passages on 2
cores), kept in a bounded VectorCache that the gateway's composition root owns (one per
gateway.services.Services) and shares with the answer's evidence step (gateway.answer.extractive's
similarity), which embeds the same sentences of the top passages in the same form.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence

import numpy as np

from ingest.text.sentences import sentence_spans
from retrieval.embedders.base import Embedder, passage_text
from retrieval.term_coverage import row_text

MIN_WORDS = 3  # shorter pieces (a heading, "Note:", a part number) are not sentences to score
CACHE_ENTRIES = 4096  # ~6 MiB of 384-d float32 vectors


class VectorCache:
    """Texts' vectors under one embedder, least recently used dropped first (thread-safe)."""

    def __init__(self, entries: int = CACHE_ENTRIES) -> None:
        self.entries = entries
        self._lock = threading.Lock()
        self._vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()

    def clear(self) -> None:
        with self._lock:
            self._vectors.clear()

    def encode(self, embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
        """The texts' vectors (rows in order), embedding only those not cached, in one batch."""
        model = embedder.model_hash
        with self._lock:
            known = {t: self._vectors[(model, t)] for t in texts if (model, t) in self._vectors}
            for t in known:
                self._vectors.move_to_end((model, t))
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        if missing:
            fresh = np.asarray(embedder.encode(missing), dtype=np.float32)
            with self._lock:
                for t, v in zip(missing, fresh, strict=True):
                    self._vectors[(model, t)] = v
                    known[t] = v
                while len(self._vectors) > self.entries:
                    self._vectors.popitem(last=False)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([known[t] for t in texts])


def sentence_texts(title: str, heading: str, text: str) -> list[str]:
    """A passage's sentences as embedded: title and heading before each, whitespace collapsed; the
    whole passage when it has no sentence of MIN_WORDS words."""
    pieces = [" ".join(text[s:e].split()) for s, e in sentence_spans(text)]
    pieces = [p for p in pieces if len(p.split()) >= MIN_WORDS] or [" ".join(text.split())]
    return [passage_text(heading or "", p, title or "") for p in pieces]


def _row_sentences(row: Mapping[str, object]) -> list[str]:
    """sentence_texts of a chunk row; a row without text is a KeyError, as before."""
    text = row["text"]
    if not isinstance(text, str):
        raise TypeError(f"chunk row 'text' is {type(text).__name__}, not text")
    return sentence_texts(row_text(row, "title"), row_text(row, "heading"), text)


def best_sentence_similarity(embedder: Embedder, query_vector: np.ndarray, rows: Sequence[Mapping[str, object]],
                             cache: VectorCache | None = None,
                             stored: Sequence[np.ndarray | None] | None = None) -> list[float]:
    """For each chunk row (title, heading, text), the query's highest cosine to one of its sentences.

    stored: per row, its sentence vectors written at ingest (ChunkStore.sentence_vectors), or None;
    only rows without them are split and embedded now. cache: the caller's VectorCache (the gateway's
    Services owns one); None embeds them in a cache of this call only (the same cosines)."""
    cache = cache if cache is not None else VectorCache()
    q = np.asarray(query_vector, dtype=np.float32)
    kept = list(stored) if stored is not None else [None] * len(rows)
    per_row = [None if vecs is not None and len(vecs) else _row_sentences(r)
               for r, vecs in zip(rows, kept, strict=True)]
    flat = [t for texts in per_row if texts for t in texts]
    sims = cache.encode(embedder, flat) @ q if flat else np.zeros(0, dtype=np.float32)
    out, at = [], 0
    for texts, vecs in zip(per_row, kept, strict=True):
        if texts is None and vecs is not None:
            out.append(float((vecs @ q).max()))
        else:
            n = len(texts or [])
            out.append(float(sims[at:at + n].max()))
            at += n
    return out


def sentence_order(order: Sequence[int], fused: dict[int, float], best: dict[int, float], weight: float,
                   cos: dict[int, float], demoted: frozenset[int] | set[int] = frozenset(),
                   terms: dict[int, float] | None = None, term_weight: float = 0.0) -> list[int]:
    """The rows of `order` that have a sentence score, by fused score over the best fused + weight x
    best-sentence cosine + term_weight x the share of the question's words the passage holds
    (retrieval.term_coverage; ties: the closer chunk, then document order); rows without a sentence
    score keep their place after them. A demoted row (a contents page, doubtful OCR: its fused score
    already halved) gets half the bonus too: a contents line is a section title that matches any
    question about its section, and must not bring the page that points to the answer back above it."""
    scored = [r for r in order if r in best]
    top = max((fused[r] for r in scored), default=0.0) or 1.0
    share = terms or {}
    key = {r: fused[r] / top + (weight * best[r] + term_weight * share.get(r, 0.0)) * (0.5 if r in demoted else 1.0)
           for r in scored}
    return sorted(scored, key=lambda r: (-key[r], -cos.get(r, 0.0), r)) + [r for r in order if r not in best]
