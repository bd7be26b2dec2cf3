"""The model's answer held against the passages it cites: which sentences are shown, and whether it
declined or stated a value from nowhere (`SupportCheck`, for gateway.answer.outcome to decide on).

Apart from the decision because it judges the text, not how the answer ended: the pipeline runs it
once per generation that ran to its end, bench.suite.model_answers on recorded drafts. The test of
each sentence against its passages is gateway.answer.support.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gateway.answer.asked_kinds import answers_direction, answers_fault
from gateway.answer.binding import affirms, only_denied, passage_says_not, yes_contradicted
from gateway.answer.citations import CITATION_RE, Citation, parse_citations, resolve, validate
from gateway.answer.claim_terms import numbers_of, overlap_terms, stated_numbers, without_references
from gateway.answer.flags import AnswerFlag
from gateway.answer.ocr_text import support_text
from gateway.answer.quantities import asked_quantities, asks_how_to, states
from gateway.answer.question_focus import addresses_question
from gateway.answer.support import check_answer, is_decline, supported_text
from ingest.text.sentences import sentence_spans
from retrieval.types import Hit

_DECLINE_RE = re.compile(
    r"\b(?:do(?:es)?(?: not|n't) (?:cover|contain|mention|say|include|provide|specify|state|give|list"
    r"|describe|explain|address|discuss)"
    r"|(?:is|are) not (?:covered|mentioned|provided|specified|stated|given|listed|described|found)"
    r"|not (?:covered|mentioned|provided|specified|found) in|no (?:information|mention|details?) (?:on|about|of)"
    r"|cannot (?:find|answer|determine)|can't (?:find|answer|determine)|unable to (?:find|answer|determine))",
    re.IGNORECASE)


@dataclass
class SupportCheck:
    """The model's answer held against the passages it cites (gateway.answer.support)."""

    shown: str | None  # the supported sentences; None: show the evidence instead
    flags: list[AnswerFlag] = field(default_factory=list)
    checks: list[dict[str, object]] = field(default_factory=list)  # one per sentence
    citations: list[Citation] = field(default_factory=list)
    declined: bool = False  # the model said the passages do not answer (and wrote nothing they back)
    invented: bool = False  # nothing backed, and every value it wrote is in none of the passages


def check_support(question: str, answer: str, hits: list[Hit], min_overlap: float,
                  require_question_terms: bool, *, evidence: str = "", decline: str = "evidence",
                  recite_citations: bool = False) -> SupportCheck:
    """Keep the sentences the cited passages back; with none left (or an answer that does not touch
    the question) the evidence is shown instead; a decline is not_found (see answer.decline)."""
    found = _check_support(question, answer, hits, min_overlap, require_question_terms, recite_citations)
    titles = " ".join(sorted({h.title for h in hits}))
    if found.declined and (decline == "evidence" or (decline == "auto" and evidence and addresses_question(
            question, evidence, titles))):
        found.declined = False  # the quoted evidence touches the question: shown, not a refusal
    if found.shown is None and not found.declined and not any(c.get("supported") for c in found.checks) \
            and invented_values(question, answer, hits):
        found.invented = True
        found.flags.append(AnswerFlag("values_not_in_passages"))
    return found


def states_what_is_asked(question: str, shown: str) -> bool:
    """An answer to a question that plainly asks for a kind of quantity (gateway.answer.quantities:
    "PSU amperage ...") states one of that kind: "The PSU amperage ... is 12V" answers with a voltage."""
    text = CITATION_RE.sub(" ", shown)
    if not (answers_fault(question, text) and answers_direction(question, text)):
        return False  # gateway.answer.asked_kinds: a fault told needs a remedy or a cause, "which way" a way
    if _PROCEDURE_RE.search(question):  # "I want to read the battery voltage ..., what do I have to do?"
        return True
    if not same_bound(question, text):
        return False
    asked = asked_quantities(question)
    return not asked or any(states(text, kind) for kind in asked)


_MIN_RE = re.compile(r"\b(?:min(?:imum)?|lowest|smallest|at least)\b", re.IGNORECASE)
_MAX_RE = re.compile(r"\b(?:max(?:imum)?|highest|largest|biggest|peak|at most|up to)\b", re.IGNORECASE)


def same_bound(question: str, answer: str) -> bool:
    """A question asking for one bound is not answered by the other one only: "minimum supply voltage
    on V+" is not answered by "a max V+ of 35V" (eval/dev2, the 1.5B, for a manual that gives no minimum)."""
    wants_min, wants_max = bool(_MIN_RE.search(question)), bool(_MAX_RE.search(question))
    if wants_min == wants_max:
        return True  # asks for neither bound, or for both ("min and max operating temperature")
    asked, other = (_MIN_RE, _MAX_RE) if wants_min else (_MAX_RE, _MIN_RE)
    return bool(asked.search(answer)) or not other.search(answer)


