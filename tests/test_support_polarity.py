"""The support check and "not": a sentence that turns its passage's instruction around is not backed.

Found by doctor's gate 4 with a scripted wrong model: "Unplugging a device while the printer is powered
is safe [1]" shares two thirds of its words with "Never plug or unplug any device ... while the printer
is powered", which passed the overlap test and was shown green."""

from __future__ import annotations

import pytest

from gateway.answer.binding import negated
from gateway.answer.support import check_against, check_answer

PASSAGE = ("Damage Risk. Never plug or unplug any device (high or low voltage) while the printer is powered. "
           "Stepper drivers are easily damaged. Do not wear gloves when operating the printer. "
           "The nozzle reaches 260 C during printing.")


@pytest.mark.parametrize("claim", [
    "Unplugging a device while the printer is powered is safe [1].",
    "You can unplug any device while the printer is powered [1].",
    "Wear gloves when operating the printer [1].",
    "The nozzle does not reach 260 C during printing [1].",
])
def test_a_claim_that_turns_the_passage_around_is_not_supported(claim: str) -> None:
    ok, _, _, reason = check_against(claim, PASSAGE, 0.6)
    assert not ok and reason == "polarity"


@pytest.mark.parametrize("claim", [
    "Never plug or unplug any device while the printer is powered [1].",
    "No: do not unplug a device while the printer is powered [1].",
    "Do not wear gloves when operating the printer [1].",
    "The nozzle reaches 260 C during printing [1].",
])
def test_a_claim_that_says_it_the_same_way_round_is_supported(claim: str) -> None:
    ok, _, _, reason = check_against(claim, PASSAGE, 0.6)
    assert ok, reason


def test_negation_words() -> None:
    assert all(negated(t) for t in ("Don't unplug it", "never", "It cannot run", "avoid water", "NOT here"))
    assert not any(negated(t) for t in ("Notice the LED", "Nothingness", "Plug it in", "the knot"))


def test_the_answer_keeps_only_the_sentence_the_passage_backs() -> None:
    checks = check_answer("Do not wear gloves when operating the printer [1]. "
                          "It is safe to unplug a device while the printer is powered [1].", [PASSAGE])
    assert [c.supported for c in checks] == [True, False] and checks[1].reason == "polarity"


def test_sentences_sharing_as_many_words_must_all_agree_on_not() -> None:
    from gateway.answer.binding import same_polarity
    passage = ("The programmer connects to the board through the header. "
               "USB does not connect the programmer board.")
    claim = "The programmer can connect to the board through USB."
    # two passage sentences share as many words with the claim; one says it the other way round
    assert not same_polarity(claim, passage)
    assert same_polarity("The programmer connects to the board through the header.", passage)


GPIO = ("AgonLight2 User Manual\nGPIO connector\nGPIO connector\nPin.1 is connected to the Li-Po battery PLUS "
        "you can connect external battery on this pin.\nPin. 2 is 5V power supply connected to USB-C +5V signal, "
        "you can power the board from this signal if the\nUSB-C is not connected. It must be regulated 5V power "
        "supply.")


def test_the_title_glued_to_the_first_sentence_does_not_outweigh_a_not() -> None:
    # 'AgonLight2' of the title line made the pin 1 sentence the one the claim rests on, so the "not" of
    # the pin 2 sentence was never consulted and "Yes, you can connect the USB-C" went green
    claim = "Yes, you can connect the USB-C to power AgonLight2 through GPIO pin 2. [1]"
    [check] = check_answer(claim, [GPIO], question="Powering the Agon through GPIO pin 2 - can the USB-C stay "
                           "connected?", titles="AgonLight2 User Manual")
    assert not check.supported and check.reason == "polarity"
    [fine] = check_answer("You can power the board from pin 2 if the USB-C is not connected. [1]", [GPIO],
                          titles="AgonLight2 User Manual")
    assert fine.supported


ISOLATED = ("The isolated board, on the other hand, comes with 3000VDC galvanic insulation between the Ethernet "
            "part and the power supply, so there is no problem to connect USB while it is powered from PoE.")


def test_an_idiom_that_holds_a_no_but_denies_nothing_is_not_a_negation() -> None:
    assert not any(negated(t) for t in ("so there is no problem to connect USB", "no issues with either supply",
                                        "not only the fan but also the pump", "no matter which port you use"))
    assert negated("there is no fuse to replace") and negated("no problem is solved by not connecting it")
    # the ESP32-POE-ISO case (eval/dev): the isolation voltage, backed by the sentence that states it
    ok, _, _, reason = check_against("The isolated board has 3000VDC galvanic insulation between the Ethernet "
                                     "and the power supply [1].", ISOLATED, 0.6)
    assert ok, reason
    # and a claim that turns it around is still caught
    ok, _, _, reason = check_against("You must not connect USB while the isolated board is powered from PoE [1].",
                                     ISOLATED, 0.6)
    assert not ok and reason == "polarity"
