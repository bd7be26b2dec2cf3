"""The outcome of one answer, decided in one place: `decide_outcome()`, then `settle()` writes it.

The pipeline calls `decide_outcome` wherever an answer ends (retrieval failed, cancelled, weak
evidence, extractive mode, after generation) with what is known by then: the evidence verdict, the
model's `Generation` and, for a generation that ran to its end, the `SupportCheck` of its text.
The rules, in order:

    retrieval failed                       -> error (the notice says so)
    the consumer went away, or cancelled
      before the model ran                 -> cancelled
    weak evidence, or a value none states  -> not_found (the notice and the nearest passages)
    extractive mode                        -> evidence_only
    the worker crashed                     -> error, the evidence shown (mode extractive_fallback)
    the runtime could not run, or failed
      before any text                      -> evidence_only (mode extractive_fallback)
    cancelled while streaming              -> cancelled, with what streamed
    failed after some text                 -> error, with that text
    the model says the passages do not
      answer, and wrote nothing they back  -> not_found (a notice and the passages)
    nothing the passages back, and every
      value it wrote is in none of them    -> not_found (a notice and the passages)
    nothing the passages back, or an answer
      off the question (too few of its words,
      or not the kind of quantity it asks) -> evidence_only
    otherwise                              -> answered: the supported sentences

and last: a model that has not earned generate mode (gate 4 not passed, gateway.qualification.answer_mode) never
shows its own text. Where the rules above would show it, the evidence is shown instead, the text
stays in `draft` and the flag `unqualified_model` labels it; `answered` becomes `evidence_only`.

`settle()` is the only writer of `AnswerResult.outcome`.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from gateway.answer.asked_kinds import answers_direction, answers_fault
from gateway.answer.binding import affirms, only_denied, passage_says_not, yes_contradicted
from gateway.answer.citations import CITATION_RE, Citation, parse_citations, renumber, resolve, validate
from gateway.answer.claim_terms import numbers_of, overlap_terms, stated_numbers, without_references
from gateway.answer.evidence_params import EVIDENCE, EvidenceParams
from gateway.answer.flags import AnswerFlag
from gateway.answer.generation import Generation
from gateway.answer.ocr_text import support_text
from gateway.answer.quantities import asked_quantities, asks_how_to, states
from gateway.answer.question_focus import addresses_question
from gateway.answer.result import AnswerResult, use_evidence
from gateway.answer.support import check_answer, is_decline, supported_text
from gateway.answer_fields import Outcome
from ingest.text.sentences import sentence_spans
from retrieval.types import Hit

log = logging.getLogger("gateway.answer.pipeline")

_DECLINE_RE = re.compile(
    r"\b(?:do(?:es)?(?: not|n't) (?:cover|contain|mention|say|include|provide|specify|state|give|list"
    r"|describe|explain|address|discuss)"
    r"|(?:is|are) not (?:covered|mentioned|provided|specified|stated|given|listed|described|found)"
    r"|not (?:covered|mentioned|provided|specified|found) in|no (?:information|mention|details?) (?:on|about|of)"
    r"|cannot (?:find|answer|determine)|can't (?:find|answer|determine)|unable to (?:find|answer|determine))",
    re.IGNORECASE)
# The model read the passages and said they do not answer: the technician sees that, with the passages.
DECLINED_TEXT = ("The closest passages in the manuals do not answer this question, as far as the model could "
                 "read them. They are listed below; check them.")

# The model stated a value that none of the passages it was given states (and nothing else it wrote is backed).
INVENTED_TEXT = ("The manuals, as searched, do not state the value asked for: the model gave one that none of the "
                 "closest passages contains. They are listed below; check them.")


class Weak(NamedTuple):
    """Why the evidence is not shown as an answer: the notice the technician reads, and the log's flag."""

    notice: str
    flag: AnswerFlag


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


Shows = Literal["notice", "evidence", "model", "nothing"]


@dataclass(frozen=True)
class Decision:
    outcome: Outcome
    shows: Shows  # what the answer's text is: a notice, the quoted evidence, the model's text, nothing
    notice: str = ""
    error: str | None = None
    fallback: bool = False  # the evidence stands in for a model that failed (mode extractive_fallback)
    flags: tuple[AnswerFlag, ...] = ()




