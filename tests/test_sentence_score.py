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
