"""A yes the cited passage answers with a no is not shown green (issue 25).

Qwen2.5-Coder-0.5B on eval/dev, asked "Powering the Agon through GPIO pin 2 - can the USB-C stay
connected?", wrote "The USB-C can stay connected if the Li-Po battery is connected. [2]": every word
is in passage 2, and its sentence on pin 2 says the USB cable must not be attached at the same time.
No "Yes" was written, so the explicit-Yes check did not apply; the answer was green and wrong.
"""

from __future__ import annotations

from gateway.answer.binding import affirms, passage_says_not
from gateway.answer.generation import Generation
from gateway.answer.outcome import decide_outcome
from gateway.answer.support_check import check_support
from retrieval.types import Hit

AGON = ("AgonLight2 power supply and consumption\nAgonLight2 can be powered by 3 sources:\n• USB-C connector;\n"
        "• Li-Po battery connector;\n• GPIO.pin2 (5V_USB) note that this wire is connected to the 5V of the USB so "
        "when you power\nAgonLight2 from GPIO.pin2 – you should not connect have USB cable attached at the same "
        "time!!!\nIf a Li-Po battery is connected it will get charged automatically when power supply is attached.")
QUESTION = "Powering the Agon through GPIO pin 2 - can the USB-C stay connected?"


def _outcome(question: str, answer: str, text: str = AGON,
             title: str = "AgonLight2 User Manual") -> tuple[str, list[str]]:
    hits = [Hit(chunk_id="c1", manual="m.pdf", title=title, manual_sha256="0" * 64, page=15,
                heading="", text=text, score=1.0, dense_rank=1, lexical_rank=1, dense_score=0.9)]
    support = check_support(question, answer, hits, 0.6, True)
    return decide_outcome(generation=Generation(draft=answer, text=answer, hits=hits), support=support).outcome, \
        support.flags


def test_an_implicit_yes_against_the_passages_no_is_not_green() -> None:
    outcome, flags = _outcome(QUESTION, "The USB-C can stay connected if the Li-Po battery is connected. [1]")
    assert outcome == "evidence_only" and "yes_contradicted" in flags


def test_the_no_it_says_is_green() -> None:
    outcome, flags = _outcome(QUESTION, "No: GPIO.pin2 is connected to the 5V of the USB, so you should not have "
                                        "the USB cable attached at the same time. [1]")
    assert outcome == "answered", flags


def test_what_counts_as_a_yes() -> None:
    assert affirms("Can I cut PVC on the laser?", "You can cut PVC on the laser. [1]")
    assert affirms("PVC signs on the laser, ok?", "PVC can be cut. [1]")
    assert affirms("What coolant does it take?", "Yes, distilled water. [1]")  # a Yes is a yes anywhere
    assert not affirms("Can I cut PVC on the laser?", "PVC must not be cut. [1]")
    assert not affirms("Can I cut PVC on the laser?", "No, it releases chlorine. [1]")
    assert not affirms("What coolant does it take?", "Distilled water. [1]")  # not a yes/no question


def test_a_passage_is_held_by_the_sentences_nearest_the_question() -> None:
    assert passage_says_not(QUESTION, [AGON])
    assert not passage_says_not("Can the Li-Po battery be charged from the USB-C?", [AGON])


LID = ("CLEANING THE WINDOW\n• The window is made of acrylic and can be easily scratched. Do not rub it with a "
       "sponge or microfiber cloth.\n• To clean the window, wipe it with a soft cloth wet with water.")


def _lid(question: str, answer: str) -> tuple[str, list[str]]:
    return _outcome(question, answer, LID, "Fabulaser Mini")


def test_a_yes_about_what_the_passage_names_only_to_forbid_is_not_green() -> None:
    # the 1.5B on eval/dev: the sentence closest to the question is about the window, not the cloth
    outcome, flags = _lid("Cleaning the lid window - microfiber ok?",
                          "Yes, you can use a microfiber cloth to clean the lid window. [1]")
    assert outcome == "evidence_only" and "yes_contradicted" in flags


def test_a_yes_the_passage_states_stays_green() -> None:
    outcome, flags = _lid("Cleaning the lid window - is a soft cloth with water ok?",
                          "Yes, wipe the window with a soft cloth wet with water. [1]")
    assert outcome == "answered", flags
