"""Evidence sentences picked by meaning as well as shared words (answer.sentence_similarity): the
index's embedder scores each candidate sentence against the question, and an embedder that fails
costs the similarity, never the evidence."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gateway.answer.deps import AnswerDeps, Retrieved
from gateway.answer.extractive import EVIDENCE, pick_sentences, similarity_scorer
from gateway.answer.pipeline import answer
from gateway.answer.request import AnswerRequest
from gateway.config import AnswerSettings, ConfigError, load_settings
from retrieval.embedders.base import similarity_to
from retrieval.types import Hit
from tests.test_answer_core import Model, Shelf, Sink

KIT = ("The kit contains the board, the parts and a building guide for the kit. "
       "Switch on the soldering iron and set the working temperature to 350 C.")
QUESTION = "iron temp for building the kit"  # "temp" is not "temperature": no shared word says which


def hit(text: str = KIT) -> Hit:
    return Hit(chunk_id="c1", manual="kit.pdf", title="Soldering kit", manual_sha256="0" * 64, page=3,
               heading="Assembly", text=text, score=1.0, dense_rank=1, lexical_rank=1, dense_score=0.6)


def test_the_sentence_that_answers_in_other_words_is_picked_with_the_real_embedder(embedder: Any) -> None:
    hits = [hit()]
    # words alone (and no learned weights, which favour the sentence with a number on their own)
    words_alone = replace(EVIDENCE, max_sentences=1, weights={})
    assert pick_sentences(QUESTION, hits, words_alone)[0][1].startswith("The kit contains")
    scorer = similarity_scorer(similarity_to(embedder, QUESTION), hits, AnswerSettings().sentence_similarity)
    assert pick_sentences(QUESTION, hits, words_alone, extra=scorer) == [
        (1, "Switch on the soldering iron and set the working temperature to 350 C.")]


def test_the_question_is_closer_to_the_sentence_that_answers_it(embedder: Any) -> None:
    similar = similarity_to(embedder, "What voltage does the board need?")
    near, far = similar(["The board needs a 12 V supply.", "Keep the manual in a dry place."])
    assert -1.0 <= far < near <= 1.0
    assert similar([]) == []


def test_sentences_are_read_as_the_index_reads_a_passage() -> None:
    seen: list[list[str]] = []

    def similar(texts: list[str]) -> list[float]:
        seen.append(texts)
        return [1.0 if "350 C" in t else 0.0 for t in texts]

    one = replace(EVIDENCE, max_sentences=1)
    picked = pick_sentences(QUESTION, [hit()], one, extra=similarity_scorer(similar, [hit()], 6.0))
    assert picked[0][1].startswith("Switch on the soldering iron")
    assert seen and all(t.startswith("Soldering kit\nAssembly\n") for t in seen[0])  # title, heading, sentence


class Similar:
    """Retrieved.similar's double: favours sentences holding `word`, or fails like a broken embedder."""

    def __init__(self, word: str = "", fail: bool = False) -> None:
        self.word, self.fail, self.calls = word, fail, 0

    def __call__(self, texts: list[str]) -> list[float]:
        self.calls += 1
        if self.fail:
            raise RuntimeError("onnxruntime: session failed")
        return [1.0 if self.word in t else 0.0 for t in texts]


class SimilarShelf(Shelf):
    def __init__(self, hits: list[Hit], similar: Similar) -> None:
        super().__init__(hits)
        self.similar = similar

    def retrieve(self, *args: Any, **kwargs: Any) -> Retrieved:
        return super().retrieve(*args, **kwargs)._replace(similar=self.similar)


def extractive(similar: Similar, weight: float = 6.0) -> Any:
    """The pipeline's evidence with the hand-set score only, so that the similarity alone decides."""
    d = AnswerDeps(settings=AnswerSettings(mode="extractive", min_similarity=0.3, sentence_similarity=weight,
                                           learned_evidence=False),
                   retriever=SimilarShelf([hit()], similar), model=Model("unused [1]."), sink=Sink())
    return answer(d, AnswerRequest(question=QUESTION))


def test_the_gateway_evidence_leads_with_the_sentence_the_embedder_prefers() -> None:
    result = extractive(Similar("soldering iron"))
    assert result.answer.startswith("Switch on the soldering iron") and "evidence_by_words_only" not in result.flags


def test_weight_zero_leaves_the_words_alone() -> None:
    similar = Similar("soldering iron")
    result = extractive(similar, 0.0)
    assert result.answer.startswith("The kit contains") and similar.calls == 0


def test_a_negative_weight_is_refused_at_startup(tmp_path: Path) -> None:
    toml = tmp_path / "manualqa.toml"
    toml.write_text("[answer]\nsentence_similarity = -1\n")
    with pytest.raises(ConfigError, match="sentence_similarity"):
        load_settings(toml, env={})


def test_an_embedder_that_fails_costs_the_similarity_not_the_evidence() -> None:
    result = extractive(Similar(fail=True))
    assert result.outcome == "evidence_only" and result.answer.startswith("The kit contains")
    assert "evidence_by_words_only" in result.flags


def test_the_sentence_embedding_is_timed_and_not_counted_as_pipeline_overhead() -> None:
    from gateway.answer.result import overhead_ms

    result = extractive(Similar("soldering iron"))
    assert result.timings["sentence_embed_ms"] >= 0
    t = {"ttft_ms": 300.0, "embed_ms": 20.0, "sentence_embed_ms": 100.0, "runtime_ttft_ms": 170.0, "load_ms": 0.0}
    assert overhead_ms(t) == 10.0
    assert overhead_ms({**t, "sentence_embed_ms": 0.0}) == 110.0


class CountingEmbedder:
    """The real embedder, counting the questions it embeds."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.queries = inner, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def encode_query(self, text: str) -> Any:
        self.queries += 1
        return self.inner.encode_query(text)


def test_one_answer_embeds_its_question_once(sample_data_dir: Path, tmp_path: Path, embedder: Any) -> None:
    import shutil

    from gateway.config import Settings
    from gateway.services import Services

    data = tmp_path / "data"
    shutil.copytree(sample_data_dir, data)
    counting = CountingEmbedder(embedder)
    gw = Services(Settings(data_dir=data), embedder=counting)
    got = gw.retrieve("What voltage does the LCP controller board take?", k=3)
    assert counting.queries == 1  # the search's vector
    near, far = got.similar(["The board takes 6 V to 36 V.", "Keep the manual in a dry place."])
    assert counting.queries == 1  # ... is the one the evidence sentences are scored against
    assert far < near
    assert got.timings["embed_ms"] > 0 and got.timings["total_ms"] >= got.timings["embed_ms"]
