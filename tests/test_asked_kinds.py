"""True sentences that answer nothing are not shown green (issue 25, from eval/dev2's wrong greens).

Each case is a kind the 1.5B instrument wrote on the second development set's manuals, here on an
invented pump-controller manual: a reported fault answered with a restatement of it, "which
direction" answered without one, an answer that says where the answer is written ("found in Table
1"), and one whose value is a citation marker ("the pack that fits is [4]"). The right answer to the
same question still goes through, so each test fails both ways.
"""

from __future__ import annotations

import pytest

from gateway.answer.asked_kinds import answers_direction, answers_fault, reports_fault
from gateway.answer.empty_claims import about_the_text, dangling
from gateway.answer.generation import Generation
from gateway.answer.outcome import decide_outcome
from gateway.answer.support_check import check_support
from retrieval.types import Hit

TITLE = "PC-200 Pump Controller Manual"
FILTER = ("Maintenance\nThe inlet strainer holes will likely be partly blocked by scale after the first month. "
          "Clear the strainer holes with a 1 mm pin and flush the strainer with clean water.")
IMPELLER = ("Fitting the impeller\nFor a left-hand pump turn the impeller shaft fully counter clockwise to the "
            "mounting position, looking from the motor side. Secure it with two M4 screws.")
SETTINGS = ("Table 1: Suggested settings\nThe suggested settings for the dosing pump are given in Table 1. "
            "Stroke 40 %, rate 12 strokes per minute, priming mode on.")
BATTERY = ("Power\nThe backup input takes a single-cell LiPo pack. The pack that fits the holder is the "
           "LP-1400 (1400 mAh).")


def _hits(*texts: str) -> list[Hit]:
    return [Hit(chunk_id=f"c{i}", manual="pc200.pdf", title=TITLE, manual_sha256="0" * 64, page=i + 1, heading="",
                text=t, score=1.0, dense_rank=i + 1, lexical_rank=i + 1, dense_score=0.5) for i, t in enumerate(texts)]


def _outcome(question: str, draft: str, hits: list[Hit]) -> str:
    support = check_support(question, draft, hits, 0.6, True)
    return decide_outcome(generation=Generation(draft=draft, text=draft, hits=hits), support=support).outcome


@pytest.mark.parametrize(("passage", "question", "held", "shown"), [
    # a reported fault is not answered by restating it
    (FILTER, "strainer holes blocked with scale after a month",
     "The inlet strainer holes will likely be partly blocked by scale after the first month. [1]",
     "Clear the strainer holes with a 1 mm pin and flush the strainer with clean water. [1]"),
    # "which direction" is not answered without one
    (IMPELLER, "fitting the impeller which direction do i turn the shaft for a left-hand pump",
     "For a left-hand pump, turn the impeller shaft to the mounting position. [1]",
     "For a left-hand pump, turn the impeller shaft fully counter clockwise to the mounting position. [1]"),
    # an answer that only says where the answer is claims nothing
    (SETTINGS, "dosing pump settings, need priming?",
     "The suggested settings for the dosing pump are given in Table 1. [1]",
     "Stroke 40 %, rate 12 strokes per minute, priming mode on. [1]"),
    # nor one whose value is a citation
    (BATTERY, "what lipo pack fits the pc-200 backup holder",
     "The pack that fits the holder is [1] (PC-200 layout:). [1]",
     "The pack that fits the holder is the LP-1400 (1400 mAh). [1]"),
])
def test_a_true_sentence_that_answers_nothing_is_held_back(passage: str, question: str, held: str,
                                                           shown: str) -> None:
    assert _outcome(question, held, _hits(passage)) == "evidence_only"
    assert _outcome(question, shown, _hits(passage)) == "answered"


def test_what_counts_as_a_reported_fault() -> None:
    assert reports_fault("pump wont start after a power cut")
    assert reports_fault("display stays dead on 24V")
    assert not reports_fault("why does the pump not start after a power cut?")  # asked: a question word
    assert not reports_fault("strainer hole size for the PC-200")  # a request for a value, no fault told
    assert answers_fault("pump wont start after a power cut", "The pump waits 30 s because the motor cools.")
    assert answers_fault("pump wont start after a power cut", "Press RESET to restart it.")
    assert not answers_fault("pump wont start after a power cut", "The pump starts after a power cut.")


def test_which_direction_needs_a_direction_the_question_did_not_give() -> None:
    question = "fitting the impeller which direction do i turn the shaft for a left-hand pump"
    assert not answers_direction(question, "For a left-hand pump, turn the shaft to the mounting position.")
    assert answers_direction(question, "Turn the shaft fully counter clockwise.")
    assert answers_direction("which direction does the arrow on the housing point?", "It points up, to the outlet.")
    assert answers_direction("what is the flow rate?", "The flow rate is 12 l/min.")  # no direction asked


