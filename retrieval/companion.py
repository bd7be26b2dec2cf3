"""A companion embedder's ranking beside the primary's (docs/bench/experiments/dual_dense.md).

The built-in MiniLM reads English; multilingual-e5-small reads Chinese and German and across languages,
but replacing MiniLM by it lost English questions. With `embedding.companion` set, an index version
holds both: the primary's vectors in FAISS, as always, and the companion's for every chunk in chunks.db
(table companion_vectors), recorded in the manifest as `companion` (model id, weights hash, dimension,
setting). Search then fuses three rankings: the primary's, the lexical one and the companion's, whose
weight depends on the question's language and, for an English question, on the chunk's:

- a question not in English: the companion ranks every chunk (weight `companion_weight`), and the
  primary's ranking keeps `companion_dense_weight` of its weight;
- an English question: the companion ranks the chunks not in English only (`companion_scope_en =
  "other"`, weight `companion_weight_en`), the chunks the primary cannot read; an index of English
  manuals only is then searched exactly as without a companion.

A version without companion vectors, or with another companion's than the embedder carries, is
searched without one (as before the setting); `companion_note` says why.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from retrieval.embedders.base import Embedder
from retrieval.embedders.dual import companion_of
from retrieval.reader import IndexReader, VectorReader
from retrieval.types import SearchParams

MANIFEST_KEY = "companion"


def companion_info(embedder: Embedder) -> dict[str, str | int] | None:
    """What the manifest records of the companion (as `embedding` records the primary), None without one."""
    companion = companion_of(embedder)
    if companion is None:
        return None
    return {"model_id": companion.model_id, "model_hash": companion.model_hash, "dim": int(companion.dim),
            "model": str(getattr(companion, "model", ""))}


def same_companion(recorded: object, embedder: Embedder | None) -> bool:
    """Whether a manifest's `companion` record names the companion `embedder` carries (both None: True)."""
    companion = companion_of(embedder) if embedder is not None else None
    if not isinstance(recorded, Mapping) or not recorded:
        return companion is None
    return bool(companion is not None and recorded.get("model_id") == companion.model_id
                and recorded.get("model_hash") == companion.model_hash)


def describe(recorded: object) -> str:
    """A companion record in words, for messages: 'none' or 'model id (sha256 prefix)'."""
    if not isinstance(recorded, Mapping) or not recorded:
        return "none"
    return f"{recorded.get('model_id')} ({str(recorded.get('model_hash'))[:12]})"


def companion_note(version: IndexReader, embedder: Embedder) -> str | None:
    """Why a version is searched without the configured companion (or with none configured, without the
    one it holds); None when the two agree."""
    recorded = version.manifest.get(MANIFEST_KEY)
    if same_companion(recorded, embedder):
        return None
    wanted = companion_info(embedder)
    return (f"index version {version.id} holds companion vectors of {describe(recorded)}; the "
            f"configured companion is {describe(wanted)}: it is searched without a companion until "
            "`manualqa ingest` embeds the manuals with the configured one")


@dataclass
class CompanionSide:
    """One question's companion ranking: (row, cosine) best first, its fusion weight, and the primary's
    weight beside it."""

    ranking: list[tuple[int, float]]
    weight: float
    dense_weight: float
    embed_ms: float
    search_ms: float
    query_vector: np.ndarray | None = None  # the companion's vector of the question (None: not embedded)


def companion_ranking(version: IndexReader, embedder: Embedder, query: str, params: SearchParams,
                      candidates: int, allowed: np.ndarray | None, query_language: str) -> CompanionSide | None:
    """The companion's ranking of this question within `allowed` (None: every row), or None when this
    version and this embedder do not share a companion. A weight of 0 gives an empty ranking."""
    companion = companion_of(embedder)
    vectors: VectorReader | None = getattr(version, "companion", None)  # a reader without one: none
    if companion is None or vectors is None:
        return None
    if not same_companion(version.manifest.get(MANIFEST_KEY), embedder):
        return None
    english = query_language == "en"
    weight = params.companion_weight_en if english else params.companion_weight
    dense_weight = params.dense_weight * (1.0 if english else params.companion_dense_weight)
    if weight <= 0:
        return CompanionSide([], 0.0, dense_weight, 0.0, 0.0)
    rows = allowed
    if english and params.companion_scope_en == "other":
        other = version.chunks.rows_in_language("en", other=True)
        rows = other if allowed is None else np.intersect1d(other, allowed, assume_unique=True)
        if rows.size == 0:
            return CompanionSide([], weight, dense_weight, 0.0, 0.0)
    t = time.perf_counter()
    qvec = companion.encode_query(query)
    embed_ms = (time.perf_counter() - t) * 1000
    t = time.perf_counter()
    ranking = vectors.search(qvec, candidates, rows)
    return CompanionSide(ranking, weight, dense_weight, embed_ms, (time.perf_counter() - t) * 1000, qvec)


# The evidence's sentences outside English (gateway.answer.extractive.similarity_scorer): MiniLM's cosine
# between a Chinese or German question and a sentence says little, the companion's says more but sits in
# a narrow band (e5: most sentences of the top passages within 0.05 of each other, MiniLM's spread over
# 0.3-0.5). So the companion's cosine, less its mean over the candidates, scaled by SENTENCE_SCALE, is
# added to the primary's. Chosen on the development halves (zh-dev, zh-dev2, de-dev, de-dev2; 214
# answerable questions): quoted gold evidence 81 -> 90 / 94 / 95 / 93 at scale 6 / 10 / 16 / 25, and 78 with the
# companion's cosine alone (docs/bench/experiments/companion_sentences.md).
SENTENCE_SCALE = 10.0
SENTENCE_PASSAGES = 5  # the passages whose language decides (an answer reads at most answer.max_passages = 5)


def reads_other_languages(query_language: str, passage_languages: list[str]) -> bool:
    """Whether the question or one of the first passages is not in English (a passage of unknown language,
    from a version written before languages, counts as English)."""
    return query_language != "en" or any(lang not in ("", "en") for lang in passage_languages[:SENTENCE_PASSAGES])


def sentence_similarity(primary: Callable[[list[str]], list[float]], companion: Callable[[list[str]], list[float]],
                        scale: float = SENTENCE_SCALE) -> Callable[[list[str]], list[float]]:
    """The primary's cosine to each text plus `scale` x the companion's above its mean over the texts."""
    def similar(texts: list[str]) -> list[float]:
        base, other = primary(texts), companion(texts)
        if not other:
            return base
        mean = sum(other) / len(other)
        return [a + scale * (b - mean) for a, b in zip(base, other, strict=True)]

    return similar
