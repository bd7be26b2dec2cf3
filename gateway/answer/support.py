"""Support check: is each answer sentence backed by the passage it cites?

A small model cites the right page and then writes a wrong number, invents an accessory, or loops.
Each sentence is held against its cited passage(s):

* every number in the sentence must appear in the passage (``85 N·m`` cannot become ``2.10 Nm``),
  beside something the sentence says it is about ("every 50 hours" for the belt is not backed by
  "every 50 hours" for the nozzle),
* every code-like token (part numbers, model names, pins: ``PA13``, ``M3x8``, ``SKR``) must too,
  except an acronym the question itself uses ("PSU": the technician's word, not the manual's); a
  value with its unit glued on ("36V") is the passage's "36 V", not a code,
* enough of its content words must be found there (``min_overlap``, measured on the development
  half of the evaluation set by ``bench/experiments/answer_quality.py``); words it repeats from the
  question count too (leaving them out let wrong answers through on eval/dev),
* it must say it the same way round as the passage sentence it rests on: "Never unplug anything
  while powered" does not back "Unplugging while powered is safe" (a negation on one side only),
* and it must not be degenerate (the same word over and over), nor announce a list that never comes
  ("The full list of commands is: [1]").

A draft is read in the units the citation grammar made it write: a sentence ends at a citation that a
new sentence or numbered step follows, and a page note beside a citation ("[1] (page 6)") is no claim.
A sentence with no citation is held against every passage given; if one supports it, that passage
is attached as an inferred citation (flagged, so QA can count them). Only supported sentences are
shown as the answer; the pipeline turns an answer with none into ``evidence_only``.

The draft's units are cut in gateway.answer.draft_units, sentences that claim nothing are told in
gateway.answer.empty_claims, and whether a sentence touches the question in gateway.answer.question_focus.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass, field

from gateway.answer.binding import same_polarity, unbound_numbers
from gateway.answer.citations import CITATION_RE, parse_citation_groups
from gateway.answer.claim_terms import UNIT_GLUE_RE, codes_of, fold, numbers_of, overlap_terms, without_references
from gateway.answer.draft_units import LIST_MARK_RE
from gateway.answer.draft_units import draft_spans as draft_spans
from gateway.answer.empty_claims import about_the_text as about_the_text
from gateway.answer.empty_claims import dangling as dangling
from gateway.answer.empty_claims import degenerate as degenerate
from gateway.answer.empty_claims import echoes
from gateway.answer.question_focus import addresses_question as addresses_question

DEFAULT_MIN_OVERLAP = 0.6
_URL_RE = re.compile(r"\b(?:https?://|www\.)\S+|\b[\w.-]+\.(?:com|org|net|io|html?)\b", re.IGNORECASE)
_DECLINE = "The manuals do not cover this."
_PAGE_NOTE_RE = re.compile(r"\s*\((?:pages?|p\.)\s*\d+(?:\s*[-–,]\s*\d+)*\)", re.IGNORECASE)


@dataclass
class SentenceCheck:
    text: str  # the sentence as written (citation markers included)
    start: int
    end: int
    cited: list[int]  # passage numbers cited in the sentence (valid ones)
    supported_by: list[int] = field(default_factory=list)  # cited (or inferred) passages that back it
    inferred: bool = False  # no citation written; a passage that backs it was found
    recited: int = 0  # its cited passages do not back it; this other given passage does (shown cited to it)
    overlap: float = 0.0  # best share of its content words found in a backing passage
    missing: list[str] = field(default_factory=list)  # numbers / codes absent from every cited passage
    reason: str = ""  # why unsupported: number, code, subject, overlap, polarity, degenerate, no_content

    @property
    def supported(self) -> bool:
        return bool(self.supported_by)

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "supported": self.supported}


_UNIT_SPACE_RE = re.compile(r"(?<=\d)\s+(?=[^\W\d_]+\b)")


def check_against(sentence: str, passage: str, min_overlap: float,
                  ignore: frozenset[str] = frozenset(), asked: frozenset[str] = frozenset()
                  ) -> tuple[bool, float, list[str], str]:
    """(supported, overlap, missing tokens, reason) for one sentence against one passage.

    The overlap counts the claim's words the question gave it too. Leaving those out (so that a
    correct paraphrase in the technician's words passes) was tried on eval/dev and let two more
    wrong answers through ("you need to modify the configuration file in Klipper" to swap filament)
    while no right one gained (docs/bench/model_answers.md): it is not done. The converse, that the
    question's words a claim repeats must be in the passage backing it (the 1.5B's "wipe the print
    bed with a soft cloth" rests on a laser cutter's bed-cleaning section), was tried on the whole of
    eval/dev: 6 greens fewer, 5 of them right (technicians' words are not the manual's): not done.
    """
    claim = LIST_MARK_RE.sub("", CITATION_RE.sub(" ", sentence))
    folded = fold(passage)
    missing = sorted(n for n in numbers_of(claim) if n not in numbers_of(passage))
    if missing:
        return False, 0.0, missing, "number"
    words = r"[a-z0-9_\-/]+"  # "18AWG" in the passage holds the code "AWG" of "18 AWG"
    have_codes = (codes_of(passage) | set(re.findall(words, folded))
                  | set(re.findall(words, UNIT_GLUE_RE.sub(" ", folded)))
                  | codes_of(_UNIT_SPACE_RE.sub("", folded)))  # "36 V" in the passage holds "36V"
    missing = sorted(c for c in codes_of(claim) if c not in have_codes and c not in asked
                     and not ("/" in c and all(part in have_codes for part in c.split("/") if part)))  # "700D/700E"
    if missing or _URL_RE.search(claim):
        return False, 0.0, missing or _URL_RE.findall(claim), "code"
    unbound = unbound_numbers(claim, passage, ignore)
    if unbound:
        return False, 0.0, unbound, "subject"
    want = overlap_terms(claim)
    if not want:
        return False, 0.0, [], "no_content"
    overlap = len(want & overlap_terms(passage)) / len(want)
    if overlap < min_overlap:
        return False, round(overlap, 3), [], "overlap"
    if not same_polarity(claim, passage, ignore):
        return False, round(overlap, 3), [], "polarity"
    return True, round(overlap, 3), [], ""


def check_answer(answer: str, passages: list[str], min_overlap: float = DEFAULT_MIN_OVERLAP,
                 question: str = "", titles: str = "", recite_citations: bool = False) -> list[SentenceCheck]:
    """One SentenceCheck per sentence of ``answer``; ``passages[0]`` is passage [1]; ``titles``: the
    manuals' titles, which name the equipment but bind no value to a subject."""
    ignore = frozenset(overlap_terms(titles))
    groups = parse_citation_groups(answer)
    # the technician's own acronyms ("PSU") name what is asked about, in their words, not the manual's
    asked = frozenset(c for c in codes_of(question) if c.isalpha())
    checks: list[SentenceCheck] = []
    spans = draft_spans(answer)
    for i, (s, e) in enumerate(spans):
        text = _PAGE_NOTE_RE.sub("", answer[s:e])
        if not CITATION_RE.sub("", text).strip(" .;:,-"):
            continue  # a stray citation on its own line: it belongs to the sentence before
        cited: list[int] = []
        for gs, _ge, numbers in groups:
            if s <= gs < e:
                cited += [n for n in numbers if 1 <= n <= len(passages) and n not in cited]
        check = SentenceCheck(text=text, start=s, end=e, cited=cited)
        if degenerate(text) or about_the_text(text) or (question and echoes(text, question)):
            check.reason = "degenerate" if degenerate(text) else "meta" if about_the_text(text) else "echo"
            checks.append(check)
            continue
        if dangling(text, answer[spans[i + 1][0]:spans[i + 1][1]] if i + 1 < len(spans) else ""):
            check.reason = "dangling"  # "The full list of commands is: [1]" and no list: it claims nothing
            checks.append(check)
            continue
        candidates = cited or list(range(1, len(passages) + 1))
        reasons = []
        for n in candidates:
            ok, overlap, missing, reason = check_against(text, passages[n - 1], min_overlap, ignore, asked)
            check.overlap = max(check.overlap, overlap)
            if ok:
                check.supported_by.append(n)
            else:
                reasons.append(reason)
                check.missing = sorted(set(check.missing) | set(missing))
        if recite_citations and not check.supported_by and cited and "polarity" not in reasons \
                and (not question or addresses_question(question, text, titles)):
            check.recited = recite(text, passages, cited, min_overlap, ignore)
            check.supported_by = [check.recited] if check.recited else []
        if check.supported_by:
            check.missing, check.reason = [], ""
            if not cited:  # the best backing passage only: one inferred citation
                check.inferred = True
                check.supported_by = check.supported_by[:1]
        else:
            check.reason = Counter(reasons).most_common(1)[0][0] if reasons else "no_content"
        checks.append(check)
    return checks


