"""Judging the evidence: can the passages found be shown as an answer, and if not, what is said?

The answer pipeline (gateway.answer.pipeline) asks this before anything is quoted or generated:
evidence_is_strong (thresholds chosen on the evaluation sets, docs/bench/answer_eval.md and
docs/bench/languages_eval.md), then _weakness, whose not-found notice names what the passages lack.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gateway.answer.answer_texts import not_found_text, quantity_not_found_text, value_apart_text
from gateway.answer.coverage import stated_apart, unstated_values
from gateway.answer.events import Strength
from gateway.answer.flags import AnswerFlag
from gateway.answer.outcome import Weak
from gateway.answer.quantities import unstated_quantities
from retrieval.types import Hit

if TYPE_CHECKING:
    from gateway.config import AnswerSettings

# The English notices as integrators and replays have always read them (answer_texts: in the question's language)
NOT_FOUND_TEXT = not_found_text("")
NO_PASSAGE_TEXT = not_found_text("", passages=False)
AGREE_TOP = 3  # dense and lexical "agree" when one passage is in the top 3 of both
AGREE_RELIEF = 0.10  # ... and then a cosine this much below min_similarity still counts
# Outside English, the share of the question's words the passages must hold instead of the cosine, chosen
# on eval/zh-dev and eval/de-dev (docs/bench/languages_eval.md): in the question's language the highest
# share that refuses at most 5 % of the answerable questions there, 0.16, refuses 2 of 55 answerable and 2
# of 10 unanswerable ones (the cosine refused 6 and 4); across languages every answerable English question
# about the foreign manuals holds at least 0.13 (the cosine refused 4 of 15).
OTHER_MIN_TERMS = 0.16
CROSS_MIN_TERMS = 0.10
# A language written with spaces counts its words by their stems (German's compounds and inflections, which
# the Snowball stemmer does not split, share fewer of them than Chinese character pairs do): on the German
# development halves (eval/de-dev, de-dev2, de-dev3: 97 answerable, 22 unanswerable questions) 0.16 refused
# 4 answerable ones (3 at shares of 0.13-0.15) and 13 unanswerable; every floor from 0.06 to 0.13 refuses 1 and
# 12. The Chinese halves (zh-dev, zh-dev2, zh-dev3) keep 0.16: 4 of 102 answerable and 10 of 17 unanswerable
# refused there, 2 and 9 at 0.06 (one for one). Re-read with zh-dev4 and de-dev4: German 0.10 refuses 2 of 132
# answerable, 17 of 30 unanswerable; Chinese 0.16 12 of 140 and 16 of 25, and no floor meets both issue 48 goals
# there (0.11: 6 and 12). docs/bench/experiments/word_share_floor.md
SPACED_MIN_TERMS = 0.10
# A question in another language than English about passages in yet another (a Chinese or German technician
# asking an English manual): its words are not the passages' words, so the share says nothing. Measured on
# eval/dev's English manuals asked in Chinese and in German (eval/dev/questions_zh.jsonl, questions_de.jsonl:
# 30 answerable and 16 unanswerable each), the share refused 18 and 7 answerable questions at the 0.10 floor
# (shares 0.00-0.10) while the unanswerable ones held 0.04-0.32 and 0.12-0.66: no floor separates them. With
# none, the quantity and value checks refuse 3 and 3 answerable, 6 and 8 of 16 unanswerable ones (with the floor
# 19 and 10, 7 and 8). docs/bench/languages_eval.md
OTHER_CROSS_MIN_TERMS = 0.0
UNSPACED = frozenset({"zh", "ja", "ko"})  # counted as character pairs (retrieval.term_coverage)


def evidence_is_strong(hits: Sequence[Hit], min_similarity: float, closest: float | None = None,
                       question_language: str | None = None) -> tuple[bool, Strength]:
    """Strong when the best cosine reaches min_similarity, or nearly so with dense and lexical agreeing.

    Outside English (the question or the first passage in another language) the cosine of the built-in
    English embedder says little, and min_similarity was calibrated on English questions about English
    manuals: there the question's words decide, the share of them (term_score, IDF-weighted) the passages
    hold: at least OTHER_MIN_TERMS in the question's own language (SPACED_MIN_TERMS where it is written with
    spaces and its words are stemmed), CROSS_MIN_TERMS across languages (an
    English question about a German manual shares only its technical words with it).

    The best cosine is that of the closest passage the search saw (`closest`, when given), not only of
    the passages kept: the re-ordering keeps the passages that answer best, which are not always the
    closest, and a close passage ranked sixth still says the manuals cover the question
    (eval/dev3: 2 of 5 answerable refusals came from the top five's cosine alone, docs/bench/answer_eval.md).
    """
    if not hits:
        return False, {"best_similarity": None, "agree": False}
    best = max([(h.dense_score or 0.0) for h in hits] + ([closest] if closest is not None else []))
    agree = any(h.dense_rank is not None and h.lexical_rank is not None
                and h.dense_rank <= AGREE_TOP and h.lexical_rank <= AGREE_TOP for h in hits[:AGREE_TOP])
    strong = best >= min_similarity or (agree and best >= min_similarity - AGREE_RELIEF)
    passage_language = hits[0].language
    cross = bool(question_language and passage_language and question_language != passage_language)
    evidence: Strength = {"best_similarity": round(best, 4), "agree": agree}
    if question_language and passage_language and (cross or question_language != "en"):
        share = max((h.term_score or 0.0) for h in hits)
        floor = ((OTHER_CROSS_MIN_TERMS if question_language != "en" else CROSS_MIN_TERMS) if cross
                 else OTHER_MIN_TERMS if question_language in UNSPACED else SPACED_MIN_TERMS)
        strong = share >= floor
        evidence["word_share"], evidence["word_share_floor"] = round(share, 4), floor
    if cross:
        evidence["cross_language"] = True
    return strong, evidence


def _weakness(question: str, given: list[Hit], strong: bool, ev: Strength,
              settings: AnswerSettings) -> Weak | None:
    """Why the evidence cannot be shown as an answer (None: it can)."""
    if not strong:
        # name what decided: outside English the share of the question's words, else the best cosine
        why = (f"word share {ev['word_share']} below {ev['word_share_floor']}" if "word_share" in ev
               else f"best similarity {ev['best_similarity']}")
        return Weak(not_found_text(question, bool(given)), AnswerFlag("weak_evidence", why))
    # Only the first passage's manual counts: a value of the asked kind stated for another machine
    # (another manual, brought up by one close sentence) does not answer for this one.
    first = [h for h in given if h.manual_sha256 == given[0].manual_sha256]
    texts = [f"{h.heading}\n{h.text}" for h in first]
    unstated = unstated_quantities(question, texts) if settings.quantity_check and given else []
    if settings.coverage_check and given:  # values of kinds the quantity check does not know
        unstated += [k for k in unstated_values(question, texts) if k not in unstated]
    manual = (first[0].title or first[0].manual) if first else None
    if unstated:
        return Weak(quantity_not_found_text(unstated, manual, question),
                    AnswerFlag("quantity_not_in_evidence", ", ".join(unstated)))
    apart = stated_apart(question, [(h.heading, h.text) for h in first]) if settings.coverage_check else []
    if apart:
        return Weak(value_apart_text(apart, manual, question),
                    AnswerFlag("value_not_for_question", ", ".join(apart)))
    return None
