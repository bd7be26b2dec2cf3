"""The learned part of the evidence score (gateway.answer.sentence_score): what it weighs, and that it can be off."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gateway.answer.extractive import EVIDENCE, pick_sentences, scored_candidates
from gateway.answer.sentence_score import CANDIDATE_FEATURES, FEATURES, WEIGHTS, adjustment
from gateway.config import load_settings
from retrieval.types import Hit

SPEC = ("The heater cartridge of the hot end must match the supply. The hot end heater cartridge is the part "
        "that gets hot, so check the hot end heater cartridge wiring. The heater cartridge is rated 40 W at 24 V.")


def hit(text: str, dense: float = 0.5) -> Hit:
    return Hit(chunk_id="c1", manual="printer.pdf", title="Printer manual", manual_sha256="0" * 64, page=7,
               heading="Hot end", text=text, score=1.0, dense_rank=1, lexical_rank=1, dense_score=dense)


def test_the_shipped_weights_name_known_features_with_a_spread() -> None:
    assert set(WEIGHTS) == set(FEATURES) and set(FEATURES) <= set(CANDIDATE_FEATURES)
    assert all(sd > 0 for _mean, sd, _w in WEIGHTS.values())


def test_no_weights_add_nothing_and_each_weight_moves_the_score_its_way() -> None:
    row = [1.0] * len(CANDIDATE_FEATURES)
    assert adjustment(row, {}) == 0.0
    digit = CANDIDATE_FEATURES.index("digit")
    with_number, without = list(row), list(row)
    without[digit] = 0.0
    assert WEIGHTS["digit"][2] > 0 and adjustment(with_number) > adjustment(without)


def test_the_sentence_stating_the_value_leads_over_one_repeating_the_question() -> None:
    question = "hot end heater cartridge wattage?"
    # words alone: a sentence that only repeats "hot end heater cartridge" wins
    assert "40 W" not in pick_sentences(question, [hit(SPEC)], replace(EVIDENCE, max_sentences=1, weights={}))[0][1]
    assert "40 W at 24 V" in pick_sentences(question, [hit(SPEC)], replace(EVIDENCE, max_sentences=1))[0][1]


def test_candidates_carry_their_hand_set_score_and_features() -> None:
    cands, _steps = scored_candidates("hot end heater cartridge wattage?", [hit(SPEC)], replace(EVIDENCE, weights={}))
    assert cands and all(c.score == c.base and len(c.features) == len(CANDIDATE_FEATURES) for c in cands)
    rated = next(c for c in cands if "40 W" in c.sentence)
    assert rated.features[CANDIDATE_FEATURES.index("digit")] == 1.0
    assert rated.features[CANDIDATE_FEATURES.index("asked_value")] == 1.0


@pytest.mark.parametrize(("text", "expected"), [("", True), ("[answer]\nlearned_evidence = false\n", False)])
def test_the_learned_weights_can_be_turned_off(tmp_path, text: str, expected: bool) -> None:
    toml = tmp_path / "manualqa.toml"
    toml.write_text(text)
    assert load_settings(toml, env={}).answer.learned_evidence is expected


def test_a_question_outside_english_is_scored_with_the_weights_fitted_on_such_questions() -> None:
    from gateway.answer.evidence_params import evidence_params
    from gateway.answer.sentence_score import WEIGHTS_OTHER

    answer = load_settings(None, env={}).answer
    assert evidence_params(answer, "zh").weights is WEIGHTS_OTHER
    assert evidence_params(answer, "de").weights is WEIGHTS_OTHER
    assert evidence_params(answer, "en").weights is None and evidence_params(answer, None).weights is None
    off = replace(answer, learned_evidence=False)
    assert evidence_params(off, "zh").weights == {} and evidence_params(off, "en").weights == {}


def test_the_weights_for_other_languages_name_their_features_with_a_spread() -> None:
    from gateway.answer.sentence_score import FEATURES_OTHER, WEIGHTS_OTHER

    assert set(WEIGHTS_OTHER) == set(FEATURES_OTHER) and set(FEATURES_OTHER) <= set(CANDIDATE_FEATURES)
    assert all(sd > 0 for _mean, sd, _w in WEIGHTS_OTHER.values())


def test_the_similarity_term_is_a_feature_of_its_own() -> None:
    def extra(found: list[tuple[int, str]]) -> list[float]:
        return [0.25 if "40 W" in sentence else 0.0 for _n, sentence in found]

    cands, _steps = scored_candidates("hot end heater cartridge wattage?", [hit(SPEC)], replace(EVIDENCE, weights={}),
                                      extra=extra)
    at = CANDIDATE_FEATURES.index("similarity")
    assert {c.features[at] for c in cands} == {0.0, 0.25}
    rated = next(c for c in cands if "40 W" in c.sentence)
    plain, _ = scored_candidates("hot end heater cartridge wattage?", [hit(SPEC)], replace(EVIDENCE, weights={}))
    assert rated.base == pytest.approx(next(c for c in plain if "40 W" in c.sentence).base + 0.25)


GERMAN = ("Die Platine wird über die Schraubklemme mit Spannung versorgt, die Spannung muss stabil sein. "
          "Die Spannung der Platine beträgt 12 V bei 2 A.")
ENGLISH = ("The board is supplied with voltage through the screw terminal, the voltage must be stable. "
           "The voltage of the board is 12 V at 2 A.")


@pytest.mark.parametrize(("question", "text", "language"), [
    ("Welche Spannung braucht die Platine?", GERMAN, "de"), ("Which voltage does the board need?", ENGLISH, "en")])
def test_the_pipeline_picks_the_table_by_the_question_language(monkeypatch, question: str, text: str,
                                                               language: str) -> None:
    import gateway.answer.evidence_params as params
    from gateway.answer.deps import AnswerDeps
    from gateway.answer.pipeline import answer
    from gateway.answer.request import AnswerRequest
    from gateway.config import AnswerSettings
    from tests.test_answer_core import Model, Shelf, Sink

    def lead(digit_weight: float) -> str:
        monkeypatch.setattr(params, "WEIGHTS_OTHER", {"digit": (0.0, 1.0, digit_weight)})
        passage = replace(hit(text), language=language, term_score=0.8,
                          heading="Versorgung" if language == "de" else "Supply")
        deps = AnswerDeps(settings=AnswerSettings(mode="extractive", min_similarity=0.3, sentence_similarity=0.0),
                          retriever=Shelf([passage]), model=Model("unused [1]."), sink=Sink())
        result = answer(deps, AnswerRequest(question=question))
        assert result.outcome != "not_found", result.flags
        return result.answer

    if language == "de":  # the German question's lead follows the table for other languages
        assert lead(50.0).startswith("Die Spannung der Platine beträgt 12 V")
        assert lead(-50.0).startswith("Die Platine wird über die Schraubklemme")
    else:  # the English one keeps the English weights, whatever that table says
        assert lead(50.0) == lead(-50.0)