RECITE_MIN_TERMS = 4


def recite(sentence: str, passages: list[str], cited: list[int], min_overlap: float,
           ignore: frozenset[str]) -> int:
    """The other given passage that backs a sentence its cited ones do not, or 0.

    A model that read the answer in passage [3] often cites [1] (the Qwen2.5-Coder-1.5B wrote the
    RVPC's 350 C iron temperature under the tools list): the claim is true and its citation is not.
    Held against the other passages with the same test, it is shown cited to the one that backs it,
    so the tap opens the right page. Never when a cited passage says the opposite (a polarity
    reject: "Yes, you can connect the USB-C" cited to the sentence that says not to), never for a
    sentence that does not touch the question (filler is not worth a corrected citation), for one
    that states a value (numbers are everywhere: a value must be backed where the model said it read
    it), or for a short fragment ("Y Stepper, 12." is backed by any contents list).
    """
    claim = CITATION_RE.sub(" ", sentence)
    if numbers_of(without_references(claim)) or len(overlap_terms(claim) - ignore) < RECITE_MIN_TERMS:
        return 0
    for n in range(1, len(passages) + 1):
        if n not in cited and check_against(sentence, passages[n - 1], min_overlap, ignore)[0]:
            return n
    return 0


def is_decline(answer: str) -> bool:
    return fold(answer).strip().startswith(fold(_DECLINE)[:-1])


def supported_text(answer: str, checks: list[SentenceCheck]) -> str:
    """The answer made of its supported sentences only, each once (a small model repeats itself); an
    inferred citation is written out."""
    parts: list[str] = []
    for c in checks:
        if not c.supported:
            continue
        text = c.text.strip()
        if c.recited:
            text = re.sub(r"\s+([.;:,!?])", r"\1", CITATION_RE.sub(" ", text)).rstrip()
            text = re.sub(r"\s{2,}", " ", text)
            text += f" [{c.recited}]"
        elif c.inferred:
            text = text.rstrip() + f" [{c.supported_by[0]}]"
        if text not in parts:
            parts.append(text)
    return " ".join(parts)
