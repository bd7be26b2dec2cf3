"""Learned adjustments to the evidence sentence score, fitted on the development halves.

The extractive answer ranks candidate sentences by the question's words they share (rarer ones
count more), the rank of their passage and their similarity to the question (extractive.py). Which
sentence actually holds a technician's answer also depends on things those hand-set terms do not
weigh: whether it states a number, how long it is, whether it is an instruction, how close its
passage was to the question, whether it only repeats the section's heading. The weights below add
a linear score over such features of each candidate. They were fitted by
bench/experiments/sentence_weights.py on eval/dev and eval/dev2 (a listwise softmax over each
question's candidates, with the sentences that hold the gold evidence or answer as targets, L2 0.1
chosen by training on one half and scoring the other); eval/dev3 and eval/test never entered the
fit. Features are standardised with the means and spreads of the fitting data, so a weight reads as
"score added per standard deviation".

`answer.learned_evidence = false` turns them off (the hand-set score alone).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from ingest.text.sentences import BULLETS
from ingest.text.terms import word_count
from retrieval.types import Hit

# What each candidate carries (extractive.Candidate.features), and the subset the shipped weights use:
# a length feature was fitted too and left out, as it cost more questions than it gained on the
# half it was not fitted on (docs/bench/experiments/sentence_weights.md).
CANDIDATE_FEATURES = ("lex", "inv_n", "inv_pos", "digit", "asked_value", "log_words", "step", "dense", "coverage",
                      "head_overlap", "imperative", "similarity")
FEATURES = tuple(name for name in CANDIDATE_FEATURES if name not in ("log_words", "similarity"))

# name -> (mean, standard deviation, weight), from bench/experiments/sentence_weights.py (see its
# record, docs/bench/experiments/sentence_weights.md, for the commit and the data).
WEIGHTS: dict[str, tuple[float, float, float]] = {
    "lex": (0.6125, 0.7691, -0.6555),
    "inv_n": (0.6154, 0.2826, 0.0759),
    "inv_pos": (0.2967, 0.2748, -0.2276),
    "digit": (0.3884, 0.4874, 0.4635),
    "asked_value": (0.0054, 0.0731, 0.1901),
    "step": (0.1709, 0.3764, -0.0631),
    "dense": (0.4789, 0.1239, 0.1954),
    "coverage": (0.1221, 0.147, 0.2901),
    "head_overlap": (0.0777, 0.1094, -0.2787),
    "imperative": (0.1201, 0.3251, 0.1611),
}

# The same for a question in another language than English (gateway.answer.evidence_params): fitted by
# bench/experiments/evidence_weights_languages.py on the Chinese and German development halves (its record,
# docs/bench/experiments/evidence_weights_languages.md), where the words are character pairs or stems and the
# similarity is the companion's, on other scales than English's.
FEATURES_OTHER = ("lex", "inv_n", "similarity", "digit", "asked_value", "log_words")
WEIGHTS_OTHER: dict[str, tuple[float, float, float]] = {
    "lex": (0.6318, 0.8467, -0.2784),
    "inv_n": (0.6201, 0.2857, 0.2119),
    "similarity": (2.211, 1.5433, -0.5238),
    "digit": (0.4835, 0.4997, 0.1898),
    "asked_value": (0.0111, 0.1046, 0.1903),
    "log_words": (2.8201, 0.5574, 0.3238),
}

_STEP_RE = re.compile(rf"^(?:[{BULLETS}-]\s*|\(?\d{{1,2}}[.)]\s)")
_IMPERATIVE_RE = re.compile(
    r"^(?:[•●◆▪◦‣\-\d.)\s]*)(?:press|turn|set|connect|remove|check|make sure|ensure|use|open|close|insert|"
    r"select|click|install|plug|unplug|disconnect|tighten|loosen|do not|don't|never|always|wait|switch|put|"
    r"place|apply|clean|replace|adjust|run|type|enter|power)\b", re.I)
_DIGIT_RE = re.compile(r"\d")


def features(sentence: str, terms: set[str], want: set[str], lex: float, n: int, pos: int, hit: Hit,
             heading_terms: set[str], states_asked: bool, similarity: float = 0.0) -> list[float]:
    """One candidate's features, in CANDIDATE_FEATURES order.

    lex is the hand-set word score (shared terms, rarer ones weighing more, over the square root of
    the sentence's own terms); n the passage's rank (1 = first); pos the sentence's place in it;
    similarity the added similarity score (extractive.similarity_scorer, already in the hand-set part)."""
    wanted = max(len(want), 1)
    return [lex, 1.0 / n, 1.0 / (pos + 1), float(bool(_DIGIT_RE.search(sentence))), float(states_asked),
            math.log(word_count(sentence) + 1), float(bool(_STEP_RE.match(sentence))),
            float(hit.dense_score or 0.0), len(terms & want) / wanted, len(heading_terms & want) / wanted,
            float(bool(_IMPERATIVE_RE.match(sentence))), similarity]


def is_instruction(sentence: str) -> bool:
    """A sentence that tells the reader to do something ("Press ...", "Make sure ...", "- Connect ...")."""
    return _IMPERATIVE_RE.match(sentence) is not None


def adjustment(row: Sequence[float], weights: Mapping[str, tuple[float, float, float]] | None = None) -> float:
    """The learned score added to a candidate's hand-set one (0 with no weights)."""
    table = WEIGHTS if weights is None else weights
    total = 0.0
    for name, value in zip(CANDIDATE_FEATURES, row, strict=True):
        if name in table:
            mean, sd, weight = table[name]
            total += weight * (value - mean) / sd
    return total
