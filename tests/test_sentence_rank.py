"""Passages ranked by their best sentence as well (retrieval.sentence_rank, search.sentence_weight)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval.sentence_rank import VectorCache, best_sentence_similarity, sentence_order, sentence_texts


class WordEmbedder:
    """A double: one axis per known word, so a text's cosine to a query is their shared words' share."""

    model_hash = "words"
    WORDS = ("fuse", "rating", "amps", "cleaning", "bed", "nozzle", "warranty")

    def __init__(self) -> None:
        self.calls = 0

    def _vec(self, text: str) -> np.ndarray:
        low = text.lower()
        v = np.array([1.0 if w in low else 0.0 for w in self.WORDS], dtype=np.float32) + 1e-3
        return v / np.linalg.norm(v)

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        return np.stack([self._vec(t) for t in texts])

    def encode_query(self, text: str) -> np.ndarray:
        return self._vec(text)


def test_a_passage_is_read_sentence_by_sentence_with_its_title_and_heading() -> None:
    texts = sentence_texts("Printer manual", "Power",
                           "Note: The fuse is rated 5 amps. Replace it with the same rating.")
    assert texts == ["Printer manual\nPower\nNote: The fuse is rated 5 amps.",
                     "Printer manual\nPower\nReplace it with the same rating."]
    # no sentence of three words: the passage whole
    assert sentence_texts("", "", "Fuse: 5 A") == ["Fuse: 5 A"]


def test_the_passage_with_one_sentence_that_answers_scores_above_one_that_is_all_near_misses() -> None:
    emb = WordEmbedder()
    q = emb.encode_query("fuse rating amps")
    one_answer = {"title": "", "heading": "", "text": "Cleaning the bed is easy. The fuse rating is 5 amps. "
                                                      "The nozzle needs care."}
    diffuse = {"title": "", "heading": "", "text": "The fuse holder is near the bed. Amps are shown on the "
                                                   "screen. Ratings of the nozzle vary."}
    best = best_sentence_similarity(emb, q, [one_answer, diffuse], cache=VectorCache())
    assert best[0] > best[1]
    # the whole chunks, embedded as one text each, would not tell them apart this way
    whole = emb.encode([one_answer["text"], diffuse["text"]]) @ q
    assert whole[0] <= whole[1] + 1e-6


def test_the_scored_head_is_reordered_and_the_rest_keeps_its_place() -> None:
    order = [10, 11, 12, 13]
    fused = {10: 1.0, 11: 0.9, 12: 0.8, 13: 0.7}
    best = {10: 0.1, 11: 0.2, 12: 0.6}  # 13 is below the pool: no score
    assert sentence_order(order, fused, best, weight=2.0, cos={}) == [12, 11, 10, 13]
    assert sentence_order(order, fused, best, weight=0.0, cos={}) == [10, 11, 12, 13]


def test_sentences_are_embedded_once_and_the_cache_stays_bounded() -> None:
    emb, cache = WordEmbedder(), VectorCache(entries=3)
    first = cache.encode(emb, ["a fuse", "the bed"])
    again = cache.encode(emb, ["the bed", "a fuse"])
    assert emb.calls == 1 and np.allclose(first[::-1], again)
    cache.encode(emb, ["x1", "x2", "x3"])
    assert emb.calls == 2 and len(cache._vectors) == 3


def test_the_real_search_ranks_by_sentence_and_says_so(sample_data_dir: Path, embedder: Any,
                                                       questions: list[dict[str, Any]],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from retrieval import search as search_module
    from retrieval.search import search_with_timings
    from retrieval.types import SearchParams
    from retrieval.versions import IndexStore

    # the sentence step's work, counted (a stopwatch under 1 ms proves nothing on a busy box)
    steps: list[str] = []
    for name in ("best_sentence_similarity", "term_coverage"):
        real = getattr(search_module, name)
        monkeypatch.setattr(search_module, name,
                            lambda *a, _real=real, _name=name, **k: steps.append(_name) or _real(*a, **k))
    store = IndexStore(sample_data_dir)
    q = questions[0]["question"]
    plain, t0 = search_with_timings(store, embedder, q, SearchParams(k=5, sentence_weight=0.0, term_weight=0.0))
    assert steps == []  # with both weights 0 the step costs nothing: no sentence scored, no share counted
    ranked, t1 = search_with_timings(store, embedder, q, SearchParams(k=10, sentence_weight=2.0, sentence_pool=10,
                                                                      term_weight=1.5))
    assert steps == ["best_sentence_similarity", "term_coverage"]
    assert all(h.sentence_score is None and h.term_score is None for h in plain) and t0["sentence_ms"] >= 0
    assert all(h.sentence_score is not None and -1.0 <= h.sentence_score <= 1.0 for h in ranked)
    assert all(h.term_score is not None and 0.0 <= h.term_score <= 1.0 for h in ranked)
    assert t1["sentence_ms"] > 0
    # the whole pool comes back: its order is fused / best fused + 2 x best sentence + 1.5 x the share of
    # the question's words, which the hits carry (no sample passage is a contents page: none is demoted)
    best_fused = max(h.score for h in ranked)
    keys = [h.score / best_fused + 2.0 * (h.sentence_score or 0.0) + 1.5 * (h.term_score or 0.0) for h in ranked]
    assert keys == sorted(keys, reverse=True)
    assert len({round(h.term_score or 0.0, 6) for h in ranked}) > 1  # the share tells passages apart
    # the share alone: no sentence is scored (none embedded), the order is fused / best fused + 1.5 x share
    alone, t2 = search_with_timings(store, embedder, q, SearchParams(k=10, sentence_weight=0.0, sentence_pool=10,
                                                                     term_weight=1.5))
    assert all(h.sentence_score is None and h.term_score is not None for h in alone)
    top = max(h.score for h in alone)
    keys = [h.score / top + 1.5 * (h.term_score or 0.0) for h in alone]
    assert keys == sorted(keys, reverse=True)


def test_ingest_stores_every_chunks_sentences_and_an_older_version_ranks_the_same(
        sample_data_dir: Path, tmp_path: Path, embedder: Any, questions: list[dict[str, Any]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil
    import sqlite3

    from retrieval.manifest import CHUNKS_DB
    from retrieval.search import search_with_timings
    from retrieval.sentence_rank import VectorCache
    from retrieval.types import SearchParams
    from retrieval.versions import IndexStore

    store = IndexStore(sample_data_dir)
    ver = store.open()
    rows = list(range(ver.chunks.chunk_count()))
    stored = ver.chunks.sentence_vectors(rows)
    assert ver.chunks.has_sentences and set(stored) == set(rows)
    assert all(v.ndim == 2 and v.shape[1] == embedder.dim for v in stored.values())
    # The same data without the table, as a version written before it was kept: embedded per search.
    data = tmp_path / "data"
    shutil.copytree(sample_data_dir, data)
    old = IndexStore(data)
    db = sqlite3.connect(old.open().path / CHUNKS_DB)
    db.execute("DROP TABLE sentence_vectors")
    db.commit()
    db.close()
    old = IndexStore(data)
    assert not old.open().chunks.has_sentences
    # which sentences each search embeds, counted (it was told by sentence_ms, which a busy box can reverse)
    embedded: list[str] = []
    cache = VectorCache()
    encode = cache.encode
    monkeypatch.setattr(cache, "encode", lambda emb, texts: embedded.extend(texts) or encode(emb, texts))
    for q in questions[:4]:
        embedded.clear()
        new_hits, _ = search_with_timings(store, embedder, q["question"], SearchParams(k=5), sentence_cache=cache)
        assert embedded == []  # the stored vectors: no sentence is embedded per search
        cache.clear()
        old_hits, _ = search_with_timings(old, embedder, q["question"], SearchParams(k=5), sentence_cache=cache)
        assert embedded  # the older version: its sentences are embedded now
        assert [h.chunk_id for h in new_hits] == [h.chunk_id for h in old_hits]
        assert all(abs((a.sentence_score or 0) - (b.sentence_score or 0)) < 0.01
                   for a, b in zip(new_hits, old_hits, strict=True))


def test_the_next_ingest_after_an_older_version_stores_the_kept_manuals_sentences_too(
        sample_data_dir: Path, tmp_path: Path, embedder: Any, repo_root: Path) -> None:
    import shutil
    import sqlite3

    from ingest.models import ChunkParams, ParseLimits
    from retrieval.manifest import CHUNKS_DB
    from retrieval.versions import IndexStore

    data = tmp_path / "data"
    shutil.copytree(sample_data_dir, data)
    db = sqlite3.connect(IndexStore(data).open().path / CHUNKS_DB)
    db.execute("DROP TABLE sentence_vectors")
    db.commit()
    db.close()
    extra = sorted((repo_root / "eval" / "dev" / "manuals").glob("*.pdf"), key=lambda p: p.stat().st_size)[0]
    report = IndexStore(data).ingest([extra], embedder, ChunkParams(), ParseLimits())
    assert report.version and report.unchanged == [] and report.added == [extra.name]
    ver = IndexStore(data).open(report.version)
    assert len(ver.chunks.manuals()) == 3  # the two sample manuals kept beside the new one
    rows = list(range(ver.chunks.chunk_count()))
    assert set(ver.chunks.sentence_vectors(rows)) == set(rows)  # the kept manuals' sentences included
