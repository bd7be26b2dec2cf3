"""How the evidence is picked: one frozen EvidenceParams, the shipped choices as its defaults.

gateway.answer.extractive picks the sentences by it (and gateway.answer.sentence_text cuts them);
`evidence_params(settings)` maps the `[answer]` keys onto it; experiments build variants with
dataclasses.replace(EVIDENCE, ...).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gateway.answer.sentence_score import WEIGHTS_OTHER

if TYPE_CHECKING:
    from gateway.config import AnswerSettings


@dataclass(frozen=True)
class EvidenceParams:
    """How the evidence is picked (pick_sentences); the defaults are the shipped choices. The product
    sets max_sentences (answer.evidence_sentences) and weights (answer.learned_evidence: None, else {});
    experiments build variants with dataclasses.replace(EVIDENCE, ...).

    max_sentences: sentences quoted at most. max_passages: the top passages they come from.
    value_bonus: added to a sentence that states a quantity of a kind the question asks for
    (gateway.answer.quantities: "how heavy" and a number in kg). min_ratio: a sentence after the
    first joins only with at least this share of the best one's score. best_first: the best sentence
    leads even when another of its passage comes before it; a numbered step or a bullet only as
    steps_lead says (the gold value in the first sentence: eval/dev 0.21 -> 0.27, eval/test 0.14 -> 0.15,
    issue 27). window:
    over-long sentences are cut to this many words around the question's terms (0: kept whole, up to
    MAX_SENTENCE_CHARS). A floor and a window both lowered correctness on eval/dev, so they are off
    (bench/experiments/extractive_trim.py). procedure: for a how-to question whose best sentence is a
    list item, up to this many items of its list, in order, instead of the best sentences (0: off; it
    fires on none of eval's 10 how-to questions, so it is unmeasured there). drop_headings: titles
    (is_heading) are not quoted (eval/dev +0.002, eval/test +0.000). weights: the learned part of
    the score (gateway.answer.sentence_score; None: the shipped weights, {}: none).

    Issue 48, the answer first (gateway.answer.answer_first; docs/bench/experiments/answer_first.md):
    steps_lead: a bullet or a step leads too when it scores best, unless the question asks how to do
    something. avoid_bad_lead: a web address, a caption or a contents line never leads. manual_order:
    a how-to question's steps in the manual's order. named_values: a sentence setting a question term to
    a number ("TARGET=245") states the asked value. section_bonus (x the share of the question's terms
    the passage's heading holds) and split_compounds (1: the question's "pid-tune" also as "pid" and
    "tune"; 2: the sentences' too) were measured and are off. procedure_chars: a how-to question's
    sentences are quoted up to this many characters, cut where a sentence or a step ends (_step_ends),
    never inside one ("How to calibrate the actuator": its "shell>set cal 1" and what the command does
    whole; 0: MAX_SENTENCE_CHARS and a cut at a word, as every other question's). join_short_lines: the
    cards' quotes (gateway.answer.citations, gateway.answer.reflow) join a line of a word or two to the
    lower-case line after it ("Clean" + "the Printer frequently."; wrapped breaks on the development halves
    33 -> 19).
    """

    max_sentences: int = 3
    max_passages: int = 3
    value_bonus: float = 0.0
    min_ratio: float = 0.0
    best_first: bool = True
    window: int = 0
    procedure: int = 5
    procedure_chars: int = 1000
    drop_headings: bool = True
    weights: Mapping[str, tuple[float, float, float]] | None = None
    steps_lead: bool = True
    avoid_bad_lead: bool = True
    manual_order: bool = True
    named_values: bool = True
    section_bonus: float = 0.0
    split_compounds: int = 0
    join_short_lines: bool = True


EVIDENCE = EvidenceParams()


def evidence_params(settings: AnswerSettings, language: str | None = None) -> EvidenceParams:
    """The shipped EvidenceParams with what the configuration sets: answer.evidence_sentences, and
    answer.learned_evidence (off: the hand-set score alone). language: the question's
    (ingest.text.languages.detect_question); outside English the learned part is the one fitted on questions
    in other languages (sentence_score.WEIGHTS_OTHER), whose words and similarities weigh differently."""
    if not settings.learned_evidence:
        weights: Mapping[str, tuple[float, float, float]] | None = {}
    else:
        weights = None if language in (None, "en") else WEIGHTS_OTHER
    return replace(EVIDENCE, max_sentences=settings.evidence_sentences, weights=weights)
