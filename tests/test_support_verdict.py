"""A "Yes" that the backed sentences contradict is not a green answer (issue 25, item 3).

Qwen2.5-Coder-1.5B, asked on eval/dev whether PVC signs may be cut on a laser cutter, wrote "Yes,"
and then quoted the manual's "Do not use materials such as PVC", each sentence with its citation.
Every sentence was backed, so the answer went green: the verdict that decides what the technician
does was the one claim nothing checked. It is now held to the polarity of the backed sentences
that touch the question most.
"""

from __future__ import annotations

from gateway.answer.binding import yes_contradicted
from gateway.answer.generation import Generation
from gateway.answer.outcome import decide_outcome
from gateway.answer.support_check import check_support
from retrieval.types import Hit

LASER = ("Not every material can be cut because of toxic vapors produced while cutting. Do not use materials "
         "such as PVC or any other material which contains chloride. Always operate with the extraction on.")
QUESTION = "Can I cut PVC signs on the laser?"


def _hits() -> list[Hit]:
    return [Hit(chunk_id="c1", manual="laser.pdf", title="Laser cutter manual", manual_sha256="0" * 64, page=12,
                heading="Materials", text=LASER, score=1.0, dense_rank=1, lexical_rank=1, dense_score=0.9)]


def _outcome(answer: str) -> tuple[str, list[str]]:
    support = check_support(QUESTION, answer, _hits(), 0.6, True)
    return decide_outcome(generation=Generation(draft=answer, text=answer, hits=_hits()), support=support).outcome, \
        support.flags


def test_yes_to_what_the_quoted_manual_forbids_is_not_answered() -> None:
    outcome, flags = _outcome("Yes, you can. [1] Do not use materials such as PVC or any other material "
                              "which contains chloride. [1]")
    assert outcome == "evidence_only" and "yes_contradicted" in flags


def test_no_with_the_same_quote_is_answered() -> None:
    outcome, flags = _outcome("No. Do not use materials such as PVC or any other material which contains "
                              "chloride. [1]")
    assert outcome == "answered" and "yes_contradicted" not in flags


def test_yes_backed_by_a_positive_sentence_stands() -> None:
    assert not yes_contradicted("Should the extraction be on while cutting?", "Yes. Always operate with the "
                                "extraction on. [1]", ["Always operate with the extraction on. [1]"])


def test_a_negated_sentence_that_does_not_touch_the_question_does_not_decide() -> None:
    # the backed sentence sharing most question words is the positive one; the "not" elsewhere is beside it
    assert not yes_contradicted("Should the extraction be on while cutting?", "Yes. [1]",
                                ["Always operate with the extraction on. [1]", "Never leave it unattended. [1]"])
