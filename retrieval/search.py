"""Hybrid search over one index version: dense (FAISS) + lexical (FTS5/BM25), fused by RRF.

This is the one search function; the CLI, the answer pipeline and the HTTP app all call it.
Dense retrieval finds paraphrases ("how do I update the board software"), lexical retrieval
finds exact tokens the embedding model blurs ("SKR Mini E3", "PA13", "M3x8"); reciprocal rank
fusion combines the two rankings without having to calibrate their scores against each other.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Sequence
from typing import Any, TypedDict, get_args

import numpy as np

from ingest.text.languages import detect_question
from retrieval.companion import companion_ranking
from retrieval.embedders.base import Embedder
from retrieval.embedders.dual import companion_of
from retrieval.glossary import english_words, glossary_ranking
from retrieval.named import named_manuals
from retrieval.reader import IndexSource
from retrieval.rerank import Reranker, passage_for_rerank, rerank_order
from retrieval.scope import check_embedding, resolve_manuals
from retrieval.sentence_rank import VectorCache, best_sentence_similarity, sentence_order
from retrieval.term_coverage import own_language_coverage, term_coverage
from retrieval.types import CLOSEST, Hit, RetrievalError, SearchMode, SearchParams, shown_label

MODES: tuple[SearchMode, ...] = get_args(SearchMode)
# What search() does without `params`: SearchParams' defaults (chosen on eval/dev), so that a caller
# passing none searches as the configured gateway does. Experiments build variants from it with
# dataclasses.replace(DEFAULTS, ...).
DEFAULTS = SearchParams()


_NAV_HEADING_RE = re.compile(r"^\s*(table of contents|contents|index|list of (figures|tables))\s*$", re.I)
_LEADER_RE = re.compile(r"(\.\s?){3,}\s*\d+|…\s*\d+")


_LEADER_START_RE = re.compile(r"\.\s?\.\s?\.|…")  # in every match of _LEADER_RE; searched 4x faster


def is_navigation(heading: str, text: str) -> bool:
    """A table of contents or index chunk: its heading says so, or it is mostly dot leaders + page numbers."""
    if _NAV_HEADING_RE.match(heading or ""):
        return True
    if not text or _LEADER_START_RE.search(text) is None:  # most passages: no leader at all
        return False
    leaders = len(_LEADER_RE.findall(text))
    if leaders < 4:
        return False
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return leaders >= 0.4 * max(1, len(lines))


def fuse(rankings: Sequence[Sequence[tuple[int, float]]], rrf_k: int,
         weights: Sequence[float] | None = None) -> dict[int, float]:
    """Reciprocal rank fusion: score(row) = Σ over rankings of w / (rrf_k + rank), rank 1-based."""
    fused: dict[int, float] = {}
    for i, ranking in enumerate(rankings):
        w = 1.0 if weights is None else float(weights[i])
        for rank, (row, _score) in enumerate(ranking, start=1):
            fused[row] = fused.get(row, 0.0) + w / (rrf_k + rank)
    return fused


def page_pool(fused: dict[int, float], page_of: dict[int, tuple[str, int]], share: float) -> dict[int, float]:
    """Each chunk also gets `share` of the fused scores of the other candidates on its page.

    The answer to a question is often split over two chunks of one page (a table and its caption,
    a step list and its warning): a page several candidates point to is the likelier page.
    """
    if share <= 0:
        return dict(fused)
    per_page: dict[tuple[str, int], float] = {}
    for row, score in fused.items():
        key = page_of.get(row)
        if key is not None:
            per_page[key] = per_page.get(key, 0.0) + score
    return {row: score + share * (per_page.get(page_of[row], score) - score) if row in page_of else score
            for row, score in fused.items()}


def search_with_timings(
    store: IndexSource,
    embedder: Embedder,
    query: str,
    params: SearchParams = DEFAULTS,
    *,
    manuals: Sequence[str] | None = None,
    version: str | None = None,
    query_vector: np.ndarray | None = None,
    reranker: Reranker | None = None,
    sentence_cache: VectorCache | None = None,
) -> tuple[list[Hit], dict[str, float]]:
    """Like :func:`search`, plus timings in ms: embed_ms, dense_ms, lexical_ms, fuse_ms, sentence_ms,
    rerank_ms, total_ms; and `closest_cosine` (retrieval.types.CLOSEST), the best cosine of any
    candidate in scope, which the hits kept may not hold once re-ordered.

    Everything tunable is in `params` (retrieval.types.SearchParams; the configured gateway passes
    its `search` section, an experiment a variant: ``dataclasses.replace(DEFAULTS, k=10, rrf_k=30)``).
    `reranker` is the loaded cross-encoder that re-orders the top `params.rerank_pool`, None for none.
    `sentence_cache` keeps the sentences embedded for a version without stored sentence vectors (the
    gateway's Services owns one); None: a cache of this search only.
    """
    if manuals is None and params.named_manuals and isinstance(query, str) and query.strip():
        named = _named(store, query, version, glossary=params.glossary_weight > 0)
        if named:
            return _named_search(store, embedder, query, params, named, version=version, query_vector=query_vector,
                                 reranker=reranker, sentence_cache=sentence_cache)
    k, candidates, rrf_k, mode = params.k, params.candidates, params.rrf_k, params.mode
    weights: tuple[float, ...] = (params.dense_weight, params.lexical_weight)
    page_share, ocr_doubt = params.page_share, params.ocr_doubt
    rerank_pool, rerank_weight = params.rerank_pool, params.rerank_weight
    sentence_weight, sentence_pool, term_weight = params.sentence_weight, params.sentence_pool, params.term_weight
    t_start = time.perf_counter()
    if not isinstance(query, str) or not query.strip():
        raise RetrievalError("the question is empty")
    if mode not in MODES:
        raise RetrievalError(f"unknown search mode {mode!r}; use one of {', '.join(MODES)}")
    if k < 1:
        raise RetrievalError(f"k must be at least 1, got {k}")
    if rrf_k < 0:
        raise RetrievalError(f"rrf_k must be >= 0, got {rrf_k}")
    candidates = max(int(candidates), k)

    ver = store.open(version)
    check_embedding(ver, embedder)
    shas = resolve_manuals(ver.chunks.manuals(), manuals) if manuals else None
    allowed = ver.chunks.rows_for_manuals(shas) if shas is not None else None

    t = time.perf_counter()
    qvec = embedder.encode_query(query) if query_vector is None else np.asarray(query_vector, np.float32)
    embed_ms = (time.perf_counter() - t) * 1000

    t = time.perf_counter()
    dense = ver.vectors.search(qvec, candidates, allowed) if mode != "lexical" else []
    dense_ms = (time.perf_counter() - t) * 1000
    side = None  # a third ranking, the companion embedder's (retrieval.companion), where there is one
    language = detect_question(query)
    companion = companion_of(embedder)
    if companion is not None and mode == "hybrid":
        side = companion_ranking(ver, embedder, query, params, candidates, allowed, language)
        if side is not None:  # its question embedding counts in dense_ms (a caller may replace embed_ms)
            dense_ms += side.embed_ms + side.search_ms
            weights = (side.dense_weight, params.lexical_weight, side.weight)

    t = time.perf_counter()
    lexical = ver.chunks.lexical(query, candidates, shas) if mode != "dense" else []
    # a Chinese question's English words among the passages not in Chinese (retrieval.glossary)
    glossed = glossary_ranking(ver.chunks, query, language, params.glossary_weight, candidates, shas) \
        if mode == "hybrid" else []
    lexical_ms = (time.perf_counter() - t) * 1000
    rankings = [dense, lexical] if side is None else [dense, lexical, side.ranking]
    if glossed:
        rankings.append(glossed)
        weights = (*weights, params.glossary_weight)

    t = time.perf_counter()
    dense_rank = {row: i for i, (row, _s) in enumerate(dense, start=1)}
    lexical_rank = {row: i for i, (row, _s) in enumerate(lexical, start=1)}
    cos = {row: s for row, s in dense}
    fused = fuse(rankings, rrf_k, weights)
    missing = np.array([r for r in fused if r not in cos], dtype=np.int64)
    if missing.size:  # lexical-only candidates: their cosine is needed for ordering ties and Hit
        cos.update(zip(missing.tolist(), ver.vectors.cosine(qvec, missing).tolist(), strict=True))
    # Ties (same fused score) go to the semantically closer passage, then to document order.
    # Navigation pages (table of contents, index) match every topic but answer none: they are
    # ranked after real passages with the same fused score, by halving it. Looked at among the top
    # 3k only (all candidates when pages pool their scores), so that it costs one small fetch.
    # OCR text read with a mean word confidence under ocr_doubt (a schematic, a wiring diagram) is
    # ranked the same way: its noise shares a word with any question.
    pool = max(k, int(rerank_pool)) if reranker is not None else k
    by_sentence = (sentence_weight > 0 or term_weight > 0) and sentence_pool > 1 and mode == "hybrid"
    if by_sentence:
        pool = max(pool, int(sentence_pool))
    if page_share > 0:
        shortlist = list(fused)
    else:
        shortlist = sorted(fused, key=lambda r: (-fused[r], -cos[r], r))[: 3 * pool]
    rows = {c["row"]: c for c in ver.chunks.get_rows(shortlist)}
    fused = page_pool(fused, {r: (c["manual_sha256"], c["page"]) for r, c in rows.items()}, page_share)
    demoted: set[int] = set()
    for row, c in rows.items():
        confidence = c.get("ocr_confidence")
        if is_navigation(c["heading"], c["text"]) or (confidence is not None and confidence < ocr_doubt):
            fused[row] *= 0.5
            demoted.add(row)
    order = sorted(shortlist, key=lambda r: (-fused[r], -cos[r], r))[:pool]
    fuse_ms = (time.perf_counter() - t) * 1000
    t = time.perf_counter()
    sentence_scores: dict[int, float] = {}
    term_scores: dict[int, float] = {}
    if by_sentence and len(order) > 1:
        head = order[: int(sentence_pool)]
        weight = sentence_weight
        if sentence_weight > 0:  # with the weight 0 only the word share re-orders: no sentence is scored
            stored = ver.chunks.sentence_vectors(head)
            sims = best_sentence_similarity(embedder, qvec, [rows[r] for r in head],
                                            cache=sentence_cache, stored=[stored.get(r) for r in head])
            sentence_scores = dict(zip(head, sims, strict=True))
        elif (language != "en" and companion is not None and side is not None and side.query_vector is not None
              and params.companion_sentence_weight > 0):
            # a question outside English (the built-in embedder's sentence step is off for it): its best
            # sentence as the companion reads it, stored at ingest for the chunks not in English
            weight = params.companion_sentence_weight
            stored = ver.chunks.companion_sentence_vectors(head)
            sims = best_sentence_similarity(companion, side.query_vector, [rows[r] for r in head],
                                            cache=sentence_cache, stored=[stored.get(r) for r in head])
            sentence_scores = dict(zip(head, sims, strict=True))
        if term_weight > 0:
            shares = term_coverage(query, [rows[r] for r in head], ver.chunks.term_doc_freqs, ver.chunks.row_total())
            term_scores = dict(zip(head, shares, strict=True))
        order = sentence_order(order, fused, sentence_scores or dict.fromkeys(head, 0.0), weight, cos,
                               demoted, term_scores, term_weight)
    sentence_ms = (time.perf_counter() - t) * 1000
    t = time.perf_counter()
    rerank_scores: dict[int, float] = {}
    if reranker is not None and len(order) > 1:
        texts = [passage_for_rerank(rows[r]["title"], rows[r]["heading"], rows[r]["text"]) for r in order]
        scores = reranker.score(query, texts)
        rerank_scores = dict(zip(order, scores.tolist(), strict=True))
        order = [order[i] for i in rerank_order(scores, rerank_weight)]
    rerank_ms = (time.perf_counter() - t) * 1000
    order = order[:k]
    own = own_language_coverage(query, [rows[r] for r in order], ver.chunks.term_doc_freqs,
                                ver.chunks.row_total()) if term_scores else None
    term_scores = dict(zip(order, own, strict=True)) if own is not None else term_scores
    hits = [
        Hit(chunk_id=c["chunk_id"], manual=c["file_name"], title=c["title"],
            manual_sha256=c["manual_sha256"], page=c["page"], heading=c["heading"], text=c["text"],
            score=fused[c["row"]], dense_rank=dense_rank.get(c["row"]),
            lexical_rank=lexical_rank.get(c["row"]), dense_score=float(cos[c["row"]]),
            page_label=shown_label(c["page_label"], c["page"]), rerank_score=rerank_scores.get(c["row"]),
            sentence_score=sentence_scores.get(c["row"]), term_score=term_scores.get(c["row"]),
            language=c.get("language") or "", **ocr_fields(c))
        for c in (rows[r] for r in order)
    ]
    timings = {"embed_ms": embed_ms, "dense_ms": dense_ms, "lexical_ms": lexical_ms, "fuse_ms": fuse_ms,
               "sentence_ms": sentence_ms, "rerank_ms": rerank_ms,
               "total_ms": (time.perf_counter() - t_start) * 1000}
    if cos:
        # the closest passage in scope, whatever the order kept: the answer's not-found check reads it,
        # so re-ordering (sentence step, word share, reranker) cannot make a question look unanswered
        timings[CLOSEST] = float(max(cos.values()))
    return hits, timings


class OcrFields(TypedDict, total=False):
    """The Hit fields of a chunk read by OCR (retrieval.types.Hit)."""

    source: str
    ocr_confidence: float
    ocr_doubtful: list[list[int]]


def ocr_fields(row: dict[str, Any]) -> OcrFields:
    """A chunk row's OCR fields for its Hit: {} for text-layer text (the defaults)."""
    confidence = row.get("ocr_confidence")
    if confidence is None:
        return {}
    return {"source": "ocr", "ocr_confidence": float(confidence),
            "ocr_doubtful": [[int(a), int(b)] for a, b in row.get("ocr_doubtful") or []]}


def _named(store: IndexSource, query: str, version: str | None, glossary: bool = False) -> list[str]:
    """The sha256s of the manuals the question names (retrieval.named), in catalog order; with `glossary`,
    a Chinese question's words in English name them too ("活塞板" reads "piston": the piston board's guide)."""
    chunks = store.open(version).chunks
    catalog = chunks.manuals()
    said = f"{query} {' '.join(english_words(query))}" if glossary else query
    named = named_manuals(said, ((str(m["sha256"]), str(m["title"] or ""), str(m["file_name"])) for m in catalog),
                          chunks.manuals_holding)
    return [m["sha256"] for m in catalog if m["sha256"] in named]


def _named_search(store: IndexSource, embedder: Embedder, query: str, params: SearchParams, named: list[str],
                  **kw: Any) -> tuple[list[Hit], dict[str, float]]:
    """The search among the named manuals, then the others' best hits where they give fewer than k."""
    plain = dataclasses.replace(params, named_manuals=False)
    hits, timings = search_with_timings(store, embedder, query, plain, manuals=named, **kw)
    timings["named_manuals"], timings["named_hits"] = float(len(named)), float(len(hits))
    if len(hits) < params.k:
        more, also = search_with_timings(store, embedder, query, plain, **kw)
        hits += [h for h in more if h.manual_sha256 not in set(named)][: params.k - len(hits)]
        timings["total_ms"] += also["total_ms"]
    return hits, timings


def search(
    store: IndexSource,
    embedder: Embedder,
    query: str,
    params: SearchParams = DEFAULTS,
    *,
    manuals: Sequence[str] | None = None,
    version: str | None = None,
    query_vector: np.ndarray | None = None,
    reranker: Reranker | None = None,
    sentence_cache: VectorCache | None = None,
) -> list[Hit]:
    """Ranked passages for ``query`` from the active (or given) index version, searched as `params` says.

    ``manuals`` scopes the search (file names, titles or sha256 prefixes). Every hit carries its
    fused score, its rank on each side (None where absent) and its exact cosine similarity.
    """
    hits, _timings = search_with_timings(store, embedder, query, params, manuals=manuals, version=version,
                                         query_vector=query_vector, reranker=reranker,
                                         sentence_cache=sentence_cache)
    return hits