def test_what_only_says_where_the_answer_is() -> None:
    assert about_the_text("The suggested settings for the dosing pump are given in Table 1. [1]")
    assert about_the_text("See the wiring diagram for the terminal numbers. [2]")
    assert not about_the_text("Set the stroke to 40 % as shown in Table 1. [1]")  # it states the value


def test_a_citation_in_place_of_the_value_claims_nothing() -> None:
    assert dangling("The pack that fits the holder is [4] (PC-200 layout:). [1]", "")
    assert dangling("The top stroke rate with both heads on is [2] Hz. [3]", "")  # a unit, and no value
    assert not dangling("The stroke is set to [1] (40 %).", "")  # the value in brackets after the marker
    assert not dangling("The pack is 1400 mAh, as stated in [1]", "")
    assert not dangling("The rate is set according to [1].", "")


def test_an_article_or_use_before_the_citation_leaves_the_sentence_without_its_object() -> None:
    """eval/test's "you should use [1]" (for a glue no manual names) was shown green; eval/dev's "close
    the [1]" is the same shape. What follows such a marker is a sentence of its own, checked alone."""
    from gateway.answer.draft_units import draft_spans

    assert dangling("To glue the window to the case from the inside, you should use [1]", "")
    assert dangling("To reflash the firmware over USB, close the [1]", "")
    assert not dangling("Fit the terminator as stated in [1]", "")
    assert not dangling("Use the ESP_PROG1 jumper [1]", "")
    draft = "Glue the window, you should use [1] Rose Enclosures, 090816060. [2]"
    assert [draft[s:e] for s, e in draft_spans(draft)] == ["Glue the window, you should use [1]",
                                                           "Rose Enclosures, 090816060. [2]"]


def test_a_citation_between_the_verb_and_its_value_keeps_the_sentence_whole() -> None:
    from gateway.answer.draft_units import draft_spans

    draft = "The backup pack for the holder is [1] LP-1400. [1] The pump starts at once. [2]"
    assert [draft[s:e] for s, e in draft_spans(draft)] == ["The backup pack for the holder is [1] LP-1400. [1]",
                                                           "The pump starts at once. [2]"]
    # read whole, the value is held against the passages it cites; cut after "is [1]", it was an echo
    assert _outcome("which pack fits the pc-200 backup holder", "The pack that fits the holder is [1] LP-1400. [1]",
                    _hits(BATTERY)) == "answered"
    assert _outcome("which pack fits the pc-200 backup holder", "The pack that fits the holder is [1] LP-2000. [1]",
                    _hits(BATTERY)) == "not_found"  # a value from nowhere


def test_codes_joined_by_a_slash_are_each_looked_for() -> None:
    from gateway.answer.support import check_against

    passage = "Clipping of the 700D and 700E waveforms needs a transmitter that handles high average power."
    ok, *_ = check_against("The 700D/700E clipping needs a transmitter that handles high average power.", passage, 0.6)
    assert ok
    ok, _, missing, reason = check_against("The 700D/700F clipping needs a transmitter that handles high average "
                                           "power.", passage, 0.6)
    assert not ok and reason == "code" and missing == ["700d/700f"]


AUDIO = ("Audio Processing\nThe modem likes a clean audio path. On receive, the noise blanker should be off. "
         "On transmit, speech compression should be off.")


def test_yes_to_a_state_the_passage_puts_the_other_way_is_not_an_answer() -> None:
    """"should i leave speech compression on" answered "Yes, leave it on" from a passage that says it
    should be off: every word is backed and the verdict is backwards (the 1.5B on eval/dev2's FreeDV
    manual wrote this one as a restatement, which the echo check caught; worded a little
    differently, only the state tells it)."""
    question = "should i leave speech compression on with the modem"
    draft = "Yes, on transmit, speech compression stays on for a clean audio path to the modem. [1]"
    assert _outcome(question, draft, _hits(AUDIO)) == "evidence_only"
    agrees = "Yes, on receive the noise blanker should be off for a clean audio path. [1]"
    assert _outcome("should i leave the noise blanker off on receive", agrees, _hits(AUDIO)) == "answered"
    from gateway.answer.binding import opposite_state, states_of

    assert states_of("mount it on the frame") == set() and states_of("is the LED on?") == {"on"}
    assert opposite_state(question, "Speech compression should be off.")
    assert not opposite_state(question, "Speech compression can stay on.")
