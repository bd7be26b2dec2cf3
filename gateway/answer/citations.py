"""Citations: parse [2], [2, 3], [2-3], [2][3] from an answer, keep only those pointing to passages
that were given, and resolve each to its manual, page, passage, cited sentences and PDF link.

A citation the model invents (a number beyond the passages given) is dropped and flagged, never
shown as if it were a source.

`renumber` numbers an answer's citations 1..N in the order its text cites them, so that the text, the
cards, the API and /v1's "Sources:" show the same numbers, without gaps; `passage_n` keeps the
passage's number among those given (the prompt's, `passages[].n`).

A citation's passage and sentences are quoted with the PDF's wrapped line ends joined
(gateway.answer.reflow); its spans point into that text.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from gateway.answer.evidence_params import EVIDENCE, EvidenceParams
from gateway.answer.flags import AnswerFlag
from gateway.answer.reflow import reflow
from ingest.text.sentences import continued_spans, sentence_spans
from ingest.text.terms import content_terms
from retrieval.types import Hit

# "[2]", "[2, 3]", "[2-3]", "[2–3]", "[ 2 ,3 ]"; not "[a]" or "[2.5]".
CITATION_RE = re.compile(r"\[\s*(\d{1,4}(?:\s*(?:,|;|-|–|and)\s*\d{1,4})*)\s*\]")
MAX_RANGE = 20  # "[1-9999]" is not a citation of 9999 passages


def pdf_url(manual_sha256: str, page: int) -> str:
    return f"/api/v1/manuals/{manual_sha256}/file#page={page}"


@dataclass
class Citation:
    n: int  # the number as it appears in the answer: [n] is the n-th card (renumber), 1..N
    chunk_id: str
    manual: str
    title: str
    manual_sha256: str
    page: int
    heading: str
    passage: str
    sentences: list[str] = field(default_factory=list)  # the cited sentences within the passage
    spans: list[list[int]] = field(default_factory=list)  # their [start, end) in `passage`
    pdf_url: str = ""
    supporting: bool = False  # True: not cited by the answer; the given passage closest to it
    page_label: str | None = None  # the number printed on the page, when it differs (Hit.page_label)
    # "ocr": the passage was read from the page image by Tesseract, so check the page (Hit.source);
    # ocr_confidence: its mean word confidence, 0-100 (None for text-layer passages)
    source: str = "text"
    ocr_confidence: float | None = None
    language: str = ""  # the passage's language (Hit.language): the quote is in it, whatever the question's
    passage_n: int = 0  # the passage's number among those given (the prompt's [n], `passages[].n`, the draft's)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @property
    def label(self) -> str:
        printed = f" (printed {self.page_label})" if self.page_label else ""
        return f"[{self.n}] {self.title or self.manual} p.{self.page}{printed}"


def parse_citation_groups(text: str) -> list[tuple[int, int, list[int]]]:
    """Each bracket group as (start, end, numbers), ranges expanded, in order of appearance."""
    out = []
    for m in CITATION_RE.finditer(text):
        numbers: list[int] = []
        for part in re.split(r"\s*(?:,|;|and)\s*", m.group(1)):
            bounds = re.split(r"\s*[-–]\s*", part.strip())
            if len(bounds) == 2:
                lo, hi = int(bounds[0]), int(bounds[1])
                if lo > hi or hi - lo >= MAX_RANGE:
                    numbers.extend([lo, hi])
                else:
                    numbers.extend(range(lo, hi + 1))
            elif bounds and bounds[0]:
                numbers.extend(int(b) for b in bounds)
        out.append((m.start(), m.end(), numbers))
    return out


def parse_citations(text: str) -> list[int]:
    """Cited numbers in order of first appearance, without repeats."""
    seen: list[int] = []
    for _, _, numbers in parse_citation_groups(text):
        for n in numbers:
            if n not in seen:
                seen.append(n)
    return seen


def validate(numbers: list[int], n_passages: int) -> tuple[list[int], list[int]]:
    """(valid, dropped): a valid number points to one of the passages 1..n_passages given."""
    valid = [n for n in numbers if 1 <= n <= n_passages]
    dropped = [n for n in numbers if not 1 <= n <= n_passages]
    return valid, dropped


def best_sentences(passage: str, claim: str, limit: int = 2) -> list[tuple[int, int]]:
    """The passage sentences sharing the most content terms with the claim (the answer sentence)."""
    want = content_terms(CITATION_RE.sub(" ", claim))
    if not want:
        return []
    scored = []
    for s, e in continued_spans(passage, sentence_spans(passage)):
        have = content_terms(passage[s:e])
        overlap = len(want & have)
        if overlap:
            scored.append((overlap / (len(have) ** 0.5 + 1.0), overlap, s, e))
    if not scored:
        return []
    scored.sort(reverse=True)
    top = scored[0][0]
    chosen = [(s, e) for score, overlap, s, e in scored[:limit] if score >= 0.6 * top]
    return sorted(chosen)


def resolve(
    answer: str, hits: list[Hit], supporting_fallback: bool = True, *, params: EvidenceParams = EVIDENCE
) -> tuple[list[Citation], list[AnswerFlag]]:
    """Citations of `answer` against the passages given (hits[0] is [1]), plus flags; params: how the
    passages are quoted (EvidenceParams.join_short_lines: gateway.answer.reflow).

    Flags: ``dropped_invalid_citations: [7, 9]`` and ``no_valid_citation`` (then, if asked, the given
    passage closest to the answer is attached as a supporting passage so the reader sees where to look).
    """
    flags: list[AnswerFlag] = []
    valid, dropped = validate(parse_citations(answer), len(hits))
    if dropped:
        flags.append(AnswerFlag("dropped_invalid_citations", str(dropped)))
    # The claim behind a citation: the answer sentence(s) that contain the bracket.
    claims: dict[int, list[str]] = {n: [] for n in valid}
    sentences = continued_spans(answer, sentence_spans(answer))
    for start, _, numbers in parse_citation_groups(answer):
        sentence = next((answer[s:e] for s, e in sentences if s <= start < e), answer)
        for n in numbers:
            if n in claims:
                claims[n].append(sentence)
    citations = []
    for n in valid:
        hit = hits[n - 1]
        spans: list[tuple[int, int]] = []
        for claim in claims[n]:
            for span in best_sentences(hit.text, claim):
                if span not in spans:
                    spans.append(span)
        citations.append(_citation(n, hit, sorted(spans), join_short_lines=params.join_short_lines))
    if not valid:
        flags.append(AnswerFlag("no_valid_citation"))
        if supporting_fallback and hits:
            n = supporting_passage(answer, hits)
            spans = best_sentences(hits[n - 1].text, answer)
            citations.append(_citation(n, hits[n - 1], spans, supporting=True,
                                       join_short_lines=params.join_short_lines))
    return citations, flags


def supporting_passage(answer: str, hits: list[Hit]) -> int:
    """For an answer without a valid citation: the given passage (1-based) that shares the most content
    terms with it, so the reader is pointed where the text came from; ties and no overlap -> rank 1."""
    want = content_terms(CITATION_RE.sub(" ", answer))
    best, best_overlap = 1, 0
    for i, hit in enumerate(hits, start=1):
        overlap = len(want & content_terms(hit.text))
        if overlap > best_overlap:
            best, best_overlap = i, overlap
    return best


def renumber(answer: str, citations: list[Citation]) -> str:
    """Number `citations` 1..N in the order `answer` first cites them (a supporting passage, cited by
    no marker, after them) and return `answer` with its markers renumbered to match: "[1] ... [3]" becomes
    "[1] ... [2]", a lone "[2]" becomes "[1]". A number that points to no citation (dropped as invalid:
    0 or beyond the passages given, so beyond N too) is left as written. Call it once per answer: it
    reads the markers as the passages' numbers (`passage_n`)."""
    by_passage = {c.passage_n or c.n: c for c in citations}
    order = [n for n in parse_citations(answer) if n in by_passage]
    order += [n for n in by_passage if n not in order]
    new = {old: i for i, old in enumerate(order, start=1)}
    for old, c in by_passage.items():
        c.passage_n, c.n = old, new[old]
    citations.sort(key=lambda c: c.n)
    if all(old == n for old, n in new.items()):
        return answer
    out, pos = [], 0
    for start, end, numbers in parse_citation_groups(answer):
        mapped = sorted(dict.fromkeys(new.get(x, x) for x in numbers))
        if mapped == numbers:
            continue
        out.append(answer[pos:start])
        out.append(_marker(mapped))
        pos = end
    out.append(answer[pos:])
    return "".join(out)


def _marker(numbers: list[int]) -> str:
    """"[1]", "[1, 3]", "[2-4]" (three or more in a row)."""
    if len(numbers) >= 3 and numbers == list(range(numbers[0], numbers[0] + len(numbers))):
        return f"[{numbers[0]}-{numbers[-1]}]"
    return "[" + ", ".join(str(x) for x in numbers) + "]"


def _citation(n: int, hit: Hit, spans: list[tuple[int, int]], supporting: bool = False,
              join_short_lines: bool = True) -> Citation:
    passage, where = reflow(hit.text, join_short_lines)  # the PDF's wrapped line ends joined; spans follow
    moved = [(where[s], where[e]) for s, e in spans]
    return Citation(n=n, chunk_id=hit.chunk_id, manual=hit.manual, title=hit.title,
                    manual_sha256=hit.manual_sha256, page=hit.page, heading=hit.heading, passage=passage,
                    sentences=[passage[s:e] for s, e in moved], spans=[[s, e] for s, e in moved],
                    pdf_url=pdf_url(hit.manual_sha256, hit.page), supporting=supporting,
                    page_label=hit.page_label, source=hit.source, ocr_confidence=hit.ocr_confidence,
                    language=hit.language, passage_n=n)
