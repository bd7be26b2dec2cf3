"""Extractive answers: no model, just the best sentences of the top passages, each cited.

For gateways where no model is fast enough, and the fallback when the runtime fails. Sentences
are scored by the question's content terms they contain (rarer terms among the candidates count
more) plus the rank of the passage they come from.
"""

from __future__ import annotations

import math
import re

from gateway.answer.citations import content_terms, sentence_spans
from gateway.answer.ocr_text import doubtful_number
from gateway.answer.quantities import asked_quantities, states
from retrieval.types import Hit

MAX_SENTENCE_CHARS = 400


def _clean(sentence: str) -> str:
    sentence = re.sub(r"\s+", " ", sentence).strip()
    if len(sentence) > MAX_SENTENCE_CHARS:
        sentence = sentence[:MAX_SENTENCE_CHARS].rsplit(" ", 1)[0] + " …"
    return sentence


def pick_sentences(
    question: str, hits: list[Hit], max_sentences: int = 3, max_passages: int = 3, value_bonus: float = 0.0
) -> list[tuple[int, str]]:
    """[(passage number, sentence)] in answer order: best-scoring first, at most 2 per passage.

    value_bonus: added to a sentence that states a quantity of a kind the question asks for
    (gateway.answer.quantities: "how heavy" and a number in kg).
    """
    want = content_terms(question)
    asked = asked_quantities(question) if value_bonus else []
    candidates: list[tuple[int, int, str, set[str]]] = []  # (passage n, position, sentence, terms)
    for n, hit in enumerate(hits[:max_passages], start=1):
        for pos, (s, e) in enumerate(sentence_spans(hit.text)):
            sentence = _clean(hit.text[s:e])
            if len(sentence.split()) < 4:  # headings, page numbers, fragments
                continue
            if doubtful_number(hit, s, e):  # a number OCR was unsure of is not quoted as the answer
                continue
            candidates.append((n, pos, sentence, content_terms(sentence)))
    if not candidates:
        return [(1, _clean(hits[0].text))] if hits else []
    df: dict[str, int] = {}
    for *_, terms in candidates:
        for t in terms & want:
            df[t] = df.get(t, 0) + 1
    total = len(candidates)

    def score(item: tuple[int, int, str, set[str]]) -> float:
        n, pos, _, terms = item
        matched = sum(1.0 + math.log(total / df[t]) for t in terms & want)
        length_penalty = math.sqrt(max(len(terms), 4))
        value = value_bonus if asked and any(states(item[2], kind) for kind in asked) else 0.0
        return matched / length_penalty + 0.6 / n + 0.05 / (pos + 1) + value

    ranked = sorted(candidates, key=score, reverse=True)
    chosen: list[tuple[int, int, str, set[str]]] = []
    per_passage: dict[int, int] = {}
    for item in ranked:
        if len(chosen) >= max_sentences:
            break
        if per_passage.get(item[0], 0) >= 2 or any(item[2] == c[2] for c in chosen):
            continue
        if chosen and not (item[3] & want):  # a filler sentence with no question term: stop
            break
        chosen.append(item)
        per_passage[item[0]] = per_passage.get(item[0], 0) + 1
    # Passages in order of their best sentence; within one, reading order (steps stay in order).
    order = {n: i for i, n in enumerate(dict.fromkeys(c[0] for c in chosen))}
    chosen.sort(key=lambda c: (order[c[0]], c[1]))
    return [(n, sentence) for n, _, sentence, _ in chosen]


def extractive_answer(question: str, hits: list[Hit], max_sentences: int = 3, max_passages: int = 3,
                      value_bonus: float = 0.0) -> str:
    """The answer text: each picked sentence followed by its citation, e.g. "Do X. [1]"."""
    parts = []
    for n, sentence in pick_sentences(question, hits, max_sentences=max_sentences, max_passages=max_passages,
                                      value_bonus=value_bonus):
        if sentence[-1:] not in ".!?…":
            sentence += "."
        parts.append(f"{sentence} [{n}]")
    return " ".join(parts)
