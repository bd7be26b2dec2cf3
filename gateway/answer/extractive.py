"""Extractive answers: no model, just the best sentences of the top passages, each cited.

For gateways where no model is fast enough, and the fallback when the runtime fails. Sentences
are scored by the question's content terms they contain (rarer terms among the candidates count
more) plus the rank of the passage they come from.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from gateway.answer.citations import content_terms, sentence_spans
from gateway.answer.ocr_text import doubtful_number
from gateway.answer.quantities import asked_quantities, asks_how_to, states
from retrieval.types import Hit

MAX_SENTENCE_CHARS = 400
# A list item: a bullet or "Step 3" opening the sentence, or a bare "3." / "(3)" just before it (the
# sentence splitter cuts a step's number off as a fragment of its own). A procedure's steps are quoted
# in their own order, never best step first.
_ITEM_RE = re.compile(r"^(?:step\s+\d|[•●◆▪◦‣]|[*-]\s)", re.IGNORECASE)
_BULLET_RE = re.compile(r"^[•●◆▪◦‣]\s*")
_NUMBER_RE = re.compile(r"^\(?\d{1,2}[.)]?$")
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'’\-]*")
_VALUE_RE = re.compile(r"(?<![A-Za-z\d])\d+(?:[.,]\d+)*(?![A-Za-z\d])")  # a number, not a code's digits (E3)


def _clean(sentence: str) -> str:
    sentence = re.sub(r"\s+", " ", sentence).strip()
    if len(sentence) > MAX_SENTENCE_CHARS:
        sentence = sentence[:MAX_SENTENCE_CHARS].rsplit(" ", 1)[0] + " …"
    return sentence


# "6.3 ", "16.10": a numbered section's number, glued to its title or not
_SECTION_NUMBER_RE = re.compile(r"^\d+(?:\.\d+)+\.?\s*(?=[A-Za-z])")


def _folded(text: str) -> str:
    return " ".join(text.lower().split())


def is_heading(raw: str, heading: str = "") -> bool:
    """A title or a run of titles ("INSTALLING THE WATER CHILLER", "2.5.2 Instant Capture", "Klipper
    InstallationReferences: Klipper Installation Instructions ..."): capitalised words, no number but a
    section's own (a code like "E3" may be there), no closing punctuation; or the section heading the
    index found for the passage (`heading`), numbered or not ("16.4 Hamlib does not work with my Icom
    radio"). It names a section (the card shows it); quoted as an answer it says nothing."""
    text = raw.strip()
    bare = _SECTION_NUMBER_RE.sub("", text)
    if heading and _folded(heading) in (_folded(text), _folded(bare)):
        return True
    if not bare or bare[-1] in ".!?;)\"”" or _VALUE_RE.search(bare) or _ITEM_RE.match(bare):
        return False
    words = _WORD_RE.findall(bare)
    return len(words) >= 2 and sum(w[0].isupper() for w in words) >= 0.7 * len(words)


def _past_title_lines(text: str, s: int, e: int, heading: str = "") -> int:
    """Where the sentence text[s:e] starts once title lines glued before it are passed ("INSTALLING THE
    WATER CHILLER\nFill the chiller ..." is one span to the sentence splitter)."""
    while True:
        cut = text.find("\n", s, e)
        if cut < 0 or not is_heading(text[s:cut], heading) or not text[cut:e].strip():
            return s
        s = cut + 1
        while s < e and text[s].isspace():
            s += 1


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


def pick_sentences(
    question: str, hits: list[Hit], max_sentences: int = 3, max_passages: int = 3, value_bonus: float = 0.0,
    min_ratio: float = 0.0, best_first: bool = True, window: int = 0, procedure: int = 5, drop_headings: bool = True,
    extra: Callable[[list[tuple[int, str]]], list[float]] | None = None,
) -> list[tuple[int, str]]:
    """[(passage number, sentence)] in answer order: best-scoring first, at most 2 per passage.

    value_bonus: added to a sentence that states a quantity of a kind the question asks for
    (gateway.answer.quantities: "how heavy" and a number in kg). min_ratio: a sentence after the
    first joins only with at least this share of the best one's score. best_first: the best sentence
    leads even when another of its passage comes before it, unless it is a numbered step or a bullet
    (the gold value in the first sentence: eval/dev 0.21 -> 0.27, eval/test 0.14 -> 0.15). window:
    over-long sentences are cut to this many words around the question's terms (0: kept whole, up to
    MAX_SENTENCE_CHARS). A floor and a window both lowered correctness on eval/dev, so they are off
    (bench/experiments/extractive_trim.py). procedure: for a how-to question whose best sentence is a
    list item, up to this many items of its list, in order, instead of the best sentences (0: off; it
    fires on none of eval's 10 how-to questions, so it is unmeasured there). drop_headings: titles
    (is_heading) are not quoted (eval/dev +0.002, eval/test +0.000).
    """
    want = content_terms(question)
    asked = asked_quantities(question) if value_bonus else []
    candidates: list[tuple[int, int, str, set[str]]] = []  # (passage n, position, sentence, terms)
    steps: set[tuple[int, int]] = set()  # (passage n, position) of list items
    for n, hit in enumerate(hits[:max_passages], start=1):
        before = ""
        for pos, (s, e) in enumerate(sentence_spans(hit.text)):
            scored = hit.text[s:e]  # a glued title still tells what the sentence is about: it scores
            if drop_headings:
                s = _past_title_lines(hit.text, s, e, hit.heading or "")
            sentence = _clean(hit.text[s:e])
            if _ITEM_RE.match(sentence) or _NUMBER_RE.match(before):
                steps.add((n, pos))
            before = sentence
            if len(sentence.split()) < 4 or drop_headings and is_heading(hit.text[s:e], hit.heading or ""):
                continue
            if doubtful_number(hit, s, e):  # a number OCR was unsure of is not quoted as the answer
                continue
            candidates.append((n, pos, sentence, content_terms(scored)))
    if not candidates:
        return [(1, _clean(hits[0].text))] if hits else []
    df: dict[str, int] = {}
    for *_, terms in candidates:
        for t in terms & want:
            df[t] = df.get(t, 0) + 1
    total = len(candidates)
    more = extra([(c[0], c[2]) for c in candidates]) if extra else [0.0] * total
    added = dict(zip(((c[0], c[1]) for c in candidates), more, strict=True))

    def score(item: tuple[int, int, str, set[str]]) -> float:
        n, pos, _, terms = item
        matched = sum(1.0 + math.log(total / df[t]) for t in terms & want)
        length_penalty = math.sqrt(max(len(terms), 4))
        value = value_bonus if asked and any(states(item[2], kind) for kind in asked) else 0.0
        return matched / length_penalty + 0.6 / n + 0.05 / (pos + 1) + value + added[(n, pos)]

    ranked = sorted(candidates, key=score, reverse=True)
    top = score(ranked[0])
    chosen: list[tuple[int, int, str, set[str]]] = []
    per_passage: dict[int, int] = {}
    for item in ranked:
        if len(chosen) >= max_sentences or chosen and score(item) < min_ratio * top:
            break
        if per_passage.get(item[0], 0) >= 2 or any(item[2] == c[2] for c in chosen):
            continue
        if chosen and not (item[3] & want):  # a filler sentence with no question term: stop
            break
        chosen.append(item)
        per_passage[item[0]] = per_passage.get(item[0], 0) + 1
    if procedure and (ranked[0][0], ranked[0][1]) in steps and asks_how_to(question):
        return _procedure(ranked[0], [c for c in candidates if (c[0], c[1]) in steps], procedure)
    # Passages in order of their best sentence; within one, reading order (steps stay in order).
    order = {n: i for i, n in enumerate(dict.fromkeys(c[0] for c in chosen))}
    lead = chosen[0] if chosen else None
    chosen.sort(key=lambda c: (order[c[0]], c[1]))
    if best_first and lead is not None and (lead[0], lead[1]) not in steps:
        chosen.remove(lead)
        chosen.insert(0, lead)
    return [(n, trim_to_window(sentence, want, window)) for n, _, sentence, _ in chosen]


def _procedure(lead: tuple[int, int, str, set[str]], items: list[tuple[int, int, str, set[str]]],
               limit: int) -> list[tuple[int, str]]:
    """The list the lead item belongs to (items of its passage at most 2 positions apart: a cut-off
    step number sits between two), up to `limit` items from its start or, deep in a long list, from
    just before the lead."""
    mine = sorted((c for c in items if c[0] == lead[0]), key=lambda c: c[1])
    runs: list[list[tuple[int, int, str, set[str]]]] = []
    for c in mine:
        if runs and c[1] - runs[-1][-1][1] <= 2:
            runs[-1].append(c)
        else:
            runs.append([c])
    run = next(r for r in runs if lead in r)
    at = run.index(lead)
    start = 0 if at < limit else at - 1
    return [(n, sentence) for n, _, sentence, _ in run[start:start + limit]]


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


def extractive_answer(question: str, hits: list[Hit], max_sentences: int = 3, max_passages: int = 3,
                      value_bonus: float = 0.0, extra: Callable[[list[tuple[int, str]]], list[float]] | None = None,
                      **choice: float | bool | int) -> str:
    """The answer text: each picked sentence followed by its citation, e.g. "Do X. [1]"; a bulleted
    item on a line of its own as "• Do X. [1]", so that the page shows a procedure as a list.

    extra: pick_sentences' added scores (similarity_scorer). choice: pick_sentences' min_ratio,
    best_first, window, procedure and drop_headings."""
    text, was_item = "", False
    for n, sentence in pick_sentences(question, hits, max_sentences=max_sentences, max_passages=max_passages,
                                      value_bonus=value_bonus, extra=extra, **choice):  # type: ignore[arg-type]
        if sentence[-1:] not in ".!?…":
            sentence += "."
        bullet = _BULLET_RE.match(sentence)
        part = f"• {sentence[bullet.end():]} [{n}]" if bullet else f"{sentence} [{n}]"
        text += ("\n" if text and (bullet or was_item) else " " if text else "") + part
        was_item = bool(bullet)
    return text