def decide_outcome(*, retrieval_error: str | None = None, closed: bool = False, cancelled: bool = False,
                   weak: Weak | None = None, extractive: bool = False, generation: Generation | None = None,
                   support: SupportCheck | None = None, unqualified: str | None = None) -> Decision:
    """The one decision of an answer's outcome (the rules are in the module docstring); closed: the
    consumer went away (a client's disconnect, Ctrl-C) before the answer ended; unqualified: why the
    model has not earned the green badge (gateway.qualification.answer_mode), None when it has."""
    decision = _decide(retrieval_error=retrieval_error, closed=closed, cancelled=cancelled, weak=weak,
                       extractive=extractive, generation=generation, support=support)
    if unqualified is None or decision.shows != "model":
        return decision
    # A per-question "generate" must not earn what gate 4 withheld: the evidence leads, the text is a draft.
    outcome: Outcome = "evidence_only" if decision.outcome == "answered" else decision.outcome
    return Decision(outcome, "evidence", error=decision.error,
                    flags=(*decision.flags, AnswerFlag("unqualified_model", unqualified)))


def _decide(*, retrieval_error: str | None, closed: bool, cancelled: bool, weak: Weak | None, extractive: bool,
            generation: Generation | None, support: SupportCheck | None) -> Decision:
    if retrieval_error is not None:
        return Decision("error", "notice", f"Could not search the manuals: {retrieval_error}",
                        error=f"retrieval failed: {retrieval_error}")
    if closed:
        return Decision("cancelled", "nothing", flags=(AnswerFlag("consumer_closed"),))
    if cancelled:
        return Decision("cancelled", "nothing")
    if weak is not None:
        return Decision("not_found", "notice", weak.notice, flags=(weak.flag,))
    g = generation
    if extractive or g is None:
        return Decision("evidence_only", "evidence")
    if g.crash is not None:
        return Decision("error", "evidence", error=g.crash, fallback=True, flags=(AnswerFlag("backend_crashed"),))
    if g.unavailable is not None:
        return Decision("evidence_only", "evidence", error=g.unavailable, fallback=True)
    if g.cancelled:
        return Decision("cancelled", "model")
    if g.failure is not None:
        if not g.draft:
            return Decision("evidence_only", "evidence", error=g.failure, fallback=True)
        return Decision("error", "model", error=g.failure)
    if support is not None and support.declined:
        return Decision("not_found", "notice", DECLINED_TEXT)
    if support is not None and support.invented:
        return Decision("not_found", "notice", INVENTED_TEXT)
    if support is None or support.shown is None:
        return Decision("evidence_only", "evidence")
    return Decision("answered", "model")


def settle(res: AnswerResult, decision: Decision, *, given: list[Hit], evidence: str,
           generation: Generation | None = None, support: SupportCheck | None = None,
           params: EvidenceParams = EVIDENCE) -> None:
    """Write the decision into the result: outcome, text, citations (numbered 1..N as the text cites
    them: citations.renumber), flags; params: how the evidence's passages are quoted, as they were picked."""
    res.outcome = decision.outcome
    if support is not None:
        res.support = support.checks
        res.flags.extend(support.flags)
    if decision.fallback:
        res.mode, res.error = "extractive_fallback", decision.error
        res.flags.append(AnswerFlag("runtime_failed"))
        log.warning("answer %s: generation unavailable, evidence only: %s", res.id, decision.error)
    elif decision.error is not None:
        res.error = decision.error
    if decision.shows == "notice":
        res.answer = decision.notice
    elif decision.shows == "evidence":
        use_evidence(res, given, evidence, params)
    elif decision.shows == "model" and generation is not None:
        if support is not None and support.shown is not None:
            res.answer, res.citations = support.shown, support.citations
        else:  # cancelled or failed midway: what streamed, with the citations it makes
            res.answer = generation.text
            res.citations, flags = resolve(res.answer, generation.hits)
            res.flags.extend(flags)
    # the cards 1..N as the text cites them, for every reader (API, page, /v1's "Sources:", the log)
    res.answer = renumber(res.answer, res.citations)
    res.flags.extend(decision.flags)
