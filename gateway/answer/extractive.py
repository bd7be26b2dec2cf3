"""Extractive answers: no model, just the best sentences of the top passages, each cited.

For gateways where no model is fast enough, and the fallback when the runtime fails. Sentences
are scored by the question's content terms they contain (rarer terms among the candidates count
more) plus the rank of the passage they come from.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import NamedTuple

from gateway.answer.answer_first import arrange, names_value, section_match, with_parts
from gateway.answer.cited_text import approx_tokens, cited_text
from gateway.answer.coverage import asked_values, states_value
from gateway.answer.evidence_params import EVIDENCE, EvidenceParams, evidence_params
from gateway.answer.ocr_text import doubtful_number
from gateway.answer.quantities import asked_quantities, asks_how_to, states
from gateway.answer.section_titles import (
    ITEM_RE,
    is_heading,
    is_section_number,
    past_glued_title,
    past_title_lines,
)
from gateway.answer.sentence_score import adjustment, features
from gateway.answer.sentence_text import (
    MAX_SENTENCE_CHARS,
    clean_sentence,
    is_bare_link,
    is_caption,
    past_caption_line,
    trim_to_window,
)
from ingest.text.sentences import continued_spans, sentence_spans
from ingest.text.terms import content_terms, word_count
from retrieval.types import Hit

# What other modules, bench scripts and tests take from here: the evidence's parameters
# (gateway.answer.evidence_params), a sentence as quoted (gateway.answer.sentence_text), the answer's
# text (gateway.answer.cited_text), and what this module picks with.
__all__ = ["EVIDENCE", "MAX_SENTENCE_CHARS", "Candidate", "EvidenceParams", "_clean", "approx_tokens", "cited_text",
           "evidence_params", "extractive_answer", "is_bare_link", "is_caption", "is_heading", "pick_sentences",
           "same_statement", "scored_candidates", "similarity_scorer", "trim_to_window"]
_clean = clean_sentence  # the name bench/experiments scripts import

# A list item (section_titles.ITEM_RE), or a bare "3." / "(3)" just before a sentence (the sentence
# splitter cuts a step's number off as a fragment of its own). A procedure's steps are quoted in their
# own order, never best step first.
_NUMBER_RE = re.compile(r"^\(?\d{1,2}[.)]?$")
# Two quoted sentences whose content words are this alike say the same thing (overlapping chunks, a
# paragraph repeated for two board variants): the second is not quoted.
SAME_SHARE = 0.85


def same_statement(a: Candidate, b: Candidate) -> bool:
    """The same sentence, or one that differs only by a few words (Jaccard of content words) and by no
    number: "the -ISO draws 250 mA" is another fact than "the board draws 200 mA", however alike."""
    if a.sentence == b.sentence:
        return True
    union = a.terms | b.terms
    if not union or len(a.terms & b.terms) / len(union) < SAME_SHARE:
        return False
    return _numbers(a.terms) == _numbers(b.terms)


def _numbers(terms: set[str]) -> set[str]:
    return {t for t in terms if any(ch.isdigit() for ch in t)}


class Candidate(NamedTuple):
    """A sentence that may be quoted: where it is, its words, and its score (hand-set part + learned part)."""

    n: int  # passage number, 1 = first
    pos: int  # place in the passage
    sentence: str
    terms: set[str]
    base: float
    features: list[float]
    score: float


def scored_candidates(
    question: str, hits: list[Hit], params: EvidenceParams = EVIDENCE, *,
    extra: Callable[[list[tuple[int, str]]], list[float]] | None = None,
) -> tuple[list[Candidate], set[tuple[int, int]]]:
    """Every sentence of the top passages that may be quoted, scored; and the (n, pos) of list items.

    params: EvidenceParams (max_passages, value_bonus, drop_headings, weights). extra: added scores
    (similarity_scorer)."""
    max_passages, value_bonus, drop_headings = params.max_passages, params.value_bonus, params.drop_headings
    want = _wanted(question, params)
    asked = asked_quantities(question)
    values = asked_values(question)  # a baud rate, a bus address, an IP rating ...: the value checks' kinds too
    steps_within = params.procedure_chars if asks_how_to(question) else 0
    found: list[tuple[int, int, str, set[str]]] = []  # (passage n, position, sentence, terms)
    steps: set[tuple[int, int]] = set()  # (passage n, position) of list items
    for n, hit in enumerate(hits[:max_passages], start=1):
        before = ""
        for pos, (s, e) in enumerate(continued_spans(hit.text, sentence_spans(hit.text))):
            scored = hit.text[s:e]  # a glued title still tells what the sentence is about: it scores
            numbered = is_section_number(before)  # "4.5.2." cut off "Calibration\nFirst time use ..."
            if drop_headings:
                s = past_caption_line(hit.text, past_glued_title(
                    hit.text, past_title_lines(hit.text, s, e, hit.heading or "", numbered), e), e)
            sentence = clean_sentence(hit.text[s:e], steps_within)
            if ITEM_RE.match(sentence) or _NUMBER_RE.match(before):
                steps.add((n, pos))
            before = sentence
            if word_count(sentence) < 4 or drop_headings and is_heading(hit.text[s:e], hit.heading or "", numbered):
                continue
            if doubtful_number(hit, s, e):  # a number OCR was unsure of is not quoted as the answer
                continue
            if sentence.endswith(("?", "？")):  # a question (an FAQ's, a troubleshooting table's) answers nothing
                continue
            if is_caption(sentence) or is_bare_link(sentence):
                continue
            terms = content_terms(scored)
            found.append((n, pos, sentence, with_parts(terms) if params.split_compounds > 1 else terms))
    df: dict[str, int] = {}
    for *_, terms in found:
        for t in terms & want:
            df[t] = df.get(t, 0) + 1
    total = len(found)
    more = extra([(c[0], c[2]) for c in found]) if extra and found else [0.0] * total
    heading_terms = [content_terms(hit.heading or "") for hit in hits[:max_passages]]
    section = [section_match(want, hit.heading or "") for hit in hits[:max_passages]]
    out: list[Candidate] = []
    for (n, pos, sentence, terms), added in zip(found, more, strict=True):
        matched = sum(1.0 + math.log(total / df[t]) for t in terms & want)
        lex = matched / math.sqrt(max(len(terms), 4))
        stated = bool(asked) and (any(states(sentence, kind) for kind in asked)
                                  or params.named_values and names_value(sentence, want)) \
            or bool(values) and any(states_value(sentence, kind) for kind in values)
        value = value_bonus if stated else 0.0
        base = lex + 0.6 / n + 0.05 / (pos + 1) + value + added + params.section_bonus * section[n - 1]
        row = features(sentence, terms, want, lex, n, pos, hits[n - 1], heading_terms[n - 1], stated, added)
        out.append(Candidate(n, pos, sentence, terms, base, row, base + adjustment(row, params.weights)))
    return out, steps


def pick_sentences(
    question: str, hits: list[Hit], params: EvidenceParams = EVIDENCE, *,
    extra: Callable[[list[tuple[int, str]]], list[float]] | None = None,
) -> list[tuple[int, str]]:
    """[(passage number, sentence)] in answer order: best-scoring first, at most 2 per passage, as
    params (EvidenceParams) choose. extra: added scores (similarity_scorer)."""
    max_sentences, min_ratio, best_first = params.max_sentences, params.min_ratio, params.best_first
    window, procedure = params.window, params.procedure
    want = _wanted(question, params)
    candidates, steps = scored_candidates(question, hits, params, extra=extra)
    if not candidates:
        steps_within = params.procedure_chars if asks_how_to(question) else 0
        return [(1, clean_sentence(hits[0].text, steps_within))] if hits else []
    ranked = sorted(candidates, key=lambda c: c.score, reverse=True)
    top = ranked[0].score
    chosen: list[Candidate] = []
    per_passage: dict[int, int] = {}
    for item in ranked:
        if len(chosen) >= max_sentences or chosen and item.score < min_ratio * top:
            break
        if per_passage.get(item.n, 0) >= 2 or any(same_statement(item, c) for c in chosen):
            continue
        if chosen and not (item.terms & want):  # a filler sentence with no question term: stop
            break
        chosen.append(item)
        per_passage[item.n] = per_passage.get(item.n, 0) + 1
    if procedure and (ranked[0].n, ranked[0].pos) in steps and asks_how_to(question):
        return _procedure(ranked[0], [c for c in candidates if (c.n, c.pos) in steps], procedure)
    # The answer first; passages in order of their best sentence, reading order within one; a how-to's
    # sentences in the manual's order (gateway.answer.answer_first).
    chosen = arrange(question, chosen, steps, hits, best_first=best_first, steps_lead=params.steps_lead,
                     avoid_bad=params.avoid_bad_lead, manual_order=params.manual_order)
    return [(c.n, trim_to_window(c.sentence, want, window)) for c in chosen]


def _wanted(question: str, params: EvidenceParams) -> set[str]:
    """The question's content terms a sentence is scored on (with their parts: params.split_compounds)."""
    want = content_terms(question)
    return with_parts(want) if params.split_compounds else want


