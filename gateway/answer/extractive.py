"""Extractive answers: no model, just the best sentences of the top passages, each cited.

For gateways where no model is fast enough, and the fallback when the runtime fails. Sentences
are scored by the question's content terms they contain (rarer terms among the candidates count
more) plus the rank of the passage they come from.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NamedTuple

from gateway.answer.answer_first import arrange, names_value, section_match, with_parts
from gateway.answer.ocr_text import doubtful_number
from gateway.answer.quantities import asked_quantities, asks_how_to, states
from gateway.answer.reflow import unwrap_words
from gateway.answer.section_titles import (
    ITEM_RE,
    is_heading,
    is_section_number,
    past_glued_title,
    past_title_lines,
)
from gateway.answer.sentence_score import adjustment, features
from ingest.text.scripts import CJK
from ingest.text.sentences import BULLETS, sentence_spans
from ingest.text.terms import content_terms, word_count
from retrieval.types import Hit

if TYPE_CHECKING:
    from gateway.config import AnswerSettings

MAX_SENTENCE_CHARS = 400
# Where a how-to's long sentence may be cut (EvidenceParams.procedure_chars): a sentence's end inside a
# quoted "sentence" (the splitter keeps "... precision.\nshell>set cal 1" in one span, as no capital
# follows), a line break before a step or a list item, and the line break after a command line
# ("shell>set cal 1", "$ make").
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])(?<!e\.g\.)(?<!i\.e\.)(?<!\bvs\.)(?<!\bfig\.)\s|(?<=[。！？；])", re.I)
_STEP_LINE_RE = re.compile(rf"^\s*(?:[{BULLETS}*\-–]\s|\(?\d{{1,2}}[.)]\s|step\s+\d)", re.I)
_COMMAND_LINE_RE = re.compile(r"^\s*[\w\-~/]{0,16}[>$#]\s?\S")
# A list item (section_titles.ITEM_RE), or a bare "3." / "(3)" just before a sentence (the sentence
# splitter cuts a step's number off as a fragment of its own). A procedure's steps are quoted in their
# own order, never best step first.
_BULLET_RE = re.compile(rf"^[{BULLETS}]\s*")
_NUMBER_RE = re.compile(r"^\(?\d{1,2}[.)]?$")
# A figure's caption on its own ("Figure 27: Finished breadboard hub.", "Figure 43 - CyControl program
# (Firmware update step 1).") names a picture the text cannot show: it answers nothing. A table's title
# is kept, as its rows follow it in the same "sentence".
_CAPTION_RE = re.compile(r"^(?:fig(?:ure)?\.?)\s*\d+(?:[.\-–]\d+)*\s*[:.\-–]?\s", re.I)
CAPTION_MAX_WORDS = 12
# A web address with a word or two around it ("www.example.com/actuator", "See https://...") points
# elsewhere and answers nothing here; "Download the firmware from https://..." says what to do: kept.
_URL_RE = re.compile(r"(?:https?://|www\.)\S+", re.I)
URL_MIN_OTHER_WORDS = 4
# Two quoted sentences whose content words are this alike say the same thing (overlapping chunks, a
# paragraph repeated for two board variants): the second is not quoted.
SAME_SHARE = 0.85
CJK_CHAR_RE = re.compile(f"[{CJK}]")


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
    whole; 0: MAX_SENTENCE_CHARS and a cut at a word, as every other question's).
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


EVIDENCE = EvidenceParams()


def evidence_params(settings: AnswerSettings) -> EvidenceParams:
    """The shipped EvidenceParams with what the configuration sets: answer.evidence_sentences, and
    answer.learned_evidence (off: the hand-set score alone)."""
    return replace(EVIDENCE, max_sentences=settings.evidence_sentences,
                   weights=None if settings.learned_evidence else {})


def _clean(sentence: str, steps_within: int = 0) -> str:
    """The sentence on one line: words the PDF's line ends broke whole again ("con-\nnector"), the
    rest of its line breaks spaces (gateway.answer.reflow), at most MAX_SENTENCE_CHARS, cut at a word.

    steps_within (a how-to question's EvidenceParams.procedure_chars): up to that many characters
    instead, cut where a sentence or a step ends (_step_ends), then "…"; at a word only when its first
    sentence or step alone is longer."""
    text = unwrap_words(sentence)
    one_line = " ".join(text.split())
    limit = steps_within or MAX_SENTENCE_CHARS
    if len(one_line) <= limit:
        return one_line
    if steps_within:
        whole = [cut for cut in (" ".join(text[:end].split()) for end in _step_ends(text)) if len(cut) <= limit]
        if whole:
            return whole[-1] + " …"
    return one_line[:limit].rsplit(" ", 1)[0] + " …"


def _step_ends(text: str) -> list[int]:
    """Where a sentence or a step ends in text (see _SENTENCE_END_RE), in order."""
    ends = {m.start() for m in _SENTENCE_END_RE.finditer(text)}
    at = 0
    lines = text.split("\n")
    for a, b in zip(lines, lines[1:], strict=False):
        at += len(a)
        if _COMMAND_LINE_RE.match(a) or _STEP_LINE_RE.match(b) or _COMMAND_LINE_RE.match(b):
            ends.add(at)
        at += 1
    return sorted(ends)


def trim_to_window(sentence: str, want: set[str], words: int) -> str:
    """The `words`-word stretch of an over-long "sentence" (a table row run, a spec list) that holds
    the most question terms, marked with "…" where it was cut; shorter sentences as they are."""
    tokens = sentence.split()
    if words <= 0 or len(tokens) <= words:
        return sentence
    hits = [1 if content_terms(t) & want else 0 for t in tokens]
    best, start = sum(hits[:words]), 0
    run = best
    for i in range(1, len(tokens) - words + 1):
        run += hits[i + words - 1] - hits[i - 1]
        if run > best:
            best, start = run, i
    first = next(i for i in range(start, start + words) if hits[i]) if best else start
    start = max(0, min(first - 2, len(tokens) - words))  # the terms lead, the value after them stays in
    window = " ".join(tokens[start:start + words])
    return ("… " if start else "") + window.rstrip(" …") + (" …" if start + words < len(tokens) else "")


def is_caption(sentence: str) -> bool:
    """A figure caption and nothing else (a short "Figure 3: ..." / "Fig. 2-7 ...")."""
    return _CAPTION_RE.match(sentence) is not None and len(sentence.split()) <= CAPTION_MAX_WORDS


def is_bare_link(sentence: str) -> bool:
    """A web address and fewer than URL_MIN_OTHER_WORDS other words."""
    rest = _URL_RE.sub(" ", sentence)
    return rest != sentence and word_count(rest) < URL_MIN_OTHER_WORDS


def past_caption_line(text: str, s: int, e: int) -> int:
    """Where the sentence text[s:e] starts once a figure's caption (or a bare web address) on its own
    first line is passed ("Figure 6: MSP-FET Emulation Tool\nThere is a 10 pins female connector ..."
    starts at "There")."""
    cut = text.find("\n", s, e)
    rest = text[cut:e].strip() if cut >= 0 else ""
    first = " ".join(text[s:cut].split())
    # the next line must open a sentence: "Figure 5 shows the parts\nthat need sanding." is one sentence
    if not rest[:1].isupper() or not (is_caption(first + " ") or is_bare_link(first)):
        return s
    s = cut + 1
    while s < e and text[s].isspace():
        s += 1
    return s


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
    steps_within = params.procedure_chars if asks_how_to(question) else 0
    found: list[tuple[int, int, str, set[str]]] = []  # (passage n, position, sentence, terms)
    steps: set[tuple[int, int]] = set()  # (passage n, position) of list items
    for n, hit in enumerate(hits[:max_passages], start=1):
        before = ""
        for pos, (s, e) in enumerate(sentence_spans(hit.text)):
            scored = hit.text[s:e]  # a glued title still tells what the sentence is about: it scores
            numbered = is_section_number(before)  # "4.5.2." cut off "Calibration\nFirst time use ..."
            if drop_headings:
                s = past_caption_line(hit.text, past_glued_title(
                    hit.text, past_title_lines(hit.text, s, e, hit.heading or "", numbered), e), e)
            sentence = _clean(hit.text[s:e], steps_within)
            if ITEM_RE.match(sentence) or _NUMBER_RE.match(before):
                steps.add((n, pos))
            before = sentence
            if word_count(sentence) < 4 or drop_headings and is_heading(hit.text[s:e], hit.heading or "", numbered):
                continue
            if doubtful_number(hit, s, e):  # a number OCR was unsure of is not quoted as the answer
                continue
            if sentence.endswith("?"):  # a question (an FAQ's, a troubleshooting table's) answers nothing
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
                                  or params.named_values and names_value(sentence, want))
        value = value_bonus if stated else 0.0
        base = lex + 0.6 / n + 0.05 / (pos + 1) + value + added + params.section_bonus * section[n - 1]
        row = features(sentence, terms, want, lex, n, pos, hits[n - 1], heading_terms[n - 1], stated)
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
        return [(1, _clean(hits[0].text, params.procedure_chars if asks_how_to(question) else 0))] if hits else []
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


def approx_tokens(text: str) -> int:
    """About how many tokens a model's tokenizer makes of `text`, with no model at hand: a Chinese,
    Japanese or Korean character one, the rest one per 4 characters (English prose comes to about that
    in the BPE vocabularies of the shipped models; numbers and codes to more)."""
    cjk = len(CJK_CHAR_RE.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


def cited_text(picked: list[tuple[int, str]], max_tokens: int | None = None) -> tuple[str, bool]:
    """The answer text of the picked sentences, each followed by its citation ("Do X. [1]"), a bulleted
    item on a line of its own ("• Do X. [1]") so that the page shows a procedure as a list; and whether it
    was cut short.

    max_tokens (a request's own cap; extractive answers have no model to count with): whole sentences
    while the text stays within about that many tokens (approx_tokens), never a citation cut off its
    sentence; a first sentence longer than that alone keeps its words that fit, then "…" and its citation.
    """
    text, was_item = "", False
    for n, sentence in picked:
        if sentence[-1:] not in ".!?…。！？；：":
            sentence += "."
        bullet = _BULLET_RE.match(sentence)
        body = sentence[bullet.end():] if bullet else sentence
        lead = "• " if bullet else ""
        part = f"{lead}{body} [{n}]"
        joined = text + ("\n" if text and (bullet or was_item) else " " if text else "") + part
        if max_tokens is not None and approx_tokens(joined) > max_tokens:
            if not text:
                text = _first_words(lead, body, f" … [{n}]", max_tokens)
            return text, True
        text, was_item = joined, bool(bullet)
    return text, False


def _first_words(lead: str, body: str, tail: str, max_tokens: int) -> str:
    """The opening words of a sentence (at least one) that fit in max_tokens with `tail` after them."""
    words = body.split()
    keep = 1
    while keep < len(words) and approx_tokens(lead + " ".join(words[:keep + 1]) + tail) <= max_tokens:
        keep += 1
    return lead + " ".join(words[:keep]).rstrip(",;:") + tail


def extractive_answer(question: str, hits: list[Hit], params: EvidenceParams = EVIDENCE, *,
                      extra: Callable[[list[tuple[int, str]]], list[float]] | None = None,
                      max_tokens: int | None = None) -> str:
    """The answer text (cited_text) of pick_sentences' sentences, e.g. "Do X. [1]".

    params: how they are picked (EvidenceParams). extra: pick_sentences' added scores
    (similarity_scorer). max_tokens: cited_text's cap."""
    return cited_text(pick_sentences(question, hits, params, extra=extra), max_tokens)[0]
