"""The outcome of one answer, decided in one place: `decide_outcome()`, then `settle()` writes it.

The pipeline calls `decide_outcome` wherever an answer ends (retrieval failed, cancelled, weak
evidence, extractive mode, after generation) with what is known by then: the evidence verdict, the
model's `Generation` and, for a generation that ran to its end, the `SupportCheck` of its text
(gateway.answer.support_check).
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
from dataclasses import dataclass
from typing import Literal, NamedTuple

from gateway.answer.answer_texts import say
from gateway.answer.citations import renumber, resolve
from gateway.answer.evidence_params import EVIDENCE, EvidenceParams
from gateway.answer.flags import AnswerFlag
from gateway.answer.generation import Generation
from gateway.answer.result import AnswerResult, use_evidence
from gateway.answer.support_check import SupportCheck
from gateway.answer_fields import Outcome
from retrieval.types import Hit

log = logging.getLogger("gateway.answer.pipeline")

# The model read the passages and said they do not answer: the technician sees that, with the passages.
DECLINED_TEXT = say("declined", "")
# The model stated a value that none of the passages it was given states (and nothing else it wrote is backed).
INVENTED_TEXT = say("invented", "")
# The English notices above, in the question's language when settled (gateway.answer.answer_texts)
_NOTICE_KEYS = {DECLINED_TEXT: "declined", INVENTED_TEXT: "invented"}


class Weak(NamedTuple):
    """Why the evidence is not shown as an answer: the notice the technician reads, and the log's flag."""

    notice: str
    flag: AnswerFlag


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
        key = _NOTICE_KEYS.get(decision.notice)
        res.answer = say(key, res.question) if key else decision.notice
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