def _procedure(lead: Candidate, items: list[Candidate], limit: int) -> list[tuple[int, str]]:
    """The list the lead item belongs to (items of its passage at most 2 positions apart: a cut-off
    step number sits between two), up to `limit` items from its start or, deep in a long list, from
    just before the lead."""
    mine = sorted((c for c in items if c.n == lead.n), key=lambda c: c.pos)
    runs: list[list[Candidate]] = []
    for c in mine:
        if runs and c.pos - runs[-1][-1].pos <= 2:
            runs[-1].append(c)
        else:
            runs.append([c])
    run = next(r for r in runs if lead in r)
    at = run.index(lead)
    start = 0 if at < limit else at - 1
    return [(c.n, c.sentence) for c in run[start:start + limit]]


def similarity_scorer(similar: Callable[[list[str]], list[float]], hits: list[Hit],
                      weight: float) -> Callable[[list[tuple[int, str]]], list[float]]:
    """pick_sentences' `extra`: weight x the question's similarity to each candidate sentence, read as
    the index reads a passage (retrieval's passage_text: the manual's title and the section heading
    before it), so that "iron temp" finds "setup the working temperature to 350 C" where no word is
    shared. On eval/dev's answerable questions it adds 0.058 to replay's correctness (19 better, 5
    worse) and on eval/test 0.017 (11 better, 6 worse), for about 100 ms of embedding per answer on 2
    cores (docs/bench/experiments/extractive_similarity.md)."""
    from retrieval.embedders.base import passage_text

    def extra(candidates: list[tuple[int, str]]) -> list[float]:
        texts = [passage_text(hits[n - 1].heading or "", sentence, hits[n - 1].title or "")
                 for n, sentence in candidates]
        return [weight * x for x in similar(texts)]

    return extra


def extractive_answer(question: str, hits: list[Hit], params: EvidenceParams = EVIDENCE, *,
                      extra: Callable[[list[tuple[int, str]]], list[float]] | None = None,
                      max_tokens: int | None = None) -> str:
    """The answer text (cited_text) of pick_sentences' sentences, e.g. "Do X. [1]".

    params: how they are picked (EvidenceParams). extra: pick_sentences' added scores
    (similarity_scorer). max_tokens: cited_text's cap."""
    return cited_text(pick_sentences(question, hits, params, extra=extra), max_tokens)[0]