_PROCEDURE_RE = re.compile(r"\bhow (?:do|can|should|would) (?:i|you|we)\b|\bhow to\b|\bsteps?\b"
                           r"|\bwhat (?:do|should|must) (?:i|you|we) (?:have to |need to )?do\b", re.IGNORECASE)


def invented_values(question: str, answer: str, hits: list[Hit]) -> bool:
    """Does the draft answer the question with values (beyond its own) of which no given passage states any?

    "The VGA output is 320x240 pixels [1]" for a manual that gives no resolution, "Vref 3.3 V, 0.6 A"
    for a board the manual never sets up: an unanswerable question answered with a number from
    nowhere. Shown as evidence it reads as "the answer is somewhere in here"; it is not. A value
    stated in some passage, even under a wrong citation or about something else, does not count:
    that draft misread what is there, and the evidence is shown as before.
    """
    if asks_how_to(question):
        return False  # a procedure's steps carry numbers of their own; its evidence is shown as before
    titles = " ".join(sorted({h.title for h in hits}))
    claimed: set[str] = set()
    for start, end in sentence_spans(answer):
        sentence = without_references(CITATION_RE.sub(" ", answer[start:end]))
        if addresses_question(question, sentence, titles):  # "MagSafe 2019" next to the question is babble
            claimed |= numbers_of(sentence)
    claimed -= numbers_of(question)
    if not claimed:
        return False
    stated: set[str] = set()
    for h in hits:
        stated |= stated_numbers(f"{h.title}\n{h.heading}\n{support_text(h)}")
    # "10 dBm" where a passage says "-10 dBm" is a misread of a stated value, not one from nowhere
    return not {c.lstrip("-") for c in claimed} & {n.lstrip("-") for n in stated}


def _check_support(question: str, answer: str, hits: list[Hit], min_overlap: float,
                   require_question_terms: bool, recite_citations: bool = False) -> SupportCheck:
    flags: list[AnswerFlag] = []
    cited, dropped = validate(parse_citations(answer), len(hits))
    if dropped:
        flags.append(AnswerFlag("dropped_invalid_citations", str(dropped)))
    if is_decline(answer) or (not cited and not dropped and _DECLINE_RE.search(answer)):
        return SupportCheck(None, [*flags, AnswerFlag("model_declined")], declined=True)
    # A passage is read with its manual's title and section heading, as the model was shown it.
    titles = " ".join(sorted({h.title for h in hits}))
    # (an OCR passage with its doubtful numbers masked: gateway.answer.ocr_text)
    checks = check_answer(answer, [f"{h.title}\n{h.heading}\n{support_text(h)}" for h in hits], min_overlap,
                          question=question, titles=titles, recite_citations=recite_citations)
    found = SupportCheck(None, flags, [c.to_dict() for c in checks])
    unsupported = [c for c in checks if not c.supported]
    inferred = [c for c in checks if c.supported and c.inferred]
    if unsupported:
        flags.append(AnswerFlag("unsupported_sentences_removed", str(len(unsupported))))
    if inferred:
        flags.append(AnswerFlag("citations_inferred", str(len(inferred))))
    recited = [c for c in checks if c.recited]
    if recited:
        flags.append(AnswerFlag("citations_corrected", str(len(recited))))
    if len(unsupported) == len(checks):
        flags.append(AnswerFlag("no_supported_sentence"))
        if _DECLINE_RE.search(answer):  # "The passages do not state the interval [2]." cites, yet declines
            flags.append(AnswerFlag("model_declined"))
            found.declined = True
        return found
    said = [c for c in checks if c.reason not in ("echo", "meta")]  # what the draft claims
    if 2 * sum(1 for c in said if c.supported) < len(said):
        # most of what it claimed the passages do not back: the rest is a fragment, not the answer
        flags.append(AnswerFlag("mostly_unsupported"))
        return found
    shown = supported_text(answer, checks)
    ignore = frozenset(overlap_terms(titles))
    backing = [support_text(hits[n - 1]) for n in sorted({n for c in checks for n in c.supported_by})]
    if yes_contradicted(question, answer, [c.text for c in checks if c.supported], ignore) \
            or (affirms(question, answer) and (passage_says_not(question, backing, ignore)
                                               or only_denied(question, backing, ignore))):
        # "Yes" to what the backed sentences (or their passages) say not to do
        flags.append(AnswerFlag("yes_contradicted"))
        return found
    if require_question_terms and not (addresses_question(question, shown, titles)
                                       and states_what_is_asked(question, shown)):
        flags.append(AnswerFlag("answer_off_question"))
        return found
    found.shown = shown
    found.citations, more = resolve(shown, hits, supporting_fallback=False)
    flags.extend(f for f in more if f.name != "dropped_invalid_citations")
    return found
