"""What the technician asked, in their words (issue 25).

Two cases from the Qwen2.5-Coder-1.5B on eval/dev:
- "new ender 3 out of the box, anything to set on the PSU before plugging in?" was answered rightly
  ("set the correct input voltage to match your local mains (220V or 110V) [1]", with the draft's "PSU"
  taken from the question) and thrown away because the passage never writes "PSU". The question's
  own acronyms need not be the manual's.
- "PSU amperage for the VORON electronics in the BOM?" drafted "The PSU amperage ... is 12V": a
  voltage for a current. An answer to a question that plainly asks for a kind of quantity must state
  one of that kind (a procedure asked for is exempt: "read the battery voltage ... what do I do?").
"""

from __future__ import annotations

from gateway.answer.generation import Generation
from gateway.answer.outcome import decide_outcome
from gateway.answer.support_check import check_support, states_what_is_asked
from retrieval.types import Hit

SWITCH = ("Ender 3 Series 3D Printer Quick Start Guide\nThis guide is for the Ender 3 Series of 3D printers. "
          "Select the correct input voltage to match your local mains (220V or 110V) before powering on.")
BOM = ("Electronics\nPower supply 12V 16.7A StepperOnline S-201-12, 1 pc. Thermal fuse 120 degC (optional). "
       "Power cord C14, 1 pc.")


def _hit(text: str, title: str = "Ender 3 Series 3D Printer Quick Start Guide") -> list[Hit]:
    return [Hit(chunk_id="c0", manual="m.pdf", title=title, manual_sha256="0" * 64, page=1, heading="", text=text,
                score=1.0, dense_rank=1, lexical_rank=1, dense_score=0.5)]


def _decide(question: str, draft: str, hits: list[Hit]) -> tuple[str, list[str]]:
    support = check_support(question, draft, hits, 0.6, True)
    decision = decide_outcome(generation=Generation(draft=draft, text=draft, hits=hits), support=support)
    return decision.outcome, support.flags


def test_the_technicians_acronym_need_not_be_in_the_passage() -> None:
    question = "new ender 3 out of the box, anything to set on the PSU before plugging in?"
    draft = ("Before plugging in the PSU, you should set the correct input voltage to match your local mains "
             "(220V or 110V). [1]")
    assert _decide(question, draft, _hit(SWITCH))[0] == "answered"
    # an acronym the question does not use is still the passage's to back
    assert _decide(question, draft.replace("the PSU", "the ATX PSU"), _hit(SWITCH))[0] == "evidence_only"


def test_an_answer_must_state_the_kind_of_quantity_asked_for() -> None:
    question = "PSU amperage for the VORON electronics in the BOM?"
    outcome, flags = _decide(question, "The power supply for the electronics is 12V. [1]", _hit(BOM, "VORON BOM"))
    assert outcome == "evidence_only" and "answer_off_question" in flags
    outcome, _ = _decide(question, "The power supply for the electronics is 12V 16.7A. [1]", _hit(BOM, "VORON BOM"))
    assert outcome == "answered"


def test_a_procedure_asked_for_is_not_held_to_a_quantity() -> None:
    assert states_what_is_asked("I want to read the battery voltage, what do I have to do?",
                                "Close the BAT_SENS_E1 jumper; the battery voltage is then on GPI35 [1].")
    assert states_what_is_asked("How do I measure the supply voltage?", "Use the test points TP1 and TP2 [1].")
    assert not states_what_is_asked("What is the supply voltage?", "Use the test points TP1 and TP2 [1].")
    assert states_what_is_asked("Which port is the console on?", "The console is on COM0 [1].")  # no kind asked


MECHADUINO = ("Board Versions: The Mechaduino 0.2 hardware is backwards compatible with the Mechaduino 0.1 and "
              "features the following improvements: Better thermal design for A4954 driver. Higher voltage "
              "capacitors allow for a max V+ of 35V.")


def test_a_minimum_asked_for_is_not_answered_by_a_maximum() -> None:
    # the 1.5B on eval/dev2, for a manual that gives no minimum: every word backed, the bound the other way
    question = "mechaduino minimum supply voltage on V+"
    draft = ("The Mechaduino 0.2 hardware is backwards compatible with the Mechaduino 0.1 and features higher "
             "voltage capacitors allowing for a max V+ of 35V [1]")
    outcome, flags = _decide(question, draft, _hit(MECHADUINO, "Mechaduino Manual"))
    assert outcome == "evidence_only" and "answer_off_question" in flags
    # the same sentence answers the question it does answer
    assert _decide("mechaduino max V+ voltage?", draft, _hit(MECHADUINO, "Mechaduino Manual"))[0] == "answered"


def test_the_bound_asked_for_and_the_bound_stated() -> None:
    assert not states_what_is_asked("What is the maximum input voltage?", "It needs at least 6 V [1].")
    assert states_what_is_asked("What is the maximum input voltage?", "From 6 V minimum up to 36 V maximum [1].")
    assert states_what_is_asked("min and max operating voltage?", "6 V to 36 V [1].")  # both asked: not judged
    assert states_what_is_asked("What is the minimum input voltage?", "The input takes 6 V to 36 V [1].")
    assert states_what_is_asked("Which connector is the console on?", "The max232 sits beside J2 [1].")
