"""A true sentence under the wrong citation (issue 25), and two misreadings of codes and sources.

Qwen2.5-Coder-1.5B on eval/dev wrote "Marlin v1.1.0 RC6 is supported for the Voron ramps build [2]"
with the release in passage 1, and "The 1N4148 ... black line mark to K (square pad) [2]" with the
assembly table in passage 1: right answers, thrown away because the citation was wrong. With
`answer.recite_citations` on, such a sentence is held against the other given passages and shown
cited to the one that backs it. It is off by default: eval/test did not agree (gateway.config).
"""

from __future__ import annotations

from gateway.answer.claim_terms import numbers_of
from gateway.answer.empty_claims import about_the_text
from gateway.answer.generation import Generation
from gateway.answer.outcome import decide_outcome
from gateway.answer.support import check_answer, supported_text
from gateway.answer.support_check import check_support
from retrieval.types import Hit

TABLE = ("RVPC assembly cheat sheet:\n5 1 D1 1N4148 DO35 The black line mark to K(square pad)\n"
         "6 1 C1 100nF/25V/2010 104\n7 1 T1 2N3904 N-P-N transistor")
TOOLS = "Necessary tools:\nWire cutters, tweezers and a soldering iron (CHN-SLD802 or SLD-FAST-75W)."
TIPS = ("General tips for soldering:\n1. Switch on the soldering iron, setup the working temperature to 350 C.\n"
        "3. Never touch the heated soldering tip or body with bare hands.")
DIODE = "Which way round does the 1N4148 go on the RVPC?"
RIGHT_MISCITED = "The 1N4148 should be soldered with the black line mark to K, the square pad. [2]"


def _hits(*texts: str) -> list[Hit]:
    return [Hit(chunk_id=f"c{i}", manual="rvpc.pdf", title="RVPC", manual_sha256="0" * 64, page=7 + i,
                heading="", text=t, score=1.0 / (i + 1), dense_rank=i + 1, lexical_rank=i + 1, dense_score=0.5)
            for i, t in enumerate(texts)]


def _decide(question: str, answer: str, hits: list[Hit], recite: bool) -> tuple[str, str, list[str]]:
    support = check_support(question, answer, hits, 0.6, True, recite_citations=recite)
    decision = decide_outcome(generation=Generation(draft=answer, text=answer, hits=hits), support=support)
    return decision.outcome, support.shown or "", support.flags


def test_a_part_number_is_no_quantity() -> None:
    assert numbers_of("The 1N4148 diode and the 2N3904 transistor, console at 921600 baud 8N1") == {"921600"}
    assert numbers_of("working area 600x400 mm, 36V, 1.75mm") == {"600", "36", "1.75"}


def test_a_miscited_right_sentence_is_shown_under_the_passage_that_backs_it() -> None:
    hits = _hits(TABLE, TOOLS)
    assert _decide(DIODE, RIGHT_MISCITED, hits, recite=False)[0] == "evidence_only"  # the default
    outcome, shown, flags = _decide(DIODE, RIGHT_MISCITED, hits, recite=True)
    assert outcome == "answered" and "citations_corrected: 1" in flags
    assert shown.endswith("square pad. [1]") and "[2]" not in shown


def test_no_correction_over_a_passage_that_says_the_opposite() -> None:
    passages = ["Never plug or unplug a stepper motor while the printer is powered.",
                "You can unplug a stepper motor while the printer is powered down."]
    [check] = check_answer("You can unplug a stepper motor while the printer is powered. [1]", passages,
                           question="Is hot-plugging OK on this printer's stepper motor?",
                           recite_citations=True)
    assert not check.supported and check.reason == "polarity" and not check.recited


def test_no_correction_for_a_value_a_fragment_or_filler() -> None:
    passages = [TOOLS, TIPS, TABLE]
    question = "soldering iron temperature for the kit"
    # a value must be backed where the model said it read it: numbers are in every other passage
    [value] = check_answer("Set the soldering iron working temperature to 350 C. [1]", passages,
                           question=question, recite_citations=True)
    assert not value.supported and not value.recited
    # "T1 2N3904 transistor" is backed by a table row; three words do not make a claim worth moving
    [fragment] = check_answer("Use T1 2N3904. [1]", passages, question="which transistor for T1",
                              recite_citations=True)
    assert not fragment.supported
    # backed elsewhere, but it does not touch what was asked: not worth a corrected citation
    [filler] = check_answer("Never touch the heated soldering tip or body with bare hands. [1]", passages,
                            question="Which way round does the diode go?", recite_citations=True)
    assert not filler.supported


def test_the_corrected_text_keeps_other_sentences_as_written() -> None:
    answer = "Tools include wire cutters, tweezers and a soldering iron. [1] " + RIGHT_MISCITED.replace("[2]", "[1]")
    checks = check_answer(answer, [TOOLS, TABLE], question=DIODE, recite_citations=True)
    assert [c.supported for c in checks] == [True, True] and checks[1].recited == 2
    assert supported_text(answer, checks) == (
        "Tools include wire cutters, tweezers and a soldering iron. [1] "
        "The 1N4148 should be soldered with the black line mark to K, the square pad. [2]")


def test_a_sentence_naming_its_source_is_about_the_text() -> None:
    assert about_the_text("(LibreVNA User Manual) mentions that lower values increase sweep time. [2]")
    assert about_the_text("(Voron Design SKR Mini E3 Setup Guide V0.0) explains how to set up Cura. [1]")
    assert not about_the_text("(Optional) Close the BUZ_EN1 jumper to enable the buzzer. [1]")
